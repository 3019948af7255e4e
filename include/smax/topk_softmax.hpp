#pragma once
// Top-k softmax (sparse softmax, Sun et al. 2021): y_i = exp(x_i) / Σ_{j∈S} exp(x_j) for i in S,
// the k largest entries of the row, and y_i = 0 elsewhere. S is the first k entries in the order
// (value descending, index ascending): ties at the k-th place go to the lower index
// ([2, 2, 1, 2] with k = 2 selects indices 0 and 1), and masked entries (-inf) come after every
// finite one. k >= n gives softmax. See docs/topk_softmax.md and docs/edge_cases.md.
//
// Selection in O(n) without sorting: a lower bound of the k-th value from group maxima, then one
// SIMD sweep that keeps a running threshold and touches only the entries above it (a buffer of
// candidates cut back to k whenever it fills). Then softmax's exponentials on the candidates
// only (about k of them): exp(x - m) with the rounding of x - m carried, the sum in double, one
// factor. The zeros are written in one sweep (streaming stores past the cache). Short rows and
// k >= about n/2 find the cut on a copy of the row and run softmax's passes with the mask. Rows
// with k >= n are softmax's kernels' (the same bits as smax::softmax).
//
// Bound block
//   Types:         float, double.
//   Maximum error: softmax's over S: relative error <= 1e-6 (float) / 1e-14 (double) for every
//                  output >= FLT_MIN (DBL_MIN) against softmax(x + mask), the mask -inf outside
//                  S; every output outside S is exactly +0. S itself is exact (the selection
//                  compares values, it computes nothing). Backward: dx = y ⊙ (dy - <dy, y>),
//                  softmax's backward pass, |dx_i - dx*_i| <= 2^-19·y_i·(|dy_i| + Σ_j |dy_j·y_j|)
//                  (float; 2^-48 double) with dx* the exact VJP at the y passed in; it is the VJP
//                  restricted to S with no approximation, because y is 0 outside S (an entry of S
//                  whose probability underflowed to 0 has the exact derivative y_i·(...) = 0 as
//                  well). Checked by tests/topk_softmax_test.cpp against long double on every
//                  instruction set.
//   Valid range:   any finite x up to ±FLT_MAX ([3e38, -3e38, 1e38] with k = 2 -> [1, 0, 0]), any
//                  n (tested to 10^6 with k up to n - 1) and k. Outputs below FLT_MIN may be
//                  flushed to 0. Shift invariant.
//   Bad input:     n = 0 does nothing. -inf entries are masked: chosen last, output 0, backward
//                  0. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or +inf
//                  gives a NaN row (backward too, through y). k >= 1 is a precondition, asserted
//                  in debug builds; k = 0 in a release build gives NaN rows. k > 128 (on rows
//                  longer than 256) takes a per-thread scratch buffer of 2k·(2·sizeof(T) + 8)
//                  bytes; a row whose buffer cannot be allocated is NaN.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/topk_softmax.hpp"

namespace smax {

// k has no usable default: a value-initialised topk_softmax_options (k = 0) violates k >= 1.
// Aggregate order: topk_softmax_options{k} (and zero_masked_rows).
struct topk_softmax_options {
  std::size_t k = 0;  // the number of entries kept (k >= 1; k >= n gives softmax)
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct topk_softmax_family : family_defaults {
  using options = topk_softmax_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool masks_rows = true;

  // Options for code that calls every family generically (the family-matrix test): k = 3.
  static options sample_options() noexcept {
    options opts;
    opts.k = 3;
    return opts;
  }
  static void check(options const& opts) noexcept {
    SMAX_ASSERT(opts.k >= 1 && "topk_softmax_options::k must be at least 1");
    (void)opts;
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::topk_softmax_table<A>::forward(x, ldx, y, ldy, rows, cols, opts.k);
  }
  // Softmax's backward pass on y (k is not read).
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const&,
                                          grads*) noexcept {
    kernels::topk_softmax_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols);
  }
};

}  // namespace api

// topk_softmax(x, y, n, opts), topk_softmax_rows(x, y, rows, cols, ld, opts): softmax over the
// opts.k largest entries of each row, 0 elsewhere. topk_softmax_backward(y, dy, dx, n, opts),
// topk_softmax_backward_rows(y, dy, dx, rows, cols, ld, opts): dx = y ⊙ (dy - <dy, y>) for
// y = topk_softmax(x); any of y, dy, dx may be the same array. opts.k is required (>= 1) by
// every form, the backward pass included (it is checked there, not read).
SMAX_FAMILY(topk_softmax, api::topk_softmax_family, api::header_only)

SMAX_END_NAMESPACE
