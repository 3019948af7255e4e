#pragma once
// Fused online softmax + top-K (docs/softmax_topk.md) for one instruction set A: the K largest
// entries of x, their indices and their probabilities softmax(x/T)[index], from one read of x.
//
// Forward: softmax's online pass 1 (online_reduce_row: per 8 KiB block the block's maximum, then
// its exp-sum while the block is in L1) with a selection step hooked in between the two, on the
// block still in L1. The selection keeps the K best so far in the caller's values/indices arrays
// and their worst value as a threshold; whole registers are compared with it (x > threshold, one
// lane mask per register) and only the lanes that pass go to a scalar insertion: a sorted list
// for small K, a heap (worst at the root) for large K. The strict > is the tie rule: an entry
// equal to the current K-th does not displace it, so of equal entries the lower index wins.
// Masked entries (-inf) never pass. At the end only the K selected are exponentiated:
// exp((u - m)/T)/d in double with (u - m)/T carried as hi + lo, with d the pass's sum.
//
// Backward: dx = (1/T)·y ⊙ (g - s), g = dvalues scattered to indices, s = <g, y>. m and d are
// recomputed by the same online pass (nothing of the forward's output is trusted), s from the K
// entries' probabilities summed in long double, then one pass writes dx = -(s/T)·y and the K
// selected entries are overwritten with y·(g - s)/T, formed in long double (no cancellation of
// -s·y + g·y).
//
// Members are defined out of class and every helper is templated on A (see kernels/softmax.hpp).

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "softmax.hpp"
#include "topk_softmax.hpp"

namespace smax {
namespace kernels {

template <class A>
struct softmax_topk_table {
  // For each of rows rows of x (cols entries, leading dimension ldx): values[r·k + j] and
  // indices[r·k + j], j < k. values/indices must not overlap x.
  static void forward(const float* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                      std::size_t k, float* values, std::int64_t* indices,
                      float temperature) noexcept;
  static void forward(const double* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                      std::size_t k, double* values, std::int64_t* indices,
                      double temperature) noexcept;
  // dx (leading dimension lddx) from x, the forward's indices and dvalues (rows × k each). dx
  // must not overlap x, indices or dvalues.
  static void backward(const float* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                       std::size_t k, const std::int64_t* indices, const float* dvalues,
                       float* dx, std::size_t lddx, float temperature) noexcept;
  static void backward(const double* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                       std::size_t k, const std::int64_t* indices, const double* dvalues,
                       double* dx, std::size_t lddx, double temperature) noexcept;
};

namespace softmax_topk_detail {

// Capacities above this keep a heap instead of a sorted list: an insertion into the list moves
// up to K entries, into the heap log2 K. Measured on random and ascending rows of 1000 to 32000
// floats, the list is as fast at K = 8 and the heap faster from K = 16 on.
constexpr std::size_t list_max = 8;

// The K best entries so far, in the caller's arrays (capacity cap >= 1): a list sorted by value
// descending (ties by index ascending), or a heap whose root is the worst entry.
template <class A, class T>
struct selection {
  T* value;
  std::int64_t* index;
  std::size_t cap;
  std::size_t count = 0;
  bool heap = false;

  // Whether entry a (value, index) ranks below entry b: smaller value, or equal value and later.
  static SMAX_ALWAYS_INLINE bool worse(T va, std::int64_t ia, T vb, std::int64_t ib) noexcept {
    return va < vb || (va == vb && ia > ib);
  }

  // The value an entry must exceed to get in: the worst kept once full, -inf before (so masked
  // entries never get in).
  SMAX_ALWAYS_INLINE T threshold() const noexcept {
    if (count < cap) return -T(__builtin_huge_val());
    return heap ? value[0] : value[cap - 1];
  }

  void sift_down(std::size_t at, std::size_t size) noexcept {
    const T v = value[at];
    const std::int64_t i = index[at];
    for (;;) {
      std::size_t child = 2 * at + 1;
      if (child >= size) break;
      if (child + 1 < size && worse(value[child + 1], index[child + 1], value[child], index[child]))
        ++child;
      if (!worse(value[child], index[child], v, i)) break;
      value[at] = value[child];
      index[at] = index[child];
      at = child;
    }
    value[at] = v;
    index[at] = i;
  }

  // Takes entry (v, j), v > threshold(); j is larger than every index kept. Returns the new
  // threshold.
  T insert(T v, std::int64_t j) noexcept {
    if (heap) {
      if (count < cap) {  // sift up
        std::size_t at = count++;
        while (at > 0) {
          const std::size_t parent = (at - 1) / 2;
          if (!worse(v, j, value[parent], index[parent])) break;
          value[at] = value[parent];
          index[at] = index[parent];
          at = parent;
        }
        value[at] = v;
        index[at] = j;
      } else {  // v beats the root (strictly: on a tie the root's lower index stays)
        value[0] = v;
        index[0] = j;
        sift_down(0, cap);
      }
      return threshold();
    }
    // Sorted list: the new entry goes after every entry >= v (they all have lower indices).
    std::size_t at = count < cap ? count++ : cap - 1;
    while (at > 0 && value[at - 1] < v) {
      value[at] = value[at - 1];
      index[at] = index[at - 1];
      --at;
    }
    value[at] = v;
    index[at] = j;
    return threshold();
  }

  // Sorts a heap into the list order (heapsort: the worst goes to the back).
  void finish() noexcept {
    if (!heap) return;
    for (std::size_t size = count; size > 1; --size) {
      const T v = value[0];
      const std::int64_t i = index[0];
      value[0] = value[size - 1];
      index[0] = index[size - 1];
      value[size - 1] = v;
      index[size - 1] = i;
      sift_down(0, size - 1);
    }
  }
};

// Offers the entries x[0, len) (indices first + i) to the selection. Four registers at a time are
// compared with the threshold; only a group with a lane above it is looked at lane by lane.
template <class A, class T>
inline void select_block(selection<A, T>& s, const T* x, std::size_t first,
                         std::size_t len) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  T t = s.threshold();
  auto lanes = [&](std::size_t at, std::uint32_t bits) SMAX_INLINE_LAMBDA {
    while (bits) {
      const std::size_t lane = static_cast<std::size_t>(__builtin_ctz(bits));
      bits &= bits - 1;
      const T v = x[at + lane];
      if (v > t) t = s.insert(v, static_cast<std::int64_t>(first + at + lane));
    }
  };
  std::size_t i = 0;
  for (; i + 4 * width <= len; i += 4 * width) {
    const batch tv(t);
    const batch v0 = batch::load_unaligned(x + i);
    const batch v1 = batch::load_unaligned(x + i + width);
    const batch v2 = batch::load_unaligned(x + i + 2 * width);
    const batch v3 = batch::load_unaligned(x + i + 3 * width);
    if (!xsimd::any((v0 > tv) | (v1 > tv) | (v2 > tv) | (v3 > tv))) continue;
    lanes(i, topk_detail::lane_bits<A>(v0 > tv));
    lanes(i + width, topk_detail::lane_bits<A>(v1 > batch(t)));
    lanes(i + 2 * width, topk_detail::lane_bits<A>(v2 > batch(t)));
    lanes(i + 3 * width, topk_detail::lane_bits<A>(v3 > batch(t)));
  }
  for (; i + width <= len; i += width) {
    const batch v = batch::load_unaligned(x + i);
    const auto above = v > batch(t);
    if (xsimd::any(above)) lanes(i, topk_detail::lane_bits<A>(above));
  }
  for (; i < len; ++i)
    if (x[i] > t) t = s.insert(x[i], static_cast<std::int64_t>(first + i));
}

template <class A, class T>
inline void fill_slots(T* values, std::int64_t* indices, std::size_t from, std::size_t k, T v,
                       std::int64_t j) noexcept {
  for (std::size_t i = from; i < k; ++i) {
    values[i] = v;
    indices[i] = j;
  }
}

// How a row's exponentials are scaled: 1/T applied as a product (ordinary temperatures, the
// vector pass), or the scalar wide-range form of softmax (T > 3.3e35 or T < 4.7e-38, where the
// vector kernels' constants would overflow).
enum class scale_kind { unit, scaled, wide };

template <class A, class T>
inline scale_kind scale_of(T temperature, T inv_t) noexcept {
  if (temperature == T(1)) return scale_kind::unit;
  if (inv_t == T(__builtin_huge_val()) || inv_t < wide_range_inv_temperature<T> ||
      inv_t > huge_inv_temperature<T>)
    return scale_kind::wide;
  return scale_kind::scaled;
}

// The pass's state: the row maximum (NaN for a NaN or +inf row, -inf for an all-masked one) and
// d = sum of exp((x - m)/T) over the row.
template <class T>
struct row_state {
  T max;
  double sum;
  T min = -__builtin_huge_val();  // the row minimum when known (chooses the exp form)
};

template <class A, class T, class Hook>
inline row_state<T> reduce(const T* x, std::size_t n, scale_kind kind, T temperature, T inv_t,
                           Hook const& hook) noexcept {
  if (kind == scale_kind::wide) {
    const T m = wide_range_max<A>(x, n);
    if (m != m) return {m, 0.0};
    hook(x, 0, n);
    const bool divides = inv_t == T(__builtin_huge_val());
    const double d = m > -T(__builtin_huge_val())
                         ? wide_range_sum<A>(x, n, m, divides ? T(1) : inv_t,
                                             divides ? temperature : T(0))
                         : 0.0;
    return {m, d};
  }
  const online_partial<T> s = kind == scale_kind::scaled
                                  ? online_reduce_row<A, T, true>(x, n, inv_t, hook)
                                  : online_reduce_row<A, T, false>(x, n, T(1), hook);
  return {s.max, s.sum, s.min};
}

// z = (u - m)/T as hi + lo (lo = 0 for the wide form), the exponent of probability(). False for a
// masked entry or a gap beyond double, whose exp is 0.
template <class A, class T>
inline bool difference_over_t(T u, row_state<T> const& s, scale_kind kind, T temperature,
                              T inv_t, double& hi, double& lo) noexcept {
  if (kind == scale_kind::wide) {
    const bool divides = inv_t == T(__builtin_huge_val());
    hi = wide_range_difference<A>(u, s.max, divides ? T(1) : inv_t, divides ? temperature : T(0));
    lo = 0.0;
    return hi > -__builtin_huge_val();
  }
  const double a = static_cast<double>(u), b = -static_cast<double>(s.max);
  hi = a + b;
  if (!(hi > -__builtin_huge_val())) return false;  // a masked entry, or a gap beyond double
  const double a_part = hi - b;
  const double b_part = hi - a_part;
  lo = (a - a_part) + (b - b_part);
  if (kind == scale_kind::scaled) {
    const double scale = static_cast<double>(inv_t);
    const double product = hi * scale;
    if (!(product > -__builtin_huge_val())) return false;  // (u - m)/T beyond double: exp is 0
    lo = __builtin_fma(hi, scale, -product) + lo * scale;
    hi = product;
  }
  return true;
}

// exp((u - m)/T)/d for one entry (the pass's d is relative to that shift: for the vector pass
// exactly m·(1/T), whose 1/T is the one rounded to T; for the wide form the difference of
// wide_range_difference). In double, with z = (u - m)·(1/T) carried as an unevaluated sum
// hi + lo (TwoSum, then an error-free product by fma) and exp(hi + lo) = exp(hi)·(1 + lo): the
// only roundings are exp's and the division's, as in long double, and x87's expl is many times
// slower than exp (at K = 64 it cost more than the rest of the call).
template <class A, class T>
inline double probability(T u, row_state<T> const& s, scale_kind kind, T temperature,
                          T inv_t) noexcept {
  double hi, lo;
  if (!difference_over_t<A>(u, s, kind, temperature, inv_t, hi, lo)) return 0.0;
  const double e = ::exp(hi);
  return __builtin_fma(e, lo, e) / s.sum;
}

// A factor f (long double: s/T may lie beyond double's range) as mantissa·2^exponent.
template <class A>
struct split_factor {
  double mantissa;
  int exponent;
  explicit split_factor(long double f) noexcept {
    mantissa = static_cast<double>(__builtin_frexpl(f, &exponent));
  }
};

// f·exp((u - m)/T)/d rounded to T, for the backward's entries, without the probability's own
// underflow and without forming f in T: exp is taken of z + K·ln2 with K the integer nearest
// -z·log2(e) (z and K·ln2 nearly cancel, so the sum is exact and |z + K·ln2| <= ln2/2), and
// 2^(exponent - K) is applied last, where the result is rounded once to double's range (and
// then to T's). An entry whose y = 0 (masked) gives 0; one whose dx lies beyond T's range ±inf.
template <class A, class T>
inline T scaled_probability(T u, row_state<T> const& s, scale_kind kind, T temperature, T inv_t,
                            split_factor<A> const& f) noexcept {
  double hi, lo;
  if (!difference_over_t<A>(u, s, kind, temperature, inv_t, hi, lo)) return T(0);
  // Below this, 2^(exponent - K) is below double's range for every long double factor.
  if (hi < -40000.0) return T(0);
  constexpr double log2e = 1.4426950408889634, ln2 = 0x1.62e42fefa39efp-1;
  constexpr double ln2_lo = 0x1.abc9e3b39803fp-56;  // ln 2 - ln2
  const double k = __builtin_round(-hi * log2e);
  const double p = k * ln2;
  const double r = hi + p;  // exact: hi and -p lie within a factor of 2 of each other (or k = 0)
  const double rest = (__builtin_fma(k, ln2, -p) + k * ln2_lo) + lo;
  const double e = ::exp(r);
  const double v = f.mantissa * __builtin_fma(e, rest, e) / s.sum;
  return static_cast<T>(__builtin_ldexp(v, f.exponent - static_cast<int>(k)));
}

template <class A, class T>
inline void forward_row(const T* x, std::size_t n, std::size_t k, T* values,
                        std::int64_t* indices, T temperature) noexcept {
  if (k == 0) return;  // nothing to write (and the selection needs a capacity >= 1)
  const T nan = static_cast<T>(__builtin_nan(""));
  const T inv_t = T(1) / temperature;
  if (!detail::valid_temperature<A>(temperature) || !(inv_t > T(0)))
    return fill_slots<A>(values, indices, 0, k, nan, -1);
  if (n == 0) return fill_slots<A>(values, indices, 0, k, T(0), -1);
  selection<A, T> sel{values, indices, k < n ? k : n};
  sel.heap = sel.cap > list_max;
  const scale_kind kind = scale_of<A>(temperature, inv_t);
  const row_state<T> s =
      reduce<A>(x, n, kind, temperature, inv_t,
                [&sel](const T* block, std::size_t first, std::size_t len)
                    SMAX_INLINE_LAMBDA { select_block<A>(sel, block, first, len); });
  if (s.max != s.max) return fill_slots<A>(values, indices, 0, k, nan, -1);
  // An all-masked row selects nothing (count = 0): every slot is padding.
  sel.finish();
  for (std::size_t j = 0; j < sel.count; ++j)
    values[j] = static_cast<T>(probability<A>(values[j], s, kind, temperature, inv_t));
  // The one entry of a row gets exactly 1, as from softmax (the pass's sum of exp(0) can differ
  // from 1 by an ulp when it was summed under another shift).
  if (n == 1 && sel.count == 1) values[0] = T(1);
  fill_slots<A>(values, indices, sel.count, k, T(0), -1);
}

template <class A, class T>
inline void backward_row(const T* x, std::size_t n, std::size_t k, const std::int64_t* indices,
                         const T* dvalues, T* dx, T temperature) noexcept {
  using batch = xsimd::batch<T, A>;
  const T nan = static_cast<T>(__builtin_nan(""));
  if (n == 0) return;
  const T inv_t = T(1) / temperature;
  if (!detail::valid_temperature<A>(temperature) || !(inv_t > T(0))) return fill_row<A>(dx, n, nan);
  const scale_kind kind = scale_of<A>(temperature, inv_t);
  const row_state<T> s = reduce<A>(x, n, kind, temperature, inv_t, no_block_hook{});
  if (s.max != s.max) return fill_row<A>(dx, n, nan);
  if (!(s.max > -T(__builtin_huge_val()))) return fill_row<A>(dx, n, T(0));  // all masked
  // s = <g, y> over the selected entries (indices outside [0, n), the padding -1 among them,
  // contribute nothing).
  long double dot = 0.0L;
  for (std::size_t j = 0; j < k; ++j) {
    const std::int64_t z = indices[j];
    if (z < 0 || static_cast<std::uint64_t>(z) >= n) continue;
    dot += static_cast<long double>(dvalues[j]) *
           static_cast<long double>(probability<A>(x[z], s, kind, temperature, inv_t));
  }
  const long double t = static_cast<long double>(temperature);
  const long double factor = -dot / t;  // dx = factor·y outside the selection
  const double scale = static_cast<double>(factor);
  // The vector pass below forms exp((x - m)/T) in T and folds the factor into the normaliser in
  // T. Exact to the bound unless the factor amplifies (|s/T| > 1) entries whose probability lies
  // below T's smallest normal number (flushed there, normal in dx), or is large enough for the
  // normaliser to overflow T; those rows, and the wide form, take the entries one by one.
  const T row_it = kind == scale_kind::scaled ? inv_t : T(1);
  const bool amplifies = !(__builtin_fabsl(factor) <= 1.0L);
  const bool by_entry =
      kind == scale_kind::wide ||
      (amplifies &&
       (!((static_cast<double>(s.min) - static_cast<double>(s.max)) * static_cast<double>(row_it) >
          (sizeof(T) == 4 ? -87.33654475055310 : -708.3964185322641) + 1.0) ||  // ln T_min
        !(__builtin_fabsl(factor) < (sizeof(T) == 4 ? 0x1p64L : 0x1p512L))));
  if (by_entry) {
    const split_factor<A> f(factor);
    for (std::size_t i = 0; i < n; ++i)
      dx[i] = scaled_probability<A>(x[i], s, kind, temperature, inv_t, f);
  } else {
    // The pass of softmax's online normaliser with the factor -s/T folded into 1/d.
    auto dense = [&](auto scaled) {
      constexpr bool Scaled = decltype(scaled)::value;
      const T it = Scaled ? inv_t : T(1);
      const primitives::log_shift max_shift = primitives::product_shift(s.max, it);
      primitives::with_shifted_exp<A, T, Scaled>(s.max, s.min, it, [&](auto const& e) {
        const primitives::normalizer<A, T> c(
            scale, s.sum * primitives::exp_of_difference(max_shift, e.shift()));
        primitives::map<A>(x, dx, n, [&](batch const& v) { return c(e(v)); },
                           online_prefetch_distance<A, T>(n));
      });
    };
    if (kind == scale_kind::scaled)
      dense(std::true_type{});
    else
      dense(std::false_type{});
  }
  // The selected entries: y·(g - s)/T, the factor formed in long double (no cancellation of
  // -s·y + g·y) and applied as above (y may lie below T's normal range where dx does not).
  for (std::size_t j = 0; j < k; ++j) {
    const std::int64_t z = indices[j];
    if (z < 0 || static_cast<std::uint64_t>(z) >= n) continue;
    const split_factor<A> f((static_cast<long double>(dvalues[j]) - dot) / t);
    dx[z] = scaled_probability<A>(x[z], s, kind, temperature, inv_t, f);
  }
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                         std::size_t k, T* values, std::int64_t* indices,
                         T temperature) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    forward_row<A>(x + r * ldx, cols, k, values + r * k, indices + r * k, temperature);
}

template <class A, class T>
inline void backward_rows(const T* x, std::size_t ldx, std::size_t rows, std::size_t cols,
                          std::size_t k, const std::int64_t* indices, const T* dvalues, T* dx,
                          std::size_t lddx, T temperature) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    backward_row<A>(x + r * ldx, cols, k, indices + r * k, dvalues + r * k, dx + r * lddx,
                    temperature);
}

}  // namespace softmax_topk_detail

template <class A>
void softmax_topk_table<A>::forward(const float* x, std::size_t ldx, std::size_t rows,
                                    std::size_t cols, std::size_t k, float* values,
                                    std::int64_t* indices, float temperature) noexcept {
  softmax_topk_detail::forward_rows<A>(x, ldx, rows, cols, k, values, indices, temperature);
}
template <class A>
void softmax_topk_table<A>::forward(const double* x, std::size_t ldx, std::size_t rows,
                                    std::size_t cols, std::size_t k, double* values,
                                    std::int64_t* indices, double temperature) noexcept {
  softmax_topk_detail::forward_rows<A>(x, ldx, rows, cols, k, values, indices, temperature);
}
template <class A>
void softmax_topk_table<A>::backward(const float* x, std::size_t ldx, std::size_t rows,
                                     std::size_t cols, std::size_t k,
                                     const std::int64_t* indices, const float* dvalues, float* dx,
                                     std::size_t lddx, float temperature) noexcept {
  softmax_topk_detail::backward_rows<A>(x, ldx, rows, cols, k, indices, dvalues, dx, lddx,
                                        temperature);
}
template <class A>
void softmax_topk_table<A>::backward(const double* x, std::size_t ldx, std::size_t rows,
                                     std::size_t cols, std::size_t k,
                                     const std::int64_t* indices, const double* dvalues,
                                     double* dx, std::size_t lddx, double temperature) noexcept {
  softmax_topk_detail::backward_rows<A>(x, ldx, rows, cols, k, indices, dvalues, dx, lddx,
                                        temperature);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(softmax_topk_table)
