#pragma once
// Scalar long-double reference for α-entmax (docs/entmax_bisect.md): the threshold by bisection
// to long double's precision, the exact sort-based 1.5-entmax, and the backward pass, written
// from the definition with the bad-input contract (docs/edge_cases.md). The ground truth for
// tests; slow and simple on purpose.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct entmax_bisect_result {
  std::vector<long double> y;
  std::vector<long double> z;     // (α - 1)(x - m); -inf where masked
  long double tau = NAN;          // unshifted: y = [(α - 1)x - tau]_+^(1/(α - 1))
  long double tau_shifted = NAN;  // the threshold of z
  std::size_t support_size = 0;   // #{z > tau_shifted}
  bool special = false;           // empty, all masked, NaN or +inf
};

namespace entmax_detail {

inline long double power(long double u, long double p) {
  if (!(u > 0)) return 0;
  if (p == 1) return u;
  if (p == 2) return u * u;
  if (p == 0.5L) return std::sqrt(u);
  return std::pow(u, p);
}

// The row's z and maximum; false for a special row (r filled with NaN).
template <class T>
bool shifted(const T* x, std::size_t n, long double alpha, entmax_bisect_result& r,
             long double* max) {
  const long double inf = HUGE_VALL;
  r.y.assign(n, 0.0L);
  r.z.assign(n, -inf);
  long double m = -inf;
  bool bad = n == 0 || !(alpha > 1) || !std::isfinite(alpha);
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == inf) bad = true;
    if (v > m) m = v;
  }
  if (bad || m == -inf) {
    for (auto& v : r.y) v = NAN;
    r.special = true;
    return false;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -static_cast<T>(inf)) r.z[i] = (alpha - 1) * (static_cast<long double>(x[i]) - m);
  *max = m;
  return true;
}

}  // namespace entmax_detail

// y_i = [z_i - t]_+^(1/(α - 1)), z = (α - 1)(x - m), sum(y) = 1: t bisected on [-1, 0] (in double
// first, then in long double from a bracket around the double result that is checked to hold
// the root) until the midpoint is no longer strictly inside the bracket (long double's
// precision, at most 66 bits), then y divided by its sum (a change at the level of long double's
// rounding).
template <class T>
entmax_bisect_result entmax_bisect(const T* x, std::size_t n, long double alpha) {
  entmax_bisect_result r;
  long double m = 0;
  if (!entmax_detail::shifted(x, n, alpha, r, &m)) return r;
  const long double p = 1 / (alpha - 1);
  std::vector<long double> c;  // the candidates: z > -1 (t >= -1)
  for (long double v : r.z)
    if (v > -1) c.push_back(v);
  auto total = [&](long double t) {
    long double s = 0;
    for (long double v : c) s += entmax_detail::power(v - t, p);
    return s;
  };
  // First in double (cheaper powers), then in long double from that bracket widened until it
  // holds the root of the long-double sum.
  const double pd = static_cast<double>(p);
  auto total_double = [&](double t) {
    double s = 0;
    for (long double v : c) {
      const double u = static_cast<double>(v) - t;
      s += u > 0 ? (pd == 1 ? u : pd == 2 ? u * u : std::pow(u, pd)) : 0.0;
    }
    return s;
  };
  double dlo = -1, dhi = 0;
  for (int i = 0; i < 2000; ++i) {
    const double mid = dlo + (dhi - dlo) / 2;
    if (!(mid > dlo && mid < dhi)) break;
    (total_double(mid) >= 1 ? dlo : dhi) = mid;
  }
  long double width = 1e-12L * (1 - dlo);
  long double lo = dlo - width, hi = dhi + width;
  while (lo > -1 && total(lo) < 1) lo = std::fmax(-1.0L, lo - (width *= 16));
  while (hi < 0 && total(hi) >= 1) hi = std::fmin(0.0L, hi + (width *= 16));
  if (lo < -1) lo = -1;
  if (hi > 0) hi = 0;
  for (int i = 0; i < 20000; ++i) {  // total(lo) >= 1 > total(hi)
    const long double mid = lo + (hi - lo) / 2;
    if (!(mid > lo && mid < hi)) break;
    // 66 bits are enough for a reference of double results; where long double is wider (quad
    // precision, in software on AArch64) the bisection stops there instead of at its own precision.
    if (hi - lo <= 0x1p-66L * std::fmax(std::fabs(lo), std::fabs(hi))) break;
    (total(mid) >= 1 ? lo : hi) = mid;
  }
  const long double t = lo;
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    r.y[i] = entmax_detail::power(r.z[i] - t, p);
    sum += r.y[i];
    r.support_size += r.z[i] > t;
  }
  for (auto& v : r.y) v /= sum;
  r.tau_shifted = t;
  r.tau = (alpha - 1) * m + t;
  return r;
}

// Exact 1.5-entmax by sorting: z = (x - m)/2 sorted descending; for k = 1..n with the running
// means M_k of z and Q_k of z², ss_k = k(Q_k - M_k²), t_k = M_k - sqrt(max((1 - ss_k)/k, 0));
// the support size is k* = #{k : t_k <= z_(k)}, t = t_(k*), y = [z - t]_+².
template <class T>
entmax_bisect_result entmax15_exact(const T* x, std::size_t n) {
  entmax_bisect_result r;
  long double m = 0;
  if (!entmax_detail::shifted(x, n, 1.5L, r, &m)) return r;
  std::vector<long double> z;
  for (long double v : r.z)
    if (std::isfinite(v)) z.push_back(v);
  std::sort(z.begin(), z.end(), std::greater<long double>());
  long double s = 0, q = 0, best = 0;
  std::size_t support = 0;
  for (std::size_t k = 1; k <= z.size(); ++k) {
    s += z[k - 1];
    q += z[k - 1] * z[k - 1];
    const long double kk = static_cast<long double>(k);
    const long double mean = s / kk, ss = kk * (q / kk - mean * mean);
    const long double d = (1 - ss) / kk;
    const long double t = mean - std::sqrt(d > 0 ? d : 0);
    if (t <= z[k - 1]) {
      ++support;
      best = t;
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    const long double u = r.z[i] - best;
    r.y[i] = u > 0 ? u * u : 0;
    r.support_size += u > 0;
  }
  r.tau_shifted = best;
  r.tau = m / 2 + best;
  return r;
}

// dx = s ⊙ (dy - <s, dy>/sum s), s_i = y_i^(2-α) where y_i > 0 (0 elsewhere), from the forward
// output y. A NaN in y gives a NaN row; sum s = 0 gives dx = 0.
template <class T>
std::vector<long double> entmax_bisect_backward(const T* y, const T* dy, std::size_t n,
                                                long double alpha) {
  std::vector<long double> s(n, 0.0L), dx(n, 0.0L);
  long double sum = 0, dot = 0;
  bool bad = !(alpha > 1) || !std::isfinite(alpha);
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(y[i])) bad = true;
    if (y[i] > 0) s[i] = std::pow(static_cast<long double>(y[i]), 2 - alpha);
    sum += s[i];
    dot += s[i] * dy[i];
  }
  if (bad) {
    for (auto& v : dx) v = NAN;
    return dx;
  }
  const long double c = sum > 0 ? dot / sum : 0;
  for (std::size_t i = 0; i < n; ++i) dx[i] = s[i] * (dy[i] - c);
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
