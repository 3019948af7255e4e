#pragma once
// Elementwise passes over a row: y = f(x) with an optional fused sum of f(x). Four vectors per
// iteration with four independent accumulators; the sum is blocked (vector partial sums over at
// most `sum_block` elements, folded into a double), so its relative error does not grow with n.

#include "partial.hpp"

namespace smax {
namespace primitives {

// Elements per first-level block: each lane of each of the four accumulators adds at most 16
// values before the block is folded into double, and the fold costs a few adds per block.
template <class T, class A>
constexpr std::size_t sum_block = 64 * xsimd::batch<T, A>::size;

// Asks for the cache lines of [p, p + bytes) to be loaded (a hint; never faults).
template <class A>
inline void prefetch(const void* p, std::size_t bytes) noexcept {
  for (std::size_t k = 0; k < bytes; k += 64)
    __builtin_prefetch(static_cast<const char*>(p) + k, 0, 3);
}

// The same with the intent to write (prefetchw): a later store then finds its line owned instead
// of waiting for it.
template <class A>
inline void prefetch_for_write(const void* p, std::size_t bytes) noexcept {
  for (std::size_t k = 0; k < bytes; k += 64)
    __builtin_prefetch(static_cast<const char*>(p) + k, 1, 3);
}

// y[i] = g(x[i], f(x[i])) for i < n (when Store) and returns the sum of f(x[i]), calling
// beside(i) once per four vectors (at i = 0, 4·width, ... while i + 4·width <= n): work that rides
// along in the same loop, a request for what comes next or another row's first pass. The tail is
// padded with `fill`, and its lanes past n are dropped from the sum whatever f makes of them.
// x == y is allowed.
template <class A, bool Store, class T, class F, class G, class Beside>
SMAX_FLATTEN inline double map_store_sum_beside(const T* x, T* y, std::size_t n, T fill, F const& f,
                                                G const& g, Beside const& beside) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  double total = 0.0;
  std::size_t i = 0;
  while (i + 4 * width <= n) {
    const std::size_t block_end = n - i > sum_block<T, A> ? i + sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    for (; i + 4 * width <= block_end; i += 4 * width) {
      beside(i);
      const batch v0 = batch::load_unaligned(x + i);
      const batch v1 = batch::load_unaligned(x + i + width);
      const batch v2 = batch::load_unaligned(x + i + 2 * width);
      const batch v3 = batch::load_unaligned(x + i + 3 * width);
      const batch e0 = f(v0), e1 = f(v1), e2 = f(v2), e3 = f(v3);
      if (Store) {
        g(v0, e0).store_unaligned(y + i);
        g(v1, e1).store_unaligned(y + i + width);
        g(v2, e2).store_unaligned(y + i + 2 * width);
        g(v3, e3).store_unaligned(y + i + 3 * width);
      }
      s0 += e0;
      s1 += e1;
      s2 += e2;
      s3 += e3;
    }
    total += detail::horizontal_sum((s0 + s1) + (s2 + s3));
  }
  batch s(T(0));
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    const batch e = f(v);
    if (Store) g(v, e).store_unaligned(y + i);
    s += e;
  }
  if (i < n) {
    const batch v = load_partial<A>(x + i, n - i, fill);
    const batch e = f(v);
    if (Store) store_partial<A>(y + i, n - i, g(v, e));
    s += zero_from<A>(e, n - i);
  }
  return total + detail::horizontal_sum(s);
}

// map_store_sum_beside whose ride-along work is map_sum's prefetches (below).
template <class A, bool Store, class T, class F, class G>
SMAX_FLATTEN inline double map_store_sum(const T* x, T* y, std::size_t n, T fill, F const& f,
                                         G const& g, std::size_t prefetch_distance = 0,
                                         T* write_ahead = nullptr) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  return map_store_sum_beside<A, Store>(x, y, n, fill, f, g, [&](std::size_t i) SMAX_INLINE_LAMBDA {
    if (prefetch_distance) prefetch<A>(x + i + prefetch_distance, 4 * width * sizeof(T));
    if (write_ahead) prefetch_for_write<A>(write_ahead + i, 4 * width * sizeof(T));
  });
}

// map_sum (below) with map_store_sum_beside's ride-along work in place of the prefetches.
template <class A, bool Store, class T, class F, class Beside>
SMAX_FLATTEN inline double map_sum_beside(const T* x, T* y, std::size_t n, T fill, F const& f,
                                          Beside const& beside) noexcept {
  using batch = xsimd::batch<T, A>;
  return map_store_sum_beside<A, Store>(
      x, y, n, fill, f, [](batch const&, batch const& e) SMAX_INLINE_LAMBDA { return e; }, beside);
}

// y[i] = f(x[i]) for i < n (when Store) and returns the sum of f(x[i]). The tail is padded with
// `fill`, and its lanes past n are dropped from the sum whatever f makes of them. x == y is allowed. With prefetch_distance > 0 every iteration
// also asks for the lines prefetch_distance elements ahead, so a compute-bound pass over cached
// data can pull in the next block meanwhile (the caller guarantees nothing; it is a hint).
// write_ahead, when given, is a row the caller writes next: the lines of write_ahead[0, n) are
// asked for with write intent meanwhile.
template <class A, bool Store, class T, class F>
SMAX_FLATTEN inline double map_sum(const T* x, T* y, std::size_t n, T fill, F const& f,
                                   std::size_t prefetch_distance = 0,
                                   T* write_ahead = nullptr) noexcept {
  using batch = xsimd::batch<T, A>;
  return map_store_sum<A, Store>(
      x, y, n, fill, f, [](batch const&, batch const& e) SMAX_INLINE_LAMBDA { return e; },
      prefetch_distance, write_ahead);
}

// y[i] = f(x[i]) for i < n; x == y is allowed. prefetch_distance as for map_sum.
template <class A, class T, class F>
SMAX_FLATTEN inline void map(const T* x, T* y, std::size_t n, F const& f,
                             std::size_t prefetch_distance = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    if (prefetch_distance) prefetch<A>(x + i + prefetch_distance, 4 * width * sizeof(T));
    const batch v0 = batch::load_unaligned(x + i);
    const batch v1 = batch::load_unaligned(x + i + width);
    const batch v2 = batch::load_unaligned(x + i + 2 * width);
    const batch v3 = batch::load_unaligned(x + i + 3 * width);
    f(v0).store_unaligned(y + i);
    f(v1).store_unaligned(y + i + width);
    f(v2).store_unaligned(y + i + 2 * width);
    f(v3).store_unaligned(y + i + 3 * width);
  }
  for (; i + width <= n; i += width) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) store_partial<A>(y + i, n - i, f(load_partial<A>(x + i, n - i, T(0))));
}

// Sum over i < n of f(a[i], b[i]) (blocked as map_sum); the tail pads a with a_padding and b with
// 0, which f must map to 0 (a row of x pads with -inf where f takes exp(x - max): exp(0 - max)
// overflows for a very negative max, and inf·0 would be NaN).
template <class A, class T, class F>
SMAX_FLATTEN inline double zip_sum(const T* a, const T* b, std::size_t n, F const& f,
                                    T a_padding = T(0)) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  double total = 0.0;
  std::size_t i = 0;
  while (i + 4 * width <= n) {
    const std::size_t block_end = n - i > sum_block<T, A> ? i + sum_block<T, A> : n;
    batch s0(T(0)), s1(T(0)), s2(T(0)), s3(T(0));
    for (; i + 4 * width <= block_end; i += 4 * width) {
      s0 += f(batch::load_unaligned(a + i), batch::load_unaligned(b + i));
      s1 += f(batch::load_unaligned(a + i + width), batch::load_unaligned(b + i + width));
      s2 += f(batch::load_unaligned(a + i + 2 * width), batch::load_unaligned(b + i + 2 * width));
      s3 += f(batch::load_unaligned(a + i + 3 * width), batch::load_unaligned(b + i + 3 * width));
    }
    total += detail::horizontal_sum((s0 + s1) + (s2 + s3));
  }
  batch s(T(0));
  for (; i + width <= n; i += width)
    s += f(batch::load_unaligned(a + i), batch::load_unaligned(b + i));
  if (i < n)
    s += f(load_partial<A>(a + i, n - i, a_padding), load_partial<A>(b + i, n - i, T(0)));
  return total + detail::horizontal_sum(s);
}

// y[i] = f(a[i], b[i]) for i < n; any of the pointers may alias.
template <class A, class T, class F>
SMAX_FLATTEN inline void zip_map(const T* a, const T* b, T* y, std::size_t n, F const& f) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  std::size_t i = 0;
  for (; i + 2 * width <= n; i += 2 * width) {
    const batch r0 = f(batch::load_unaligned(a + i), batch::load_unaligned(b + i));
    const batch r1 = f(batch::load_unaligned(a + i + width), batch::load_unaligned(b + i + width));
    r0.store_unaligned(y + i);
    r1.store_unaligned(y + i + width);
  }
  for (; i + width <= n; i += width)
    f(batch::load_unaligned(a + i), batch::load_unaligned(b + i)).store_unaligned(y + i);
  if (i < n)
    store_partial<A>(y + i, n - i,
                     f(load_partial<A>(a + i, n - i, T(0)), load_partial<A>(b + i, n - i, T(0))));
}

}  // namespace primitives
}  // namespace smax
