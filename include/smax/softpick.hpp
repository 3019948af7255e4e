#pragma once
// softpick: y_i = relu(e^x_i - 1) / (sum_j |e^x_j - 1| + eps·e^m)  (Zuhri et al.,
// zaydzuhri/softpick-attention), m = max_j x_j; the code's form
// relu(e^(x_i - m) - e^-m) / (sum_j |e^(x_j - m) - e^-m| + eps), eps added after the rescaling.
// See docs/softpick.md and docs/edge_cases.md.
//
// Evaluated without the cancellation of e^(x - m) - e^-m (which loses ~3 digits in float for
// |x| << 1): each term is 2^-K·expm1(x) from one range reduction of x, with K ~ m·log2 e chosen
// per row, so nothing overflows and the terms keep their relative accuracy on both sides of 0
// (kernels/softpick.hpp). Rows with m > 80 (600 for double) use the equivalent two-exponential
// form e^(x-m)·(-expm1(-x)) for x > 0, expm1(x)·e^-m for x <= 0. Sums are blocked and folded
// into double.
//
// Bound block
//   Types:         float, double.
//   Maximum error: float: relative error <= 1e-6 for every output >= FLT_MIN, every algorithm
//                  and instruction set (tests/softpick_test.cpp, against a long-double
//                  reference), near-zero inputs (|x| ~ 1e-6..1e-3) included. double: 1e-14.
//   Valid range:   any finite input up to ±FLT_MAX ([3e38, -3e38, 1e38] -> [1 - eps, 0, 0]); rows
//                  of any length (tested up to 10^6). Outputs below FLT_MIN may be flushed to 0.
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, excluded from the sum
//                  (a finite x, even -FLT_MAX, is not a mask: it adds |expm1(x)|·e^-m ~ e^-m). A
//                  row with no positive entry (m <= 0) gives all zeros, not NaN. A row of only
//                  -inf, or holding any NaN or +inf, gives NaN. eps must be finite and >= 0
//                  (asserted in debug builds).
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/softpick.hpp"

namespace smax {

struct softpick_options {
  // The denominator's eps (added after the e^-m rescaling, as the reference code does). 1e-8 is
  // the naive reference's default; the Triton kernel uses 1e-6. Must be finite and >= 0.
  double eps = 1e-8;
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct softpick_family : family_defaults {
  using options = softpick_options;
  static constexpr backward_shape backward_form = backward_shape::from_input;
  static constexpr bool masks_rows = true;

  static void check(options const& opts) noexcept {
    SMAX_ASSERT(opts.eps >= 0.0 && opts.eps < __builtin_huge_val() &&
                "softpick_options::eps must be finite and >= 0");
    (void)opts;
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::softpick_table<A>::forward(x, ldx, y, ldy, rows, cols, opts.eps,
                                        kernels::softpick_algorithm::automatic);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const& opts, grads*) noexcept {
    kernels::softpick_table<A>::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, opts.eps);
  }
};

}  // namespace api

// softpick(x, y, n [, opts]), softpick_rows(x, y, rows, cols, ld [, opts]);
// softpick_backward(x, y, dy, dx, n [, opts]), softpick_backward_rows(x, y, dy, dx, rows, cols,
// ld [, opts]): the gradient of <dy, y> for y = softpick(x), from x and y.
SMAX_FAMILY(softpick, api::softpick_family, api::header_only)

SMAX_END_NAMESPACE
