#pragma once
// Fused cross-entropy (docs/cross_entropy.md) for one instruction set A: per row the loss
// (1 - ε)·(lse - x_t) + ε·(lse - mean(x)) and, for the backward, dx = (softmax(x) - q)·g with
// q = (1 - ε)·onehot(t) + ε/C, from two reads of x and no rows × cols buffer.
//
// Pass 1 is softmax's online pass (online_reduce_row): the row maximum m and d = Σ exp(x - m),
// per 8 KiB block while the block is in L1. With label smoothing a hook sums x - (block maximum)
// on the same block (all terms <= 0, so the mean's gap m - mean(x) has no cancellation), and the
// blocks are combined relative to the running maximum. The loss is formed from (m, d, x_t) in a
// wider type (double for float rows, long double for double rows) as
//   log d + (1 - ε)·(m - x_t) + ε·(m - mean(x)),
// three terms that are all >= 0 (d >= 1: the maximum contributes exp(0)), so only the final
// rounding to T and d's own error remain.
//
// Pass 2 (backward) is softmax's normalising pass with the upstream gradient g folded into the
// normaliser: dx_i = g·exp(x_i - m)/d - g·ε/C. The target entry is then overwritten with
// (p_t - (1 - ε + ε/C))·g formed in the wider type from the x_t saved before pass 2 (so dx may be
// x), p_t = exp(x_t - m)/d in double. The forward and the fused call share pass 1 and the loss
// code, and the fused call with g = 1 is the backward's code: with_grad equals forward + backward
// (dlosses = 1) bit for bit.
//
// Members are defined out of class and every helper is templated on A (see kernels/softmax.hpp).

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"
#include "softmax.hpp"

namespace smax {
namespace kernels {

template <class A>
struct cross_entropy_table {
  // losses[r] for each of rows rows of x (cols entries, leading dimension ld) with class
  // targets[r]. losses must not overlap x.
  static void forward(const float* x, std::size_t ld, std::size_t rows, std::size_t cols,
                      const std::int64_t* targets, float* losses, std::int64_t ignore_index,
                      double label_smoothing) noexcept;
  static void forward(const double* x, std::size_t ld, std::size_t rows, std::size_t cols,
                      const std::int64_t* targets, double* losses, std::int64_t ignore_index,
                      double label_smoothing) noexcept;
  // dx (leading dimension ld; may be x) = d(Σ_r dlosses[r]·loss_r)/dx; dlosses == nullptr means
  // every dloss is 1, and losses, when not null, gets the forward's losses.
  static void backward(const float* x, std::size_t ld, std::size_t rows, std::size_t cols,
                       const std::int64_t* targets, const float* dlosses, float* losses,
                       float* dx, std::int64_t ignore_index, double label_smoothing) noexcept;
  static void backward(const double* x, std::size_t ld, std::size_t rows, std::size_t cols,
                       const std::int64_t* targets, const double* dlosses, double* losses,
                       double* dx, std::int64_t ignore_index, double label_smoothing) noexcept;
};

namespace cross_entropy_detail {

// The type the loss is formed in: double for float rows, long double for double rows (the gap
// m - x_t of two doubles near ±DBL_MAX overflows double although (1 - ε) times it may not).
template <class T>
using wide_t = std::conditional_t<sizeof(T) == 4, double, long double>;

// x - (block maximum) is summed as (x·2^-9 - max·2^-9): a block's terms can reach 2·FLT_MAX, and
// a lane adds up to 64 of them in T before they are widened (map_sum: four accumulators of 16).
template <class T>
constexpr T gap_scale = T(1.0 / 512.0);

// Σ (x - M) over the row's blocks, M the row maximum, in the wide type: each block's sum of
// x - (its maximum) is taken in L1 (the online pass's hook) and moved to the running maximum
// (subtracting count·(new max - old max)); every term is <= 0.
template <class A, class T>
struct gap_sum {
  wide_t<T> total = 0;
  T max = -T(__builtin_huge_val());
  std::size_t seen = 0;  // entries in blocks that reached the hook (not all -inf, no NaN)

  void add_block(const T* block, std::size_t len, T block_max) noexcept {
    using batch = xsimd::batch<T, A>;
    using wide = wide_t<T>;
    const batch s(gap_scale<T>);
    const batch shifted_max(block_max * gap_scale<T>);
    const double scaled = primitives::map_sum<A, false>(
        block, static_cast<T*>(nullptr), len, T(0),
        [&](batch const& v) SMAX_INLINE_LAMBDA { return v * s - shifted_max; });
    if (block_max > max) {
      if (seen) total += static_cast<wide>(seen) * (static_cast<wide>(max) - block_max);
      max = block_max;
    }
    total += static_cast<wide>(scaled) / static_cast<wide>(gap_scale<T>) +
             static_cast<wide>(len) * (static_cast<wide>(block_max) - max);
    seen += len;
  }
};

// Pass 1 of a row: softmax's online state, and with smoothing the mean gap m - mean(x) (>= 0;
// +inf when an entry is -inf).
template <class T>
struct row_state {
  online_partial<T> s;
  wide_t<T> mean_gap = 0;
};

template <class A, class T>
inline row_state<T> reduce(const T* x, std::size_t n, bool smoothing) noexcept {
  if (!smoothing) return {online_reduce_row<A, T, false>(x, n, T(1)), 0};
  gap_sum<A, T> gaps;
  const online_partial<T> s = online_reduce_row<A, T, false>(
      x, n, T(1),
      [&gaps](const T* block, std::size_t, std::size_t len, T block_max)
          SMAX_INLINE_LAMBDA { gaps.add_block(block, len, block_max); });
  // A block of only -inf skips the hook: the row has a -inf entry and mean(x) = -inf.
  const wide_t<T> mean_gap = gaps.seen < n ? static_cast<wide_t<T>>(__builtin_huge_val())
                                           : -gaps.total / static_cast<wide_t<T>>(n);
  return {s, mean_gap};
}

// Whether pass 1 left a row with a defined loss: no NaN or +inf, not every entry -inf.
template <class T>
inline bool ordinary(online_partial<T> const& s) noexcept {
  return !primitives::is_nan(s.max) && !primitives::is_neg_inf(s.max);
}

// log d + (1 - ε)·(m - x_t) + ε·(m - mean(x)); a term whose weight is 0 is left out (so x_t = -inf
// at ε = 1, or a -inf entry at ε = 0, gives no 0·inf).
template <class T>
inline T loss_of(row_state<T> const& r, std::size_t n, T target_value, double eps) noexcept {
  using wide = wide_t<T>;
  // d >= 1 exactly (the maximum's exp(0)); the pass's d can be an ulp below, and for a row of
  // one entry d = 1 exactly (the pass's value of exp(0) under its shift can be an ulp off).
  wide loss = n == 1 ? wide(0) : static_cast<wide>(::log(r.s.sum > 1.0 ? r.s.sum : 1.0));
  if (eps != 1.0)
    loss += static_cast<wide>(1.0 - eps) * (static_cast<wide>(r.s.max) - target_value);
  if (eps != 0.0) loss += static_cast<wide>(eps) * r.mean_gap;
  return static_cast<T>(loss);
}

template <class T>
inline bool valid_smoothing(double eps) noexcept {
  return eps >= 0.0 && eps <= 1.0;  // false for NaN
}

template <class A, class T>
inline bool valid_target(std::int64_t t, std::size_t cols) noexcept {
  return t >= 0 && static_cast<std::uint64_t>(t) < cols;
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ld, std::size_t rows, std::size_t cols,
                         const std::int64_t* targets, T* losses, std::int64_t ignore_index,
                         double eps) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  if (!valid_smoothing<T>(eps)) return fill_row<A>(losses, rows, nan);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::int64_t t = targets[r];
    if (t == ignore_index) {
      losses[r] = T(0);
      continue;
    }
    if (!valid_target<A, T>(t, cols)) {  // never read x[t]
      losses[r] = nan;
      continue;
    }
    const T* row = x + r * ld;
    const row_state<T> s = reduce<A>(row, cols, eps != 0.0);
    losses[r] = ordinary(s.s) ? loss_of(s, cols, row[t], eps) : nan;
  }
}

// dx = (softmax(x) - q)·g for one ordinary row (pass 2 and the target's entry).
template <class A, class T>
inline void write_gradient(const T* x, T* dx, std::size_t n, online_partial<T> const& s,
                           std::size_t t, T target_value, double g, double eps) noexcept {
  using batch = xsimd::batch<T, A>;
  using wide = wide_t<T>;
  const double smooth = eps / static_cast<double>(n);  // ε/C, the smoothed target off t
  const batch off_target(static_cast<T>(g * smooth));
  const primitives::log_shift max_shift = primitives::product_shift(s.max, T(1));
  primitives::with_shifted_exp<A, T, false>(s.max, s.min, T(1), [&](auto const& e) {
    // s.sum is relative to max, the values to e's shift: g is folded into the normaliser.
    const primitives::normalizer<A, T> c(g,
                                         s.sum * primitives::exp_of_difference(max_shift, e.shift()));
    primitives::map<A>(
        x, dx, n, [&](batch const& v) SMAX_INLINE_LAMBDA { return c(e(v)) - off_target; },
        online_prefetch_distance<A, T>(n));
  });
  // The target: p_t - (1 - ε + ε/C) without the cancellation of the rounded p_t·g - g. p_t in
  // double from the saved x_t (dx may be x), at most 1 (exactly 1 for a row of one entry).
  double p = primitives::exp_of_difference({static_cast<double>(target_value), 0.0},
                                           {static_cast<double>(s.max), 0.0}) /
             (s.sum > 1.0 ? s.sum : 1.0);
  if (n == 1 || p > 1.0) p = 1.0;
  // q_t = 1 - ε·(1 - 1/C): exactly 1 for C = 1 or ε = 0 (1 - ε + ε/C would leave an ulp).
  const wide q = 1 - static_cast<wide>(eps) * (1 - 1 / static_cast<wide>(n));
  dx[t] = static_cast<T>((static_cast<wide>(p) - q) * static_cast<wide>(g));
}

template <class A, class T>
inline void backward_rows(const T* x, std::size_t ld, std::size_t rows, std::size_t cols,
                          const std::int64_t* targets, const T* dlosses, T* losses, T* dx,
                          std::int64_t ignore_index, double eps) noexcept {
  const T nan = static_cast<T>(__builtin_nan(""));
  const bool smoothing_ok = valid_smoothing<T>(eps);
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = x + r * ld;
    T* out = dx + r * ld;
    const std::int64_t t = targets[r];
    auto bad_row = [&] {
      if (losses) losses[r] = nan;
      fill_row<A>(out, cols, nan);
    };
    if (!smoothing_ok) {
      bad_row();
      continue;
    }
    if (t == ignore_index) {  // before the dloss: an ignored row has no gradient at all
      if (losses) losses[r] = T(0);
      fill_row<A>(out, cols, T(0));
      continue;
    }
    if (!valid_target<A, T>(t, cols)) {
      bad_row();
      continue;
    }
    const row_state<T> s = reduce<A>(row, cols, losses != nullptr && eps != 0.0);
    if (!ordinary(s.s)) {
      bad_row();
      continue;
    }
    const std::size_t target = static_cast<std::size_t>(t);
    const T target_value = row[target];  // before pass 2 overwrites it (dx may be x)
    if (losses) losses[r] = loss_of(s, cols, target_value, eps);
    const T g = dlosses ? dlosses[r] : T(1);
    if (!primitives::is_finite(g)) {
      fill_row<A>(out, cols, nan);
      continue;
    }
    write_gradient<A>(row, out, cols, s.s, target, target_value, static_cast<double>(g), eps);
  }
}

}  // namespace cross_entropy_detail

template <class A>
void cross_entropy_table<A>::forward(const float* x, std::size_t ld, std::size_t rows,
                                     std::size_t cols, const std::int64_t* targets, float* losses,
                                     std::int64_t ignore_index, double label_smoothing) noexcept {
  cross_entropy_detail::forward_rows<A>(x, ld, rows, cols, targets, losses, ignore_index,
                                        label_smoothing);
}
template <class A>
void cross_entropy_table<A>::forward(const double* x, std::size_t ld, std::size_t rows,
                                     std::size_t cols, const std::int64_t* targets,
                                     double* losses, std::int64_t ignore_index,
                                     double label_smoothing) noexcept {
  cross_entropy_detail::forward_rows<A>(x, ld, rows, cols, targets, losses, ignore_index,
                                        label_smoothing);
}
template <class A>
void cross_entropy_table<A>::backward(const float* x, std::size_t ld, std::size_t rows,
                                      std::size_t cols, const std::int64_t* targets,
                                      const float* dlosses, float* losses, float* dx,
                                      std::int64_t ignore_index, double label_smoothing) noexcept {
  cross_entropy_detail::backward_rows<A>(x, ld, rows, cols, targets, dlosses, losses, dx,
                                         ignore_index, label_smoothing);
}
template <class A>
void cross_entropy_table<A>::backward(const double* x, std::size_t ld, std::size_t rows,
                                      std::size_t cols, const std::int64_t* targets,
                                      const double* dlosses, double* losses, double* dx,
                                      std::int64_t ignore_index, double label_smoothing) noexcept {
  cross_entropy_detail::backward_rows<A>(x, ld, rows, cols, targets, dlosses, losses, dx,
                                         ignore_index, label_smoothing);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(cross_entropy_table)
