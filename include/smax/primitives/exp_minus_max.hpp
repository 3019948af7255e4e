#pragma once
// exp((x - m)·(1/T)) for a row maximum m: the core of every normalising map. The rounding error
// of d = x - m is carried exactly into the exponential: rounding x - m alone costs up to
// |x - m|·2^-24 relative error (1.2e-6 at a spread of 20), which would dominate the result's
// error. How that error is recovered is chosen once per row (difference_error), because the
// general form (TwoSum, five operations) costs 15 % of the exp pass and most rows allow a
// two-operation form with the same, exact, result.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "exp.hpp"

namespace smax {
namespace primitives {

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
// two library calls per row (about 3 ns, 1 % of a 1000-element row).
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
  batch neg_max;
  batch inv_temperature;

  exp_minus_max(T max, T inv_t) noexcept : neg_max(-max), inv_temperature(inv_t) {}

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

// Whether (x - max)·inv_t can fall below the exp's underflow cutoff for some x >= min (a margin
// of 1 covers the roundings of x - max and of the product).
template <class T>
inline bool may_underflow(T max, T min, T inv_t) noexcept {
  const double lowest = (static_cast<double>(min) - static_cast<double>(max)) * static_cast<double>(inv_t);
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

}  // namespace primitives
}  // namespace smax
