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

#include "algorithm.hpp"
#include "kernels/softpick.hpp"

namespace smax {

struct softpick_options {
  // The denominator's eps (added after the e^-m rescaling, as the reference code does). 1e-8 is
  // the naive reference's default; the Triton kernel uses 1e-6. Must be finite and >= 0.
  double eps = 1e-8;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

using softpick_default_table = kernels::softpick_table<xsimd::default_arch>;

inline void check_options(softpick_options const& opts) noexcept {
  SMAX_ASSERT(opts.eps >= 0.0 && opts.eps < __builtin_huge_val() &&
              "softpick_options::eps must be finite and >= 0");
  (void)opts;
}

}  // namespace api

// Softpick of one row of n elements: three passes while the row fits in cache (<= 1 MiB), two
// (blocked online sum, then normalise) beyond.
template <class T, detail::if_real_t<T> = 0>
inline void softpick(const T* x, T* y, std::size_t n, softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || n == 0);
  api::check_options(opts);
  if (n == 0) return;
  api::softpick_default_table::forward(x, n, y, n, 1, n, opts.eps,
                                       kernels::softpick_algorithm::automatic);
}

// Softpick of each row of a row-major rows × cols matrix whose rows start ld elements apart
// (ld >= cols), for x and y alike.
template <class T, detail::if_real_t<T> = 0>
inline void softpick_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                          softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT(ld >= cols || rows <= 1);
  api::check_options(opts);
  if (rows == 0 || cols == 0) return;
  api::softpick_default_table::forward(x, ld, y, ld, rows, cols, opts.eps,
                                       kernels::softpick_algorithm::automatic);
}

// Backward pass, given x and y = softpick(x, opts): with S' = sum |a_j| + eps and
// c = <dy, y>, dx_k = e^(x_k - m)/S'·([x_k > 0]·dy_k - sgn(x_k)·c), and at the first maximum
// k* also -c·eps/S' (the eps·e^m term through m). Masked entries and x_k = 0 get 0 (PyTorch's
// relu'(0) = |·|'(0) = 0); a row with m <= 0 gives 0; a NaN row (all masked, NaN, +inf) gives
// NaN. S' is recomputed from x (one expm1 and one exp pass), y enters only through c. Accuracy
// (checked against the long-double VJP on rows of 10^5): |error| <= 8·r·e^(x_k - m)/S'·(|dy_k| +
// |c| + sum_j |dy_j·y_j|) with r = 1e-6 (float) / 1e-14 (double), and within 2e-6 (1e-11) of
// central finite differences of the reference on short rows. Any of x, y, dy, dx may be the same array.
template <class T, detail::if_real_t<T> = 0>
inline void softpick_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                              softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr && dy != nullptr && dx != nullptr) || n == 0);
  api::check_options(opts);
  if (n == 0) return;
  api::softpick_default_table::backward(x, n, y, n, dy, n, dx, n, 1, n, opts.eps);
}

template <class T, detail::if_real_t<T> = 0>
inline void softpick_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,
                                   std::size_t cols, std::size_t ld,
                                   softpick_options const& opts = {}) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 ||
              cols == 0);
  SMAX_ASSERT(ld >= cols || rows <= 1);
  api::check_options(opts);
  if (rows == 0 || cols == 0) return;
  api::softpick_default_table::backward(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts.eps);
}

SMAX_END_NAMESPACE
