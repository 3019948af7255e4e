#pragma once
// Partial vectors: the last n % width elements of a row go through the same batch arithmetic as
// the rest, so an element's result never depends on n or on its lane position. xsimd 8.1 has no
// masked loads, so the tail is staged through a register-sized buffer.

#include "../detail/xsimd_compat.hpp"

namespace smax {
namespace primitives {

// Loads count < width elements, the other lanes set to fill.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> load_partial(const T* p, std::size_t count, T fill) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  alignas(64) T lanes[width];
  for (std::size_t i = 0; i < width; ++i) lanes[i] = i < count ? p[i] : fill;
  return xsimd::batch<T, A>::load_unaligned(lanes);
}

// v with the lanes from count on set to 0 (a tail's contribution to a sum, whatever f made of
// the fill lanes).
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> zero_from(xsimd::batch<T, A> const& v,
                                                std::size_t count) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  alignas(64) T lanes[width];
  v.store_unaligned(lanes);
  for (std::size_t i = count; i < width; ++i) lanes[i] = T(0);
  return xsimd::batch<T, A>::load_unaligned(lanes);
}

// Stores the first count < width lanes.
template <class A, class T>
SMAX_ALWAYS_INLINE void store_partial(T* p, std::size_t count,
                                      xsimd::batch<T, A> const& v) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  alignas(64) T lanes[width];
  v.store_unaligned(lanes);
  for (std::size_t i = 0; i < count; ++i) p[i] = lanes[i];
}

}  // namespace primitives
}  // namespace smax
