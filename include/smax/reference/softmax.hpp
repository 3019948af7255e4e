#pragma once
// Scalar long-double references for softmax, log-softmax and their backward passes, written
// straight from the definitions (docs/softmax.md) and the bad-input contract (docs/edge_cases.md).
// The ground truth for tests; slow and simple on purpose.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct options {
  long double temperature = 1.0L;
  bool zero_masked_rows = false;
};

// softmax (log = false) or log-softmax (log = true) of x[0..n), in long double.
template <class T>
std::vector<long double> softmax(const T* x, std::size_t n, bool log, options const& o = {}) {
  const long double inf = HUGE_VALL, nan = NAN;
  std::vector<long double> y(n);
  if (n == 0) return y;
  bool has_nan = false, has_pos_inf = false;
  long double m = -inf;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v)) has_nan = true;
    if (v == inf) has_pos_inf = true;
    if (v > m) m = v;
  }
  if (!(o.temperature > 0 && o.temperature < inf) || has_nan || has_pos_inf) {
    for (auto& v : y) v = nan;
    return y;
  }
  if (m == -inf) {
    for (auto& v : y) v = o.zero_masked_rows ? (log ? -inf : 0.0L) : nan;
    return y;
  }
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -inf) s += std::exp((static_cast<long double>(x[i]) - m) / o.temperature);
  for (std::size_t i = 0; i < n; ++i) {
    const long double u = (static_cast<long double>(x[i]) - m) / o.temperature;
    if (x[i] == -inf)
      y[i] = log ? -inf : 0.0L;
    else
      y[i] = log ? u - std::log(s) : std::exp(u) / s;
  }
  return y;
}

// dx = J^T dy for y = softmax(x) (log = false) or z = log_softmax(x) (log = true), from the
// long-double forward output.
inline std::vector<long double> backward(std::vector<long double> const& y,
                                         std::vector<long double> const& dy, bool log,
                                         options const& o = {}) {
  const std::size_t n = y.size();
  std::vector<long double> dx(n);
  long double acc = 0;
  for (std::size_t i = 0; i < n; ++i) acc += log ? dy[i] : dy[i] * y[i];
  for (std::size_t i = 0; i < n; ++i)
    dx[i] =
        log ? (dy[i] - std::exp(y[i]) * acc) / o.temperature : y[i] * (dy[i] - acc) / o.temperature;
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
