#pragma once
// Fused online softmax + top-K (Milakov & Gimelshein 2018, Alg. 4): the K largest entries of a
// row x, their indices, and their probabilities under softmax(x/T), from one read of x; the full
// softmax is never written.
//   values[j]  = softmax(x/T)[indices[j]],  j < K = min(k, number of entries other than -inf),
//   indices[j] = the j-th entry in the order (value descending, index ascending),
//   (values[j], indices[j]) = (0, -1) for K <= j < k.
// Ties: of equal entries the lower index comes first (an entry enters the K best only when it is
// strictly greater than the current K-th), so [2, 2, 1, 2] with k = 2 gives indices 0 and 1, and
// with k = n the indices are a stable descending argsort. See docs/softmax_topk.md.
//
// One pass: softmax's online normaliser (running maximum m and exp-sum d, per cache-resident
// block) with the selection on each block while it is in L1: whole registers compared with the
// current K-th value, the rare lanes above it inserted into a sorted list (K <= 8) or a heap
// (larger K) held in the caller's values/indices arrays. Only the K selected entries are
// exponentiated, exp((x - m)/T)/d, in double with the difference (x - m)/T carried to twice
// double's precision.
//
// Backward: dx = (1/T)·y ⊙ (g - <g, y>), with y = softmax(x/T) and g the dvalues scattered to
// indices (0 elsewhere; indices outside [0, n), such as the padding -1, are skipped). m and d are
// recomputed from x by the same online pass and the K probabilities from them, so the gradient
// is that of x's softmax whatever values holds: values is not read (it is in the signature for
// the API). Then one pass writes dx = -(<g, y>/T)·y, and the selected entries get
// y·(g - <g, y>)/T formed in long double. indices must be distinct (as the forward writes them).
//
// Bound block
//   Types:         float, double.
//   Maximum error: indices: exact (the selection compares entries, it computes nothing).
//                  values: softmax's bound: relative error <= 1e-6 (float) / 1e-14 (double) for
//                  every value >= FLT_MIN (DBL_MIN); T != 1 adds up to |x - m|/T·2^-22 (float) /
//                  |x - m|/T·1e-14 (double). Backward: |dx_i - dx*_i| <= (e_i + 2E)·y_i·
//                  (|g_i| + Σ_j |g_j·y_j|)/T, e_i = c + |x_i - m|/T·u (the u term for T != 1
//                  only), E the largest e_j over the selected j, c = 2^-19 (float) / 2^-45
//                  (double), u = 2^-22 / 1e-14, dx* the exact VJP. Checked by
//                  tests/softmax_topk_test.cpp against long double on every instruction set.
//   Valid range:   any finite x up to ±FLT_MAX ([3e38, -3e38, 1e38], k = 2 -> values [1, 0],
//                  indices [0, 2]), rows of any length (tested to 10^6), any k (k > n pads).
//                  Values and gradients below FLT_MIN (DBL_MIN) may be flushed to 0; a
//                  gradient whose exact value lies beyond T's range is ±inf (never NaN), one
//                  within it is within the bound however large <g, y>/T is.
//   Bad input:     k = 0 writes nothing. n = 0 writes k slots (0, -1) (the backward nothing).
//                  -inf entries are masked: never selected (a row with fewer than k other entries
//                  pads with (0, -1)); backward 0. A row of only -inf gives k slots (0, -1) and a
//                  zero gradient: there is no entry whose probability could be NaN. Any NaN or
//                  +inf gives values NaN and indices -1 in all k slots, and dx NaN. A temperature
//                  that is not finite and > 0 is a precondition violation (asserted in debug
//                  builds) and gives the NaN result (forward and backward).
//
// Aliasing: values, indices, dvalues and dx must not overlap x or each other.

#include <cstddef>
#include <cstdint>

#include "api/entry.hpp"
#include "kernels/softmax_topk.hpp"

namespace smax {

// The options follow softmax_options: the temperature T (finite and > 0; 1 by default).
struct softmax_topk_options {
  double temperature = 1.0;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

inline void check_topk_temperature(softmax_topk_options const& opts) noexcept {
  SMAX_ASSERT(opts.temperature > 0.0 && opts.temperature < __builtin_huge_val() &&
              "softmax_topk_options::temperature must be finite and > 0");
  (void)opts;
}

// The generic entries: x has leading dimension ldx, values/indices/dvalues are rows × k
// contiguous, dx has leading dimension lddx.
template <class Dispatch, class T>
inline void softmax_topk_forward(const T* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                                 std::size_t k, T* values, std::int64_t* indices,
                                 softmax_topk_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr || cols == 0) || rows == 0 || k == 0);
  SMAX_ASSERT((values != nullptr && indices != nullptr) || rows == 0 || k == 0);
  check_topk_temperature(opts);
  if (rows == 0 || k == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::softmax_topk_table<decltype(a)>::forward(x, ldx, rows, cols, k, values, indices,
                                                      static_cast<T>(opts.temperature));
  });
}

template <class Dispatch, class T>
inline void softmax_topk_backward(const T* x, std::size_t ldx, std::size_t rows,
                                  std::size_t cols, std::size_t k, const std::int64_t* indices,
                                  const T* dvalues, T* dx, std::size_t lddx,
                                  softmax_topk_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((indices != nullptr && dvalues != nullptr) || rows == 0 || cols == 0 || k == 0);
  SMAX_ASSERT(dx != x || rows == 0 || cols == 0);
  check_topk_temperature(opts);
  if (rows == 0 || cols == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::softmax_topk_table<decltype(a)>::backward(x, ldx, rows, cols, k, indices, dvalues,
                                                       dx, lddx, static_cast<T>(opts.temperature));
  });
}

}  // namespace api

// The public forms, stamped for each dispatcher (header-only here, smax::runtime from the list in
// families.hpp). The family returns K values and indices, not a row y, so SMAX_FAMILY's
// (x, y, n [, opts]) forms do not fit; it stamps its own:
//   softmax_topk(x, n, k, values, indices [, opts])
//   softmax_topk_backward(x, n, k, values, indices, dvalues, dx [, opts])
//   softmax_topk_rows(x, rows, cols, ld, k, values, indices [, opts])   values, indices: rows × k
//   softmax_topk_backward_rows(x, rows, cols, ld, k, values, indices, dvalues, dx [, opts])
//                                                                       dx: leading dimension ld
#define SMAX_SOFTMAX_TOPK_FORMS(Dispatch)                                                        \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void softmax_topk(const T* x, std::size_t n, std::size_t k, T* values,                  \
                           std::int64_t* indices,                                                \
                           ::smax::softmax_topk_options const& opts = {}) noexcept {             \
    ::smax::api::softmax_topk_forward<Dispatch>(x, n, 1, n, k, values, indices, opts);           \
  }                                                                                              \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void softmax_topk_rows(const T* x, std::size_t rows, std::size_t cols, std::size_t ld,  \
                                std::size_t k, T* values, std::int64_t* indices,                 \
                                ::smax::softmax_topk_options const& opts = {}) noexcept {        \
    ::smax::api::softmax_topk_forward<Dispatch>(x, ld, rows, cols, k, values, indices, opts);    \
  }                                                                                              \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void softmax_topk_backward(const T* x, std::size_t n, std::size_t k, const T* values,   \
                                    const std::int64_t* indices, const T* dvalues, T* dx,        \
                                    ::smax::softmax_topk_options const& opts = {}) noexcept {    \
    (void)values;                                                                                \
    ::smax::api::softmax_topk_backward<Dispatch>(x, n, 1, n, k, indices, dvalues, dx, n, opts);  \
  }                                                                                              \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void softmax_topk_backward_rows(                                                        \
      const T* x, std::size_t rows, std::size_t cols, std::size_t ld, std::size_t k,             \
      const T* values, const std::int64_t* indices, const T* dvalues, T* dx,                     \
      ::smax::softmax_topk_options const& opts = {}) noexcept {                                  \
    (void)values;                                                                                \
    ::smax::api::softmax_topk_backward<Dispatch>(x, ld, rows, cols, k, indices, dvalues, dx, ld, \
                                                 opts);                                          \
  }

SMAX_SOFTMAX_TOPK_FORMS(api::header_only)

// No Eigen forms yet: the outputs are rows × k (values, and std::int64_t indices, which
// eigen.hpp's float/double argument checks do not take). eigen.hpp stamps this empty macro.
#define SMAX_SOFTMAX_TOPK_EIGEN_FORMS

SMAX_END_NAMESPACE
