#pragma once
// Softpick (docs/softpick.md): y_i = relu(a_i) / (sum_j |a_j| + eps) with a_j = e^(x_j - m) - e^-m,
// m = max x, over the finite x_j; all zero when m <= 0.
//
// The term is evaluated without the cancellation of the code's form e^(x-m) - e^-m (which loses
// about 3 digits for |x| << 1). With K = max(0, round(m·log2 e)) and c = e^(K·ln2 - m) in
// [0.7, 1.42], a_j = c·b_j where b_j = 2^-K·expm1(x_j) comes from one range reduction of x_j
// (primitives::expm1_scaled): its only error is that of expm1, relative, on both sides of 0.
// c cancels in y except against eps: y_i = relu(b_i) / (sum |b_j| + eps/c). For m above
// fast_max the exponent range of 2^(k-K) runs out, and the kernels use the two-exponential form
// (large_term): a = e^(x-m)·(-expm1(-x)) for x > 0, expm1(x)·e^-m for x <= 0 (two exponentials).
//
// Rows of at most four registers stay in registers (batches of them go four rows at a time,
// interleaved). Rows up to three_pass_max_bytes run three
// passes: max/min; b, store relu(b), sum |b|; scale. Longer rows run two: pass 1 blocked and
// online (per block: max, rescale the sum by the exact power of two 2^(K_old - K_new) when K
// grows, sum |b| while the block is in L1), pass 2 recomputes b and writes relu(b)/S'.
//
// Backward (docs/softpick.md): with S' = sum |a| + eps and c = <dy, y>,
// dx_k = e^(x_k - m)/S' · ([x_k > 0]·dy_k - sgn(x_k)·c), and dx_k* -= c·eps/S' at the first
// argmax k*. S' is recomputed from x (y is used only for c).

#include <cmath>
#include <cstddef>
#include <limits>

#include "../config.hpp"
#include "../primitives/exp_minus_max.hpp"
#include "../primitives/expm1.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/stream.hpp"
#include "row_driver.hpp"

namespace smax {
namespace kernels {

enum class softpick_algorithm : unsigned { automatic = 0, three_pass = 1, online = 2 };

// Rows up to this many bytes run three passes (the scale pass re-reads y from cache).
constexpr std::size_t softpick_three_pass_max_bytes = std::size_t(1) << 20;

namespace softpick_detail {

template <class T>
struct constants;
template <>
struct constants<float> {
  // Rows whose maximum is above this use the two-exponential form: 2^-K stays normal and
  // 2^(k-K) in range for every k the clamped input can give.
  static constexpr float fast_max = 80.0f;
  // K above which 2^(k-K) can fall below the smallest normal for t >= expm1's lowest (-40, k >= -58).
  static constexpr double plain_max_k = 68.0;
};
template <>
struct constants<double> {
  static constexpr double fast_max = 600.0;
  static constexpr double plain_max_k = 964.0;
};

// How the terms of a row are computed: plain (every x >= expm1's lowest, 2^(k-K) normal),
// clamp (some x below lowest, or K large), masked (some x = -inf: those give 0 and are left out
// of the sum), large (m > fast_max: the two-exponential form, masked-safe).
enum class mode { plain, clamp, masked, large };

template <class T>
struct plan {
  T max;
  mode how;
  double k;       // K
  T scale;        // 2^-K
  double c;       // a = c·b (1 for large)
  T exp_neg_max;  // e^-m, large rows only
};

template <class A, class T>
inline double k_of(T max) noexcept {
  const double k = ::nearbyint(static_cast<double>(max) * 1.4426950408889634);
  return k > 0.0 ? k : 0.0;
}

// 2^-k for an integer 0 <= k <= plain range (a normal number), built from its bits: the plan is
// made once per short row, where a libm call would show.
template <class A, class T>
inline T pow2_neg(double k) noexcept {
  using integer = smax::detail::integer_of_t<T>;
  constexpr int mantissa = std::numeric_limits<T>::digits - 1;
  constexpr integer bias = std::numeric_limits<T>::max_exponent - 1;
  const integer bits = (bias - static_cast<integer>(k)) << mantissa;
  T r;
  __builtin_memcpy(&r, &bits, sizeof r);
  return r;
}

// e^t for |t| <= ln2/2 + 2^-40 (t = K·ln2 - m with K = round(m·log2e)), inline: a libm call in
// the plan would make every short row spill its registers around it (softpick 64 elements: 7 % of
// the time was glibc's exp). Taylor to degree 9, whose truncation is below 2^-36 relative: for
// float rows c (which only scales eps) needs far less; double rows keep libm's exp.
template <class A>
SMAX_ALWAYS_INLINE double exp_reduced_scalar(double t) noexcept {
  const double t2 = t * t;
  const double lo = ((t * (1.0 / 6) + 1.0 / 2) * t + 1.0) * t + 1.0;  // 1 + t + t²/2 + t³/6
  const double mid =
      ((t * (1.0 / 5040) + 1.0 / 720) * t + 1.0 / 120) * t + 1.0 / 24;  // t^4..t^7 / t^4
  const double hi = t * (1.0 / 362880) + 1.0 / 40320;                   // t^8, t^9 / t^8
  return lo + (t2 * t2) * (mid + (t2 * t2) * hi);
}

// The plan of a row with maximum max > -inf (finite) and minimum min. c (in double) only scales
// eps, so its rounding is irrelevant next to the bound.
template <class A, class T>
inline plan<T> make_plan(T max, T min) noexcept {
  plan<T> p{max, mode::plain, 0.0, T(1), 1.0, T(0)};
  if (max > constants<T>::fast_max) {
    p.how = mode::large;
    p.exp_neg_max = static_cast<T>(::exp(-static_cast<double>(max)));
    return p;
  }
  p.k = k_of<A>(max);
  p.scale = pow2_neg<A, T>(p.k);
  // K·ln2 in two parts (fdlibm's split: ln2_hi has 32 bits, so K·ln2_hi is exact and, within a
  // factor of 2 of max, so is its difference with max): with ln2 rounded to one double, t was off
  // by K·2.3e-17 and c with it (2e-14 relative at m = 599, double rows beyond their 1e-14).
  constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double t = (p.k * ln2_hi - static_cast<double>(max)) + p.k * ln2_lo;
  if constexpr (sizeof(T) == 4)
    p.c = exp_reduced_scalar<A>(t);
  else
    p.c = ::exp(t);  // a double row's eps/c needs c to double precision
  if (min == -static_cast<T>(__builtin_huge_val()))
    p.how = mode::masked;
  else if (min < primitives::expm1_constants<T>::lowest || p.k > constants<T>::plain_max_k)
    p.how = mode::clamp;
  return p;
}

// b(x) = 2^-K·expm1(x) (= a(x)/c).
template <class A, class T, mode M>
struct term {
  using batch = xsimd::batch<T, A>;
  batch neg_k, scale;
  explicit term(plan<T> const& p) noexcept : neg_k(static_cast<T>(-p.k)), scale(p.scale) {}
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch b = primitives::expm1_scaled<M != mode::plain>(x, neg_k, scale);
    if constexpr (M == mode::masked)
      return xsimd::select(x == batch(-static_cast<T>(__builtin_huge_val())), batch(T(0)), b);
    return b;
  }
};

// a(x) for m > fast_max, in the cancellation-free form e^(x-m)·(-expm1(-x)) for x > 0 and
// expm1(x)·e^-m for x <= 0, from one expm1 of -|x|.
template <class A, class T>
struct large_term {
  using batch = xsimd::batch<T, A>;
  primitives::exp_minus_max<A, T, false> exp_minus_max;
  batch exp_neg_max;
  explicit large_term(plan<T> const& p) noexcept
      : exp_minus_max(p.max, T(1)), exp_neg_max(p.exp_neg_max) {}
  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch e1 = primitives::expm1(-xsimd::abs(x));
    const batch a = xsimd::select(x > batch(T(0)), -(exp_minus_max(x) * e1), exp_neg_max * e1);
    return xsimd::select(x == batch(-static_cast<T>(__builtin_huge_val())), batch(T(0)), a);
  }
};

// Calls f with the term functor of the plan: one instantiation of the row loop per mode.
template <class A, class T, class F>
inline decltype(auto) with_term(plan<T> const& p, F&& f) {
  switch (p.how) {
    case mode::plain:
      return f(term<A, T, mode::plain>(p));
    case mode::clamp:
      return f(term<A, T, mode::clamp>(p));
    case mode::masked:
      return f(term<A, T, mode::masked>(p));
    default:
      return f(large_term<A, T>(p));
  }
}

// Sum of |f(x[i])| for i < n, storing relu(f(x[i])) to y when Store; blocked like
// primitives::map_sum (at most 16 additions per lane before a fold into double). x == y is
// allowed. The tail is padded with 0, which every term maps to 0, and dropped from the sum anyway.
template <class A, bool Store, class T, class F>
inline double store_relu_sum_abs(const T* x, T* y, std::size_t n, F const& f,
                                 std::size_t prefetch_distance = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const batch zero(T(0));
  double total = 0.0;
  std::size_t i = 0;
  while (i + 4 * width <= n) {
    const std::size_t block_end =
        n - i > primitives::sum_block<T, A> ? i + primitives::sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    for (; i + 4 * width <= block_end; i += 4 * width) {
      if (prefetch_distance)
        primitives::prefetch<A>(x + i + prefetch_distance, 4 * width * sizeof(T));
      const batch b0 = f(batch::load_unaligned(x + i));
      const batch b1 = f(batch::load_unaligned(x + i + width));
      const batch b2 = f(batch::load_unaligned(x + i + 2 * width));
      const batch b3 = f(batch::load_unaligned(x + i + 3 * width));
      if (Store) {
        xsimd::max(b0, zero).store_unaligned(y + i);
        xsimd::max(b1, zero).store_unaligned(y + i + width);
        xsimd::max(b2, zero).store_unaligned(y + i + 2 * width);
        xsimd::max(b3, zero).store_unaligned(y + i + 3 * width);
      }
      s0 += xsimd::abs(b0);
      s1 += xsimd::abs(b1);
      s2 += xsimd::abs(b2);
      s3 += xsimd::abs(b3);
    }
    total += smax::detail::horizontal_sum((s0 + s1) + (s2 + s3));
  }
  batch s(T(0));
  for (; i + width <= n; i += width) {
    const batch b = f(batch::load_unaligned(x + i));
    if (Store) xsimd::max(b, zero).store_unaligned(y + i);
    s += xsimd::abs(b);
  }
  if (i < n) {
    const batch b = f(primitives::load_partial<A>(x + i, n - i, T(0)));
    if (Store) primitives::store_partial<A>(y + i, n - i, xsimd::max(b, zero));
    s += primitives::zero_from<A>(xsimd::abs(b), n - i);
  }
  return total + smax::detail::horizontal_sum(s);
}

// A row whose maximum is -inf, +inf or NaN, or <= 0: writes y (NaN, or zeros when m <= 0 and the
// row holds no NaN) and returns true. max may have missed a NaN (reduce_range does not flag it):
// rows that end here without a NaN verdict are scanned.
template <class A, class T>
inline bool finish_special(T max, const T* x, T* y, std::size_t n) noexcept {
  if (!primitives::is_finite(max)) {  // E6, E5, E4
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return true;
  }
  if (max <= T(0)) {
    fill_row<A>(y, n,
                primitives::reduce_max<A>(x, n).has_nan ? static_cast<T>(__builtin_nan("")) : T(0));
    return true;
  }
  return false;
}

// y = v/S' for the stored v = relu(b) and S' = sum |b| + eps/c (in double). S' >= 0.7·m unless
// eps = 0, so only a row whose maximum is below the smallest normal number can have a 1/S' beyond
// T's range ([1e-39, -1e-39] with eps = 0: 1/S' = 5e38): there v and S' are both scaled by
// 2^digits first, which keeps the quotient's bits (a product with an infinite factor would give
// inf and NaN).
template <class A, class T, class F>
SMAX_ALWAYS_INLINE decltype(auto) with_normalizer(double s, F&& f) {
  using batch = xsimd::batch<T, A>;
  constexpr double largest = std::numeric_limits<T>::max();  // constant: no call into non-A code
  const double inverse = 1.0 / s;
  if (inverse <= largest) {
    const batch inv(static_cast<T>(inverse));
    return f([inv](batch const& v) { return v * inv; });
  }
  constexpr double up = sizeof(T) == 4 ? 0x1p24 : 0x1p53;
  const batch pre(static_cast<T>(up)), inv(static_cast<T>(1.0 / (s * up)));
  return f([pre, inv](batch const& v) { return (v * pre) * inv; });
}

// y = relu(b)/S' for rows of at most four registers, held in registers throughout.
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void short_row(const T* x, T* y, std::size_t n, double eps) noexcept {
  using batch = xsimd::batch<T, A>;
  const T neg_inf = -__builtin_huge_val();
  primitives::register_row<A, T, Count> row(x, n, neg_inf);
  const auto lanes = row.lane_max();
  const T max =
      lanes.has_nan ? static_cast<T>(__builtin_nan("")) : smax::detail::horizontal_max(lanes.max);
  if (finish_special<A>(max, x, y, n)) return;
  // The padding lanes are -inf: the masked (or large) terms give them 0.
  const plan<T> p = make_plan<A>(max, neg_inf);
  const double s = with_term<A>(p, [&](auto const& f) {
    batch acc(T(0));
    row.transform([&](batch const& v) {
      const batch b = f(v);
      acc += xsimd::abs(b);
      return xsimd::max(b, batch(T(0)));
    });
    return smax::detail::horizontal_sum(acc);
  });
  with_normalizer<A, T>(s + eps / p.c, [&](auto const& normalize) { row.transform(normalize); });
  row.store(y);
}

template <class A, class T>
inline void short_row(const T* x, T* y, std::size_t n, double eps) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { short_row<A, T, decltype(count)::value>(x, y, n, eps); });
}

// K short rows at once (same length, Count registers each): short_row's arithmetic, interleaved
// so that the latency chains of independent rows (horizontal max, term, horizontal sum,
// reciprocal) overlap. A group holding a row short_row would finish specially (NaN, +inf, all
// masked, m <= 0) or compute in the large form goes row by row.
template <class A, class T, std::size_t K, std::size_t Count>
SMAX_FLATTEN inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                    std::size_t n, double eps) noexcept {
  using batch = xsimd::batch<T, A>;
  const T neg_inf = -__builtin_huge_val();
  primitives::register_row<A, T, Count> rows[K];
  T max[K];
  bool ordinary = true;
  constexpr T smallest_normal = std::numeric_limits<T>::min();
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    rows[k].load(x + k * ldx, n, neg_inf);
    const auto lanes = rows[k].lane_max();
    max[k] = smax::detail::horizontal_max(lanes.max);
    // A maximum below the smallest normal number may need with_normalizer's rare form.
    ordinary =
        ordinary && !lanes.has_nan && max[k] >= smallest_normal && max[k] <= constants<T>::fast_max;
  });
  if (!ordinary) {
    primitives::unroll<K>(
        [&](auto k) { short_row<A, T, Count>(x + k * ldx, y + k * ldy, n, eps); });
    return;
  }
  batch s[K];
  double eps_b[K];
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    const plan<T> p = make_plan<A>(max[k], neg_inf);  // masked, as short_row: the same bits
    const term<A, T, mode::masked> f(p);
    eps_b[k] = eps / p.c;
    s[k] = batch(T(0));
    rows[k].transform([&](batch const& v) {
      const batch b = f(v);
      s[k] += xsimd::abs(b);
      return xsimd::max(b, batch(T(0)));
    });
  });
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    const batch inv(static_cast<T>(1.0 / (smax::detail::horizontal_sum(s[k]) + eps_b[k])));
    rows[k].transform([&](batch const& v) { return v * inv; });
    rows[k].store(y + k * ldy);
  });
}

template <class A, class T, std::size_t K>
inline void short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n,
                       double eps) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { short_rows<A, T, K, decltype(count)::value>(x, ldx, y, ldy, n, eps); });
}

template <class A, class T>
inline void three_pass_row(const T* x, T* y, std::size_t n, double eps,
                           std::size_t next_row) noexcept {
  using batch = xsimd::batch<T, A>;
  if (n <= 4 * batch::size) return short_row<A>(x, y, n, eps);
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (finish_special<A>(r.max, x, y, n)) return;
  const plan<T> p = make_plan<A>(r.max, r.min);
  const double s = with_term<A>(
      p, [&](auto const& f) { return store_relu_sum_abs<A, true>(x, y, n, f, next_row); });
  if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, n))
    return fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));  // a NaN in the row
  with_normalizer<A, T>(s + eps / p.c,
                        [&](auto const& normalize) { primitives::map<A>(y, y, n, normalize); });
}

template <class A, class T>
inline void online_row(const T* x, T* y, std::size_t n, double eps) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  const T nan = __builtin_nan("");
  T max = -inf, min = inf;
  double k = 0.0, sum = 0.0;
  for (std::size_t b = 0; b < n; b += row_block<T>) {
    const std::size_t len = n - b < row_block<T> ? n - b : row_block<T>;
    const auto r = primitives::reduce_range<A, true>(x + b, len);
    const block_kind kind = classify_block<A>(r.max, x + b, len);
    if (kind == block_kind::nan_row) return fill_row<A>(y, n, nan);
    if (kind == block_kind::masked) {
      min = -inf;
      continue;
    }
    if (r.min < min) min = r.min;
    if (r.max > max) {
      // Rows reaching the large form are rare (logits above 80): computed in three passes.
      if (r.max > constants<T>::fast_max) return three_pass_row<A>(x, y, n, eps, 0);
      const double k_new = k_of<A>(r.max);
      sum = ::ldexp(sum, static_cast<int>(k - k_new));  // exact: K only grows
      k = k_new;
      max = r.max;
    }
    const plan<T> p = make_plan<A>(max, r.min);
    const std::size_t ahead = b + 2 * row_block<T> <= n ? row_block<T> : 0;
    sum += with_term<A>(p, [&](auto const& f) {
      return store_relu_sum_abs<A, false>(x + b, static_cast<T*>(nullptr), len, f, ahead);
    });
  }
  if (primitives::is_nan(sum) || nan_unseen_by_sum<A>(x, n)) return fill_row<A>(y, n, nan);
  if (primitives::is_neg_inf(max)) return fill_row<A>(y, n, nan);  // E4
  if (max <= T(0)) return fill_row<A>(y, n, T(0));                 // no NaN: the sum would show it
  const plan<T> p = make_plan<A>(max, min);
  const std::size_t ahead = n * sizeof(T) > (std::size_t(1) << 20) ? 8192 / sizeof(T) : 0;
  with_normalizer<A, T>(sum + eps / p.c, [&](auto const& normalize) {
    with_term<A>(p, [&](auto const& f) {
      auto normalized = [&](batch const& v) { return normalize(xsimd::max(f(v), batch(T(0)))); };
      if (primitives::should_stream<A, T>(n))
        primitives::map_streaming<A>(x, y, n, normalized, ahead);
      else
        primitives::map<A>(x, y, n, normalized, ahead);
    });
  });
}

// Softpick's policy for the row driver (row_driver.hpp). No flush to zero: a row whose maximum
// is subnormal (allowed with eps = 0) has subnormal terms b = expm1(x) that carry the whole
// result, which a flush would turn into 0/0. Other rows have subnormal terms only with a maximum
// above fast_max (the large form's e^-m), rare enough that their assists do not matter.
template <class A, class T>
struct softpick_rows {
  static constexpr bool flush_subnormals = false;
  static constexpr bool register_kernels = true;
  double eps;
  softpick_algorithm algorithm;

  bool in_registers() const noexcept { return algorithm == softpick_algorithm::three_pass; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    short_row<B>(x, y, n, eps);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    short_rows<B, T, K>(x, ldx, y, ldy, n, eps);
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    if (algorithm == softpick_algorithm::online)
      return f([this](const T* x, T* y, std::size_t n, next_rows) { online_row<A>(x, y, n, eps); });
    f([this](const T* x, T* y, std::size_t n, next_rows next) {
      three_pass_row<A>(x, y, n, eps, next.x);
    });
  }
};

// Inlined into the table's entry points: a call level costs a short row a few ns.
template <class A, class T>
SMAX_ALWAYS_INLINE void forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                     std::size_t rows, std::size_t cols, double eps,
                                     softpick_algorithm algorithm) noexcept {
  if (algorithm == softpick_algorithm::automatic)
    algorithm = cols * sizeof(T) <= softpick_three_pass_max_bytes ? softpick_algorithm::three_pass
                                                                  : softpick_algorithm::online;
  drive_rows<A>(x, ldx, y, ldy, rows, cols, softpick_rows<A, T>{eps, algorithm});
}

// First i with x[i] == value (the row holds it).
template <class A, class T>
inline std::size_t first_index_of(const T* x, std::size_t n, T value) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  std::size_t i = 0;
  for (; i + width <= n; i += width)
    if (xsimd::any(batch::load_unaligned(x + i) == batch(value))) break;
  for (; i < n; ++i)
    if (x[i] == value) return i;
  return n;
}

template <class A, class T>
inline void backward_row(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                         double eps) noexcept {
  using batch = xsimd::batch<T, A>;
  const T nan = __builtin_nan("");
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (finish_special<A>(r.max, x, dx, n)) return;  // NaN rows: NaN; m <= 0: dx = 0
  const plan<T> p = make_plan<A>(r.max, r.min);
  const double s_b = with_term<A>(p, [&](auto const& f) {
    return store_relu_sum_abs<A, false>(x, static_cast<T*>(nullptr), n, f);
  });
  if (s_b != s_b) return fill_row<A>(dx, n, nan);
  const double s = p.c * s_b + eps;  // S' = sum |a| + eps
  const double dot =
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  const batch c(static_cast<T>(dot)), inv_s(static_cast<T>(1.0 / s)), zero(T(0));
  const std::size_t k = first_index_of<A>(x, n, r.max);  // before dx (which may be x) is written
  primitives::with_exp_minus_max<A, T, false>(r.max, r.min, T(1), [&](auto const& e) {
    primitives::zip_map<A>(x, dy, dx, n, [&](batch const& xv, batch const& dyv) {
      // [x > 0]·dy - sgn(x)·c: dy - c for x > 0, c for x < 0 (masked entries too: e^-inf = 0),
      // 0 at x = 0.
      const batch g = xsimd::select(xv > zero, dyv - c, xsimd::select(xv < zero, c, zero));
      return (e(xv) * inv_s) * g;
    });
    return 0;
  });
  // The eps·e^m term of S' (through m) at the first argmax.
  if (k < n) dx[k] = static_cast<T>(static_cast<double>(dx[k]) - dot * eps / s);
}

template <class A, class T>
inline void backward_rows(const T* x, std::size_t ldx, const T* y, std::size_t ldy, const T* dy,
                          std::size_t lddy, T* dx, std::size_t lddx, std::size_t rows,
                          std::size_t cols, double eps) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols, eps);
}

}  // namespace softpick_detail

// The softpick kernels for one instruction set A (see table.hpp for why the members are defined
// out of class and not inline).
template <class A>
struct softpick_table {
  // y = softpick(x) for each of rows rows of cols elements (x == y allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, double eps, softpick_algorithm algorithm) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double eps,
                      softpick_algorithm algorithm) noexcept;
  // dx = J(x)^T dy given y = softpick(x); any of x, y, dy, dx may be the same array.
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, double eps) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, double eps) noexcept;
};

template <class A>
void softpick_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols, double eps,
                                softpick_algorithm algorithm) noexcept {
  softpick_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, eps, algorithm);
}
template <class A>
void softpick_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols, double eps,
                                softpick_algorithm algorithm) noexcept {
  softpick_detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, eps, algorithm);
}
template <class A>
void softpick_table<A>::backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                 const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols, double eps) noexcept {
  softpick_detail::backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, eps);
}
template <class A>
void softpick_table<A>::backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                                 const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols, double eps) noexcept {
  softpick_detail::backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, eps);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(softpick_table)
