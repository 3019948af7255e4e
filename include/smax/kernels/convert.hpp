#pragma once
// Conversions between float and the 16-bit storage types (smax/half.hpp) for the 16-bit forms of
// every family (api/half.hpp): widen (16-bit to float, exact) and narrow (float to 16-bit, round
// to nearest even, NaN kept NaN with its sign), a vector at a time: the same bits as smax::bf16 /
// smax::fp16 (one value at a time) whatever the rounding mode or the FTZ/DAZ state, which the
// tests check on every 16-bit value and on a sweep of floats, with FTZ/DAZ set and clear.
//
// The hardware's conversions where they give those bits: fp16 by F16C (vcvtph2ps, vcvtps2ph with
// the rounding in the immediate, not MXCSR) on AVX2 (which smax's avx2 set includes, as
// x86-64-v3 does) and AVX-512F; bf16 narrowing by AVX-512 BF16's vcvtneps2bf16 where the CPU has
// it (not part of the avx512bw set: the CPU is asked once), with the float subnormals it flushes
// to zero rounded by the integer code. Integer code elsewhere (SSE2, NEON, bf16 widening, which
// is a shift).

#include <cstddef>
#include <cstdint>
#include <type_traits>

// Compilers that know vcvtneps2bf16's intrinsic and target.
#if defined(__x86_64__) || defined(__i386__)
#if (defined(__clang__) && __clang_major__ >= 9) || (!defined(__clang__) && __GNUC__ >= 10)
#define SMAX_DETAIL_AVX512_BF16 1
#endif
#endif

#include "../config.hpp"
#include "../detail/dispatch_declarations.hpp"
#include "../detail/xsimd_compat.hpp"
#include "../half.hpp"

namespace smax {
namespace kernels {
namespace convert_detail {

template <class A>
using lanes = xsimd::batch<std::int32_t, A>;

// One vector of 16-bit values, each zero-extended into a 32-bit lane.
template <class A>
SMAX_ALWAYS_INLINE lanes<A> load_u16(const std::uint16_t* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_base_of<xsimd::avx512bw, A>::value) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else if constexpr (std::is_base_of<xsimd::avx2, A>::value) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else if constexpr (std::is_base_of<xsimd::sse2, A>::value && lanes<A>::size == 4) {
    return _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                              _mm_setzero_si128());
  }
#elif defined(__aarch64__)
  if constexpr (std::is_base_of<xsimd::neon64, A>::value) {
    return vreinterpretq_s32_u32(vmovl_u16(vld1_u16(p)));
  }
#endif
  alignas(64) std::int32_t v[lanes<A>::size];
  for (std::size_t i = 0; i < lanes<A>::size; ++i) v[i] = p[i];
  return lanes<A>::load_aligned(v);
}

// Stores the low 16 bits of each lane (every lane holds a value in [0, 0xFFFF]). Streaming: past
// the cache, p aligned to half the register size (a plain store where the instruction set has no
// streaming store of that width).
template <class A, bool Streaming = false>
SMAX_ALWAYS_INLINE void store_u16(std::uint16_t* p, lanes<A> const& v) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_base_of<xsimd::avx512bw, A>::value) {
    const __m256i packed = _mm512_cvtepi32_epi16(v);
    if constexpr (Streaming)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(p), packed);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), packed);
    return;
  } else if constexpr (std::is_base_of<xsimd::avx2, A>::value) {
    const __m256i packed = _mm256_packus_epi32(v, v);  // per 128-bit half: a0..a3 a0..a3
    const __m128i low = _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
    if constexpr (Streaming)
      _mm_stream_si128(reinterpret_cast<__m128i*>(p), low);
    else
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p), low);
    return;
  } else if constexpr (std::is_base_of<xsimd::sse2, A>::value && lanes<A>::size == 4) {
    // SSE2 has no unsigned 32-to-16 pack: sign-extend the low halves, then a signed pack keeps
    // their bits.
    const __m128i s = _mm_srai_epi32(_mm_slli_epi32(v, 16), 16);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(s, s));
    return;
  }
#elif defined(__aarch64__)
  if constexpr (std::is_base_of<xsimd::neon64, A>::value) {
    vst1_u16(p, vmovn_u32(vreinterpretq_u32_s32(v)));
    return;
  }
#endif
  alignas(64) std::int32_t lane[lanes<A>::size];
  v.store_aligned(lane);
  for (std::size_t i = 0; i < lanes<A>::size; ++i) p[i] = static_cast<std::uint16_t>(lane[i]);
}

// Lane masks and blends by integer arithmetic (xsimd 8.1's select on integer lanes does not
// compile for AVX-512 with GCC at -O0, where its blend intrinsics are macros).
// All ones where v < 0, zero elsewhere.
template <class A>
SMAX_ALWAYS_INLINE lanes<A> negative_mask(lanes<A> const& v) noexcept {
  return v >> 31;
}
// a where m is all ones, b where it is zero.
template <class A>
SMAX_ALWAYS_INLINE lanes<A> pick(lanes<A> const& m, lanes<A> const& a, lanes<A> const& b) noexcept {
  return (a & m) | (b & ~m);
}

template <class A>
SMAX_ALWAYS_INLINE xsimd::batch<float, A> widen(lanes<A> const& h, bf16*) noexcept {
  return detail::bitcast<float>(h << 16);
}

template <class A>
SMAX_ALWAYS_INLINE xsimd::batch<float, A> widen(lanes<A> const& h, fp16*) noexcept {
  const lanes<A> magnitude = (h & lanes<A>(0x7FFF)) << 13;
  const lanes<A> exponent = h & lanes<A>(0x7C00);
  // Normal: rebias the exponent by 127 - 15; inf and NaN (exponent 31) by 255 - 31, which keeps
  // the payload; zero and subnormals (exponent 0) are m·2^-24, exact in float.
  const lanes<A> special = ~negative_mask<A>(exponent - lanes<A>(0x7C00));
  lanes<A> bits = magnitude + pick<A>(special, lanes<A>(224 << 23), lanes<A>(112 << 23));
  const xsimd::batch<float, A> small =
      xsimd::to_float(h & lanes<A>(0x03FF)) * xsimd::batch<float, A>(5.9604644775390625e-8f);
  bits = pick<A>(negative_mask<A>(exponent - lanes<A>(1)), detail::bitcast<std::int32_t>(small),
                 bits);
  return detail::bitcast<float>(bits | ((h & lanes<A>(0x8000)) << 16));
}

template <class A>
SMAX_ALWAYS_INLINE lanes<A> narrow(xsimd::batch<float, A> const& f, bf16*) noexcept {
  const lanes<A> u = detail::bitcast<std::int32_t>(f);
  const lanes<A> top = u >> 16 & lanes<A>(0xFFFF), low = u & lanes<A>(0xFFFF);
  // Round up when the low 16 bits exceed 0x8000, or equal it with an odd kept bit:
  // low + (top & 1) > 0x8000.
  const lanes<A> up =
      ~negative_mask<A>(low + (top & lanes<A>(1)) - lanes<A>(0x8001)) & lanes<A>(1);
  const lanes<A> nan = negative_mask<A>(lanes<A>(0x7F800000) - (u & lanes<A>(0x7FFFFFFF)));
  return pick<A>(nan, top | lanes<A>(0x0040), (top + up) & lanes<A>(0xFFFF));
}

template <class A>
SMAX_ALWAYS_INLINE lanes<A> narrow(xsimd::batch<float, A> const& f, fp16*) noexcept {
  using floats = xsimd::batch<float, A>;
  const lanes<A> u = detail::bitcast<std::int32_t>(f);
  const lanes<A> a = u & lanes<A>(0x7FFFFFFF);
  const lanes<A> sign = u >> 16 & lanes<A>(0x8000);
  // Normal fp16 (|f| >= 2^-14): rebias, round the 13 dropped bits to nearest even.
  const lanes<A> r = a - lanes<A>(0x38000000);
  const lanes<A> normal = (r + lanes<A>(0x0FFF) + (r >> 13 & lanes<A>(1))) >> 13;
  // Below 2^-14: 0.5 + |f| rounds |f| to a multiple of 2^-24 (the spacing of floats in
  // [0.5, 1)) to nearest even, in integer-exact float arithmetic whatever the FTZ/DAZ state (a
  // float subnormal flushed to 0 rounds to 0 anyway); the fraction bits count the units.
  const lanes<A> subnormal =
      detail::bitcast<std::int32_t>(detail::bitcast<float>(a) + floats(0.5f)) -
      lanes<A>(0x3F000000);
  // The differences below stay within int32 for every a in [0, 2^31).
  lanes<A> h = pick<A>(~negative_mask<A>(a - lanes<A>(0x38800000)), normal, subnormal);
  h = pick<A>(~negative_mask<A>(a - lanes<A>(0x477FF000)), lanes<A>(0x7C00), h);  // >= 65520: inf
  h = pick<A>(negative_mask<A>(lanes<A>(0x7F800000) - a),
              lanes<A>(0x7E00) | (a >> 13 & lanes<A>(0x03FF)), h);  // NaN
  return h | sign;
}

#if defined(SMAX_DETAIL_AVX512_BF16)
// float to bf16 by vcvtneps2bf16 (round to nearest even, NaN quieted with its payload's top bits,
// MXCSR not consulted), 16 at a time. The instruction flushes float subnormals to zero: a row
// holding one is converted again by the integer code (checked on the whole row at once, which
// costs a tenth of the conversion; a branch per vector cost half again). Returns how many floats
// it converted: n rounded down to 16, or 0 when the row holds a subnormal. Its own function
// because the instruction needs its target attribute; never inlined, as map_to_bf16_avx512.
template <class A>
__attribute__((target("avx512bf16"), noinline)) std::size_t narrow_bf16_avx512(
    const float* from, std::uint16_t* to, std::size_t n) noexcept {
  // Subnormal: |f| in [1, 0x7FFFFF] as bits, i.e. (|f| - 1) < 0x7FFFFF unsigned, on the bits
  // (vfpclassps would see zero under DAZ).
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                largest_subnormal = _mm512_set1_epi32(0x007FFFFF);
  __mmask16 subnormal = 0;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 f = _mm512_loadu_ps(from + i);
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(f), magnitude);
    subnormal |= _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, one), largest_subnormal);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), (__m256i)_mm512_cvtneps_pbh(f));
  }
  return subnormal != 0 ? 0 : i;
}
#endif

// One vector of 16-bit values as floats (exact); fp16 by the hardware where it has it (which
// quiets a signalling NaN: see map_through_float).
template <class A, class H>
SMAX_ALWAYS_INLINE xsimd::batch<float, A> load_widened(const H* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
#if defined(__F16C__)
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx2, A>::value &&
                !std::is_base_of<xsimd::avx512bw, A>::value) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
#endif
#endif
  return widen<A>(load_u16<A>(reinterpret_cast<const std::uint16_t*>(p)), static_cast<H*>(nullptr));
}

// The 16-bit bits of a vector of floats (round to nearest even, as narrow): fp16 by the
// hardware where it has it (the rounding in the immediate), bf16 by the integer code
// (vcvtneps2bf16 would flush float subnormals, which a softmax output can be).
template <class A, class H>
SMAX_ALWAYS_INLINE lanes<A> narrowed(xsimd::batch<float, A> const& f) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  [[maybe_unused]] constexpr int nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    return _mm512_cvtepu16_epi32(_mm512_cvtps_ph(f, nearest));
  }
#if defined(__F16C__)
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx2, A>::value &&
                !std::is_base_of<xsimd::avx512bw, A>::value) {
    return _mm256_cvtepu16_epi32(_mm256_cvtps_ph(f, nearest));
  }
#endif
#endif
  return narrow<A>(f, static_cast<H*>(nullptr));
}

#if defined(SMAX_DETAIL_AVX512_BF16)
// map_through_float's loop for bf16 on AVX-512 with AVX-512 BF16, from entry i (y + i aligned to
// 32 bytes when stream) to the last whole pair of vectors; returns where it stopped. The results
// are narrowed by vcvtneps2bf16 (in a softmax pass the integer rounding took as long as the rest
// of the pass), but a pair of vectors holding a float subnormal, which the instruction would
// flush, by the integer code. Never inlined: clang's flatten (map_through_float) would inline it
// into a caller without the target and then fail to select the instruction (clang 14 crashes).
template <class A, class F>
__attribute__((target("avx512bf16"), noinline)) std::size_t map_to_bf16_avx512(
    const bf16* x, bf16* y, std::size_t i, std::size_t n, F const& f, bool stream) noexcept {
  const auto* from = reinterpret_cast<const std::uint16_t*>(x);
  auto* to = reinterpret_cast<std::uint16_t*>(y);
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), one = _mm512_set1_epi32(1),
                largest_subnormal = _mm512_set1_epi32(0x007FFFFF);
  auto results = [&](std::size_t at) SMAX_INLINE_LAMBDA {
    return f(widen<A>(load_u16<A>(from + at), static_cast<bf16*>(nullptr)));
  };
  auto subnormal = [&](__m512 r) SMAX_INLINE_LAMBDA {
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(r), magnitude);
    return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, one), largest_subnormal);
  };
  auto store = [&](std::size_t at, __m256i h) SMAX_INLINE_LAMBDA {
    if (stream)
      _mm256_stream_si256(reinterpret_cast<__m256i*>(to + at), h);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + at), h);
  };
  for (; i + 32 <= n; i += 32) {
    const xsimd::batch<float, A> r0 = results(i), r1 = results(i + 16);
    if ((subnormal(r0) | subnormal(r1)) != 0) {
      store(i, _mm512_cvtepi32_epi16(narrow<A>(r0, static_cast<bf16*>(nullptr))));
      store(i + 16, _mm512_cvtepi32_epi16(narrow<A>(r1, static_cast<bf16*>(nullptr))));
    } else {
      store(i, (__m256i)_mm512_cvtneps_pbh(r0));
      store(i + 16, (__m256i)_mm512_cvtneps_pbh(r1));
    }
  }
  return i;
}
#endif

}  // namespace convert_detail

template <class A>
struct convert_table {
  // to[i] = float(from[i]) for i < n (exact).
  static void widen(const bf16* from, float* to, std::size_t n) noexcept;
  static void widen(const fp16* from, float* to, std::size_t n) noexcept;
  // to[i] = H(from[i]) for i < n (round to nearest even).
  static void narrow(const float* from, bf16* to, std::size_t n) noexcept;
  static void narrow(const float* from, fp16* to, std::size_t n) noexcept;

 private:
  template <class H>
  static void widen_row(const H* from, float* to, std::size_t n) noexcept;
  template <class H>
  static void narrow_row(const float* from, H* to, std::size_t n) noexcept;
};

template <class A>
template <class H>
void convert_table<A>::widen_row(const H* from, float* to, std::size_t n) noexcept {
  constexpr std::size_t width = xsimd::batch<float, A>::size;
  const auto* bits = reinterpret_cast<const std::uint16_t*>(from);
  std::size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  // vcvtph2ps quiets a signalling NaN (exponent 31, quiet bit clear, fraction not 0), whose bits
  // the conversion keeps: a row holding one is converted again by the integer code (checked on
  // the whole row at once, as narrow_bf16_avx512 does).
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    const __m256i top = _mm256_set1_epi16(0x7E00), signalling = _mm256_set1_epi16(0x7C00),
                  fraction = _mm256_set1_epi16(0x01FF);
    __m256i found = _mm256_setzero_si256();
    for (; i + 16 <= n; i += 16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + i));
      const __m256i nan_like = _mm256_cmpeq_epi16(_mm256_and_si256(h, top), signalling);
      found = _mm256_or_si256(found, _mm256_and_si256(nan_like, _mm256_and_si256(h, fraction)));
      _mm512_storeu_ps(to + i, _mm512_cvtph_ps(h));
    }
    if (!_mm256_testz_si256(found, found)) i = 0;
  }
#if defined(__F16C__)
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx2, A>::value &&
                !std::is_base_of<xsimd::avx512bw, A>::value) {
    const __m128i top = _mm_set1_epi16(0x7E00), signalling = _mm_set1_epi16(0x7C00),
                  fraction = _mm_set1_epi16(0x01FF);
    __m128i found = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bits + i));
      const __m128i nan_like = _mm_cmpeq_epi16(_mm_and_si128(h, top), signalling);
      found = _mm_or_si128(found, _mm_and_si128(nan_like, _mm_and_si128(h, fraction)));
      _mm256_storeu_ps(to + i, _mm256_cvtph_ps(h));
    }
    if (!_mm_testz_si128(found, found)) i = 0;
  }
#endif
#endif
  for (; i + width <= n; i += width)
    convert_detail::widen<A>(convert_detail::load_u16<A>(bits + i), static_cast<H*>(nullptr))
        .store_unaligned(to + i);
  // The tail counted down: with n a compile-time constant, GCC 12 -O3 -Wall warned about an
  // `i < n` tail's iteration count (-Waggressive-loop-optimizations) after inlining.
  for (std::size_t rest = n - i; rest != 0; --rest, ++i)
    to[i] = std::is_same<H, bf16>::value ? detail::float_from_bf16_bits<A>(bits[i])
                                         : detail::float_from_fp16_bits<A>(bits[i]);
}

template <class A>
template <class H>
void convert_table<A>::narrow_row(const float* from, H* to, std::size_t n) noexcept {
  constexpr std::size_t width = xsimd::batch<float, A>::size;
  auto* bits = reinterpret_cast<std::uint16_t*>(to);
  std::size_t i = 0;
#if defined(__x86_64__) || defined(__i386__)
  [[maybe_unused]] constexpr int nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    for (; i + 16 <= n; i += 16)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(bits + i),
                          _mm512_cvtps_ph(_mm512_loadu_ps(from + i), nearest));
  }
#if defined(__F16C__)
  if constexpr (std::is_same<H, fp16>::value && std::is_base_of<xsimd::avx2, A>::value &&
                !std::is_base_of<xsimd::avx512bw, A>::value) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(bits + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(from + i), nearest));
  }
#endif
#if defined(SMAX_DETAIL_AVX512_BF16)
  if constexpr (std::is_same<H, bf16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    if (detail::cpu_has_avx512_bf16<A>())
      i = convert_detail::narrow_bf16_avx512<A>(from, bits, n);
  }
#endif
#endif
  for (; i + width <= n; i += width)
    convert_detail::store_u16<A>(
        bits + i, convert_detail::narrow<A>(xsimd::batch<float, A>::load_unaligned(from + i),
                                            static_cast<H*>(nullptr)));
  for (std::size_t rest = n - i; rest != 0; --rest, ++i)
    bits[i] = std::is_same<H, bf16>::value ? detail::bf16_bits_from_float<A>(from[i])
                                           : detail::fp16_bits_from_float<A>(from[i]);
}

template <class A>
void convert_table<A>::widen(const bf16* from, float* to, std::size_t n) noexcept {
  widen_row(from, to, n);
}
template <class A>
void convert_table<A>::widen(const fp16* from, float* to, std::size_t n) noexcept {
  widen_row(from, to, n);
}
template <class A>
void convert_table<A>::narrow(const float* from, bf16* to, std::size_t n) noexcept {
  narrow_row(from, to, n);
}
template <class A>
void convert_table<A>::narrow(const float* from, fp16* to, std::size_t n) noexcept {
  narrow_row(from, to, n);
}

// y[i] = H(f(float(x[i]))) for i < n, a vector at a time: the bits of widening x into floats,
// mapping them by f and narrowing the results, without the float row in between (so a pass over
// a long 16-bit row reads and writes memory while it computes). x holds no signalling NaN: the
// hardware's fp16 widening quiets it, which only a NaN's payload would show. With stream, y is
// written past the cache (streaming stores from its first aligned vector, then a fence), for
// outputs larger than the last-level cache. x == y is allowed.
template <class A, class H, class F>
SMAX_FLATTEN inline void map_through_float(const H* x, H* y, std::size_t n, F const& f,
                                           bool stream) noexcept {
  using floats = xsimd::batch<float, A>;
  constexpr std::size_t width = floats::size;
  auto* bits = reinterpret_cast<std::uint16_t*>(y);
  auto one = [&](std::size_t i) SMAX_INLINE_LAMBDA {
    return convert_detail::narrowed<A, H>(f(convert_detail::load_widened<A, H>(x + i)));
  };
  auto store = [&](std::size_t i, convert_detail::lanes<A> const& h) SMAX_INLINE_LAMBDA {
    if (stream)
      convert_detail::store_u16<A, true>(bits + i, h);
    else
      convert_detail::store_u16<A>(bits + i, h);
  };
  // count < width entries at i through a padded vector, by the row conversions.
  auto part = [&](std::size_t i, std::size_t count) {
    alignas(64) float v[width] = {};
    convert_table<A>::widen(x + i, v, count);
    f(floats::load_aligned(v)).store_aligned(v);
    convert_table<A>::narrow(v, y + i, count);
  };
  std::size_t i = 0;
  if (stream) {
    const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(bits) % (width * sizeof(H));
    if (misalignment != 0) {
      const std::size_t head = (width * sizeof(H) - misalignment) / sizeof(H);
      i = head < n ? head : n;
      part(0, i);
    }
  }
#if defined(SMAX_DETAIL_AVX512_BF16)
  if constexpr (std::is_same<H, bf16>::value && std::is_base_of<xsimd::avx512bw, A>::value) {
    if (detail::cpu_has_avx512_bf16<A>())
      i = convert_detail::map_to_bf16_avx512<A>(x, y, i, n, f, stream);
  }
#endif
  for (; i + 2 * width <= n; i += 2 * width) {
    const auto h0 = one(i), h1 = one(i + width);
    store(i, h0);
    store(i + width, h1);
  }
  for (; i + width <= n; i += width) store(i, one(i));
  if (i < n) part(i, n - i);
#if defined(__x86_64__) || defined(__i386__)
  if (stream) _mm_sfence();
#endif
}

}  // namespace kernels
}  // namespace smax

SMAX_DECLARE_DISPATCHED_TABLE(convert_table)
