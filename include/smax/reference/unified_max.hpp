#pragma once
// Scalar long-double reference for unified-max softmax, straight from the definition
// (docs/unified_max.md): y_i = exp(x_i - φ)/Σ_j exp(x_j - φ) when every finite x_i has
// φ + a <= x_i <= φ + b (the bounds rounded as the header says); otherwise the row falls back to the max-based form exp(x_i - m)/Σ exp(x_j - m).

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct unified_max_result {
  std::vector<long double> y;
  bool fell_back = false;
};

// NaN or +inf rows: NaN, reported as fallen back; all -inf: NaN (0 with zero_masked_rows), not
// fallen back.
template <class T>
unified_max_result unified_max_softmax(const T* x, std::size_t n, long double phi, long double a,
                                       long double b, bool zero_masked_rows = false) {
  const long double inf = HUGE_VALL, nan = NAN;
  unified_max_result r;
  r.y.assign(n, 0.0L);
  if (n == 0) return r;
  // The range as the header defines it: x in [φ + a, φ + b], the sums rounded to double and then
  // inward to T (x - φ in long double would put -1e-300 inside a range that starts at 0).
  const double lo_d = static_cast<double>(phi) + static_cast<double>(a),
               hi_d = static_cast<double>(phi) + static_cast<double>(b);
  T lo = static_cast<T>(lo_d), hi = static_cast<T>(hi_d);
  if (static_cast<double>(lo) < lo_d) lo = std::nextafter(lo, static_cast<T>(inf));
  if (static_cast<double>(hi) > hi_d) hi = std::nextafter(hi, -static_cast<T>(inf));
  bool bad = false;
  long double m = -inf;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) bad = true;
    if (v > m) m = v;
    if (v != -inf && (x[i] < lo || x[i] > hi)) r.fell_back = true;
  }
  if (bad) {
    r.fell_back = true;
    for (auto& v : r.y) v = nan;
    return r;
  }
  if (m == -inf) {
    for (auto& v : r.y) v = zero_masked_rows ? 0.0L : nan;
    return r;
  }
  const long double shift = r.fell_back ? m : phi;
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -inf) s += std::exp(static_cast<long double>(x[i]) - shift);
  for (std::size_t i = 0; i < n; ++i)
    r.y[i] = x[i] == -inf ? 0.0L : std::exp(static_cast<long double>(x[i]) - shift) / s;
  return r;
}

}  // namespace reference
SMAX_END_NAMESPACE
