#pragma once
// exp((x - m)·(1/T)) for a row maximum m: the core of every normalising map. The rounding error
// of d = x - m is carried exactly into the exponential: rounding x - m alone costs up to
// |x - m|·2^-24 relative error (1.2e-6 at a spread of 20), which would dominate the result's
// error. How that error is recovered is chosen once per row (difference_error), because the
// general form (TwoSum, five operations) costs 15 % of the exp pass and most rows allow a
// two-operation form with the same, exact, result.
//
// A normalised row (softmax, MultiMax) need not subtract m at all: exp_minus_shift subtracts
// σ = j·ln2 <= m·s instead, whose range reduction is exact without any x - m (and two to five
// operations cheaper). Its values carry a row constant that the normalisation removes;
// log_shift and exp_of_difference relate the shifts of blocks that were exponentiated apart.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "exp.hpp"

namespace smax {
namespace primitives {

// σ, the amount a row's exp functor subtracts from x·s (its exponentials are exp(x·s - σ)), as an
// unevaluated sum hi + lo: exact for σ = max·s (an error-free product) and for σ = j·ln2 to
// 2^-100 relative. Blocks and chunks of a row exponentiated with different shifts are combined
// through exp_of_difference.
struct log_shift {
  double hi;
  double lo;
};

// σ = max·s, exactly.
inline log_shift product_shift(double max, double s) noexcept {
  const double hi = max * s;
  return {hi, __builtin_fma(max, s, -hi)};
}

// a - b as an unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
inline log_shift subtract_shifts(log_shift a, log_shift b) noexcept {
  const double d = a.hi - b.hi;
  const double a_part = d + b.hi;  // TwoSum(a.hi, -b.hi)
  const double b_part = d - a_part;
  const double low = ((a.hi - a_part) - (b.hi + b_part)) + (a.lo - b.lo);
  const double hi = d + low;  // TwoSum(d, low): low is not small next to d when d ~ 0
  const double d_part = hi - low;
  const double low_part = hi - d_part;
  return {hi, (d - d_part) + (low - low_part)};
}

// exp(a - b) for shifts within a few hundred of each other (the caller's range), to about one
// ulp of double. The same shift (bit for bit) gives exactly 1, also a max·s that overflowed
// double (a double row's max = 1e300 at T = 1e-10: hi infinite, lo NaN).
inline double exp_of_difference(log_shift a, log_shift b) noexcept {
  if (__builtin_memcmp(&a, &b, sizeof a) == 0) return 1.0;
  // Below double's range the ratio is 0; a gap beyond the largest double (a block maximum of
  // -DBL_MAX under a row maximum of DBL_MAX) would make the TwoSum below NaN.
  if (!(a.hi - b.hi > -800.0)) return 0.0;
  const log_shift d = subtract_shifts(a, b);
  return ::exp(d.hi) * (1.0 + d.lo);
}

// exp((a - b)·s) for a <= b: the ratio of the sums of two maxima a and b, from the maxima
// themselves. For when both shifts a·s and b·s overflowed double (exp_of_difference cannot
// tell their difference); the rounding errors of a - b and of the product are carried.
inline double exp_of_scaled_difference(double a, double b, double s) noexcept {
  const log_shift d = subtract_shifts({a, 0.0}, {b, 0.0});
  const double p = d.hi * s;
  if (!(p > -800.0)) return 0.0;  // below double's range (and keeps the residual finite)
  return ::exp(p) * (1.0 + (__builtin_fma(d.hi, s, -p) + d.lo * s));
}

// exp(σ_a - σ_b) for the shifts of maxima a <= b with scale s: exp_of_difference, unless a shift
// overflowed (then only the maxima tell the difference; with one shift finite it is 0, where
// inf - inf would be NaN).
inline double exp_of_shift_difference(log_shift sa, log_shift sb, double a, double b,
                                      double s) noexcept {
  if (__builtin_isinf(sa.hi) || __builtin_isinf(sb.hi)) return exp_of_scaled_difference(a, b, s);
  return exp_of_difference(sa, sb);
}

// How the rounding error of d = x - m is recovered. Every form but `dropped` gives the exact
// error, so the results are the same bit for bit whichever a row uses.
enum class difference_error {
  two_sum,     // any row (Knuth's TwoSum: 5 operations)
  max_larger,  // m > 0 and every |x| < 2^(exponent(m) + 1): Fast2Sum(-m, x), 2 operations
  x_larger,    // m <= 0, so every |x| >= |m|: Fast2Sum(x, -m), 2 operations
  // Not recovered: for passes that only sum (log-softmax), where the sum's relative error from
  // rounding x - m is a p-weighted mean of |x - m|·2^-24, i.e. at most 2^-24·log n.
  dropped,
};

// The cheapest exact form for a row with maximum `max` and minimum `min` (finite max).
// Dekker's Fast2Sum(a, b) is exact when exponent(a) >= exponent(b).
// Compared on the exponent fields (|min| < 2^(exponent(max) + 1)), not with ilogb and ldexp:
// two library calls per row, a visible cost on short rows.
template <class T>
inline difference_error choose_difference_error(T max, T min) noexcept {
  using bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  constexpr int mantissa_bits = sizeof(T) == 4 ? 23 : 52;
  if (max <= T(0)) return difference_error::x_larger;
  bits max_bits, min_bits;
  const T magnitude = -min;  // min <= max, and max > 0 here; -inf gives +inf, the largest field
  std::memcpy(&max_bits, &max, sizeof(T));
  std::memcpy(&min_bits, &magnitude, sizeof(T));
  // A subnormal max has no exponent field to compare (all are 0): the rare case takes ilogb.
  if ((max_bits >> mantissa_bits) == 0)
    return -min < std::ldexp(T(1), std::ilogb(max) + 1) ? difference_error::max_larger
                                                        : difference_error::two_sum;
  // A negative magnitude (min > 0) has its sign bit set: it is below 2^(e + 1) anyway.
  if (magnitude < T(0) || (min_bits >> mantissa_bits) <= (max_bits >> mantissa_bits))
    return difference_error::max_larger;
  return difference_error::two_sum;
}

// Underflow = false when no (x - m)/T of the row is below the exp's underflow cutoff (rows with
// a finite minimum within about 87 (float) of the maximum): the underflow select is skipped.
template <class A, class T, bool Scaled, difference_error E = difference_error::two_sum,
          bool Underflow = true>
struct exp_minus_max {
  using batch = xsimd::batch<T, A>;
  static constexpr bool exact_max = true;  // the maximum's value is exactly 1
  batch neg_max;
  batch inv_temperature;
  T max;
  T inv_t;

  exp_minus_max(T max_, T inv_t_) noexcept
      : neg_max(-max_), inv_temperature(inv_t_), max(max_), inv_t(inv_t_) {}

  // σ = max·(1/T).
  log_shift shift() const noexcept { return product_shift(max, Scaled ? inv_t : T(1)); }

  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch d = x + neg_max;
    if constexpr (E == difference_error::dropped) {
      return exp_nonpositive<Underflow>(Scaled ? d * inv_temperature : d);
    } else {
      batch err;
      if constexpr (E == difference_error::max_larger) {
        err = x - (d - neg_max);
      } else if constexpr (E == difference_error::x_larger) {
        err = neg_max - (d - x);
      } else {
        const batch neg_max_part = d - x;
        const batch x_part = d - neg_max_part;
        err = (x - x_part) + (neg_max - neg_max_part);
      }
      if (Scaled) return exp_nonpositive<Underflow>(d * inv_temperature, err * inv_temperature);
      return exp_nonpositive<Underflow>(d, err);
    }
  }
};

// y = v·(num/den) for a row's normalising factor, with (nearly) one rounding: the factor is held
// as hi + lo in T and applied as fma(v, hi, v·lo), one operation more than a product. A row
// whose only nonzero value is its maximum then normalises to exactly 1 although exp_minus_shift
// does not make that value 1 (fl(c·fl(1/c)) can be 1 - 2^-24), and every output is spared the
// rounding of the factor.
template <class A, class T>
struct normalizer {
  using batch = xsimd::batch<T, A>;
  batch hi;
  batch lo;

  normalizer(double num, double den) noexcept {
    const double q = num / den;
    if constexpr (sizeof(T) == 4) {
      const T h = static_cast<T>(q);
      hi = batch(h);
      lo = batch(static_cast<T>(q - static_cast<double>(h)));
    } else {
      hi = batch(q);
      lo = batch(__builtin_fma(-q, den, num) / den);  // the division's residual
    }
  }

  SMAX_ALWAYS_INLINE batch operator()(batch const& v) const noexcept {
    return detail::mul_add(v, hi, v * lo);
  }
};

// The same for a short row held in registers, whose latency counts: y = v·fl(1/sum), one
// product (normalizer's second operation and two-part factor would lengthen the chain by a fifth
// at 64 elements). ExactMax = false (values from exp_minus_shift): a value equal to the sum (the
// row's only nonzero value, or one beside which the rest vanish in T) gives exactly 1, which the
// product may miss by an ulp; with exp_minus_max that value is 1 and the product is exact.
template <class A, class T, bool ExactMax>
struct short_normalizer {
  using batch = xsimd::batch<T, A>;
  batch inverse;
  batch total;

  explicit short_normalizer(double sum) noexcept
      : inverse(static_cast<T>(1.0 / sum)), total(static_cast<T>(sum)) {}

  SMAX_ALWAYS_INLINE batch operator()(batch const& v) const noexcept {
    if constexpr (ExactMax) return v * inverse;
    return xsimd::select(v == total, batch(T(1)), v * inverse);
  }
};

// Log-softmax's exp: it only sums, so the x - max error is dropped; and it keeps σ = max·s (not
// exp_minus_shift), so the maximum's own value is exactly 1 and a row dominated by its maximum
// has a log-sum of exactly 0.
template <class A, class T, bool Scaled>
using exp_for_log_sum = exp_minus_max<A, T, Scaled, difference_error::dropped>;

// Whether (x - max)·inv_t can fall below the exp's underflow cutoff for some x >= min (a margin
// of 1 covers the roundings of x - max and of the product).
template <class T>
inline bool may_underflow(T max, T min, T inv_t) noexcept {
  const double lowest =
      (static_cast<double>(min) - static_cast<double>(max)) * static_cast<double>(inv_t);
  return !(lowest > static_cast<double>(exp_constants<T>::underflow_cutoff) + 1.0);
}

// Calls f(e) with the exp_minus_max for (max, inv_t) whose error form and underflow handling
// suit a row whose smallest element is `min`: one instantiation of the row loop per choice.
template <class A, class T, bool Scaled, class F>
inline decltype(auto) with_exp_minus_max(T max, T min, T inv_t, F&& f) {
  auto pick = [&](auto underflow) -> decltype(auto) {
    constexpr bool U = decltype(underflow)::value;
    switch (choose_difference_error(max, min)) {
      case difference_error::max_larger:
        return f(exp_minus_max<A, T, Scaled, difference_error::max_larger, U>(max, inv_t));
      case difference_error::x_larger:
        return f(exp_minus_max<A, T, Scaled, difference_error::x_larger, U>(max, inv_t));
      default:
        return f(exp_minus_max<A, T, Scaled, difference_error::two_sum, U>(max, inv_t));
    }
  };
  if (may_underflow(max, min, inv_t)) return pick(std::true_type{});
  return pick(std::false_type{});
}

// exp(x·s - σ) for a row whose maximum is `max`, with σ = j·ln2 for the integer
// j = floor(max·s·log2e) instead of σ = max·s: every value is exp((x - max)·s) times one row
// constant exp(max·s - σ) in [1, 2), which a normalised result never sees. Its range reduction
// needs no x - max, so there is no rounding error of x - max to carry (exp_shifted): 13
// operations a vector on AVX-512 against exp_minus_max's 15 to 18 (unscaled), which makes the exp
// pass of a long row faster. The shift is at most max·s, so no value that is normal relative to
// the maximum underflows. For softmax rows with |max·s| < 2^20 (float, with FMA)
// (uses_power_of_two_shift). Not for log-softmax: the maximum's own value is no longer exactly 1,
// which would cost a row dominated by its maximum the exact 0 of its log-softmax (and its sum
// needs no x - max error anyway, difference_error::dropped).
template <class A, class T, bool Scaled, bool Underflow = true>
struct exp_minus_shift {
  using batch = xsimd::batch<T, A>;
  static constexpr bool exact_max = false;  // the maximum's value is in [1, 2), rounded
  shift_row<T, A> row;
  double j;

  exp_minus_shift(T max, T inv_t) noexcept
      : j(std::floor(static_cast<double>(max) * (Scaled ? static_cast<double>(inv_t) : 1.0) *
                     exp_constants<double>::log2e)) {
    row.neg_j = batch(static_cast<T>(-j));
    if constexpr (Scaled) {
      // ln2/s = step_hi + step_lo: step_hi is any value near ln2/s (x - n·step_hi is exact for
      // any), step_lo = (ln2 - s·step_hi)/s from the FMA residual, to double precision: one
      // division per row (short rows, where its latency would show, keep exp_minus_max).
      constexpr double ln2_hi = shift_constants<double, true>::ln2_hi,
                       ln2_lo = shift_constants<double, true>::ln2_lo;
      const double s = inv_t;
      const double inv_s = 1.0 / s;
      const T hi = static_cast<T>(ln2_hi * inv_s);
      const double lo = (__builtin_fma(-static_cast<double>(hi), s, ln2_hi) + ln2_lo) * inv_s;
      row.s_log2e = batch(static_cast<T>(s * exp_constants<double>::log2e));
      row.s = batch(inv_t);
      row.step_hi = batch(hi);
      row.neg_s_step_lo = batch(static_cast<T>(-s * lo));
    } else {
      row.s_log2e = batch(exp_constants<T>::log2e);
    }
  }

  // σ = j·ln2: an error-free product with ln 2's leading double, plus j times the rest.
  log_shift shift() const noexcept {
    constexpr double ln2 = shift_constants<double, true>::ln2_hi;
    const double hi = j * ln2;
    return subtract_shifts(
        {hi, __builtin_fma(j, ln2, -hi) + j * shift_constants<double, true>::ln2_lo}, {0.0, 0.0});
  }

  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    return exp_shifted<Scaled, Underflow>(x, row);
  }
};

// Whether a row with this maximum and scale can take exp_minus_shift: |max·s| within its limit
// (power_of_two_shift_limit; every lane that does not underflow is then within 90 of max·s), and
// a native FMA and s below power_of_two_shift_max_scale when scaled.
template <class A, bool Scaled>
constexpr bool has_power_of_two_shift = !Scaled || detail::has_native_fma<A>::value;

// The largest scale s for exp_minus_shift: beyond it ln2/s (step_hi, in T) or its residual
// (step_lo, in double: 2^-54/s) would be subnormal and lose the bits that keep the range
// reduction exact (fuzz finding: a double row's sum off by 1.8e-9 at s = 1.5e304).
template <class T>
constexpr double power_of_two_shift_max_scale = sizeof(T) == 4 ? 0x1p120 : 0x1p900;

template <class A, class T, bool Scaled>
inline bool uses_power_of_two_shift(T max, T inv_t) noexcept {
  if (!has_power_of_two_shift<A, Scaled>) return false;
  if (Scaled && !(static_cast<double>(inv_t) < power_of_two_shift_max_scale<T>)) return false;
  const double ms = static_cast<double>(max) * static_cast<double>(Scaled ? inv_t : T(1));
  constexpr double limit = power_of_two_shift_limit<A, T>();
  return ms > -limit && ms < limit;
}

// Calls f(e) with the cheapest exp functor for a normalised row: exp_minus_shift where it applies,
// the exp_minus_max chosen by with_exp_minus_max otherwise. Either has `shift` (σ): the values
// are exp(x·s - σ).
template <class A, class T, bool Scaled, class F>
inline decltype(auto) with_shifted_exp(T max, T min, T inv_t, F&& f) {
  if constexpr (has_power_of_two_shift<A, Scaled>) {
    if (uses_power_of_two_shift<A, T, Scaled>(max, inv_t)) {
      if (may_underflow(max, min, inv_t)) return f(exp_minus_shift<A, T, Scaled, true>(max, inv_t));
      return f(exp_minus_shift<A, T, Scaled, false>(max, inv_t));
    }
  }
  return with_exp_minus_max<A, T, Scaled>(max, min, inv_t, std::forward<F>(f));
}

// with_shifted_exp for a row whose minimum is not known (min = -inf, as a chunk normalised by a
// merged online state): the same choice, without instantiating the functors it cannot choose
// there (every value may underflow; x - max is never known to be exact), for callers that
// instantiate a long loop per functor.
template <class A, class T, bool Scaled, class F>
inline decltype(auto) with_shifted_exp_of_any_row(T max, T inv_t, F&& f) {
  if constexpr (has_power_of_two_shift<A, Scaled>) {
    if (uses_power_of_two_shift<A, T, Scaled>(max, inv_t))
      return f(exp_minus_shift<A, T, Scaled, true>(max, inv_t));
  }
  if (choose_difference_error(max, -T(__builtin_huge_val())) == difference_error::x_larger)
    return f(exp_minus_max<A, T, Scaled, difference_error::x_larger, true>(max, inv_t));
  return f(exp_minus_max<A, T, Scaled, difference_error::two_sum, true>(max, inv_t));
}

// Short rows (a register_row of Count registers), whose minimum is not known and whose latency
// counts: exp_minus_shift from two registers up, for unscaled rows in its range; otherwise
// exp_minus_max in TwoSum's form. A one-register row gains nothing from the shift (its exp is
// not the longer chain) and would pay for short_normalizer's select (slower at n = 16); a scaled
// row's shift constants (a division and its residual) lengthen the chain (slower SSMax at 64
// elements). Nor does a row of two 256-bit registers on AVX-512 (detail::avx2_in, one 512-bit
// register's worth): with the shift, batches of 16-element rows lost the speed they have on
// 512-bit registers.
template <class A, bool Scaled, std::size_t Count>
constexpr bool short_row_shift = !Scaled && Count >= 2 && !detail::is_avx2_in<A>::value;

template <class A, class T, bool Scaled, std::size_t Count, class F>
SMAX_ALWAYS_INLINE decltype(auto) with_short_row_exp(T max, T inv_t, F&& f) {
  if constexpr (short_row_shift<A, Scaled, Count>) {
    if (uses_power_of_two_shift<A, T, Scaled>(max, inv_t))
      return f(exp_minus_shift<A, T, Scaled>(max, inv_t));
  }
  return f(exp_minus_max<A, T, Scaled>(max, inv_t));
}

}  // namespace primitives
}  // namespace smax
