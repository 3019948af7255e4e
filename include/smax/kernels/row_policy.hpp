#pragma once
// What every normalising row kernel shares: its parameters and the edge-case policy of spec §0.2
// (E4 all masked, E5 +inf, E6 NaN), applied before any exponential is taken.

#include "../primitives/map_reduce.hpp"
#include "../primitives/partial.hpp"
#include "../primitives/special.hpp"
#include "../primitives/stream.hpp"

namespace smax {
namespace kernels {

template <class T>
struct row_params {
  T inv_temperature;      // 1/T, finite and > 0 (checked by the caller)
  bool log;               // log-softmax instead of softmax
  bool zero_masked_rows;  // an all -inf row gives 0 (-inf for log) instead of NaN
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
  if (primitives::is_neg_inf(max)) return has_nan<A>(x, n) ? block_kind::nan_row : block_kind::masked;
  return block_kind::ordinary;
}

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

// Outputs below FLT_MIN may be flushed to 0 (spec E8), and on x86 they must be: a multiply whose
// result is subnormal takes a microcode assist (~100 cycles), which made rows whose tail
// underflows (a large 1/T, or SSMax's λ·spread > 87) five times slower. Sets MXCSR.FTZ for the
// call and restores it; inputs are not touched (DAZ stays as it was). Only where FMA is native:
// without it the exp's scale·p + scale rounds scale·p on its own, and flushing that (subnormal)
// product would cost accuracy on results that are normal.
// Calls of fewer than flush_min_elements elements skip it: the two MXCSR writes cost ~4 ns, 10 %
// of a 16-element row, more than the assists they could save there.
constexpr std::size_t flush_min_elements = 1024;
template <class A, bool = smax::detail::has_native_fma<A>::value>
struct flush_subnormal_results {
  explicit flush_subnormal_results(std::size_t) noexcept {}
};
#if defined(__x86_64__) || defined(__i386__)
template <class A>
struct flush_subnormal_results<A, true> {
  unsigned saved;
  bool active;
  explicit flush_subnormal_results(std::size_t elements) noexcept
      : saved(0), active(elements >= flush_min_elements) {
    if (active) {
      saved = _mm_getcsr();
      _mm_setcsr(saved | 0x8000u);
    }
  }
  ~flush_subnormal_results() {
    if (active) _mm_setcsr(saved);
  }
};
#endif

// z = (x - max)·(1/T) - log_sum, one rounding when T != 1 and exact subtraction otherwise.
template <class A, class T>
inline void write_log_softmax(const T* x, T* y, std::size_t n, T max, T inv_t,
                              double log_sum) noexcept {
  using batch = xsimd::batch<T, A>;
  const batch m(max), inv(inv_t), neg_log_sum(static_cast<T>(-log_sum));
  auto z = [&](batch const& v) { return smax::detail::mul_add(v - m, inv, neg_log_sum); };
  if (primitives::should_stream<A, T>(n))
    primitives::map_streaming<A>(x, y, n, z);
  else
    primitives::map<A>(x, y, n, z);
}

}  // namespace kernels
}  // namespace smax
