#pragma once
// Scalar long-double reference for StableMax and log-StableMax and their backward passes,
// straight from the definition (docs/stablemax.md): s(x) = x + 1 (x >= 0), 1/(1 - x) (x < 0).

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

inline long double stablemax_s(long double x) {
  return x >= 0 ? x + 1 : 1 / (1 - x);
}
// log s(x), without forming s (which underflows long double only far beyond float's range).
inline long double stablemax_log_s(long double x) {
  return x >= 0 ? std::log1p(x) : -std::log1p(-x);
}

// y (log: z) of one row; NaN row for NaN, +inf or all -inf.
template <class T>
std::vector<long double> stablemax(const T* x, std::size_t n, bool log) {
  std::vector<long double> out(n);
  bool bad = false, any = false;
  long double sum = 0, m = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == INFINITY) bad = true;
    if (v != -INFINITY) any = true;
    if (v > m) m = v;
  }
  if (bad || !any) {
    for (auto& o : out) o = NAN;
    return out;
  }
  for (std::size_t i = 0; i < n; ++i) sum += stablemax_s(x[i]) / stablemax_s(m);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) {
      out[i] = log ? -INFINITY : 0;
      continue;
    }
    out[i] = log ? stablemax_log_s(x[i]) - stablemax_log_s(m) - std::log(sum)
                 : (stablemax_s(x[i]) / stablemax_s(m)) / sum;
  }
  return out;
}

// dx of one row from x and dy (y recomputed in long double): g = 1/(1 + |x|);
// stablemax: dx = g·y·(dy - <dy, y>); log: dx = g·(dy - y·Σdy).
template <class T>
std::vector<long double> stablemax_backward(const T* x, const T* dy, std::size_t n, bool log) {
  const std::vector<long double> y = stablemax(x, n, false);
  long double dot = 0, total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (y[i] != 0) dot += y[i] * dy[i];
    total += dy[i];
  }
  std::vector<long double> dx(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) {
      dx[i] = std::isnan(y[i]) ? y[i] : 0;
      continue;
    }
    const long double g = 1 / (1 + std::fabs(static_cast<long double>(x[i])));
    dx[i] = log ? g * (dy[i] - y[i] * total) : g * y[i] * (dy[i] - dot);
  }
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
