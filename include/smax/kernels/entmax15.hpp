#pragma once
// 1.5-entmax kernels (docs/entmax15.md) for one instruction set A: y = [z - tau]_+^2 on
// z = (x - m)/2 (m the row maximum) with tau such that sum(y) = 1, its backward pass and the
// entmax loss.
//
// Every algorithm works on z computed in T exactly as the write pass computes it, and finds tau
// (the threshold of z, in [-1, 0): the maximum z = 0 is in the support and (0 - tau)^2 <= 1) in
// double from those z values. Only entries with z > -1 can be in the support. The threshold of any
// subset of the row is a lower bound of the row's (f(t) = sum [z - t]_+^2 only grows with the
// set), and so is every Newton iterate on f from below (f is convex and decreasing).
//   sort    short rows: the z > -1 copied to a stack array, then the exact finish below.
//   filter  long rows: the max pass keeps its 4·width lane maxima; their threshold (a subset's)
//           is a lower bound of tau, so a second SIMD pass compacts the few z above it, and the
//           exact finish runs on those.
// The exact finish (exact_threshold) keeps a lower bound t of tau and the set A = {z > t}, which
// holds the support. Each round sums (z - t) and (z - t)^2 over A (centred at t: every term is in
// (0, 1], nothing cancels) and solves sum_A (z - t')^2 = 1 for its smaller root t'; if every
// element of A lies above t', t' is tau exactly (the elements outside A lie at or below t <= t').
// Otherwise a Newton step raises t and A shrinks. Sets of at most 16 elements, and sets still
// undecided after 32 rounds, are sorted and solved by the prefix scan, so a row built to need many
// rounds costs O(k log k).
//
// Consistency: the write pass uses tau_T, tau rounded towards -inf in T, so for every element
// (z > tau in double) <=> (z > tau_T in T) <=> z - tau_T > 0. The support a threshold algorithm
// settles on can differ from that by entries within a rounding of tau (tau is refined once the
// support is chosen), so the threshold call counts the positive differences on the row
// (support_of): support_size is exactly the number of nonzero outputs (a positive difference is
// at least an ulp of tau_T, and |tau| >= 1/sqrt(n), so its square does not underflow).
//
// The scratch buffer, the rounding and the SIMD compaction are sparsemax's (kernels/sparsemax.hpp,
// every one of them templated on A).

#include <math.h>
#include <algorithm>
#include <cstddef>
#include <limits>

#include "../config.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "sparsemax.hpp"

namespace smax {
namespace kernels {

enum class entmax15_algorithm : unsigned { automatic = 0, sort = 1, filter = 2 };

// Rows up to this length copy their candidates to the stack, longer rows take the filter path
// (the lane bound and the SIMD compaction pay off once most entries can be skipped).
constexpr std::size_t entmax15_short_max_length = 128;
// Rows from this length on first find the threshold of their first sixteenth (recursively): a
// lower bound that keeps far fewer candidates than the lane bound, and lets the max pass compact.
constexpr std::size_t entmax15_part_min_length = 4096;

// The state of one row after its threshold is known.
template <class T>
struct entmax15_row_state {
  enum kind_t : unsigned { ordinary = 0, nan_row = 1, empty = 2 } kind;
  T max;                     // row maximum m
  double tau;                // threshold of z = (x - m)/2 (in [-1, 0))
  T tau_rounded;             // tau rounded towards -inf in T: the write pass's threshold
  std::size_t support_size;  // #{i : z_i - tau_T > 0} (recounted by table::threshold)
};

namespace entmax15_detail {

// A sum in double: plain for float rows (at most 2^20·2^-53 relative for a million terms),
// compensated (Neumaier) for double rows.
template <class A, class T>
struct accumulator {
  double sum = 0, compensation = 0;
  SMAX_ALWAYS_INLINE void add(double v) noexcept {
    if constexpr (sizeof(T) == 4) {
      sum += v;
    } else {
      const double t = sum + v;
      const double as = sum < 0 ? -sum : sum, av = v < 0 ? -v : v;
      compensation += as >= av ? (sum - t) + v : (v - t) + sum;
      sum = t;
    }
  }
  double value() const noexcept { return sum + compensation; }
};

// The smaller root t + u of sum_c (z - t - u)^2 = 1, from s1 = sum (z - t), s2 = sum (z - t)^2
// over k elements: k·u^2 - 2·s1·u + (s2 - 1) = 0, u = (s2 - 1)/(s1 + sqrt(s1^2 - k·(s2 - 1)))
// (the form without cancellation when s2 is near 1). Returns false when there is no root.
template <class A>
inline bool smaller_root(double s1, double s2, std::size_t k, double t, double* root) noexcept {
  const double f = s2 - 1.0;
  const double d = s1 * s1 - static_cast<double>(k) * f;
  if (!(d >= 0)) return false;
  *root = t + f / (s1 + ::sqrt(d));
  return true;
}

// The root of the support c[0..k) (every element above the result), refined from t: one
// evaluation of the centred sums around t, which removes the rounding of t's computation.
template <class A, class T>
inline double root_of_support(const double* c, std::size_t k, double t) noexcept {
  accumulator<A, T> s1, s2;
  for (std::size_t i = 0; i < k; ++i) {
    const double d = c[i] - t;
    s1.add(d);
    s2.add(d * d);
  }
  double root = t;
  if (smaller_root<A>(s1.value(), s2.value(), k, t, &root)) return root;
  return t;
}

// Threshold of c[0..k) (k >= 1, holding the maximum 0) by sorting: c sorted descending; with S1_j
// and S2_j the sums of the first j and of their squares, the threshold of the first j is
// tau_j = mu_j - sqrt(max((1 - M_j)/j, 0)) (mu_j = S1_j/j, M_j = S2_j - S1_j^2/j), and the support
// is the longest prefix with c_j > tau_j (strict: an entry exactly at tau gives 0). As c_j <= mu_j,
// that test is j·(1 - S2_j) + S1_j^2 > (S1_j - j·c_j)^2, without a division or a root, so the
// steps do not wait on each other; its rounding can only misplace an entry within rounding of tau,
// and tau itself is then taken from sums centred at it (root_of_support). Returns tau; *support
// gets the size.
template <class A, class T>
inline double sorted_threshold(double* c, std::size_t k, std::size_t* support) noexcept {
  if (k <= 32) {
    for (std::size_t i = 1; i < k; ++i) {
      const double v = c[i];
      std::size_t j = i;
      for (; j > 0 && c[j - 1] < v; --j) c[j] = c[j - 1];
      c[j] = v;
    }
  } else {
    std::sort(c, c + k, sparsemax_detail::descending<A>{});
  }
  double s1 = 0, s2 = 0, best_s1 = 0, best_s2 = 0;
  std::size_t best = 1;
  for (std::size_t j = 0; j < k; ++j) {
    const double v = c[j], count = static_cast<double>(j + 1);
    s1 += v;
    s2 += v * v;
    const double gap = s1 - count * v;
    if (count * (1.0 - s2) + s1 * s1 > gap * gap || j == 0) {
      best = j + 1;
      best_s1 = s1;
      best_s2 = s2;
    } else {
      break;  // the condition holds for a prefix of the sorted order only
    }
  }
  const double count = static_cast<double>(best), mean = best_s1 / count;
  const double spread = (1.0 - (best_s2 - best_s1 * mean)) / count;
  *support = best;
  return root_of_support<A, T>(c, best, mean - ::sqrt(spread > 0 ? spread : 0.0));
}

// The exact finish on the candidates c[0..k) (a superset of the support holding the maximum 0,
// every element above `lower`), from a lower bound of tau. Compacts c (the support is its first
// *support elements when it returns) and returns tau. max_rounds is reachable in tests. With
// bound_only, a set still undecided after max_rounds returns its current lower bound instead of
// being sorted.
template <class A, class T>
inline double exact_threshold(double* c, std::size_t k, double lower, std::size_t* support,
                              int max_rounds = 32, bool bound_only = false) noexcept {
  double t = lower;
  for (int round = 0;; ++round) {
    if (bound_only && round >= max_rounds) {
      *support = k;
      return t;
    }
    if (k <= 16 || round >= max_rounds) return sorted_threshold<A, T>(c, k, support);
    accumulator<A, T> s1, s2;
    double lowest = __builtin_huge_val();
    std::size_t j = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double v = c[i];
      c[j] = v;
      const bool keep = v > t;
      j += keep;
      const double d = keep ? v - t : 0.0;
      s1.add(d);
      s2.add(d * d);
      lowest = keep && v < lowest ? v : lowest;
    }
    k = j;
    const double f = s2.value() - 1.0;
    // Either way A is the support; the root is taken once more from sums centred at it: far
    // from tau the discriminant cancels ((k·d)^2 against k·(k·d^2 - 1) for k entries at distance
    // d), 1e-12 relative for 4096 entries 0.01 apart seen from t = -1.
    if (!(f > 0)) {
      // t is the root (or passed it by a rounding): every element of A is above it.
      *support = k;
      return root_of_support<A, T>(c, k, t);
    }
    double root;
    if (smaller_root<A>(s1.value(), s2.value(), k, t, &root) && lowest > root) {
      *support = k;
      return root_of_support<A, T>(c, k, root);
    }
    // Newton from below on r(t) = sqrt(f(t)) = ||[z - t]_+||, convex (a norm of convex,
    // non-negative parts) and decreasing, so the step stays at or below tau; on r rather than f
    // because f grows like a cube away from tau (Newton on it would gain a third a round), r like
    // a power 3/2.
    const double r = ::sqrt(s2.value());
    t += (s2.value() - r) / s1.value();
  }
}

template <class A, class T>
inline bool special_row(T max, bool has_nan, std::size_t n, entmax15_row_state<T>& s) noexcept {
  s.max = max;
  s.support_size = 0;
  s.tau = __builtin_nan("");
  s.tau_rounded = static_cast<T>(__builtin_nan(""));
  if (n == 0) {
    s.kind = entmax15_row_state<T>::empty;
    return true;
  }
  if (has_nan || max == T(__builtin_huge_val()) || max == T(-__builtin_huge_val())) {
    s.kind = entmax15_row_state<T>::nan_row;
    return true;
  }
  s.kind = entmax15_row_state<T>::ordinary;
  return false;
}

template <class A, class T>
inline void finish_state(entmax15_row_state<T>& s, double tau, std::size_t support) noexcept {
  s.tau = tau;
  s.tau_rounded = sparsemax_detail::round_down<A, T>(tau);
  s.support_size = support;
}

// Short rows: the candidates z > -1 on the stack, then the exact finish.
template <class A, class T>
inline entmax15_row_state<T> threshold_by_sort(const T* x, std::size_t n) noexcept {
  entmax15_row_state<T> s;
  const auto r = primitives::reduce_max<A>(x, n);
  if (special_row<A>(r.max, r.has_nan, n, s)) return s;
  constexpr std::size_t stack = entmax15_short_max_length;
  double local[stack];
  double* c = n <= stack ? local : sparsemax_detail::scratch<A>(n);
  if (c == nullptr) {
    s.kind = entmax15_row_state<T>::nan_row;
    return s;
  }
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const T z = (x[i] - r.max) * T(0.5);
    c[k] = static_cast<double>(z);
    k += z > T(-1);  // tau >= -1: nothing at or below -1 (nor -inf) is in the support
  }
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(c, k, -1.0, &support);
  finish_state<A>(s, tau, support);
  return s;
}

// A lower bound of tau from the lane maxima (values of distinct elements, -inf for empty lanes):
// their own threshold or, if three rounds do not find it, the lower bound those rounds reached;
// less a margin for its rounding.
template <class A, class T>
inline double lane_lower_bound(const T* lanes, T max) noexcept {
  constexpr std::size_t count = 4 * xsimd::batch<T, A>::size;
  double sub[count];
  std::size_t k = 0;
  for (std::size_t j = 0; j < count; ++j) {
    const T z = (lanes[j] - max) * T(0.5);
    sub[k] = static_cast<double>(z);
    k += z > T(-1);
  }
  std::size_t support = 0;
  const double t = exact_threshold<A, T>(sub, k, -1.0, &support, 3, true) - 0x1p-40;
  return t > -1.0 ? t : -1.0;
}

// The max pass and the compaction in one read of x, for a known bound: appends to c every x > bound
// (unshifted, as double: exact), and returns their number; *max and *has_nan as reduce_max gives
// them. c needs room for n + width more elements (the padding lanes of a vector are written, not
// counted).
template <class A, class T>
inline std::size_t max_and_compact_above(const T* x, std::size_t n, T bound, double* c, T* max,
                                         bool* has_nan) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = T(-__builtin_huge_val());
  const batch lb(bound);
  batch m0(neg_inf), m1(neg_inf), m2(neg_inf), m3(neg_inf);
  auto nan = primitives::is_nan(m0);
  alignas(64) T lanes[width];
  std::size_t count = 0;
  auto append = [&](batch const& v) {
    v.store_aligned(lanes);
    for (std::size_t j = 0; j < width; ++j) {
      c[count] = static_cast<double>(lanes[j]);
      count += lanes[j] > bound;
    }
  };
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch v0 = batch::load_unaligned(x + i);
    const batch v1 = batch::load_unaligned(x + i + width);
    const batch v2 = batch::load_unaligned(x + i + 2 * width);
    const batch v3 = batch::load_unaligned(x + i + 3 * width);
    m0 = xsimd::max(m0, v0);
    m1 = xsimd::max(m1, v1);
    m2 = xsimd::max(m2, v2);
    m3 = xsimd::max(m3, v3);
    nan = nan | (primitives::is_nan(v0) | primitives::is_nan(v1)) |
          (primitives::is_nan(v2) | primitives::is_nan(v3));
    const auto c0 = v0 > lb, c1 = v1 > lb, c2 = v2 > lb, c3 = v3 > lb;
    if (xsimd::any((c0 | c1) | (c2 | c3))) {
      if (xsimd::any(c0)) append(v0);
      if (xsimd::any(c1)) append(v1);
      if (xsimd::any(c2)) append(v2);
      if (xsimd::any(c3)) append(v3);
    }
  }
  for (; i < n; i += width) {
    // -inf padding: never a candidate, never the maximum of a row with an entry.
    const batch v = i + width <= n ? batch::load_unaligned(x + i)
                                   : primitives::load_partial<A>(x + i, n - i, neg_inf);
    m0 = xsimd::max(m0, v);
    nan = nan | primitives::is_nan(v);
    if (xsimd::any(v > lb)) append(v);
  }
  *max = smax::detail::horizontal_max(xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3)));
  *has_nan = xsimd::any(nan);
  return count;
}

// Long rows whose first sixteenth has an ordinary threshold: every support entry of the row has
// x > m_part + 2·tau_part (unshifted, the threshold of a part is at most the row's), less a margin
// for the roundings (the part's z are rounded in its own frame, the bound is summed in double:
// 16 epsilon of max(|m_part|, 1)). So the max pass compacts the candidates as it goes, and x is
// read twice (here and in the write pass) instead of three times.
template <class A, class T>
inline entmax15_row_state<T> threshold_from_part(const T* x, std::size_t n,
                                                 entmax15_row_state<T> const& part) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  entmax15_row_state<T> s;
  const double part_max = static_cast<double>(part.max);
  const double margin = 16.0 * static_cast<double>(std::numeric_limits<T>::epsilon()) *
                        ((part_max < 0 ? -part_max : part_max) + 1.0);
  const double bound = part_max + 2.0 * part.tau - margin;
  double* c = sparsemax_detail::scratch<A>(n + width);
  if (c == nullptr) {
    s.kind = entmax15_row_state<T>::nan_row;
    return s;
  }
  T max;
  bool has_nan;
  const std::size_t count = max_and_compact_above<A>(
      x, n, sparsemax_detail::round_down<A, T>(bound), c, &max, &has_nan);
  if (special_row<A>(max, has_nan, n, s)) return s;
  std::size_t k = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const T z = (static_cast<T>(c[i]) - max) * T(0.5);  // as the write pass computes it
    c[k] = static_cast<double>(z);
    k += z > T(-1);
  }
  const double from_part = 0.5 * (bound - static_cast<double>(max));
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(c, k, from_part > -1.0 ? from_part : -1.0, &support);
  finish_state<A>(s, tau, support);
  return s;
}

// Long rows: lane maxima -> lower bound -> SIMD compaction of the z above it -> exact finish.
// The compaction keeps x - m > 2·bound (in T, as the write pass computes x - m); halving is exact.
// Rows of entmax15_part_min_length or more first find the threshold of their first sixteenth
// (recursively): on evenly spread rows it lies about 16^(1/3) times tau's distance below the
// maximum, so the compaction keeps about 2.5 times the support, where the lane bound can keep a
// large part of a dense row; and with it the max pass and the compaction are one pass.
template <class A, class T>
inline entmax15_row_state<T> threshold_by_filter(const T* x, std::size_t n) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  if (n >= entmax15_part_min_length) {
    const entmax15_row_state<T> part = threshold_by_filter<A>(x, n / 16);
    if (part.kind == entmax15_row_state<T>::ordinary) return threshold_from_part<A>(x, n, part);
  }
  entmax15_row_state<T> s;
  alignas(64) T lanes[4 * width];
  const auto r = primitives::reduce_max<A>(x, n, lanes);
  if (special_row<A>(r.max, r.has_nan, n, s)) return s;
  const double lower = lane_lower_bound<A>(lanes, r.max);
  double* c = sparsemax_detail::scratch<A>(n + width);
  if (c == nullptr) {
    s.kind = entmax15_row_state<T>::nan_row;
    return s;
  }
  const std::size_t count = sparsemax_detail::compact_above<A>(
      x, n, r.max, sparsemax_detail::round_down<A, T>(2.0 * lower), c, 0);
  for (std::size_t i = 0; i < count; ++i) c[i] *= 0.5;
  std::size_t support = 0;
  const double tau = exact_threshold<A, T>(c, count, lower, &support);
  finish_state<A>(s, tau, support);
  return s;
}

// The number of entries whose difference (x - m)/2 - tau_T, computed as write_row computes it,
// is positive: every nonzero output, and those whose square underflows. The threshold's own
// count can differ for entries within a rounding of tau (the root is refined after the support
// is chosen), so the threshold call recounts on the row.
template <class A, class T>
inline std::size_t support_of(const T* x, std::size_t n, entmax15_row_state<T> const& s) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch mb(s.max), tb(s.tau_rounded), half(T(0.5)), zero(T(0)), one(T(1));
  auto positive = [&](batch const& v) {
    return xsimd::select((v - mb) * half - tb > zero, one, zero);
  };
  auto lanes = [](batch const& counts) {
    alignas(64) T c[width];
    counts.store_unaligned(c);
    std::size_t total = 0;
    for (std::size_t j = 0; j < width; ++j) total += static_cast<std::size_t>(c[j]);
    return total;
  };
  std::size_t count = 0, i = 0;
  while (i + width <= n) {
    // At most 4096 per lane before they are added up: exact in T.
    const std::size_t end = n - i > 4096 * width ? i + 4096 * width : n;
    batch acc(T(0));
    for (; i + width <= end; i += width) acc += positive(batch::load_unaligned(x + i));
    count += lanes(acc);
  }
  if (i < n)
    count += lanes(positive(
        primitives::load_partial<A>(x + i, n - i, -std::numeric_limits<T>::infinity())));
  return count;
}

template <class A, class T>
inline entmax15_row_state<T> row_threshold(const T* x, std::size_t n,
                                           entmax15_algorithm algorithm) noexcept {
  if (algorithm == entmax15_algorithm::automatic)
    algorithm = n <= entmax15_short_max_length ? entmax15_algorithm::sort
                                               : entmax15_algorithm::filter;
  if (algorithm == entmax15_algorithm::sort) return threshold_by_sort<A>(x, n);
  return threshold_by_filter<A>(x, n);
}

// y = max((x - m)/2 - tau_T, 0)^2; x == y allowed. With prefetch_distance > 0, every iteration
// asks for the lines that far ahead (the next row of a batch; a hint only).
template <class A, class T>
inline void write_row(const T* x, T* y, std::size_t n, entmax15_row_state<T> const& s,
                      std::size_t prefetch_distance = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  if (s.kind != entmax15_row_state<T>::ordinary) {
    sparsemax_detail::fill<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const batch mb(s.max), tb(s.tau_rounded), half(T(0.5)), zero(T(0));
  auto out = [&](batch const& v) {
    const batch u = xsimd::max((v - mb) * half - tb, zero);
    return u * u;
  };
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    if (prefetch_distance)
      primitives::prefetch<A>(x + i + prefetch_distance, 4 * width * sizeof(T));
    const batch r0 = out(batch::load_unaligned(x + i));
    const batch r1 = out(batch::load_unaligned(x + i + width));
    const batch r2 = out(batch::load_unaligned(x + i + 2 * width));
    const batch r3 = out(batch::load_unaligned(x + i + 3 * width));
    r0.store_unaligned(y + i);
    r1.store_unaligned(y + i + width);
    r2.store_unaligned(y + i + 2 * width);
    r3.store_unaligned(y + i + 3 * width);
  }
  for (; i + width <= n; i += width) out(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n)
    primitives::store_partial<A>(y + i, n - i,
                                 out(primitives::load_partial<A>(x + i, n - i, T(0))));
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                         std::size_t cols, entmax15_algorithm algorithm) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const entmax15_row_state<T> s = row_threshold<A>(x + r * ldx, cols, algorithm);
    // Rows of at least 1 KiB prefetch the next row during their write pass (as softmax does).
    const std::size_t next = r + 1 < rows && cols * sizeof(T) >= 1024 ? ldx : 0;
    write_row<A>(x + r * ldx, y + r * ldy, cols, s, next);
  }
}

// dx = s ⊙ dy - s·(<s, dy>/sum s), s = sqrt(y) on the support (y > 0), 0 elsewhere. A NaN
// anywhere in y (a NaN row) gives a NaN row. The two sums: four vectors at a time in T (three
// additions per lane), each group folded into a compensated double sum.
template <class A, class T>
inline void backward_row(const T* y, const T* dy, T* dx, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch zero(T(0));
  auto nan = primitives::is_nan(zero);
  accumulator<A, double> weighted, total;  // compensated for both types
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    batch sw[4], ss[4];
    for (std::size_t j = 0; j < 4; ++j) {
      const batch yv = batch::load_unaligned(y + i + j * width);
      const batch s = xsimd::select(yv > zero, xsimd::sqrt(yv), zero);
      ss[j] = s;
      sw[j] = xsimd::select(yv > zero, s * batch::load_unaligned(dy + i + j * width), zero);
      nan = nan | primitives::is_nan(yv);
    }
    weighted.add(smax::detail::horizontal_sum((sw[0] + sw[1]) + (sw[2] + sw[3])));
    total.add(smax::detail::horizontal_sum((ss[0] + ss[1]) + (ss[2] + ss[3])));
  }
  // The rest one vector at a time, each folded on its own; the padding (y = 0) is off the support.
  for (; i < n; i += width) {
    const std::size_t m = n - i < width ? n - i : width;
    const batch yv = primitives::load_partial<A>(y + i, m, T(0));
    const batch s = xsimd::select(yv > zero, xsimd::sqrt(yv), zero);
    weighted.add(smax::detail::horizontal_sum(
        xsimd::select(yv > zero, s * primitives::load_partial<A>(dy + i, m, T(0)), zero)));
    total.add(smax::detail::horizontal_sum(s));
    nan = nan | primitives::is_nan(yv);
  }
  if (xsimd::any(nan)) {
    sparsemax_detail::fill<A>(dx, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const double sum_s = total.value();
  const T q = sum_s > 0 ? static_cast<T>(weighted.value() / sum_s) : T(0);
  const batch qb(q);
  auto out = [&](batch const& yv, batch const& dyv) {
    return xsimd::select(yv > zero, xsimd::sqrt(yv) * (dyv - qb), zero);
  };
  i = 0;
  for (; i + width <= n; i += width)
    out(batch::load_unaligned(y + i), batch::load_unaligned(dy + i)).store_unaligned(dx + i);
  if (i < n)
    primitives::store_partial<A>(dx + i, n - i,
                                 out(primitives::load_partial<A>(y + i, n - i, T(0)),
                                     primitives::load_partial<A>(dy + i, n - i, T(0))));
}

template <class A, class T>
inline void backward_rows(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                          std::size_t lddx, std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols);
}

// The loss L = (1 - sum y^1.5)/0.75 + <y - e_t, x>, evaluated on x - m = 2z (it is shift
// invariant: sum y = 1) and only over the support. With u = z - tau (sum u^2 = 1):
// sum y^1.5 = sum u^3 and <y, 2z> = 2·sum u^2·(u + tau) = 2·sum u^3 + 2·tau, so
// L = 4/3 + (2/3)·sum u^3 + 2·(tau - z_t) = 2·(1 + tau - z_t) - (2/3)·(1 - sum u^3), which is
// evaluated (the second form is exactly 0 for a one-hot row): it is stationary in tau (its
// derivative 2 - 2·sum u^2 is 0), so the rounding of tau enters to second order only.
// z_t is taken in double from x (exact for float rows). Masked target: +inf. Special rows and a
// target out of range: NaN.
template <class A, class T>
inline T loss(const T* x, std::size_t n, std::size_t target) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  if (target >= n) return nan;
  const entmax15_row_state<T> s = row_threshold<A>(x, n, entmax15_algorithm::automatic);
  if (s.kind != entmax15_row_state<T>::ordinary) return nan;
  if (x[target] == T(-__builtin_huge_val())) return T(__builtin_huge_val());
  accumulator<A, T> cubes;
  const double tau = s.tau;
  for (std::size_t i = 0; i < n; ++i) {
    const double z = static_cast<double>(static_cast<T>((x[i] - s.max) * T(0.5)));
    const double u = z > tau ? z - tau : 0.0;
    cubes.add(u * u * u);
  }
  const double zt = (static_cast<double>(x[target]) - static_cast<double>(s.max)) * 0.5;
  return static_cast<T>(2.0 * ((1.0 + tau) - zt) - (2.0 / 3.0) * (1.0 - cubes.value()));
}

// dx = dloss·(y - e_t). A masked target (the loss is +inf) or a special row gives a NaN row.
template <class A, class T>
inline void loss_backward(const T* x, std::size_t n, std::size_t target, T dloss, T* dx) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  if (target >= n || x[target] == T(-__builtin_huge_val())) {
    sparsemax_detail::fill<A>(dx, n, nan);
    return;
  }
  const entmax15_row_state<T> s = row_threshold<A>(x, n, entmax15_algorithm::automatic);
  T target_y = nan;
  if (s.kind == entmax15_row_state<T>::ordinary) {
    const T u = (x[target] - s.max) * T(0.5) - s.tau_rounded;
    target_y = u > T(0) ? u * u : T(0);
  }
  write_row<A>(x, dx, n, s);  // x == dx allowed: x[target] was read above
  sparsemax_detail::scale<A>(dx, n, dloss);
  dx[target] = (target_y - T(1)) * dloss;
}

}  // namespace entmax15_detail

template <class A>
struct entmax15_table {
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, entmax15_algorithm algorithm) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, entmax15_algorithm algorithm) noexcept;
  // The row's state (max, tau of (x - max)/2, its rounding, support size) without writing y.
  static entmax15_row_state<float> threshold(const float* x, std::size_t n,
                                             entmax15_algorithm algorithm) noexcept;
  static entmax15_row_state<double> threshold(const double* x, std::size_t n,
                                              entmax15_algorithm algorithm) noexcept;
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
void entmax15_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols,
                                entmax15_algorithm algorithm) noexcept {
  entmax15_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, algorithm);
}
template <class A>
void entmax15_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols,
                                entmax15_algorithm algorithm) noexcept {
  entmax15_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, algorithm);
}
template <class A>
entmax15_row_state<float> entmax15_table<A>::threshold(const float* x, std::size_t n,
                                                       entmax15_algorithm algorithm) noexcept {
  entmax15_row_state<float> s = entmax15_detail::row_threshold<A>(x, n, algorithm);
  if (s.kind == entmax15_row_state<float>::ordinary)
    s.support_size = entmax15_detail::support_of<A>(x, n, s);
  return s;
}
template <class A>
entmax15_row_state<double> entmax15_table<A>::threshold(const double* x, std::size_t n,
                                                        entmax15_algorithm algorithm) noexcept {
  entmax15_row_state<double> s = entmax15_detail::row_threshold<A>(x, n, algorithm);
  if (s.kind == entmax15_row_state<double>::ordinary)
    s.support_size = entmax15_detail::support_of<A>(x, n, s);
  return s;
}
template <class A>
void entmax15_table<A>::backward(const float* y, std::size_t ldy, const float* dy,
                                 std::size_t lddy, float* dx, std::size_t lddx, std::size_t rows,
                                 std::size_t cols) noexcept {
  entmax15_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
template <class A>
void entmax15_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                 std::size_t lddy, double* dx, std::size_t lddx, std::size_t rows,
                                 std::size_t cols) noexcept {
  entmax15_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols);
}
template <class A>
float entmax15_table<A>::loss(const float* x, std::size_t n, std::size_t target) noexcept {
  return entmax15_detail::loss<A>(x, n, target);
}
template <class A>
double entmax15_table<A>::loss(const double* x, std::size_t n, std::size_t target) noexcept {
  return entmax15_detail::loss<A>(x, n, target);
}
template <class A>
void entmax15_table<A>::loss_backward(const float* x, std::size_t n, std::size_t target,
                                      float dloss, float* dx) noexcept {
  entmax15_detail::loss_backward<A>(x, n, target, dloss, dx);
}
template <class A>
void entmax15_table<A>::loss_backward(const double* x, std::size_t n, std::size_t target,
                                      double dloss, double* dx) noexcept {
  entmax15_detail::loss_backward<A>(x, n, target, dloss, dx);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(entmax15_table)
