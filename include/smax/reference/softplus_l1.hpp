#pragma once
// Scalar long-double reference for softplus + l1 with the length scale and its backward pass,
// straight from the definition (docs/softplus_l1.md): y_i = softplus(λ·x_i)/Σ_j softplus(λ·x_j),
// softplus(u) = log(1 + e^u). λ is given (the caller computes it from n and base).

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// softplus(u) = log(1 + e^u), without overflow for large u.
inline long double softplus(long double u) {
  return u > 0 ? u + std::log1p(std::exp(-u)) : std::log1p(std::exp(u));
}
// σ(u)/softplus(u), which tends to 1 as u -> -inf.
inline long double softplus_ratio(long double u) {
  if (u < -10000) return 1;
  const long double s = 1 / (1 + std::exp(-u));
  return s / softplus(u);
}

// y of one row at scale λ: NaN row for NaN, +inf or all -inf (0 with zero_masked_rows); λ = 0:
// uniform over the unmasked entries.
template <class T>
std::vector<long double> softplus_l1(const T* x, std::size_t n, long double lambda,
                                     bool zero_masked_rows = false) {
  std::vector<long double> out(n);
  bool bad = false, any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == INFINITY) bad = true;
    if (v != -INFINITY) any = true;
  }
  if (bad || !any || std::isnan(lambda)) {
    for (auto& o : out) o = !bad && !any && zero_masked_rows ? 0 : NAN;
    return out;
  }
  // Terms relative to the largest (log-domain difference), so that no term over- or underflows
  // long double whatever λ·x is.
  std::vector<long double> log_s(n);
  long double log_max = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) continue;
    const long double u = lambda * static_cast<long double>(x[i]);
    // log softplus(u): u + log1p(e^-u)·... for u > 0; log(log1p(e^u)) = u + log(log1p(e^u)/e^u).
    long double l;
    if (u > 0)
      l = std::log(u + std::log1p(std::exp(-u)));
    else if (u > -40)
      l = std::log(std::log1p(std::exp(u)));
    else
      l = u + std::log1p(-std::exp(u) / 2);  // log1p(e^u)/e^u = 1 - e^u/2 + ...
    log_s[i] = l;
    if (l > log_max) log_max = l;
  }
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY) sum += std::exp(log_s[i] - log_max);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = x[i] == -INFINITY ? 0 : std::exp(log_s[i] - log_max) / sum;
  return out;
}

// dx of one row from x and dy (y recomputed in long double): dx = λ·y·r(λx)·(dy - <dy, y>),
// r = σ/softplus (= λ·σ(u)·(dy - <dy, y>)/S).
template <class T>
std::vector<long double> softplus_l1_backward(const T* x, const T* dy, std::size_t n,
                                              long double lambda) {
  const std::vector<long double> y = softplus_l1(x, n, lambda);
  long double dot = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (y[i] != 0) dot += y[i] * dy[i];
  std::vector<long double> dx(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY || lambda == 0) {
      dx[i] = std::isnan(y[i]) ? y[i] : 0;
      continue;
    }
    dx[i] = lambda * y[i] * softplus_ratio(lambda * static_cast<long double>(x[i])) * (dy[i] - dot);
  }
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
