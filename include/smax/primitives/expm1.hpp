#pragma once
// expm1 on xsimd batches, accurate near 0 on both sides, and its scaled form 2^-K·expm1(t) (the
// softpick term): exp.hpp's range reduction t = k·ln2 + r, |r| <= ln2/2, and its expm1_reduced
// p = exp(r) - 1; then expm1(t) = 2^k·(1 + p) - 1 = 2^k·p + (2^k - 1) in one FMA. For k = 0 that
// is p itself (no cancellation), and for k != 0 the subtraction loses at most a factor 1.4 of
// p's relative error (k = 1, t = ln2/2), so the result stays within a few ulp everywhere.

#include "exp.hpp"

namespace smax {
namespace primitives {

template <class T>
struct expm1_constants;

template <>
struct expm1_constants<float> {
  // Below this, expm1(t) rounds to -1 (e^-40 is far below half an ulp of 1): t is clamped to it,
  // which keeps k and 2^k in range (and maps -inf to -1).
  static constexpr float lowest = -40.0f;
  // 2^(min_exponent) is built as +0 by the exponent shift.
  static constexpr float min_exponent = -127.0f;
  // Largest t whose k (<= 127) the exponent shift can build: 127.5·ln2.
  static constexpr float highest = 88.376f;
};

template <>
struct expm1_constants<double> {
  static constexpr double lowest = -40.0;  // e^-40 = 4.2e-18 < 2^-54
  static constexpr double min_exponent = -1023.0;
  static constexpr double highest = 709.43;  // 1023.5·ln2
};

// 2^-K·expm1(t) for an integer K >= 0, given neg_k = -K and scale = 2^-K (exact, possibly
// subnormal or 0). One range reduction of t itself: the result is 2^(k-K)·p + (2^(k-K) - 2^-K).
//
// Domain: t - K·ln2 <= highest (k - K <= 127 for float, 1023 for double). Clamp = false
// promises t >= lowest and k - K > min_exponent in every lane, i.e. t >= max(lowest,
// (K - 126)·ln2) for float ((K - 1022)·ln2 for double); NaN allowed. Clamp = true accepts any
// t <= the bound: t below lowest (and -inf) is clamped (the result is -2^-K, or 2^-K·expm1(lowest)
// rounded, which is the same number), and 2^(k-K) below the smallest normal is taken as 0 (which
// moves the result by less than 2^-126 absolute). NaN stays NaN either way.
//
// Error (float, K = 0): <= 2 ulp (1.65 measured, at t ~ ln2/2 where k = 1) for every float in
// [-40, 88.37] with |t| >= 2^-40, below which it returns t (tests/primitives/expm1_test.cpp,
// every instruction set); double: <= 2 ulp on the sampled sweep. With K > 0 the scaling by
// 2^-K is exact while the result is normal.
template <bool Clamp, class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> expm1_scaled(xsimd::batch<T, A> const& t,
                                                   xsimd::batch<T, A> const& neg_k,
                                                   xsimd::batch<T, A> const& scale) noexcept {
  using batch = xsimd::batch<T, A>;
  using integer = detail::integer_of_t<T>;
  using c = exp_constants<T>;
  using e = expm1_constants<T>;
  // The unordered compare keeps NaN (a max would drop it on x86, by operand order).
  const batch u = Clamp ? xsimd::select(t < batch(e::lowest), batch(e::lowest), t) : t;
  const batch biased = detail::opaque(detail::mul_add(u, batch(c::log2e), batch(c::magic)));
  const batch k = detail::opaque(biased - batch(c::magic));  // not distributed over k·ln2
  // u - k·ln2_hi is exact (k has at most 8 bits, ln2_hi 10), as in exp_nonpositive.
  const batch r_hi = detail::mul_add(k, batch(-c::ln2_hi), u);
  const batch r_lo = k * batch(-c::ln2_lo);
  const batch p = expm1_reduced(r_hi, r_lo);
  // biased holds magic + k exactly (integers are exact at the magic's exponent), so adding -K
  // gives magic + (k - K), whose low bits shifted into the exponent field are 2^(k-K).
  batch biased_d = biased + neg_k;
  if constexpr (Clamp) biased_d = xsimd::max(biased_d, batch(c::magic + e::min_exponent));
  const batch s = detail::bitcast<T>(detail::bitcast<integer>(biased_d) << c::exponent_shift);
  // 2^(k-K)·(1 + p) - 2^-K with one rounding: s - scale is exact for |k| < 24 (53 for double)
  // and within half an ulp otherwise, and s·p is exact inside the FMA.
  return detail::mul_add(s, p, s - scale);
}

// expm1(t) = e^t - 1, for t <= highest (88.37 float, 709.43 double); +inf above ln(max) is not
// produced: the caller keeps t <= highest. -inf gives -1, NaN stays NaN. Error as expm1_scaled.
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> expm1(xsimd::batch<T, A> const& t) noexcept {
  using batch = xsimd::batch<T, A>;
  return expm1_scaled<true>(t, batch(T(0)), batch(T(1)));
}

}  // namespace primitives
}  // namespace smax
