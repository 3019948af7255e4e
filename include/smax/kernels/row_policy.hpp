#pragma once
// What every softmax-like row kernel shares: its parameters and the row rules of the bad-input
// contract (docs/edge_cases.md: all masked, +inf, NaN), applied before any exponential is taken.
// How the rows of a call reach those kernels is row_driver.hpp's.

#include <cmath>
#include <limits>

#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/special.hpp"
#include "../primitives/stream.hpp"

namespace smax {
namespace kernels {

template <class T>
struct row_params {
  T inv_temperature;      // 1/T, finite and > 0 (checked by the caller)
  bool log;               // log-softmax instead of softmax
  bool zero_masked_rows;  // an all -inf row gives 0 (-inf for log) instead of NaN
  // Nonzero only for a temperature whose reciprocal overflows T (T < 1/FLT_MAX): the scale is a
  // division by this T, and only wide_range_row takes such rows (inv_temperature is then 1).
  T divisor = 0;
  // Elements from this row's start to the next row's, 0 for the last row: a batched kernel
  // prefetches the next row while its exp pass keeps the core busy.
  std::size_t next_row = 0;
  std::size_t next_output_row = 0;  // the same for y (its leading dimension, or 0)
};

template <class A, class T>
inline void fill_row(T* y, std::size_t n, T value) noexcept {
  for (std::size_t i = 0; i < n; ++i) y[i] = value;
}

// Whether the row holds a NaN (for the rare rows whose maximum cannot tell: max = -inf).
template <class A, class T>
inline bool has_nan(const T* x, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i)
    if (primitives::is_nan(x[i])) return true;
  return false;
}

// Whether a NaN in the row could have been missed by a kernel that finds NaN rows through their
// sum (a NaN input makes exp, and so the sum, NaN). Under -ffinite-math-only the compiler may drop
// that NaN inside the exp, so such builds scan the row's bits; ordinary builds scan nothing.
template <class A, class T>
inline bool nan_unseen_by_sum(const T* x, std::size_t n) noexcept {
#if SMAX_FINITE_MATH_ONLY
  return has_nan<A>(x, n);
#else
  (void)x;
  (void)n;
  return false;
#endif
}

// The same for NaN or +inf, for a kernel whose transform turns +inf into a NaN before the sum
// (MultiMax's σ where its terms meet as inf - inf): under -ffinite-math-only that NaN may be
// dropped as well.
template <class A, class T>
inline bool special_unseen_by_sum(const T* x, std::size_t n) noexcept {
#if SMAX_FINITE_MATH_ONLY
  for (std::size_t i = 0; i < n; ++i)
    if (primitives::is_nan(x[i]) || primitives::is_pos_inf(x[i])) return true;
  return false;
#else
  (void)x;
  (void)n;
  return false;
#endif
}

// Elements per block of a long row's blocked passes (the online normalisers' pass 1, the blocked
// three-pass): 8 KiB, still in L1 when the block is re-read right after its max is taken.
template <class T>
constexpr std::size_t row_block = 8192 / sizeof(T);

// One block of a long row judged by its maximum (reduce_range flags no NaN): a NaN or +inf
// maximum makes the row NaN; a maximum of -inf is a fully masked block, unless it hides a NaN
// (which only a scan can tell).
enum class block_kind { ordinary, masked, nan_row };
template <class A, class T>
inline block_kind classify_block(T max, const T* x, std::size_t n) noexcept {
  if (primitives::is_nan(max) || primitives::is_pos_inf(max)) return block_kind::nan_row;
  if (primitives::is_neg_inf(max))
    return has_nan<A>(x, n) ? block_kind::nan_row : block_kind::masked;
  return block_kind::ordinary;
}

// What a long row's passes read. Softmax reads x (row_source). A family whose row is a function
// of its inputs gives its own source, whose first pass over a part of the row (range) leaves the
// values where block() points: Gumbel-softmax writes z = x + g into y (gumbel_softmax.hpp), a
// 16-bit row is widened a block at a time into a float buffer (softmax.hpp). A source has
//   range<Min>(start, len): the first pass over [start, start + len): primitives::reduce_range
//                           of the row's values there;
//   block(start):           the values of [start, start + len) after that range call;
//   values():               the whole row's values (sources whose values stay where range left
//                           them: the three-pass kernels read the row again after its first pass);
//   reads_ahead:            whether range asks for the next block itself (else the online pass 1
//                           asks for it from block(start) + len while it exponentiates the block;
//                           the blocked three-pass form asks from values() either way, which for
//                           a source writing into y is the part of y its next range writes).
template <class A, class T>
struct row_source {
  static constexpr bool reads_ahead = false;
  const T* x;
  template <bool Min>
  SMAX_ALWAYS_INLINE primitives::range_result<T> range(std::size_t start,
                                                       std::size_t len) const noexcept {
    return primitives::reduce_range<A, Min>(x + start, len);
  }
  const T* block(std::size_t start) const noexcept { return x + start; }
  const T* values() const noexcept { return x; }
};

// Decides a row from its maximum: NaN (any NaN or +inf), masked (max = -inf) or ordinary.
// Returns true when the row has been written.
template <class A, class T>
inline bool finish_special_row(T max, bool has_nan, T* y, std::size_t n,
                               row_params<T> const& p) noexcept {
  const T inf = __builtin_huge_val();
  const T nan = __builtin_nan("");
  if (has_nan || primitives::is_nan(max) || primitives::is_pos_inf(max)) {
    fill_row<A>(y, n, nan);
    return true;
  }
  if (primitives::is_neg_inf(max)) {
    fill_row<A>(y, n, p.zero_masked_rows ? (p.log ? -inf : T(0)) : nan);
    return true;
  }
  return false;
}

// The largest scale 1/T (or λ) under which the flush-to-zero guard (row_driver.hpp) may flush: it flushes intermediate
// results too, and a difference x - max below the smallest normal number (both near it) lost to 0
// costs the output s·(x - max) relative, up to s·FLT_MIN, which must stay negligible (2^-60).
// Calls with a larger scale keep subnormal results (SSMax, s = 1e300, on zeros and subnormals:
// 1.6e-10 relative error under the guard, against a bound of 1e-14).
template <class T>
constexpr T flush_max_scale = sizeof(T) == 4 ? T(0x1p66) : T(0x1p962);

// Calls f(z) with z(v) = (v - max)·(1/T) - log_sum for a batch v. For T > 1, x - max can overflow
// where (x - max)/T is finite (log-softmax of [3e38, -3e38] at T = 3.7): the difference is then
// taken of halves, fma(x, 1/2, -max/2) (one rounding, as x - max: halving is exact), and scaled
// by 2/T, which gives the same bits wherever x - max is finite (outside the subnormal range).
template <class A, class T, class F>
SMAX_ALWAYS_INLINE decltype(auto) with_log_softmax_value(T max, T inv_t, double log_sum, F&& f) {
  using batch = xsimd::batch<T, A>;
  const batch neg_log_sum(static_cast<T>(-log_sum));
  if (inv_t < T(1)) {
    const batch half(T(0.5)), neg_half_max(-max * T(0.5)), twice_inv(inv_t * T(2));
    return f([=](batch const& v) {
      return smax::detail::mul_add(smax::detail::mul_add(v, half, neg_half_max), twice_inv,
                                   neg_log_sum);
    });
  }
  const batch m(max), inv(inv_t);
  return f([=](batch const& v) { return smax::detail::mul_add(v - m, inv, neg_log_sum); });
}

// z = (x - max)·(1/T) - log_sum, one rounding when T != 1 and exact subtraction otherwise.
template <class A, class T>
inline void write_log_softmax(const T* x, T* y, std::size_t n, T max, T inv_t,
                              double log_sum) noexcept {
  with_log_softmax_value<A>(max, inv_t, log_sum, [&](auto const& z) {
    if (primitives::should_stream<A, T>(n))
      primitives::map_streaming<A>(x, y, n, z);
    else
      primitives::map<A>(x, y, n, z);
  });
}

// 1/T below this (T above FLT_MAX/1024 ≈ 3.3e35 for float, DBL_MAX/1024 ≈ 1.8e305 for double)
// lets exp((x - max)/T) be nonzero for an x - max beyond the largest finite value, which the
// vector kernels' difference overflows to -inf: such calls take wide_range_row. So do calls
// whose 1/T overflows (T below 1/FLT_MAX, 1/DBL_MAX: row_params::divisor), where
// (x - max)·(1/T) would be 0·inf at the maximum.
template <class T>
constexpr T wide_range_inv_temperature = T(1024) / std::numeric_limits<T>::max();

// 1/T above this (T below 16/FLT_MAX, 16/DBL_MAX) would overflow the vector kernels' constants
// (1/T·log2e, 2/T): such calls take wide_range_row as well, with (x - max)·(1/T) in double.
template <class T>
constexpr T huge_inv_temperature = std::numeric_limits<T>::max() / 16;

// A row at such a temperature, in scalar code: x - max in double (float rows, and double rows
// with T <= 1) or as x/2 - max/2 (double rows with T > 1, scaled by 2/T), the exponentials and
// the sum in double. A rare path (float: T > 3.3e35, or T < 4.7e-38) that needs no speed. For
// double rows with T > 1, 2/T is formed as (1/T)·2^61 and the difference taken 2^-60 times (both
// exact): 2/T itself can be subnormal (T > 9e307), which a flush-to-zero mode would make 0 (and a
// masked entry's -inf·0 NaN). Where 1/T overflows, the difference is divided by T: x - max then
// overflows only where (x - max)/T does.
template <class A, class T>
inline double wide_range_difference(T x, T max, T inv_t, T divisor = 0) noexcept {
  if (divisor != T(0))
    return (static_cast<double>(x) - static_cast<double>(max)) / static_cast<double>(divisor);
  if (sizeof(T) == 4 || inv_t >= T(1))  // float: exact in double; double: 1/T is not subnormal
    return (static_cast<double>(x) - static_cast<double>(max)) * static_cast<double>(inv_t);
  return ((static_cast<double>(x) * 0.5 - static_cast<double>(max) * 0.5) * 0x1p-60) *
         (static_cast<double>(inv_t) * 0x1p61);
}

// Sum of exp((x - max)/T) over the row (masked entries give 0); max finite. Compensated
// (Neumaier), so that its error does not grow with n.
template <class A, class T>
inline double wide_range_sum(const T* x, std::size_t n, T max, T inv_t, T divisor = 0) noexcept {
  double sum = 0.0, error = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = ::exp(wide_range_difference<A>(x[i], max, inv_t, divisor));
    const double t = sum + e;
    error += __builtin_fabs(sum) >= e ? (sum - t) + e : (e - t) + sum;
    sum = t;
  }
  return sum + error;
}

// The row's maximum, NaN when it holds a NaN or +inf, -inf when every entry is masked.
template <class A, class T>
inline T wide_range_max(const T* x, std::size_t n) noexcept {
  T max = -__builtin_huge_val();
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] != x[i]) return x[i];
    if (x[i] > max) max = x[i];
  }
  return max == __builtin_huge_val() ? static_cast<T>(__builtin_nan("")) : max;
}

// y from the row's state (max finite, sum in double).
template <class A, class T>
inline void wide_range_normalize(const T* x, T* y, std::size_t n, T max, double sum,
                                 row_params<T> const& p) noexcept {
  const double log_sum = ::log(sum);
  for (std::size_t i = 0; i < n; ++i) {
    const double d = wide_range_difference<A>(x[i], max, p.inv_temperature, p.divisor);
    y[i] = static_cast<T>(p.log ? d - log_sum : ::exp(d) / sum);
  }
}

template <class A, class T>
inline void wide_range_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  const T max = wide_range_max<A>(x, n);
  if (finish_special_row<A>(max, max != max, y, n, p)) return;
  if (n == 1) {
    y[0] = p.log ? T(0) : T(1);
    return;
  }
  wide_range_normalize<A>(x, y, n, max, wide_range_sum<A>(x, n, max, p.inv_temperature, p.divisor),
                          p);
}

}  // namespace kernels
}  // namespace smax
