#pragma once
// Runtime-dispatched entry points: smax::runtime::softmax(...) and friends run the kernels of the
// best instruction set the CPU supports among those compiled in by smax_enable_dispatch(<target>)
// (sse2, avx2+fma, avx512bw; neon64 on AArch64). The choice is made once, on first use; the
// environment variable SMAX_FORCE_ARCH (e.g. "sse2", "fma3+avx2", "avx512bw") forces one of them
// if the CPU supports it. Without smax_enable_dispatch these run the header-only kernels
// (xsimd::default_arch), and arch_name() says so.
//
// Same functions, options, results and contract as the header-only API (softmax.hpp,
// log_softmax.hpp).

#include <cstdlib>
#include <cstring>

#include "log_softmax.hpp"

SMAX_BEGIN_NAMESPACE
namespace runtime {
namespace dispatch {

template <class T>
struct entry {
  void (*forward)(const T*, std::size_t, T*, std::size_t, std::size_t, std::size_t, T, unsigned,
                  kernels::algorithm_id) noexcept;
  void (*backward)(const T*, std::size_t, const T*, std::size_t, T*, std::size_t, std::size_t,
                   std::size_t, T, unsigned) noexcept;
  const char* name;
};

template <class A, class T>
inline entry<T> make_entry() noexcept {
  return {&kernels::table<A>::forward, &kernels::table<A>::backward, A::name()};
}

// Picks the first candidate (best first) that the CPU runs, or the one SMAX_FORCE_ARCH names.
template <class T>
inline entry<T> select() noexcept {
  entry<T> candidates[4];
  std::size_t count = 0;
#if defined(SMAX_DISPATCH_AVX512BW)
  if (smax::detail::arch_available<xsimd::avx512bw>()) candidates[count++] = make_entry<xsimd::avx512bw, T>();
#endif
#if defined(SMAX_DISPATCH_AVX2)
  if (smax::detail::arch_available<xsimd::fma3<xsimd::avx2>>())
    candidates[count++] = make_entry<xsimd::fma3<xsimd::avx2>, T>();
#endif
#if defined(SMAX_DISPATCH_NEON64)
  if (smax::detail::arch_available<xsimd::neon64>()) candidates[count++] = make_entry<xsimd::neon64, T>();
#endif
#if defined(SMAX_DISPATCH_SSE2)
  candidates[count++] = make_entry<xsimd::sse2, T>();  // every x86-64 CPU
#endif
  if (count == 0) return make_entry<xsimd::default_arch, T>();
  if (const char* forced = std::getenv("SMAX_FORCE_ARCH")) {
    for (std::size_t i = 0; i < count; ++i)
      if (std::strcmp(forced, candidates[i].name) == 0) return candidates[i];
  }
  return candidates[0];
}

template <class T>
inline entry<T> const& active() noexcept {
  static const entry<T> e = select<T>();
  return e;
}

// Adapts the dispatched entry to the shape api::forward/backward expect of a kernel table.
template <class T>
struct table {
  static void forward(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, T temperature, unsigned flags,
                      kernels::algorithm_id algorithm) noexcept {
    active<T>().forward(x, ldx, y, ldy, rows, cols, temperature, flags, algorithm);
  }
  static void backward(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                       std::size_t lddx, std::size_t rows, std::size_t cols, T temperature,
                       unsigned flags) noexcept {
    active<T>().backward(y, ldy, dy, lddy, dx, lddx, rows, cols, temperature, flags);
  }
};

}  // namespace dispatch

// The xsimd name of the instruction set the runtime entry points run ("fma3+avx2", "sse2", ...).
inline const char* arch_name() noexcept { return dispatch::active<float>().name; }

template <class T, detail::if_real_t<T> = 0>
inline void softmax(const T* x, T* y, std::size_t n, softmax_options const& opts = {}) noexcept {
  api::forward<dispatch::table<T>>(x, n, y, n, 1, n, false, opts, kernels::algorithm_id::automatic);
}
template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto softmax(Algorithm algorithm, const T* x, T* y, std::size_t n,
                    softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<dispatch::table<T>>(x, n, y, n, 1, n, false, opts, api::algorithm_of(algorithm));
}
template <class T, detail::if_real_t<T> = 0>
inline void softmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                         softmax_options const& opts = {}) noexcept {
  api::forward<dispatch::table<T>>(x, ld, y, ld, rows, cols, false, opts,
                                   kernels::algorithm_id::automatic);
}
template <class T, detail::if_real_t<T> = 0>
inline void log_softmax(const T* x, T* y, std::size_t n, softmax_options const& opts = {}) noexcept {
  api::forward<dispatch::table<T>>(x, n, y, n, 1, n, true, opts, kernels::algorithm_id::automatic);
}
template <class Algorithm, class T, detail::if_real_t<T> = 0>
inline auto log_softmax(Algorithm algorithm, const T* x, T* y, std::size_t n,
                        softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  api::forward<dispatch::table<T>>(x, n, y, n, 1, n, true, opts, api::algorithm_of(algorithm));
}
template <class T, detail::if_real_t<T> = 0>
inline void log_softmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols,
                             std::size_t ld, softmax_options const& opts = {}) noexcept {
  api::forward<dispatch::table<T>>(x, ld, y, ld, rows, cols, true, opts,
                                   kernels::algorithm_id::automatic);
}
template <class T, detail::if_real_t<T> = 0>
inline void softmax_backward(const T* y, const T* dy, T* dx, std::size_t n,
                             softmax_options const& opts = {}) noexcept {
  api::backward<dispatch::table<T>>(y, n, dy, n, dx, n, 1, n, false, opts);
}
template <class T, detail::if_real_t<T> = 0>
inline void log_softmax_backward(const T* z, const T* dy, T* dx, std::size_t n,
                                 softmax_options const& opts = {}) noexcept {
  api::backward<dispatch::table<T>>(z, n, dy, n, dx, n, 1, n, true, opts);
}

}  // namespace runtime
SMAX_END_NAMESPACE
