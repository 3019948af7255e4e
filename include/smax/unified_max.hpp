#pragma once
// Unified-max softmax (FlashDecoding++, Hong et al. 2023): softmax evaluated as
// exp(x_i - φ)/Σ_j exp(x_j - φ) with a pre-chosen φ (the "unified max value", from profiling a
// model's scores) instead of the row maximum, so a row needs no max sweep and partial sums of
// chunks add without rescaling. A row with an entry outside the safe range, x - φ < a or
// x - φ > b, falls back to softmax's max-based kernels; the result is softmax's either way and
// the call says whether it fell back. See docs/unified_max.md and docs/edge_cases.md.
//
// Fast path: one read sweep that stores exp(x - σ) into y, sums it (blocks folded into double)
// and takes the row's minimum and maximum alongside, then one sweep that scales y by 1/sum; σ is
// a multiple of ln 2 within ln2/2 of φ (exp without any x - σ rounding), or φ rounded to T with
// the rounding of x - φ carried where that form does not apply (SSE2 rows with |x| >= 64, rows
// with |x| >= 2^20). In place (x == y) the first sweep only sums and the second recomputes the
// exponentials, so that a fallback still has x. Rows holding -inf whose minimum is therefore -inf
// take one more read sweep to look for a finite x below φ + a.
//
// Bound block
//   Types:         float, double.
//   Maximum error: softmax's: relative error <= 1e-6 (float) / 1e-14 (double) for every output
//                  >= FLT_MIN (DBL_MIN), fast path or fallback, every instruction set
//                  (tests/unified_max_test.cpp, against a long-double reference).
//   Valid range:   x is in range when φ + a <= x <= φ + b, the two sums rounded to double (and
//                  then inward to T). The fast path holds for every in-range row when
//                  -86 <= a < b <= 84 (float, any n) or -707 <= a < b <= 705 - ln n
//                  (double): every term e^(x - σ) is then a normal number and the sum is
//                  finite, so those rows never fall back. Wider (a, b) are allowed: a call
//                  whose in-range terms could underflow or overflow (x - σ outside
//                  [-86.8, 87.5], double [-707.8, 708]) computes every row with softmax's kernels
//                  and reports every row as fallen back; a row whose sum overflows falls back.
//   Bad input:     n = 0 does nothing and returns false. -inf entries are masked: output 0, never
//                  out of range. A row of only -inf gives NaN (0 with zero_masked_rows), fallback
//                  false. A row with a NaN or +inf gives NaN and reports fallback true (softmax's
//                  kernels computed it). φ, a and b must be finite with a < b, a precondition
//                  (asserted in debug builds); otherwise every row is NaN and none is reported.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/softmax.hpp"
#include "kernels/unified_max.hpp"

namespace smax {

// φ, a and b have no defaults (no universal choice exists; they are model and dtype specific):
// a value-initialised unified_max_options ({0, 0, 0}) violates a < b. Aggregate order:
// unified_max_options{phi, a, b} (and zero_masked_rows).
struct unified_max_options {
  double phi;  // the unified max value φ
  double a;    // lowest x - φ of the fast path
  double b;    // highest x - φ of the fast path
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct unified_max_softmax_family : family_defaults {
  using options = unified_max_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool masks_rows = true;
  static constexpr bool reports_rows = true;  // the rows that fell back
  // Options for generic code that needs some (the family-matrix test): the spec's example, not
  // a recommended default.
  static options sample_options() noexcept { return {6.0, -80.0, 80.0}; }

  // The options are checked by the forward pass only: the backward pass does not read them, so
  // unified_max_softmax_backward(y, dy, dx, n) needs none.
  template <class A, class T>
  static SMAX_ALWAYS_INLINE std::size_t forward(A, const T* x, std::size_t ldx, T* y,
                                                std::size_t ldy, std::size_t rows, std::size_t cols,
                                                options const& opts, algorithm_choice) noexcept {
    SMAX_ASSERT(opts.phi - opts.phi == 0.0 && opts.a - opts.a == 0.0 && opts.b - opts.b == 0.0 &&
                opts.a < opts.b && "unified_max_options: phi, a and b must be finite, with a < b");
    return kernels::unified_max_table<A>::forward(x, ldx, y, ldy, rows, cols, opts.phi, opts.a,
                                                  opts.b);
  }
  // Softmax's backward pass (the output is softmax's, however it was computed).
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const&,
                                          grads*) noexcept {
    kernels::softmax_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols, T(1), 0u);
  }
};

}  // namespace api

// unified_max_softmax(x, y, n, opts) -> bool: y = softmax(x), true when the row fell back to the
// max-based kernels. unified_max_softmax_rows(x, y, rows, cols, ld, opts) -> std::size_t: the
// number of rows that fell back. The options have no usable default: pass them.
// unified_max_softmax_backward(y, dy, dx, n, opts), unified_max_softmax_backward_rows(...):
// softmax's backward pass, dx = y ⊙ (dy - <dy, y>), with softmax's bound (softmax.hpp); the
// options are optional there and not read.
SMAX_FAMILY(unified_max_softmax, api::unified_max_softmax_family, api::header_only)

SMAX_END_NAMESPACE
