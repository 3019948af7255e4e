#pragma once
// α-entmax by bisection (Peters, Niculae & Martins 2019): y = argmax_{p in simplex} <p, x> +
// H_α(p), H_α the Tsallis entropy, which is y_i = [(α - 1)·x_i - tau]_+^(1/(α - 1)) with tau
// such that sum(y) = 1. α = 2 is sparsemax, α -> 1 tends to softmax; α > 1 gives sparse outputs.
// See docs/entmax_bisect.md and docs/edge_cases.md.
//
// Evaluated on z = (α - 1)·(x - m) (m the row maximum), whose threshold t lies in
// [-1, -k^(1-α)], k the number of entries with z > -1: only those can be in the support, so they
// are compacted in one SIMD pass and the bisection runs on them alone, dropping those that fall
// below the bracket as it closes. The bisection stops when the bracket cannot be split in T (or
// after opts.n_iter steps); for α = 2 and α = 1.5 it stops as soon as no candidate is left inside
// the bracket (the support is known) and t is then computed in closed form. The output is the
// last iterate renormalised by its sum. No exp or log for α = 2, 1.5 (u², u) and 3 (sqrt(u));
// other α take exp(log(u)/(α - 1)) with smax's vector exp and log.
//
// Bound block
//   Types:         float, double.
//   Maximum error: with opts.n_iter = 0 (the default), let u*_i = (α - 1)(x_i - m) - t* in exact
//                  arithmetic (t* the exact threshold), p = 1/(α - 1), η = max(1, α - 1)·2^-19
//                  (float) / 2^-48 (double), D_i = max_{|e| <= η} |[u*_i + e]_+^p - [u*_i]_+^p|
//                  (the effect of an error η in one (α - 1)·x_i - tau) and D = sum_i D_i. When
//                  D < 1:
//                    |y_i - y*_i| <= (D_i + y*_i·D)/(1 - D) + 2^-19·y*_i + FLT_MIN
//                  (2^-48·y*_i + DBL_MIN for double), and |sum(y) - 1| <= 2^-19 (2^-48).
//                  D >= 1 happens: D is at least about η/(α - 1) (float α - 1 below about 2^-19,
//                  double 2^-48; an error η in u moves [u]^p by p·η relatively), and for α > 2
//                  with a large support (p < 1: many u_i near 0). There no per-entry bound is
//                  stated: float α = 1 + 1e-9 gives uniform rows (|y - y*| up to 0.86 measured;
//                  1 + (x_i - m)·1e-9 is 1 in float). What holds for every α: outputs in [0, 1]
//                  and the threshold bound below; |sum(y) - 1| <= 2^-19 (2^-48) without FMA
//                  (see the known defect in docs/entmax_bisect.md).
//                  For α = 1.5 that is about 2η·sqrt(y*_i) + η·y*_i·sum_j 2·sqrt(y*_j): a few
//                  units of 2^-19 at most. Outputs below FLT_MIN may be 0 (docs/edge_cases.md).
//                  Checked by tests/entmax_bisect_test.cpp against a long-double bisection (and
//                  the exact sort-based 1.5-entmax) for α in {1.01, 1.25, 1.5, 2, 3} on every
//                  instruction set. α = 2 agrees with smax::sparsemax within this bound plus
//                  sparsemax's; for α = 1.01 and rows whose unmasked entries span at most 4,
//                  |y_i - softmax(x)_i| <= 0.02 (the definitions differ by that much).
//   Valid range:   any finite x up to ±FLT_MAX ([3e38, -3e38, 1e38] -> [1, 0, 0]); α finite with
//                  fl(α - 1) a normal number of T; rows of any length (tested up to 10^6).
//   Cost:          three passes over x (max, compaction, write) and the bisection on the
//                  candidates only; each step halves the bracket: about 25 steps (float) or 55
//                  (double) for a threshold near -0.5, fewer for α = 2 and 1.5.
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, in no reduction or
//                  support. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or
//                  +inf gives a NaN row. n = 1 gives [1]; ties share equally. α <= 1, α NaN or
//                  infinite (a precondition: asserted in debug builds) gives a NaN row in release
//                  builds (threshold {NaN, 0}, backward NaN).
//   Memory:        rows longer than 256 use a per-thread scratch array of n + width elements
//                  (grown with realloc, kept until the thread exits). If it cannot be allocated,
//                  the row becomes NaN. Nothing throws.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>

#include "api/entry.hpp"
#include "entmax_threshold.hpp"
#include "kernels/entmax_bisect.hpp"

namespace smax {

struct entmax_bisect_options {
  // α > 1: 2 is sparsemax, 1.5 the usual sparse choice, α -> 1 tends to softmax.
  double alpha = 1.5;
  // Bisection steps at most; 0: until the bracket cannot be split in T (the bound block holds
  // for 0 only).
  unsigned n_iter = 0;
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct entmax_bisect_family : family_defaults {
  using options = entmax_bisect_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool masks_rows = true;

  static void check(options const& opts) noexcept {
    SMAX_ASSERT(opts.alpha > 1.0 && opts.alpha < __builtin_huge_val() &&
                "entmax_bisect_options::alpha must be finite and > 1");
    (void)opts;
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    kernels::entmax_bisect_table<A>::forward(x, ldx, y, ldy, rows, cols, opts.alpha, opts.n_iter);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const& opts,
                                          grads*) noexcept {
    kernels::entmax_bisect_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols, opts.alpha);
  }
};

// The threshold, on one dispatcher's kernels: tau = (α - 1)·m + t (t the threshold of
// (α - 1)(x - m)), summed in double and rounded to T.
template <class Dispatch, class T>
inline entmax_threshold<T> entmax_bisect_threshold(const T* x, std::size_t n,
                                                   entmax_bisect_options const& opts) noexcept {
  SMAX_ASSERT(x != nullptr || n == 0);
  entmax_bisect_family::check(opts);
  const T nan = static_cast<T>(__builtin_nan(""));
  if (n == 0) return {nan, 0};
  return Dispatch::visit([&](auto a) -> entmax_threshold<T> {
    const auto s =
        kernels::entmax_bisect_table<decltype(a)>::threshold(x, n, opts.alpha, opts.n_iter);
    if (s.kind != kernels::entmax_bisect_row_state<T>::ordinary) return {nan, 0};
    return {static_cast<T>((opts.alpha - 1.0) * static_cast<double>(s.max) +
                           static_cast<double>(s.tau)),
            s.support_size};
  });
}

}  // namespace api

// entmax_bisect(x, y, n [, opts]), entmax_bisect_rows(x, y, rows, cols, ld [, opts]).
// entmax_bisect_backward(y, dy, dx, n [, opts]), entmax_bisect_backward_rows(...): the VJP from
// the forward output y: s_i = y_i^(2-α) where y_i > 0 (0 elsewhere), dx = s ⊙ (dy - c),
// c = <s, dy>/sum(s) (docs/entmax_bisect.md). Masked and off-support entries get 0; sum(dx) = 0.
// A NaN in y (a NaN row) gives a NaN row; a zero row (zero_masked_rows) gives dx = 0. Any of y,
// dy, dx may be the same array.
// Error: with c* = <s*, dy>/sum(s*) from the same y in exact arithmetic and
// ρ = 2^-22·(1 + 2·|2 - α|·max_{y_j > 0} |ln y_j|) (float; 2^-51·(...) for double),
// |dx_i - dx*_i| <= 4ρ·s*_i·(|dy_i| + |c*| + sum_j s*_j·|dy_j| / sum_j s*_j), for outputs
// y_j >= FLT_MIN (DBL_MIN).
// Range: the weights s_j = y_j^(2-α) (large for α > 2 and small y_j), their sum and the products
// s_j·dy_j and their sum within T's range, as the row's sums are formed in T: beyond it (an s_j
// above the largest finite T, or a product s_j·dy_j that overflows, as with α = 7.51,
// y_j = 1e-6 and dy_j = 1e6 in float) dx may be NaN or ±inf.
SMAX_FAMILY(entmax_bisect, api::entmax_bisect_family, api::header_only)

// entmax_bisect_threshold(x, n [, opts]) -> entmax_threshold<T>{tau, support_size}: the threshold
// of the unshifted row, y_i = [(α - 1)·x_i - tau]_+^(1/(α - 1)) up to the renormalisation by the
// sum (within the bound above), and support_size = #{i : (α - 1)(x_i - m) > t}, the number of
// outputs that are nonzero before underflow. Error, for every α in the domain (D < 1 or not):
// |tau - tau*| <= η + ulp(tau*) (η as in the bound block; tau* = (α - 1)·m + t* exact): the
// bisection leaves t within η of t*, and (α - 1)·m + t is formed in double and rounded once to T.
// tau = (α - 1)·m + t rounded to T, so it may be ±inf
// when (α - 1)·m is beyond T's range, and (α - 1)·x_i - tau may differ from the kernel's
// (α - 1)(x_i - m) - t by ulp((α - 1)·m). Special rows (n = 0, all masked, NaN, +inf, α out of
// its domain) give {NaN, 0}.
#define SMAX_ENTMAX_BISECT_EXTRA_FORMS(Dispatch)                                            \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                      \
  inline entmax_threshold<T> entmax_bisect_threshold(                                       \
      const T* x, std::size_t n, entmax_bisect_options const& opts = {}) noexcept {         \
    return ::smax::api::entmax_bisect_threshold<Dispatch>(x, n, opts);                      \
  }

SMAX_ENTMAX_BISECT_EXTRA_FORMS(api::header_only)

SMAX_END_NAMESPACE
