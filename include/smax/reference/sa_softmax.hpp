#pragma once
// Scalar long-double reference for Self-Adjust Softmax and its backward pass, straight from the
// definition (docs/sa_softmax.md): y_i = w_i·p_i, p = softmax(x), w_i = x_i (plain) or
// (x_i - a)/(c - a) with a = min(x_min, 0), c = max(0, x_max) over the unmasked entries.

#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// What the definition needs of a row: p, w, the extremes and their first indices.
struct sa_softmax_parts {
  bool nan_row = false;  // NaN, +inf or all masked
  std::vector<long double> p, w;
  long double a = 0, c = 0, x_min = 0, x_max = 0;
  std::size_t first_min = 0, first_max = 0;
};

template <class T>
sa_softmax_parts sa_softmax_parts_of(const T* x, std::size_t n, bool normalized) {
  sa_softmax_parts r;
  r.p.assign(n, 0);
  r.w.assign(n, 0);
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == INFINITY) r.nan_row = true;
    if (v == -INFINITY) continue;
    if (!any || v < r.x_min) r.x_min = v, r.first_min = i;
    if (!any || v > r.x_max) r.x_max = v, r.first_max = i;
    any = true;
  }
  if (!any) r.nan_row = true;
  if (r.nan_row) return r;
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY) sum += std::exp(static_cast<long double>(x[i]) - r.x_max);
  r.a = r.x_min < 0 ? r.x_min : 0;
  r.c = r.x_max > 0 ? r.x_max : 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) continue;
    r.p[i] = std::exp(static_cast<long double>(x[i]) - r.x_max) / sum;
    r.w[i] = !normalized  ? static_cast<long double>(x[i])
             : r.c == r.a ? 0
                          : (static_cast<long double>(x[i]) - r.a) / (r.c - r.a);
  }
  return r;
}

// y of one row; NaN row for NaN, +inf or all -inf.
template <class T>
std::vector<long double> sa_softmax(const T* x, std::size_t n, bool normalized) {
  const sa_softmax_parts r = sa_softmax_parts_of(x, n, normalized);
  std::vector<long double> y(n, NAN);
  if (r.nan_row) return y;
  for (std::size_t i = 0; i < n; ++i) y[i] = r.w[i] * r.p[i];
  return y;
}

// dx of one row from x and dy (y recomputed): plain dx_k = p_k·(dy_k·(1 + x_k) - <dy, y>);
// normalised dx_k = dy_k·p_k/D + p_k·(dy_k·w_k - B) - [k = argmin, x_min < 0]·(A - B)/D
// - [k = argmax, x_max > 0]·B/D with A = <dy, p>, B = <dy, y>, D = c - a (0 where D = 0).
template <class T>
std::vector<long double> sa_softmax_backward(const T* x, const T* dy, std::size_t n,
                                             bool normalized) {
  const sa_softmax_parts r = sa_softmax_parts_of(x, n, normalized);
  std::vector<long double> dx(n, NAN);
  if (r.nan_row) return dx;
  long double A = 0, B = 0;
  for (std::size_t i = 0; i < n; ++i) {
    A += dy[i] * r.p[i];
    B += dy[i] * r.p[i] * r.w[i];
  }
  const long double D = r.c - r.a;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -INFINITY) {
      dx[i] = 0;
      continue;
    }
    if (!normalized) {
      dx[i] = r.p[i] * (dy[i] * (1 + static_cast<long double>(x[i])) - B);
      continue;
    }
    if (D == 0) {
      dx[i] = 0;
      continue;
    }
    dx[i] = dy[i] * r.p[i] / D + r.p[i] * (dy[i] * r.w[i] - B);
    if (i == r.first_min && r.x_min < 0) dx[i] -= (A - B) / D;
    if (i == r.first_max && r.x_max > 0) dx[i] -= B / D;
  }
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
