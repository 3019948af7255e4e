#pragma once
// Rows of at most four registers, held in registers from their load to their store: the short
// attention rows, where loads, loops and calls would cost more than the arithmetic.
//
// The number of registers is a template parameter and every loop over them is unrolled at compile
// time (unroll). With a run-time count GCC kept the row in a stack array, copied it there with a
// memcpy call and read it back through failed store forwarding, which made a 16-element softmax
// markedly slower.

#include <type_traits>
#include <utility>

#include "partial.hpp"
#include "special.hpp"

namespace smax {
namespace primitives {

constexpr std::size_t max_row_registers = 4;

template <class F, std::size_t... J>
SMAX_ALWAYS_INLINE void unroll_indices(F&& f, std::index_sequence<J...>) noexcept {
  (f(std::integral_constant<std::size_t, J>{}), ...);
}

// f(std::integral_constant<std::size_t, j>{}) for j = 0, 1, ..., Count - 1, in that order.
template <std::size_t Count, class F>
SMAX_ALWAYS_INLINE void unroll(F&& f) noexcept {
  unroll_indices(f, std::make_index_sequence<Count>{});
}

// v[0] + ... + v[Count - 1] added as a balanced tree (Count <= 4): two adds deep for four.
template <class B, std::size_t Count>
SMAX_ALWAYS_INLINE B tree_sum(B const (&v)[Count]) noexcept {
  static_assert(Count >= 1 && Count <= max_row_registers, "1 to 4 registers");
  if constexpr (Count == 1)
    return v[0];
  else if constexpr (Count == 2)
    return v[0] + v[1];
  else if constexpr (Count == 3)
    return (v[0] + v[1]) + v[2];
  else
    return (v[0] + v[1]) + (v[2] + v[3]);
}

// A row of n elements, (Count - 1)·width < n <= Count·width, in Count registers; the lanes past n
// hold the fill value given to the constructor.
template <class A, class T, std::size_t Count>
struct register_row {
  using batch = xsimd::batch<T, A>;
  static constexpr std::size_t width = batch::size;
  static_assert(Count >= 1 && Count <= max_row_registers, "a register row holds 1 to 4 registers");

  batch v[Count];
  std::size_t last;  // lanes of v[Count - 1] inside the row, 1..width

  register_row() = default;  // load() before use
  SMAX_ALWAYS_INLINE register_row(const T* x, std::size_t n, T fill) noexcept { load(x, n, fill); }

  SMAX_ALWAYS_INLINE void load(const T* x, std::size_t n, T fill) noexcept {
    last = n - (Count - 1) * width;
    unroll<Count - 1>([&](auto j)
                          SMAX_INLINE_LAMBDA { v[j] = batch::load_unaligned(x + j * width); });
    const T* tail = x + (Count - 1) * width;
    v[Count - 1] = last == width ? batch::load_unaligned(tail) : load_partial<A>(tail, last, fill);
  }

  // v[j] = f(v[j]) for every register.
  template <class F>
  SMAX_ALWAYS_INLINE void transform(F&& f) noexcept {
    unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { v[j] = f(v[j]); });
  }

  // v[j] = f(v[j]) for every register; returns the lane-wise sum of the new values (tree_sum:
  // no leading 0 + and two adds deep for four registers, on the short rows' latency chain).
  template <class F>
  SMAX_ALWAYS_INLINE batch transform_sum(F&& f) noexcept {
    unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { v[j] = f(v[j]); });
    return tree_sum(v);
  }

  // The lane-wise sum of f(v[j]) over the registers (tree_sum), v unchanged.
  template <class F>
  SMAX_ALWAYS_INLINE batch sum(F&& f) const noexcept {
    batch t[Count];
    unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { t[j] = f(v[j]); });
    return tree_sum(t);
  }

  // The lane-wise maximum over the registers (fill lanes included) and whether any lane is NaN.
  struct max_result {
    batch max;
    bool has_nan;
  };
  SMAX_ALWAYS_INLINE max_result lane_max() const noexcept {
    batch m = v[0];
    auto nan = primitives::is_nan(v[0]);
    unroll<Count - 1>([&](auto j) SMAX_INLINE_LAMBDA {
      m = xsimd::max(m, v[j + 1]);
      nan = nan | primitives::is_nan(v[j + 1]);
    });
    return {m, xsimd::any(nan)};
  }

  // Stores the n elements of the row to y (the fill lanes are not written).
  SMAX_ALWAYS_INLINE void store(T* y) const noexcept {
    unroll<Count - 1>([&](auto j) SMAX_INLINE_LAMBDA { v[j].store_unaligned(y + j * width); });
    T* tail = y + (Count - 1) * width;
    if (last == width)
      v[Count - 1].store_unaligned(tail);
    else
      store_partial<A>(tail, last, v[Count - 1]);
  }
};

// Calls f(std::integral_constant<std::size_t, Count>{}) with Count = ceil(n / width): the
// register_row<A, T, Count> that holds a row of n <= max_row_registers·width elements. An empty
// row calls nothing.
template <class A, class T, class F>
SMAX_ALWAYS_INLINE void with_register_count(std::size_t n, F&& f) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  switch ((n + width - 1) / width) {
    case 0:
      return;
    case 1:
      return f(std::integral_constant<std::size_t, 1>{});
    case 2:
      return f(std::integral_constant<std::size_t, 2>{});
    case 3:
      return f(std::integral_constant<std::size_t, 3>{});
    default:
      return f(std::integral_constant<std::size_t, 4>{});
  }
}

}  // namespace primitives
}  // namespace smax
