#pragma once
// Scalar long-double reference for 1.5-entmax, its backward pass and the entmax loss, written
// straight from the definition with the sort-based algorithm (docs/entmax15.md) and the bad-input
// contract (docs/edge_cases.md). The ground truth for tests; slow and simple on purpose.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct entmax15_result {
  std::vector<long double> y;
  long double tau = NAN;          // unshifted threshold: y = [x/2 - tau]_+^2; NaN for special rows
  long double tau_shifted = NAN;  // threshold of z = (x - m)/2
  std::size_t support_size = 0;
  bool special = false;  // empty, all masked, NaN or +inf
};

// z = (x - m)/2 over the finite entries, sorted descending; for each prefix of k entries, with
// mean mu_k and centred sum of squares M_k, tau_k = mu_k - sqrt(max((1 - M_k)/k, 0)); the support
// is the longest prefix with z_(k) > tau_k, tau = tau_{k*}; y = [z - tau]_+^2.
template <class T>
entmax15_result entmax15(const T* x, std::size_t n) {
  entmax15_result r;
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
    if (x[i] != -inf) z.push_back((static_cast<long double>(x[i]) - m) / 2);
  std::sort(z.begin(), z.end(), std::greater<long double>());
  long double mean = 0, squares = 0, tau = -1;
  std::size_t k = 0;
  for (std::size_t j = 0; j < z.size(); ++j) {
    const long double count = static_cast<long double>(j + 1);
    const long double delta = z[j] - mean;
    mean += delta / count;
    squares += delta * (z[j] - mean);
    const long double spread = (1 - squares) / count;
    const long double t = mean - std::sqrt(spread > 0 ? spread : 0.0L);
    if (!(z[j] > t)) break;
    k = j + 1;
    tau = t;
  }
  r.tau_shifted = tau;
  r.tau = m / 2 + tau;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf) continue;
    const long double u = (static_cast<long double>(x[i]) - m) / 2 - tau;
    r.y[i] = u > 0 ? u * u : 0;
    r.support_size += u > 0;
  }
  (void)k;
  return r;
}

// dx = s·dy - s·(<s, dy>/sum s), s = sqrt(y) where y > 0 (0 elsewhere).
inline std::vector<long double> entmax15_backward(std::vector<long double> const& y,
                                                  std::vector<long double> const& dy) {
  const std::size_t n = y.size();
  std::vector<long double> dx(n, 0.0L);
  long double weighted = 0, total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(y[i])) {
      for (auto& v : dx) v = NAN;
      return dx;
    }
    if (y[i] > 0) {
      const long double s = std::sqrt(y[i]);
      weighted += s * dy[i];
      total += s;
    }
  }
  if (total == 0) return dx;
  const long double q = weighted / total;
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0 ? std::sqrt(y[i]) * (dy[i] - q) : 0;
  return dx;
}

// L = (1 - sum y^1.5)/0.75 + <y - e_t, x - m> (shift invariant), over the support only.
// Masked target +inf; special row NaN.
template <class T>
long double entmax15_loss(const T* x, std::size_t n, std::size_t target) {
  if (target >= n) return NAN;
  const entmax15_result r = entmax15(x, n);
  if (r.special) return NAN;
  if (x[target] == -HUGE_VALL) return HUGE_VALL;
  long double m = -HUGE_VALL;
  for (std::size_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  long double cubes = 0, inner = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(r.y[i] > 0)) continue;
    cubes += r.y[i] * std::sqrt(r.y[i]);
    inner += r.y[i] * (static_cast<long double>(x[i]) - m);
  }
  return (1 - cubes) / 0.75L + inner - (static_cast<long double>(x[target]) - m);
}

}  // namespace reference
SMAX_END_NAMESPACE
