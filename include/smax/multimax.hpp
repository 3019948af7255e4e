#pragma once
// MultiMax (Zhou, Fritz & Keuper, ICML 2024): softmax of a learnable piecewise-quadratic
// modulation of the scores,
//
//   σ(x) = x + t0·relu(r0 - x) + t1·relu(x - r1) + t2·relu(r2 - x)² + t3·relu(x - r3)²
//   y_i  = exp(σ(x_i) - m) / Σ_j exp(σ(x_j) - m),   m = max_j σ(x_j)
//
// (the second-order form the reference code ships, 4 + 4 parameters; t_k = r_k = 0 is plain
// softmax). See docs/multimax.md and docs/edge_cases.md. The maximum is taken over σ(x), not x:
// σ need not be monotone (t0 > 1 reverses the order below r0, t2 > 0 makes σ grow again as
// x -> -inf). When σ is nondecreasing (t2 <= 0 <= t3, 1 - t0 >= 0, 1 + t1 >= 0,
// 1 - t0 + t1 >= 0) the maximum is σ(max x) and the max pass costs what softmax's does;
// otherwise it evaluates σ. σ is recomputed in the exp pass (no temporary), and the rounding
// error of σ(x) - shift is carried into the exponential exactly, as in softmax.
//
// Bound block
//   Types:         float, double. The parameters are rounded to the element type first (the
//                  float kernels compute with float parameters): the bound is against that σ.
//   Maximum error: float: relative error <= (1 + 1e-6)·e^δ_i - 1, δ_i = 2^-20·(W_i + max_j W_j),
//                  for every output >= FLT_MIN, where W(x) = (1 + |t0| + |t1|)·(|x| + R) +
//                  (|t2| + |t3|)·(|x| + R)², R = max|r_k|, bounds the rounding of σ in float (its
//                  error is at most 16u·W, u = 2^-24) and the maximum runs over the unmasked
//                  entries. Where δ_i is small that is 1e-6 + δ_i; where it is not, the error of
//                  σ enters through exp and is e^δ - 1, not δ (σ ~ -1e9 rounded by 64 turned an
//                  output of 2.9e-20 into 0.042). With all t = 0, σ(x) = x exactly and the result
//                  is smax::softmax(smax::three_pass, ...)'s bit for bit (relative error
//                  <= 1e-6). double: (1 + 1e-14)·e^δ_i - 1, δ_i = 2^-49·(W_i + max_j W_j).
//                  Checked by tests/multimax_test.cpp against a long-double reference on every
//                  instruction set.
//   Valid range:   finite x while σ's terms stay finite: M(x) = |x| + |t0|·relu(r0 - x) +
//                  |t1|·relu(x - r1) + |t2|·relu(r2 - x)² + |t3|·relu(x - r3)² at most the
//                  largest finite value, so that no partial sum of σ overflows (with all t = 0,
//                  [3e38, -3e38, 1e38] -> [1, 0, 0]). Beyond, the result is unspecified (a NaN
//                  row or the limit): the quadratic terms for |x - r| beyond about 1e19 (float),
//                  and t0 = 1.5 at x = -DBL_MAX, where σ = 9e307 but t0·relu(r0 - x) overflows.
//   Bad input:     n = 0 does nothing. -inf entries are masked after the modulation (never
//                  σ(-inf)): output exactly 0, excluded from every reduction. A row of only -inf,
//                  any NaN or +inf gives a NaN row (there is no zero-row mode). Parameters that
//                  are not finite are a precondition violation (asserted in debug builds) and
//                  give a NaN row.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <array>
#include <cstddef>

#include "api/entry.hpp"
#include "kernels/multimax.hpp"

namespace smax {

struct multimax_options {
  // t0..t3 scale the four terms of σ, r0..r3 are their kinks. All 0 (the default) is softmax.
  // Must be finite.
  std::array<double, 4> t{};
  std::array<double, 4> r{};
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

// Gradients of <dy, y> with respect to the parameters (docs/multimax.md), filled by
// multimax_backward when asked for: dt[k] = ∂/∂t_k, dr[k] = ∂/∂r_k. The *_rows form stores the
// sum over all its rows (the parameters are shared by the rows); either form overwrites.
struct multimax_param_grads {
  std::array<double, 4> dt{};
  std::array<double, 4> dr{};
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

template <class T>
inline kernels::multimax_parameters<T> multimax_parameters_of(
    multimax_options const& opts) noexcept {
  kernels::multimax_parameters<T> p{};
  for (int k = 0; k < 4; ++k) {
    p.t[k] = static_cast<T>(opts.t[k]);
    p.r[k] = static_cast<T>(opts.r[k]);
  }
  return p;
}

struct multimax_family : family_defaults {
  using options = multimax_options;
  using grads = multimax_param_grads;
  static constexpr backward_shape backward_form = backward_shape::from_input_with_grads;
  static constexpr bool masks_rows = true;

  // The gradients of a call split into tasks are summed by task, in task order (api/entry.hpp).
  static void add_grads(grads& into, grads const& part) noexcept {
    for (int k = 0; k < 4; ++k) {
      into.dt[k] += part.dt[k];
      into.dr[k] += part.dr[k];
    }
  }

  static void check(options const& opts) noexcept {
    for (int k = 0; k < 4; ++k)
      SMAX_ASSERT(__builtin_isfinite(opts.t[k]) && __builtin_isfinite(opts.r[k]) &&
                  "multimax_options: every t and r must be finite");
    (void)opts;
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::multimax_table<A>::forward(x, ldx, y, ldy, rows, cols,
                                        multimax_parameters_of<T>(opts));
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const& opts, grads* g) noexcept {
    double sums[8] = {};
    kernels::multimax_table<A>::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols,
                                         multimax_parameters_of<T>(opts), g ? sums : nullptr);
    if (g)
      for (int k = 0; k < 4; ++k) {
        g->dt[k] = sums[k];
        g->dr[k] = sums[4 + k];
      }
  }
};

}  // namespace api

// multimax(x, y, n [, opts]), multimax_rows(x, y, rows, cols, ld [, opts]).
// Backward pass for y = multimax(x) (docs/multimax.md): with gz = y ⊙ (dy - <dy, y>),
//   dx = gz ⊙ σ'(x),  σ'(x) = 1 - t0·[x < r0] + t1·[x > r1] - 2t2·relu(r2 - x) + 2t3·relu(x - r3)
// (strict inequalities: relu'(0) = 0). Masked entries (x = -inf) get 0; a NaN row (y NaN) gives
// NaN. With param_grads, also
//   dt0 = Σ gz·relu(r0 - x), dt1 = Σ gz·relu(x - r1), dt2 = Σ gz·relu(r2 - x)², dt3 = Σ gz·relu(x - r3)²,
//   dr0 = t0·Σ gz·[x < r0], dr1 = -t1·Σ gz·[x > r1], dr2 = 2t2·Σ gz·relu(r2 - x), dr3 = -2t3·Σ gz·relu(x - r3)
// over the unmasked entries, accumulated in double.
// Accuracy (ε = 2^-23 float, 2^-52 double), beyond the error y itself carries, with
// D = Σ_j y_j·|dy_j|: each dx_i within 16ε·y_i·(|dy_i| + D)·S_i, S_i = 1 + |t0|·[x_i < r0] +
// |t1|·[x_i > r1] + 2|t2|·relu(r2 - x_i) + 2|t3|·relu(x_i - r3) (the magnitude of σ'(x_i)'s
// terms); each parameter gradient within 24ε·Σ_i y_i·(|dy_i| + D)·|its factor at x_i| (the
// factor of gz in its sum, times |t_k| or 2|t_k| for dr_k). x, y, dy and dx may be the same
// array; the _rows form reads and writes each with ld.
SMAX_FAMILY(multimax, api::multimax_family, api::header_only)

SMAX_END_NAMESPACE
