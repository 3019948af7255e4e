#pragma once
// StableMax and log-StableMax (Prieto et al. 2025, "Grokking at the edge of numerical
// stability"): y_i = s(x_i)/Σ_j s(x_j) with s(x) = x + 1 for x >= 0 and 1/(1 - x) for x < 0, and
// z_i = log y_i. A softmax without exponentials: s grows linearly, so no entry ever swamps the
// sum the way exp(x) does. See docs/stablemax.md and docs/edge_cases.md.
//
// Evaluated relative to the largest term, t = s(x)/s(max x), one division an element, the sum
// blocked in double; the log form takes log t, or log1p-based log s(x) - log s(max) where t
// underflows, so z stays finite for every finite x.
//
// Bound block
//   Types:         float, double.
//   Maximum error: stablemax: relative error <= 1e-6 (float) / 1e-14 (double) for every output
//                  >= FLT_MIN (DBL_MIN). log_stablemax: |error| <= 2^-22·(|z| + 1 + log n)
//                  (double: 1e-14·(...)). Backward: |dx_i - dx*_i| <= 16ε·g_i·(y_i·|dy_i| +
//                  y_i·Σ_j y_j|dy_j|) for stablemax and 16ε·g_i·(|dy_i| + y_i·Σ_j |dy_j|) for
//                  log_stablemax, g_i = 1/(1 + |x_i|), ε = 2^-23 (2^-52), where dx* is the VJP
//                  at the y (z) passed in: the forward's own error is not counted (it is not
//                  within 16ε: double log_stablemax on entries ~1e37 carries z's 1e-14·(|z| + 1 +
//                  log n) into exp(z)·Σdy, 3.6e-15 of dx, found by the fuzzer). Checked by
//                  tests/stablemax_test.cpp against long double on every instruction set.
//   Valid range:   every finite x up to ±FLT_MAX: [3e38, 1e38] -> [0.75, 0.25]; outputs below
//                  FLT_MIN may be flushed to 0. Not shift invariant (unlike softmax).
//   Bad input:     n = 0 does nothing. -inf entries are masked (s(-inf) = 0): output 0 (log: -inf),
//                  backward 0. A row of only -inf gives NaN (0, log: -inf, with
//                  zero_masked_rows); any NaN or +inf gives a NaN row. n = 1 gives [1] ([0]).
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/stablemax.hpp"

namespace smax {

struct stablemax_options {
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0 (-inf for
  // log_stablemax).
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

// StableMax (Log = false) and log-StableMax (Log = true): one kernel table, one flag apart.
template <bool Log>
struct stablemax_like_family : family_defaults {
  using options = stablemax_options;
  static constexpr backward_shape backward_form = backward_shape::from_input;
  static constexpr bool masks_rows = true;
  static constexpr double masked_row = Log ? -__builtin_huge_val() : 0.0;

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const&,
                                         algorithm_choice) noexcept {
    kernels::stablemax_table<A>::forward(x, ldx, y, ldy, rows, cols, Log);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const&, grads*) noexcept {
    kernels::stablemax_table<A>::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, Log);
  }
};
using stablemax_family = stablemax_like_family<false>;
using log_stablemax_family = stablemax_like_family<true>;

}  // namespace api

// stablemax(x, y, n [, opts]), stablemax_rows(x, y, rows, cols, ld [, opts]);
// stablemax_backward(x, y, dy, dx, n [, opts]), stablemax_backward_rows(...): dx = y/(1 + |x|)
// ⊙ (dy - <dy, y>) for y = stablemax(x).
SMAX_FAMILY(stablemax, api::stablemax_family, api::header_only)

// log_stablemax(x, z, n [, opts]), log_stablemax_rows(...); log_stablemax_backward(x, z, dy, dx, n
// [, opts]), log_stablemax_backward_rows(...): dx = (dy - exp(z)·Σdy)/(1 + |x|).
SMAX_FAMILY(log_stablemax, api::log_stablemax_family, api::header_only)

SMAX_END_NAMESPACE
