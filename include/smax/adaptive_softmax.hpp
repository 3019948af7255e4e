#pragma once
// Adaptive-temperature softmax (Veličković et al. 2024, "softmax is not enough"):
//   p = softmax(x),  H = -Σ p_i·log(p_i + 1e-9),
//   β = max(P(H), 1) if H > 0.5, else 1,   P(H) = -0.037H^4 + 0.481H^3 - 2.3H^2 + 4.917H - 1.791,
//   y = softmax(β·x).
// Softmax sharpened by an inverse temperature β in [1, 2.4214] chosen from the row's own entropy:
// β > 1 only for 0.8486 < H < 5.9445. See docs/adaptive_softmax.md and docs/edge_cases.md.
//
// Fused: softmax's max pass; its exponential pass also sums e·(x - m), which gives -Σ p·log p,
// within n·1e-9 of H: that decides β = 1 without a log wherever H is clearly outside the gates
// (softmax's cost then), and float rows of at most 1024 elements take H from it (the midpoint of
// that interval, within 5.2e-7 of H); the other rows take the definition's H in one more pass
// (one log an element). When β > 1, softmax's exponential and scale passes run again with
// 1/T = β. x - m overflowing to -inf is exactly the 0 it should give, so rows up to ±FLT_MAX need
// no special form.
//
// Bound block
//   Types:         float, double.
//   Maximum error: forward, for every output y*_k >= FLT_MIN (DBL_MIN), ε = 2^-24 (2^-53):
//                    |y_k - y*_k| <= y*_k·(ρ + 4ε·β·|x_k - m| + Δβ·|x_k - x̄|),
//                  ρ = 1e-6 (1e-14) softmax's bound, m the row maximum, x̄ = Σ y*_j·x_j, and
//                  Δβ = 2.5255·δH + ε·β the error of β: δH = 16ε·(1 + ln n) bounds the error of
//                  the entropy (its rounding and, for float rows of at most 1024 elements, the
//                  5.2e-7 of the midpoint), 2.5255 = max |P'| where β > 1, and β(H) = max(P(H), 1)
//                  is continuous, so δH moves β by at most 2.5255·δH, at the gates as well.
//                  Backward, for rows whose entropy H* is more than δH from both gates (0.8486,
//                  5.9445; the computed H is within δH of H*, so it falls on H*'s side):
//                  |dx_k - dx*_k| <= 2ψ·(β·y*_k·(|dy_k| +
//                  Σ_j y*_j·|dy_j|) + [β > 1]·p_k·(|ln(p_k + 1e-9)| + 2 + H)·(|P'(H)| + 1)·G) +
//                  32·FLT_MIN·(|dy_k| + |c| + 1), with ψ = φ + Δβ, φ the row's largest forward
//                  bound (relative, over its normal outputs), c = <dy, y*>, p = softmax(x) and
//                  G = Σ_j y*_j·(|dy_j| + |c|)·(1 + |x_j - m|). Checked by
//                  tests/adaptive_softmax_test.cpp against long double on every instruction set,
//                  with rows whose entropy sits on either gate.
//   Valid range:   every finite x up to ±FLT_MAX (DBL_MAX): [FLT_MAX ×3, -FLT_MAX, 0] gives
//                  [1/3 ×3, 0, 0] (β = P(ln 3) = 1.81). Shift invariant. Outputs below FLT_MIN
//                  may be flushed to 0.
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, no part in H, backward
//                  0. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or +inf gives
//                  a NaN row (backward too). n = 1 gives [1].
//   Gates:         at H = 0.8486 and 5.9445 (P(H) = 1) β is continuous but its derivative jumps:
//                  the backward takes the side the computed H falls on (a one-sided derivative).
//                  Within δH of a gate the computed H may fall on the other side than H*: the
//                  backward then takes that side's derivative (dβ/dH = 0 outside the gates, P'(H)
//                  between them), and the backward bound above, written for dx*, is not claimed
//                  there (the two sides differ by the β' term, up to p_k·(...)·|P'(gate)|·G).
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/adaptive_softmax.hpp"

namespace smax {

struct adaptive_softmax_options {
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct adaptive_softmax_family : family_defaults {
  using options = adaptive_softmax_options;
  static constexpr backward_shape backward_form = backward_shape::from_input;
  static constexpr bool masks_rows = true;
  static constexpr double masked_row = 0.0;

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const&,
                                         algorithm_choice) noexcept {
    kernels::adaptive_softmax_table<A>::forward(x, ldx, y, ldy, rows, cols);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const&, grads*) noexcept {
    kernels::adaptive_softmax_table<A>::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols);
  }
};

}  // namespace api

// adaptive_softmax(x, y, n [, opts]), adaptive_softmax_rows(x, y, rows, cols, ld [, opts]);
// adaptive_softmax_backward(x, y, dy, dx, n [, opts]), adaptive_softmax_backward_rows(...): the
// VJP of y = adaptive_softmax(x), the gradient flowing through β.
SMAX_FAMILY(adaptive_softmax, api::adaptive_softmax_family, api::header_only)

SMAX_END_NAMESPACE
