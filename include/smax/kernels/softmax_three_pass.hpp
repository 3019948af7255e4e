#pragma once
// Three-pass ("safe") softmax, reloading form (spec §3): max; exp + store + sum fused in one pass;
// scale in place by the reciprocal of the sum. One exp per element; the fastest form while the
// row stays in cache. log-softmax: max; exp + sum; (x - m)/T - log s.

#include <cmath>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

// Rows of at most four registers: the same arithmetic, but the row stays in registers, so the
// three passes cost no loads, loops or calls (short attention rows are dominated by those).
template <class A, class T, bool Scaled, std::size_t Count>
SMAX_FLATTEN inline void short_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  primitives::register_row<A, T, Count> row(x, n, -__builtin_huge_val());
  const auto lanes = row.lane_max();
  const T max = smax::detail::horizontal_max(lanes.max);
  if (finish_special_row<A>(max, lanes.has_nan, y, n, p)) return;
  const primitives::exp_minus_max<A, T, Scaled> e(max, p.inv_temperature);
  batch s(T(0));
  row.transform([&](batch const& v) {
    const batch t = e(v);
    s += t;
    return p.log ? v : t;
  });
  const double sum = smax::detail::horizontal_sum(s);
  if (p.log) {
    const batch mb(max), inv(p.inv_temperature), neg_log_sum(static_cast<T>(-::log(sum)));
    row.transform([&](batch const& v) { return smax::detail::mul_add(v - mb, inv, neg_log_sum); });
  } else {
    const batch c(static_cast<T>(1.0 / sum));
    row.transform([&](batch const& v) { return v * c; });
  }
  row.store(y);
}

template <class A, class T, bool Scaled>
inline void short_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { short_row<A, T, Scaled, decltype(count)::value>(x, y, n, p); });
}

// K short rows at once (same length, Count registers each): the same arithmetic as short_row,
// interleaved so that the latency chains of independent rows (horizontal max, exp, horizontal
// sum, reciprocal) overlap. A group holding a special row (NaN, +inf, all masked) goes row by row.
template <class A, class T, bool Scaled, std::size_t K, std::size_t Count>
SMAX_FLATTEN inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                    std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  primitives::register_row<A, T, Count> rows[K];
  T max[K];
  bool special = false;
  primitives::unroll<K>([&](auto k) {
    rows[k].load(x + k * ldx, n, -inf);
    const auto lanes = rows[k].lane_max();
    max[k] = smax::detail::horizontal_max(lanes.max);
    special = special || lanes.has_nan || max[k] == inf || max[k] == -inf;
  });
  if (special) {
    primitives::unroll<K>([&](auto k) { short_row<A, T, Scaled, Count>(x + k * ldx, y + k * ldy, n, p); });
    return;
  }
  batch s[K];
  primitives::unroll<K>([&](auto k) {
    const primitives::exp_minus_max<A, T, Scaled> e(max[k], p.inv_temperature);
    s[k] = batch(T(0));
    rows[k].transform([&](batch const& v) {
      const batch t = e(v);
      s[k] += t;
      return p.log ? v : t;
    });
  });
  primitives::unroll<K>([&](auto k) {
    const double sum = smax::detail::horizontal_sum(s[k]);
    if (p.log) {
      const batch mb(max[k]), inv(p.inv_temperature), neg_log_sum(static_cast<T>(-::log(sum)));
      rows[k].transform([&](batch const& v) { return smax::detail::mul_add(v - mb, inv, neg_log_sum); });
    } else {
      const batch c(static_cast<T>(1.0 / sum));
      rows[k].transform([&](batch const& v) { return v * c; });
    }
    rows[k].store(y + k * ldy);
  });
}

template <class A, class T, bool Scaled, std::size_t K>
inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n,
                       row_params<T> const& p) noexcept {
  primitives::with_register_count<A, T>(n, [&](auto count) {
    short_rows<A, T, Scaled, K, decltype(count)::value>(x, ldx, y, ldy, n, p);
  });
}

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
    // In a batch, this row's y is asked for while the sum keeps the core busy (the write pass
    // follows); softmax asks for the next row's y, which its exp pass writes.
    const double s = primitives::map_sum<A, false>(x, y, n, neg_inf, e, p.next_row,
                                                   p.next_output_row ? y : nullptr);
    if (s != s) return fill_row<A>(y, n, nan);
    write_log_softmax<A>(x, y, n, r.max, p.inv_temperature, ::log(s));
    return;
  }
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (finish_special_row<A>(r.max, r.max != r.max || (r.max == neg_inf && has_nan<A>(x, n)), y, n, p))
    return;
  const double s = primitives::with_exp_minus_max<A, T, Scaled>(
      r.max, r.min, p.inv_temperature,
      [&](auto const& e) {
        return primitives::map_sum<A, true>(x, y, n, neg_inf, e, p.next_row,
                                            p.next_output_row ? y + p.next_output_row : nullptr);
      });
  if (s != s) return fill_row<A>(y, n, nan);
  const batch c(static_cast<T>(1.0 / s));
  primitives::map<A>(y, y, n, [&](batch const& v) { return v * c; });
}

}  // namespace kernels
}  // namespace smax
