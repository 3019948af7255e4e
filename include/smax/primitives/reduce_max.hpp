#pragma once
// Row maximum with explicit NaN detection (docs/edge_cases.md): SIMD max treats NaN differently on
// x86 and NEON and by operand order, so NaN is flagged separately and never relied on to propagate.

#include "map_reduce.hpp"
#include "partial.hpp"
#include "special.hpp"

namespace smax {
namespace primitives {

template <class T>
struct max_result {
  T max;         // -inf for an empty or fully masked row
  bool has_nan;  // any NaN in the row
};

// With lanes != nullptr, also stores the 4·width lane maxima there (each the maximum of a disjoint
// set of positions, so the values of distinct elements; -inf when empty): sparsemax bounds its
// threshold with them.
template <class A, class T>
SMAX_FLATTEN inline max_result<T> reduce_max(const T* x, std::size_t n,
                                             T* lanes = nullptr) noexcept {
  using batch = xsimd::batch<T, A>;
  using mask = primitives::nan_mask<A, T>;
  constexpr std::size_t width = batch::size;
  const T neg_inf = -__builtin_huge_val();
  // Four accumulators hide the latency of max; the pass is bound by loads.
  batch m0(neg_inf), m1(neg_inf), m2(neg_inf), m3(neg_inf);
  mask nan0(false), nan1(false);
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    const batch v0 = batch::load_unaligned(x + i);
    const batch v1 = batch::load_unaligned(x + i + width);
    const batch v2 = batch::load_unaligned(x + i + 2 * width);
    const batch v3 = batch::load_unaligned(x + i + 3 * width);
    m0 = xsimd::max(m0, v0);
    m1 = xsimd::max(m1, v1);
    m2 = xsimd::max(m2, v2);
    m3 = xsimd::max(m3, v3);
    nan0 = nan0 | primitives::is_nan(v0) | primitives::is_nan(v1);
    nan1 = nan1 | primitives::is_nan(v2) | primitives::is_nan(v3);
  }
  for (; i + width <= n; i += width) {
    const batch v = batch::load_unaligned(x + i);
    m0 = xsimd::max(m0, v);
    nan0 = nan0 | primitives::is_nan(v);
  }
  if (i < n) {
    const batch v = load_partial<A>(x + i, n - i, neg_inf);
    m1 = xsimd::max(m1, v);
    nan1 = nan1 | primitives::is_nan(v);
  }
  if (lanes != nullptr) {
    m0.store_unaligned(lanes);
    m1.store_unaligned(lanes + width);
    m2.store_unaligned(lanes + 2 * width);
    m3.store_unaligned(lanes + 3 * width);
  }
  const batch m = xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3));
  return {detail::horizontal_max(m), xsimd::any(nan0 | nan1)};
}

template <class T>
struct range_result {
  T max;  // -inf for an empty or fully masked row
  T min;  // +inf for an empty row; only when asked for
};

// The accumulators of reduce_range: four for the maximum, two for the minimum. The maximum and
// minimum of ordered values do not depend on the order they come in, so a range may be gathered
// in pieces, or beside another pass (the blocked softmax takes the next block's range while it
// exponentiates this one).
template <class A, bool Min, class T>
struct range_accumulator {
  using batch = xsimd::batch<T, A>;
  // (Not brace-initialised: xsimd reads braces as a list of lanes.)
  batch m0 = batch(T(-__builtin_huge_val())), m1 = m0, m2 = m0, m3 = m0;
  batch l0 = batch(T(__builtin_huge_val())), l1 = l0;

  SMAX_ALWAYS_INLINE void add4(batch const& v0, batch const& v1, batch const& v2,
                               batch const& v3) noexcept {
    m0 = xsimd::max(m0, v0);
    m1 = xsimd::max(m1, v1);
    m2 = xsimd::max(m2, v2);
    m3 = xsimd::max(m3, v3);
    if (Min) {
      l0 = xsimd::min(l0, xsimd::min(v0, v1));
      l1 = xsimd::min(l1, xsimd::min(v2, v3));
    }
  }
  // Four vectors from x.
  SMAX_ALWAYS_INLINE void add4(const T* x) noexcept {
    constexpr std::size_t width = batch::size;
    add4(batch::load_unaligned(x), batch::load_unaligned(x + width),
         batch::load_unaligned(x + 2 * width), batch::load_unaligned(x + 3 * width));
  }
  SMAX_ALWAYS_INLINE void add(batch const& v) noexcept {
    m0 = xsimd::max(m0, v);
    if (Min) l0 = xsimd::min(l0, v);
  }
  // count < width values at rest.
  SMAX_ALWAYS_INLINE void add_partial(const T* rest, std::size_t count) noexcept {
    m1 = xsimd::max(m1, load_partial<A>(rest, count, T(-__builtin_huge_val())));
    if (Min) l1 = xsimd::min(l1, load_partial<A>(rest, count, T(__builtin_huge_val())));
  }
  // [x + from, x + n) in whole vectors and a partial one.
  SMAX_ALWAYS_INLINE void add_rest(const T* x, std::size_t from, std::size_t n) noexcept {
    constexpr std::size_t width = batch::size;
    std::size_t i = from;
    for (; i + 4 * width <= n; i += 4 * width) add4(x + i);
    for (; i + width <= n; i += width) add(batch::load_unaligned(x + i));
    if (i < n) add_partial(x + i, n - i);
  }
  SMAX_ALWAYS_INLINE range_result<T> result() const noexcept {
    const batch m = xsimd::max(xsimd::max(m0, m1), xsimd::max(m2, m3));
    const T min = Min ? detail::horizontal_min(xsimd::min(l0, l1)) : T(__builtin_huge_val());
    return {detail::horizontal_max(m), min};
  }
};

// The range of next[0, n) gathered beside a pass over another part of the row (map_sum_beside):
// called with i = 0, 4·width, ... as that pass steps through its len elements, it takes the four
// vectors at next + i where they lie inside [0, n); finish(len) takes the rest.
template <class A, bool Min, class T>
struct range_beside {
  static constexpr std::size_t step = 4 * xsimd::batch<T, A>::size;
  const T* next;
  std::size_t n;
  range_accumulator<A, Min, T> acc{};

  SMAX_ALWAYS_INLINE void operator()(std::size_t i) noexcept {
    if (i + step <= n) acc.add4(next + i);
  }
  SMAX_ALWAYS_INLINE range_result<T> finish(std::size_t len) noexcept {
    acc.add_rest(next, (len < n ? len : n) / step * step, n);
    return acc.result();
  }
};

// The loop of reduce_range over values that callbacks make: at(i) the vector at i (a load, or a
// computation that also stores it), tail(i, count) a pointer to the count < width values at i
// (made where they are not in memory already), ahead(i) once per four vectors (a request for
// what comes next, or nothing).
template <class A, bool Min, class T, class At, class Tail, class Ahead>
SMAX_FLATTEN inline range_result<T> range_of(std::size_t n, At const& at, Tail const& tail,
                                             Ahead const& ahead) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  range_accumulator<A, Min, T> acc;
  std::size_t i = 0;
  for (; i + 4 * width <= n; i += 4 * width) {
    ahead(i);
    acc.add4(at(i), at(i + width), at(i + 2 * width), at(i + 3 * width));
  }
  for (; i + width <= n; i += width) acc.add(at(i));
  if (i < n) acc.add_partial(tail(i, n - i), n - i);
  return acc.result();
}

// Largest (and, with Min, smallest) element, one load and one or two operations per element:
// NaN is not flagged, and a NaN element may or may not show up in either. The caller finds NaN
// afterwards, where it costs nothing (in the sum of exponentials, which is NaN exactly when the
// row holds one) or when the row is special anyway (max = -inf: see kernels::has_nan).
template <class A, bool Min, class T>
SMAX_FLATTEN inline range_result<T> reduce_range(const T* x, std::size_t n) noexcept {
  return range_of<A, Min, T>(
      n,
      [x](std::size_t i) SMAX_INLINE_LAMBDA { return xsimd::batch<T, A>::load_unaligned(x + i); },
      [x](std::size_t i, std::size_t) SMAX_INLINE_LAMBDA { return x + i; },
      [](std::size_t) SMAX_INLINE_LAMBDA {});
}

// z = x + g stored (z may be x or g) and reduce_range of z, in one pass: a row's first pass when
// its values are a sum of two inputs (Gumbel-softmax's x + noise). Asks for x[i + next_x] and
// g[i + next_g] as it reads x[i], g[i] where those distances are not 0 (a hint: never faults).
template <class A, bool Min, class T>
SMAX_FLATTEN inline range_result<T> add_reduce_range(const T* x, const T* g, T* z, std::size_t n,
                                                     std::size_t next_x = 0,
                                                     std::size_t next_g = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  return range_of<A, Min, T>(
      n,
      [=](std::size_t i) SMAX_INLINE_LAMBDA {
        const batch v = batch::load_unaligned(x + i) + batch::load_unaligned(g + i);
        v.store_unaligned(z + i);
        return v;
      },
      [=](std::size_t i, std::size_t count) SMAX_INLINE_LAMBDA {
        store_partial<A>(z + i, count,
                         load_partial<A>(x + i, count, T(0)) + load_partial<A>(g + i, count, T(0)));
        return static_cast<const T*>(z + i);
      },
      [=](std::size_t i) SMAX_INLINE_LAMBDA {
        if (next_x) prefetch<A>(x + i + next_x, 4 * batch::size * sizeof(T));
        if (next_g) prefetch<A>(g + i + next_g, 4 * batch::size * sizeof(T));
      });
}

}  // namespace primitives
}  // namespace smax
