#pragma once
// Scalar long-double reference for softpick and its backward pass, written straight from the
// definition (docs/softpick.md) and the bad-input contract (docs/edge_cases.md). The ground truth
// for tests; slow and simple on purpose.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// The expm1 form: m = max over x; m <= 0 gives zeros; a_j = e^(x_j - m)·(-expm1(-x_j)) for x_j > 0,
// expm1(x_j)·e^-m for finite x_j <= 0, 0 (and left out of the sum) for x_j = -inf;
// y_i = relu(a_i)/(sum |a_j| + eps). All -inf, +inf or NaN: NaN row.
template <class T>
std::vector<long double> softpick(const T* x, std::size_t n, long double eps = 1e-8L) {
  const long double inf = HUGE_VALL, nan = NAN;
  std::vector<long double> y(n);
  if (n == 0) return y;
  bool special = false;
  long double m = -inf;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) special = true;
    if (v > m) m = v;
  }
  if (special || m == -inf) {
    for (auto& v : y) v = nan;
    return y;
  }
  if (m <= 0) return y;  // zeros
  std::vector<long double> a(n);
  long double s = eps;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (v == -inf)
      a[i] = 0;
    else if (v > 0)
      a[i] = std::exp(v - m) * -std::expm1(-v);
    else
      a[i] = std::expm1(v) * std::exp(-m);
    s += std::fabs(a[i]);
  }
  for (std::size_t i = 0; i < n; ++i) y[i] = a[i] > 0 ? a[i] / s : 0.0L;
  return y;
}

// dx = J(x)^T dy (docs/softpick.md), in long double from x (the reference's own S').
template <class T>
std::vector<long double> softpick_backward(const T* x, std::vector<long double> const& dy,
                                           std::size_t n, long double eps = 1e-8L) {
  const long double inf = HUGE_VALL, nan = NAN;
  std::vector<long double> dx(n);
  const auto y = softpick(x, n, eps);
  if (n == 0) return dx;
  if (std::isnan(y[0])) {
    for (auto& v : dx) v = nan;
    return dx;
  }
  long double m = -inf;
  std::size_t first = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] > m) {
      m = x[i];
      first = i;
    }
  if (m <= 0) return dx;
  long double s = eps, c = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (v == -inf) continue;
    s += std::fabs(v > 0 ? std::exp(v - m) * -std::expm1(-v) : std::expm1(v) * std::exp(-m));
    c += dy[i] * y[i];
  }
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (v == -inf) continue;
    const long double sgn = v > 0 ? 1 : (v < 0 ? -1 : 0);
    dx[i] = std::exp(v - m) / s * ((v > 0 ? dy[i] : 0.0L) - sgn * c);
  }
  dx[first] -= c * eps / s;
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
