#pragma once
// Sparsemax kernels (docs/sparsemax.md) for one instruction set A: y = max(x - tau, 0) with tau
// such that sum(y) = 1, its backward pass and the sparsemax loss.
//
// Every algorithm works on z = x - m (m the row maximum), computed in T exactly as the write pass
// computes it, and finds tau_z (the threshold of z) in double from those z values:
//   sort    short rows: the z > -1 copied to a stack array, insertion-sorted, prefix scan (more
//           than 32 such candidates go to the exact finish below instead).
//   pivot   Condat's one-pass filter (2016) in double on z > -1, then the exact finish.
//   filter  long rows: the max pass keeps its 4·width lane maxima; a few Michelot rounds on that
//           subset give a lower bound of tau_z ((sum_V z - 1)/|V| <= tau for every V), so a
//           second SIMD pass compacts the few z above it, and the exact finish runs on those.
//   stream  rows beyond the cache: filter's max pass and compaction fused block by block (two
//           reads of x from memory instead of three).
// The exact finish is Michelot's method (tau_V = (sum_V z - 1)/|V| is a lower bound of tau for
// every V; drop the elements <= tau_V until none is dropped), with tau held monotone and a sort
// after 48 rounds so a row built to need many rounds costs O(k log k).
//
// Consistency: the write pass uses tau_T, tau_z rounded towards -inf in T, so for every element
// (z > tau_z in double) <=> (z > tau_T in T) <=> y > 0: support_size is exactly the number of
// nonzero outputs (barring flush-to-zero of a positive difference below FLT_MIN, E8).
//
// Nothing below calls a non-A-templated inline function (std::sort takes an A-templated
// comparator; the scratch buffer is malloc'ed), so no instruction set's code can leak into another
// through the linker (see table.hpp).

#include <math.h>
#include <stdlib.h>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "../config.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/scratch.hpp"

namespace smax {
namespace kernels {

enum class sparsemax_algorithm : unsigned {
  automatic = 0,
  sort = 1,
  pivot = 2,
  filter = 3,
  stream = 4
};

// Rows up to this length take the sort path, longer rows the filter path. Measured
// (sparsemax/smax_<algorithm>/n, AVX-512, rows U[-s/2, s/2] for s = 16, 2, 0.5): sort is fastest
// up to 64-128 elements, filter from 128-256 on (2-3x faster than sort or pivot at n = 1000 to
// 4096). Condat's pivot was never the fastest (within 10-25% of sort up to 64, 1.5-3x behind
// filter beyond), so the automatic choice never takes it; it stays selectable. Rows of at least
// stream_min_bytes take the stream path: 9% faster than filter at 2^20 floats (out of cache),
// 15% slower at 2^18 and below (the per-block bounds cost more than the saved pass).
constexpr std::size_t sparsemax_sort_max_length = 128;
constexpr std::size_t sparsemax_stream_min_bytes = std::size_t(2) << 20;

// The state of one row after its threshold is known.
template <class T>
struct sparsemax_row_state {
  enum kind_t : unsigned { ordinary = 0, nan_row = 1, empty = 2 } kind;
  T max;                     // row maximum m
  double tau;                // threshold of z = x - m (in [-1, 0))
  T tau_rounded;             // tau rounded towards -inf in T: the write pass's threshold
  std::size_t support_size;  // #{i : z_i > tau}
};

namespace sparsemax_detail {

template <class A>
struct descending {
  bool operator()(double a, double b) const noexcept { return a > b; }
};

// The per-thread scratch (primitives/scratch.hpp), as doubles.
template <class A>
inline double* scratch(std::size_t n) noexcept {
  return primitives::scratch<A, double>(n);
}

template <class A, class T>
inline T round_down(double t) noexcept {
  if constexpr (sizeof(T) == 4) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) > t) f = ::nextafterf(f, -__builtin_huge_valf());
    return f;
  } else {
    return t;
  }
}

// Sum of c[0..k) in double: plain for float rows (the z of float inputs are summed with
// error <= k·2^-53), compensated (Neumaier) for double rows.
template <class A, class T>
inline double sum_of(const double* c, std::size_t k) noexcept {
  if constexpr (sizeof(T) == 4) {
    double s0 = 0, s1 = 0;
    std::size_t i = 0;
    for (; i + 2 <= k; i += 2) {
      s0 += c[i];
      s1 += c[i + 1];
    }
    if (i < k) s0 += c[i];
    return s0 + s1;
  } else {
    double s = 0, e = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double v = c[i], t = s + v;
      const double as = s < 0 ? -s : s, av = v < 0 ? -v : v;
      e += as >= av ? (s - t) + v : (v - t) + s;
      s = t;
    }
    return s + e;
  }
}

// Threshold of c[0..k) by sorting: c sorted descending, k* = max{j : 1 + j·c_j > sum_{i<=j} c_i},
// tau = (sum_{i<=k*} c_i - 1)/k*. k >= 1 and c holds the maximum 0.
template <class A, class T>
inline double sorted_threshold(double* c, std::size_t k) noexcept {
  if (k <= 32) {
    for (std::size_t i = 1; i < k; ++i) {
      const double v = c[i];
      std::size_t j = i;
      for (; j > 0 && c[j - 1] < v; --j) c[j] = c[j - 1];
      c[j] = v;
    }
  } else {
    std::sort(c, c + k, descending<A>{});
  }
  double s = 0, e = 0, best_sum = c[0];
  std::size_t best = 1;
  for (std::size_t j = 0; j < k; ++j) {
    const double v = c[j], t = s + v;
    if constexpr (sizeof(T) == 8) {
      const double as = s < 0 ? -s : s, av = v < 0 ? -v : v;
      e += as >= av ? (s - t) + v : (v - t) + s;
    }
    s = t;
    // Strict: an element exactly at the threshold is not in the support ([1, 0] -> [1, 0]).
    if (1.0 + static_cast<double>(j + 1) * v > s + e) {
      best = j + 1;
      best_sum = s + e;
    } else {
      break;  // the condition holds for a prefix of the sorted order only
    }
  }
  return (best_sum - 1.0) / static_cast<double>(best);
}

// Michelot's exact finish on the candidates c[0..k) (a superset of the support, holding the
// maximum 0), from a known lower bound of tau. Compacts c to the support and returns tau;
// *support gets its size. A round drops every element <= tau_V; for an element to survive a
// round and fall in the next, the gaps below tau must grow by a factor |V| per round, so rows
// with z in (-1, 0] need about 20 rounds at most (the gaps start at one ulp); the sort after
// max_rounds is a guard, reachable in tests through max_rounds.
template <class A, class T>
inline double exact_threshold(double* c, std::size_t k, double lower, std::size_t* support,
                              int max_rounds = 48) noexcept {
  double tau = lower;
  for (int round = 0;; ++round) {
    if (round == max_rounds) {
      const double t = sorted_threshold<A, T>(c, k);
      if (t > tau) tau = t;
      std::size_t j = 0;
      for (std::size_t i = 0; i < k; ++i) j += c[i] > tau;
      k = j;  // sorted descending: the support is the prefix
      break;
    }
    const double t = (sum_of<A, T>(c, k) - 1.0) / static_cast<double>(k);
    // tau_V grows as V shrinks; rounding must not make it shrink (that would revive an element
    // dropped in an earlier round).
    if (t > tau) tau = t;
    std::size_t j = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double v = c[i];
      c[j] = v;
      j += v > tau;
    }
    if (j == k) break;
    k = j;
  }
  *support = k;
  return tau;
}

// Row maximum and NaN flag, and the 4·width lane maxima when lanes != nullptr
// (primitives::reduce_max).
template <class A, class T>
inline T max_with_lanes(const T* x, std::size_t n, bool* has_nan, T* lanes) noexcept {
  const auto r = primitives::reduce_max<A>(x, n, lanes);
  *has_nan = r.has_nan;
  return r.max;
}

// Special rows (docs/edge_cases.md): NaN or +inf anywhere, or nothing but -inf. Returns true when
// the state is final.
template <class A, class T>
inline bool special_row(T max, bool has_nan, std::size_t n, sparsemax_row_state<T>& s) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  s.max = max;
  s.support_size = 0;
  s.tau = __builtin_nan("");
  s.tau_rounded = nan;
  if (n == 0) {
    s.kind = sparsemax_row_state<T>::empty;
    return true;
  }
  if (has_nan || max == T(__builtin_huge_val()) || max == T(-__builtin_huge_val())) {
    s.kind = sparsemax_row_state<T>::nan_row;
    return true;
  }
  s.kind = sparsemax_row_state<T>::ordinary;
  return false;
}

template <class A, class T>
inline void finish_state(sparsemax_row_state<T>& s, double tau, std::size_t support) noexcept {
  s.tau = tau;
  s.tau_rounded = round_down<A, T>(tau);
  s.support_size = support;
}

// Short rows: copy the finite z to a stack array, sort, scan.
template <class A, class T>
inline sparsemax_row_state<T> threshold_by_sort(const T* x, std::size_t n) noexcept {
  sparsemax_row_state<T> s;
  bool has_nan = false;
  const T max = max_with_lanes<A>(x, n, &has_nan, static_cast<T*>(nullptr));
  if (special_row<A>(max, has_nan, n, s)) return s;
  constexpr std::size_t stack = 128;
  double local[stack];
  double* c = n <= stack ? local : scratch<A>(n);
  if (c == nullptr) {
    s.kind = sparsemax_row_state<T>::nan_row;
    return s;
  }
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T z = x[i] - max;
    c[k] = static_cast<double>(z);
    k += z > T(-1);  // tau >= -1: nothing at or below -1 (nor -inf) is in the support
  }
  // More than 32 candidates (a dense row): Michelot's exact method instead of a longer sort.
  std::size_t support = 0;
  double tau;
  if (k <= 32) {
    tau = sorted_threshold<A, T>(c, k);
    for (std::size_t i = 0; i < k; ++i) support += c[i] > tau;
  } else {
    tau = exact_threshold<A, T>(c, k, -1.0, &support);
  }
  finish_state<A>(s, tau, support);
  return s;
}

// Condat's filter over z > -1 (a running lower bound rho = (sum_v - 1)/|v| of tau and a
// candidate list v; when one element alone gives a better bound, v is set aside in vt), then
// the exact finish on v. rho is lowered by a margin that covers its rounding (|z| <= 1, at most
// n updates of relative error 2^-53), so v stays a superset of the support.
template <class A, class T>
inline sparsemax_row_state<T> threshold_by_pivot(const T* x, std::size_t n) noexcept {
  sparsemax_row_state<T> s;
  bool has_nan = false;
  const T max = max_with_lanes<A>(x, n, &has_nan, static_cast<T*>(nullptr));
  if (special_row<A>(max, has_nan, n, s)) return s;
  double* a = scratch<A>(2 * n);  // v and vt, and vt's elements re-added to v
  if (a == nullptr) {
    s.kind = sparsemax_row_state<T>::nan_row;
    return s;
  }
  const double margin = 1e-9;
  double rho = -1.0;               // lower bound of tau
  std::size_t begin = 0, end = 0;  // v = a[begin, end), vt = a[0, begin)
  for (std::size_t i = 0; i < n; ++i) {
    const T zt = x[i] - max;
    const double z = static_cast<double>(zt);
    if (!(z > rho - margin)) continue;
    if (end == begin) {
      a[end++] = z;
      rho = z - 1.0;
      continue;
    }
    rho += (z - rho) / static_cast<double>(end - begin + 1);
    if (rho > z - 1.0) {
      a[end++] = z;
    } else {
      begin = end;
      a[end++] = z;
      rho = z - 1.0;
    }
  }
  for (std::size_t i = 0; i < begin; ++i) {
    const double z = a[i];
    if (z > rho - margin) {
      a[end++] = z;
      rho += (z - rho) / static_cast<double>(end - begin);
    }
  }
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(a + begin, end - begin, -1.0, &support);
  finish_state<A>(s, tau, support);
  return s;
}

// A lower bound of tau_z from the lane maxima (values of distinct elements, -inf for empty
// lanes): a few Michelot rounds on them. Every tau_V is a lower bound, exact or not, and the first
// rounds are the ones that raise it most.
template <class A, class T>
inline double lane_lower_bound(const T* lanes, T max) noexcept {
  constexpr std::size_t count = 4 * xsimd::batch<T, A>::size;
  double sub[count];
  std::size_t k = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const T z = lanes[j] - max;
    sub[k] = static_cast<double>(z);
    k += z > T(-1);
  }
  double lower = -1.0;
  for (int round = 0; round < 3 && k > 0; ++round) {
    const double t = (sum_of<A, T>(sub, k) - 1.0) / static_cast<double>(k);
    if (t > lower) lower = t;
    std::size_t j = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double v = sub[i];
      sub[j] = v;
      j += v > lower;
    }
    if (j == k) break;
    k = j;
  }
  return lower;
}

// Appends to c every x - shift > bound (computed in T, as the write pass computes z), as double;
// returns the new count. Most vectors hold no candidate and cost a subtract, a compare and a
// test. c needs room for n + width more elements (the padding lanes of a vector are written, not
// counted).
template <class A, class T>
inline std::size_t compact_above(const T* x, std::size_t n, T shift, T bound, double* c,
                                 std::size_t count) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch mb(shift), lb(bound);
  alignas(64) T z_lanes[width];
  auto append = [&](batch const& z) {
    z.store_aligned(z_lanes);
    for (std::size_t j = 0; j < width; ++j) {
      c[count] = static_cast<double>(z_lanes[j]);
      count += z_lanes[j] > bound;
    }
  };
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch z0 = batch::load_unaligned(x + i) - mb;
    const batch z1 = batch::load_unaligned(x + i + width) - mb;
    const batch z2 = batch::load_unaligned(x + i + 2 * width) - mb;
    const batch z3 = batch::load_unaligned(x + i + 3 * width) - mb;
    const auto c0 = z0 > lb, c1 = z1 > lb, c2 = z2 > lb, c3 = z3 > lb;
    if (xsimd::any((c0 | c1) | (c2 | c3))) {
      if (xsimd::any(c0)) append(z0);
      if (xsimd::any(c1)) append(z1);
      if (xsimd::any(c2)) append(z2);
      if (xsimd::any(c3)) append(z3);
    }
  }
  for (; i + width <= n; i += width) {
    const batch z = batch::load_unaligned(x + i) - mb;
    if (xsimd::any(z > lb)) append(z);
  }
  if (i < n) {
    // -inf padding: -inf - shift = -inf is never a candidate.
    const batch z = primitives::load_partial<A>(x + i, n - i, T(-__builtin_huge_val())) - mb;
    if (xsimd::any(z > lb)) append(z);
  }
  return count;
}

// Long rows: lane maxima -> lower bound -> SIMD compaction of z above it -> exact finish.
template <class A, class T>
inline sparsemax_row_state<T> threshold_by_filter(const T* x, std::size_t n) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  sparsemax_row_state<T> s;
  bool has_nan = false;
  alignas(64) T lanes[4 * width];
  const T max = max_with_lanes<A>(x, n, &has_nan, lanes);
  if (special_row<A>(max, has_nan, n, s)) return s;
  const double lower = lane_lower_bound<A>(lanes, max);
  double* c = scratch<A>(n + width);
  if (c == nullptr) {
    s.kind = sparsemax_row_state<T>::nan_row;
    return s;
  }
  const std::size_t count = compact_above<A>(x, n, max, round_down<A, T>(lower), c, 0);
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(c, count, lower, &support);
  finish_state<A>(s, tau, support);
  return s;
}

// Rows beyond the cache: the max pass and the compaction fused block by block, so x is read from
// memory twice (here and in the write pass) instead of three times. Each block (in L1) gets its
// max pass, then the lane bound of everything seen so far: the threshold of a part of the row is
// at most the row's (unshifted), so x > m_seen + bound_seen - margin keeps every support element.
// The candidates are kept unshifted and shifted by the final m at the end. The margin (8 ulp of
// max(|m|, 1)) covers the rounding of the bound, which is computed in the frame of m_seen.
template <class A, class T>
inline sparsemax_row_state<T> threshold_by_stream(const T* x, std::size_t n) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  constexpr std::size_t block = 4096;
  const T inf = T(__builtin_huge_val());
  sparsemax_row_state<T> s;
  alignas(64) T lanes[4 * width], block_lanes[4 * width];
  for (std::size_t j = 0; j < 4 * width; ++j) lanes[j] = -inf;
  T max = -inf;
  bool has_nan = false;
  double* c = scratch<A>(n + width);
  if (c == nullptr && n > 0) {
    s.kind = sparsemax_row_state<T>::nan_row;
    return s;
  }
  std::size_t count = 0;
  for (std::size_t b = 0; b < n; b += block) {
    const std::size_t len = n - b < block ? n - b : block;
    bool block_nan = false;
    const T block_max = max_with_lanes<A>(x + b, len, &block_nan, block_lanes);
    has_nan = has_nan || block_nan;
    if (block_max > max) max = block_max;
    if (has_nan || primitives::is_pos_inf(max)) break;  // a NaN row whatever follows
    if (primitives::is_neg_inf(max)) continue;          // masked so far: nothing to keep
    for (std::size_t j = 0; j < 4 * width; ++j)
      lanes[j] = block_lanes[j] > lanes[j] ? block_lanes[j] : lanes[j];
    const double abs_max = max < T(0) ? -static_cast<double>(max) : static_cast<double>(max);
    const double margin =
        8.0 * static_cast<double>(std::numeric_limits<T>::epsilon()) * (abs_max + 1.0);
    const double bound = static_cast<double>(max) + lane_lower_bound<A>(lanes, max) - margin;
    count = compact_above<A>(x + b, len, T(0), round_down<A, T>(bound), c, count);
  }
  if (special_row<A>(max, has_nan, n, s)) return s;
  std::size_t k = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const T z = static_cast<T>(c[i]) - max;
    c[k] = static_cast<double>(z);
    k += z > T(-1);
  }
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(c, k, -1.0, &support);
  finish_state<A>(s, tau, support);
  return s;
}

template <class A, class T>
inline sparsemax_row_state<T> row_threshold(const T* x, std::size_t n,
                                            sparsemax_algorithm algorithm) noexcept {
  if (algorithm == sparsemax_algorithm::automatic)
    algorithm = n <= sparsemax_sort_max_length                ? sparsemax_algorithm::sort
                : n * sizeof(T) >= sparsemax_stream_min_bytes ? sparsemax_algorithm::stream
                                                              : sparsemax_algorithm::filter;
  switch (algorithm) {
    case sparsemax_algorithm::sort:
      return threshold_by_sort<A>(x, n);
    case sparsemax_algorithm::pivot:
      return threshold_by_pivot<A>(x, n);
    case sparsemax_algorithm::stream:
      return threshold_by_stream<A>(x, n);
    default:
      return threshold_by_filter<A>(x, n);
  }
}

template <class A, class T>
inline void fill(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// y = max((x - m) - tau_T, 0); x == y allowed. With prefetch_distance > 0, every iteration asks
// for the lines that far ahead (the next row of a batch, which the max pass would otherwise wait
// for; a hint only).
template <class A, class T>
inline void write_row(const T* x, T* y, std::size_t n, sparsemax_row_state<T> const& s,
                      std::size_t prefetch_distance = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  if (s.kind != sparsemax_row_state<T>::ordinary) {
    fill<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const batch mb(s.max), tb(s.tau_rounded), zero(T(0));
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    if (prefetch_distance)
      primitives::prefetch<A>(x + i + prefetch_distance, 4 * width * sizeof(T));
    const batch r0 = xsimd::max((batch::load_unaligned(x + i) - mb) - tb, zero);
    const batch r1 = xsimd::max((batch::load_unaligned(x + i + width) - mb) - tb, zero);
    const batch r2 = xsimd::max((batch::load_unaligned(x + i + 2 * width) - mb) - tb, zero);
    const batch r3 = xsimd::max((batch::load_unaligned(x + i + 3 * width) - mb) - tb, zero);
    r0.store_unaligned(y + i);
    r1.store_unaligned(y + i + width);
    r2.store_unaligned(y + i + 2 * width);
    r3.store_unaligned(y + i + 3 * width);
  }
  for (; i + width <= n; i += width)
    xsimd::max((batch::load_unaligned(x + i) - mb) - tb, zero).store_unaligned(y + i);
  if (i < n)
    primitives::store_partial<A>(
        y + i, n - i,
        xsimd::max((primitives::load_partial<A>(x + i, n - i, T(0)) - mb) - tb, zero));
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                         std::size_t cols, sparsemax_algorithm algorithm) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const sparsemax_row_state<T> s = row_threshold<A>(x + r * ldx, cols, algorithm);
    // Rows of at least 1 KiB prefetch the next row during their write pass (as softmax does).
    const std::size_t next = r + 1 < rows && cols * sizeof(T) >= 1024 ? ldx : 0;
    write_row<A>(x + r * ldx, y + r * ldy, cols, s, next);
  }
}

template <class A, class T>
inline void scale(T* y, std::size_t n, T factor) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch f(factor);
  std::size_t i = 0;
  for (; i + width <= n; i += width) (batch::load_unaligned(y + i) * f).store_unaligned(y + i);
  for (; i < n; ++i) y[i] *= factor;
}

// dx = s ⊙ (dy - mean_S dy), s = [y > 0]. A NaN anywhere in y (a NaN row) gives a NaN row.
// The sum of dy over S: four vectors at a time in T (three additions per lane), each group
// folded into a compensated double sum, so its error is <= 2^-23·sum_S |dy| (float) whatever n.
template <class A, class T>
inline void backward_row(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch zero(T(0)), one(T(1));
  batch count(T(0));  // lanes count at most n/width < 2^24 each: exact in float
  auto nan = primitives::is_nan(zero);
  double sum = 0, compensation = 0;
  auto add = [&](double v) {
    const double t = sum + v;
    const double as = sum < 0 ? -sum : sum, av = v < 0 ? -v : v;
    compensation += as >= av ? (sum - t) + v : (v - t) + sum;
    sum = t;
  };
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    batch part[4];
    for (std::size_t j = 0; j < 4; ++j) {
      const batch yv = batch::load_unaligned(y + i + j * width);
      const auto s = yv > zero;
      part[j] = xsimd::select(s, batch::load_unaligned(dy + i + j * width), zero);
      count += xsimd::select(s, one, zero);
      nan = nan | primitives::is_nan(yv);
    }
    add(smax::detail::horizontal_sum((part[0] + part[1]) + (part[2] + part[3])));
  }
  // The rest one vector at a time, each folded on its own; the padding (y = 0) is off S.
  for (; i < n; i += width) {
    const std::size_t m = n - i < width ? n - i : width;
    const batch yv = primitives::load_partial<A>(y + i, m, T(0));
    const auto s = yv > zero;
    add(smax::detail::horizontal_sum(
        xsimd::select(s, primitives::load_partial<A>(dy + i, m, T(0)), zero)));
    count += xsimd::select(s, one, zero);
    nan = nan | primitives::is_nan(yv);
  }
  if (xsimd::any(nan)) {
    fill<A>(dx, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const double k = smax::detail::horizontal_sum(count);
  const T mean = k > 0 ? static_cast<T>((sum + compensation) / k) : T(0);
  const batch mb(mean);
  i = 0;
  for (; i + width <= n; i += width) {
    const batch yv = batch::load_unaligned(y + i);
    xsimd::select(yv > zero, batch::load_unaligned(dy + i) - mb, zero).store_unaligned(dx + i);
  }
  if (i < n) {
    const batch yv = primitives::load_partial<A>(y + i, n - i, T(0));
    primitives::store_partial<A>(
        dx + i, n - i,
        xsimd::select(yv > zero, primitives::load_partial<A>(dy + i, n - i, T(0)) - mb, zero));
  }
}

template <class A, class T>
inline void backward_rows(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                          std::size_t lddx, std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols);
}

// L = -z_t + ½·sum_S (z_j² - tau²) + ½ on z = x - m (shift invariant), the sum only over the
// support. With sum_S (z_j - tau) = 1 this is L = -z_t + tau + ½·(1 + sum_S (z_j - tau)²), which
// is evaluated: it is stationary in tau (its derivative 1 - sum_S (z_j - tau) is 0), so the
// rounding of tau enters once, where the first form multiplies it by |S|·|tau| (101 entries
// near 7 gave double 6.9e-15). Masked target: +inf. Special rows and a target out of range: NaN.
template <class A, class T>
inline T loss(const T* x, std::size_t n, std::size_t target) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  if (target >= n) return nan;
  const sparsemax_row_state<T> s = row_threshold<A>(x, n, sparsemax_algorithm::automatic);
  if (s.kind != sparsemax_row_state<T>::ordinary) return nan;
  if (x[target] == T(-__builtin_huge_val())) return T(__builtin_huge_val());
  // The support: every z > tau. The threshold kernels keep it in their scratch, but the short
  // path's stack copy is gone, so the support is summed here from x (z recomputed in T).
  // Compensated (Neumaier): one large term beside thousands of tiny ones is the usual shape (a
  // dominant entry over a long tail in the support), and adding each tiny one to the large
  // partial sum plainly lost up to half an ulp of it every time (double, 3388 entries at -0.5
  // beside one 0: 9e-14, against a bound of 2^-50·(1 + |L|) = 1e-15).
  double sum = 0, compensation = 0;
  const double tau = s.tau;
  for (std::size_t i = 0; i < n; ++i) {
    const T zt = x[i] - s.max;
    const double z = static_cast<double>(zt);
    if (z > tau) {
      const double v = (z - tau) * (z - tau), t = sum + v;
      compensation += sum >= v ? (sum - t) + v : (v - t) + sum;  // both >= 0
      sum = t;
    }
  }
  const double zt = static_cast<double>(static_cast<T>(x[target] - s.max));
  return static_cast<T>((tau - zt) + 0.5 * (1.0 + (sum + compensation)));
}

// dx = dloss·(y - e_t). A masked target (the loss is +inf) or a special row gives a NaN row.
template <class A, class T>
inline void loss_backward(const T* x, std::size_t n, std::size_t target, T dloss, T* dx) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  if (target >= n || x[target] == T(-__builtin_huge_val())) {
    fill<A>(dx, n, nan);
    return;
  }
  const sparsemax_row_state<T> s = row_threshold<A>(x, n, sparsemax_algorithm::automatic);
  const T target_y =
      s.kind == sparsemax_row_state<T>::ordinary
          ? ((x[target] - s.max) - s.tau_rounded > T(0) ? (x[target] - s.max) - s.tau_rounded
                                                        : T(0))
          : nan;
  write_row<A>(x, dx, n, s);
  scale<A>(dx, n, dloss);
  dx[target] = (target_y - T(1)) * dloss;
}

}  // namespace sparsemax_detail

template <class A>
struct sparsemax_table {
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, sparsemax_algorithm algorithm) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, sparsemax_algorithm algorithm) noexcept;
  // The row's state (max, tau of x - max, its rounding, support size) without writing y.
  static sparsemax_row_state<float> threshold(const float* x, std::size_t n,
                                              sparsemax_algorithm algorithm) noexcept;
  static sparsemax_row_state<double> threshold(const double* x, std::size_t n,
                                               sparsemax_algorithm algorithm) noexcept;
  static void backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                       float* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
  static void backward(const double* y, std::size_t ldy, const double* dy, std::size_t lddy,
                       double* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
  static float loss(const float* x, std::size_t n, std::size_t target) noexcept;
  static double loss(const double* x, std::size_t n, std::size_t target) noexcept;
  static void loss_backward(const float* x, std::size_t n, std::size_t target, float dloss,
                            float* dx) noexcept;
  static void loss_backward(const double* x, std::size_t n, std::size_t target, double dloss,
                            double* dx) noexcept;
};

template <class A>
void sparsemax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                 std::size_t rows, std::size_t cols,
                                 sparsemax_algorithm algorithm) noexcept {
  sparsemax_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, algorithm);
}
template <class A>
void sparsemax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                 std::size_t rows, std::size_t cols,
                                 sparsemax_algorithm algorithm) noexcept {
  sparsemax_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, algorithm);
}
template <class A>
sparsemax_row_state<float> sparsemax_table<A>::threshold(const float* x, std::size_t n,
                                                         sparsemax_algorithm algorithm) noexcept {
  return sparsemax_detail::row_threshold<A>(x, n, algorithm);
}
template <class A>
sparsemax_row_state<double> sparsemax_table<A>::threshold(const double* x, std::size_t n,
                                                          sparsemax_algorithm algorithm) noexcept {
  return sparsemax_detail::row_threshold<A>(x, n, algorithm);
}
template <class A>
void sparsemax_table<A>::backward(const float* y, std::size_t ldy, const float* dy,
                                  std::size_t lddy, float* dx, std::size_t lddx, std::size_t rows,
                                  std::size_t cols) noexcept {
  sparsemax_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
template <class A>
void sparsemax_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                  std::size_t lddy, double* dx, std::size_t lddx, std::size_t rows,
                                  std::size_t cols) noexcept {
  sparsemax_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
template <class A>
float sparsemax_table<A>::loss(const float* x, std::size_t n, std::size_t target) noexcept {
  return sparsemax_detail::loss<A>(x, n, target);
}
template <class A>
double sparsemax_table<A>::loss(const double* x, std::size_t n, std::size_t target) noexcept {
  return sparsemax_detail::loss<A>(x, n, target);
}
template <class A>
void sparsemax_table<A>::loss_backward(const float* x, std::size_t n, std::size_t target,
                                       float dloss, float* dx) noexcept {
  sparsemax_detail::loss_backward<A>(x, n, target, dloss, dx);
}
template <class A>
void sparsemax_table<A>::loss_backward(const double* x, std::size_t n, std::size_t target,
                                       double dloss, double* dx) noexcept {
  sparsemax_detail::loss_backward<A>(x, n, target, dloss, dx);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(sparsemax_table)
