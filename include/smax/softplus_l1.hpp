#pragma once
// Softplus + l1 with the length scale (LSSA; Gao & Spratling 2025): y_i = softplus(λ·x_i) /
// Σ_j softplus(λ·x_j), softplus(u) = log(1 + e^u), λ = ln(n)/ln(base), n the number of keys the
// row sees (the row length by default). Softmax's exponential replaced by softplus, whose linear
// growth keeps the largest entries from swamping the rest, and λ growing with the length so the
// distribution does not flatten as rows get longer. See docs/softplus_l1.md.
//
// Evaluated relative to the row's largest term (softplus is increasing): max(u, 0) +
// log1p(e^-|u|), scaled by a power of two where λ·x could overflow, or, for rows whose largest u
// is below 1, log1p(a·e^u_m)/e^u_m with a = e^(λ·(x - m)), which keeps rows of very negative u
// (softplus(u) = e^u, far below the smallest normal number) exact. One exponential and one
// log1p an element; the sum blocked in double. λ is computed in double and rounded once to T.
//
// Bound block
//   Types:         float, double.
//   Maximum error: relative error <= 1e-6 + 2^-21·(g_i + Σ_j y_j·g_j) (float) / 1e-14 +
//                  2^-50·(g_i + Σ_j y_j·g_j) (double) for every output >= FLT_MIN (DBL_MIN), with
//                  g = 1 + max(0, -λ·x): softplus(u) ~ e^u for u << 0 carries the rounding of
//                  λ·x (or λ·(x - m)) as softmax does, and the rounding of λ to T moves every
//                  such term (where softplus(u) ~ u, λ cancels). Backward: |dx_i - dx*_i| <=
//                  16ε·λ·r_i·y_i·(|dy_i| + Σ_j y_j·|dy_j|) + 2·(1 + λ)·d, r = σ(λx)/softplus(λx)
//                  <= 1, ε = 2^-23 (2^-52), d the smallest subnormal number (products that fall
//                  below the normal range), dx* the VJP at the y passed in. Checked by
//                  tests/softplus_l1_test.cpp against long double on every instruction set.
//   Valid range:   any finite x up to ±FLT_MAX ([3e38, 1e38] at λ = 1 -> [0.75, 0.25]), any n
//                  and base > 1 (λ up to 2^64); outputs below FLT_MIN may be flushed to 0. The
//                  backward pass needs |dy_i - <dy, y>| within T's range (λ·x and λ·dy may
//                  overflow: they are not formed). Not shift invariant (unlike softmax).
//   Bad input:     n = 0 does nothing. -inf entries are masked (softplus(-inf) = 0): output 0,
//                  backward 0. A row of only -inf gives NaN (0 with zero_masked_rows); any NaN or
//                  +inf gives a NaN row. n = 1 (λ = 0) gives [1], and λ = 0 the uniform
//                  distribution over the unmasked entries (backward 0). base must be finite and
//                  > 1 (asserted in debug builds); any other base gives NaN rows (NaN dx).
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>
#include <limits>

#include "api/entry.hpp"
#include "kernels/softplus_l1.hpp"

namespace smax {

struct softplus_l1_options {
  // The base of λ = ln(n)/ln(base) (λ = 1 at n = base; the head dimension in the paper's
  // setting). Required: it has no usable default, and one left unset (NaN) gives NaN rows.
  double base = std::numeric_limits<double>::quiet_NaN();
  // The number of keys n the row sees; 0: the row length. Under causal masking pass i + 1 for
  // the query at 0-based position i and call per row; a _rows call uses one λ for every row.
  std::size_t n_keys = 0;
  // A row whose entries are all -inf gives NaN by default; with this set it gives 0.
  bool zero_masked_rows = false;
};

}  // namespace smax

SMAX_BEGIN_NAMESPACE
namespace api {

struct softplus_l1_family : family_defaults {
  using options = softplus_l1_options;
  static constexpr backward_shape backward_form = backward_shape::from_input;

  // Options for code that calls every family generically (the family-matrix test): base 64.
  static options sample_options() noexcept {
    options opts;
    opts.base = 64;
    return opts;
  }
  static void check(options const& opts) noexcept {
    SMAX_ASSERT(opts.base > 1.0 && opts.base < __builtin_huge_val() &&
                "softplus_l1_options::base must be finite and > 1");
    (void)opts;
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice) noexcept {
    using table = kernels::softplus_l1_table<A>;
    const T lambda = table::lambda(opts.base, keys(opts, cols), static_cast<T*>(nullptr));
    table::forward(x, ldx, y, ldy, rows, cols, lambda, opts.zero_masked_rows);
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T* x, std::size_t ldx, const T* y,
                                          std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                          std::size_t lddx, std::size_t rows, std::size_t cols,
                                          options const& opts, grads*) noexcept {
    using table = kernels::softplus_l1_table<A>;
    const T lambda = table::lambda(opts.base, keys(opts, cols), static_cast<T*>(nullptr));
    table::backward(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, lambda);
  }
  static double keys(options const& opts, std::size_t cols) noexcept {
    return static_cast<double>(opts.n_keys ? opts.n_keys : cols);
  }
};

}  // namespace api

// softplus_l1(x, y, n, opts), softplus_l1_rows(x, y, rows, cols, ld, opts): y = softplus(λ·x) /
// Σ softplus(λ·x), λ = ln(opts.n_keys or n)/ln(opts.base); every row of a _rows call uses the
// same λ. softplus_l1_backward(x, y, dy, dx, n, opts), softplus_l1_backward_rows(...): dx =
// λ·σ(λx)·(dy - <dy, y>)/Σ softplus(λx) for y = softplus_l1(x). opts.base is required.
SMAX_FAMILY(softplus_l1, api::softplus_l1_family, api::header_only)

SMAX_END_NAMESPACE
