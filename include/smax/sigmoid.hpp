#pragma once
// sigmoid: y_i = σ(x_i) = 1/(1 + exp(-x_i)), and sigmoid attention: y_i = σ(x_i + b) with
// b = -ln(seq_len) by default (spec §9; Ramapuram et al. 2024). Elementwise, not normalised.
//
// Evaluated as 1/(1 + e) for t >= 0 and e/(1 + e) for t < 0 with e = exp(-|t|): nothing
// overflows for any |t|, and 1 - σ(t) is never formed by subtraction.
//
// Accuracy (float and double, every instruction set, checked by tests/sigmoid_test.cpp against
// long double): <= 2 ulp (2.5 ulp on SSE2, which has no FMA) of σ(x + b) with x + b exact, for
// every output >= FLT_MIN (DBL_MIN); smaller outputs (t < -87.3 for float) may be flushed to 0.
// x + b is carried exactly into the exponential, so large |x + b| costs nothing. b is the bias
// as the kernel holds it: for sigmoid attention -ln(seq_len) computed in double and rounded to
// T (at seq_len = 2^31 that rounding alone puts σ up to 8 float ulp from σ(x - ln seq_len)).
//
// Bad input (spec §9(3)): elementwise, so no row rule applies: -inf -> 0, +inf -> 1, NaN -> NaN
// at that position only; n = 0 does nothing. x == y (in place) is allowed; otherwise x and y
// must not overlap.

#include <cmath>
#include <cstddef>

#include "detail/api.hpp"
#include "kernels/sigmoid.hpp"

SMAX_BEGIN_NAMESPACE

// Options of sigmoid attention. The bias is b = -ln(seq_len), where seq_len is the configured
// (maximum, training) sequence length: a constant of the model, not the number of keys a row
// sees, so causal masking does not change it (spec §9(1)). seq_len = 0 takes the row length
// (cols for the _rows forms). Setting `bias` to a finite value overrides the default.
struct sigmoid_attention_options {
  std::size_t seq_len = 0;
  double bias = __builtin_nan("");  // NaN: -ln(seq_len)
};

namespace api {
using sigmoid_table = kernels::sigmoid_table<xsimd::default_arch>;

inline double sigmoid_attention_bias(sigmoid_attention_options const& opts, std::size_t n) noexcept {
  if (opts.bias == opts.bias) return opts.bias;
  const std::size_t len = opts.seq_len ? opts.seq_len : n;
  return len > 0 ? -std::log(static_cast<double>(len)) : 0.0;
}

template <class Table = sigmoid_table, class T>
inline void sigmoid(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                    std::size_t cols, double bias) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
  if (rows == 0 || cols == 0) return;
  Table::forward(x, ldx, y, ldy, rows, cols, static_cast<T>(bias));
}

template <class Table = sigmoid_table, class T>
inline void sigmoid_backward(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                             std::size_t lddx, std::size_t rows, std::size_t cols) noexcept {
  SMAX_ASSERT((y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  if (rows == 0 || cols == 0) return;
  Table::backward(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
}  // namespace api

// y = σ(x) elementwise.
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid(const T* x, T* y, std::size_t n) noexcept {
  api::sigmoid(x, n, y, n, 1, n, 0.0);
}

// y = σ(x) for each row of a row-major rows × cols matrix whose rows start ld elements apart.
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_rows(const T* x, T* y, std::size_t rows, std::size_t cols,
                         std::size_t ld) noexcept {
  api::sigmoid(x, ld, y, ld, rows, cols, 0.0);
}

// Backward pass from the output: dx = dy·y·(1 - y) (spec §9(4); PyTorch's formula). 0 where y is
// 0 or 1 (saturated). Within 2 ulp of dy·y·(1 - y) for the given y; any of y, dy, dx may be the
// same array.
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_backward(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  api::sigmoid_backward(y, n, dy, n, dx, n, 1, n);
}

template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,
                                  std::size_t cols, std::size_t ld) noexcept {
  api::sigmoid_backward(y, ld, dy, ld, dx, ld, rows, cols);
}

// Sigmoid attention scores: y = σ(x + b), b = -ln(seq_len) unless opts.bias is set. With the
// default options (seq_len = 0) b = -ln(n), so a zero score gives 1/(1 + n).
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_attention(const T* x, T* y, std::size_t n,
                              sigmoid_attention_options const& opts = {}) noexcept {
  api::sigmoid(x, n, y, n, 1, n, api::sigmoid_attention_bias(opts, n));
}

template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_attention_rows(const T* x, T* y, std::size_t rows, std::size_t cols,
                                   std::size_t ld,
                                   sigmoid_attention_options const& opts = {}) noexcept {
  api::sigmoid(x, ld, y, ld, rows, cols, api::sigmoid_attention_bias(opts, cols));
}

// Backward pass of sigmoid attention: dx = dy·y·(1 - y), the same as sigmoid_backward (the bias
// shifts x only). The bias gradient, if b is learned, is sum(dx).
template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_attention_backward(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  api::sigmoid_backward(y, n, dy, n, dx, n, 1, n);
}

template <class T, detail::if_real_t<T> = 0>
inline void sigmoid_attention_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,
                                            std::size_t cols, std::size_t ld) noexcept {
  api::sigmoid_backward(y, ld, dy, ld, dx, ld, rows, cols);
}

SMAX_END_NAMESPACE
