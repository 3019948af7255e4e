#pragma once
// Three-pass ("safe") softmax, reloading form (docs/softmax.md): max; exp + store + sum fused in
// one pass; scale in place by the reciprocal of the sum. One exp per element; the fastest form
// while the row stays in cache. log-softmax: max; exp + sum; (x - m)/T - log s.

#include <cmath>
#include <type_traits>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/log.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

// The sum of a short row's values (Count registers) replaced in place by those values (softmax)
// or left as x (log-softmax).
template <class A, class T, std::size_t Count, class E>
SMAX_ALWAYS_INLINE double exponentiate(primitives::register_row<A, T, Count>& row, E const& e,
                                       bool log) noexcept {
  return smax::detail::horizontal_sum(log ? row.sum(e) : row.transform_sum(e));
}

// The second half of a short log-softmax row once its sum is known: (x - max)·s - log sum.
template <class A, class T, std::size_t Count>
SMAX_ALWAYS_INLINE void normalize_log(primitives::register_row<A, T, Count>& row, double sum, T max,
                                      row_params<T> const& p) noexcept {
  with_log_softmax_value<A>(max, p.inv_temperature, primitives::log_of_row_sum<A, T>(sum),
                            [&](auto const& z) { row.transform(z); });
}

// A short softmax row's values divided by their sum, with the exp functor e (the normaliser
// that suits it: primitives::short_normalizer).
template <class A, class T, std::size_t Count, class E>
SMAX_ALWAYS_INLINE void exponentiate_and_normalize(primitives::register_row<A, T, Count>& row,
                                                   E const& e) noexcept {
  row.transform(primitives::short_normalizer<A, T, E::exact_max>(exponentiate(row, e, false)));
}

// Rows of at most four registers: the same arithmetic, but the row stays in registers, so the
// three passes cost no loads, loops or calls (short attention rows are dominated by those).
// n = 1 gives exactly [1] (E2, whatever the exp functor). short_row_of takes the row's values
// already in registers (the lanes past n hold -inf).
template <class A, class T, bool Scaled, std::size_t Count>
SMAX_ALWAYS_INLINE void short_row_of(primitives::register_row<A, T, Count>& row, T* y,
                                     std::size_t n, row_params<T> const& p) noexcept {
  const auto lanes = row.lane_max();
  const T max = smax::detail::horizontal_max(lanes.max);
  if (finish_special_row<A>(max, lanes.has_nan, y, n, p)) return;
  if (n == 1) {
    y[0] = p.log ? T(0) : T(1);
    return;
  }
  if (p.log)
    normalize_log(
        row,
        exponentiate(row, primitives::exp_for_log_sum<A, T, Scaled>(max, p.inv_temperature), true),
        max, p);
  else
    primitives::with_short_row_exp<A, T, Scaled, Count>(
        max, p.inv_temperature, [&](auto const& e) { exponentiate_and_normalize(row, e); });
  row.store(y);
}

template <class A, class T, bool Scaled, std::size_t Count>
SMAX_FLATTEN inline void short_row(const T* x, T* y, std::size_t n,
                                   row_params<T> const& p) noexcept {
  primitives::register_row<A, T, Count> row(x, n, -__builtin_huge_val());
  short_row_of<A, T, Scaled, Count>(row, y, n, p);
}

template <class A, class T, bool Scaled>
inline void short_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { short_row<A, T, Scaled, decltype(count)::value>(x, y, n, p); });
}

// K short rows at once (same length, Count registers each): the same arithmetic as short_row,
// interleaved so that the latency chains of independent rows (horizontal max, exp, horizontal
// sum, reciprocal) overlap. A group holding a special row (NaN, +inf, all masked), rows of one
// element or a softmax row outside exp_minus_shift's range (primitives::power_of_two_shift_limit) goes row
// by row.
template <class A, class T, bool Scaled, std::size_t K, std::size_t Count>
SMAX_FLATTEN inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                    std::size_t n, row_params<T> const& p) noexcept {
  const T inf = __builtin_huge_val();
  primitives::register_row<A, T, Count> rows[K];
  T max[K];
  bool special = n == 1;
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    rows[k].load(x + k * ldx, n, -inf);
    const auto lanes = rows[k].lane_max();
    max[k] = smax::detail::horizontal_max(lanes.max);
    special = special || lanes.has_nan || !primitives::is_finite(max[k]) ||
              (primitives::short_row_shift<A, Scaled, Count> && !p.log &&
               !primitives::uses_power_of_two_shift<A, T, Scaled>(max[k], p.inv_temperature));
  });
  if (special) {
    primitives::unroll<K>(
        [&](auto k) { short_row<A, T, Scaled, Count>(x + k * ldx, y + k * ldy, n, p); });
    return;
  }
  // The exp functors of short_row (primitives::with_short_row_exp for softmax).
  if (p.log) {
    double sum[K];
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      sum[k] = exponentiate(
          rows[k], primitives::exp_for_log_sum<A, T, Scaled>(max[k], p.inv_temperature), true);
    });
    primitives::unroll<K>([&](auto k)
                              SMAX_INLINE_LAMBDA { normalize_log(rows[k], sum[k], max[k], p); });
  } else if constexpr (primitives::short_row_shift<A, Scaled, Count>) {
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      exponentiate_and_normalize(
          rows[k], primitives::exp_minus_shift<A, T, Scaled>(max[k], p.inv_temperature));
    });
  } else {
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      exponentiate_and_normalize(
          rows[k], primitives::exp_minus_max<A, T, Scaled>(max[k], p.inv_temperature));
    });
  }
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA { rows[k].store(y + k * ldy); });
}

template <class A, class T, bool Scaled, std::size_t K>
inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n,
                       row_params<T> const& p) noexcept {
  primitives::with_register_count<A, T>(n, [&](auto count) {
    short_rows<A, T, Scaled, K, decltype(count)::value>(x, ldx, y, ldy, n, p);
  });
}

// Softmax rows of 2 to 512 blocks of 8 KiB (up to 4 MiB; `automatic` sends rows of more than 16 KiB
// here): each block's exp(x·s - σ_b) (σ_b from the block max, primitives::with_shifted_exp) is
// stored and summed from L1 while the same loop takes the next block's max and min, pulling that
// block into L1; a last pass scales each block by exp(σ_b - M·s)/sum. No pass is spent on the
// max alone (only the first block's), and no pause between a block's range and its exponentials:
// with a separate range pass per block, this form was 5-8 % slower than the plain three passes
// on an AMD EPYC Zen 4; beside, 3-7 % faster, from 32768 elements to 1M. Each y is still one
// exp and one product,
// fl(exp(x·s - σ_b))·fl(exp(σ_b - M·s)/S). Rows within L1 gain nothing (4096 elements were
// slightly slower), so they keep the plain three passes. Returns false for the rows it does not
// take: other lengths, and log-softmax rows (the online form, whose second pass has no exp, suits them).
constexpr std::size_t three_pass_max_blocks = 512;

// One block of the blocked form (or one chunk of a split row, below): the range of
// [start, start + len) from the source, then exp(x·s - σ) stored in y and summed, σ from the
// block's maximum. max is NaN for a block holding a NaN or +inf and -inf for a masked one (y is
// not written for either); a NaN the range missed shows in the sum, which the caller checks.
// ahead, write_ahead: map_sum's prefetches.
template <class T>
struct exp_chunk {
  T max;
  primitives::log_shift shift;  // σ: the block holds exp(x·s - σ)
  double sum;
};

template <class A, class T, bool Scaled, class Source>
SMAX_ALWAYS_INLINE exp_chunk<T> exponentiate_block(Source const& source, std::size_t start,
                                                   std::size_t len, T* y, T inv_t,
                                                   std::size_t ahead = 0,
                                                   T* write_ahead = nullptr) noexcept {
  const T inf = __builtin_huge_val();
  const auto r = source.template range<true>(start, len);
  const T* const x = source.values();
  const block_kind kind = classify_block<A>(r.max, x + start, len);
  if (kind == block_kind::nan_row) return {static_cast<T>(__builtin_nan("")), {0.0, 0.0}, 0.0};
  if (kind == block_kind::masked) return {-inf, {0.0, 0.0}, 0.0};
  exp_chunk<T> c{r.max, {0.0, 0.0}, 0.0};
  c.sum = primitives::with_shifted_exp<A, T, Scaled>(r.max, r.min, inv_t, [&](auto const& e) {
    c.shift = e.shift();
    return primitives::map_sum<A, true>(x + start, y + start, len, -inf, e, ahead, write_ahead);
  });
  return c;
}

// exponentiate_block for a block whose range r is known, taking the next block's range beside
// it: the exp pass reads next[0, next_len) along with the block (its first pass pulls the next
// block into L1 while the core is busy with exponentials) and leaves that range in next_range.
// The range is what reduce_range gives (the maximum and minimum do not depend on the order).
// ahead, write_ahead: the prefetches of exponentiate_block (the next row's, for a row's last
// block).
template <class A, class T, bool Scaled>
SMAX_ALWAYS_INLINE exp_chunk<T> exponentiate_block_beside(
    const T* x, std::size_t len, T* y, T inv_t, primitives::range_result<T> const& r, const T* next,
    std::size_t next_len, primitives::range_result<T>& next_range, std::size_t ahead = 0,
    T* write_ahead = nullptr) noexcept {
  constexpr std::size_t step = 4 * xsimd::batch<T, A>::size;
  const T inf = __builtin_huge_val();
  const block_kind kind = classify_block<A>(r.max, x, len);
  if (kind != block_kind::ordinary) {
    next_range = primitives::reduce_range<A, true>(next, next_len);
    if (kind == block_kind::nan_row) return {static_cast<T>(__builtin_nan("")), {0.0, 0.0}, 0.0};
    return {-inf, {0.0, 0.0}, 0.0};
  }
  primitives::range_beside<A, true, T> following{next, next_len};
  exp_chunk<T> c{r.max, {0.0, 0.0}, 0.0};
  c.sum = primitives::with_shifted_exp<A, T, Scaled>(r.max, r.min, inv_t, [&](auto const& e) {
    c.shift = e.shift();
    return primitives::map_sum_beside<A, true>(
        x, y, len, -inf, e, [&](std::size_t i) SMAX_INLINE_LAMBDA {
          following(i);
          if (ahead) primitives::prefetch<A>(x + i + ahead, step * sizeof(T));
          if (write_ahead) primitives::prefetch_for_write<A>(write_ahead + i, step * sizeof(T));
        });
  });
  next_range = following.finish(len);
  return c;
}

template <class A, class T, bool Scaled, class Source>
inline bool try_blocked_three_pass_row_from(Source const& source, T* y, std::size_t n,
                                            row_params<T> const& p) noexcept {
  constexpr std::size_t block = row_block<T>;
  const std::size_t blocks = (n + block - 1) / block;
  if (p.log || blocks < 2 || blocks > three_pass_max_blocks) return false;  // log: see table.hpp
  const T inf = __builtin_huge_val();
  const T nan = __builtin_nan("");
  T block_max[three_pass_max_blocks];
  primitives::log_shift block_shift[three_pass_max_blocks];  // σ_b: block b holds exp(x·s - σ_b)
  double block_sum[three_pass_max_blocks];                   // then each block's exp(σ_b - M·s)
  T row_max = -inf;
  // A row read from x (not a source that makes its values) takes each block's range beside the
  // previous block's exponentials (exponentiate_block_beside).
  constexpr bool beside = std::is_same<Source, row_source<A, T>>::value;
  const T* const x = source.values();
  primitives::range_result<T> range{};
  if constexpr (beside) range = primitives::reduce_range<A, true>(x, n < block ? n : block);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t start = b * block, len = n - start < block ? n - start : block;
    // The next block is pulled in while this one is exponentiated; the last block asks for the
    // next row of a batch instead (and for its y, which the next call writes first).
    const bool last = b + 1 == blocks;
    T* const write_ahead = last && p.next_output_row ? y + p.next_output_row - start : nullptr;
    // A NaN the max missed elsewhere makes the block's sum NaN (checked below).
    exp_chunk<T> c;
    if constexpr (beside) {
      const std::size_t next_len = last ? 0 : n - start - len < block ? n - start - len : block;
      const std::size_t ahead = last && p.next_row ? p.next_row - start : 0;
      const primitives::range_result<T> own = range;
      c = exponentiate_block_beside<A, T, Scaled>(x + start, len, y + start, p.inv_temperature, own,
                                                  x + start + len, next_len, range, ahead,
                                                  write_ahead);
    } else {
      const std::size_t ahead = !last ? block : p.next_row ? p.next_row - start : 0;
      c = exponentiate_block<A, T, Scaled>(source, start, len, y, p.inv_temperature, ahead,
                                           write_ahead);
    }
    if (primitives::is_nan(c.max)) {
      fill_row<A>(y, n, nan);
      return true;
    }
    block_max[b] = c.max;
    block_shift[b] = c.shift;
    block_sum[b] = c.sum;
    if (primitives::is_neg_inf(c.max)) {
      fill_row<A>(y + start, len, T(0));
      continue;
    }
    if (c.max > row_max) row_max = c.max;
  }
  if (finish_special_row<A>(row_max, false, y, n, p)) return true;  // every block masked
  // exp(σ_b - M·s) <= 2, with the roundings of both shifts carried (exp_of_difference): rounding
  // m_b - M alone would cost |m_b - M|·2^-53 for double rows (1.4e-14 at a spread of 200).
  const primitives::log_shift row_shift =
      primitives::product_shift(row_max, Scaled ? p.inv_temperature : T(1));
  double sum = 0.0;
  for (std::size_t b = 0; b < blocks; ++b) {
    const double scale =
        primitives::is_neg_inf(block_max[b])
            ? 0.0
            : primitives::exp_of_shift_difference(block_shift[b], row_shift, block_max[b], row_max,
                                                  Scaled ? p.inv_temperature : T(1));
    sum += block_sum[b] * scale;
    block_sum[b] = scale;
  }
  if (primitives::is_nan(sum) || nan_unseen_by_sum<A>(source.values(), n)) {
    fill_row<A>(y, n, nan);
    return true;
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t start = b * block, len = n - start < block ? n - start : block;
    if (primitives::is_neg_inf(block_max[b])) continue;  // already zeros
    primitives::map<A>(y + start, y + start, len, primitives::normalizer<A, T>(block_sum[b], sum));
  }
  return true;
}

// A chunk of a long softmax row split across an executor's tasks (api/entry.hpp): the blocked
// form above with the chunk as one block (exponentiate_block). exponentiate_chunk stores exp(x·s - σ_c) in y and
// returns the chunk's maximum, σ_c and the sum; merge_exp_chunks folds the chunks of a row in
// order into the row's (maximum M, σ = M·s, total); scale_chunk multiplies the stored values by
// exp(σ_c - σ)/total. One exponential per element, as the single-threaded call's blocked form
// (the chunked online form took two), and each y is the same one exp and one product. A chunk
// holding a NaN or +inf has a NaN maximum, a masked chunk -inf: its y is written by scale_chunk
// (NaN row, zeros, or the masked row's rule), not by exponentiate_chunk.
template <class A, class T, bool Scaled>
inline exp_chunk<T> exponentiate_chunk(const T* x, T* y, std::size_t n, T inv_t) noexcept {
  exp_chunk<T> c = exponentiate_block<A, T, Scaled>(row_source<A, T>{x}, 0, n, y, inv_t);
  if (primitives::is_finite(c.max) && (primitives::is_nan(c.sum) || nan_unseen_by_sum<A>(x, n)))
    c.max = static_cast<T>(__builtin_nan(""));
  return c;
}

// The chunks a and b of one row (a before b), merged: their sums brought to σ = M·s (s = 1 for
// an unscaled call, as the kernels take it). Chunks with a NaN maximum make the row's NaN.
template <class T>
inline exp_chunk<T> merge_exp_chunks(exp_chunk<T> const& a, exp_chunk<T> const& b, T s) noexcept {
  if (primitives::is_nan(a.max) || primitives::is_nan(b.max))
    return {static_cast<T>(__builtin_nan("")), {0.0, 0.0}, 0.0};
  if (primitives::is_neg_inf(b.max)) return a;
  if (primitives::is_neg_inf(a.max)) return b;
  const T m = a.max > b.max ? a.max : b.max;
  const primitives::log_shift shift = primitives::product_shift(m, s);
  const double sum = a.sum * primitives::exp_of_shift_difference(a.shift, shift, a.max, m, s) +
                     b.sum * primitives::exp_of_shift_difference(b.shift, shift, b.max, m, s);
  return {m, shift, sum};
}

template <class A, class T, bool Scaled>
inline void scale_chunk(T* y, std::size_t n, exp_chunk<T> const& own, exp_chunk<T> const& row,
                        row_params<T> const& p) noexcept {
  if (finish_special_row<A>(row.max, false, y, n, p)) return;  // NaN, +inf or every entry masked
  if (primitives::is_neg_inf(own.max)) return fill_row<A>(y, n, T(0));
  const double scale = primitives::exp_of_shift_difference(own.shift, row.shift, own.max, row.max,
                                                           Scaled ? p.inv_temperature : T(1));
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(scale, row.sum));
}

template <class A, class T, bool Scaled>
inline bool try_blocked_three_pass_row(const T* x, T* y, std::size_t n,
                                       row_params<T> const& p) noexcept {
  return try_blocked_three_pass_row_from<A, T, Scaled>(row_source<A, T>{x}, y, n, p);
}

// Long rows. The max pass flags no NaN (one operation per element instead of three): a NaN
// makes the sum of exponentials NaN, which is checked once, and a NaN in a row whose maximum is
// -inf is looked for only then. The softmax max pass also takes the minimum, which chooses the
// cheapest exact form of the x - max error for the row (exp_minus_max).
template <class A, class T, bool Scaled, class Source>
inline void three_pass_row_from(Source const& source, T* y, std::size_t n,
                                row_params<T> const& p) noexcept {
  const T neg_inf = -__builtin_huge_val();
  const T nan = __builtin_nan("");
  if (p.log) {
    const auto r = source.template range<false>(0, n);
    const T* const x = source.values();
    if (finish_special_row<A>(
            r.max, primitives::is_nan(r.max) || (primitives::is_neg_inf(r.max) && has_nan<A>(x, n)),
            y, n, p))
      return;
    // In a batch, this row's y is asked for while the sum keeps the core busy (the write pass
    // follows); softmax asks for the next row's y, which its exp pass writes.
    const double s = primitives::map_sum<A, false>(
        x, y, n, neg_inf, primitives::exp_for_log_sum<A, T, Scaled>(r.max, p.inv_temperature),
        p.next_row, p.next_output_row ? y : nullptr);
    if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, n)) return fill_row<A>(y, n, nan);
    write_log_softmax<A>(x, y, n, r.max, p.inv_temperature, primitives::log_of_row_sum<A, T>(s));
    return;
  }
  const auto r = source.template range<true>(0, n);
  const T* const x = source.values();
  if (finish_special_row<A>(
          r.max, primitives::is_nan(r.max) || (primitives::is_neg_inf(r.max) && has_nan<A>(x, n)),
          y, n, p))
    return;
  const double s = primitives::with_shifted_exp<A, T, Scaled>(
      r.max, r.min, p.inv_temperature, [&](auto const& e) {
        return primitives::map_sum<A, true>(x, y, n, neg_inf, e, p.next_row,
                                            p.next_output_row ? y + p.next_output_row : nullptr);
      });
  if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, n)) return fill_row<A>(y, n, nan);
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(1.0, s));
}

template <class A, class T, bool Scaled>
inline void three_pass_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  if (n <= 4 * batch::size) return short_row<A, T, Scaled>(x, y, n, p);
  three_pass_row_from<A, T, Scaled>(row_source<A, T>{x}, y, n, p);
}

// The blocked form where it applies (2 to 512 blocks), the reloading three passes otherwise.
template <class A, class T, bool Scaled>
inline void blocked_three_pass_row(const T* x, T* y, std::size_t n,
                                   row_params<T> const& p) noexcept {
  if (!try_blocked_three_pass_row<A, T, Scaled>(x, y, n, p))
    three_pass_row<A, T, Scaled>(x, y, n, p);
}

}  // namespace kernels
}  // namespace smax
