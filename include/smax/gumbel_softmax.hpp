#pragma once
// Gumbel-softmax (Jang, Gu & Poole 2017; PyTorch's F.gumbel_softmax): a differentiable sample of
// a categorical distribution with logits x,
//   y = softmax((x + g)/tau)                     (soft, the default)
//   y = one_hot(first argmax_i (x_i + g_i))      (hard = true)
// with g the caller's Gumbel noise or noise drawn here from a counter-based generator. The
// backward is the soft VJP dx = (1/tau)·y_soft ⊙ (dy - <dy, y_soft>), y_soft = softmax((x + g)/tau),
// for hard as well (the straight-through estimator); it recomputes y_soft from x and g, exactly
// (the forward's soft output, bit for bit) and at the cost of one softmax. See
// docs/gumbel_softmax.md.
//
// Seeded noise: element (r, c) of a call has counter k = offset + r·cols + c, and its noise is a
// function of (seed, k) alone (Philox-4×32-10 under key seed; every word of a block serves an
// element: the layout is in kernels/gumbel_softmax.hpp and docs/gumbel_softmax.md), so the same
// (seed, offset) gives the same noise on every instruction set, for any split of the rows into
// calls (a single row at offset r·cols equals row r of a _rows call) and any thread count; the
// outputs too: a row alone at offset r·cols gives the bits of row r of a _rows call (forward,
// soft and hard, and backward; each row is normalised by its own softmax call). u is drawn from
// the open interval (0, 1) (23 random bits in float, u in [2^-24, 1 - 2^-24], so g in
// [-2.81, 16.6]; 52 bits in double) and g = -log(-log u). float and double streams differ.
//
// Bound block
//   Types:         float, double.
//   Maximum error: soft output: softmax's bound (relative 1e-6 (float) / 1e-14 (double) for
//                  outputs >= FLT_MIN) for the rounded z = x + g, which adds up to
//                  (|z_i| + |z_max|)/tau·2^-24 relative (the rounding of x + g).
//                  Seeded noise: |g - g*| <= 2^-21·(1 + |g*|) (float; g* = -log(-log u) exactly, for
//                  the same u), 2^-50·(1 + |g*|) (double). Backward: softmax's backward bound for
//                  y_soft. Checked by tests/gumbel_softmax_test.cpp against long double on every
//                  instruction set.
//   Valid range:   any finite x; x + g is formed in T, so a finite x + g that overflows counts as
//                  +inf (a NaN row).
//   Bad input:     n = 0 does nothing. x = -inf entries are masked (z = -inf): output 0, gradient
//                  0. A row of only -inf, any NaN or +inf in x + g: a NaN row (soft and hard; the
//                  backward too). tau not finite and > 0 is a precondition violation (asserted in
//                  debug builds) and gives NaN rows (forward and backward); the test is on tau
//                  rounded to T, the temperature the kernels use: a float call with tau = 1e-50
//                  (0 in float) or 1e39 (+inf in float) is the same violation.
//
// Aliasing: forward, x == y and noise == y allowed; backward, dx may be x or noise, not dy.

#include <cstddef>
#include <cstdint>

#include "api/entry.hpp"
#include "kernels/gumbel_softmax.hpp"

namespace smax {

struct gumbel_softmax_options {
  // The temperature: finite and > 0.
  double tau = 1.0;
  // Write the one-hot of the first argmax of x + g instead of the soft sample.
  bool hard = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

// The precondition is on the temperature the kernels use, tau rounded to T: a float call with
// tau = 1e-50 (0 in float) or 1e39 (+inf in float) violates it as tau = 0 or +inf would.
template <class T>
inline void check_tau(gumbel_softmax_options const& opts) noexcept {
  SMAX_ASSERT(static_cast<T>(opts.tau) > T(0) &&
              static_cast<T>(opts.tau) < static_cast<T>(__builtin_huge_val()) &&
              "gumbel_softmax_options::tau, rounded to the element type, must be finite and > 0");
  (void)opts;
}

// The generic entries: ld* are leading dimensions (noise has its own).
template <class Dispatch, class T>
inline void gumbel_softmax_forward(const T* x, std::size_t ldx, const T* noise, std::size_t ldn,
                                   T* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                                   gumbel_softmax_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && noise != nullptr && y != nullptr) || rows == 0 || cols == 0);
  check_tau<T>(opts);
  if (rows == 0 || cols == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::gumbel_softmax_table<decltype(a)>::forward(x, ldx, noise, ldn, y, ldy, rows, cols,
                                                        static_cast<T>(opts.tau), opts.hard);
  });
}

template <class Dispatch, class T>
inline void gumbel_softmax_forward_seeded(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                          std::size_t rows, std::size_t cols,
                                          gumbel_softmax_options const& opts, std::uint64_t seed,
                                          std::uint64_t offset) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  check_tau<T>(opts);
  if (rows == 0 || cols == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::gumbel_softmax_table<decltype(a)>::forward_seeded(
        x, ldx, y, ldy, rows, cols, static_cast<T>(opts.tau), opts.hard, seed, offset);
  });
}

template <class Dispatch, class T>
inline void gumbel_softmax_backward(const T* x, std::size_t ldx, const T* noise, std::size_t ldn,
                                    const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                    std::size_t rows, std::size_t cols,
                                    gumbel_softmax_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && noise != nullptr && dy != nullptr && dx != nullptr) || rows == 0 ||
              cols == 0);
  SMAX_ASSERT(dx != dy || rows == 0 || cols == 0);
  check_tau<T>(opts);
  if (rows == 0 || cols == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::gumbel_softmax_table<decltype(a)>::backward(x, ldx, noise, ldn, dy, lddy, dx, lddx,
                                                         rows, cols, static_cast<T>(opts.tau));
  });
}

template <class Dispatch, class T>
inline void gumbel_softmax_backward_seeded(const T* x, std::size_t ldx, const T* dy,
                                           std::size_t lddy, T* dx, std::size_t lddx,
                                           std::size_t rows, std::size_t cols,
                                           gumbel_softmax_options const& opts,
                                           std::uint64_t seed, std::uint64_t offset) noexcept {
  SMAX_ASSERT((x != nullptr && dy != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT(dx != dy || rows == 0 || cols == 0);
  check_tau<T>(opts);
  if (rows == 0 || cols == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::gumbel_softmax_table<decltype(a)>::backward_seeded(
        x, ldx, dy, lddy, dx, lddx, rows, cols, static_cast<T>(opts.tau), seed, offset);
  });
}

template <class Dispatch, class T>
inline void gumbel_noise(T* g, std::size_t n, std::uint64_t seed, std::uint64_t offset) noexcept {
  SMAX_ASSERT(g != nullptr || n == 0);
  if (n == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::gumbel_softmax_table<decltype(a)>::noise(g, n, seed, offset);
  });
}

}  // namespace api

// The public forms, stamped for each dispatcher (header-only here, smax::runtime from the list in
// families.hpp). Gumbel-softmax takes two inputs (x and the noise) or a seed and offset, which the
// common SMAX_FAMILY forms (x, y, n [, opts]) cannot express, so the family stamps its own:
//   gumbel_softmax(x, noise, y, n, opts)
//   gumbel_softmax(x, y, n, opts, seed, offset)
//   gumbel_softmax_rows(x, noise, y, rows, cols, ld, opts)          noise with x's layout (ld)
//   gumbel_softmax_rows(x, y, rows, cols, ld, opts, seed, offset)   element (r, c): offset + r·cols + c
//   gumbel_softmax_backward(x, noise, dy, dx, n, opts)
//   gumbel_softmax_backward(x, dy, dx, n, opts, seed, offset)
//   gumbel_softmax_backward_rows(x, noise, dy, dx, rows, cols, ld, opts)
//   gumbel_softmax_backward_rows(x, dy, dx, rows, cols, ld, opts, seed, offset)
//   gumbel_noise(g, n, seed, offset): the seeded noise itself, g[i] of element offset + i.
#define SMAX_GUMBEL_SOFTMAX_FORMS(Dispatch)                                                     \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax(const T* x, const T* noise, T* y, std::size_t n,                   \
                             ::smax::gumbel_softmax_options const& opts) noexcept {             \
    ::smax::api::gumbel_softmax_forward<Dispatch>(x, n, noise, n, y, n, 1, n, opts);            \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax(const T* x, T* y, std::size_t n,                                   \
                             ::smax::gumbel_softmax_options const& opts, std::uint64_t seed,    \
                             std::uint64_t offset) noexcept {                                   \
    ::smax::api::gumbel_softmax_forward_seeded<Dispatch>(x, n, y, n, 1, n, opts, seed, offset); \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_rows(const T* x, const T* noise, T* y, std::size_t rows,           \
                                  std::size_t cols, std::size_t ld,                             \
                                  ::smax::gumbel_softmax_options const& opts) noexcept {        \
    ::smax::api::gumbel_softmax_forward<Dispatch>(x, ld, noise, ld, y, ld, rows, cols, opts);   \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols,         \
                                  std::size_t ld, ::smax::gumbel_softmax_options const& opts,   \
                                  std::uint64_t seed, std::uint64_t offset) noexcept {          \
    ::smax::api::gumbel_softmax_forward_seeded<Dispatch>(x, ld, y, ld, rows, cols, opts, seed,  \
                                                         offset);                               \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_backward(const T* x, const T* noise, const T* dy, T* dx,           \
                                      std::size_t n,                                            \
                                      ::smax::gumbel_softmax_options const& opts) noexcept {    \
    ::smax::api::gumbel_softmax_backward<Dispatch>(x, n, noise, n, dy, n, dx, n, 1, n, opts);   \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_backward(const T* x, const T* dy, T* dx, std::size_t n,            \
                                      ::smax::gumbel_softmax_options const& opts,               \
                                      std::uint64_t seed, std::uint64_t offset) noexcept {      \
    ::smax::api::gumbel_softmax_backward_seeded<Dispatch>(x, n, dy, n, dx, n, 1, n, opts, seed, \
                                                          offset);                              \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_backward_rows(const T* x, const T* noise, const T* dy, T* dx,      \
                                           std::size_t rows, std::size_t cols, std::size_t ld,  \
                                           ::smax::gumbel_softmax_options const& opts) noexcept { \
    ::smax::api::gumbel_softmax_backward<Dispatch>(x, ld, noise, ld, dy, ld, dx, ld, rows, cols, \
                                                   opts);                                       \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_softmax_backward_rows(                                                     \
      const T* x, const T* dy, T* dx, std::size_t rows, std::size_t cols, std::size_t ld,       \
      ::smax::gumbel_softmax_options const& opts, std::uint64_t seed,                           \
      std::uint64_t offset) noexcept {                                                          \
    ::smax::api::gumbel_softmax_backward_seeded<Dispatch>(x, ld, dy, ld, dx, ld, rows, cols,    \
                                                          opts, seed, offset);                  \
  }                                                                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                          \
  inline void gumbel_noise(T* g, std::size_t n, std::uint64_t seed,                             \
                           std::uint64_t offset) noexcept {                                     \
    ::smax::api::gumbel_noise<Dispatch>(g, n, seed, offset);                                    \
  }

SMAX_GUMBEL_SOFTMAX_FORMS(api::header_only)

// The Eigen forms, stamped by smax/eigen.hpp (which includes Eigen) under its argument rules
// (row-major objects with contiguous rows, one shape, each argument its own outer stride, the
// output may be an input but not overlap one partially), on the header-only kernels:
//   gumbel_softmax(x, noise, y, opts)                gumbel_softmax(x, y, opts, seed, offset)
//   gumbel_softmax_backward(x, noise, dy, dx, opts)  gumbel_softmax_backward(x, dy, dx, opts, seed, offset)
// Bit for bit the pointer _rows forms; the seeded ones give element (r, c) counter
// offset + r·cols + c as they do.
#define SMAX_GUMBEL_SOFTMAX_EIGEN_FORMS                                                         \
  template <class X, class G, class Y, ::smax::eigen_detail::if_dense_t<Y> = 0>                 \
  inline void gumbel_softmax(Eigen::DenseBase<X> const& x, Eigen::DenseBase<G> const& noise,    \
                             Y&& y, ::smax::gumbel_softmax_options const& opts) noexcept {      \
    ::smax::eigen_detail::for_rows(                                                             \
        [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp,            \
            auto const* gp, std::size_t ldx, std::size_t ldg) {                                 \
          ::smax::api::gumbel_softmax_forward<::smax::api::header_only>(xp, ldx, gp, ldg, yp,   \
                                                                        ldy, r, c, opts);       \
        },                                                                                      \
        y, x.derived(), noise.derived());                                                       \
  }                                                                                             \
  template <class X, class Y, ::smax::eigen_detail::if_dense_t<Y> = 0>                          \
  inline void gumbel_softmax(Eigen::DenseBase<X> const& x, Y&& y,                               \
                             ::smax::gumbel_softmax_options const& opts, std::uint64_t seed,    \
                             std::uint64_t offset) noexcept {                                   \
    ::smax::eigen_detail::for_rows(                                                             \
        [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp,            \
            std::size_t ldx) {                                                                  \
          ::smax::api::gumbel_softmax_forward_seeded<::smax::api::header_only>(                 \
              xp, ldx, yp, ldy, r, c, opts, seed, offset);                                      \
        },                                                                                      \
        y, x.derived());                                                                        \
  }                                                                                             \
  template <class X, class G, class DY, class DX, ::smax::eigen_detail::if_dense_t<DX> = 0>     \
  inline void gumbel_softmax_backward(Eigen::DenseBase<X> const& x,                             \
                                      Eigen::DenseBase<G> const& noise,                         \
                                      Eigen::DenseBase<DY> const& dy, DX&& dx,                  \
                                      ::smax::gumbel_softmax_options const& opts) noexcept {    \
    ::smax::eigen_detail::for_rows(                                                             \
        [&](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* xp,          \
            auto const* gp, auto const* dyp, std::size_t ldx, std::size_t ldg,                  \
            std::size_t lddy) {                                                                 \
          ::smax::api::gumbel_softmax_backward<::smax::api::header_only>(                       \
              xp, ldx, gp, ldg, dyp, lddy, dxp, lddx, r, c, opts);                              \
        },                                                                                      \
        dx, x.derived(), noise.derived(), dy.derived());                                        \
  }                                                                                             \
  template <class X, class DY, class DX, ::smax::eigen_detail::if_dense_t<DX> = 0>              \
  inline void gumbel_softmax_backward(Eigen::DenseBase<X> const& x,                             \
                                      Eigen::DenseBase<DY> const& dy, DX&& dx,                  \
                                      ::smax::gumbel_softmax_options const& opts,               \
                                      std::uint64_t seed, std::uint64_t offset) noexcept {      \
    ::smax::eigen_detail::for_rows(                                                             \
        [&](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* xp,          \
            auto const* dyp, std::size_t ldx, std::size_t lddy) {                               \
          ::smax::api::gumbel_softmax_backward_seeded<::smax::api::header_only>(                \
              xp, ldx, dyp, lddy, dxp, lddx, r, c, opts, seed, offset);                         \
        },                                                                                      \
        dx, x.derived(), dy.derived());                                                         \
  }

SMAX_END_NAMESPACE
