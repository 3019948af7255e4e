#pragma once
// sigmoid: y_i = σ(x_i) = 1/(1 + exp(-x_i)), and sigmoid attention: y_i = σ(x_i + b) with
// b = -ln(seq_len) by default (Ramapuram et al. 2024). Elementwise, not normalised. See
// docs/sigmoid.md.
//
// Evaluated as 1/(1 + e) for t >= 0 and e/(1 + e) for t < 0 with e = exp(-|t|): nothing
// overflows for any |t|, and 1 - σ(t) is never formed by subtraction. x + b is carried exactly
// into the exponential, so large |x + b| costs nothing.
//
// Bound block
//   Types:         float, double.
//   Maximum error: <= 2 ulp (2.5 ulp on SSE2, which has no FMA) of σ(x + b) with x + b exact, for
//                  every output >= FLT_MIN (DBL_MIN); checked by tests/sigmoid_test.cpp against
//                  long double on every instruction set. b is the bias as the kernel holds it:
//                  for sigmoid attention -ln(seq_len) computed in double and rounded to T (at
//                  seq_len = 2^31 that rounding alone puts σ up to 8 float ulp from
//                  σ(x - ln seq_len)).
//   Valid range:   every x; smaller outputs (t < -87.3 for float) may be flushed to 0.
//   Bad input:     elementwise, so no row rule of docs/edge_cases.md applies: -inf -> 0,
//                  +inf -> 1, NaN -> NaN at that position only; n = 0 does nothing.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "api/entry.hpp"
#include "kernels/sigmoid.hpp"

namespace smax {

// Nothing to set yet (a later setting will not change the signatures).
struct sigmoid_options {};

// Options of sigmoid attention. The bias is b = -ln(seq_len), where seq_len is the configured
// (maximum, training) sequence length: a constant of the model, not the number of keys a row
// sees, so causal masking does not change it. seq_len = 0 takes the row length (cols for the
// _rows forms). Setting `bias` to a finite value overrides the default.
struct sigmoid_attention_options {
  std::size_t seq_len = 0;
  double bias = __builtin_nan("");  // NaN: -ln(seq_len)
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

// Sigmoid (Attention = false) and sigmoid attention (true): one elementwise kernel, which adds a
// bias b to x exactly before σ; the backward pass dx = dy·y·(1 - y) is the same for both (the
// bias shifts x only; if b is learned, its gradient is sum(dx)).
template <class Options>
struct sigmoid_like_family : family_defaults {
  using options = Options;
  static constexpr backward_shape backward_form = backward_shape::from_output;

  static double bias(sigmoid_options const&, std::size_t) noexcept { return 0.0; }
  static double bias(sigmoid_attention_options const& opts, std::size_t cols) noexcept {
    // The NaN default is told by its bits: -ffast-math folds opts.bias == opts.bias to true.
    std::uint64_t bits = 0;
    __builtin_memcpy(&bits, &opts.bias, sizeof bits);
    if ((bits & 0x7fffffffffffffffull) <= 0x7ff0000000000000ull) return opts.bias;
    const std::size_t len = opts.seq_len ? opts.seq_len : cols;
    return len > 0 ? -std::log(static_cast<double>(len)) : 0.0;
  }

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::sigmoid_table<A>::forward(x, ldx, y, ldy, rows, cols,
                                       static_cast<T>(bias(opts, cols)));
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const&,
                                          grads*) noexcept {
    kernels::sigmoid_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols);
  }
};
using sigmoid_family = sigmoid_like_family<sigmoid_options>;
using sigmoid_attention_family = sigmoid_like_family<sigmoid_attention_options>;

}  // namespace api

// sigmoid(x, y, n [, opts]), sigmoid_rows(x, y, rows, cols, ld [, opts]): y = σ(x) elementwise.
// sigmoid_backward(y, dy, dx, n [, opts]), sigmoid_backward_rows(...): dx = dy·y·(1 - y) from the
// output (PyTorch's formula); 0 where y is 0 or 1 (saturated); within 1.5 ulp of dy·y·(1 - y) for
// the given y (2.5 ulp on SSE2, which has no FMA). Any of y, dy, dx may be the same array.
SMAX_FAMILY(sigmoid, api::sigmoid_family, api::header_only)

// sigmoid_attention(x, y, n [, opts]), sigmoid_attention_rows(...): y = σ(x + b), b = -ln(seq_len)
// unless opts.bias is set. With the default options (seq_len = 0) b = -ln(n), so a zero score
// gives 1/(1 + n). sigmoid_attention_backward(y, dy, dx, n [, opts]), ..._backward_rows(...): as
// sigmoid_backward.
SMAX_FAMILY(sigmoid_attention, api::sigmoid_attention_family, api::header_only)

SMAX_END_NAMESPACE
