#pragma once
// Scalar long-double reference for fused cross-entropy (docs/cross_entropy.md), from the
// definition rather than the kernel's algorithm: with m the row maximum, d = Σ exp(x - m),
// lse = m + log d, p = exp(x - m)/d, q = (1 - ε)·onehot(t) + ε/C,
//   loss = (1 - ε)·(lse - x_t) + ε·(lse - mean(x)),     dx = (p - q)·g,
// and the bad-input rules of smax/cross_entropy.hpp (ignored rows 0, invalid targets, NaN, +inf
// and all-masked rows NaN, a non-finite g a NaN dx, smoothing outside [0, 1] NaN).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct cross_entropy_result {
  long double loss;
  std::vector<long double> dx;
  std::vector<long double> p;  // softmax(x) (empty for rows without one)
};

// One row of n logits with target t and upstream gradient g.
template <class T>
cross_entropy_result cross_entropy(const T* x, std::size_t n, std::int64_t t, long double g = 1,
                                   std::int64_t ignore_index = -100,
                                   long double label_smoothing = 0) {
  const long double nan = NAN, inf = INFINITY, eps = label_smoothing;
  cross_entropy_result r{0.0L, std::vector<long double>(n, 0.0L), {}};
  auto bad = [&] {
    r.loss = nan;
    r.dx.assign(n, nan);
    return r;
  };
  if (!(eps >= 0 && eps <= 1)) return bad();
  if (t == ignore_index) return r;
  if (t < 0 || static_cast<std::uint64_t>(t) >= n) return bad();
  long double m = -inf, total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) return bad();
    if (v > m) m = v;
    total += v;
  }
  if (m == -inf) return bad();
  long double d = 0;
  r.p.resize(n);
  for (std::size_t i = 0; i < n; ++i) d += r.p[i] = std::exp(static_cast<long double>(x[i]) - m);
  const long double log_d = std::log(d);
  const long double xt = x[t];
  r.loss = log_d;
  if (eps != 1) r.loss += (1 - eps) * (m - xt);
  if (eps != 0) r.loss += eps * (m - total / static_cast<long double>(n));
  for (auto& p : r.p) p /= d;
  if (!std::isfinite(g)) {
    r.dx.assign(n, nan);
    return r;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const long double q = (static_cast<std::int64_t>(i) == t ? 1 - eps : 0) + eps / n;
    r.dx[i] = (r.p[i] - q) * g;
  }
  return r;
}

}  // namespace reference
SMAX_END_NAMESPACE
