#pragma once
// α-entmax by bisection (docs/entmax_bisect.md) for one instruction set A:
// y_i = [(α - 1)·x_i - tau]_+^(1/(α - 1)) with tau such that sum(y) = 1, and its backward pass.
//
// Everything works on z = (α - 1)·(x - m) (m the row maximum), computed in T as
// (x - m)·fl(α - 1), so z_max = 0 and the threshold t of z lies in [-1, -k^(1-α)]: at t = -1 the
// maximum alone gives 1, at t = -k^(1-α) no entry gives more than 1/k, where k counts the
// candidates, the entries with z > -1 (t >= -1, so nothing else can be in the support; masked
// entries have z = -inf). k <= n_fin, so this bracket is inside the one of the definition.
//
// Four passes over what matters:
//   max      primitives::reduce_max (NaN flag).
//   compact  one SIMD pass over x copies the candidates (as T) to a scratch array.
//   bisect   on the candidates only: each step evaluates S(t) = sum [z - t]_+^p and the count
//            #{z > t} at the midpoint t of [lo, hi] (lo: S >= 1, hi: S < 1); when lo rises,
//            the candidates at or below it can never return, and they are dropped once they are
//            at least half of the array. The bracket ends are values of T and the midpoints are
//            rounded to T, so the step stops when no value of T lies strictly between them.
//            For α = 2 and α = 1.5 it stops earlier: once no candidate lies in (lo, hi] (the two
//            counts agree) the support is known, and t follows in closed form in double
//            (α = 2: (sum z - 1)/|S|; α = 1.5: mean - sqrt((1 - sum (z - mean)²)/|S|)).
//   write    y = [z - t]_+^p / S(t) for the last t evaluated (the last iterate renormalised).
// The power u^p, p = 1/(α - 1): u for α = 2, u² for α = 1.5, sqrt(u) for α = 3, otherwise
// exp(p·log u) with smax's vector exp and log (u clamped to the smallest normal number from
// above 0, a change far below the bound). S is summed in T within blocks of 16 vectors (two
// accumulators) and the blocks in double.
//
// Backward (from y only): s_i = y_i^(2-α) on the support (0 elsewhere), dx = s ⊙ (dy - c),
// c = <s, dy>/sum s, both sums in double. For α = 2 s is [y > 0], for 1.5 sqrt(y), for 3 1/y.
//
// Nothing below calls a non-A-templated inline function (the scratch buffer is malloc'ed and
// std::exp/std::log are library calls), so no instruction set's code can leak into another.

#include <math.h>
#include <stdlib.h>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "../config.hpp"
#include "../detail/xsimd_compat.hpp"
#include "../primitives/exp.hpp"
#include "../primitives/log.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/scratch.hpp"
#include "../primitives/special.hpp"

namespace smax {
namespace kernels {

// The state of one row after its threshold is known.
template <class T>
struct entmax_bisect_row_state {
  enum kind_t : unsigned { ordinary = 0, nan_row = 1 } kind;
  T max;                     // row maximum m
  T scale;                   // fl(α - 1): z = (x - m)·scale
  T tau;                     // threshold of z (the last iterate)
  T inverse_sum;             // 1/S(tau): the renormalisation
  std::size_t support_size;  // #{i : z_i > tau}
  unsigned steps;            // bisection steps taken
};

namespace entmax_bisect_detail {

// How u^p is evaluated.
enum class power_kind : unsigned { linear, square, root, general };

template <power_kind P>
constexpr bool has_closed_form = P == power_kind::linear || P == power_kind::square;

// [u]_+^p (p = 1/(α - 1), used by general only).
template <power_kind P, class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> power(xsimd::batch<T, A> const& u,
                                            xsimd::batch<T, A> const& p) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch zero(T(0));
  if constexpr (P == power_kind::linear) {
    return xsimd::max(u, zero);
  } else if constexpr (P == power_kind::square) {
    const batch v = xsimd::max(u, zero);
    return v * v;
  } else if constexpr (P == power_kind::root) {
    return xsimd::sqrt(xsimd::max(u, zero));
  } else {
    // u <= 1 (z <= 0 and t >= -1), so p·log u <= 0: the exp's domain.
    const auto positive = u > zero;
    const batch v = xsimd::max(u, batch(std::numeric_limits<T>::min()));
    const batch e = primitives::exp_nonpositive<true>(p * primitives::log_normal<A>(v));
    return xsimd::select(positive, e, zero);
  }
}

template <class A, class T>
inline T next_up(T v) noexcept {
  if constexpr (sizeof(T) == 4)
    return ::nextafterf(v, __builtin_huge_valf());
  else
    return ::nextafter(v, __builtin_huge_val());
}

// Appends every z = (x - m)·scale > -1 of x[0..n) to c, returns the new count. c needs room for
// count + n + width elements (a vector with a candidate writes all its lanes and counts its
// candidates). Most vectors of a wide row hold no candidate and cost a subtract, a multiply, a
// compare and a test.
template <class A, class T>
inline std::size_t compact_candidates(const T* x, std::size_t n, T m, T scale, T* c,
                                      std::size_t count) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch mb(m), sb(scale), lb(T(-1));
  alignas(64) T lanes[width];
  auto append = [&](batch const& z) {
    z.store_aligned(lanes);
    for (std::size_t j = 0; j < width; ++j) {
      c[count] = lanes[j];
      count += lanes[j] > T(-1);
    }
  };
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch z0 = (batch::load_unaligned(x + i) - mb) * sb;
    const batch z1 = (batch::load_unaligned(x + i + width) - mb) * sb;
    const batch z2 = (batch::load_unaligned(x + i + 2 * width) - mb) * sb;
    const batch z3 = (batch::load_unaligned(x + i + 3 * width) - mb) * sb;
    const auto c0 = z0 > lb, c1 = z1 > lb, c2 = z2 > lb, c3 = z3 > lb;
    if (xsimd::any((c0 | c1) | (c2 | c3))) {
      if (xsimd::any(c0)) append(z0);
      if (xsimd::any(c1)) append(z1);
      if (xsimd::any(c2)) append(z2);
      if (xsimd::any(c3)) append(z3);
    }
  }
  for (; i + width <= n; i += width) {
    const batch z = (batch::load_unaligned(x + i) - mb) * sb;
    if (xsimd::any(z > lb)) append(z);
  }
  if (i < n) {
    // -inf padding: never a candidate.
    const batch z =
        (primitives::load_partial<A>(x + i, n - i, T(-__builtin_huge_val())) - mb) * sb;
    if (xsimd::any(z > lb)) append(z);
  }
  return count;
}

// Pads c[k..) to a multiple of the width with -2 (below every threshold: no contribution).
template <class A, class T>
inline std::size_t pad(T* c, std::size_t k) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  std::size_t end = k;
  while (end % width != 0) c[end++] = T(-2);
  return end;
}

// A compensated (Neumaier) sum of the block sums: for double rows the blocks alone would add
// one rounding each, n/(16·width) of them.
template <class A>
struct compensated_sum {
  double sum = 0, error = 0;
  void add(double v) noexcept {
    const double t = sum + v;
    const double as = sum < 0 ? -sum : sum, av = v < 0 ? -v : v;
    error += as >= av ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  double value() const noexcept { return sum + error; }
};

struct sweep_result {
  double sum;
  std::size_t count;
};

// S(t) = sum [c_i - t]_+^p and #{c_i > t} over c[0..padded) (padded: a multiple of the width).
// In T within blocks of 16 vectors (two accumulators of at most 8 additions each), the blocks
// folded in a compensated double sum.
template <power_kind P, class A, class T>
inline sweep_result sweep(const T* c, std::size_t padded, T t, T p) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  constexpr std::size_t block = 16 * width;
  const batch tb(t), pb(p), zero(T(0)), one(T(1));
  compensated_sum<A> sum;
  double count = 0;
  std::size_t i = 0;
  while (i < padded) {
    const std::size_t end = padded - i < block ? padded : i + block;
    batch s0(T(0)), s1(T(0)), n0(T(0)), n1(T(0));
    for (; i + 2 * width <= end; i += 2 * width) {
      const batch u0 = batch::load_unaligned(c + i) - tb;
      const batch u1 = batch::load_unaligned(c + i + width) - tb;
      s0 += power<P, A>(u0, pb);
      s1 += power<P, A>(u1, pb);
      n0 += xsimd::select(u0 > zero, one, zero);
      n1 += xsimd::select(u1 > zero, one, zero);
    }
    if (i < end) {
      const batch u0 = batch::load_unaligned(c + i) - tb;
      s0 += power<P, A>(u0, pb);
      n0 += xsimd::select(u0 > zero, one, zero);
      i += width;
    }
    sum.add(smax::detail::horizontal_sum(s0 + s1));
    count += smax::detail::horizontal_sum(n0 + n1);
  }
  return {sum.value(), static_cast<std::size_t>(count)};
}

// Keeps the c_i > t (in order), returns their number.
template <class A, class T>
inline std::size_t drop_at_or_below(T* c, std::size_t k, T t) noexcept {
  std::size_t j = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const T v = c[i];
    c[j] = v;
    j += v > t;
  }
  return j;
}

// The closed-form threshold of the support {c_i > lo} (count elements), in double.
template <power_kind P, class A, class T>
inline double closed_form_threshold(const T* c, std::size_t k, T lo, std::size_t count) noexcept {
  double sum = 0;
  for (std::size_t i = 0; i < k; ++i) sum += c[i] > lo ? static_cast<double>(c[i]) : 0.0;
  const double s = static_cast<double>(count);
  if constexpr (P == power_kind::linear) {
    return (sum - 1.0) / s;
  } else {
    // sum (z - t)² = 1 over the support: the smaller root, t = mean - sqrt((1 - ss)/|S|) with
    // ss = sum (z - mean)² (two passes: no cancellation in ss).
    const double mean = sum / s;
    double ss = 0;
    for (std::size_t i = 0; i < k; ++i) {
      const double d = static_cast<double>(c[i]) - mean;
      ss += c[i] > lo ? d * d : 0.0;
    }
    const double r = (1.0 - ss) / s;
    return mean - ::sqrt(r > 0 ? r : 0.0);
  }
}

template <class A, class T>
inline entmax_bisect_row_state<T> nan_state(T max) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  return {entmax_bisect_row_state<T>::nan_row, max, nan, nan, nan, 0, 0};
}

// Whether α is in the domain: finite, with fl(α - 1) a positive normal number of T (and p =
// 1/(α - 1) finite).
template <class A, class T>
inline bool valid_alpha(double alpha) noexcept {
  if (!(alpha > 1.0 && alpha < __builtin_huge_val())) return false;
  const T scale = static_cast<T>(alpha - 1.0);
  return scale >= std::numeric_limits<T>::min() && scale < std::numeric_limits<T>::infinity();
}

template <class A>
inline power_kind kind_of(double alpha) noexcept {
  return alpha == 2.0   ? power_kind::linear
         : alpha == 1.5 ? power_kind::square
         : alpha == 3.0 ? power_kind::root
                        : power_kind::general;
}

// The threshold of one row (n >= 1), the candidates in c (room for n + width elements).
template <power_kind P, class A, class T>
inline entmax_bisect_row_state<T> threshold_with(const T* x, std::size_t n, double alpha,
                                                 unsigned n_iter, T* c) noexcept {
  const auto r = primitives::reduce_max<A>(x, n);
  if (r.has_nan || !primitives::is_finite(r.max) || !valid_alpha<A, T>(alpha))
    return nan_state<A>(r.max);
  entmax_bisect_row_state<T> s;
  s.kind = entmax_bisect_row_state<T>::ordinary;
  s.max = r.max;
  s.scale = static_cast<T>(alpha - 1.0);
  const T p = static_cast<T>(1.0 / (alpha - 1.0));
  std::size_t k = compact_candidates<A>(x, n, r.max, s.scale, c, 0);
  std::size_t padded = pad<A>(c, k);
  // The bracket: lo = -1 (S >= 1: the maximum alone gives 1), hi = -k^(1-α) moved towards 0 by
  // a few units of double and rounded up in T, so that S(hi) <= 1 survives the roundings.
  T lo = T(-1);
  double hi_d = -::exp((1.0 - alpha) * ::log(static_cast<double>(k)));
  hi_d *= 1.0 - 0x1p-50;
  T hi = static_cast<T>(hi_d);
  if (static_cast<double>(hi) < hi_d) hi = next_up<A>(hi);
  const std::size_t unknown = ~std::size_t(0);
  std::size_t count_lo = k, count_hi = unknown;
  bool evaluated = false, closed = false;
  T last = lo;
  sweep_result last_sweep{0, 0};
  unsigned steps = 0;
  while (k > 1 && (n_iter == 0 || steps < n_iter)) {
    const T mid = static_cast<T>(0.5 * (static_cast<double>(lo) + static_cast<double>(hi)));
    if (!(mid > lo && mid < hi)) break;  // lo and hi are neighbours in T
    ++steps;
    const sweep_result w = sweep<P, A>(c, padded, mid, p);
    last = mid;
    last_sweep = w;
    evaluated = true;
    if (w.sum >= 1.0) {
      lo = mid;
      count_lo = w.count;
      if (2 * w.count <= k) {
        k = drop_at_or_below<A>(c, k, mid);
        padded = pad<A>(c, k);
      }
    } else {
      hi = mid;
      count_hi = w.count;
    }
    if constexpr (has_closed_form<P>) {
      if (count_lo == count_hi) {
        closed = true;
        break;
      }
    }
  }
  if constexpr (has_closed_form<P>) {
    if (closed) {
      // No candidate in (lo, hi]: the support is {z > lo} whatever t in [lo, hi].
      T t = static_cast<T>(closed_form_threshold<P, A>(c, k, lo, count_lo));
      t = t < lo ? lo : t > hi ? hi : t;
      last = t;
      last_sweep = sweep<P, A>(c, padded, t, p);
      evaluated = true;
    }
  }
  if (!evaluated) {
    // One candidate, or no step allowed: the lower end (S(-1) >= 1 > 0).
    last = lo;
    last_sweep = sweep<P, A>(c, padded, lo, p);
  }
  s.tau = last;
  s.inverse_sum = static_cast<T>(1.0 / last_sweep.sum);
  s.support_size = last_sweep.count;
  s.steps = steps;
  return s;
}

template <power_kind P, class A, class T>
inline entmax_bisect_row_state<T> row_threshold(const T* x, std::size_t n, double alpha,
                                                unsigned n_iter) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  constexpr std::size_t stack = 256;
  alignas(64) T local[stack + width];
  T* c = n <= stack ? local : primitives::scratch<A, T>(n + width);
  if (c == nullptr) return nan_state<A>(T(0));
  return threshold_with<P, A>(x, n, alpha, n_iter, c);
}

template <class A, class T>
inline void fill(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// y = [(x - m)·scale - tau]_+^p / S. x == y allowed.
template <power_kind P, class A, class T>
inline void write_row(const T* x, T* y, std::size_t n, entmax_bisect_row_state<T> const& s,
                      double alpha) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  if (s.kind != entmax_bisect_row_state<T>::ordinary) {
    fill<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const batch mb(s.max), sb(s.scale), tb(s.tau), ib(s.inverse_sum), zero(T(0));
  const batch pb(static_cast<T>(1.0 / (alpha - 1.0)));
  auto value = [&](batch const& v) {
    // z rounded to T exactly as compact_candidates stored it for the sums that fixed tau and the
    // normaliser: a fused (v - m)·scale - tau (FMA instruction sets contract the expression)
    // differs from it by a rounding of z, which an entry within a rounding of the threshold turns
    // into an output of any size when p = 1/(α - 1) is well below 1.
    const batch u = smax::detail::opaque((v - mb) * sb) - tb;
    if constexpr (P == power_kind::general) {
      // exp and log only where some lane is in the support.
      if (!xsimd::any(u > zero)) return zero;
    }
    return power<P, A>(u, pb) * ib;
  };
  std::size_t i = 0;
  for (; i + 2 * width <= n; i += 2 * width) {
    const batch r0 = value(batch::load_unaligned(x + i));
    const batch r1 = value(batch::load_unaligned(x + i + width));
    r0.store_unaligned(y + i);
    r1.store_unaligned(y + i + width);
  }
  for (; i + width <= n; i += width) value(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n)
    primitives::store_partial<A>(
        y + i, n - i, value(primitives::load_partial<A>(x + i, n - i, T(-__builtin_huge_val()))));
}

template <power_kind P, class A, class T>
inline void forward_rows_with(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols, double alpha,
                              unsigned n_iter) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const auto s = row_threshold<P, A>(x + r * ldx, cols, alpha, n_iter);
    write_row<P, A>(x + r * ldx, y + r * ldy, cols, s, alpha);
  }
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                         std::size_t cols, double alpha, unsigned n_iter) noexcept {
  switch (kind_of<A>(alpha)) {
    case power_kind::linear:
      return forward_rows_with<power_kind::linear, A>(x, ldx, y, ldy, rows, cols, alpha, n_iter);
    case power_kind::square:
      return forward_rows_with<power_kind::square, A>(x, ldx, y, ldy, rows, cols, alpha, n_iter);
    case power_kind::root:
      return forward_rows_with<power_kind::root, A>(x, ldx, y, ldy, rows, cols, alpha, n_iter);
    default:
      return forward_rows_with<power_kind::general, A>(x, ldx, y, ldy, rows, cols, alpha,
                                                       n_iter);
  }
}

template <class A, class T>
inline entmax_bisect_row_state<T> threshold(const T* x, std::size_t n, double alpha,
                                            unsigned n_iter) noexcept {
  switch (kind_of<A>(alpha)) {
    case power_kind::linear:
      return row_threshold<power_kind::linear, A>(x, n, alpha, n_iter);
    case power_kind::square:
      return row_threshold<power_kind::square, A>(x, n, alpha, n_iter);
    case power_kind::root:
      return row_threshold<power_kind::root, A>(x, n, alpha, n_iter);
    default:
      return row_threshold<power_kind::general, A>(x, n, alpha, n_iter);
  }
}

// s = y^(2-α) where y > 0, 0 elsewhere (q = 2 - α, used by general only). For α > 2 an output
// below e^(-88/(α-2)) (float; e^(-709/(α-2)) double) gives s = +inf: the true value is beyond
// the range.
template <power_kind P, class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> weight(xsimd::batch<T, A> const& y,
                                             xsimd::batch<T, A> const& q) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch zero(T(0)), one(T(1));
  const auto positive = y > zero;
  if constexpr (P == power_kind::linear) {
    return xsimd::select(positive, one, zero);
  } else if constexpr (P == power_kind::square) {
    return xsimd::sqrt(xsimd::max(y, zero));
  } else if constexpr (P == power_kind::root) {
    return xsimd::select(positive, one / y, zero);
  } else {
    const batch v = xsimd::max(y, batch(std::numeric_limits<T>::min()));
    const batch t = q * primitives::log_normal<A>(v);
    const T limit = sizeof(T) == 4 ? T(88) : T(709);
    const batch e = primitives::exp_nonpositive<true>(xsimd::min(t, batch(limit)));
    return xsimd::select(positive,
                         xsimd::select(t > batch(limit), batch(std::numeric_limits<T>::infinity()), e),
                         zero);
  }
}

template <power_kind P, class A, class T>
inline void backward_row(const T* y, const T* dy, T* dx, std::size_t n, double alpha) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  constexpr std::size_t block = 16 * width;
  if (!valid_alpha<A, T>(alpha)) {
    fill<A>(dx, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const batch q(static_cast<T>(2.0 - alpha)), zero(T(0));
  auto nan = primitives::is_nan(zero);
  compensated_sum<A> sum_s, sum_sdy;
  std::size_t i = 0;
  while (i < n) {
    const std::size_t end = n - i < block ? n : i + block;
    batch a0(T(0)), b0(T(0));
    for (; i < end; i += width) {
      const std::size_t m = end - i < width ? end - i : width;
      const batch yv = m == width ? batch::load_unaligned(y + i)
                                  : primitives::load_partial<A>(y + i, m, T(0));
      const batch dv = m == width ? batch::load_unaligned(dy + i)
                                  : primitives::load_partial<A>(dy + i, m, T(0));
      nan = nan | primitives::is_nan(yv);
      if (P == power_kind::general && !xsimd::any(yv > zero)) continue;
      const batch sv = weight<P, A>(yv, q);
      a0 += sv;
      b0 += sv * dv;
    }
    sum_s.add(smax::detail::horizontal_sum(a0));
    sum_sdy.add(smax::detail::horizontal_sum(b0));
  }
  if (xsimd::any(nan)) {
    fill<A>(dx, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  const double total = sum_s.value();
  const batch cb(total > 0 ? static_cast<T>(sum_sdy.value() / total) : T(0));
  i = 0;
  for (; i + width <= n; i += width) {
    const batch yv = batch::load_unaligned(y + i);
    if (P == power_kind::general && !xsimd::any(yv > zero)) {
      zero.store_unaligned(dx + i);
      continue;
    }
    (weight<P, A>(yv, q) * (batch::load_unaligned(dy + i) - cb)).store_unaligned(dx + i);
  }
  if (i < n) {
    const batch yv = primitives::load_partial<A>(y + i, n - i, T(0));
    primitives::store_partial<A>(
        dx + i, n - i,
        weight<P, A>(yv, q) * (primitives::load_partial<A>(dy + i, n - i, T(0)) - cb));
  }
}

template <power_kind P, class A, class T>
inline void backward_rows_with(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                               std::size_t lddx, std::size_t rows, std::size_t cols,
                               double alpha) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    backward_row<P, A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, alpha);
}

template <class A, class T>
inline void backward_rows(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                          std::size_t lddx, std::size_t rows, std::size_t cols,
                          double alpha) noexcept {
  switch (kind_of<A>(alpha)) {
    case power_kind::linear:
      return backward_rows_with<power_kind::linear, A>(y, ldy, dy, lddy, dx, lddx, rows, cols,
                                                       alpha);
    case power_kind::square:
      return backward_rows_with<power_kind::square, A>(y, ldy, dy, lddy, dx, lddx, rows, cols,
                                                       alpha);
    case power_kind::root:
      return backward_rows_with<power_kind::root, A>(y, ldy, dy, lddy, dx, lddx, rows, cols,
                                                     alpha);
    default:
      return backward_rows_with<power_kind::general, A>(y, ldy, dy, lddy, dx, lddx, rows, cols,
                                                        alpha);
  }
}

}  // namespace entmax_bisect_detail

template <class A>
struct entmax_bisect_table {
  // y = entmax_α(x) for a rows × cols block (x == y allowed); n_iter = 0: until the bracket
  // cannot be split in T (or, for α = 2 and 1.5, the support is known).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, double alpha, unsigned n_iter) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double alpha, unsigned n_iter) noexcept;
  // The row's state (n >= 1) without writing y.
  static entmax_bisect_row_state<float> threshold(const float* x, std::size_t n, double alpha,
                                                  unsigned n_iter) noexcept;
  static entmax_bisect_row_state<double> threshold(const double* x, std::size_t n, double alpha,
                                                   unsigned n_iter) noexcept;
  // dx from the forward output y and dy; any of them may alias dx.
  static void backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                       float* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                       double alpha) noexcept;
  static void backward(const double* y, std::size_t ldy, const double* dy, std::size_t lddy,
                       double* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                       double alpha) noexcept;
};

template <class A>
void entmax_bisect_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                     std::size_t rows, std::size_t cols, double alpha,
                                     unsigned n_iter) noexcept {
  entmax_bisect_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, alpha, n_iter);
}
template <class A>
void entmax_bisect_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                     std::size_t rows, std::size_t cols, double alpha,
                                     unsigned n_iter) noexcept {
  entmax_bisect_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, alpha, n_iter);
}
template <class A>
entmax_bisect_row_state<float> entmax_bisect_table<A>::threshold(const float* x, std::size_t n,
                                                                 double alpha,
                                                                 unsigned n_iter) noexcept {
  return entmax_bisect_detail::threshold<A>(x, n, alpha, n_iter);
}
template <class A>
entmax_bisect_row_state<double> entmax_bisect_table<A>::threshold(const double* x, std::size_t n,
                                                                  double alpha,
                                                                  unsigned n_iter) noexcept {
  return entmax_bisect_detail::threshold<A>(x, n, alpha, n_iter);
}
template <class A>
void entmax_bisect_table<A>::backward(const float* y, std::size_t ldy, const float* dy,
                                      std::size_t lddy, float* dx, std::size_t lddx,
                                      std::size_t rows, std::size_t cols, double alpha) noexcept {
  entmax_bisect_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols, alpha);
}
template <class A>
void entmax_bisect_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                      std::size_t lddy, double* dx, std::size_t lddx,
                                      std::size_t rows, std::size_t cols, double alpha) noexcept {
  entmax_bisect_detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols, alpha);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(entmax_bisect_table)
