#pragma once
// Scalar long-double reference for fused softmax + top-K (docs/softmax_topk.md), from the
// definition rather than the kernel's algorithm: the full softmax(x/T) in long double, the
// entries other than -inf stably sorted by value descending (so ties keep the lower index first),
// the first min(k, count) of them, padding (0, -1); and the VJP
// dx = (1/T)·y ⊙ (g - <g, y>) with g the upstream gradient scattered to the indices.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct softmax_topk_result {
  std::vector<long double> values;
  std::vector<std::int64_t> indices;
};

namespace softmax_topk_detail {

// softmax(x/T) in long double; empty when the row holds NaN or +inf (or T is not finite and > 0),
// all zeros when every entry is -inf.
template <class T>
bool full_softmax(const T* x, std::size_t n, long double t, std::vector<long double>& y) {
  y.assign(n, 0.0L);
  if (!(t > 0) || !std::isfinite(t)) return false;
  long double m = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (std::isnan(v) || v == INFINITY) return false;
    m = std::max(m, v);
  }
  if (m == -INFINITY) return true;
  long double d = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY) d += std::exp((static_cast<long double>(x[i]) - m) / t);
  for (std::size_t i = 0; i < n; ++i)
    y[i] = x[i] == -INFINITY ? 0.0L : std::exp((static_cast<long double>(x[i]) - m) / t) / d;
  return true;
}

}  // namespace softmax_topk_detail

template <class T>
softmax_topk_result softmax_topk(const T* x, std::size_t n, std::size_t k,
                                 long double temperature = 1) {
  softmax_topk_result r{std::vector<long double>(k, 0.0L), std::vector<std::int64_t>(k, -1)};
  std::vector<long double> y;
  if (!softmax_topk_detail::full_softmax(x, n, temperature, y)) {
    std::fill(r.values.begin(), r.values.end(), static_cast<long double>(NAN));
    return r;
  }
  std::vector<std::int64_t> order;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -INFINITY) order.push_back(static_cast<std::int64_t>(i));
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return x[a] > x[b]; });
  for (std::size_t j = 0; j < k && j < order.size(); ++j) {
    r.indices[j] = order[j];
    r.values[j] = y[static_cast<std::size_t>(order[j])];
  }
  return r;
}

// dx of one row given the selected indices (-1 skipped) and their upstream gradient.
template <class T>
std::vector<long double> softmax_topk_backward(const T* x, std::size_t n, std::size_t k,
                                               const std::int64_t* indices, const T* dvalues,
                                               long double temperature = 1) {
  std::vector<long double> y;
  if (!softmax_topk_detail::full_softmax(x, n, temperature, y))
    return std::vector<long double>(n, static_cast<long double>(NAN));
  std::vector<long double> g(n, 0.0L);
  for (std::size_t j = 0; j < k; ++j)
    if (indices[j] >= 0 && static_cast<std::size_t>(indices[j]) < n)
      g[static_cast<std::size_t>(indices[j])] += dvalues[j];
  long double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += g[i] * y[i];
  std::vector<long double> dx(n);
  for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] * (g[i] - s) / temperature;
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
