#pragma once
// Softmax and log-softmax down the columns of a row-major block of n rows `stride` floats apart:
// the native kernel of the axis forms (api/axis.hpp). It reads the block in row order, 16 rows
// at a time, as a rows kernel reads a row, and keeps one running value per column in a register
// lane: vectorised across the columns, with no transposition, every pass a sequential stream.
// (Passes down one line of columns at a time stride through the rows: a power-of-two stride maps
// a whole column block onto a few cache sets and the hardware prefetcher lags behind.)
//
// Columns of up to axis_blocked_max_rows rows take the blocked form (blocked_columns): x is read
// once, each 16-row block exponentiated against its own maxima while the next block's lines come
// in, the blocks combined per column at the end (as the rows kernels' blocked three passes
// combine their 8 KiB blocks); special columns are finished there. Longer columns take three
// plain passes (column_maxima, normalize_columns) with the rows kernels' cheapest exp form;
// a block with a special column makes that form return false before writing anything.
//
// The arithmetic per column is the rows kernels': the maximum; exp((x - max)·s) with the rounding
// of x - max carried into the exponential (exp_minus_max), or exp(x·s - j·ln2) where every
// column's maximum allows it (exp_minus_shift); sums in float over 16 rows, four values a lane per
// accumulator, folded into double, so their relative error stays near 2^-22 whatever n; y scaled
// by a factor held as hi + lo (normalizer), or (x - max)·s - log sum for log-softmax
// (with_log_softmax_value's form, halved where s < 1).
//
// The vector path does not take a temperature the rows kernels send to their scalar path
// (wide_range_row: T > FLT_MAX/1024 ≈ 3.3e35 or T < 16/FLT_MAX ≈ 4.7e-38, and invalid ones):
// the call returns false having written nothing.

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/log.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/scratch.hpp"
#include "../primitives/special.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

// The most columns one call takes: its per-column state (maxima, sums, factors: about 40 bytes a
// column) lives on the stack. On 64 × 1000 × 64 and 1 × 4096 × 256 (AMD Zen 5) tiles of 128
// columns were as fast as 256 and faster than 64; 16 or 32 columns 1.4–2.2× slower.
constexpr std::size_t axis_max_columns = 128;

// Columns of at most this many rows take the blocked form (its per-block state, 8 bytes a column
// a block of 16 rows: up to 128 KiB, in the kernels' scratch buffer; where that cannot be had,
// the three passes below). Longer ones take the three passes: at n = 4096 they were faster
// (1 × 4096 × 256, AMD Zen 5), the blocked form's state and column tile no longer in L2.
constexpr std::size_t axis_blocked_max_rows = 2048;

namespace detail {

// V vectors of a row side by side, or (Partial, V = 1) the first `count` lanes of one.
template <class A, std::size_t V, bool Partial>
struct column_lanes {
  using batch = xsimd::batch<float, A>;
  static constexpr std::size_t vectors = V;
  static constexpr std::size_t width = batch::size;
  std::size_t count;  // lanes in use: V·width unless Partial

  SMAX_ALWAYS_INLINE batch load(const float* row, std::size_t v) const noexcept {
    if constexpr (Partial)
      return primitives::load_partial<A>(row, count, 0.0f);
    else
      return batch::load_unaligned(row + v * width);
  }
  SMAX_ALWAYS_INLINE void store(float* row, std::size_t v, batch const& value) const noexcept {
    if constexpr (Partial)
      primitives::store_partial<A>(row, count, value);
    else
      value.store_unaligned(row + v * width);
  }
};

// f(c, lanes) for the segments of columns [0, width): whole 64-byte lines of floats, then whole
// vectors, then a partial vector. A column's arithmetic is the same in any of them.
template <class A, class F>
SMAX_ALWAYS_INLINE void for_each_segment(std::size_t width, F&& f) noexcept {
  constexpr std::size_t lanes = xsimd::batch<float, A>::size;
  constexpr std::size_t line = lanes < 16 ? 16 / lanes : 1;  // vectors a line
  std::size_t c = 0;
  for (; c + line * lanes <= width; c += line * lanes)
    f(c, column_lanes<A, line, false>{line * lanes});
  if constexpr (line > 1)
    for (; c + lanes <= width; c += lanes) f(c, column_lanes<A, 1, false>{lanes});
  if (c < width) f(c, column_lanes<A, 1, true>{width - c});
}

// Rows are taken 16 at a time: the sums' blocks, and the unit of every pass.
constexpr std::size_t axis_row_block = 16;

template <class E, std::size_t... I>
SMAX_ALWAYS_INLINE std::array<E, sizeof...(I)> copies(E const& e,
                                                      std::index_sequence<I...>) noexcept {
  return {((void)I, e)...};
}

// Rows [0, rows) of one segment (x and y at its first row and column) through the exp functors
// f, one per vector: the values stored (softmax) and summed, row r into accumulator r % 4 (fixed
// indices: a computed one kept the accumulators in memory, a third slower). sums[v] gets
// (s0 + s1) + (s2 + s3).
template <class A, bool Log, class Seg, class Fs>
SMAX_ALWAYS_INLINE void exponentiate_rows(const float* x, float* y, std::size_t stride,
                                          std::size_t rows, Seg seg, Fs const& f,
                                          xsimd::batch<float, A>* sums) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t V = Seg::vectors;
  batch s[V][4];
  for (std::size_t v = 0; v < V; ++v) s[v][0] = s[v][1] = s[v][2] = s[v][3] = batch(0.0f);
  auto add_row = [&](std::size_t r, auto k) SMAX_INLINE_LAMBDA {
    for (std::size_t v = 0; v < V; ++v) {
      const batch value = f[v](seg.load(x + r * stride, v));
      if constexpr (!Log) seg.store(y + r * stride, v, value);
      s[v][decltype(k)::value] += value;
    }
  };
  using k0 = std::integral_constant<std::size_t, 0>;
  using k1 = std::integral_constant<std::size_t, 1>;
  using k2 = std::integral_constant<std::size_t, 2>;
  using k3 = std::integral_constant<std::size_t, 3>;
  std::size_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    add_row(r, k0{});
    add_row(r + 1, k1{});
    add_row(r + 2, k2{});
    add_row(r + 3, k3{});
  }
  if (r < rows) add_row(r, k0{});
  if (r + 1 < rows) add_row(r + 1, k1{});
  if (r + 2 < rows) add_row(r + 2, k2{});
  for (std::size_t v = 0; v < V; ++v) sums[v] = (s[v][0] + s[v][1]) + (s[v][2] + s[v][3]);
}

// The last pass over rows [0, rows) of one segment (x and y at its first row and column):
// log-softmax writes (x - max)·s - log sum as with_log_softmax_value forms it (a = -log sum,
// b = the maxima; halved where s < 1, so that x - max cannot overflow where (x - max)·s is
// finite); softmax scales y by its factor held as hi + lo (a = hi, b = lo: normalizer per lane).
template <class A, bool Log, class Seg>
SMAX_ALWAYS_INLINE void finish_rows(const float* x, float* y, std::size_t stride, std::size_t rows,
                                    Seg seg, const xsimd::batch<float, A>* a,
                                    const xsimd::batch<float, A>* b, float inv_t) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t V = Seg::vectors;
  const bool halved = inv_t < 1.0f;
  const batch half(0.5f), twice_inv(inv_t * 2.0f), inv(inv_t);
  for (std::size_t r = 0; r < rows; ++r) {
    float* yr = y + r * stride;
    if constexpr (Log) {
      const float* xr = x + r * stride;
      for (std::size_t v = 0; v < V; ++v) {
        const batch value = seg.load(xr, v);
        seg.store(yr, v,
                  halved ? smax::detail::mul_add(smax::detail::mul_add(value, half, -b[v] * half),
                                                 twice_inv, a[v])
                         : smax::detail::mul_add(value - b[v], inv, a[v]));
      }
    } else {
      (void)x;
      for (std::size_t v = 0; v < V; ++v) {
        const batch value = seg.load(yr, v);
        seg.store(yr, v, smax::detail::mul_add(value, a[v], value * b[v]));
      }
    }
  }
}

// The maxima of rows [0, rows) of one segment (x at its first row and column) merged into m, one
// vector per V, two rows a step so that the max's latency is not the loop's; NaN lanes OR-ed into
// nan (bit tests: -ffast-math cannot fold them).
template <class A, class Seg, class Mask>
SMAX_ALWAYS_INLINE void segment_maxima(const float* x, std::size_t stride, std::size_t rows,
                                       Seg seg, xsimd::batch<float, A>* m, Mask& nan) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t V = Seg::vectors;
  batch m1[V];
  for (std::size_t v = 0; v < V; ++v) m1[v] = m[v];
  std::size_t r = 0;
  for (; r + 2 <= rows; r += 2, x += 2 * stride)
    for (std::size_t v = 0; v < V; ++v) {
      const batch a = seg.load(x, v), b = seg.load(x + stride, v);
      m[v] = xsimd::max(m[v], a);
      m1[v] = xsimd::max(m1[v], b);
      nan = nan | primitives::is_nan(a) | primitives::is_nan(b);
    }
  if (r < rows)
    for (std::size_t v = 0; v < V; ++v) {
      const batch a = seg.load(x, v);
      m[v] = xsimd::max(m[v], a);
      nan = nan | primitives::is_nan(a);
    }
  for (std::size_t v = 0; v < V; ++v) m[v] = xsimd::max(m[v], m1[v]);
}

// Pass 1: each column's maximum into lane_max[0, width); false where a column holds a NaN or has
// a maximum of ±inf (+inf, or every entry -inf). Padding lanes of a partial vector load 0 and
// are never looked at.
template <class A>
SMAX_FLATTEN inline bool column_maxima(const float* x, std::size_t n, std::size_t stride,
                                       std::size_t width, float* lane_max) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t lanes = batch::size;
  const batch neg_inf(-__builtin_huge_valf());
  for (std::size_t c = 0; c < width; c += lanes) neg_inf.store_unaligned(lane_max + c);
  auto nan = primitives::is_nan(batch(0.0f));
  for (std::size_t i = 0; i < n; i += axis_row_block) {
    const std::size_t rows = n - i < axis_row_block ? n - i : axis_row_block;
    for_each_segment<A>(width, [&](std::size_t c, auto seg) SMAX_INLINE_LAMBDA {
      constexpr std::size_t V = decltype(seg)::vectors;
      batch m[V];
      for (std::size_t v = 0; v < V; ++v) m[v] = batch::load_unaligned(lane_max + c + v * lanes);
      segment_maxima<A>(x + i * stride + c, stride, rows, seg, m, nan);
      for (std::size_t v = 0; v < V; ++v) m[v].store_unaligned(lane_max + c + v * lanes);
    });
  }
  if (xsimd::any(nan)) return false;
  for (std::size_t k = 0; k < width; ++k)
    if (!primitives::is_finite(lane_max[k])) return false;
  return true;
}

// Passes 2 and 3, given the columns' maxima (column_maxima returned true). lane_shift holds what
// the exp functor subtracts per lane: -j for exp_minus_shift (Shift), -max for exp_minus_max.
template <class A, bool Scaled, bool Log, bool Shift>
SMAX_FLATTEN inline void normalize_columns(const float* x, float* y, std::size_t n,
                                           std::size_t stride, std::size_t width, float inv_t,
                                           const float* lane_max,
                                           const float* lane_shift) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t lanes = batch::size;
  // log-softmax only sums: the rounding of x - max costs its sum 2^-24·log n at most (the rows
  // kernels' exp_for_log_sum).
  using E =
      std::conditional_t<Log, primitives::exp_for_log_sum<A, float, Scaled>,
                         std::conditional_t<Shift, primitives::exp_minus_shift<A, float, Scaled>,
                                            primitives::exp_minus_max<A, float, Scaled>>>;
  E e(0.0f, inv_t);  // its per-lane part is set per vector below
  auto aim = [&](E& f, std::size_t c) SMAX_INLINE_LAMBDA {
    if constexpr (Shift)
      f.row.neg_j = batch::load_unaligned(lane_shift + c);
    else
      f.neg_max = batch::load_unaligned(lane_shift + c);
  };
  double sum[axis_max_columns];  // whole vectors: padding lanes too
  for (std::size_t k = 0; k < axis_max_columns; ++k) sum[k] = 0.0;
  for (std::size_t i = 0; i < n; i += axis_row_block) {
    const std::size_t rows = n - i < axis_row_block ? n - i : axis_row_block;
    for_each_segment<A>(width, [&](std::size_t c, auto seg) SMAX_INLINE_LAMBDA {
      constexpr std::size_t V = decltype(seg)::vectors;
      std::array<E, V> f = copies(e, std::make_index_sequence<V>{});
      for (std::size_t v = 0; v < V; ++v) aim(f[v], c + v * lanes);
      batch block_sum[V];
      exponentiate_rows<A, Log>(x + i * stride + c, y + i * stride + c, stride, rows, seg, f,
                                block_sum);
      for (std::size_t v = 0; v < V; ++v) {
        alignas(64) float part[lanes];
        block_sum[v].store_aligned(part);
        for (std::size_t k = 0; k < lanes; ++k) sum[c + v * lanes + k] += part[k];
      }
    });
  }
  alignas(64) float first[axis_max_columns] = {}, second[axis_max_columns] = {};
  if constexpr (Log) {
    for (std::size_t k = 0; k < width; ++k)
      first[k] = static_cast<float>(-primitives::log_of_row_sum<A, float>(sum[k]));
  } else {
    // y·(1/sum) with the factor as hi + lo: primitives::normalizer per lane.
    for (std::size_t k = 0; k < width; ++k) {
      const double q = 1.0 / sum[k];
      first[k] = static_cast<float>(q);
      second[k] = static_cast<float>(q - static_cast<double>(first[k]));
    }
  }
  for (std::size_t i = 0; i < n; i += axis_row_block) {
    const std::size_t rows = n - i < axis_row_block ? n - i : axis_row_block;
    for_each_segment<A>(width, [&](std::size_t c, auto seg) SMAX_INLINE_LAMBDA {
      constexpr std::size_t V = decltype(seg)::vectors;
      batch a[V], b[V];
      for (std::size_t v = 0; v < V; ++v) {
        a[v] = batch::load_unaligned(first + c + v * lanes);  // -log sum, or hi
        if constexpr (Log)
          b[v] = batch::load_unaligned(lane_max + c + v * lanes);
        else
          b[v] = batch::load_unaligned(second + c + v * lanes);  // lo
      }
      finish_rows<A, Log>(x + i * stride + c, y + i * stride + c, stride, rows, seg, a, b, inv_t);
    });
  }
}

// The blocked form: one read of x from memory. Each block of 16 rows takes its own maxima m_b
// (while its lines come in), then its values exp((x - m_b)·s) (stored, for softmax) and their
// sums from L1, the next block's lines asked for meanwhile; the block's maxima and sums are kept
// (state: 2·blocks·width floats). Then per column M = max m_b, the factors
// f_b = exp((m_b - M)·s) (exp_minus_max, the rounding of m_b - M carried), S = Σ s_b·f_b in
// double, and a last pass scales block b by f_b/S (as hi + lo), or writes (x - M)·s - log S.
// Each softmax output is then one exp, a product with a factor of about two ulps, as the rows
// kernels' blocked form. Special columns are finished here, not passed back (y may already be
// written where they are found): a NaN or +inf anywhere, or only -inf, gives the rows kernels'
// answer for that column (NaN; 0 or -inf for an all-masked column with zero_masked_rows).
template <class A, bool Scaled, bool Log>
SMAX_FLATTEN inline void blocked_columns(const float* x, float* y, std::size_t n,
                                         std::size_t stride, std::size_t width, float inv_t,
                                         bool zero_masked_rows, float* state) noexcept {
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t lanes = batch::size;
  using E = std::conditional_t<Log, primitives::exp_for_log_sum<A, float, Scaled>,
                               primitives::exp_minus_max<A, float, Scaled>>;
  // The factors: exp((m_b - M)·s) with the rounding of m_b - M carried, for log-softmax too.
  using F = primitives::exp_minus_max<A, float, Scaled>;
  const std::size_t blocks = (n + axis_row_block - 1) / axis_row_block;
  const std::size_t wp = (width + lanes - 1) / lanes * lanes;  // a block's state, whole vectors
  float* const block_max = state;                              // then the factors' hi (softmax)
  float* const block_sum = state + blocks * wp;                // then the factors' lo (softmax)
  const batch neg_inf(-__builtin_huge_valf()), zero(0.0f), lowest(-__FLT_MAX__);
  // What a lane subtracts: -m, and for m = -inf (a lane of only -inf) FLT_MAX, which gives its
  // -inf entries exp(-inf) = 0 as well (max, not a compare with -inf, which -ffast-math may fold).
  auto shift_of = [&](batch const& m) SMAX_INLINE_LAMBDA { return -xsimd::max(m, lowest); };
  alignas(64) float lane_nan[axis_max_columns];  // nonzero: a NaN was seen in the column
  for (std::size_t k = 0; k < wp; ++k) lane_nan[k] = 0.0f;
  const std::size_t line_bytes = width * sizeof(float);
  const E e0(0.0f, inv_t);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t i = b * axis_row_block;
    const std::size_t rows = n - i < axis_row_block ? n - i : axis_row_block;
    // The next block's lines are asked for while this one computes (y's with write intent: its
    // first store would otherwise wait for the line).
    for (std::size_t r = axis_row_block; r < 2 * axis_row_block && i + r < n; ++r) {
      primitives::prefetch<A>(x + (i + r) * stride, line_bytes);
      if (!Log) primitives::prefetch_for_write<A>(y + (i + r) * stride, line_bytes);
    }
    for_each_segment<A>(width, [&](std::size_t c, auto seg) SMAX_INLINE_LAMBDA {
      constexpr std::size_t V = decltype(seg)::vectors;
      batch mv[V];
      auto nan = primitives::is_nan(zero);
      for (std::size_t v = 0; v < V; ++v) mv[v] = neg_inf;
      segment_maxima<A>(x + i * stride + c, stride, rows, seg, mv, nan);
      if (xsimd::any(nan)) {  // rare: which lanes, from the block's values
        for (std::size_t rr = 0; rr < rows; ++rr)
          for (std::size_t k = 0; k < seg.count; ++k)
            if (primitives::is_nan(x[(i + rr) * stride + c + k])) lane_nan[c + k] = 1.0f;
      }
      std::array<E, V> f = copies(e0, std::make_index_sequence<V>{});
      for (std::size_t v = 0; v < V; ++v) {
        mv[v].store_unaligned(block_max + b * wp + c + v * lanes);
        f[v].neg_max = shift_of(mv[v]);
      }
      batch sums[V];
      exponentiate_rows<A, Log>(x + i * stride + c, y + i * stride + c, stride, rows, seg, f, sums);
      for (std::size_t v = 0; v < V; ++v)
        sums[v].store_unaligned(block_sum + b * wp + c + v * lanes);
    });
  }
  // Per column: M, the special columns, the factors and S.
  alignas(64) float lane_max[axis_max_columns];
  double sum[axis_max_columns];
  bool special[axis_max_columns];
  for (std::size_t c = 0; c < wp; c += lanes) {
    batch m = neg_inf;
    for (std::size_t b = 0; b < blocks; ++b)
      m = xsimd::max(m, batch::load_unaligned(block_max + b * wp + c));
    m.store_aligned(lane_max + c);
  }
  for (std::size_t k = 0; k < width; ++k) {
    sum[k] = 0.0;
    special[k] = lane_nan[k] != 0.0f || !primitives::is_finite(lane_max[k]);
  }
  const F f0(0.0f, inv_t);
  for (std::size_t b = 0; b < blocks; ++b) {
    float* const m_b = block_max + b * wp;
    float* const s_b = block_sum + b * wp;
    for (std::size_t c = 0; c < wp; c += lanes) {
      F f = f0;
      f.neg_max = shift_of(batch::load_aligned(lane_max + c));
      // exp((m_b - M)·s): 0 for a block masked in that lane (m_b = -inf).
      f(batch::load_unaligned(m_b + c)).store_unaligned(m_b + c);
    }
    for (std::size_t k = 0; k < width; ++k)
      sum[k] += static_cast<double>(s_b[k]) * static_cast<double>(m_b[k]);
  }
  alignas(64) float neg_log_sum[axis_max_columns];
  if constexpr (Log) {
    for (std::size_t k = 0; k < wp; ++k)
      neg_log_sum[k] =
          k < width ? static_cast<float>(-primitives::log_of_row_sum<A, float>(sum[k])) : 0.0f;
  } else {
    double inverse[axis_max_columns];
    for (std::size_t k = 0; k < width; ++k) inverse[k] = 1.0 / sum[k];
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t k = 0; k < width; ++k) {
        const double g = static_cast<double>(block_max[b * wp + k]) * inverse[k];
        const float hi = static_cast<float>(g);
        block_max[b * wp + k] = hi;
        block_sum[b * wp + k] = static_cast<float>(g - static_cast<double>(hi));
      }
  }
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t i = b * axis_row_block;
    const std::size_t rows = n - i < axis_row_block ? n - i : axis_row_block;
    for_each_segment<A>(width, [&](std::size_t c, auto seg) SMAX_INLINE_LAMBDA {
      constexpr std::size_t V = decltype(seg)::vectors;
      batch a[V], bv[V];
      for (std::size_t v = 0; v < V; ++v) {
        if constexpr (Log) {
          a[v] = batch::load_unaligned(neg_log_sum + c + v * lanes);
          bv[v] = batch::load_unaligned(lane_max + c + v * lanes);
        } else {
          a[v] = batch::load_unaligned(block_max + b * wp + c + v * lanes);   // hi
          bv[v] = batch::load_unaligned(block_sum + b * wp + c + v * lanes);  // lo
        }
      }
      finish_rows<A, Log>(x + i * stride + c, y + i * stride + c, stride, rows, seg, a, bv, inv_t);
    });
  }
  // The special columns, as the rows kernels finish such rows.
  const float nan = __builtin_nanf("");
  for (std::size_t k = 0; k < width; ++k) {
    if (!special[k]) continue;
    float fill = nan;
    if (zero_masked_rows && lane_nan[k] == 0.0f && primitives::is_neg_inf(lane_max[k]))
      fill = Log ? -__builtin_huge_valf() : 0.0f;
    for (std::size_t r = 0; r < n; ++r) y[r * stride + k] = fill;
  }
}

// Columns [0, width) of x and y (1 <= width <= axis_max_columns), n >= 1 rows stride apart.
template <class A>
inline bool forward_columns(const float* x, float* y, std::size_t n, std::size_t stride,
                            std::size_t width, float temperature, bool log,
                            bool zero_masked_rows) noexcept {
  float inv_t = 1.0f;
  const bool scaled = temperature != 1.0f;
  if (scaled) {  // the rows kernels' vector range (forward_rows; NaN, <= 0 and inf fail it too)
    inv_t = 1.0f / temperature;
    if (!(inv_t >= wide_range_inv_temperature<float> && inv_t <= huge_inv_temperature<float>))
      return false;
  }
  if (n <= axis_blocked_max_rows) {
    // The state arrays padded to whole vectors (the factors are computed a vector at a time).
    constexpr std::size_t lanes = xsimd::batch<float, A>::size;
    const std::size_t blocks = (n + axis_row_block - 1) / axis_row_block;
    float* state =
        primitives::scratch<A, float>(2 * blocks * ((width + lanes - 1) / lanes * lanes));
    if (state != nullptr) {
      auto run = [&](auto scaled_, auto log_) {
        blocked_columns<A, decltype(scaled_)::value, decltype(log_)::value>(
            x, y, n, stride, width, inv_t, zero_masked_rows, state);
        return true;
      };
      if (scaled)
        return log ? run(std::true_type{}, std::true_type{})
                   : run(std::true_type{}, std::false_type{});
      return log ? run(std::false_type{}, std::true_type{})
                 : run(std::false_type{}, std::false_type{});
    }
  }
  alignas(64) float lane_max[axis_max_columns], lane_shift[axis_max_columns];
  if (!column_maxima<A>(x, n, stride, width, lane_max)) return false;
  // softmax: exp(x·s - j·ln2) where every column allows it (the rows kernels' cheapest form).
  bool shift = !log && primitives::has_power_of_two_shift<A, true>;
  for (std::size_t k = 0; shift && k < width; ++k)
    shift = scaled ? primitives::uses_power_of_two_shift<A, float, true>(lane_max[k], inv_t)
                   : primitives::uses_power_of_two_shift<A, float, false>(lane_max[k], inv_t);
  for (std::size_t k = 0; k < width; ++k)
    lane_shift[k] = shift ? static_cast<float>(-primitives::exp_minus_shift<A, float, true>(
                                                    lane_max[k], scaled ? inv_t : 1.0f)
                                                    .j)
                          : -lane_max[k];
  auto run = [&](auto scaled_, auto log_, auto shift_) {
    normalize_columns<A, decltype(scaled_)::value, decltype(log_)::value, decltype(shift_)::value>(
        x, y, n, stride, width, inv_t, lane_max, lane_shift);
    return true;
  };
  using yes = std::true_type;
  using no = std::false_type;
  if (log) return scaled ? run(yes{}, yes{}, no{}) : run(no{}, yes{}, no{});
  if constexpr (primitives::has_power_of_two_shift<A, true>) {
    if (scaled) return shift ? run(yes{}, no{}, yes{}) : run(yes{}, no{}, no{});
  } else {
    if (scaled) return run(yes{}, no{}, no{});
  }
  return shift ? run(no{}, no{}, yes{}) : run(no{}, no{}, no{});
}

}  // namespace detail
}  // namespace kernels
}  // namespace smax
