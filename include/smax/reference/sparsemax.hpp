#pragma once
// Scalar long-double reference for sparsemax, its backward pass and the sparsemax loss, written
// straight from the definition with the sort-based algorithm (docs/sparsemax.md) and the bad-input
// contract (docs/edge_cases.md). The ground
// truth for tests; slow and simple on purpose.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct sparsemax_result {
  std::vector<long double> y;
  long double tau = NAN;          // unshifted threshold; NaN for special rows
  long double tau_shifted = NAN;  // tau - max
  std::size_t support_size = 0;
  bool special = false;  // empty, all masked, NaN or +inf
};

// Sort descending, k* = max{k : 1 + k·z_(k) > sum_{j<=k} z_(j)}, tau = (sum_{j<=k*} z_(j) - 1)/k*,
// y = max(z - tau, 0), on z = x - m over the finite entries.
template <class T>
sparsemax_result sparsemax(const T* x, std::size_t n) {
  sparsemax_result r;
  r.y.assign(n, 0.0L);
  if (n == 0) {
    r.special = true;
    return r;
  }
  const long double inf = HUGE_VALL;
  long double m = -inf;
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) bad = true;
    if (v > m) m = v;
  }
  if (bad || m == -inf) {
    for (auto& v : r.y) v = NAN;
    r.special = true;
    return r;
  }
  std::vector<long double> z;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -inf) z.push_back(static_cast<long double>(x[i]) - m);
  std::sort(z.begin(), z.end(), std::greater<long double>());
  long double s = 0, best_sum = 0;
  std::size_t k = 0;
  for (std::size_t j = 0; j < z.size(); ++j) {
    s += z[j];
    if (1 + static_cast<long double>(j + 1) * z[j] > s) {
      k = j + 1;
      best_sum = s;
    }
  }
  const long double tau = (best_sum - 1) / static_cast<long double>(k);
  r.tau_shifted = tau;
  r.tau = m + tau;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf) continue;
    const long double v = (static_cast<long double>(x[i]) - m) - tau;
    r.y[i] = v > 0 ? v : 0;
    r.support_size += v > 0;
  }
  return r;
}

// dx_i = s_i·(dy_i - mean_S dy), s = [y > 0].
inline std::vector<long double> sparsemax_backward(std::vector<long double> const& y,
                                                   std::vector<long double> const& dy) {
  const std::size_t n = y.size();
  std::vector<long double> dx(n, 0.0L);
  long double sum = 0;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(y[i])) {
      for (auto& v : dx) v = NAN;
      return dx;
    }
    if (y[i] > 0) {
      sum += dy[i];
      ++count;
    }
  }
  if (count == 0) return dx;
  const long double mean = sum / static_cast<long double>(count);
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0 ? dy[i] - mean : 0;
  return dx;
}

// L = -z_t + ½·sum_S (z_j² - tau²) + ½ on z = x - m. Masked target +inf; special row NaN.
// Evaluated as -z_t + tau + ½·(1 + sum_S (z_j - tau)²), equal where sum_S (z_j - tau) = 1 and
// stationary in tau: the rounding of tau (a long-double sum of up to n entries) enters squared,
// where the first form multiplies it by |S|·|tau| (thousands of entries left 1e-16 of error,
// the size of double's bound). The sum is compensated.
template <class T>
long double sparsemax_loss(const T* x, std::size_t n, std::size_t target) {
  if (target >= n) return NAN;
  const sparsemax_result r = sparsemax(x, n);
  if (r.special) return NAN;
  if (x[target] == -HUGE_VALL) return HUGE_VALL;
  long double m = -HUGE_VALL;
  for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  long double sum = 0, compensation = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(r.y[i] > 0)) continue;
    const long double d = (static_cast<long double>(x[i]) - m) - r.tau_shifted;
    const long double v = d * d, t = sum + v;
    compensation += sum >= v ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  return (r.tau_shifted - (static_cast<long double>(x[target]) - m)) +
         0.5L * (1 + (sum + compensation));
}

}  // namespace reference
SMAX_END_NAMESPACE
