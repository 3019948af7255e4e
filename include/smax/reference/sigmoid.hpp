#pragma once
// Scalar long-double reference for sigmoid and its backward pass, straight from the definition
// (docs/sigmoid.md).

#include <cmath>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// σ(t) for t = x + b, in long double; -inf -> 0, +inf -> 1, NaN -> NaN.
inline long double sigmoid(long double t) {
  if (std::isnan(t)) return t;
  return t >= 0 ? 1.0L / (1.0L + std::exp(-t)) : std::exp(t) / (1.0L + std::exp(t));
}

// dx = dy·σ(t)·σ(-t).
inline long double sigmoid_backward(long double t, long double dy) {
  return dy * sigmoid(t) * sigmoid(-t);
}

}  // namespace reference
SMAX_END_NAMESPACE
