#pragma once
// Scalar long-double reference for adaptive-temperature softmax and its backward pass, straight
// from the definition (docs/adaptive_softmax.md): p = softmax(x), H = -Σ p_i·log(p_i + 1e-9),
// β = max(P(H), 1) when H > 0.5 (else 1), y = softmax(β·x), with P the quartic fit of the paper.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// The fit of the paper, highest degree first, and its derivative.
inline long double adaptive_polynomial(long double h) {
  return (((-0.037L * h + 0.481L) * h - 2.3L) * h + 4.917L) * h - 1.791L;
}
inline long double adaptive_polynomial_slope(long double h) {
  return ((-0.148L * h + 1.443L) * h - 4.6L) * h + 4.917L;
}

// What the definition needs of a row: p, H, β, and y = softmax(β·x).
struct adaptive_softmax_parts {
  bool nan_row = false;  // NaN, +inf or all masked
  std::vector<long double> p, y;
  long double max = 0, entropy = 0, beta = 1;
  bool active = false;  // H > 0.5 and P(H) > 1
};

template <class T>
adaptive_softmax_parts adaptive_softmax_parts_of(const T* x, std::size_t n) {
  adaptive_softmax_parts r;
  r.p.assign(n, 0);
  r.y.assign(n, 0);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == INFINITY) r.nan_row = true;
    if (v == -INFINITY) continue;
    if (!any || v > r.max) r.max = v;
    any = true;
  }
  if (!any) r.nan_row = true;
  if (r.nan_row) return r;
  // Each exponential once (kept in p and y before the division): the reference runs under
  // emulation too, where long double is software.
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY) sum += r.p[i] = std::exp(static_cast<long double>(x[i]) - r.max);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) continue;
    r.p[i] /= sum;
    r.entropy -= r.p[i] * std::log(r.p[i] + 1e-9L);
  }
  const long double poly = adaptive_polynomial(r.entropy);
  r.active = r.entropy > 0.5L && poly > 1;
  r.beta = r.active ? poly : 1;
  long double sum2 = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY)
      sum2 += r.y[i] = std::exp(r.beta * (static_cast<long double>(x[i]) - r.max));
  for (std::size_t i = 0; i < n; ++i) r.y[i] /= sum2;
  return r;
}

// y of one row; NaN row for NaN, +inf or all -inf.
template <class T>
std::vector<long double> adaptive_softmax(const T* x, std::size_t n) {
  adaptive_softmax_parts r = adaptive_softmax_parts_of(x, n);
  if (r.nan_row) return std::vector<long double>(n, NAN);
  return r.y;
}

// dx of one row from x and dy (p, H, β and y recomputed), the gradient flowing through β:
// gu = y ⊙ (dy - <dy, y>), dx = β·gu, and when β is active, with dβ = <gu, x - max> (= <gu, x>,
// since Σ gu = 0) and dH = dβ·P'(H): g_i = dH·(-log(p_i + 1e-9) - p_i/(p_i + 1e-9)),
// dx += p ⊙ (g - <g, p>). Masked entries get 0.
template <class T>
std::vector<long double> adaptive_softmax_backward(const T* x, const T* dy, std::size_t n) {
  const adaptive_softmax_parts r = adaptive_softmax_parts_of(x, n);
  std::vector<long double> dx(n, NAN);
  if (r.nan_row) return dx;
  long double c = 0;
  for (std::size_t i = 0; i < n; ++i) c += dy[i] * r.y[i];
  long double dbeta = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double gu = r.y[i] * (dy[i] - c);
    dx[i] = r.beta * gu;
    if (x[i] != -INFINITY) dbeta += gu * (static_cast<long double>(x[i]) - r.max);
  }
  if (!r.active) return dx;
  const long double dh = dbeta * adaptive_polynomial_slope(r.entropy);
  std::vector<long double> g(n, 0);
  long double gp = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) continue;
    g[i] = dh * (-std::log(r.p[i] + 1e-9L) - r.p[i] / (r.p[i] + 1e-9L));
    gp += g[i] * r.p[i];
  }
  for (std::size_t i = 0; i < n; ++i) dx[i] += r.p[i] * (g[i] - gp);
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
