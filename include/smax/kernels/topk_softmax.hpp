#pragma once
// Top-k softmax (docs/topk_softmax.md) for one instruction set A: softmax over S, the k largest
// entries of the row, and 0 elsewhere. S is the first k entries in the order (value descending,
// index ascending): ties at the k-th place go to the lower index, and masked entries (-inf) come
// after every finite one, so they are chosen only when the row has fewer than k finite entries,
// and then output 0 anyway (the result is softmax over the finite entries).
//
// Selection, O(n) without sorting:
// 1. A starting threshold from group maxima (group_bound): the lane maxima of 4 or 16 registers
//    over the row's start are the maxima of disjoint groups, so a value with k maxima at or
//    above it has k distinct entries at or above it, and S lies above the value just below it.
// 2. One SIMD sweep with a running threshold t (strict: only x > t can still enter S) and a
//    buffer of candidates (value, index) in index order. A register with no lane above t costs a
//    load and a compare; the lanes above t are appended. When the buffer is full it is cut back
//    to its k first entries (find_cut: a value t' with count(> t') <= k <= count(>= t'), then the
//    entries above t' and the first ones equal to t') and t becomes t'. Entries equal to t are
//    never appended after that: k entries at least as large come before them and win the tie.
//    With a capacity of max(2k, k + 128) every cut frees max(k, 128) places, so the cuts cost
//    O(n) in all.
// 3. The last cut: where exactly k candidates are >= t' (no tie split at the k-th place), S is
//    those, applied as a mask on the exponentials; otherwise the candidates are cut back to S.
//
// Rows whose buffer would hold the whole row (short rows, and k from about n/2 on) skip steps 1
// and 2: the cut is found on a copy of the row and S applied as a mask in softmax's passes over x
// and y (whole registers of exponentials, masked), or, if a tie at the k-th place is split, the
// copy is cut back to S as the candidates are.
//
// Softmax over S: m = the largest candidate (the row maximum), exp(x - m) with the rounding of
// x - m carried (softmax's exp_minus_max), the sum in double, one factor (softmax's normalizer).
// Exponentials of the candidates only (S and the few the threshold let through, masked); the
// zeros are written in one sweep
// (streaming stores past the cache), then the candidates' values scattered to their indices (the
// masked ones write 0 over their zeros), so x == y is allowed.
//
// Edges: NaN or +inf anywhere gives a NaN row (the sweep stops at the first one), a row of only
// -inf a NaN row (zero_masked_rows is the API layer's), k = 0 a NaN row, k >= n softmax itself
// (softmax's kernels, the same bits). The backward pass reads y only: dx = y ⊙ (dy - <dy, y>),
// softmax's, exact for the restriction to S because y is 0 outside S.
//
// Everything here is templated on A and the scratch buffer is malloc'ed, so no instruction set's
// code can leak into another's through the linker.

#include <stdlib.h>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../config.hpp"
#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/scratch.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/special.hpp"
#include "../primitives/stream.hpp"
#include "softmax.hpp"
#include "softmax_backward.hpp"

namespace smax {
namespace kernels {

template <class A>
struct topk_softmax_table {
  // y = topk_softmax(x) for a rows × cols block (x == y allowed); k = 0 gives NaN rows.
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, std::size_t k) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, std::size_t k) noexcept;
  // dx = y ⊙ (dy - <dy, y>) from the forward output y; any of y, dy, dx may be the same array.
  static void backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                       float* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
  static void backward(const double* y, std::size_t ldy, const double* dy, std::size_t lddy,
                       double* dx, std::size_t lddx, std::size_t rows, std::size_t cols) noexcept;
};

namespace topk_detail {

// The lanes of a comparison as bits (lane i at bit i).
template <class A, class T>
SMAX_ALWAYS_INLINE std::uint32_t lane_bits(xsimd::batch_bool<T, A> const& b) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  using reg = typename xsimd::batch_bool<T, A>::register_type;
  const reg r = b;
  if constexpr (sizeof(reg) <= 8) {  // AVX-512: a mask register
    return static_cast<std::uint32_t>(r);
  } else if constexpr (sizeof(reg) == 32) {
    if constexpr (sizeof(T) == 4)
      return static_cast<std::uint32_t>(_mm256_movemask_ps(r));
    else
      return static_cast<std::uint32_t>(_mm256_movemask_pd(r));
  } else if constexpr (sizeof(reg) == 16) {
    if constexpr (sizeof(T) == 4)
      return static_cast<std::uint32_t>(_mm_movemask_ps(r));
    else
      return static_cast<std::uint32_t>(_mm_movemask_pd(r));
  } else
#endif
  {
    constexpr std::size_t width = xsimd::batch<T, A>::size;
    bool lanes[width];
    b.store_unaligned(lanes);
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < width; ++i) bits |= static_cast<std::uint32_t>(lanes[i]) << i;
    return bits;
  }
}

// The lanes the sweep must look at: above t, or NaN (an unordered compare: !(v <= t) holds for
// both). Under -ffinite-math-only the compiler may turn that into v > t, so NaN is looked for on
// the bits instead (topk_sweep's nan flag).
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch_bool<T, A> above_or_nan(xsimd::batch<T, A> const& v,
                                                        xsimd::batch<T, A> const& t) noexcept {
#if SMAX_FINITE_MATH_ONLY
  return v > t;
#else
  return !(v <= t);
#endif
}

// The candidates of one row: value[j] at index[j], in index order; work is room for as many
// values (the exponentials).
template <class T>
struct candidates {
  T* value;
  std::size_t* index;
  T* work;
  std::size_t capacity;
  std::size_t k;
  std::size_t count;
  T threshold;  // nothing at or below it can enter S any more (-inf: anything finite can)
};

// Order-preserving integer keys of finite values (and back): a larger value has a larger key,
// -0 just below +0.
template <class T>
SMAX_ALWAYS_INLINE primitives::bits_of_t<T> key_of(T v) noexcept {
  const primitives::bits_of_t<T> b = primitives::bits_of(v);
  return (b & primitives::sign_bit<T>) ? ~b : (b | primitives::sign_bit<T>);
}
template <class T>
SMAX_ALWAYS_INLINE T value_of(primitives::bits_of_t<T> key) noexcept {
  const primitives::bits_of_t<T> b =
      (key & primitives::sign_bit<T>) ? (key & ~primitives::sign_bit<T>) : ~key;
  T v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// How many of the `vectors` registers of values at v are >= c (the lanes past the candidates
// hold -inf).
template <class A, class T>
SMAX_ALWAYS_INLINE std::size_t count_at_least(const T* v, std::size_t vectors, T c) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch cv(c);
  std::size_t count = 0;
  for (std::size_t j = 0; j < vectors; ++j)
    count += static_cast<std::size_t>(
        __builtin_popcount(lane_bits<A>(batch::load_aligned(v + j * width) >= cv)));
  return count;
}

// The same for > c.
template <class A, class T>
SMAX_ALWAYS_INLINE std::size_t count_above(const T* v, std::size_t vectors, T c) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch cv(c);
  std::size_t count = 0;
  for (std::size_t j = 0; j < vectors; ++j)
    count += static_cast<std::size_t>(
        __builtin_popcount(lane_bits<A>(batch::load_aligned(v + j * width) > cv)));
  return count;
}

// The cut of the candidates: a value t with count(> t) <= k <= count(>= t) (count > k), so that
// the k first entries in the order (value descending, index ascending) are those above t and the
// first ones equal to t. Pads the candidates' last register with -inf.
//
// t comes from a bisection between the smallest and the largest candidate, which stops as soon
// as exactly k candidates are >= the midpoint (the usual case, after a few steps on rows of
// distinct values); values that stay tied, or spread over many binades, are finished by
// bisection on the order-preserving integer keys, exact at adjacent keys. Counted in registers
// without branches on the data: nth_element's unpredictable branches cost more on these lists.
template <class A, class T>
inline T find_cut(candidates<T>& c) noexcept {
  using batch = xsimd::batch<T, A>;
  using key = primitives::bits_of_t<T>;
  constexpr std::size_t width = batch::size;
  const std::size_t vectors = (c.count + width - 1) / width;
  const std::size_t k = c.k;
  const T inf = std::numeric_limits<T>::infinity();
  for (std::size_t j = c.count; j < vectors * width; ++j) c.value[j] = -inf;
  batch low(inf), high(-inf);
  for (std::size_t j = 0; j < vectors; ++j) {
    const batch v = batch::load_aligned(c.value + j * width);
    high = xsimd::max(high, v);
    low = xsimd::min(low, xsimd::select(v == batch(-inf), batch(inf), v));
  }
  T lo = -smax::detail::horizontal_max(-low), hi = smax::detail::horizontal_max(high);
  // count(>= lo) = count > k; want count(>= hi) < k.
  if (count_at_least<A>(c.value, vectors, hi) >= k) return hi;
  for (int step = 0; step < 24; ++step) {
    const T mid = lo * T(0.5) + hi * T(0.5);
    if (!(mid > lo && mid < hi)) break;
    const std::size_t m = count_at_least<A>(c.value, vectors, mid);
    if (m == k) return mid;
    (m > k ? lo : hi) = mid;
  }
  key klo = key_of(lo), khi = key_of(hi);
  while (khi - klo > 1) {
    const key kmid = klo + (khi - klo) / 2;
    (count_at_least<A>(c.value, vectors, value_of<T>(kmid)) >= k ? klo : khi) = kmid;
  }
  return value_of<T>(klo);  // count(> t) <= count(>= next value) < k <= count(>= t)
}

// Keeps the candidates above t and the first ones equal to t, k in all, in index order.
template <class A, class T>
inline void keep_cut(candidates<T>& c, T t) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  const std::size_t vectors = (c.count + width - 1) / width;
  // Entries equal to t are few, so their branch is rarely taken.
  std::size_t ties = c.k - count_above<A>(c.value, vectors, t);
  std::size_t out = 0;
  for (std::size_t j = 0; j < c.count; ++j) {
    const T v = c.value[j];
    bool keep = v > t;
    if (v == t && ties != 0) {
      keep = true;
      --ties;
    }
    c.value[out] = v;
    c.index[out] = c.index[j];
    out += static_cast<std::size_t>(keep);
  }
  c.count = out;  // = k
}

// Cuts the candidates back to their k first entries and returns the cut.
template <class A, class T>
inline T keep_first_k(candidates<T>& c) noexcept {
  const T t = find_cut<A>(c);
  keep_cut<A>(c, t);
  return t;
}

// The sweep's state in locals (the candidate arrays cannot alias them, so they stay in
// registers across the appends).
template <class T>
struct sweep_state {
  T* value;
  std::size_t* index;
  std::size_t count;
  std::size_t capacity;
  T threshold;
};

// Appends the lanes of `bits` (positions base + lane of x) that are above the threshold, cutting
// the buffer back when it fills. False at a NaN or +inf (a NaN row).
template <class A, class T>
SMAX_ALWAYS_INLINE bool take_lanes(const T* x, std::size_t base, std::uint32_t bits,
                                   sweep_state<T>& s, candidates<T>& c) noexcept {
  while (bits != 0) {
    const unsigned lane = static_cast<unsigned>(__builtin_ctz(bits));
    bits &= bits - 1;
    const T v = x[base + lane];
    // -inf is never above the threshold (tested on its bits: -ffinite-math-only may fold a
    // comparison with it); NaN and +inf make a NaN row.
    if (!primitives::is_finite(v)) {
      if (primitives::is_neg_inf(v)) continue;
      return false;
    }
    // The threshold may have risen since the lanes were compared.
    if (!(v > s.threshold)) continue;
    s.value[s.count] = v;
    s.index[s.count] = base + lane;
    if (++s.count == s.capacity) {
      c.count = s.count;
      s.threshold = keep_first_k<A>(c);
      s.count = c.count;
    }
  }
  return true;
}

// The selection sweep over x[0, n). False for a NaN row (NaN or +inf); otherwise the candidates
// hold S and possibly more (at most the capacity), in index order.
template <class A, class T>
SMAX_FLATTEN inline bool topk_sweep(const T* x, std::size_t n, candidates<T>& c) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  sweep_state<T> s{c.value, c.index, c.count, c.capacity, c.threshold};
  // Opaque: a threshold the compiler knows to be -inf could fold the comparisons.
  batch t = smax::detail::opaque(batch(s.threshold));
#if SMAX_FINITE_MATH_ONLY
  auto nan = primitives::is_nan(batch(T(0)));
#endif
  bool ok = true;
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch v0 = batch::load_unaligned(x + i);
    const batch v1 = batch::load_unaligned(x + i + width);
    const batch v2 = batch::load_unaligned(x + i + 2 * width);
    const batch v3 = batch::load_unaligned(x + i + 3 * width);
#if SMAX_FINITE_MATH_ONLY
    nan = nan | primitives::is_nan(v0) | primitives::is_nan(v1) | primitives::is_nan(v2) |
          primitives::is_nan(v3);
#endif
    if (xsimd::any((above_or_nan(v0, t) | above_or_nan(v1, t)) |
                   (above_or_nan(v2, t) | above_or_nan(v3, t)))) {
      // Rare once t has settled: each register again, against the threshold as it rises.
      ok = take_lanes<A>(x, i, lane_bits<A>(above_or_nan(v0, t)), s, c);
      t = batch(s.threshold);
      ok = ok && take_lanes<A>(x, i + width, lane_bits<A>(above_or_nan(v1, t)), s, c);
      t = batch(s.threshold);
      ok = ok && take_lanes<A>(x, i + 2 * width, lane_bits<A>(above_or_nan(v2, t)), s, c);
      t = batch(s.threshold);
      ok = ok && take_lanes<A>(x, i + 3 * width, lane_bits<A>(above_or_nan(v3, t)), s, c);
      t = batch(s.threshold);
      if (!ok) return false;
    }
  }
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
#if SMAX_FINITE_MATH_ONLY
    nan = nan | primitives::is_nan(v);
#endif
    if (!take_lanes<A>(x, i, lane_bits<A>(above_or_nan(v, t)), s, c)) return false;
    t = batch(s.threshold);
  }
  if (i < n) {
    // The lanes past n hold -inf, never above t.
    const batch v = primitives::load_partial<A>(x + i, n - i, neg_inf);
#if SMAX_FINITE_MATH_ONLY
    nan = nan | primitives::is_nan(v);
#endif
    if (!take_lanes<A>(x, i, lane_bits<A>(above_or_nan(v, t)), s, c)) return false;
  }
#if SMAX_FINITE_MATH_ONLY
  if (xsimd::any(nan)) return false;
#endif
  c.count = s.count;
  c.threshold = s.threshold;
  return true;
}

template <class A, class T>
inline void fill(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// y[0, n) = +0, with streaming stores for rows past the cache (primitives::should_stream).
template <class A, class T>
inline void fill_zeros(T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  if (!primitives::should_stream<A, T>(n)) {
    std::memset(y, 0, n * sizeof(T));
    return;
  }
  const batch zero(T(0));
  std::size_t i = 0;
  while (i < n && reinterpret_cast<std::uintptr_t>(y + i) % sizeof(batch) != 0) y[i++] = T(0);
  if (i < n && reinterpret_cast<std::uintptr_t>(y + i) % sizeof(batch) == 0)
    for (; i + width <= n; i += width) primitives::store_streaming<A>(y + i, zero);
  for (; i < n; ++i) y[i] = T(0);
#if defined(SMAX_HAS_STREAMING_STORES)
  _mm_sfence();
#endif
}

// Room on the stack for this many candidates; longer lists take the scratch buffer.
constexpr std::size_t stack_candidates = 256;

// The buffer capacity for k of n: enough that the cuts are rare (each frees max(k, 128) places)
// and no more than the row.
inline std::size_t capacity_for(std::size_t n, std::size_t k) noexcept {
  const std::size_t c = k > 128 ? 2 * k : k + 128;
  return c < n ? c : n;
}

// The largest value below v (v finite): x > next_below(v) holds exactly for x >= v. Below 0 it
// is -FLT_MIN (DBL_MIN), not a subnormal number, which a denormals-are-zero mode would compare
// as 0 (any threshold below v is correct; this one only lets (-FLT_MIN, 0) in as well).
template <class A, class T>
inline T next_below(T v) noexcept {
  if (v == T(0)) return -std::numeric_limits<T>::min();
  primitives::bits_of_t<T> b = primitives::bits_of(v);
  b = v > T(0) ? b - 1 : b + 1;  // a step away from zero on the negative side
  T r;
  std::memcpy(&r, &b, sizeof r);
  return r;
}

// Elements of the prefix whose group maxima give the starting threshold: rows up to this many
// bytes are read twice from the cache; longer rows read this much of their start twice.
constexpr std::size_t bound_prefix_bytes = std::size_t(128) << 10;

// How many lanes of the R registers m are >= c.
template <class A, std::size_t R, class T>
SMAX_ALWAYS_INLINE std::size_t count_at_least(xsimd::batch<T, A> const (&m)[R], T c) noexcept {
  const xsimd::batch<T, A> cv(c);
  std::size_t count = 0;
  primitives::unroll<R>([&](auto r) SMAX_INLINE_LAMBDA {
    count += static_cast<std::size_t>(__builtin_popcount(lane_bits<A>(m[r] >= cv)));
  });
  return count;
}

// A lower bound of the row's k-th largest value from the lane maxima of R registers over
// x[0, n): the lanes are disjoint groups of elements, so any c with at least k maxima >= c has k
// distinct elements >= c. c is found by bisection between the smallest finite maximum and the
// largest (a fixed number of steps: the bound need not be the k-th maximum itself, only below
// the row's k-th value). -inf when fewer than k lanes saw a finite value. False for a NaN row (a
// NaN or +inf among the maxima, or in the rest; one the maxima missed is found later).
template <class A, std::size_t R, class T>
inline bool group_bound(const T* x, std::size_t n, std::size_t k, T* bound) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  batch m[R];
  primitives::unroll<R>([&](auto r) SMAX_INLINE_LAMBDA { m[r] = batch(neg_inf); });
  std::size_t i = 0;
  for (; i + R * width <= n; i += R * width)
    primitives::unroll<R>([&](auto r) SMAX_INLINE_LAMBDA {
      m[r] = xsimd::max(m[r], batch::load_unaligned(x + i + r * width));
    });
  // The rest (fewer than R registers) one element to a group: the groups stay disjoint.
  if (i < n) {
    alignas(64) T lanes[R * width];
    primitives::unroll<R>(
        [&](auto r) SMAX_INLINE_LAMBDA { m[r].store_aligned(lanes + r * width); });
    for (std::size_t j = 0; i + j < n; ++j) {
      const T v = x[i + j];
      if (primitives::is_nan(v)) return false;
      lanes[j] = v > lanes[j] ? v : lanes[j];
    }
    primitives::unroll<R>(
        [&](auto r) SMAX_INLINE_LAMBDA { m[r] = batch::load_aligned(lanes + r * width); });
  }
  // NaN and +inf lanes, and the range of the finite ones.
  const T inf = std::numeric_limits<T>::infinity();
  auto bad = primitives::is_nan(m[0]);
  batch low(inf), high(neg_inf);
  primitives::unroll<R>([&](auto r) SMAX_INLINE_LAMBDA {
    bad = bad | primitives::is_nan(m[r]);
    high = xsimd::max(high, m[r]);
    low = xsimd::min(low, xsimd::select(m[r] == batch(neg_inf), batch(inf), m[r]));
  });
  T hi = smax::detail::horizontal_max(high);
  if (xsimd::any(bad) || primitives::is_nan(hi) || primitives::is_pos_inf(hi)) return false;
  T lo = -smax::detail::horizontal_max(-low);
  *bound = neg_inf;
  if (primitives::is_pos_inf(lo) || count_at_least<A>(m, lo) < k) return true;
  if (count_at_least<A>(m, hi) >= k) {
    *bound = hi;
    return true;
  }
  // count(>= lo) >= k > count(>= hi).
  for (int step = 0; step < 8; ++step) {
    const T mid = lo * T(0.5) + hi * T(0.5);  // no overflow at ±FLT_MAX
    if (!(mid > lo && mid < hi)) break;
    if (count_at_least<A>(m, mid) >= k)
      lo = mid;
    else
      hi = mid;
  }
  *bound = lo;
  return true;
}

// Softmax over the candidates >= cut (the rest of y 0), the candidates in index order.
template <class A, class T>
inline void finish_candidates(candidates<T>& c, T* y, std::size_t n, T cut) noexcept {
  using batch = xsimd::batch<T, A>;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const T max = primitives::reduce_range<A, false>(c.value, c.count).max;
  // Softmax's exponential and sum (x - m with its rounding error carried), softmax's factor.
  const primitives::exp_minus_max<A, T, false, primitives::difference_error::two_sum> e(max, T(1));
  const batch cut_v(cut);
  const double sum = primitives::map_sum<A, true>(
      c.value, c.work, c.count, neg_inf, [&](batch const& v) SMAX_INLINE_LAMBDA {
        return xsimd::select(v >= cut_v, e(v), batch(T(0)));
      });
  primitives::map<A>(c.work, c.work, c.count, primitives::normalizer<A, T>(1.0, sum));
  fill_zeros<A>(y, n);
  for (std::size_t j = 0; j < c.count; ++j) y[c.index[j]] = c.work[j];
}

// Rows whose candidate buffer would hold the whole row (short rows, k a large part of n): the
// cut is found on a copy of the row, and S applied as a mask in softmax's passes over x and y
// (the exponentials of whole registers, masked), unless a tie at the k-th place is split: then
// the copy is cut back to S as the sweep's candidates are.
template <class A, class T>
inline void topk_dense_row(const T* x, T* y, std::size_t n, candidates<T>& c) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const auto r = primitives::reduce_max<A>(x, n);
  // NaN or +inf, or every entry masked.
  if (r.has_nan || !primitives::is_finite(r.max))
    return fill<A>(y, n, static_cast<T>(__builtin_nan("")));
  std::memcpy(c.value, x, n * sizeof(T));
  c.count = n;
  const std::size_t vectors = (n + width - 1) / width;
  for (std::size_t j = n; j < vectors * width; ++j) c.value[j] = neg_inf;
  T cut = neg_inf;
  if (count_at_least<A>(c.value, vectors, std::numeric_limits<T>::lowest()) > c.k) {
    cut = find_cut<A>(c);
    if (count_at_least<A>(c.value, vectors, cut) != c.k) {
      for (std::size_t j = 0; j < n; ++j) c.index[j] = j;
      keep_cut<A>(c, cut);
      return finish_candidates<A>(c, y, n, neg_inf);
    }
  }
  const primitives::exp_minus_max<A, T, false, primitives::difference_error::two_sum> e(r.max,
                                                                                         T(1));
  const batch cut_v(cut);
  const double sum =
      primitives::map_sum<A, true>(x, y, n, neg_inf, [&](batch const& v) SMAX_INLINE_LAMBDA {
        return xsimd::select(v >= cut_v, e(v), batch(T(0)));
      });
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(1.0, sum));
}

// One row, 1 <= k < n.
template <class A, class T>
inline void topk_softmax_row(const T* x, T* y, std::size_t n, std::size_t k) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  const T neg_inf = -std::numeric_limits<T>::infinity();
  candidates<T> c;
  c.capacity = capacity_for(n, k);
  c.k = k;
  c.count = 0;
  c.threshold = neg_inf;
  // One register more than the capacity: keep_first_k pads the last register with -inf.
  alignas(64) T stack_value[stack_candidates + 64 / sizeof(T)];
  alignas(64) T stack_work[stack_candidates];
  std::size_t stack_index[stack_candidates];
  if (c.capacity <= stack_candidates) {
    c.value = stack_value;
    c.work = stack_work;
    c.index = stack_index;
  } else {
    // value, work, then index: every part aligned to its type.
    constexpr std::size_t align = 64;
    const std::size_t values = (c.capacity * sizeof(T) + 2 * align - 1) / align * align;
    char* p = static_cast<char*>(
        primitives::scratch_bytes<A>(2 * values + c.capacity * sizeof(std::size_t) + align));
    if (p == nullptr) return fill<A>(y, n, nan);  // allocation failure: documented NaN row
    p += (align - reinterpret_cast<std::uintptr_t>(p) % align) % align;
    c.value = reinterpret_cast<T*>(p);
    c.work = reinterpret_cast<T*>(p + values);
    c.index = reinterpret_cast<std::size_t*>(p + 2 * values);
  }
  if (c.capacity == n) return topk_dense_row<A>(x, y, n, c);
  // The starting threshold from group maxima where k is small enough for a useful bound (at
  // least k groups, a quarter of them or fewer when k fits one register).
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  if (k <= 16 * width) {
    const std::size_t prefix =
        n < bound_prefix_bytes / sizeof(T) ? n : bound_prefix_bytes / sizeof(T);
    T bound;
    const bool ok = k <= width ? group_bound<A, 4>(x, prefix, k, &bound)
                               : group_bound<A, 16>(x, prefix, k, &bound);
    if (!ok) return fill<A>(y, n, nan);
    if (!primitives::is_neg_inf(bound)) c.threshold = next_below<A>(bound);
  }
  if (!topk_sweep<A>(x, n, c) || c.count == 0) return fill<A>(y, n, nan);
  // S: every candidate >= the cut when that is k of them (no tie split at the k-th place): a
  // mask on the exponentials, and the dropped candidates write 0 over their zeros; otherwise the
  // candidates cut back to S.
  T cut = neg_inf;
  if (c.count > k) {
    cut = find_cut<A>(c);
    if (count_at_least<A>(c.value, (c.count + width - 1) / width, cut) != k) {
      keep_cut<A>(c, cut);
      cut = neg_inf;
    }
  }
  finish_candidates<A>(c, y, n, cut);
}

template <class A, class T>
inline void topk_softmax_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols, std::size_t k) noexcept {
  if (k == 0) {  // precondition violation: NaN rows
    for (std::size_t r = 0; r < rows; ++r)
      fill<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  if (k >= cols) {  // S is the whole row
    softmax_table<A>::forward(x, ldx, y, ldy, rows, cols, T(1), 0u, algorithm_id::automatic);
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) topk_softmax_row<A>(x + r * ldx, y + r * ldy, cols, k);
}

}  // namespace topk_detail

template <class A>
void topk_softmax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                    std::size_t rows, std::size_t cols, std::size_t k) noexcept {
  topk_detail::topk_softmax_rows<A>(x, ldx, y, ldy, rows, cols, k);
}
template <class A>
void topk_softmax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                    std::size_t rows, std::size_t cols, std::size_t k) noexcept {
  topk_detail::topk_softmax_rows<A>(x, ldx, y, ldy, rows, cols, k);
}
template <class A>
void topk_softmax_table<A>::backward(const float* y, std::size_t ldy, const float* dy,
                                     std::size_t lddy, float* dx, std::size_t lddx,
                                     std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    softmax_backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, 1.0f);
}
template <class A>
void topk_softmax_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                     std::size_t lddy, double* dx, std::size_t lddx,
                                     std::size_t rows, std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    softmax_backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, 1.0);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(topk_softmax_table)
