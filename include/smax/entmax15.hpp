#pragma once
// 1.5-entmax (Peters, Niculae & Martins 2019): y = argmax_{p in simplex} <p, x> + H_1.5(p), with
// the Tsallis entropy H_1.5(p) = (4/3)·sum(p_j - p_j^1.5); the solution is
// y_i = [x_i/2 - tau]_+^2 with tau such that sum(y) = 1. Sparse (exact zeros off the support)
// like sparsemax, smooth on the support like softmax. No parameters. See docs/entmax15.md and
// docs/edge_cases.md.
//
// Evaluated on z = (x - m)/2 (m the row maximum; the threshold of z lies in [-1, 0), so only
// entries within 2 of the maximum can be in the support). The threshold is exact, not iterated to
// a tolerance, and never sorts a long row: rows of at most 128 elements copy their candidates
// (entries within 2 of the maximum) to the stack; longer rows bound tau from below (by the
// threshold of the max pass's lane maxima; from 4096 elements on by the threshold of the row's
// first sixteenth, found the same way), compact the entries above that bound in a SIMD pass, and
// finish exactly on them (Newton steps from below until the closed-form root of the remaining set
// leaves none of it below the root; the few left, or a set still undecided after 32 rounds, are
// sorted: O(k log k) at worst). tau is accumulated in double (centred sums, compensated for
// double rows). Three passes over x (max, compaction, write); from 4096 elements on the max pass
// compacts as it goes (two passes and a sixteenth). No transcendental functions (one square root
// a round).
//
// Bound block
//   Types:         float, double.
//   Maximum error: |y_i - y*_i| <= 2^-21 (float) / 2^-49 (double), absolute, every instruction set
//                  and row length (tests/entmax15_test.cpp, against a long-double sort-based
//                  reference). Outputs are exactly 0 off the support; an entry within that bound
//                  of the threshold may fall on either side. support_size equals the number of
//                  nonzero outputs: the entries whose difference (x_i - m)/2 - t, as the write
//                  pass forms it, is positive.
//   Valid range:   any finite input up to ±FLT_MAX (DBL_MAX): [3e38, -3e38, 1e38] -> [1, 0, 0];
//                  rows of any length (tested up to 10^6, also with every entry a candidate).
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, in no reduction or
//                  support. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or
//                  +inf gives a NaN row. Ties share equally ([1, 1] -> [.5, .5]); n = 1 gives [1];
//                  a gap of 2 or more between the two largest entries gives a one-hot row.
//   Memory:        rows longer than 128 use the per-thread scratch buffer sparsemax uses (grown
//                  with realloc to max(1024, n + 16) doubles for these rows, kept until the
//                  thread exits). If it cannot be allocated, the row becomes NaN. Nothing throws.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "entmax_threshold.hpp"
#include "kernels/entmax15.hpp"

namespace smax {

struct entmax15_options {
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct entmax15_family : family_defaults {
  using options = entmax15_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool masks_rows = true;

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const&,
                                         algorithm_choice) noexcept {
    kernels::entmax15_table<A>::forward(x, ldx, y, ldy, rows, cols,
                                        kernels::entmax15_algorithm::automatic);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const&,
                                          grads*) noexcept {
    kernels::entmax15_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols);
  }
};

// The threshold and the loss, on one dispatcher's kernels.
template <class Dispatch, class T>
inline entmax_threshold<T> entmax15_threshold(const T* x, std::size_t n) noexcept {
  SMAX_ASSERT(x != nullptr || n == 0);
  const T nan = static_cast<T>(__builtin_nan(""));
  if (n == 0) return {nan, 0};
  return Dispatch::visit([&](auto a) -> entmax_threshold<T> {
    const auto s = kernels::entmax15_table<decltype(a)>::threshold(
        x, n, kernels::entmax15_algorithm::automatic);
    if (s.kind != kernels::entmax15_row_state<T>::ordinary) return {nan, 0};
    return {static_cast<T>(0.5 * static_cast<double>(s.max) + s.tau), s.support_size};
  });
}

template <class Dispatch, class T>
inline T entmax15_loss(const T* x, std::size_t n, std::size_t target) noexcept {
  SMAX_ASSERT(x != nullptr && target < n);
  return Dispatch::visit(
      [&](auto a) -> T { return kernels::entmax15_table<decltype(a)>::loss(x, n, target); });
}

template <class Dispatch, class T>
inline void entmax15_loss_backward(const T* x, std::size_t n, std::size_t target, T dloss,
                                   T* dx) noexcept {
  SMAX_ASSERT(x != nullptr && dx != nullptr && target < n);
  if (n == 0) return;
  Dispatch::visit([&](auto a) {
    kernels::entmax15_table<decltype(a)>::loss_backward(x, n, target, dloss, dx);
  });
}

}  // namespace api

// entmax15(x, y, n [, opts]), entmax15_rows(x, y, rows, cols, ld [, opts]).
// entmax15_backward(y, dy, dx, n [, opts]), entmax15_backward_rows(...): the VJP from the forward
// output y: dx = s ⊙ dy - s·(<s, dy>/sum s) with s = sqrt(y) on the support (y > 0) and 0
// elsewhere (docs/entmax15.md). Masked and off-support entries get 0; sum(dx) = 0 up to rounding.
// A NaN in y (a NaN row) gives a NaN row. Any of y, dy, dx may be the same array.
// Error: |dx_i - dx*_i| <= 2^-20·s_i·(|dy_i| + sum_S s_j·|dy_j| / sum_S s_j) (float; 2^-49·(...)
// for double), dx* computed from the same y.
SMAX_FAMILY(entmax15, api::entmax15_family, api::header_only)

// The threshold and the loss, stamped for each dispatcher like the family's forms.
// entmax15_threshold(x, n): the threshold in the unshifted scale, y_i = [x_i/2 - tau]_+^2, and
// the number of entries with x_i/2 - tau > 0. tau = m/2 + tau_z rounded to T (tau_z, the
// threshold of (x - m)/2, is found in double): |tau - tau*| <= 2^-22 + ulp(tau*) (float;
// 2^-50 + ulp(tau*) for double). Special rows (n = 0, all masked, NaN, +inf) give {NaN, 0}.
// entmax15_loss(x, n, target): the entmax loss of a row with target class t (a Fenchel-Young
// loss): L = (1 - sum_j y_j^1.5)/0.75 + <y - e_t, x>, y = entmax15(x), evaluated on the shifted
// row and only over the support, so masked entries never form 0·(-inf). L >= 0, and L = 0 iff
// x_t >= 2 + max_{j != t} x_j. A masked target (x_t = -inf) gives +inf; a special row (all
// masked, NaN, +inf) and t >= n (a precondition violation) give NaN.
// Error: |L - L*| <= 2^-21·(1 + |L*|) (float; 2^-49·(1 + |L*|) for double).
// entmax15_loss_backward(x, n, target, dloss, dx): the gradient of dloss·L with respect to x:
// dx = dloss·(y - e_t). A masked target (L = +inf, no gradient), a special row or t >= n gives a
// NaN row. x == dx is allowed.
// Error: |dx_i - dx*_i| <= (1 + 2^-22)·2^-21·|dloss| + 2^-22·|dx*_i| + FLT_MIN (float;
// (1 + 2^-51)·2^-49·|dloss| + 2^-51·|dx*_i| + DBL_MIN for double), dx* = dloss·(y* - e_t) with y*
// the exact entmax15(x): y is the forward's output (within its 2^-21), then one rounding of
// y·dloss, or two of (y_t - 1)·dloss at the target; the last term: a product below FLT_MIN may
// be subnormal or flushed to 0 (docs/edge_cases.md, E8).
#define SMAX_ENTMAX15_EXTRA_FORMS(Dispatch)                                                  \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                       \
  inline entmax_threshold<T> entmax15_threshold(const T* x, std::size_t n) noexcept {        \
    return ::smax::api::entmax15_threshold<Dispatch>(x, n);                                  \
  }                                                                                          \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                       \
  inline T entmax15_loss(const T* x, std::size_t n, std::size_t target) noexcept {           \
    return ::smax::api::entmax15_loss<Dispatch>(x, n, target);                               \
  }                                                                                          \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                       \
  inline void entmax15_loss_backward(const T* x, std::size_t n, std::size_t target, T dloss, \
                                     T* dx) noexcept {                                       \
    ::smax::api::entmax15_loss_backward<Dispatch>(x, n, target, dloss, dx);                  \
  }

SMAX_ENTMAX15_EXTRA_FORMS(api::header_only)

SMAX_END_NAMESPACE
