#pragma once
// exp on xsimd batches for the softmax domain (arguments <= 0): Cody-Waite range reduction,
// magic-bias rounding folded into one FMA, a minimax polynomial and one select for underflow.

#include "../detail/xsimd_compat.hpp"

namespace smax {
namespace primitives {

template <class T>
struct exp_constants;

template <>
struct exp_constants<float> {
  static constexpr float largest = 3.40282346638528859812e+38f;  // FLT_MAX
  static constexpr float log2e = 1.44269504088896341f;
  // 1.5·2^23 + 127: after fma(t, log2e, magic) the low mantissa bits hold k + 127, so shifting the
  // bits left by 23 gives 2^k directly, and subtracting magic gives k as a float.
  static constexpr float magic = 12583039.0f;
  static constexpr int exponent_shift = 23;
  // ln 2 split so that k·ln2_hi is exact for |k| < 2^14 even without FMA (10 significant bits).
  static constexpr float ln2_hi = 0.693359375f;
  static constexpr float ln2_lo = -2.12194440e-4f;
  // Below ln(FLT_MIN) the result would be subnormal and 2^k is not representable by the shift:
  // return exactly 0 (E8), which also maps -inf (a masked entry) to 0.
  static constexpr float underflow_cutoff = -87.33654475f;
  // exp(r) = 1 + r + r^2·q(r) on [-ln2/2, ln2/2]; relative-error Remez fit of q, degree 4.
  static constexpr float q[] = {0.4999999404f, 0.1666652113f, 0.04166838899f, 0.008368710056f,
                                0.001381461392f};
};

template <>
struct exp_constants<double> {
  static constexpr double largest = 1.79769313486231570815e+308;  // DBL_MAX
  static constexpr double log2e = 1.4426950408889634;
  static constexpr double magic = 6755399441056767.0;  // 1.5·2^52 + 1023
  static constexpr int exponent_shift = 52;
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 21 trailing zero bits
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double underflow_cutoff = -708.39641853226408;  // ln(DBL_MIN)
  // Taylor coefficients 1/2! .. 1/13!: the truncation error on |r| <= ln2/2 is below 5e-18.
  static constexpr double q[] = {1.0 / 2,        1.0 / 6,         1.0 / 24,
                                 1.0 / 120,      1.0 / 720,       1.0 / 5040,
                                 1.0 / 40320,    1.0 / 362880,    1.0 / 3628800,
                                 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
};

// exp(r_hi + r_lo) - 1 for a reduced argument |r_hi + r_lo| <= ln2/2, where r_hi is exact and
// r_lo a small correction: the linear term adds r_hi last, so rounding the reduced argument costs
// nothing (that rounding alone is worth 0.3 ulp in the result).
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> expm1_reduced(xsimd::batch<T, A> const& r_hi,
                                                    xsimd::batch<T, A> const& r_lo) noexcept {
  using batch = xsimd::batch<T, A>;
  using c = exp_constants<T>;
  constexpr std::size_t degree = sizeof(c::q) / sizeof(c::q[0]);
  const batch r = r_hi + r_lo;
  batch q(c::q[degree - 1]);
  for (std::size_t i = degree - 1; i-- > 0;) q = detail::mul_add(q, r, batch(c::q[i]));
  return detail::mul_add(q, r * r, r_lo) + r_hi;
}

// exp(r) = 1 + r·(1 + r·q(r)) for a reduced argument |r| <= ln2/2, by Horner's rule to the end:
// two operations fewer than 1 + expm1_reduced, for the AVX-512 path, whose vscalef then scales
// exactly. Measured on every float of [-87.33, 0]: 0.882 ulp at most (0.874 through
// expm1_reduced).
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> exp_reduced(xsimd::batch<T, A> const& r) noexcept {
  using batch = xsimd::batch<T, A>;
  using c = exp_constants<T>;
  constexpr std::size_t degree = sizeof(c::q) / sizeof(c::q[0]);
  batch q(c::q[degree - 1]);
  for (std::size_t i = degree - 1; i-- > 0;) q = detail::mul_add(q, r, batch(c::q[i]));
  q = detail::mul_add(q, r, batch(T(1)));
  return detail::mul_add(q, r, batch(T(1)));
}

#if defined(SMAX_X86_REDUCTIONS)
// AVX-512: e·2^k, exactly (vscalef; the result is normal wherever t >= cutoff), and 0 where
// t < cutoff (the exp's underflow). The zero-masking form is the underflow select, and its
// unordered compare keeps NaN lanes.
template <bool Underflow, class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> scale_avx512(xsimd::batch<T, A> const& t,
                                                   xsimd::batch<T, A> const& cutoff,
                                                   xsimd::batch<T, A> const& e,
                                                   xsimd::batch<T, A> const& k) noexcept {
  if constexpr (!Underflow) {
    if constexpr (sizeof(T) == 4)
      return _mm512_scalef_ps(e, k);
    else
      return _mm512_scalef_pd(e, k);
  } else if constexpr (sizeof(T) == 4) {
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(t, cutoff, _CMP_NLT_UQ), e, k);
  } else {
    return _mm512_maskz_scalef_pd(_mm512_cmp_pd_mask(t, cutoff, _CMP_NLT_UQ), e, k);
  }
}
#endif

// exp(t + t_err) for t <= 0 with |t_err| <= ulp(t) (the rounding error of the caller's x - max,
// which would otherwise cost up to |t|·2^-24 of relative accuracy).
//
// float: max error <= 1 ulp for t in [-87.33, 0] (checked on every float by
// tests/primitives/exp_test.cpp on every compiled instruction set); 0 for t < ln(FLT_MIN) and
// for t = -inf; NaN stays NaN. double: <= 2 ulp on [-708.39, 0]. Also correct for
// 0 < t < 88.3 (float) / 709 (double), which the softmax kernels never need.
//
// Underflow = false promises t >= ln(FLT_MIN) (or DBL_MIN) in every lane, NaN allowed: the
// underflow select is skipped (one instruction on AVX-512, two elsewhere).
template <bool Underflow = true, class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> exp_nonpositive(xsimd::batch<T, A> const& t,
                                                      xsimd::batch<T, A> const& t_err) noexcept {
  using batch = xsimd::batch<T, A>;
  using integer = detail::integer_of_t<T>;
  using c = exp_constants<T>;
  const batch biased = detail::opaque(detail::mul_add(t, batch(c::log2e), batch(c::magic)));
  const batch k = detail::opaque(biased - batch(c::magic));  // not distributed over k·ln2
  // t - k·ln2_hi is exact (k·ln2_hi has few bits and the difference is smaller than t).
  const batch r_hi = detail::mul_add(k, batch(-c::ln2_hi), t);
  const batch r_lo = detail::mul_add(k, batch(-c::ln2_lo), t_err);
#if defined(SMAX_X86_REDUCTIONS)
  if constexpr (sizeof(batch) == 64)
    return scale_avx512<Underflow>(t, batch(c::underflow_cutoff), exp_reduced(r_hi + r_lo), k);
#endif
  const batch p = expm1_reduced(r_hi, r_lo);
  const batch scale =
      detail::bitcast<T>(detail::bitcast<integer>(biased) << c::exponent_shift);  // 2^k
  // scale·(1 + p) with one rounding: |p| < 0.5 so scale·p is exact inside the FMA.
  const batch f = detail::mul_add(scale, p, scale);
  if constexpr (!Underflow) return f;
  return xsimd::select(t < batch(c::underflow_cutoff), batch(T(0)), f);
}

// exp(t) for t <= 0, the same bounds. On AVX-512 the reduced argument takes one FMA less than
// with a correction (t - k·ln2_hi - k·ln2_lo, two FMAs); elsewhere it is exp(t, 0).
template <bool Underflow = true, class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> exp_nonpositive(xsimd::batch<T, A> const& t) noexcept {
  using batch = xsimd::batch<T, A>;
#if defined(SMAX_X86_REDUCTIONS)
  if constexpr (sizeof(batch) == 64) {
    using c = exp_constants<T>;
    const batch biased = detail::opaque(detail::mul_add(t, batch(c::log2e), batch(c::magic)));
    const batch k = detail::opaque(biased - batch(c::magic));  // not distributed over k·ln2
    const batch r = detail::mul_add(k, batch(-c::ln2_lo), detail::mul_add(k, batch(-c::ln2_hi), t));
    return scale_avx512<Underflow>(t, batch(c::underflow_cutoff), exp_reduced(r), k);
  }
#endif
  return exp_nonpositive<Underflow>(t, batch(T(0)));
}

// exp(x·s - j·ln2) for an integer j (given as -j in neg_j), where the caller guarantees
// x·s - j·ln2 <= ln2 in every lane and |max·s| < shift_constants::max_shift for the row's
// maximum (power_of_two_shift_limit). s_log2e = s·log2e; s is used only when Scaled (which needs
// a native FMA). The range reduction never forms x·s - j·ln2 itself: n = round(x·s·log2e),
// r = x·s - n·ln2 and the result is exp(r)·2^(n - j).
//
// With an FMA, ln2 = ln2_hi + ln2_lo with ln2_hi = fl(ln2): x - n·ln2_hi is exact in one FMA
// (n·ln2_hi is a multiple of ulp(1)/2 and the difference is below ln2/2), so no rounding error
// of a difference is carried and the accuracy is exp_nonpositive's; scaled, x·s is split into
// u + u_err first (the same two operations exp_minus_max spends on its x - max error). Without
// one, ln2_hi has 9 bits so that n·ln2_hi is exact, and n·ln2_lo (rounded) stays below 0.05
// because the rows are limited to |max| < 64 (float).
//
// With Underflow, lanes with n - j < -126 (-1022) give 0: those whose x·s - j·ln2 is below
// about ln(FLT_MIN), and -inf; NaN stays NaN.
template <class T, bool NativeFma>
struct shift_constants;
template <>
struct shift_constants<float, true> {
  static constexpr float ln2_hi = 0.693147182464599609375f;  // ln 2 rounded to float
  static constexpr float ln2_lo = -1.9046542121259336e-09f;
  static constexpr double max_shift = 1048576;  // keeps |n| < 2^22 (the magic-bias rounding)
  static constexpr float lowest_power = -126;
};
template <>
struct shift_constants<float, false> {
  static constexpr float ln2_hi = exp_constants<float>::ln2_hi;
  static constexpr float ln2_lo = exp_constants<float>::ln2_lo;
  static constexpr double max_shift = 64;  // |n·ln2_lo| < 0.05: its rounding stays below 2^-29
  static constexpr float lowest_power = -126;
};
template <>
struct shift_constants<double, true> {
  static constexpr double ln2_hi = 0.6931471805599453;  // ln 2 rounded to double
  static constexpr double ln2_lo = 2.3190468138462996e-17;
  static constexpr double max_shift = 1099511627776.0;  // 2^40
  static constexpr double lowest_power = -1022;
};
template <>
struct shift_constants<double, false> {
  static constexpr double ln2_hi = exp_constants<double>::ln2_hi;  // 32 bits: n < 2^21
  static constexpr double ln2_lo = exp_constants<double>::ln2_lo;
  static constexpr double max_shift = 1048576;
  static constexpr double lowest_power = -1022;
};

// The per-row constants of exp_shifted. Scaled, ln2/s = step_hi + step_lo: x - n·step_hi is
// exact in one FMA (as x - n·ln2_hi is), and r = s·(x - n·step_hi) - n·s·step_lo, so x·s is
// never rounded on its own and the scaled form costs one operation more than the unscaled.
template <class T, class A>
struct shift_row {
  xsimd::batch<T, A> s_log2e;        // s·log2e
  xsimd::batch<T, A> neg_j;          // -j
  xsimd::batch<T, A> s;              // Scaled only
  xsimd::batch<T, A> step_hi;        // Scaled only: ln2/s rounded
  xsimd::batch<T, A> neg_s_step_lo;  // Scaled only: -s·(ln2/s - step_hi)
};

template <bool Scaled, bool Underflow, class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> exp_shifted(xsimd::batch<T, A> const& x,
                                                  shift_row<T, A> const& row) noexcept {
  using batch = xsimd::batch<T, A>;
  using integer = detail::integer_of_t<T>;
  using c = exp_constants<T>;
  using sc = shift_constants<T, detail::has_native_fma<A>::value>;
  static_assert(!Scaled || detail::has_native_fma<A>::value, "the scaled form needs an FMA");
  const batch biased = detail::opaque(detail::mul_add(x, row.s_log2e, batch(c::magic)));
  const batch n = detail::opaque(biased - batch(c::magic));  // not distributed over n·ln2
  const batch k = n + row.neg_j;
  batch r_hi, r_lo;
  if constexpr (Scaled) {
    const batch t = detail::mul_add(n, -row.step_hi, x);  // exact
#if defined(SMAX_X86_REDUCTIONS)
    if constexpr (sizeof(batch) == 64)
      return scale_avx512<Underflow>(k, batch(sc::lowest_power),
                                     exp_reduced(detail::mul_add(row.s, t, n * row.neg_s_step_lo)),
                                     k);
#endif
    r_hi = row.s * t;
    r_lo = detail::mul_add(n, row.neg_s_step_lo, detail::mul_sub(row.s, t, r_hi));
  } else {
    r_hi = detail::mul_add(n, batch(-sc::ln2_hi), x);
#if defined(SMAX_X86_REDUCTIONS)
    if constexpr (sizeof(batch) == 64)
      return scale_avx512<Underflow>(k, batch(sc::lowest_power),
                                     exp_reduced(detail::mul_add(n, batch(-sc::ln2_lo), r_hi)), k);
#endif
    r_lo = n * batch(-sc::ln2_lo);
  }
  const batch p = expm1_reduced(r_hi, r_lo);
  // biased - j holds n - j + bias in its low bits (it stays in biased's binade).
  const batch scale =
      detail::bitcast<T>(detail::bitcast<integer>(biased + row.neg_j) << c::exponent_shift);
  const batch f = detail::mul_add(scale, p, scale);
  if constexpr (!Underflow) return f;
  return xsimd::select(k < batch(sc::lowest_power), batch(T(0)), f);
}

// The largest |max·s| a row may have for exp_shifted on A (the callers' guard).
template <class A, class T>
constexpr double power_of_two_shift_limit() noexcept {
  return shift_constants<T, detail::has_native_fma<A>::value>::max_shift;
}

}  // namespace primitives
}  // namespace smax
