#pragma once
// Scalable-Softmax (SSMax; Nakanishi 2025): y = softmax(λ·x) with λ = s·ln(n) + b, where n is
// the number of keys the query sees (the row length by default). See docs/ssmax.md and
// docs/edge_cases.md.
//
// Evaluated on the softmax core with λ as its pre-max scale: exp(λ·(x_i - m))/sum with m the row
// maximum (the minimum when λ < 0), the rounding of x_i - m carried into the exponential. It
// costs what softmax with a temperature costs. λ is computed in double and rounded once to T.
//
// Bound block
//   Types:         float, double.
//   Maximum error: as softmax with T = 1/λ: float: relative error <= 1e-6 + |x_i - m|·|λ|·2^-22
//                  for every output >= FLT_MIN; double: <= 1e-14 + |x_i - m|·|λ|·2^-51. λ = 1 is
//                  softmax bit for bit. Both plus the rounding of λ = s·ln n + b in double,
//                  2^-51·(|s·ln n| + |b|)·(|x_i - m| + max_j |x_j - m|): relative to the terms,
//                  not to λ, where they cancel (s = 1, b = -3, n = 18 gives λ = -0.11). Checked
//                  by tests/ssmax_test.cpp against long double on every instruction set.
//   Valid range:   any finite x and any finite λ (either sign); outputs below FLT_MIN may be
//                  flushed to 0.
//   Bad input:     softmax's rules: -inf entries are masked (scaling happens on the finite
//                  entries only, so λ = 0 or λ < 0 never turn a mask into NaN or +inf); all masked
//                  gives NaN (0 with zero_masked_rows); NaN or +inf gives a NaN row; λ = 0 gives
//                  the uniform distribution over the unmasked entries; a non-finite λ (from s or
//                  b) gives NaN rows. n = 0 does nothing.
//
// x == y is allowed.

#include <cmath>
#include <cstddef>

#include "api/entry.hpp"
#include "kernels/ssmax.hpp"

namespace smax {

// λ = s·ln(n) + bias. s is learned per layer and head; 0.43 is the paper's Figure 1 value (and
// the unofficial reference code's default). n = 0 uses the row length; under causal masking pass
// the number of visible keys (i + 1 for the query at 0-based position i) and call per row.
struct ssmax_options {
  double s = 0.43;
  double bias = 0.0;
  std::size_t n = 0;
  bool zero_masked_rows = false;  // an all -inf row gives 0 instead of NaN
};

// Gradients of the parameters: set to the sum over the rows of one call (as MultiMax's).
struct ssmax_param_grads {
  double s = 0.0;
  double bias = 0.0;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct ssmax_family : family_defaults {
  using options = ssmax_options;
  using grads = ssmax_param_grads;
  static constexpr backward_shape backward_form = backward_shape::from_input_with_grads;

  // The gradients of a call split into tasks are summed by task, in task order (api/entry.hpp).
  static void add_grads(grads& into, grads const& part) noexcept {
    into.s += part.s;
    into.bias += part.bias;
  }

  static double keys(options const& opts, std::size_t cols) noexcept {
    return static_cast<double>(opts.n ? opts.n : cols);
  }

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    using table = kernels::ssmax_table<A>;
    const T lambda = table::lambda(opts.s, opts.bias, keys(opts, cols), static_cast<T*>(nullptr));
    table::forward(x, ldx, y, ldy, rows, cols, lambda,
                   opts.zero_masked_rows ? kernels::flag_zero_masked_rows : 0u);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const& opts, grads* g) noexcept {
    using table = kernels::ssmax_table<A>;
    const double n = keys(opts, cols);
    const T lambda = table::lambda(opts.s, opts.bias, n, static_cast<T*>(nullptr));
    double dlambda = 0;
    table::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, lambda, g ? &dlambda : nullptr);
    if (g) {
      g->s = std::log(n) * dlambda;
      g->bias = dlambda;
    }
  }
};

}  // namespace api

// ssmax(x, y, n [, opts]), ssmax_rows(x, y, rows, cols, ld [, opts]): y = softmax(λ·x); every row
// of a _rows call uses the same λ (opts.n, or cols).
// ssmax_backward(x, y, dy, dx, n [, opts [, grads]]), ssmax_backward_rows(...): dx = λ·y ⊙ (dy -
// <dy, y>). With grads, also dλ = sum over unmasked i of x_i·y_i·(dy_i - <dy, y>) (over all rows
// for the _rows form), and sets grads->s = ln(n)·dλ, grads->bias = dλ. x is read only for the
// parameter gradients. dx may be dy.
SMAX_FAMILY(ssmax, api::ssmax_family, api::header_only)

SMAX_END_NAMESPACE
