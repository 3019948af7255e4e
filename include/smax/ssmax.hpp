#pragma once
// Scalable-Softmax (SSMax; Nakanishi 2025; spec §8): y = softmax(λ·x) with λ = s·ln(n) + b, where
// n is the number of keys the query sees (the row length by default).
//
// Evaluated on the softmax core with λ as its pre-max scale: exp(λ·(x_i - m))/sum with m the row
// maximum (the minimum when λ < 0), the rounding of x_i - m carried into the exponential. It
// costs what softmax with a temperature costs. λ is computed in double and rounded once to T.
//
// Accuracy (checked by tests/ssmax_test.cpp against long double, every instruction set): as
// softmax with T = 1/λ: relative error <= 1e-6 + |x_i - m|·|λ|·2^-22 (float) for every output
// >= FLT_MIN; double <= 1e-14 + |x_i - m|·|λ|·2^-51. Both plus the rounding of λ = s·ln n + b in
// double, 2^-51·(|s·ln n| + |b|)·(|x_i - m| + max_j |x_j - m|): relative to the terms, not to λ,
// where they cancel (s = 1, b = -3, n = 18 gives λ = -0.11).
//
// Bad input: the softmax rules (spec §0.2): -inf entries are masked (scaling happens on the
// finite entries only, so λ = 0 or λ < 0 never turn a mask into NaN or +inf); all masked gives
// NaN (0 with zero_masked_rows); NaN or +inf gives a NaN row; λ = 0 gives the uniform
// distribution over the unmasked entries; a non-finite λ (from s or b) gives NaN rows.
// n = 0 does nothing. x == y is allowed.

#include <cmath>
#include <cstddef>

#include "detail/api.hpp"
#include "kernels/ssmax.hpp"

SMAX_BEGIN_NAMESPACE

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

namespace api {
using ssmax_table = kernels::ssmax_table<xsimd::default_arch>;

inline double ssmax_n(ssmax_options const& opts, std::size_t cols) noexcept {
  return static_cast<double>(opts.n ? opts.n : cols);
}
// λ = s·log n + bias in T. float: log n inline (primitives::log_of_sum, within 2^-32 relative,
// far inside λ's rounding to float; a libm call was 5 % of a 64-element row), double: std::log.
template <class T>
inline T ssmax_lambda(ssmax_options const& opts, std::size_t cols) noexcept {
  const double n = ssmax_n(opts, cols);
  const double log_n = sizeof(T) == 4 ? primitives::log_of_sum<xsimd::default_arch>(n) : std::log(n);
  return static_cast<T>(opts.s * log_n + opts.bias);
}

template <class Table = ssmax_table, class T>
inline void ssmax(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                  std::size_t cols, ssmax_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
  if (rows == 0 || cols == 0) return;
  Table::forward(x, ldx, y, ldy, rows, cols, ssmax_lambda<T>(opts, cols),
                       opts.zero_masked_rows ? kernels::flag_zero_masked_rows : 0u);
}

template <class Table = ssmax_table, class T>
inline void ssmax_backward(const T* x, std::size_t ldx, const T* y, std::size_t ldy, const T* dy,
                           std::size_t lddy, T* dx, std::size_t lddx, std::size_t rows,
                           std::size_t cols, ssmax_options const& opts,
                           ssmax_param_grads* grads) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  if (rows == 0 || cols == 0) return;
  double dlambda = 0;
  Table::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols,
                        ssmax_lambda<T>(opts, cols), grads ? &dlambda : nullptr);
  if (grads) {
    grads->s = std::log(ssmax_n(opts, cols)) * dlambda;
    grads->bias = dlambda;
  }
}
}  // namespace api

// SSMax of one row of n elements.
template <class T, detail::if_real_t<T> = 0>
inline void ssmax(const T* x, T* y, std::size_t n, ssmax_options const& opts = {}) noexcept {
  api::ssmax(x, n, y, n, 1, n, opts);
}

// SSMax of each row of a row-major rows × cols matrix whose rows start ld elements apart; every
// row uses the same λ (opts.n, or cols).
template <class T, detail::if_real_t<T> = 0>
inline void ssmax_rows(const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,
                       ssmax_options const& opts = {}) noexcept {
  api::ssmax(x, ld, y, ld, rows, cols, opts);
}

// Backward pass (spec §8(4)): dx = λ·y ⊙ (dy - <dy, y>). With grads, also
// dλ = sum over unmasked i of x_i·y_i·(dy_i - <dy, y>) (over all rows for the _rows form), and
// sets grads->s = ln(n)·dλ, grads->bias = dλ. x is read only for the parameter gradients. dx may be dy.
template <class T, detail::if_real_t<T> = 0>
inline void ssmax_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                           ssmax_options const& opts = {}, ssmax_param_grads* grads = nullptr) noexcept {
  api::ssmax_backward(x, n, y, n, dy, n, dx, n, 1, n, opts, grads);
}

template <class T, detail::if_real_t<T> = 0>
inline void ssmax_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,
                                std::size_t cols, std::size_t ld, ssmax_options const& opts = {},
                                ssmax_param_grads* grads = nullptr) noexcept {
  api::ssmax_backward(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts, grads);
}

SMAX_END_NAMESPACE
