#pragma once
// MultiMax (docs/multimax.md): y = softmax(σ(x)) with the second-order modulation
//   σ(x) = x + t0·relu(r0 - x) + t1·relu(x - r1) + t2·relu(r2 - x)² + t3·relu(x - r3)²,
// and its backward pass with the gradients of the eight parameters.
//
// The forward pass is the three-pass softmax (softmax_three_pass.hpp) with σ applied inside its
// lambdas, never stored (recomputing costs fewer cycles than a store and a reload once the row
// leaves the cache):
// * σ nondecreasing (t2 <= 0 <= t3, 1 - t0 >= 0, 1 + t1 >= 0, 1 - t0 + t1 >= 0: the sufficient
//   condition for monotonicity, and the trained parameters' usual region): the max pass is
//   softmax's (max and min of x), max σ = σ(max x), and the exp pass evaluates a 10-operation form
//   of σ shifted by a constant (multimax_modulation_nondecreasing).
// * otherwise the max pass takes the maximum and minimum of σ(x) itself (multimax_range).
// Either way exp(σ(x) - shift) carries the rounding error of the difference exactly, as in softmax,
// and the last pass scales by 1/sum. Rows of at most four registers compute σ once, in registers,
// four rows at a time. Masked entries (x = -inf) are selected to -inf after σ (σ(-inf) is NaN or
// ±inf depending on the parameters; docs/edge_cases.md), so they take part in no reduction and come
// out as exactly 0. With every t = 0, σ(x) = x exactly (each term is an FMA with a zero product)
// and the result is the three-pass softmax's bit for bit.
//
// Members of multimax_table are defined out of class and not inline, and every helper is
// templated on A (see table.hpp): this is what makes runtime dispatch ODR-safe.

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/register_row.hpp"
#include "row_driver.hpp"

namespace smax {
namespace kernels {

// The eight parameters in the kernel's element type: t[k] scales term k, r[k] is its kink.
template <class T>
struct multimax_parameters {
  T t[4];
  T r[4];
};

namespace detail {

// σ(x) for a batch, masked lanes (x = -inf) kept at -inf. NaN stays NaN (x is the first
// addend of the FMA chain). Each term is added by one FMA into the running sum, so with zero
// parameters every step returns its addend exactly and σ(x) = x.
// Rounding: |computed - σ(x)| <= 8u·M(x) (u the unit roundoff, M(x) = |x| + Σ|term_k|): four
// roundings of the running sum (|partial| <= M), one for each relu difference, one for each
// squaring and product t·relu, two for an unfused mul_add (SSE2). M(x) <= W(x), so this is within
// the 16u·W(x) of multimax_modulation_nondecreasing that the public bound states.
template <class A, class T, bool Masked = true>
struct multimax_modulation {
  using batch = xsimd::batch<T, A>;
  batch t0, t1, t2, t3, r0, r1, r2, r3;

  explicit multimax_modulation(multimax_parameters<T> const& p) noexcept
      : t0(p.t[0]),
        t1(p.t[1]),
        t2(p.t[2]),
        t3(p.t[3]),
        r0(p.r[0]),
        r1(p.r[1]),
        r2(p.r[2]),
        r3(p.r[3]) {}

  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch zero(T(0));
    const batch below0 = xsimd::max(r0 - x, zero);
    const batch above1 = xsimd::max(x - r1, zero);
    const batch below2 = xsimd::max(r2 - x, zero);
    const batch above3 = xsimd::max(x - r3, zero);
    batch s = smax::detail::mul_add(t0, below0, x);
    s = smax::detail::mul_add(t1, above1, s);
    s = smax::detail::mul_add(t2 * below2, below2, s);
    s = smax::detail::mul_add(t3 * above3, above3, s);
    if constexpr (!Masked)
      return s;  // for rows known to hold no -inf
    else
      return xsimd::select(x == batch(-T(__builtin_huge_val())), x, s);
  }
};

template <class A, class T>
inline bool valid_parameters(multimax_parameters<T> const& p) noexcept {
  for (int k = 0; k < 4; ++k)
    if (!(primitives::is_finite(p.t[k]) && primitives::is_finite(p.r[k]))) return false;
  return true;
}

// A row's bad-input outcome from the maximum of σ: NaN (a NaN or +inf in the maximum) and fully
// masked (-inf) rows are NaN rows (MultiMax has no zero_masked_rows mode). A NaN the maximum
// missed shows up in the sum of exponentials instead.
template <class A, class T>
inline bool multimax_special_row(T max, bool has_nan, T* y, std::size_t n) noexcept {
  if (has_nan || !primitives::is_finite(max)) {
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return true;
  }
  return false;
}

// Rows of at most four registers: σ is computed once, in registers, and the maximum is that of
// the computed values (as softmax's short_row). σ is multimax_modulation (masked), built here
// from p: passed built, its eight registers went through the stack on every call.
template <class A, class T, std::size_t Count>
SMAX_FLATTEN inline void multimax_short_row(const T* x, T* y, std::size_t n,
                                            multimax_parameters<T> const& p) noexcept {
  const multimax_modulation<A, T> sigma(p);
  primitives::register_row<A, T, Count> row(x, n, -__builtin_huge_val());
  row.transform(sigma);
  const auto lanes = row.lane_max();
  const T max = smax::detail::horizontal_max(lanes.max);
  if (multimax_special_row<A>(max, lanes.has_nan, y, n)) return;
  if (n == 1) {  // exactly [1] (E2), as softmax's short_row
    y[0] = T(1);
    return;
  }
  // As softmax's short_row (primitives::with_short_row_exp, short_normalizer).
  primitives::with_short_row_exp<A, T, false, Count>(max, T(1), [&](auto const& e) {
    using E = std::decay_t<decltype(e)>;
    row.transform(primitives::short_normalizer<A, T, E::exact_max>(
        smax::detail::horizontal_sum(row.transform_sum(e))));
  });
  row.store(y);
}

template <class A, class T>
inline void multimax_short_row(const T* x, T* y, std::size_t n,
                               multimax_parameters<T> const& p) noexcept {
  primitives::with_register_count<A, T>(
      n, [&](auto count) { multimax_short_row<A, T, decltype(count)::value>(x, y, n, p); });
}

// K short rows at once, the same arithmetic as multimax_short_row interleaved so that the latency
// chains of independent rows (horizontal max, exp, horizontal sum, reciprocal) overlap (as
// softmax's short_rows). A group holding a special row (as softmax's) goes row by row.
template <class A, class T, std::size_t K, std::size_t Count>
SMAX_FLATTEN inline void multimax_short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                             std::size_t n,
                                             multimax_parameters<T> const& p) noexcept {
  const multimax_modulation<A, T> sigma(p);
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  primitives::register_row<A, T, Count> rows[K];
  T max[K];
  bool special = n == 1;  // the special rows of softmax's short_rows
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    rows[k].load(x + k * ldx, n, -inf);
    rows[k].transform(sigma);
    const auto lanes = rows[k].lane_max();
    max[k] = smax::detail::horizontal_max(lanes.max);
    special = special || lanes.has_nan || !primitives::is_finite(max[k]) ||
              (primitives::short_row_shift<A, false, Count> &&
               !primitives::uses_power_of_two_shift<A, T, false>(max[k], T(1)));
  });
  if (special) {
    primitives::unroll<K>(
        [&](auto k) { multimax_short_row<A, T, Count>(x + k * ldx, y + k * ldy, n, p); });
    return;
  }
  using E = std::conditional_t<primitives::short_row_shift<A, false, Count>,
                               primitives::exp_minus_shift<A, T, false>,
                               primitives::exp_minus_max<A, T, false>>;
  batch s[K];
  primitives::unroll<K>([&](auto k)
                            SMAX_INLINE_LAMBDA { s[k] = rows[k].transform_sum(E(max[k], T(1))); });
  primitives::unroll<K>([&](auto k) SMAX_INLINE_LAMBDA {
    rows[k].transform(
        primitives::short_normalizer<A, T, E::exact_max>(smax::detail::horizontal_sum(s[k])));
    rows[k].store(y + k * ldy);
  });
}

template <class A, class T, std::size_t K>
inline void multimax_short_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n,
                                multimax_parameters<T> const& p) noexcept {
  primitives::with_register_count<A, T>(n, [&](auto count) {
    multimax_short_rows<A, T, K, decltype(count)::value>(x, ldx, y, ldy, n, p);
  });
}

// Largest and smallest σ(x) of a row (primitives::reduce_range with σ applied): masked entries
// give -inf to both (as softmax's reduce_range sees them), NaN is not flagged.
template <class A, class T>
inline primitives::range_result<T> multimax_range(const T* x, std::size_t n,
                                                  multimax_modulation<A, T> const& sigma) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T inf = __builtin_huge_val();
  batch m0(-inf), m1(-inf), m2(-inf), m3(-inf);
  batch l0(inf), l1(inf);
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch v0 = sigma(batch::load_unaligned(x + i));
    const batch v1 = sigma(batch::load_unaligned(x + i + width));
    const batch v2 = sigma(batch::load_unaligned(x + i + 2 * width));
    const batch v3 = sigma(batch::load_unaligned(x + i + 3 * width));
    m0 = xsimd::max(m0, v0);
    m1 = xsimd::max(m1, v1);
    m2 = xsimd::max(m2, v2);
    m3 = xsimd::max(m3, v3);
    l0 = xsimd::min(l0, xsimd::min(v0, v1));
    l1 = xsimd::min(l1, xsimd::min(v2, v3));
  }
  for (; i + width <= n; i += width) {
    const batch v = sigma(batch::load_unaligned(x + i));
    m0 = xsimd::max(m0, v);
    l0 = xsimd::min(l0, v);
  }
  if (i < n) {
    // Padded with a copy of an element of the row, which changes neither extreme.
    const batch v = sigma(primitives::load_partial<A>(x + i, n - i, x[i]));
    m1 = xsimd::max(m1, v);
    l1 = xsimd::min(l1, v);
  }
  const batch m = xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3));
  return {smax::detail::horizontal_max(m), smax::detail::horizontal_min(xsimd::min(l0, l1))};
}

// Whether σ is nondecreasing everywhere (the sufficient condition of docs/multimax.md, with
// equality allowed): t2 <= 0, t3 >= 0 and 1 - t0·a + t1·b >= 0 for a, b in {0, 1}. Then the largest
// σ of a row is σ(max x), and the max pass needs only max x.
template <class A, class T>
inline bool multimax_nondecreasing(multimax_parameters<T> const& p) noexcept {
  const double t0 = p.t[0], t1 = p.t[1];
  return p.t[2] <= T(0) && p.t[3] >= T(0) && 1 - t0 >= 0 && 1 + t1 >= 0 && 1 - t0 + t1 >= 0;
}

// σ shifted by the constant t0·r0 - t1·r1 (softmax does not see a shift) for parameters with
// t2 <= 0 <= t3, in ten operations where multimax_modulation takes fourteen:
//   σ(x) - t0·r0 + t1·r1 = x - t0·min(x, r0) + t1·max(x, r1) - (k2·r2 - k2·x)_+² + (k3·x - k3·r3)_+²
// with k2 = sqrt(-t2), k3 = sqrt(t3). Masked lanes as in multimax_modulation. With every t = 0
// each step returns x exactly. Rounding (u the unit roundoff): |error| <= 16u·W(x), W(x) =
// (1 + |t0| + |t1|)·(|x| + R) + (|t2| + |t3|)·(|x| + R)², R = max|r_k| (four roundings of partial
// sums bounded by W; k·r rounded moves each square's base by u·k(|x| + 2|r|)).
template <class A, class T, bool Masked>
struct multimax_modulation_nondecreasing {
  using batch = xsimd::batch<T, A>;
  batch t0, t1, r0, r1, k2, k2_r2, k3, k3_r3;

  explicit multimax_modulation_nondecreasing(multimax_parameters<T> const& p) noexcept
      : t0(p.t[0]),
        t1(p.t[1]),
        r0(p.r[0]),
        r1(p.r[1]),
        k2(root(-p.t[2])),
        k2_r2(root(-p.t[2]) * p.r[2]),
        k3(root(p.t[3])),
        k3_r3(root(p.t[3]) * p.r[3]) {}

  // sqrt rounded to T (through double: innocuous double rounding for sqrt). A builtin, not
  // std::sqrt: no non-A-templated inline function is called from the kernels (table.hpp).
  static T root(T v) noexcept { return static_cast<T>(__builtin_sqrt(static_cast<double>(v))); }

  SMAX_ALWAYS_INLINE batch operator()(batch const& x) const noexcept {
    const batch zero(T(0));
    batch s = smax::detail::neg_mul_add(t0, xsimd::min(x, r0), x);
    s = smax::detail::mul_add(t1, xsimd::max(x, r1), s);
    const batch below2 = xsimd::max(smax::detail::neg_mul_add(k2, x, k2_r2), zero);
    s = smax::detail::neg_mul_add(below2, below2, s);
    const batch above3 = xsimd::max(smax::detail::mul_sub(k3, x, k3_r3), zero);
    s = smax::detail::mul_add(above3, above3, s);
    if constexpr (!Masked)
      return s;
    else
      return xsimd::select(x == batch(-T(__builtin_huge_val())), x, s);
  }
};

// Twice the rounding bound 16u·W(x) of both modulations (multimax_modulation's 8u·M(x) is
// below it): 2^-19·W(x) (float), 2^-48·W(x) (double); 0 when every t is 0 (σ(x) = x exactly).
// W grows with |x|, so over an interval it is largest at an end.
template <class A, class T>
inline double multimax_rounding_margin(double x, multimax_parameters<T> const& p) noexcept {
  if (p.t[0] == T(0) && p.t[1] == T(0) && p.t[2] == T(0) && p.t[3] == T(0)) return 0.0;
  // Written out: the loop form of this max crashes aarch64 GCC 12's vectorizer (an internal
  // compiler error in vect_transform_reduction).
  const double r = __builtin_fmax(
      __builtin_fmax(__builtin_fabs(double(p.r[0])), __builtin_fabs(double(p.r[1]))),
      __builtin_fmax(__builtin_fabs(double(p.r[2])), __builtin_fabs(double(p.r[3]))));
  const double w = __builtin_fabs(x) + r;
  const double bound = (1 + __builtin_fabs(double(p.t[0])) + __builtin_fabs(double(p.t[1]))) * w +
                       (__builtin_fabs(double(p.t[2])) + __builtin_fabs(double(p.t[3]))) * w * w;
  return (sizeof(T) == 4 ? 0x1p-19 : 0x1p-48) * bound;
}

// Smallest x other than -inf (+inf if none): for rows whose minimum is -inf.
template <class A, class T>
inline T multimax_finite_min(const T* x, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const T inf = __builtin_huge_val();
  const batch pos_inf(inf), neg_inf(-inf);
  batch l(inf);
  std::size_t i = 0;
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    l = xsimd::min(l, xsimd::select(v == neg_inf, pos_inf, v));
  }
  if (i < n) {
    const batch v = primitives::load_partial<A>(x + i, n - i, inf);
    l = xsimd::min(l, xsimd::select(v == neg_inf, pos_inf, v));
  }
  return smax::detail::horizontal_min(l);
}

// Rows whose σ may decrease somewhere: the max pass computes σ (see multimax_range).
template <class A, class T>
inline void multimax_row(const T* x, T* y, std::size_t n, multimax_modulation<A, T> const& sigma,
                         std::size_t next_row) noexcept {
  using batch = xsimd::batch<T, A>;
  const T neg_inf = -__builtin_huge_val();
  const auto r = multimax_range<A>(x, n, sigma);
  // A NaN lost by the maximum makes the sum NaN; with max = -inf the row is NaN anyway.
  if (multimax_special_row<A>(r.max, primitives::is_nan(r.max), y, n)) return;
  const double s =
      primitives::with_shifted_exp<A, T, false>(r.max, r.min, T(1), [&](auto const& e) {
        return primitives::map_sum<A, true>(
            x, y, n, neg_inf, [&](batch const& v) { return e(sigma(v)); }, next_row);
      });
  if (primitives::is_nan(s) || special_unseen_by_sum<A>(x, n))
    return fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(1.0, s));
}

// The largest rounding margin the nondecreasing form takes (see multimax_row_nondecreasing): it
// costs the row's outputs at most a factor e^-1 of exponent range.
constexpr double multimax_max_margin = 1.0;

// Rows whose σ is nondecreasing: the max pass is softmax's (max and min of x, two operations per
// element), and σ(max x) is the maximum. The computed σ is not exactly monotone (it is
// rounded), so the shift is σ(max x) raised by the rounding margin: every σ(x_i) - shift is then
// <= 0, which keeps exp's argument in its domain and each Fast2Sum form of exp_minus_max exact
// (its preconditions hold with shift as the maximum and σ(min x) lowered by the margin as the
// minimum). With all t = 0 the margin is 0 and this is softmax's arithmetic.
template <class A, class T>
inline void multimax_row_nondecreasing(
    const T* x, T* y, std::size_t n, multimax_parameters<T> const& p,
    multimax_modulation_nondecreasing<A, T, false> const& unmasked,
    multimax_modulation_nondecreasing<A, T, true> const& sigma, std::size_t next_row) noexcept {
  using batch = xsimd::batch<T, A>;
  const T inf = __builtin_huge_val();
  const T nan = __builtin_nan("");
  const auto range = primitives::reduce_range<A, true>(x, n);
  // NaN or +inf in the maximum, or a fully masked row. A NaN elsewhere shows in the sum.
  if (!primitives::is_finite(range.max)) return fill_row<A>(y, n, nan);
  const bool masked = primitives::is_neg_inf(range.min);
  const T min_finite = masked ? multimax_finite_min<A>(x, n) : range.min;
  const double margin = __builtin_fmax(multimax_rounding_margin<A>(range.max, p),
                                       multimax_rounding_margin<A>(min_finite, p));
  // The margin lowers every exp(σ(x) - shift) by up to e^-margin. It grows with x² (2^-19·1.5x²
  // is 128 at |x| = 6680 for t3 = 1.5), and beyond a few units the row's largest values would
  // underflow with it (a sum of 0, a NaN row): such rows take the maximum of the computed σ
  // itself, whose exponentials need no margin.
  if (margin > multimax_max_margin)
    return multimax_row<A>(x, y, n, multimax_modulation<A, T>(p), next_row);
  const T top = smax::detail::horizontal_max(unmasked(batch(range.max)));
  const T bottom = smax::detail::horizontal_max(unmasked(batch(min_finite)));
  const T shift = static_cast<T>(static_cast<double>(top) + margin);
  const T low = static_cast<T>(static_cast<double>(bottom) - margin);
  if (!primitives::is_finite(shift)) return fill_row<A>(y, n, nan);  // σ overflowed (|x| ~ 1e19)
  double s;
  if (masked) {
    // Masked lanes: exp(-inf) through the underflow select, which a minimum of -inf asks for.
    s = primitives::with_shifted_exp<A, T, false>(shift, -inf, T(1), [&](auto const& f) {
      return primitives::map_sum<A, true>(
          x, y, n, -inf, [&](batch const& v) { return f(sigma(v)); }, next_row);
    });
  } else {
    s = primitives::with_shifted_exp<A, T, false>(shift, low, T(1), [&](auto const& f) {
      return primitives::map_sum<A, true>(
          x, y, n, range.max, [&](batch const& v) { return f(unmasked(v)); }, next_row);
    });
  }
  if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, n)) return fill_row<A>(y, n, nan);
  primitives::map<A>(y, y, n, primitives::normalizer<A, T>(1.0, s));
}

// MultiMax's policy for the row driver (row_driver.hpp). Short rows take the exact form
// whatever the parameters: the 10-operation form saves 4% on batches of them but its square
// roots make a single short row 30% slower. Longer rows take it when σ is nondecreasing.
template <class A, class T>
struct multimax_rows {
  static constexpr bool flush_subnormals = true;
  static constexpr bool register_kernels = true;
  multimax_parameters<T> const& p;

  bool in_registers() const noexcept { return true; }
  std::size_t flush_elements(std::size_t elements) const noexcept { return elements; }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    multimax_short_row<B>(x, y, n, p);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    multimax_short_rows<B, T, K>(x, ldx, y, ldy, n, p);
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    if (multimax_nondecreasing<A>(p)) {
      const multimax_modulation_nondecreasing<A, T, false> unmasked(p);
      const multimax_modulation_nondecreasing<A, T, true> masked(p);
      return f([&](const T* x, T* y, std::size_t n, next_rows next) {
        multimax_row_nondecreasing<A>(x, y, n, p, unmasked, masked, next.x);
      });
    }
    const multimax_modulation<A, T> sigma(p);
    f([&](const T* x, T* y, std::size_t n, next_rows next) {
      multimax_row<A>(x, y, n, sigma, next.x);
    });
  }
};

// Inlined into the table's entry points (a call level costs a short row a few ns).
template <class A, class T>
SMAX_ALWAYS_INLINE void multimax_forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                              std::size_t rows, std::size_t cols,
                                              multimax_parameters<T> const& p) noexcept {
  if (!valid_parameters<A>(p)) {
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  drive_rows<A>(x, ldx, y, ldy, rows, cols, multimax_rows<A, T>{p});
}

// The parameter-gradient sums (docs/multimax.md), in double, indexed as below:
//   0: Σ gz·relu(r0 - x)   1: Σ gz·[x < r0]   2: Σ gz·relu(x - r1)   3: Σ gz·[x > r1]
//   4: Σ gz·relu(r2 - x)   5: Σ gz·relu(r2 - x)²   6: Σ gz·relu(x - r3)   7: Σ gz·relu(x - r3)²
constexpr int multimax_sum_count = 8;

// dx = gz·σ'(x) with gz = y·(dy - <dy, y>), and (when Params) the eight sums added to sums[].
// A masked entry (x = -inf, y = 0) has gz = 0; its x is replaced by 0 so that σ' stays finite:
// dx = 0 and it adds nothing. In a NaN row (y NaN, including an all-masked row) everything is NaN.
// The sums are blocked: vector partial sums of at most 16 terms per lane, folded into double.
template <class A, bool Params, class T>
inline void multimax_backward_row(const T* x, const T* y, const T* dy, T* dx, std::size_t n,
                                  multimax_parameters<T> const& p, double* sums) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  const double dot =
      primitives::zip_sum<A>(y, dy, n, [](batch const& a, batch const& b) { return a * b; });
  const T neg_inf = -__builtin_huge_val();
  const batch d(static_cast<T>(dot)), zero(T(0)), one(T(1));
  const batch t0(p.t[0]), t1(p.t[1]), two_t2(2 * p.t[2]), two_t3(2 * p.t[3]);
  const batch r0(p.r[0]), r1(p.r[1]), r2(p.r[2]), r3(p.r[3]);
  batch acc[8];
  auto clear = [&] {
    for (auto& a : acc) a = zero;
  };
  auto fold = [&] {
    if (Params)
      for (int k = 0; k < multimax_sum_count; ++k) sums[k] += smax::detail::horizontal_sum(acc[k]);
  };
  // One vector: returns dx and adds this vector's terms to the accumulators.
  auto step = [&](batch const& xv, batch const& yv, batch const& dyv) {
    const batch xc = xsimd::select(xv == batch(neg_inf), zero, xv);
    const batch gz = yv * (dyv - d);
    const batch below0 = xsimd::max(r0 - xc, zero);
    const batch above1 = xsimd::max(xc - r1, zero);
    const batch below2 = xsimd::max(r2 - xc, zero);
    const batch above3 = xsimd::max(xc - r3, zero);
    const batch is_below0 = xsimd::select(xc < r0, one, zero);
    const batch is_above1 = xsimd::select(xc > r1, one, zero);
    // σ'(x) = 1 - t0·[x < r0] + t1·[x > r1] - 2t2·relu(r2 - x) + 2t3·relu(x - r3)
    batch slope = smax::detail::neg_mul_add(t0, is_below0, one);
    slope = smax::detail::mul_add(t1, is_above1, slope);
    slope = smax::detail::neg_mul_add(two_t2, below2, slope);
    slope = smax::detail::mul_add(two_t3, above3, slope);
    if (Params) {
      const batch g_below2 = gz * below2, g_above3 = gz * above3;
      acc[0] = smax::detail::mul_add(gz, below0, acc[0]);
      acc[1] = smax::detail::mul_add(gz, is_below0, acc[1]);
      acc[2] = smax::detail::mul_add(gz, above1, acc[2]);
      acc[3] = smax::detail::mul_add(gz, is_above1, acc[3]);
      acc[4] += g_below2;
      acc[5] = smax::detail::mul_add(g_below2, below2, acc[5]);
      acc[6] += g_above3;
      acc[7] = smax::detail::mul_add(g_above3, above3, acc[7]);
    }
    return gz * slope;
  };
  // 16 vectors per block: each lane adds at most 16 terms before the fold into double.
  constexpr std::size_t block = 16 * width;
  std::size_t i = 0;
  while (i + width <= n) {
    const std::size_t block_end = n - i > block ? i + block : n;
    clear();
    for (; i + width <= block_end; i += width)
      step(batch::load_unaligned(x + i), batch::load_unaligned(y + i),
           batch::load_unaligned(dy + i))
          .store_unaligned(dx + i);
    fold();
  }
  if (i < n) {
    // The padding lanes are masked (x = -inf): they add nothing.
    clear();
    const batch r = step(primitives::load_partial<A>(x + i, n - i, neg_inf),
                         primitives::load_partial<A>(y + i, n - i, T(0)),
                         primitives::load_partial<A>(dy + i, n - i, T(0)));
    primitives::store_partial<A>(dx + i, n - i, r);
    fold();
  }
}

template <class A, class T>
inline void multimax_backward_rows(const T* x, std::size_t ldx, const T* y, std::size_t ldy,
                                   const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                   std::size_t rows, std::size_t cols,
                                   multimax_parameters<T> const& p, double* param_grads) noexcept {
  const double nan = __builtin_nan("");
  if (!valid_parameters<A>(p)) {
    for (std::size_t r = 0; r < rows; ++r) fill_row<A>(dx + r * lddx, cols, static_cast<T>(nan));
    if (param_grads)
      for (int k = 0; k < 8; ++k) param_grads[k] = nan;
    return;
  }
  double s[multimax_sum_count] = {};
  for (std::size_t r = 0; r < rows; ++r) {
    if (param_grads)
      multimax_backward_row<A, true>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                     p, s);
    else
      multimax_backward_row<A, false>(x + r * ldx, y + r * ldy, dy + r * lddy, dx + r * lddx, cols,
                                      p, s);
  }
  if (!param_grads) return;
  const double t0 = p.t[0], t1 = p.t[1], t2 = p.t[2], t3 = p.t[3];
  param_grads[0] = s[0];            // dt0 = Σ gz·relu(r0 - x)
  param_grads[1] = s[2];            // dt1 = Σ gz·relu(x - r1)
  param_grads[2] = s[5];            // dt2 = Σ gz·relu(r2 - x)²
  param_grads[3] = s[7];            // dt3 = Σ gz·relu(x - r3)²
  param_grads[4] = t0 * s[1];       // dr0 = t0·Σ gz·[x < r0]
  param_grads[5] = -t1 * s[3];      // dr1 = -t1·Σ gz·[x > r1]
  param_grads[6] = 2 * t2 * s[4];   // dr2 = 2t2·Σ gz·relu(r2 - x)
  param_grads[7] = -2 * t3 * s[6];  // dr3 = -2t3·Σ gz·relu(x - r3)
}

}  // namespace detail

// The MultiMax kernels for instruction set A. params: t0..t3 then r0..r3. param_grads (may be
// null): dt0..dt3 then dr0..dr3, summed over the rows, overwritten.
template <class A>
struct multimax_table {
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, multimax_parameters<float> const& params) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols,
                      multimax_parameters<double> const& params) noexcept;
  static void backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, multimax_parameters<float> const& params,
                       double* param_grads) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols,
                       multimax_parameters<double> const& params, double* param_grads) noexcept;
};

template <class A>
void multimax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols,
                                multimax_parameters<float> const& params) noexcept {
  detail::multimax_forward_rows<A>(x, ldx, y, ldy, rows, cols, params);
}
template <class A>
void multimax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols,
                                multimax_parameters<double> const& params) noexcept {
  detail::multimax_forward_rows<A>(x, ldx, y, ldy, rows, cols, params);
}
template <class A>
void multimax_table<A>::backward(const float* x, std::size_t ldx, const float* y, std::size_t ldy,
                                 const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols,
                                 multimax_parameters<float> const& params,
                                 double* param_grads) noexcept {
  detail::multimax_backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, params,
                                    param_grads);
}
template <class A>
void multimax_table<A>::backward(const double* x, std::size_t ldx, const double* y, std::size_t ldy,
                                 const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols,
                                 multimax_parameters<double> const& params,
                                 double* param_grads) noexcept {
  detail::multimax_backward_rows<A>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, params,
                                    param_grads);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(multimax_table)
