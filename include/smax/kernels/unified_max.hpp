#pragma once
// The kernels of unified-max softmax for one instruction set A (see unified_max.hpp for the
// public forms): exp of x minus a shift chosen once per call from φ instead of the row maximum,
// so a row takes one read sweep (exp, store, sum, and the row's range alongside) and one
// normalise sweep; a row with an entry outside [φ + a, φ + b], or whose sum the fast path cannot
// normalise exactly, is recomputed by softmax's kernels.
//
// Members are defined out of class and not inline, as in the other tables (softmax.hpp).

#include <cmath>
#include <cstddef>
#include <limits>

#include "../config.hpp"
#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/special.hpp"
#include "softmax.hpp"

namespace smax {
namespace kernels {

template <class A>
struct unified_max_table {
  // Returns the number of rows that were computed by softmax's kernels (fell back).
  static std::size_t forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, double phi, double a,
                             double b) noexcept;
  static std::size_t forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, double phi, double a,
                             double b) noexcept;
};

namespace unified_max_detail {

// The exponents the fast path accepts: every in-range x has x - shift within [lowest, highest],
// so its term is a normal number (lowest is half a unit above the exp's underflow cutoff) and
// finite (highest: 2^k of the range reduction stays below T's largest power of two). Terms that
// large can still overflow the sum's vector accumulators: that sum is infinite and the row falls
// back. Sums above large_sum are normalised as (v·2^-64)·(2^64/sum), which keeps the factor a
// normal number (1/sum alone would be subnormal or 0 near T's largest values).
template <class T>
struct limits;
template <>
struct limits<float> {
  static constexpr double lowest = -86.8;
  static constexpr double highest = 87.5;
  static constexpr double large_sum = 0x1p100;
};
template <>
struct limits<double> {
  static constexpr double lowest = -707.8;
  static constexpr double highest = 708.0;
  static constexpr double large_sum = 0x1p1000;
};

// The next T after f towards +inf (Up) or -inf. Templated on A like everything here (softmax.hpp).
template <class A, bool Up, class T>
inline T next_toward(T f) noexcept {
  const T to = Up ? std::numeric_limits<T>::infinity() : -std::numeric_limits<T>::infinity();
  if constexpr (sizeof(T) == 4)
    return __builtin_nextafterf(f, to);
  else
    return __builtin_nextafter(f, to);
}

// The smallest T >= v and the largest T <= v (v in double).
template <class A, class T>
inline T round_up(double v) noexcept {
  const T f = static_cast<T>(v);
  return static_cast<double>(f) < v ? next_toward<A, true>(f) : f;
}
template <class A, class T>
inline T round_down(double v) noexcept {
  const T f = static_cast<T>(v);
  return static_cast<double>(f) > v ? next_toward<A, false>(f) : f;
}

// What a call decides once: the in-range interval [lo, hi] of x (lo = the smallest T >= φ + a,
// hi = the largest T <= φ + b, the sums in double) and how the fast path exponentiates.
enum class path { nan_rows, softmax_only, shifted, difference };

template <class A, class T>
struct call_plan {
  path how = path::nan_rows;
  T lo = 0;
  T hi = 0;
  T c = 0;       // difference: exp(x - c), c = φ rounded to T
  double j = 0;  // shifted: exp(x - j·ln2), j = φ·log2e rounded to an integer
};

template <class A, class T>
inline call_plan<A, T> plan(double phi, double a, double b) noexcept {
  call_plan<A, T> p;
  const double inf = std::numeric_limits<double>::infinity();
  if (!(phi > -inf && phi < inf && a > -inf && a < inf && b > -inf && b < inf && a < b)) return p;
  p.how = path::softmax_only;
  const double lo = phi + a, hi = phi + b;
  if (!(lo > -inf && hi < inf)) return p;
  p.lo = round_up<A, T>(lo);
  p.hi = round_down<A, T>(hi);
  // Rounded inward, the range can be empty (float, φ = 1e20, a = -20, b = 20: lo = 1.00000002e20
  // > hi = 9.99999932e19): no x is in range, and lo is no in-range filler for the row tails.
  if (!(p.lo <= p.hi)) return p;
  constexpr double big = static_cast<double>(std::numeric_limits<T>::max());
  if (!(static_cast<double>(p.lo) > -big && static_cast<double>(p.hi) < big)) return p;
  const double lo_reach = __builtin_fabs(static_cast<double>(p.lo)),
               hi_reach = __builtin_fabs(static_cast<double>(p.hi));
  const double reach = lo_reach > hi_reach ? lo_reach : hi_reach;  // not fmax: a libm call
  double shift;
  if (reach < primitives::power_of_two_shift_limit<A, T>()) {
    p.how = path::shifted;
    p.j = __builtin_nearbyint(phi * primitives::exp_constants<double>::log2e);
    shift = p.j * primitives::shift_constants<double, true>::ln2_hi;
  } else {
    p.how = path::difference;
    p.c = static_cast<T>(phi);
    shift = static_cast<double>(p.c);
  }
  // The exponents of the in-range x (the differences are exact in double for float rows, and
  // within far less than the margins for double rows).
  if (!(static_cast<double>(p.lo) - shift >= limits<T>::lowest &&
        static_cast<double>(p.hi) - shift <= limits<T>::highest))
    p.how = path::softmax_only;
  return p;
}

// exp(x - c) with the rounding error of x - c carried (TwoSum), for the calls the shifted form
// cannot take (no FMA and |x| >= 64, or |x| >= 2^20); masked lanes give 0.
template <class A, class T>
struct exp_minus_constant {
  using batch = xsimd::batch<T, A>;
  batch neg_c;
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch d = x + neg_c;
    const batch neg_c_part = d - x;
    const batch x_part = d - neg_c_part;
    const batch err = (x - x_part) + (neg_c - neg_c_part);
    // A masked x (-inf) gives d = -inf and err = NaN (-inf - -inf): its term is 0, not NaN.
    const batch neg_inf(-std::numeric_limits<T>::infinity());
    return primitives::exp_nonpositive<true>(d, xsimd::select(d == neg_inf, batch(T(0)), err));
  }
};

// Whether the row holds a finite x < lo (its minimum was -inf: masked entries hide the others).
template <class A, class T>
inline bool has_finite_below(const T* x, std::size_t n, T lo) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch l(lo), neg_inf(-std::numeric_limits<T>::infinity());
  std::size_t i = 0;
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    if (xsimd::any((v < l) & (v != neg_inf))) return true;
  }
  for (; i < n; ++i)
    if (x[i] < lo && !primitives::is_neg_inf(x[i])) return true;
  return false;
}

// The first sweep of a row: the sum of e(x) (stored into y when Store), blocked as
// primitives::map_sum, with the row's minimum and maximum taken alongside in accumulators of
// its own (map_sum's functor could only reach them through memory). The tail is padded with
// `fill`, an in-range value whose lanes are dropped from the sum.
template <class A, bool Store, class T, class E>
SMAX_FLATTEN inline double exp_sum_range(const T* x, T* y, std::size_t n, T fill, E const& e,
                                         T& row_min, T& row_max) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T inf = std::numeric_limits<T>::infinity();
  batch lo0(inf), lo1(inf), hi0(-inf), hi1(-inf);
  double total = 0.0;
  std::size_t i = 0;
  while (i + 4 * width <= n) {
    const std::size_t block_end =
        n - i > primitives::sum_block<T, A> ? i + primitives::sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    for (; i + 4 * width <= block_end; i += 4 * width) {
      const batch v0 = batch::load_unaligned(x + i);
      const batch v1 = batch::load_unaligned(x + i + width);
      const batch v2 = batch::load_unaligned(x + i + 2 * width);
      const batch v3 = batch::load_unaligned(x + i + 3 * width);
      lo0 = xsimd::min(lo0, xsimd::min(v0, v1));
      lo1 = xsimd::min(lo1, xsimd::min(v2, v3));
      hi0 = xsimd::max(hi0, xsimd::max(v0, v1));
      hi1 = xsimd::max(hi1, xsimd::max(v2, v3));
      const batch e0 = e(v0), e1 = e(v1), e2 = e(v2), e3 = e(v3);
      if (Store) {
        e0.store_unaligned(y + i);
        e1.store_unaligned(y + i + width);
        e2.store_unaligned(y + i + 2 * width);
        e3.store_unaligned(y + i + 3 * width);
      }
      s0 += e0;
      s1 += e1;
      s2 += e2;
      s3 += e3;
    }
    total += smax::detail::horizontal_sum((s0 + s1) + (s2 + s3));
  }
  batch s(T(0));
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    lo0 = xsimd::min(lo0, v);
    hi0 = xsimd::max(hi0, v);
    const batch ev = e(v);
    if (Store) ev.store_unaligned(y + i);
    s += ev;
  }
  if (i < n) {
    const batch v = primitives::load_partial<A>(x + i, n - i, fill);
    lo0 = xsimd::min(lo0, v);
    hi0 = xsimd::max(hi0, v);
    const batch ev = e(v);
    if (Store) primitives::store_partial<A>(y + i, n - i, ev);
    s += primitives::zero_from<A>(ev, n - i);
  }
  row_min = smax::detail::horizontal_min(xsimd::min(lo0, lo1));
  row_max = smax::detail::horizontal_max(xsimd::max(hi0, hi1));
  return total + smax::detail::horizontal_sum(s);
}

// What the fast path does not normalise, after a row's first sweep: a row out of range (or NaN,
// +inf, a sum that overflowed) is recomputed by softmax's kernels; an all-masked row (sum 0: an
// in-range term is a normal number) gives NaN; n = 1 gives [1]. Returns true when y is written,
// with fell_back set.
template <class A, class T>
inline bool finish_without_normalizing(const T* x, T* y, std::size_t n, bool out_of_range,
                                       double sum, bool& fell_back) noexcept {
  // NaN (also +inf, which exponentiates to NaN or inf) makes the sum NaN or too large.
  fell_back = out_of_range || !(sum <= std::numeric_limits<double>::max());
  if (fell_back) {
    softmax_table<A>::forward(x, n, y, n, 1, n, T(1), 0u, algorithm_id::automatic);
    return true;
  }
  if (sum == 0.0) {
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return true;
  }
  if (n == 1) {
    y[0] = T(1);
    return true;
  }
  return false;
}

// A row of at most four registers (register_row<A, T, Count>): the same sweep with the row held
// in registers from its load to its store, as softmax's short rows are. The fill lanes are -inf
// (a term of 0); the range is checked lane by lane (an entry above hi, or below lo and not a
// mask), without the horizontal minimum and maximum of the long rows.
template <class A, class T, std::size_t Count, class E>
inline bool short_row(const T* x, T* y, std::size_t n, call_plan<A, T> const& p,
                      E const& e) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = std::numeric_limits<T>::infinity();
  primitives::register_row<A, T, Count> r(x, n, -inf);
  const batch neg_inf(-inf), lo(p.lo), hi(p.hi);
  auto out = (r.v[0] > hi) | ((r.v[0] < lo) & (r.v[0] != neg_inf));
  primitives::unroll<Count - 1>([&](auto j) SMAX_INLINE_LAMBDA {
    out = out | (r.v[j + 1] > hi) | ((r.v[j + 1] < lo) & (r.v[j + 1] != neg_inf));
  });
  const double sum = smax::detail::horizontal_sum(r.transform_sum(e));
  bool fell_back;
  if (finish_without_normalizing<A>(x, y, n, xsimd::any(out), sum, fell_back)) return fell_back;
  if (sum > limits<T>::large_sum) {
    const primitives::normalizer<A, T> normalize(0x1p64, sum);
    const batch down(T(0x1p-64));
    r.transform([&](batch const& v) SMAX_INLINE_LAMBDA { return normalize(v * down); });
  } else {  // one product an element, as softmax's short rows (within the same bound)
    r.transform(primitives::short_normalizer<A, T, false>(sum));
  }
  r.store(y);
  return false;
}

// One row on the fast path; returns true when it fell back (softmax's kernels wrote y).
template <class A, class T, class E>
inline bool row(const T* x, T* y, std::size_t n, call_plan<A, T> const& p, E const& e) noexcept {
  using batch = xsimd::batch<T, A>;
  // In place, x is kept until the row is known to be in range (a fallback needs it): the sum
  // only, then the exponentials again in the normalise sweep.
  const bool in_place = x == y;
  T row_min, row_max;
  const double sum = in_place ? exp_sum_range<A, false>(x, y, n, p.lo, e, row_min, row_max)
                              : exp_sum_range<A, true>(x, y, n, p.lo, e, row_min, row_max);
  const bool out_of_range =
      !(row_max <= p.hi) || nan_unseen_by_sum<A>(x, n) ||
      (row_min < p.lo && (!primitives::is_neg_inf(row_min) || has_finite_below<A>(x, n, p.lo)));
  bool fell_back;
  if (finish_without_normalizing<A>(x, y, n, out_of_range, sum, fell_back)) return fell_back;
  if (sum > limits<T>::large_sum) {
    const primitives::normalizer<A, T> normalize(0x1p64, sum);
    const batch down(T(0x1p-64));
    const auto scaled = [&](batch const& v) SMAX_INLINE_LAMBDA { return normalize(v * down); };
    if (in_place)
      primitives::map<A>(x, y, n, [&](batch const& v) SMAX_INLINE_LAMBDA { return scaled(e(v)); });
    else
      primitives::map<A>(y, y, n, scaled);
    return false;
  }
  const primitives::normalizer<A, T> normalize(1.0, sum);
  if (in_place)
    primitives::map<A>(x, y, n, [&](batch const& v) SMAX_INLINE_LAMBDA { return normalize(e(v)); });
  else
    primitives::map<A>(y, y, n, normalize);
  return false;
}

// Rows longer than four registers, out of line: their frame (the flush guard, the sweeps) stays
// off the short rows' path.
template <class A, class T, class E>
__attribute__((noinline)) std::size_t long_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                                std::size_t rows, std::size_t cols,
                                                call_plan<A, T> const& p, E const& e) noexcept {
  [[maybe_unused]] const flush_subnormal_results<A> ftz(rows * cols);
  std::size_t fell_back = 0;
  for (std::size_t r = 0; r < rows; ++r) fell_back += row<A>(x + r * ldx, y + r * ldy, cols, p, e);
  return fell_back;
}

template <class A, class T>
inline std::size_t forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols, double phi, double a,
                                double b) noexcept {
  const call_plan<A, T> p = plan<A, T>(phi, a, b);
  if (p.how == path::nan_rows) {  // invalid options (asserted by the API in debug builds)
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return 0;
  }
  if (p.how == path::softmax_only) {  // no x can be in range, or the range is beyond the fast path
    // Every row falls back but the all-masked ones, which are not reported (counted before
    // softmax, which may overwrite x in place).
    std::size_t fell_back = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const T* row_x = x + r * ldx;
      std::size_t i = 0;
      while (i < cols && primitives::is_neg_inf(row_x[i])) ++i;
      fell_back += i < cols;
    }
    softmax_table<A>::forward(x, ldx, y, ldy, rows, cols, T(1), 0u, algorithm_id::automatic);
    return fell_back;
  }
  const auto each_row = [&](auto const& e) -> std::size_t {
#if !SMAX_FINITE_MATH_ONLY  // (the -inf compares of short_row could be folded there)
    if (cols <= primitives::max_row_registers * xsimd::batch<T, A>::size) {
      std::size_t fell_back = 0;
      primitives::with_register_count<A, T>(cols, [&](auto count) SMAX_INLINE_LAMBDA {
        for (std::size_t r = 0; r < rows; ++r)
          fell_back += short_row<A, T, decltype(count)::value>(x + r * ldx, y + r * ldy, cols, p, e);
      });
      return fell_back;
    }
#endif
    return long_rows<A>(x, ldx, y, ldy, rows, cols, p, e);
  };
  if (p.how == path::shifted) {
    primitives::shift_row<T, A> s;
    s.s_log2e = xsimd::batch<T, A>(primitives::exp_constants<T>::log2e);
    s.neg_j = xsimd::batch<T, A>(static_cast<T>(-p.j));
    return each_row([&](xsimd::batch<T, A> const& v)
                        SMAX_INLINE_LAMBDA { return primitives::exp_shifted<false, true>(v, s); });
  }
  return each_row(exp_minus_constant<A, T>{xsimd::batch<T, A>(-p.c)});
}

}  // namespace unified_max_detail

template <class A>
std::size_t unified_max_table<A>::forward(const float* x, std::size_t ldx, float* y,
                                          std::size_t ldy, std::size_t rows, std::size_t cols,
                                          double phi, double a, double b) noexcept {
  return unified_max_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, phi, a, b);
}
template <class A>
std::size_t unified_max_table<A>::forward(const double* x, std::size_t ldx, double* y,
                                          std::size_t ldy, std::size_t rows, std::size_t cols,
                                          double phi, double a, double b) noexcept {
  return unified_max_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, phi, a, b);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(unified_max_table)
