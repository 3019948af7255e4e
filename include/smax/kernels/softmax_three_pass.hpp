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
// GCC cannot see the callers' n <= 4·width and warns that v[4] would overflow; telling it so
// (__builtin_unreachable) made the 64-element row twice as slow, so the warning is silenced.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif
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

// K short rows at once (same length, at most four registers each): the same arithmetic as
// short_row, interleaved so that the latency chains of independent rows (horizontal max, exp,
// horizontal sum, reciprocal) overlap. A group holding a special row (NaN, +inf, all masked)
// goes row by row.
template <class A, class T, bool Scaled, std::size_t K>
inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n,
                       row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -__builtin_huge_val();
  const T inf = __builtin_huge_val();
  const std::size_t full = n / width, tail = n % width;
  const std::size_t count = full + (tail != 0);
  batch v[K][4];
  T max[K];
  bool special = false;
  for (std::size_t k = 0; k < K; ++k) {
    const T* xk = x + k * ldx;
    for (std::size_t j = 0; j < full; ++j) v[k][j] = batch::load_unaligned(xk + j * width);
    if (tail) v[k][full] = primitives::load_partial<A>(xk + full * width, tail, neg_inf);
    batch m = v[k][0];
    auto has_nan = xsimd::isnan(v[k][0]);
    for (std::size_t j = 1; j < count; ++j) {
      m = xsimd::max(m, v[k][j]);
      has_nan = has_nan | xsimd::isnan(v[k][j]);
    }
    max[k] = smax::detail::horizontal_max(m);
    special = special || xsimd::any(has_nan) || max[k] == inf || max[k] == neg_inf;
  }
  if (special) {
    for (std::size_t k = 0; k < K; ++k) short_row<A, T, Scaled>(x + k * ldx, y + k * ldy, n, p);
    return;
  }
  batch s[K];
  for (std::size_t k = 0; k < K; ++k) {
    const primitives::exp_minus_max<A, T, Scaled> e(max[k], p.inv_temperature);
    s[k] = batch(T(0));
    for (std::size_t j = 0; j < count; ++j) {
      const batch t = e(v[k][j]);
      s[k] += t;
      if (!p.log) v[k][j] = t;
    }
  }
  for (std::size_t k = 0; k < K; ++k) {
    const double sum = smax::detail::horizontal_sum(s[k]);
    if (p.log) {
      const batch mb(max[k]), inv(p.inv_temperature), neg_log_sum(static_cast<T>(-::log(sum)));
      for (std::size_t j = 0; j < count; ++j)
        v[k][j] = smax::detail::mul_add(v[k][j] - mb, inv, neg_log_sum);
    } else {
      const batch c(static_cast<T>(1.0 / sum));
      for (std::size_t j = 0; j < count; ++j) v[k][j] *= c;
    }
    T* yk = y + k * ldy;
    for (std::size_t j = 0; j < full; ++j) v[k][j].store_unaligned(yk + j * width);
    if (tail) primitives::store_partial<A>(yk + full * width, tail, v[k][full]);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// Long rows. The max pass flags no NaN (one operation per element instead of three): a NaN
// makes the sum of exponentials NaN, which is checked once, and a NaN in a row whose maximum is
// -inf is looked for only then. The softmax max pass also takes the minimum, which chooses the
// cheapest exact form of the x - max error for the row (exp_minus_max).
template <class A, class T, bool Scaled>
inline void three_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  if (n <= 4 * batch::size) return short_row<A, T, Scaled>(x, y, n, p);
  const T neg_inf = -__builtin_huge_val();
  const T nan = __builtin_nan("");
  if (p.log) {
    const auto r = primitives::reduce_range<A, false>(x, n);
    if (finish_special_row<A>(r.max, r.max != r.max || (r.max == neg_inf && has_nan<A>(x, n)), y, n, p))
      return;
    const primitives::exp_minus_max<A, T, Scaled, primitives::difference_error::dropped> e(
        r.max, p.inv_temperature);
    const double s = primitives::map_sum<A, false>(x, y, n, neg_inf, e, p.next_row);
    if (s != s) return fill_row<A>(y, n, nan);
    write_log_softmax<A>(x, y, n, r.max, p.inv_temperature, ::log(s));
    return;
  }
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (finish_special_row<A>(r.max, r.max != r.max || (r.max == neg_inf && has_nan<A>(x, n)), y, n, p))
    return;
  const double s = primitives::with_exp_minus_max<A, T, Scaled>(
      r.max, r.min, p.inv_temperature,
      [&](auto const& e) { return primitives::map_sum<A, true>(x, y, n, neg_inf, e, p.next_row); });
  if (s != s) return fill_row<A>(y, n, nan);
  const batch c(static_cast<T>(1.0 / s));
  primitives::map<A>(y, y, n, [&](batch const& v) { return v * c; });
}

}  // namespace kernels
}  // namespace smax
