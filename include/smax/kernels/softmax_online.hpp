#pragma once
// Online normaliser (Milakov & Gimelshein 2018; docs/softmax.md), blocked: pass 1 keeps (m, d) and
// per cache-resident block takes the block's max first, rescales d once if the max grew, then sums
// exp(x - m) over the block while it is still in L1. One exp per element in pass 1, no per-element
// rescale, and the row is read from memory only once per pass: pass 2 computes exp(x - m)/d and
// writes y. 3 memory accesses per element against 5 for the three-pass reloading form.

#include <cmath>
#include <type_traits>

#include "../primitives/exp_minus_max.hpp"
#include "../primitives/log.hpp"
#include "../primitives/map_reduce.hpp"
#include "../primitives/reduce_max.hpp"
#include "../primitives/stream.hpp"
#include "row_policy.hpp"

namespace smax {
namespace kernels {

// The state of pass 1: d = sum of exp((x - max)/T); max = NaN when the row holds NaN or +inf.
template <class T>
struct online_partial {
  T max;
  double sum;
  T min = -__builtin_huge_val();  // the row minimum when known (chooses pass 2's exp form)
};

// Each block is summed with the exp functor of the running maximum (exp(x·s - σ),
// primitives::with_shifted_exp); when the maximum grows, the sum so far is rescaled by
// exp(σ_old - σ_new), with both shifts' roundings carried (exp_of_difference). Log = true for
// log-softmax, which needs only the sum (exp_for_log_sum: σ = max·s, the x - max error dropped).
//
// on_block(block, first, len) is called on each block that is neither masked nor bad, after its
// maximum and before its sum, while it is in L1: softmax_topk selects its K largest entries there,
// so the row is read from memory once for both. A hook that takes a fourth argument gets the
// block's maximum as well (cross_entropy sums x - block max there for label smoothing's mean).
struct no_block_hook {
  template <class T>
  SMAX_ALWAYS_INLINE void operator()(const T*, std::size_t, std::size_t) const noexcept {}
};

// The row's values come from a source (row_policy.hpp's row_source: x itself; a 16-bit row's
// widened blocks), a block at a time.
template <class A, class T, bool Scaled, bool Log = false, class OnBlock = no_block_hook,
          class Source>
inline online_partial<T> online_reduce_row_from(Source const& source, std::size_t n, T inv_t,
                                                OnBlock const& on_block = OnBlock{}) noexcept {
  const T inf = __builtin_huge_val();
  const online_partial<T> nan_state{static_cast<T>(__builtin_nan("")), 0.0};
  online_partial<T> state{-inf, 0.0, inf};
  primitives::log_shift shift{0.0, 0.0};  // σ of state.sum
  // A row read from x takes each block's range in the loop that sums the block before it (as the
  // blocked three-pass form does: no pass for the range alone, no pause between a block's range
  // and its sum); a source that makes its values takes a range pass per block.
  constexpr bool beside = std::is_same<Source, row_source<A, T>>::value;
  constexpr std::size_t step = 4 * xsimd::batch<T, A>::size;
  primitives::range_result<T> next_range{};
  if constexpr (beside)
    next_range =
        primitives::reduce_range<A, !Log>(source.values(), n < row_block<T> ? n : row_block<T>);
  for (std::size_t b = 0; b < n; b += row_block<T>) {
    const std::size_t len = n - b < row_block<T> ? n - b : row_block<T>;
    const std::size_t rest = n - b - len;
    const std::size_t next_len = rest < row_block<T> ? rest : row_block<T>;
    // No NaN flag in the max pass: a NaN makes the block's sum NaN (see three_pass_row). The
    // minimum chooses softmax's exp form; log-softmax does not need it.
    primitives::range_result<T> r;
    if constexpr (beside)
      r = next_range;
    else
      r = source.template range<!Log>(b, len);
    const T* const x = source.block(b);
    const block_kind kind = classify_block<A>(r.max, x, len);
    if (kind == block_kind::nan_row) return nan_state;
    if (kind == block_kind::masked) {  // contributes nothing
      if constexpr (beside) next_range = primitives::reduce_range<A, !Log>(x + len, next_len);
      continue;
    }
    if constexpr (std::is_invocable_v<OnBlock const&, const T*, std::size_t, std::size_t, T>)
      on_block(x, b, len, r.max);
    else
      on_block(x, b, len);
    const bool grew = r.max > state.max;
    const T old_max = state.max;
    if (grew) state.max = r.max;
    if (r.min < state.min) state.min = r.min;
    // While the block is summed from L1, the next one is prefetched: otherwise memory would sit
    // idle through the exp and the max pass would wait for it (a source that reads ahead itself
    // has asked for it already). Beside, the next block is read in the loop itself, and the one
    // after it is asked for.
    const std::size_t ahead =
        beside ? (rest > row_block<T> ? 2 * row_block<T> : 0)
               : (!Source::reads_ahead && b + 2 * row_block<T> <= n ? row_block<T> : 0);
    auto block_sum = [&](auto const& e) {
      if (grew) {
        if (state.sum != 0.0)
          state.sum *= primitives::exp_of_shift_difference(shift, e.shift(), old_max, state.max,
                                                           Scaled ? inv_t : T(1));
        shift = e.shift();
      }
      if constexpr (beside) {
        primitives::range_beside<A, !Log, T> following{x + len, next_len};
        const double sum = primitives::map_sum_beside<A, false>(
            x, static_cast<T*>(nullptr), len, -inf, e, [&](std::size_t i) SMAX_INLINE_LAMBDA {
              following(i);
              if (ahead) primitives::prefetch<A>(x + i + ahead, step * sizeof(T));
            });
        next_range = following.finish(len);
        return sum;
      } else {
        return primitives::map_sum<A, false>(x, static_cast<T*>(nullptr), len, -inf, e, ahead);
      }
    };
    const double s =
        Log ? block_sum(primitives::exp_for_log_sum<A, T, Scaled>(state.max, inv_t))
            : primitives::with_shifted_exp<A, T, Scaled>(state.max, r.min, inv_t, block_sum);
    if (primitives::is_nan(s) || nan_unseen_by_sum<A>(x, len)) return nan_state;
    state.sum += s;
  }
  if (primitives::is_neg_inf(state.max)) {
    state.min = -inf;
    return state;
  }
  // The sum relative to max·s, as online_partial promises.
  state.sum *= primitives::exp_of_difference(
      shift, primitives::product_shift(state.max, Scaled ? inv_t : T(1)));
  return state;
}

template <class A, class T, bool Scaled, bool Log = false, class OnBlock = no_block_hook>
inline online_partial<T> online_reduce_row(const T* x, std::size_t n, T inv_t,
                                           OnBlock const& on_block = OnBlock{}) noexcept {
  return online_reduce_row_from<A, T, Scaled, Log>(row_source<A, T>{x}, n, inv_t, on_block);
}

// Rows past L2 are read from memory while the exp keeps the core busy: prefetching 8 KiB ahead
// keeps loads in flight, which makes pass 2 of a row far beyond the cache measurably faster.
template <class A, class T>
inline std::size_t online_prefetch_distance(std::size_t n) noexcept {
  return n * sizeof(T) > (std::size_t(1) << 20) ? 8192 / sizeof(T) : 0;
}

// Pass 2's map: calls write(f) with f(v) = exp((v - max)/T)/sum, or (v - max)/T - log sum, on a
// batch v (the pass itself is the caller's: over a float row below, over a 16-bit one in
// softmax.hpp). AnyMin: s.min is -inf (a chunk of a merged state), which lets fewer functors be
// instantiated (with_shifted_exp_of_any_row: the same choice).
template <class A, class T, bool Scaled, bool AnyMin = false, class Write>
inline void with_online_normalizer(online_partial<T> const& s, row_params<T> const& p,
                                   Write const& write) noexcept {
  using batch = xsimd::batch<T, A>;
  if (p.log) {
    with_log_softmax_value<A>(s.max, p.inv_temperature, primitives::log_of_row_sum<A, T>(s.sum),
                              write);
    return;
  }
  const primitives::log_shift max_shift =
      primitives::product_shift(s.max, Scaled ? p.inv_temperature : T(1));
  auto normalize = [&](auto const& e) {
    // s.sum is relative to max·s, the values to σ.
    const primitives::normalizer<A, T> c(
        1.0, s.sum * primitives::exp_of_difference(max_shift, e.shift()));
    write([&](batch const& v) SMAX_INLINE_LAMBDA { return c(e(v)); });
  };
  if constexpr (AnyMin)
    primitives::with_shifted_exp_of_any_row<A, T, Scaled>(s.max, p.inv_temperature, normalize);
  else
    primitives::with_shifted_exp<A, T, Scaled>(s.max, s.min, p.inv_temperature, normalize);
}

// Pass 2: y = exp((x - max)/T)/sum, or (x - max)/T - log sum.
template <class A, class T, bool Scaled>
inline void online_normalize_row(const T* x, T* y, std::size_t n, online_partial<T> const& s,
                                 row_params<T> const& p) noexcept {
  // (Log-softmax's pass without the prefetch, as write_log_softmax.)
  const std::size_t ahead = p.log ? 0 : online_prefetch_distance<A, T>(n);
  with_online_normalizer<A, T, Scaled>(s, p, [&](auto const& f) {
    if (primitives::should_stream<A, T>(n))
      primitives::map_streaming<A>(x, y, n, f, ahead);
    else
      primitives::map<A>(x, y, n, f, ahead);
  });
}

template <class A, class T, bool Scaled>
inline void online_row(const T* x, T* y, std::size_t n, row_params<T> const& p) noexcept {
  const online_partial<T> s = p.log ? online_reduce_row<A, T, Scaled, true>(x, n, p.inv_temperature)
                                    : online_reduce_row<A, T, Scaled>(x, n, p.inv_temperature);
  if (finish_special_row<A>(s.max, primitives::is_nan(s.max), y, n, p)) return;
  if (n == 1) {  // exactly [1] / [0], as the other kernels (the shifts would leave an ulp)
    y[0] = p.log ? T(0) : T(1);
    return;
  }
  online_normalize_row<A, T, Scaled>(x, y, n, s, p);
}

}  // namespace kernels
}  // namespace smax
