#pragma once
// Fused cross-entropy over class logits (PyTorch's F.cross_entropy(reduction='none') with
// integer class targets, ignore_index and label_smoothing): per row r of x (C = cols logits),
// t = targets[r], ε = label_smoothing,
//   loss_r = (1 - ε)·(lse(x) - x_t) + ε·(lse(x) - mean(x)),       lse(x) = log Σ_j exp(x_j),
//   dx_r   = (softmax(x) - q)·dloss_r,      q = (1 - ε)·onehot(t) + ε/C,
// the reduction over rows left to the caller. See docs/cross_entropy.md.
//
// Two reads of x per row and no rows × cols buffer: softmax's online pass (maximum m and
// d = Σ exp(x - m), per cache-resident block) gives the loss as log d + (1 - ε)·(m - x_t) +
// ε·(m - mean(x)), three terms >= 0 formed in double (long double for double rows), so the loss
// has no cancellation; the backward's one more pass writes exp(x - m)/d·dloss - dloss·ε/C, and
// the target's entry (p_t - 1 + ε - ε/C)·dloss is formed in double from p_t (no rounded p_t·g - g).
//
//   cross_entropy(x, targets, rows, cols, ld, losses [, opts])            one read of x
//   cross_entropy_backward(x, targets, dlosses, dx, rows, cols, ld [, opts])
//   cross_entropy_with_grad(x, targets, rows, cols, ld, losses, dx [, opts])   dloss = 1
// x and dx have leading dimension ld; targets, losses and dlosses hold rows entries. dx may be x
// (in place). with_grad equals cross_entropy + cross_entropy_backward with every dloss 1, bit for
// bit (the same passes).
//
// Bound block
//   Types:         float, double (losses/dlosses of x's type, targets std::int64_t).
//   Maximum error: loss: |L - L*| <= a + b·L*, a = 2^-21 (float) / 2^-50 (double), b = 2^-19
//                  (float) / 2^-48 (double), L* the exact loss of the rounded inputs (L* >= 0):
//                  a is log d's error, b the final rounding plus, with smoothing, the T lane sums
//                  of x - max (about 19 roundings of terms of one sign).
//                  dx: |dx_i - dx*_i| <= c·|g|·(p*_i + q_i) + |g|·FLT_MIN (DBL_MIN), c = 2^-20
//                  (float) / 2^-47 (double), p* = softmax(x), g the row's dloss: relative to the
//                  two terms, not to their difference (p_t near 1 gives dx_t near 0 with the
//                  absolute error of p_t). Checked by tests/cross_entropy_test.cpp against long
//                  double on every instruction set.
//   Valid range:   any finite logits up to ±FLT_MAX (DBL_MAX), rows of any length (tested to
//                  128000 against the reference; 256000 in the benchmark's cross-check). A loss beyond the largest T is +inf (its rounding). Gradients below
//                  the smallest normal number may be flushed to 0.
//   Bad input:     t == ignore_index: loss 0 and a zero dx row, whatever the row and its dloss
//                  hold. Otherwise t outside [0, C) is a precondition violation (asserted in debug
//                  builds) and gives loss NaN and a NaN dx row (x is not read at t). A row with a
//                  NaN or a +inf, or with every entry -inf, gives loss NaN and a NaN dx row (that
//                  row only). x_t = -inf with other entries finite gives loss +inf and a finite dx
//                  (dx_t = -(1 - ε + ε/C)·g), as PyTorch; with ε > 0 any -inf entry makes the loss
//                  +inf (mean(x) = -inf) and dx stays finite. A dloss that is NaN or ±inf gives a
//                  NaN dx row. label_smoothing outside [0, 1] or NaN is a precondition violation
//                  (asserted) and gives NaN losses and NaN dx rows for every row. cols = 0: every
//                  row that is not ignored has an invalid target.
//
// Aliasing: dx may be x; losses, dlosses and targets must not overlap x, dx or each other.

#include <cstddef>
#include <cstdint>

#include "api/entry.hpp"
#include "kernels/cross_entropy.hpp"

namespace smax {

// As PyTorch's F.cross_entropy: a row whose target equals ignore_index is ignored (loss 0,
// gradient 0); label_smoothing ε in [0, 1] mixes the one-hot target with the uniform 1/C. In
// plain `smax` (one type for every instruction set).
struct cross_entropy_options {
  std::int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

// Every target of a row that is not ignored is a class index (checked in debug builds only: the
// loop reads all targets).
inline bool cross_entropy_targets_valid(const std::int64_t* targets, std::size_t rows,
                                        std::size_t cols, std::int64_t ignore_index) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    if (targets[r] != ignore_index &&
        (targets[r] < 0 || static_cast<std::uint64_t>(targets[r]) >= cols))
      return false;
  return true;
}

inline void check_cross_entropy(const std::int64_t* targets, std::size_t rows, std::size_t cols,
                                std::size_t ld, cross_entropy_options const& opts) noexcept {
  SMAX_ASSERT(opts.label_smoothing >= 0.0 && opts.label_smoothing <= 1.0 &&
              "cross_entropy_options::label_smoothing must be in [0, 1]");
  SMAX_ASSERT(ld >= cols || rows <= 1);
  SMAX_ASSERT(targets != nullptr || rows == 0);
  SMAX_ASSERT((rows == 0 || cross_entropy_targets_valid(targets, rows, cols, opts.ignore_index)) &&
              "cross_entropy: a target outside [0, cols) that is not ignore_index");
  (void)targets, (void)rows, (void)cols, (void)ld, (void)opts;
}

// The generic entries: x and dx have leading dimension ld; targets, losses and dlosses rows
// entries. backward's dlosses == nullptr means every dloss is 1; losses == nullptr: not written.
template <class Dispatch, class T>
inline void cross_entropy_forward(const T* x, std::size_t ld, std::size_t rows, std::size_t cols,
                                  const std::int64_t* targets, T* losses,
                                  cross_entropy_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr || cols == 0) || rows == 0);
  SMAX_ASSERT(losses != nullptr || rows == 0);
  check_cross_entropy(targets, rows, cols, ld, opts);
  if (rows == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::cross_entropy_table<decltype(a)>::forward(x, ld, rows, cols, targets, losses,
                                                       opts.ignore_index, opts.label_smoothing);
  });
}

// dx (and losses, when not null) from the upstream dlosses (nullptr: every dloss 1).
template <class Dispatch, class T>
inline void cross_entropy_gradient(const T* x, std::size_t ld, std::size_t rows,
                                   std::size_t cols, const std::int64_t* targets,
                                   const T* dlosses, T* losses, T* dx,
                                   cross_entropy_options const& opts) noexcept {
  SMAX_ASSERT(((x != nullptr && dx != nullptr) || cols == 0) || rows == 0);
  check_cross_entropy(targets, rows, cols, ld, opts);
  if (rows == 0) return;
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    kernels::cross_entropy_table<decltype(a)>::backward(x, ld, rows, cols, targets, dlosses,
                                                        losses, dx, opts.ignore_index,
                                                        opts.label_smoothing);
  });
}

template <class Dispatch, class T>
inline void cross_entropy_backward(const T* x, std::size_t ld, std::size_t rows,
                                   std::size_t cols, const std::int64_t* targets,
                                   const T* dlosses, T* dx,
                                   cross_entropy_options const& opts) noexcept {
  SMAX_ASSERT(dlosses != nullptr || rows == 0);
  cross_entropy_gradient<Dispatch>(x, ld, rows, cols, targets, dlosses, static_cast<T*>(nullptr),
                                   dx, opts);
}

template <class Dispatch, class T>
inline void cross_entropy_with_grad(const T* x, std::size_t ld, std::size_t rows,
                                    std::size_t cols, const std::int64_t* targets, T* losses,
                                    T* dx, cross_entropy_options const& opts) noexcept {
  SMAX_ASSERT(losses != nullptr || rows == 0);
  cross_entropy_gradient<Dispatch>(x, ld, rows, cols, targets, static_cast<const T*>(nullptr),
                                   losses, dx, opts);
}

}  // namespace api

// The public forms, stamped for each dispatcher (header-only here, smax::runtime from the list in
// families.hpp). The family maps a rows × cols matrix and rows targets to rows losses, so
// SMAX_FAMILY's (x, y, n [, opts]) forms do not fit; it stamps its own (signatures above).
#define SMAX_CROSS_ENTROPY_FORMS(Dispatch)                                                       \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void cross_entropy(const T* x, const std::int64_t* targets, std::size_t rows,           \
                            std::size_t cols, std::size_t ld, T* losses,                         \
                            ::smax::cross_entropy_options const& opts = {}) noexcept {           \
    ::smax::api::cross_entropy_forward<Dispatch>(x, ld, rows, cols, targets, losses, opts);      \
  }                                                                                              \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void cross_entropy_backward(const T* x, const std::int64_t* targets, const T* dlosses,  \
                                     T* dx, std::size_t rows, std::size_t cols, std::size_t ld,  \
                                     ::smax::cross_entropy_options const& opts = {}) noexcept {  \
    ::smax::api::cross_entropy_backward<Dispatch>(x, ld, rows, cols, targets, dlosses, dx,      \
                                                  opts);                                         \
  }                                                                                              \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                           \
  inline void cross_entropy_with_grad(const T* x, const std::int64_t* targets, std::size_t rows, \
                                      std::size_t cols, std::size_t ld, T* losses, T* dx,        \
                                      ::smax::cross_entropy_options const& opts = {}) noexcept { \
    ::smax::api::cross_entropy_with_grad<Dispatch>(x, ld, rows, cols, targets, losses, dx,      \
                                                   opts);                                        \
  }

SMAX_CROSS_ENTROPY_FORMS(api::header_only)

// No Eigen forms yet: the targets are std::int64_t and the losses a vector beside the rows × cols
// logits, which eigen.hpp's argument checks do not take. eigen.hpp stamps this empty macro.
#define SMAX_CROSS_ENTROPY_EIGEN_FORMS

SMAX_END_NAMESPACE
