#pragma once
// Scalar long-double reference for MultiMax and its backward pass with the parameter gradients,
// written straight from the definition (docs/multimax.md) and the bad-input contract
// (docs/edge_cases.md):
// masked entries (-inf) stay masked after the modulation (σ is never applied to them), a NaN or
// +inf anywhere or a fully masked row gives a NaN row. The ground truth for tests; slow and
// simple on purpose.

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct multimax_parameters {
  std::array<long double, 4> t{};  // t0..t3
  std::array<long double, 4> r{};  // r0..r3
};

inline long double multimax_relu(long double u) {
  return u > 0 ? u : 0.0L;
}

// σ(x) = x + t0·relu(r0 - x) + t1·relu(x - r1) + t2·relu(r2 - x)² + t3·relu(x - r3)²
inline long double multimax_sigma(long double x, multimax_parameters const& p) {
  const long double b0 = multimax_relu(p.r[0] - x), a1 = multimax_relu(x - p.r[1]);
  const long double b2 = multimax_relu(p.r[2] - x), a3 = multimax_relu(x - p.r[3]);
  return x + p.t[0] * b0 + p.t[1] * a1 + p.t[2] * b2 * b2 + p.t[3] * a3 * a3;
}

// σ'(x) = 1 - t0·[x < r0] + t1·[x > r1] - 2t2·relu(r2 - x) + 2t3·relu(x - r3)  (strict kinks)
inline long double multimax_slope(long double x, multimax_parameters const& p) {
  return 1 - p.t[0] * (x < p.r[0] ? 1 : 0) + p.t[1] * (x > p.r[1] ? 1 : 0) -
         2 * p.t[2] * multimax_relu(p.r[2] - x) + 2 * p.t[3] * multimax_relu(x - p.r[3]);
}

// y = softmax(σ(x)) over the unmasked entries of x[0..n), in long double.
template <class X>
std::vector<long double> multimax(const X* x, std::size_t n, multimax_parameters const& p) {
  const long double inf = HUGE_VALL, nan = NAN;
  std::vector<long double> y(n);
  if (n == 0) return y;
  bool special = false;
  for (int k = 0; k < 4; ++k) special = special || !std::isfinite(p.t[k]) || !std::isfinite(p.r[k]);
  long double m = -inf;
  std::vector<long double> z(n, -inf);
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) special = true;
    if (v == -inf) continue;  // masked: stays -inf after the modulation (§0.2)
    z[i] = multimax_sigma(v, p);
    if (z[i] > m) m = z[i];
  }
  if (special || m == -inf) {  // E4-E6 (and parameters that are not finite)
    for (auto& v : y) v = nan;
    return y;
  }
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += std::exp(z[i] - m);  // exp(-inf) = 0
  for (std::size_t i = 0; i < n; ++i) y[i] = std::exp(z[i] - m) / s;
  return y;
}

struct multimax_gradients {
  std::vector<long double> dx;
  std::array<long double, 4> dt{}, dr{};
};

// The VJP (docs/multimax.md) from the forward output y: gz = y·(dy - <dy, y>), dx = gz·σ'(x) (0 at
// masked entries), and the parameter gradients summed over the unmasked entries.
template <class X>
multimax_gradients multimax_backward(const X* x, std::vector<long double> const& y,
                                     std::vector<long double> const& dy,
                                     multimax_parameters const& p) {
  const std::size_t n = y.size();
  multimax_gradients g;
  g.dx.assign(n, 0.0L);
  long double dot = 0;
  for (std::size_t i = 0; i < n; ++i) dot += dy[i] * y[i];
  long double s_b0 = 0, s_ib0 = 0, s_a1 = 0, s_ia1 = 0, s_b2 = 0, s_b2q = 0, s_a3 = 0, s_a3q = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double xi = x[i];
    const long double gz = y[i] * (dy[i] - dot);
    if (xi == -HUGE_VALL) {
      g.dx[i] = gz * 0;  // 0, or NaN in a NaN row
      continue;
    }
    g.dx[i] = gz * multimax_slope(xi, p);
    const long double b0 = multimax_relu(p.r[0] - xi), a1 = multimax_relu(xi - p.r[1]);
    const long double b2 = multimax_relu(p.r[2] - xi), a3 = multimax_relu(xi - p.r[3]);
    s_b0 += gz * b0;
    s_ib0 += xi < p.r[0] ? gz : 0;
    s_a1 += gz * a1;
    s_ia1 += xi > p.r[1] ? gz : 0;
    s_b2 += gz * b2;
    s_b2q += gz * b2 * b2;
    s_a3 += gz * a3;
    s_a3q += gz * a3 * a3;
  }
  g.dt = {s_b0, s_a1, s_b2q, s_a3q};
  g.dr = {p.t[0] * s_ib0, -p.t[1] * s_ia1, 2 * p.t[2] * s_b2, -2 * p.t[3] * s_a3};
  return g;
}

}  // namespace reference
SMAX_END_NAMESPACE
