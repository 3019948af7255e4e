#pragma once
// Self-Adjust Softmax (docs/sa_softmax.md) for one instruction set A: y = w ⊙ softmax(x) with
//   plain:       w_i = x_i,
//   normalised:  w_i = (x_i - a)/D,  a = min(x_min, 0), c = max(0, x_max), D = c - a,
// x_min and x_max over the unmasked entries.
//
// Softmax's three passes with one multiply more an element: the max pass also takes the minimum
// (primitives::reduce_range, which softmax's max pass takes anyway); the exponential pass stores
// u·e and sums e (primitives::map_store_sum), where e is softmax's exp value and u = (x - a)·s
// (normalised) or x·s (plain); the last pass multiplies by 1/(Σe·D·s) (plain: 1/(Σe·s)). The
// scale s is a power of two that brings the row's largest magnitude to [0.5, 1), so that u·e
// neither overflows (D reaches 2·FLT_MAX, and e is up to 2 with exp_minus_shift) nor loses
// precision to subnormal products on rows of tiny entries; x·s - a·s is one fma, exact scaling
// and one rounding. D·s is rounded the same way as u, so the maximum's weight is exactly 1. The
// plain form only guards against overflow (s = 1/4 for entries beyond FLT_MAX/4, else 1).
//
// Edges: masked entries (-inf) give +0 (u is clamped, whose product with e = 0 is then 0 and not
// NaN); D = 0 (every unmasked entry 0) gives a zero row; n = 1 gives [x] (plain) or [x > 0];
// NaN, +inf and all-masked rows give NaN rows (zero_masked_rows is the API layer's).
//
// Backward (from x, y and dy), with p = softmax(x), A = <dy, p>, B = <dy, y>:
//   plain:       dx_k = p_k·(dy_k·(1 + x_k) - B)
//   normalised:  dx_k = p_k·(dy_k·(1/D + w_k) - B) - [k = first argmin, x_min < 0]·(A - B)/D
//                                                   - [k = first argmax, x_max > 0]·B/D
// (the gradient flows through min and max). p is recomputed from x; masked entries get 0.

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "../primitives/special.hpp"
#include "row_driver.hpp"

namespace smax {
namespace kernels {

template <class A>
struct sa_softmax_table {
  // y = sa_softmax(x) (normalised or plain) for a rows × cols block (x == y allowed).
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, bool normalized) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, bool normalized) noexcept;
  // dx from x, the forward output y and dy; any of them may alias dx.
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, bool normalized) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, bool normalized) noexcept;
};

namespace detail {

// v with its masked lanes (-inf) set to +inf, for a minimum over the unmasked entries. On the
// bits under -ffinite-math-only, where the compiler may fold a comparison with -inf.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> sa_unmask_for_min(xsimd::batch<T, A> const& v) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = std::numeric_limits<T>::infinity();
#if SMAX_FINITE_MATH_ONLY
  using I = smax::detail::integer_of_t<T>;
  using ibatch = xsimd::batch<I, A>;
  const auto masked =
      smax::detail::bitcast<I>(v) ==
      ibatch(static_cast<I>(primitives::sign_bit<T> | primitives::exponent_bits<T>));
  return smax::detail::bitcast<T>(xsimd::select(
      masked, ibatch(static_cast<I>(primitives::exponent_bits<T>)), smax::detail::bitcast<I>(v)));
#else
  return xsimd::select(v == batch(-inf), batch(inf), v);
#endif
}

// The smallest unmasked entry (+inf when there is none): the second look a row takes only when
// its minimum is -inf (a mask), which reduce_range does not tell from a minimum.
template <class A, class T>
inline T sa_unmasked_min(const T* x, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T inf = std::numeric_limits<T>::infinity();
  batch l0(inf), l1(inf);
  std::size_t i = 0;
  for (; i + 2 * width <= n; i += 2 * width) {
    l0 = xsimd::min(l0, sa_unmask_for_min<A>(batch::load_unaligned(x + i)));
    l1 = xsimd::min(l1, sa_unmask_for_min<A>(batch::load_unaligned(x + i + width)));
  }
  for (; i + width <= n; i += width)
    l0 = xsimd::min(l0, sa_unmask_for_min<A>(batch::load_unaligned(x + i)));
  if (i < n)
    l1 = xsimd::min(l1, sa_unmask_for_min<A>(primitives::load_partial<A>(x + i, n - i, inf)));
  return smax::detail::horizontal_min(xsimd::min(l0, l1));
}

// 2^k for the k that brings m (finite, >= 0) to [0.5, 1), within the normal range of T: m's
// exponent field read off its bits (no library call on the short rows' path).
template <class T>
inline T sa_scale_for(T m) noexcept {
  constexpr int mantissa = sizeof(T) == 4 ? 23 : 52;
  constexpr int bias = sizeof(T) == 4 ? 127 : 1023;
  const int e =
      static_cast<int>(primitives::bits_of(m) >> mantissa) - bias;  // -bias: 0 or subnormal
  int k = -e - 1;
  if (k < 1 - bias) k = 1 - bias;  // m >= 2^(bias - 1): s = the smallest normal power of two
  const primitives::bits_of_t<T> b = static_cast<primitives::bits_of_t<T>>(k + bias) << mantissa;
  T s;
  std::memcpy(&s, &b, sizeof s);
  return s;
}

// What one ordinary row (max finite, min the finite unmasked minimum) needs: u = max(x·s + offset,
// floor) and y = u·e·num/(Σe·den).
template <class T>
struct sa_weights {
  T scale;     // s
  T offset;    // -a·s (normalised), 0 (plain)
  T floor;     // 0 (normalised: only masked lanes fall below), lowest (plain: only masked lanes)
  double num;  // 1 (normalised), 1/s (plain)
  double den;  // fl(c·s - a·s) = D·s in [0.5, 2) (normalised), 1 (plain)
  bool zero;   // normalised with D = 0: y = 0
};

template <class A, class T>
inline sa_weights<T> sa_weights_of(T max, T min, bool normalized) noexcept {
  sa_weights<T> w;
  if (!normalized) {
    // No scale to [0.5, 1) here: next to a huge entry it would make small ones subnormal. Only
    // u·e (e < 2) must not overflow; x·e below FLT_MIN gives an output below it anyway (S >= 1).
    const T m = max > -min ? max : -min;
    w.scale = m > std::numeric_limits<T>::max() / 4 ? T(0.25) : T(1);
    w.offset = T(0);
    w.floor = std::numeric_limits<T>::lowest();
    w.num = 1.0 / static_cast<double>(w.scale);
    w.den = 1.0;
    w.zero = false;
    return w;
  }
  const T c = max > T(0) ? max : T(0), a = min < T(0) ? min : T(0);
  w.zero = c == T(0) && a == T(0);
  w.scale = sa_scale_for(c > -a ? c : -a);
  w.offset = -a * w.scale;
  w.floor = T(0);
  w.num = 1.0;
  // Rounded as u is (the same fma), so that u = den at the maximum: its weight is exactly 1.
  using batch = xsimd::batch<T, A>;
  w.den =
      static_cast<double>(smax::detail::mul_add(batch(c), batch(w.scale), batch(w.offset)).get(0));
  return w;
}

// u·e for a vector v of x and its exp values e: masked lanes give +0 (u clamped to floor, e = 0,
// and the fma's + 0 turns the plain form's lowest·0 = -0 into +0).
template <class A, class T>
struct sa_product {
  using batch = xsimd::batch<T, A>;
  batch scale, offset, floor;

  explicit sa_product(sa_weights<T> const& w) noexcept
      : scale(w.scale), offset(w.offset), floor(w.floor) {}

  SMAX_ALWAYS_INLINE batch operator()(batch const& v, batch const& e) const noexcept {
    const batch u = xsimd::max(smax::detail::mul_add(v, scale, offset), floor);
    return smax::detail::mul_add(u, e, batch(T(0)));
  }
};

template <class A, class T>
inline void sa_fill(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// n = 1: [x] (plain), [1] for x > 0 and [0] otherwise (normalised); x finite.
template <class T>
SMAX_ALWAYS_INLINE T sa_single(T x, bool normalized) noexcept {
  return normalized ? (x > T(0) ? T(1) : T(0)) : x;
}

// Rows longer than four registers: reduce_range (max and min), the exp pass storing u·e and
// summing e, the scale pass. NaN is found through the sum, as softmax's three_pass_row does.
template <class A, class T>
inline void sa_softmax_row(const T* x, T* y, std::size_t n, bool normalized,
                           next_rows next) noexcept {
  const T nan = __builtin_nan(""), neg_inf = -std::numeric_limits<T>::infinity();
  const auto r = primitives::reduce_range<A, true>(x, n);
  if (primitives::is_nan(r.max) || primitives::is_pos_inf(r.max) ||
      primitives::is_neg_inf(r.max))  // NaN or +inf, or all masked (or a NaN max missed)
    return sa_fill<A>(y, n, nan);
  const T min = primitives::is_neg_inf(r.min) ? sa_unmasked_min<A>(x, n) : r.min;
  const sa_weights<T> w = sa_weights_of<A>(r.max, min, normalized);
  if (w.zero) {  // D = 0; the exp pass, which finds NaN, is skipped, so look for one
    if (has_nan<A>(x, n)) return sa_fill<A>(y, n, nan);
    return sa_fill<A>(y, n, T(0));
  }
  const sa_product<A, T> product(w);
  const double s =
      primitives::with_shifted_exp<A, T, false>(r.max, r.min, T(1), [&](auto const& e) {
        return primitives::map_store_sum<A, true>(x, y, n, neg_inf, e, product, next.x,
                                                  next.y ? y + next.y : nullptr);
      });
  if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, n)) return sa_fill<A>(y, n, nan);
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(w.num, s * w.den));
}

// A row of at most four registers of A, in registers: max (and NaN) and the unmasked minimum,
// the exp values and their sum, u·e, and one product by the factor, with one load and one store
// of each element. The lanes past n hold -inf (masked). Special rows as sa_softmax_row.
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void sa_softmax_short_row(const T* x, T* y, std::size_t n,
                                              bool normalized) noexcept {
  using batch = xsimd::batch<T, A>;
  primitives::register_row<A, T, Count> row(x, n, -std::numeric_limits<T>::infinity());
  const auto lanes = row.lane_max();
  const T max = smax::detail::horizontal_max(lanes.max);
  if (lanes.has_nan || !primitives::is_finite(max)) {  // NaN, +inf, or every entry masked
    for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<T>(__builtin_nan(""));
    return;
  }
  if (n == 1) {
    y[0] = sa_single(x[0], normalized);
    return;
  }
  batch low = sa_unmask_for_min<A>(row.v[0]);
  primitives::unroll<Count - 1>([&](auto j) SMAX_INLINE_LAMBDA {
    low = xsimd::min(low, sa_unmask_for_min<A>(row.v[j + 1]));
  });
  const T min = smax::detail::horizontal_min(low);
  const sa_weights<T> w = sa_weights_of<A>(max, min, normalized);
  if (w.zero) {
    for (std::size_t i = 0; i < n; ++i) y[i] = T(0);
    return;
  }
  const sa_product<A, T> product(w);
  primitives::with_short_row_exp<A, T, false, Count>(max, T(1), [&](auto const& ex) {
    batch e[Count];
    primitives::unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { e[j] = ex(row.v[j]); });
    const double sum = smax::detail::horizontal_sum(primitives::tree_sum(e));
    const batch factor(static_cast<T>(w.num / (sum * w.den)));
    primitives::unroll<Count>(
        [&](auto j) SMAX_INLINE_LAMBDA { row.v[j] = product(row.v[j], e[j]) * factor; });
  });
  row.store(y);
}

template <class A, class T>
SMAX_ALWAYS_INLINE void sa_softmax_short_row(const T* x, T* y, std::size_t n,
                                             bool normalized) noexcept {
  primitives::with_register_count<A, T>(n, [&](auto count) {
    sa_softmax_short_row<A, T, decltype(count)::value>(x, y, n, normalized);
  });
}

// The policy for the row driver (row_driver.hpp): the register kernel for short rows, the three
// passes for longer ones. No flush to zero (unlike softmax): the row's extremes a and c enter the
// weights, and a subnormal extreme, negated or scaled on the way, was flushed to 0 in calls of
// 1024 elements and more (fuzz finding: float [-inf, -1.4e-45 ×2478, -0, ...] gave a zero row,
// D = 0, where the -0 entry's output is 3.3e-4).
template <class A, class T>
struct sa_softmax_rows {
  static constexpr bool flush_subnormals = false;
  static constexpr bool register_kernels = true;
  bool normalized;

  std::size_t flush_elements(std::size_t elements) const noexcept { return elements; }
  bool in_registers() const noexcept { return true; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    sa_softmax_short_row<B>(x, y, n, normalized);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
      sa_softmax_short_row<B>(x + k * ldx, y + k * ldy, n, normalized);
    });
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    f([this](const T* x, T* y, std::size_t n, next_rows next) {
      sa_softmax_row<A>(x, y, n, normalized, next);
    });
  }
};

// One row's backward pass (see the header comment). Scaled as the forward pass: 1/D = s/(D·s)
// and w = u/(D·s), so that neither overflows where dx does not.
template <class A, class T>
inline void sa_softmax_backward_row(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                                    bool normalized) noexcept {
  using batch = xsimd::batch<T, A>;
  const T nan = __builtin_nan("");
  const auto r = primitives::reduce_max<A>(x, n);
  if (r.has_nan || !primitives::is_finite(r.max)) return sa_fill<A>(dx, n, nan);
  const T min = sa_unmasked_min<A>(x, n);
  const sa_weights<T> w = sa_weights_of<A>(r.max, min, normalized);
  const primitives::exp_minus_max<A, T, false> e(r.max, T(1));
  const double sum = primitives::map_sum<A, false>(x, static_cast<T*>(nullptr), n,
                                                   -std::numeric_limits<T>::infinity(), e);
  const double dot_y =  // B = <dy, y>
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  // A = <dy, p>, only where the minimum takes a gradient. Masked (and padding) lanes: e = 0.
  const bool through_min = normalized && !w.zero && min < T(0);
  const bool through_max = normalized && !w.zero && r.max > T(0);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  // Masked lanes and the tail's padding (-inf): e = 0.
  const double dot_p = through_min ? primitives::zip_sum<A>(
                                         x, dy, n,
                                         [&](batch const& v, batch const& d) {
                                           return xsimd::select(v == batch(neg_inf), batch(T(0)),
                                                                e(v) * d);
                                         },
                                         neg_inf) /
                                         sum
                                   : 0.0;
  const batch inv_sum(static_cast<T>(1.0 / sum)), b(static_cast<T>(dot_y));
  // The first argmin and argmax with their p and dy, before dx (which may alias x and dy) is
  // written: their dx is recomputed below in double.
  std::size_t kmin = 0, kmax = 0;
  double p_min = 0, dy_min = 0, p_max = 0, dy_max = 0;
  const auto p_at = [&](std::size_t k) {
    return static_cast<double>((e(batch(x[k])) * inv_sum).get(0));
  };
  if (through_min) {
    while (!(x[kmin] == min)) ++kmin;
    p_min = p_at(kmin), dy_min = dy[kmin];
  }
  if (through_max) {
    while (!(x[kmax] == r.max)) ++kmax;
    p_max = p_at(kmax), dy_max = dy[kmax];
  }
  const sa_product<A, T> product(w);
  // Normalised: p·dy is formed first: dy/D alone may overflow where p·dy/D does not (p small, or
  // D near the bottom of the normal range); a subnormal p·dy carries its rounding (half the
  // smallest subnormal) into dx times (1 + w)/D, which the bound states. Plain: dy·(1 + x) is
  // within T's range (the stated range), and is formed first, so that no subnormal p·dy is
  // multiplied by 1 + x. The tail pads x with -inf, a masked lane: exp(0 - max) would overflow
  // for a very negative max.
  if (!normalized || w.zero) {
    // plain: p·(dy·(1 + x)) - p·B; normalised with D = 0: y = 0 near x, whatever dx is: the
    // ε-regularised limit, dy_k·p_k/D, is taken as 0 (the factor's convention).
    for (std::size_t i = 0; i < n; i += batch::size) {
      const std::size_t k = n - i < batch::size ? n - i : batch::size;
      const batch xv = primitives::load_partial<A>(x + i, k, neg_inf);
      const batch dyv = primitives::load_partial<A>(dy + i, k, T(0));
      const batch p = xsimd::select(xv == batch(neg_inf), batch(T(0)), e(xv) * inv_sum);
      const batch g = w.zero ? batch(T(0))
                             : smax::detail::mul_add(p, smax::detail::mul_add(dyv, xv, dyv), -(p * b));
      primitives::store_partial<A>(dx + i, k, xsimd::select(p == batch(T(0)), batch(T(0)), g));
    }
    return;
  }
  // normalised: (p·dy/(D·s))·(s + u) - p·B
  const batch s(w.scale), inv_den(static_cast<T>(1.0 / w.den));
  for (std::size_t i = 0; i < n; i += batch::size) {
    const std::size_t k = n - i < batch::size ? n - i : batch::size;
    const batch xv = primitives::load_partial<A>(x + i, k, neg_inf);
    const batch dyv = primitives::load_partial<A>(dy + i, k, T(0));
    const batch p = xsimd::select(xv == batch(neg_inf), batch(T(0)), e(xv) * inv_sum);
    const batch u = product(xv, batch(T(1)));
    const batch g = ((p * dyv) * inv_den) * (s + u) - p * b;
    primitives::store_partial<A>(dx + i, k, xsimd::select(p == batch(T(0)), batch(T(0)), g));
  }
  // At the first argmin (w = 0) and argmax (w = 1) the 1/D terms are summed before the division:
  // p·dy/D and (A - B)/D may each overflow T (a range D near or below the smallest normal
  // number) where their difference does not. 1/D = s/(D·s) is applied as /(D·s) then ·s, so that
  // nothing overflows where the result does not (1/D alone reaches 2^1074 in double).
  const auto over_d = [&](double v) { return v / w.den * static_cast<double>(w.scale); };
  if (through_min)
    dx[kmin] = static_cast<T>(over_d(p_min * dy_min - (dot_p - dot_y)) - p_min * dot_y);
  if (through_max)
    dx[kmax] = static_cast<T>(over_d(p_max * dy_max - dot_y) + p_max * (dy_max - dot_y));
}

}  // namespace detail

template <class A>
void sa_softmax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                  std::size_t rows, std::size_t cols, bool normalized) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::sa_softmax_rows<A, float>{normalized});
}
template <class A>
void sa_softmax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                  std::size_t rows, std::size_t cols, bool normalized) noexcept {
  drive_rows<A>(x, ldx, y, ldy, rows, cols, detail::sa_softmax_rows<A, double>{normalized});
}
template <class A>
void sa_softmax_table<A>::backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                   const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                                   std::size_t rows, std::size_t cols, bool normalized) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::sa_softmax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                       normalized);
}
template <class A>
void sa_softmax_table<A>::backward(const double* x, std::size_t ldx, const double* y,
                                   std::size_t ldy, const double* dy, std::size_t lddy, double* dx,
                                   std::size_t lddx, std::size_t rows, std::size_t cols,
                                   bool normalized) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    detail::sa_softmax_backward_row<A>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                       normalized);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(sa_softmax_table)
