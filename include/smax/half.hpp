#pragma once
// 16-bit storage types: smax::bf16 (bfloat16: 1 sign, 8 exponent, 7 fraction bits) and
// smax::fp16 (IEEE binary16: 1, 5, 10). Storage only: smax computes in float and converts at the
// edges (docs/half.md).
//
// Each is trivially copyable, standard-layout and two bytes, layout-compatible with
// std::uint16_t: a user's 16-bit buffer may be passed by pointer cast, and from_bits / to_bits
// give the bits. Conversions:
//   to float (float(h), smax::to_float(h)): exact for every one of the 65536 values; a NaN stays
//     a NaN with its sign and payload (bf16: the float with the same top 16 bits).
//   from float (bf16(f), fp16(f)): round to nearest, ties to even, whatever the rounding mode or
//     FTZ/DAZ state (integer code); overflow gives ±inf (fp16: |f| >= 65520); a NaN gives a quiet
//     NaN of the same sign (the top fraction bits kept, the quiet bit set).
// Both directions are checked exhaustively against Eigen's bfloat16 and half
// (tests/half_test.cpp).

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace smax {
namespace detail {

// The conversions on one value. Templated on a tag (a kernel passes its instruction set, the
// types below void): a kernel may only call helpers templated on its instruction set, or the
// linker could give an SSE2 caller a copy compiled with AVX flags (docs/dispatch.md).
template <class A = void>
inline std::uint32_t float_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
template <class A = void>
inline float bits_float(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <class A = void>
inline std::uint16_t bf16_bits_from_float(float f) noexcept {
  const std::uint32_t u = float_bits<A>(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  // Round to nearest even on the low 16 bits: add 0x7FFF plus the lowest kept bit. A carry into
  // the exponent is the right rounding (up to the next binade, or to inf from the largest).
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

template <class A = void>
inline std::uint16_t fp16_bits_from_float(float f) noexcept {
  const std::uint32_t u = float_bits<A>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u)  // NaN: quiet, top fraction bits kept
    return static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x03FFu));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (a >= 0x38800000u) {  // >= 2^-14: a normal fp16; rebias, round the 13 dropped bits
    const std::uint32_t r = a - 0x38000000u;  // (127 - 15) << 23
    return static_cast<std::uint16_t>(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
  }
  // Below 2^-14: a subnormal fp16 (units of 2^-24) or zero. The value is m·2^(e - 150) for the
  // 24-bit significand m, so m >> (126 - e) units, rounded to nearest even.
  const std::uint32_t e = a >> 23;
  if (e < 102) return static_cast<std::uint16_t>(sign);  // below 2^-25: rounds to 0
  const std::uint32_t m = (a & 0x007FFFFFu) | 0x00800000u;
  const std::uint32_t shift = 126 - e;  // 14 ... 24
  const std::uint32_t q = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
  return static_cast<std::uint16_t>(sign | (q + (rest > half || (rest == half && (q & 1u)))));
}

template <class A = void>
inline float float_from_bf16_bits(std::uint16_t h) noexcept {
  return bits_float<A>(std::uint32_t(h) << 16);
}

template <class A = void>
inline float float_from_fp16_bits(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x03FFu;
  if (e == 0x1F) return bits_float<A>(sign | 0x7F800000u | (m << 13));  // inf, NaN (payload kept)
  if (e != 0) return bits_float<A>(sign | ((e + 112) << 23) | (m << 13));
  // Zero or subnormal: m·2^-24, exact in float (m < 2^10).
  const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

}  // namespace detail

namespace detail {
// The two bytes and their access, shared by both types (D: the type itself).
template <class D>
struct storage16 {
  std::uint16_t bits_;  // public only so that the types stay aggregates of one member

  static constexpr D from_bits(std::uint16_t b) noexcept {
    D h{};
    h.bits_ = b;
    return h;
  }
  constexpr std::uint16_t to_bits() const noexcept { return bits_; }
};
}  // namespace detail

// bfloat16: the top half of a float.
struct bf16 : detail::storage16<bf16> {
  bf16() = default;
  explicit bf16(float f) noexcept : detail::storage16<bf16>{detail::bf16_bits_from_float<>(f)} {}
  explicit operator float() const noexcept { return detail::float_from_bf16_bits<>(bits_); }
};

// IEEE 754 binary16.
struct fp16 : detail::storage16<fp16> {
  fp16() = default;
  explicit fp16(float f) noexcept : detail::storage16<fp16>{detail::fp16_bits_from_float<>(f)} {}
  explicit operator float() const noexcept { return detail::float_from_fp16_bits<>(bits_); }
};

inline float to_float(bf16 h) noexcept { return static_cast<float>(h); }
inline float to_float(fp16 h) noexcept { return static_cast<float>(h); }

static_assert(sizeof(bf16) == 2 && alignof(bf16) == alignof(std::uint16_t) &&
                  std::is_trivially_copyable_v<bf16> && std::is_standard_layout_v<bf16>,
              "smax::bf16 must be layout-compatible with std::uint16_t");
static_assert(sizeof(fp16) == 2 && alignof(fp16) == alignof(std::uint16_t) &&
                  std::is_trivially_copyable_v<fp16> && std::is_standard_layout_v<fp16>,
              "smax::fp16 must be layout-compatible with std::uint16_t");

namespace detail {
template <class H>
inline constexpr bool is_half_v = std::is_same_v<H, bf16> || std::is_same_v<H, fp16>;
template <class H>
using if_half_t = std::enable_if_t<is_half_v<H>, int>;
}  // namespace detail

}  // namespace smax
