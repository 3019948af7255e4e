#pragma once
// Scalar long-double reference for SSMax (docs/ssmax.md): softmax(λ·x) over the unmasked entries,
// the scale applied to finite entries only, and the gradient of λ.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

template <class T>
std::vector<long double> ssmax(const T* x, std::size_t n, long double lambda,
                               bool zero_masked_rows = false) {
  const long double inf = HUGE_VALL, nan = NAN;
  std::vector<long double> y(n);
  bool bad = false;
  std::size_t finite = 0;
  // The entry m where λ·x is largest: λ·(x_i - m) is then the exponent, scaled after the
  // difference (λ·x_i - λ·m would carry the rounding of λ·x_i, |λ·x|·2^-64, into every output:
  // 1.8e-11 at λ·x = 7e8).
  long double m = nan, best = -inf;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) bad = true;
    if (v == -inf || std::isnan(v)) continue;
    ++finite;
    if (lambda * v >= best) best = lambda * v, m = v;
  }
  if (bad || finite == 0) {
    for (auto& v : y) v = !bad && zero_masked_rows ? 0.0L : nan;
    return y;
  }
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -inf) s += std::exp(lambda * (x[i] - m));
  for (std::size_t i = 0; i < n; ++i)
    y[i] = x[i] == -inf ? 0.0L : std::exp(lambda * (x[i] - m)) / s;
  return y;
}

}  // namespace reference
SMAX_END_NAMESPACE
