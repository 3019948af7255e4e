#pragma once
// Scalar long-double reference for top-k softmax and its backward pass, straight from the
// definition (docs/topk_softmax.md): S = the first k entries in the order (value descending,
// index ascending), masked entries (-inf) after every finite one; y_i = exp(x_i - m) /
// Σ_{j∈S} exp(x_j - m) on S (m the row maximum), 0 elsewhere. Sorts the row: for tests only.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

// The selected set as a mask (true: in S), and whether the row is a NaN row (k = 0, a NaN or
// +inf, every entry -inf). Masked entries chosen to fill S are in it (they output 0).
template <class T>
bool topk_select(const T* x, std::size_t n, std::size_t k, std::vector<bool>& in_set) {
  in_set.assign(n, false);
  if (k == 0) return false;
  bool any_finite = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == INFINITY) return false;
    any_finite = any_finite || x[i] != -INFINITY;
  }
  if (!any_finite) return false;
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  // Stable: equal values keep index order, so the lower index comes first.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return static_cast<long double>(x[a]) > static_cast<long double>(x[b]);
  });
  for (std::size_t j = 0; j < k && j < n; ++j) in_set[order[j]] = true;
  return true;
}

// y of one row; NaN row for k = 0, NaN, +inf or all -inf.
template <class T>
std::vector<long double> topk_softmax(const T* x, std::size_t n, std::size_t k) {
  std::vector<bool> in_set;
  std::vector<long double> y(n, NAN);
  if (!topk_select(x, n, k, in_set)) return y;
  long double m = -INFINITY;
  for (std::size_t i = 0; i < n; ++i)
    if (in_set[i]) m = std::max(m, static_cast<long double>(x[i]));
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (in_set[i]) sum += std::exp(static_cast<long double>(x[i]) - m);
  for (std::size_t i = 0; i < n; ++i)
    y[i] = in_set[i] ? std::exp(static_cast<long double>(x[i]) - m) / sum : 0.0L;
  return y;
}

// dx = [i ∈ S]·y_i·(dy_i - Σ_{j∈S} dy_j·y_j) for y = topk_softmax(x), from x (the set held
// constant); NaN where y is.
template <class T>
std::vector<long double> topk_softmax_backward(const T* x, const T* dy, std::size_t n,
                                               std::size_t k) {
  std::vector<bool> in_set;
  const std::vector<long double> y = topk_softmax(x, n, k);
  std::vector<long double> dx(n, NAN);
  if (!topk_select(x, n, k, in_set)) return dx;
  long double dot = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (in_set[i]) dot += static_cast<long double>(dy[i]) * y[i];
  for (std::size_t i = 0; i < n; ++i)
    dx[i] = in_set[i] ? y[i] * (static_cast<long double>(dy[i]) - dot) : 0.0L;
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
