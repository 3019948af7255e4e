#pragma once
// Two-pass softmax (Dukhan & Ablavatski 2020, spec §5): exp(u) = p·2^k with p in [2^-1/2, 2^1/2]
// and an integer k, accumulated per lane as (V, E) with V·2^E = sum of exp(u): no max pass, so
// the row is read twice and written once. Pass 2 writes p·2^(k - E)/V.
//
// Domain: the decomposition is exact while k·ln2 reduces exactly, |u| <= 2^23 with a fused
// multiply-add and |u| <= 1024 without one (k·ln2_lo is then rounded). A row outside it (or
// holding +inf) is computed by the three-pass kernel instead, as spec §5 prescribes. Masked
// entries (-inf) contribute nothing (XNNPACK's kernel would give NaN).

#include <cmath>

#include "../primitives/exp.hpp"
#include "../primitives/partial.hpp"
#include "softmax_three_pass.hpp"

namespace smax {
namespace kernels {

template <class T, bool NativeFma> struct two_pass_constants;
template <> struct two_pass_constants<float, true> {
  static constexpr float ln2_hi = 0.693147182464599609375f;  // ln 2 rounded: k·ln2_hi is exact in the FMA
  static constexpr float ln2_lo = -1.904654299957768e-09f;
  static constexpr float domain = 8388608.0f;  // 2^23
  static constexpr float min_exponent = -127.0f;  // 2^-127 is built as 0
};
template <> struct two_pass_constants<float, false> {
  static constexpr float ln2_hi = 0.693359375f;  // 10 bits: k·ln2_hi exact for |k| < 2^14
  static constexpr float ln2_lo = -2.12194440e-4f;
  static constexpr float domain = 1024.0f;
  static constexpr float min_exponent = -127.0f;
};
template <> struct two_pass_constants<double, true> {
  static constexpr double ln2_hi = 6.93147180369123816490e-01;
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double domain = 1073741824.0;  // 2^30
  static constexpr double min_exponent = -1023.0;
};
template <> struct two_pass_constants<double, false> {
  static constexpr double ln2_hi = 6.93147180369123816490e-01;  // 21 bits: exact for |k| < 2^32
  static constexpr double ln2_lo = 1.90821492927058770002e-10;
  static constexpr double domain = 1048576.0;  // 2^20
  static constexpr double min_exponent = -1023.0;
};

template <class A, class T>
struct two_pass_exp {
  using batch = xsimd::batch<T, A>;
  using integer = detail::integer_of_t<T>;
  using c = two_pass_constants<T, detail::has_native_fma<A>::value>;
  using e = primitives::exp_constants<T>;

  // u = k·ln2 + r; returns p = exp(r) and k (as an integer-valued float).
  static void split(batch const& u, batch& p, batch& k) noexcept {
    k = xsimd::nearbyint(u * batch(e::log2e));
    const batch r_hi = xsimd::fnma(k, batch(c::ln2_hi), u);
    const batch r_lo = k * batch(-c::ln2_lo);
    p = primitives::expm1_reduced(r_hi, r_lo) + batch(T(1));
  }

  // 2^d for an integer-valued d <= 0; 0 below the smallest normal exponent.
  static batch exp2_nonpositive(batch const& d) noexcept {
    const batch biased = xsimd::max(d, batch(c::min_exponent)) + batch(e::magic);
    return detail::bitcast<T>(detail::bitcast<integer>(biased) << e::exponent_shift);
  }
};

// Per-lane accumulator of pass 1.
template <class A, class T>
struct extended_sum {
  using batch = xsimd::batch<T, A>;
  batch value;     // V
  batch exponent;  // E; the lowest finite value until a lane sees an unmasked entry
  batch max_abs;   // largest |u| over unmasked entries, for the domain check
  xsimd::batch_bool<T, A> has_nan;

  extended_sum() noexcept
      : value(T(0)),
        exponent(-primitives::exp_constants<T>::largest),
        max_abs(T(0)),
        has_nan(false) {}

  void add(batch const& u) noexcept {
    using ops = two_pass_exp<A, T>;
    batch p, k;
    ops::split(u, p, k);
    const auto masked = u == batch(-__builtin_huge_val());
    p = xsimd::select(masked, batch(T(0)), p);  // -inf: k = -inf and p = NaN; contribute nothing
    max_abs = xsimd::max(max_abs, xsimd::select(masked, batch(T(0)), xsimd::abs(u)));
    has_nan = has_nan | xsimd::isnan(u);
    const batch new_exponent = xsimd::max(exponent, k);
    value = xsimd::fma(p, ops::exp2_nonpositive(k - new_exponent),
                       value * ops::exp2_nonpositive(exponent - new_exponent));
    exponent = new_exponent;
  }
};

template <class A, class T, bool Scaled>
inline void two_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  using ops = two_pass_exp<A, T>;
  using c = two_pass_constants<T, detail::has_native_fma<A>::value>;
  constexpr std::size_t width = batch::size;
  const T inf = __builtin_huge_val();
  const batch inv(p.inv_temperature);
  auto scaled = [&](batch const& v) { return Scaled ? v * inv : v; };

  // Pass 1: two accumulators for instruction-level parallelism.
  extended_sum<A, T> s0, s1;
  std::size_t i = 0;
  for (; i + 2 * width <= n; i += 2 * width) {
    s0.add(scaled(batch::load_unaligned(x + i)));
    s1.add(scaled(batch::load_unaligned(x + i + width)));
  }
  for (; i + width <= n; i += width) s0.add(scaled(batch::load_unaligned(x + i)));
  if (i < n) s1.add(scaled(primitives::load_partial<A>(x + i, n - i, -inf)));

  if (xsimd::any(s0.has_nan | s1.has_nan)) {
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const T max_abs = detail::horizontal_max(xsimd::max(s0.max_abs, s1.max_abs));
  if (!(max_abs <= c::domain)) {  // outside the exact decomposition, or +inf
    three_pass_row<A, T, Scaled>(x, y, n, p);
    return;
  }
  // Fold the lanes in double: E = the largest exponent of a non-empty lane.
  alignas(64) T values[2 * width];
  alignas(64) T exponents[2 * width];
  s0.value.store_unaligned(values);
  s1.value.store_unaligned(values + width);
  s0.exponent.store_unaligned(exponents);
  s1.exponent.store_unaligned(exponents + width);
  bool any = false;
  T exponent = 0;
  for (std::size_t l = 0; l < 2 * width; ++l) {
    if (values[l] > T(0) && (!any || exponents[l] > exponent)) exponent = exponents[l];
    any = any || values[l] > T(0);
  }
  if (!any) {  // every entry masked (or n = 0)
    finish_special_row<A>(-inf, false, y, n, p);
    return;
  }
  double sum = 0.0;
  for (std::size_t l = 0; l < 2 * width; ++l)
    if (values[l] > T(0))
      sum += ::ldexp(static_cast<double>(values[l]), static_cast<int>(exponents[l] - exponent));

  if (p.log) {
    // z = u - (E·ln2 + log V), with the constant split in two floats so the subtraction is exact
    // to the last bit of the result.
    const double total = static_cast<double>(exponent) * 0.69314718055994530942 + ::log(sum);
    const T hi = static_cast<T>(total);
    const batch total_hi(hi), total_lo(static_cast<T>(total - static_cast<double>(hi)));
    primitives::map<A>(x, y, n, [&](batch const& v) { return (scaled(v) - total_hi) - total_lo; });
    return;
  }
  // Pass 2: y = p·(1/V)·2^(k - E). Masked entries are clamped to a value whose 2^(k - E) is 0.
  const batch inv_sum(static_cast<T>(1.0 / sum)), neg_exponent(-exponent);
  const batch floor(T(-2) * c::domain - T(1024));
  primitives::map<A>(x, y, n, [&](batch const& v) {
    batch q, k;
    ops::split(xsimd::max(scaled(v), floor), q, k);
    return (q * inv_sum) * ops::exp2_nonpositive(k + neg_exponent);
  });
}

}  // namespace kernels
}  // namespace smax
