#pragma once
// Special-value tests on the bits of a number, not by comparison. Under -ffast-math (more exactly
// -ffinite-math-only, which -ffast-math implies) the compiler may assume that no value is NaN or
// infinite and fold `x != x`, `x == inf` and an unordered SIMD compare to false (xsimd issue 515
// is this failure in xsimd::isnan). A user who compiles smax's headers in such a translation unit
// would then lose the bad-input contract (NaN rows, masks, all-masked rows). Integer tests on the
// bits cannot be folded that way.
//
// The scalar tests cost what a comparison costs and are used everywhere. The SIMD NaN test takes
// an integer AND and compare instead of one unordered compare, so it is used only where the
// compiler may fold the compare (__FINITE_MATH_ONLY__): ordinary builds keep xsimd::isnan.

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../config.hpp"
#include "../detail/xsimd_compat.hpp"

namespace smax {
namespace primitives {

template <class T>
using bits_of_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
SMAX_ALWAYS_INLINE bits_of_t<T> bits_of(T x) noexcept {
  bits_of_t<T> b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

template <class T>
constexpr bits_of_t<T> sign_bit = bits_of_t<T>(1) << (8 * sizeof(T) - 1);
template <class T>
constexpr bits_of_t<T> exponent_bits = sizeof(T) == 4 ? bits_of_t<T>(0x7f800000u)
                                                      : bits_of_t<T>(0x7ff0000000000000ull);

template <class T>
SMAX_ALWAYS_INLINE bool is_nan(T x) noexcept {
  return (bits_of(x) & ~sign_bit<T>) > exponent_bits<T>;
}
template <class T>
SMAX_ALWAYS_INLINE bool is_pos_inf(T x) noexcept {
  return bits_of(x) == exponent_bits<T>;
}
template <class T>
SMAX_ALWAYS_INLINE bool is_neg_inf(T x) noexcept {
  return bits_of(x) == (sign_bit<T> | exponent_bits<T>);
}
// Neither NaN nor ±inf.
template <class T>
SMAX_ALWAYS_INLINE bool is_finite(T x) noexcept {
  return (bits_of(x) & ~sign_bit<T>) < exponent_bits<T>;
}

#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#define SMAX_FINITE_MATH_ONLY 1
#else
#define SMAX_FINITE_MATH_ONLY 0
#endif

// NaN lanes of v: a mask to OR together and test with xsimd::any (under -ffinite-math-only a
// mask of the integer lanes of the same width, which is all these callers need).
template <class A, class T>
SMAX_ALWAYS_INLINE auto is_nan(xsimd::batch<T, A> const& v) noexcept {
#if SMAX_FINITE_MATH_ONLY
  using I = smax::detail::integer_of_t<T>;
  using ibatch = xsimd::batch<I, A>;
  const ibatch magnitude = smax::detail::bitcast<I>(v) & ibatch(static_cast<I>(~sign_bit<T>));
  return magnitude > ibatch(static_cast<I>(exponent_bits<T>));
#else
  return xsimd::isnan(v);
#endif
}
// result, with NaN wherever v is NaN. Elementwise maps propagate a NaN input through their
// arithmetic; under -ffinite-math-only the compiler may drop it (a select or clamp on a compare it
// assumes ordered), so the NaN lanes are OR-ed back in on the bits. Ordinary builds: result.
template <class A, class T>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> keep_nan(xsimd::batch<T, A> const& v,
                                               xsimd::batch<T, A> const& result) noexcept {
#if SMAX_FINITE_MATH_ONLY
  using I = smax::detail::integer_of_t<T>;
  using ibatch = xsimd::batch<I, A>;
  const ibatch nan_lanes = xsimd::select(is_nan(v), ibatch(I(-1)), ibatch(I(0)));
  return smax::detail::bitcast<T>(smax::detail::bitcast<I>(result) | nan_lanes);
#else
  (void)v;
  return result;
#endif
}

template <class A, class T>
using nan_mask = decltype(is_nan(std::declval<xsimd::batch<T, A>>()));

}  // namespace primitives
}  // namespace smax
