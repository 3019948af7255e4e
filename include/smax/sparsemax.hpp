#pragma once
// sparsemax: y = argmin_{p in simplex} ||p - x||² = max(x - tau, 0), with tau such that
// sum(y) = 1 (Martins & Astudillo 2016). No parameters. See docs/sparsemax.md and
// docs/edge_cases.md.
//
// Evaluated on z = x - m (m the row maximum; tau - m lies in [-1, 0), so only entries within 1
// of the maximum can be in the support). The threshold is exact, not iterated to a tolerance:
// rows of at most 128 elements sort their candidates (entries within 1 of the maximum; more than
// 32 of them go to Michelot's exact method instead); longer rows bound tau from below by a few
// Michelot rounds on the max pass's lane maxima, compact the few entries above that bound in one
// SIMD pass, and finish with Michelot's exact method on them. tau is accumulated in double.
// Three passes over x (max, compaction, write); rows of 2 MiB or more fuse the first two block
// by block, so x is read from memory twice. No transcendental functions.
//
// Bound block
//   Types:         float, double.
//   Maximum error: |y_i - y*_i| <= 2^-22 (float) / 2^-50 (double), absolute, every algorithm and
//                  instruction set (tests/sparsemax_test.cpp, against a long-double sort-based
//                  reference). Outputs are exactly 0 off the support; an entry within that bound
//                  of tau may fall on either side. support_size equals the number of nonzero
//                  outputs.
//   Valid range:   any finite input up to ±FLT_MAX ([3e38, -3e38, 1e38] -> [1, 0, 0]); rows of
//                  any length (tested up to 10^6).
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, in no reduction or
//                  support. A row of only -inf, or any NaN or +inf, gives a NaN row. Ties share
//                  equally; an entry exactly at the threshold gives 0 and is not in the support
//                  ([1, 0] -> [1, 0]).
//   Memory:        rows longer than 128 use a per-thread scratch buffer of max(1024, 2n + 64)
//                  doubles at most (grown with realloc, kept until the thread exits). If it
//                  cannot be allocated, the row becomes NaN. Nothing throws.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "kernels/sparsemax.hpp"

namespace smax {

struct sparsemax_options {
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

// What sparsemax_tau returns (a type without code, so it lives in smax itself).
template <class T>
struct sparsemax_threshold {
  T tau;                     // unshifted: y_i = max(x_i - tau, 0)
  std::size_t support_size;  // #{i : y_i > 0}
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct sparsemax_family : family_defaults {
  using options = sparsemax_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool masks_rows = true;

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const&,
                                         algorithm_choice) noexcept {
    kernels::sparsemax_table<A>::forward(x, ldx, y, ldy, rows, cols,
                                         kernels::sparsemax_algorithm::automatic);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const&,
                                          grads*) noexcept {
    kernels::sparsemax_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols);
  }
};

// The threshold and the loss, on one dispatcher's kernels.
template <class Dispatch, class T>
inline sparsemax_threshold<T> sparsemax_tau(const T* x, std::size_t n) noexcept {
  SMAX_ASSERT(x != nullptr || n == 0);
  const T nan = static_cast<T>(__builtin_nan(""));
  if (n == 0) return {nan, 0};
  return Dispatch::visit([&](auto a) -> sparsemax_threshold<T> {
    const auto s = kernels::sparsemax_table<decltype(a)>::threshold(
        x, n, kernels::sparsemax_algorithm::automatic);
    if (s.kind != kernels::sparsemax_row_state<T>::ordinary) return {nan, 0};
    return {static_cast<T>(static_cast<double>(s.max) + s.tau), s.support_size};
  });
}

template <class Dispatch, class T>
inline T sparsemax_loss(const T* x, std::size_t n, std::size_t target) noexcept {
  SMAX_ASSERT(x != nullptr && target < n);
  return Dispatch::visit(
      [&](auto a) -> T { return kernels::sparsemax_table<decltype(a)>::loss(x, n, target); });
}

template <class Dispatch, class T>
inline void sparsemax_loss_backward(const T* x, std::size_t n, std::size_t target, T dloss,
                                    T* dx) noexcept {
  SMAX_ASSERT(x != nullptr && dx != nullptr && target < n);
  if (n == 0) return;
  Dispatch::visit([&](auto a) {
    kernels::sparsemax_table<decltype(a)>::loss_backward(x, n, target, dloss, dx);
  });
}

}  // namespace api

// sparsemax(x, y, n [, opts]), sparsemax_rows(x, y, rows, cols, ld [, opts]).
// sparsemax_backward(y, dy, dx, n [, opts]), sparsemax_backward_rows(...): dx_i = s_i·(dy_i - mean_{j in S} dy_j) with s = [y > 0] and S the support
// (docs/sparsemax.md), from the forward output y. Masked and off-support entries get 0; sum(dx) = 0.
// A NaN in y (a NaN row) gives a NaN row. Any of y, dy, dx may be the same array.
// Error: |dx_i - dx*_i| <= 2^-23·(|dy_i| + |mean| + mean_S |dy|) (float; 2^-52·(...) for double).
SMAX_FAMILY(sparsemax, api::sparsemax_family, api::header_only)

// The threshold and the loss, stamped for each dispatcher like the family's forms.
// The threshold of a row, unshifted: y_i = max(x_i - tau, 0), and the number of nonzero y_i.
// tau = m + tau_z rounded to T (tau_z, the threshold of x - m, is found in double), so when
// |m| is large, x_i - tau may differ from y_i by ulp(m)/2. Special rows (n = 0, all masked, NaN,
// +inf) give {NaN, 0}.
// sparsemax_loss(x, n, target): the sparsemax loss of a row with target class t: L = -x_t + ½·sum_{j in S}(x_j² - tau²) + ½
// = <y - e_t, x> + ½(1 - ||y||²), evaluated on z = x - m (it is shift invariant) and only over
// the support, so masked entries never form 0·(-inf). L >= 0, and L = 0 iff
// x_t >= 1 + max_{j != t} x_j. A masked target (x_t = -inf) gives +inf; a special row (all
// masked, NaN, +inf) and t >= n (a precondition violation) give NaN.
// Error: |L - L*| <= 2^-22·(1 + |L*|) (float; 2^-50·(1 + |L*|) for double).
// sparsemax_loss_backward(x, n, target, dloss, dx): the gradient of dloss·L with respect to x: dx = dloss·(y - e_t), y = sparsemax(x). A masked target
// (L = +inf, no gradient), a special row or t >= n gives a NaN row. x == dx is allowed.
#define SMAX_SPARSEMAX_EXTRA_FORMS(Dispatch)                                                  \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline sparsemax_threshold<T> sparsemax_tau(const T* x, std::size_t n) noexcept {           \
    return ::smax::api::sparsemax_tau<Dispatch>(x, n);                                        \
  }                                                                                           \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline T sparsemax_loss(const T* x, std::size_t n, std::size_t target) noexcept {           \
    return ::smax::api::sparsemax_loss<Dispatch>(x, n, target);                               \
  }                                                                                           \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline void sparsemax_loss_backward(const T* x, std::size_t n, std::size_t target, T dloss, \
                                      T* dx) noexcept {                                       \
    ::smax::api::sparsemax_loss_backward<Dispatch>(x, n, target, dloss, dx);                  \
  }

SMAX_SPARSEMAX_EXTRA_FORMS(api::header_only)

SMAX_END_NAMESPACE
