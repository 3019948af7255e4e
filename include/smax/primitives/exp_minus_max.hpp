#pragma once
// exp((x - m)·(1/T)) for a row maximum m: the core of every normalising map. The subtraction is
// carried exactly (TwoSum) into the exponential: rounding x - m alone costs up to |x - m|·2^-24
// relative error (1.2e-6 at a spread of 20), which would dominate the result's error. The extra
// adds run on the FP add ports, which the exp (all FMA) leaves idle.

#include "exp.hpp"

namespace smax {
namespace primitives {

// Exact = false skips the TwoSum, for passes that only sum: the sum's relative error from the
// rounding of x - m is then at most 2^-24·E_p[m - x] <= 2^-24·log n (a p-weighted mean of the
// terms' errors), which log-softmax's bound absorbs; softmax, whose outputs are the terms
// themselves, keeps it exact.
template <class A, class T, bool Scaled, bool Exact = true>
struct exp_minus_max {
  using batch = xsimd::batch<T, A>;
  batch neg_max;
  batch inv_temperature;

  exp_minus_max(T max, T inv_t) noexcept : neg_max(-max), inv_temperature(inv_t) {}

  // Masked entries (x = -inf) and differences that overflow to -inf give exactly 0; NaN stays NaN.
  batch operator()(batch const& x) const noexcept {
    const batch d = x + neg_max;
    if (!Exact) return exp_nonpositive(Scaled ? d * inv_temperature : d);
    const batch neg_max_part = d - x;
    const batch x_part = d - neg_max_part;
    const batch err = (x - x_part) + (neg_max - neg_max_part);
    if (Scaled) return exp_nonpositive(d * inv_temperature, err * inv_temperature);
    return exp_nonpositive(d, err);
  }
};

}  // namespace primitives
}  // namespace smax
