#pragma once
// Three-pass ("safe") softmax, reloading form (spec §3): max; exp + store + sum fused in one pass;
// scale in place by the reciprocal of the sum. One exp per element; the fastest form while the
// row stays in cache. log-softmax: max; exp + sum; (x - m)/T - log s.

#include <cmath>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

// Rows of at most four registers: the same arithmetic, but the row stays in registers, so the
// three passes cost no loads, loops or calls (short attention rows are dominated by those).
template <class A, class T, bool Scaled>
inline void short_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -__builtin_huge_val();
  const std::size_t full = n / width, tail = n % width;
  batch v[4] = {batch(neg_inf), batch(neg_inf), batch(neg_inf), batch(neg_inf)};
  for (std::size_t j = 0; j < full; ++j) v[j] = batch::load_unaligned(x + j * width);
  if (tail) v[full] = primitives::load_partial<A>(x + full * width, tail, neg_inf);
  const std::size_t count = full + (tail != 0);
  batch m = v[0];
  auto has_nan = xsimd::isnan(v[0]);
  for (std::size_t j = 1; j < count; ++j) {
    m = xsimd::max(m, v[j]);
    has_nan = has_nan | xsimd::isnan(v[j]);
  }
  const T max = smax::detail::horizontal_max(m);
  if (finish_special_row<A>(max, xsimd::any(has_nan), y, n, p)) return;
  const primitives::exp_minus_max<A, T, Scaled> e(max, p.inv_temperature);
  batch s(T(0));
  for (std::size_t j = 0; j < count; ++j) {
    const batch t = e(v[j]);
    s += t;
    if (!p.log) v[j] = t;
  }
  const double sum = smax::detail::horizontal_sum(s);
  if (p.log) {
    const batch mb(max), inv(p.inv_temperature), neg_log_sum(static_cast<T>(-::log(sum)));
    for (std::size_t j = 0; j < count; ++j) v[j] = smax::detail::mul_add(v[j] - mb, inv, neg_log_sum);
  } else {
    const batch c(static_cast<T>(1.0 / sum));
    for (std::size_t j = 0; j < count; ++j) v[j] *= c;
  }
  for (std::size_t j = 0; j < full; ++j) v[j].store_unaligned(y + j * width);
  if (tail) primitives::store_partial<A>(y + full * width, tail, v[full]);
}

template <class A, class T, bool Scaled>
inline void three_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  if (n <= 4 * batch::size) return short_row<A, T, Scaled>(x, y, n, p);
  const auto r = primitives::reduce_max<A>(x, n);
  if (finish_special_row<A>(r.max, r.has_nan, y, n, p)) return;
  const primitives::exp_minus_max<A, T, Scaled> e(r.max, p.inv_temperature);
  const T neg_inf = -__builtin_huge_val();
  if (p.log) {
    const double s = primitives::map_sum<A, false>(x, y, n, neg_inf, e, p.next_row);
    write_log_softmax<A>(x, y, n, r.max, p.inv_temperature, ::log(s));
    return;
  }
  const double s = primitives::map_sum<A, true>(x, y, n, neg_inf, e, p.next_row);
  const batch c(static_cast<T>(1.0 / s));
  primitives::map<A>(y, y, n, [&](batch const& v) { return v * c; });
}

}  // namespace kernels
}  // namespace smax
