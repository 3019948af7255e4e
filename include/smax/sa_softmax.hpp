#pragma once
// Self-Adjust Softmax (Zheng et al. 2025): y_i = w_i·softmax(x)_i, with
//   normalised (the default):  w_i = (x_i - a)/(c - a),  a = min(x_min, 0), c = max(0, x_max),
//   plain:                     w_i = x_i,
// x_min and x_max over the unmasked entries. Softmax reweighted by where each entry sits between
// the row's extremes (normalised, w in [0, 1]) or by the entry itself (plain). See
// docs/sa_softmax.md and docs/edge_cases.md.
//
// Softmax's three passes with one multiply more an element: the minimum is taken in softmax's max
// sweep, the exp pass stores w·exp and sums exp, the last pass scales by 1/(sum·(c - a)), all
// scaled by a power of two so that nothing overflows or turns subnormal on the way.
//
// Bound block
//   Types:         float, double.
//   Maximum error: forward: relative error <= 1e-6 (float) / 1e-14 (double) for every output
//                  >= FLT_MIN (DBL_MIN), where plain outputs must also have exp(x_i - x_max) >=
//                  FLT_MIN: softmax's terms below it may be flushed, and x_i·p_i can be a normal
//                  number there (|y_i| < |x_i|·FLT_MIN, e.g. 3e-38 at x_i = -75). Backward:
//                  |dx_k - dx*_k| <= 16ε·(p_k·(|dy_k|·(1/D + w_k) + Σ_i p_i·w_i·|dy_i|) +
//                  [k = first argmin, x_min < 0]·Σ_i p_i·(1 + w_i)·|dy_i|/D + [k = first argmax,
//                  x_max > 0]·Σ_i p_i·w_i·|dy_i|/D) (normalised, D = c - a) and 16ε·p_k·(|dy_k|·
//                  (1 + |x_k|) + Σ_i |dy_i·y_i|) (plain), ε = 2^-23 (2^-52), p = softmax(x), each
//                  plus 2 of T's smallest subnormal numbers (normalised: plus one more times
//                  (1 + w_k)/D, the rounding of a subnormal p_k·dy_k), where dx* is the exact VJP with
//                  <dy, y> taken over the y passed in (the forward's own output), for
//                  entries with p_k >= FLT_MIN (DBL_MIN); below, p_k may be flushed
//                  to 0 and dx_k with it. Checked by tests/sa_softmax_test.cpp against long
//                  double on every instruction set.
//   Valid range:   every finite x up to ±FLT_MAX (DBL_MAX): c - a up to 2·FLT_MAX is never formed
//                  unscaled, so [3e38, -3e38] gives [1, 0]; ranges c - a down to the smallest
//                  subnormal number. The plain backward needs |dy_k·(1 + x_k)| within T's range
//                  and Σ_i |dy_i·y_i| below half of it (beyond, dx may hold ±inf or NaN). An
//                  entry whose dx* ± its bound reaches beyond T's range may be ±inf (a range D
//                  far below FLT_MIN makes 1/D, and the bound with it, huge). Not shift
//                  invariant.
//   Bad input:     n = 0 does nothing. -inf entries are masked (left out of min and max): output 0,
//                  backward 0. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or
//                  +inf gives a NaN row (backward too). c = a (every unmasked entry 0, normalised)
//                  gives a zero row and dx = 0. n = 1 gives [x] (plain), [1] for x > 0 and [0]
//                  otherwise (normalised).
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/sa_softmax.hpp"

namespace smax {

struct sa_softmax_options {
  // The weights (x - a)/(c - a) in [0, 1] (true, the paper's normalised form) or x itself.
  bool normalized = true;
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct sa_softmax_family : family_defaults {
  using options = sa_softmax_options;
  static constexpr backward_shape backward_form = backward_shape::from_input;
  static constexpr bool masks_rows = true;
  static constexpr double masked_row = 0.0;

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::sa_softmax_table<A>::forward(x, ldx, y, ldy, rows, cols, opts.normalized);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const& opts, grads*) noexcept {
    kernels::sa_softmax_table<A>::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols,
                                           opts.normalized);
  }
};

}  // namespace api

// sa_softmax(x, y, n [, opts]), sa_softmax_rows(x, y, rows, cols, ld [, opts]);
// sa_softmax_backward(x, y, dy, dx, n [, opts]), sa_softmax_backward_rows(...): the VJP of
// y = sa_softmax(x), the gradient flowing through the row's min and max (first index).
SMAX_FAMILY(sa_softmax, api::sa_softmax_family, api::header_only)

SMAX_END_NAMESPACE
