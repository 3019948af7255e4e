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
#include "multimax.hpp"
#include "sigmoid.hpp"
#include "softpick.hpp"
#include "sparsemax.hpp"
#include "ssmax.hpp"

SMAX_BEGIN_NAMESPACE
namespace runtime {
namespace dispatch {

// The instruction sets compiled in, and the one chosen.
enum class arch_id : unsigned { avx512bw, avx2, neon64, sse2, header_only };

struct selection {
  arch_id id;
  const char* name;
};

inline selection select() noexcept {
  selection candidates[4];
  std::size_t count = 0;
#if defined(SMAX_DISPATCH_AVX512BW)
  if (smax::detail::arch_available<xsimd::avx512bw>())
    candidates[count++] = {arch_id::avx512bw, xsimd::avx512bw::name()};
#endif
#if defined(SMAX_DISPATCH_AVX2)
  if (smax::detail::arch_available<xsimd::fma3<xsimd::avx2>>())
    candidates[count++] = {arch_id::avx2, xsimd::fma3<xsimd::avx2>::name()};
#endif
#if defined(SMAX_DISPATCH_NEON64)
  if (smax::detail::arch_available<xsimd::neon64>())
    candidates[count++] = {arch_id::neon64, xsimd::neon64::name()};
#endif
#if defined(SMAX_DISPATCH_SSE2)
  candidates[count++] = {arch_id::sse2, xsimd::sse2::name()};  // every x86-64 CPU
#endif
  if (count == 0) return {arch_id::header_only, xsimd::default_arch::name()};
  if (const char* forced = std::getenv("SMAX_FORCE_ARCH")) {
    for (std::size_t i = 0; i < count; ++i)
      if (std::strcmp(forced, candidates[i].name) == 0) return candidates[i];
  }
  return candidates[0];
}

inline selection const& active() noexcept {
  static const selection s = select();
  return s;
}

// f(A{}) for the chosen instruction set A: every family's kernel table<A> is reached this way
// (the tables of the compiled instruction sets are instantiated in their own translation units).
template <class F>
inline decltype(auto) visit(F&& f) noexcept {
  switch (active().id) {
#if defined(SMAX_DISPATCH_AVX512BW)
    case arch_id::avx512bw: return f(xsimd::avx512bw{});
#endif
#if defined(SMAX_DISPATCH_AVX2)
    case arch_id::avx2: return f(xsimd::fma3<xsimd::avx2>{});
#endif
#if defined(SMAX_DISPATCH_NEON64)
    case arch_id::neon64: return f(xsimd::neon64{});
#endif
#if defined(SMAX_DISPATCH_SSE2)
    case arch_id::sse2: return f(xsimd::sse2{});
#endif
    default: return f(xsimd::default_arch{});
  }
}

// The softmax family's table, for the api:: layer.
template <class T>
struct table {
  static void forward(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, T temperature, unsigned flags,
                      kernels::algorithm_id algorithm) noexcept {
    visit([&](auto a) {
      kernels::table<decltype(a)>::forward(x, ldx, y, ldy, rows, cols, temperature, flags, algorithm);
    });
  }
  static void backward(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                       std::size_t lddx, std::size_t rows, std::size_t cols, T temperature,
                       unsigned flags) noexcept {
    visit([&](auto a) {
      kernels::table<decltype(a)>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols, temperature, flags);
    });
  }
};

}  // namespace dispatch

// The xsimd name of the instruction set the runtime entry points run ("fma3+avx2", "sse2", ...).
inline const char* arch_name() noexcept { return dispatch::active().name; }

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

// The other families: the same calls as their headers, on the chosen instruction set.
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid(const T* x, T* y, std::size_t n) noexcept {
  dispatch::visit([&](auto a) { api::sigmoid<kernels::sigmoid_table<decltype(a)>>(x, n, y, n, 1, n, 0.0); });
}
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld) noexcept {
  dispatch::visit([&](auto a) { api::sigmoid<kernels::sigmoid_table<decltype(a)>>(x, ld, y, ld, rows, cols, 0.0); });
}
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_attention(const T* x, T* y, std::size_t n,
                              sigmoid_attention_options const& opts = {}) noexcept {
  dispatch::visit([&](auto a) {
    api::sigmoid<kernels::sigmoid_table<decltype(a)>>(x, n, y, n, 1, n, api::sigmoid_attention_bias(opts, n));
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_backward(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  dispatch::visit([&](auto a) { api::sigmoid_backward<kernels::sigmoid_table<decltype(a)>>(y, n, dy, n, dx, n, 1, n); });
}
template <class T, detail::if_real_t<T> = 0>
inline void ssmax(const T* x, T* y, std::size_t n, ssmax_options const& opts = {}) noexcept {
  dispatch::visit([&](auto a) { api::ssmax<kernels::ssmax_table<decltype(a)>>(x, n, y, n, 1, n, opts); });
}
template <class T, detail::if_real_t<T> = 0>
inline void ssmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                       ssmax_options const& opts = {}) noexcept {
  dispatch::visit([&](auto a) { api::ssmax<kernels::ssmax_table<decltype(a)>>(x, ld, y, ld, rows, cols, opts); });
}
template <class T, detail::if_real_t<T> = 0>
inline void ssmax_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                           ssmax_options const& opts = {}, ssmax_param_grads* grads = nullptr) noexcept {
  dispatch::visit([&](auto a) {
    api::ssmax_backward<kernels::ssmax_table<decltype(a)>>(x, n, y, n, dy, n, dx, n, 1, n, opts, grads);
  });
}

template <class T, detail::if_real_t<T> = 0>
inline void sparsemax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  if (rows == 0 || cols == 0) return;
  dispatch::visit([&](auto a) {
    kernels::sparsemax_table<decltype(a)>::forward(x, ld, y, ld, rows, cols,
                                                   kernels::sparsemax_algorithm::automatic);
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void sparsemax(const T* x, T* y, std::size_t n) noexcept {
  runtime::sparsemax_rows(x, y, 1, n, n);
}
template <class T, detail::if_real_t<T> = 0>
inline void sparsemax_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,
                                    std::size_t cols, std::size_t ld) noexcept {
  SMAX_ASSERT((y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  if (rows == 0 || cols == 0) return;
  dispatch::visit([&](auto a) {
    kernels::sparsemax_table<decltype(a)>::backward(y, ld, dy, ld, dx, ld, rows, cols);
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void sparsemax_backward(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  runtime::sparsemax_backward_rows(y, dy, dx, 1, n, n);
}
template <class T, detail::if_real_t<T> = 0>
inline void softpick_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                          softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  api::check_options(opts);
  if (rows == 0 || cols == 0) return;
  dispatch::visit([&](auto a) {
    kernels::softpick_table<decltype(a)>::forward(x, ld, y, ld, rows, cols, opts.eps,
                                                  kernels::softpick_algorithm::automatic);
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void softpick(const T* x, T* y, std::size_t n, softpick_options const& opts = {}) noexcept {
  runtime::softpick_rows(x, y, 1, n, n, opts);
}
template <class T, detail::if_real_t<T> = 0>
inline void softpick_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,
                                   std::size_t cols, std::size_t ld,
                                   softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 ||
              cols == 0);
  api::check_options(opts);
  if (rows == 0 || cols == 0) return;
  dispatch::visit([&](auto a) {
    kernels::softpick_table<decltype(a)>::backward(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts.eps);
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void softpick_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                              softpick_options const& opts = {}) noexcept {
  runtime::softpick_backward_rows(x, y, dy, dx, 1, n, n, opts);
}
template <class T, detail::if_real_t<T> = 0>
inline void multimax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                          multimax_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  if (rows == 0 || cols == 0) return;
  dispatch::visit([&](auto a) {
    kernels::multimax_table<decltype(a)>::forward(x, ld, y, ld, rows, cols,
                                                  api::multimax_parameters_of<T>(opts));
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void multimax(const T* x, T* y, std::size_t n, multimax_options const& opts = {}) noexcept {
  runtime::multimax_rows(x, y, 1, n, n, opts);
}
template <class T, detail::if_real_t<T> = 0>
inline void multimax_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,
                                   std::size_t cols, std::size_t ld,
                                   multimax_options const& opts = {},
                                   multimax_param_grads* param_grads = nullptr) noexcept {
  dispatch::visit([&](auto a) {
    api::multimax_backward<kernels::multimax_table<decltype(a)>>(x, y, dy, dx, rows, cols, ld, opts,
                                                                 param_grads);
  });
}
template <class T, detail::if_real_t<T> = 0>
inline void multimax_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                              multimax_options const& opts = {},
                              multimax_param_grads* param_grads = nullptr) noexcept {
  runtime::multimax_backward_rows(x, y, dy, dx, 1, n, n, opts, param_grads);
}

}  // namespace runtime
SMAX_END_NAMESPACE
