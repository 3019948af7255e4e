#pragma once
// The one row driver of the softmax-like families (softmax, log-softmax, SSMax, MultiMax,
// softpick, StableMax): how the rows of a call reach a family's kernels. It owns what every such
// family shares:
// * short rows (at most four registers of A) stay in registers: one row alone goes straight to
//   its kernel (latency: an attention row, a classifier's logits), more go four at a time through
//   the interleaved kernel (throughput: the latency chains of independent rows overlap), the rest
//   one by one;
// * narrow rows (at most one register of A) run on smax::detail::short_row_arch<A>, 256-bit
//   registers on AVX-512, whose horizontal steps are shorter;
// * longer rows of at least prefetch_min_bytes prefetch the next row (x and y) while their
//   exponential pass keeps the core busy;
// * flush-to-zero of subnormal results for the call, where the family allows it.
// The family supplies a policy: the kernels above (built once per call from its parameters), and
// whether short rows take the register kernels (an explicit algorithm may say no). Each family's
// special-row rule and its finish step (normalise, log, relu, threshold) live in those kernels;
// streaming stores are chosen by the last pass of a long row (primitives::should_stream).
//
// A policy P for element type T provides
//   static constexpr bool flush_subnormals;             // whether it has flush_elements
//   std::size_t flush_elements(std::size_t elements) const;  // the guard's count, 0: no flush
//   static constexpr bool register_kernels;             // whether it has the next three
//   bool in_registers() const;                          // short rows take the register kernels
//   template <class B> void row_in_registers(const T* x, T* y, std::size_t n) const;
//   template <class B, std::size_t K>
//   void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t n) const;
//   template <class F> void with_row_kernel(F&& f) const;  // f(kernel), kernel(x, y, n, next)
// where B is A or short_row_arch<A>, n <= 4 registers of B, and `next` (next_rows) gives the
// distances to the next row of x and y, 0 for none.

#include <cstddef>
#include <type_traits>

#include "row_policy.hpp"

namespace smax {
namespace kernels {

// Outputs below FLT_MIN may be flushed to 0 (docs/edge_cases.md), and on x86 they must be: a
// multiply whose result is subnormal takes a microcode assist (~100 cycles), which made rows whose
// tail underflows (a large 1/T, or SSMax's λ·spread > 87) several times slower. Sets MXCSR.FTZ
// for the call and restores it; inputs are not touched (DAZ stays as it was). Only where FMA is
// native: without it the exp's scale·p + scale rounds scale·p on its own, and flushing that
// (subnormal) product would cost accuracy on results that are normal (docs/dispatch.md).
// Calls of fewer than flush_min_elements elements skip it: on short rows the two MXCSR writes
// cost more than the assists they could save.
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

// The guard of a family that allows the flush (and of a call long enough for it), or nothing.
struct no_flush {
  explicit no_flush(std::size_t) noexcept {}
};
template <class A, bool Enabled>
using flush_guard = std::conditional_t<Enabled, flush_subnormal_results<A>, no_flush>;

// Distances, in elements, from this row's start to the next row's in x and y; 0: no next row
// (the last row, or rows too short to gain from the prefetch).
struct next_rows {
  std::size_t x = 0;
  std::size_t y = 0;
};

// Rows of at least this many bytes prefetch the next row: on shorter ones the requests cost more
// than a row's worth of latency they hide.
constexpr std::size_t prefetch_min_bytes = 1024;

template <class B, class T, class Policy>
SMAX_ALWAYS_INLINE void drive_rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                                std::size_t rows, std::size_t cols,
                                                Policy const& policy) noexcept {
  if (rows == 1) return policy.template row_in_registers<B>(x, y, cols);
  constexpr std::size_t group = 4;
  std::size_t r = 0;
  for (; r + group <= rows; r += group)
    policy.template rows_in_registers<B, group>(x + r * ldx, ldx, y + r * ldy, ldy, cols);
  for (; r < rows; ++r) policy.template row_in_registers<B>(x + r * ldx, y + r * ldy, cols);
}

// Rows longer than four registers, or every row of a family without register kernels.
template <class A, class T, class Policy>
SMAX_ALWAYS_INLINE void drive_long_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                        std::size_t rows, std::size_t cols,
                                        Policy const& policy) noexcept {
  const bool prefetch = cols * sizeof(T) >= prefetch_min_bytes;
  policy.with_row_kernel([&](auto const& kernel) {
    for (std::size_t r = 0; r < rows; ++r) {
      const bool ahead = prefetch && r + 1 < rows;
      kernel(x + r * ldx, y + r * ldy, cols, next_rows{ahead ? ldx : 0, ahead ? ldy : 0});
    }
  });
}
// The same out of line, for families with register kernels: their short rows' path then stays
// small enough for the compiler to inline the table's entry point into a header-only caller.
template <class A, class T, class Policy>
__attribute__((noinline)) void drive_long_rows_out_of_line(const T* x, std::size_t ldx, T* y,
                                                           std::size_t ldy, std::size_t rows,
                                                           std::size_t cols,
                                                           Policy const& policy) noexcept {
  drive_long_rows<A>(x, ldx, y, ldy, rows, cols, policy);
}

// Inlined into the families' table entry points: a call level costs a 16-element row a
// measurable share of its time.
template <class A, class T, class Policy>
SMAX_ALWAYS_INLINE void drive_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols,
                                   Policy const& policy) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  if constexpr (Policy::register_kernels) {
    // One short row: below the flush guard's threshold (flush_min_elements), so without it.
    static_assert(4 * width < flush_min_elements, "a short row is never flushed");
    if (rows == 1 && cols <= 4 * width && policy.in_registers()) {
      if (cols <= width)
        return policy.template row_in_registers<smax::detail::short_row_arch<A>>(x, y, cols);
      return policy.template row_in_registers<A>(x, y, cols);
    }
  }
  std::size_t flush_elements = 0;
  if constexpr (Policy::flush_subnormals) flush_elements = policy.flush_elements(rows * cols);
  [[maybe_unused]] const flush_guard<A, Policy::flush_subnormals> ftz(flush_elements);
  if constexpr (Policy::register_kernels) {
    if (cols <= 4 * width && policy.in_registers()) {
      if (cols <= width)
        return drive_rows_in_registers<smax::detail::short_row_arch<A>>(x, ldx, y, ldy, rows, cols,
                                                                        policy);
      return drive_rows_in_registers<A>(x, ldx, y, ldy, rows, cols, policy);
    }
  }
  if constexpr (Policy::register_kernels)
    drive_long_rows_out_of_line<A>(x, ldx, y, ldy, rows, cols, policy);
  else
    drive_long_rows<A>(x, ldx, y, ldy, rows, cols, policy);
}

}  // namespace kernels
}  // namespace smax
