#pragma once
// The few xsimd spellings that changed between 8.1 and 13/14 (hadd/reduce_add, the bitwise_cast
// target, the architecture availability check; docs/dispatch.md), behind one name.
// Everything here is templated on the architecture, so it is safe in per-architecture translation
// units: no weak non-architecture symbol can leak from one instruction set into another.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "../config.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // every x86 intrinsic is declared whatever the flags; used per width
#if defined(__GNUC__) || defined(__clang__)
#include <cpuid.h>
#endif
#endif

namespace smax {
namespace detail {

template <class T>
struct integer_of;
template <>
struct integer_of<float> {
  using type = std::int32_t;
};
template <>
struct integer_of<double> {
  using type = std::int64_t;
};
template <class T>
using integer_of_t = typename integer_of<T>::type;

// Reinterprets the bits of a batch as another lane type of the same width.
template <class To, class From, class A>
inline xsimd::batch<To, A> bitcast(xsimd::batch<From, A> const& x) noexcept {
#if XSIMD_VERSION_MAJOR >= 11
  return xsimd::bitwise_cast<To>(x);
#else
  return xsimd::bitwise_cast<xsimd::batch<To, A>>(x);
#endif
}

// CPU features xsimd does not check, each asked once: F16C (CPUID leaf 1, ECX bit 29), which
// smax's avx2 set includes (as x86-64-v3 does: every CPU with AVX2 has it), and AVX-512 BF16
// (leaf 7, subleaf 1, EAX bit 5), which the avx512bw set does not (kernels/convert.hpp asks
// for it from AVX-512 code, whose CPU has the AVX-512 state enabled).
template <class A>
inline bool cpu_has_f16c() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && ((c >> 29) & 1u) != 0;
  }();
  return has;
#else
  return false;
#endif
}
template <class A>
inline bool cpu_has_avx512_bf16() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && ((a >> 5) & 1u) != 0;
  }();
  return has;
#else
  return false;
#endif
}

// True when the CPU this runs on can execute code built for A. On 8.1 only `best` is reliable
// (its per-ISA bits misread CPUID: AVX from the wrong leaf, SSE2 from the wrong register).
template <class A>
inline bool arch_available() noexcept {
#if XSIMD_VERSION_MAJOR >= 13
  const bool available = xsimd::available_architectures().has(A{});
#else
  const bool available = A::version() <= xsimd::available_architectures().best;
#endif
  if constexpr (std::is_same<A, xsimd::fma3<xsimd::avx2>>::value)
    return available && cpu_has_f16c<A>();
  return available;
}

// Whether xsimd::fma is one fused instruction on A (otherwise it is a multiply and an add, with
// two roundings, which changes which range reductions are exact).
template <class A>
struct has_native_fma
    : std::integral_constant<bool, std::is_base_of<xsimd::fma3<xsimd::sse4_2>, A>::value ||
                                       std::is_base_of<xsimd::fma3<xsimd::avx>, A>::value ||
                                       std::is_base_of<xsimd::fma3<xsimd::avx2>, A>::value ||
                                       std::is_base_of<xsimd::fma4, A>::value ||
                                       std::is_base_of<xsimd::avx512f, A>::value ||
                                       std::is_base_of<xsimd::neon64, A>::value> {};

// Fused multiply-adds. xsimd before 13 has no AVX-512 fma: its generic fallback is a multiply and
// an add, which loses the exactness the kernels rely on (and lets the compiler fold x·y - x·y to
// 0 in an error-free product). The intrinsics are declared whatever the flags, and only
// instantiated in an AVX-512 translation unit.
#if XSIMD_VERSION_MAJOR < 13 && (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define SMAX_AVX512_FMA_INTRINSICS 1
template <class A>
using is_avx512 = std::is_base_of<xsimd::avx512f, A>;
template <class A>
inline xsimd::batch<float, A> fma_avx512(xsimd::batch<float, A> const& a,
                                         xsimd::batch<float, A> const& b,
                                         xsimd::batch<float, A> const& c) noexcept {
  return _mm512_fmadd_ps(a, b, c);
}
template <class A>
inline xsimd::batch<double, A> fma_avx512(xsimd::batch<double, A> const& a,
                                          xsimd::batch<double, A> const& b,
                                          xsimd::batch<double, A> const& c) noexcept {
  return _mm512_fmadd_pd(a, b, c);
}
template <class T, class A>
inline xsimd::batch<T, A> fma_dispatch(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                       xsimd::batch<T, A> const& c, std::true_type) noexcept {
  return fma_avx512(a, b, c);
}
template <class T, class A>
inline xsimd::batch<T, A> fma_dispatch(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                       xsimd::batch<T, A> const& c, std::false_type) noexcept {
  return xsimd::fma(a, b, c);
}
#endif

// x unchanged, but opaque to the optimiser: the magic-bias rounding (b = t·log2e + magic, then
// k = b - magic) is an identity in real arithmetic, which -ffast-math / -fassociative-math let the
// compiler fold to k = t·log2e (no rounding at all: on SSE2 exp(-1) came out as 0.25). An empty
// asm statement with the value in a register costs no instruction.
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> opaque(xsimd::batch<T, A> const& x) noexcept {
  using reg = typename xsimd::batch<T, A>::register_type;
  reg r = x;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  if constexpr (sizeof(reg) == 64)
    __asm__("" : "+v"(r));
  else
    __asm__("" : "+x"(r));
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
  __asm__("" : "+w"(r));
#else
  volatile reg v = r;  // no register asm: a round trip through memory (no tested compiler)
  r = v;
#endif
  return xsimd::batch<T, A>(r);
}

// Round to nearest (ties to even), as xsimd::nearbyint. SSE2 has no rounding instruction and
// xsimd 8.1 rounds there by adding and subtracting 2^23 (2^52) behind a volatile round trip
// that clang's -ffast-math still saw through (the two-pass softmax of double rows came out 30%
// off); here the sum is opaque (above), and stays in a register.
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> nearbyint(xsimd::batch<T, A> const& v) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (!std::is_base_of<xsimd::sse4_1, A>::value) {
    using batch = xsimd::batch<T, A>;
    const batch big(sizeof(T) == 4 ? T(8388608.0) : T(4503599627370496.0));  // 2^23, 2^52
    const batch a = xsimd::abs(v);
    const batch r = opaque(a + big) - big;  // exact for a < big; larger values are integers
    return xsimd::select(a < big, r | xsimd::bitofsign(v), v);
  }
#endif
  return xsimd::nearbyint(v);
}

// a·b + c with one rounding where the instruction set has it.
template <class T, class A>
inline xsimd::batch<T, A> mul_add(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                  xsimd::batch<T, A> const& c) noexcept {
#if defined(SMAX_AVX512_FMA_INTRINSICS)
  return fma_dispatch(a, b, c, is_avx512<A>{});
#else
  return xsimd::fma(a, b, c);
#endif
}
// c - a·b. On AVX2+FMA and AVX-512 one vfnmadd: written as mul_add(-a, b, c), the negation of
// a per-element a stays a separate instruction (GCC 12: vsubps from zero; MultiMax's σ spends one
// a vector on it). The result is the same: the negation is exact.
template <class T, class A>
inline xsimd::batch<T, A> neg_mul_add(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                      xsimd::batch<T, A> const& c) noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
  if constexpr (std::is_base_of<xsimd::avx512f, A>::value) {
    if constexpr (sizeof(T) == 4)
      return _mm512_fnmadd_ps(a, b, c);
    else
      return _mm512_fnmadd_pd(a, b, c);
  } else if constexpr (std::is_base_of<xsimd::fma3<xsimd::avx2>, A>::value) {
    if constexpr (sizeof(T) == 4)
      return _mm256_fnmadd_ps(a, b, c);
    else
      return _mm256_fnmadd_pd(a, b, c);
  }
#endif
  return mul_add(-a, b, c);
}
// a·b - c
template <class T, class A>
inline xsimd::batch<T, A> mul_sub(xsimd::batch<T, A> const& a, xsimd::batch<T, A> const& b,
                                  xsimd::batch<T, A> const& c) noexcept {
  return mul_add(a, b, -c);
}

// Horizontal reductions. A short row pays for these on every call, so on x86 they stay in
// registers (shuffles, no store-to-load round trip); elsewhere they go through memory as a tree
// (depth log2(width)). xsimd 8.1 has no reduce_max, and its hadd is a float sum.
template <class T, class A>
inline T horizontal_max_memory(xsimd::batch<T, A> const& v) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  alignas(64) T lanes[width];
  v.store_unaligned(lanes);
  for (std::size_t w = width / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i)
      lanes[i] = lanes[i + w] > lanes[i] ? lanes[i + w] : lanes[i];
  return lanes[0];
}

template <class T, class A>
inline double horizontal_sum_memory(xsimd::batch<T, A> const& v) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  alignas(64) T lanes[width];
  v.store_unaligned(lanes);
  double sums[width];
  for (std::size_t i = 0; i < width; ++i) sums[i] = static_cast<double>(lanes[i]);
  for (std::size_t w = width / 2; w > 0; w /= 2)
    for (std::size_t i = 0; i < w; ++i) sums[i] += sums[i + w];
  return sums[0];
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define SMAX_X86_REDUCTIONS 1
// 128-bit steps shared by every x86 width (max ignores NaN like the kernels' flags expect).
template <class A>
inline __m128 max_lanes_128(__m128 m) noexcept {
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
}
template <class A>
inline __m128d max_lanes_128(__m128d m) noexcept {
  return _mm_max_sd(m, _mm_unpackhi_pd(m, m));
}
template <class A>
inline double sum_lanes_128(__m128d s) noexcept {
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
#endif

// -v by flipping the sign bits. xsimd 8's AVX-512 negation is 0 - v, a subtraction that a
// flush-to-zero guard turns into 0 for a subnormal v (a row minimum of -8.8e-39 read as 0).
template <class T, class A>
SMAX_ALWAYS_INLINE xsimd::batch<T, A> negate_bits(xsimd::batch<T, A> const& v) noexcept {
  return v ^ xsimd::batch<T, A>(T(-0.0));
}

// Largest lane (NaN lanes may or may not be ignored: callers flag NaN separately).
template <class T, class A>
inline T horizontal_max(xsimd::batch<T, A> const& v) noexcept {
#if defined(SMAX_X86_REDUCTIONS)
  if constexpr (sizeof(T) == 4) {
    if constexpr (sizeof(v) == 64) {
      const __m512 x = v;
      const __m256 h =
          _mm256_max_ps(_mm512_castps512_ps256(x),
                        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
      return _mm_cvtss_f32(
          max_lanes_128<A>(_mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1))));
    } else if constexpr (sizeof(v) == 32) {
      const __m256 x = v;
      return _mm_cvtss_f32(
          max_lanes_128<A>(_mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1))));
    } else {
      return _mm_cvtss_f32(max_lanes_128<A>(__m128(v)));
    }
  } else {
    if constexpr (sizeof(v) == 64) {
      const __m512d x = v;
      const __m256d h = _mm256_max_pd(_mm512_castpd512_pd256(x), _mm512_extractf64x4_pd(x, 1));
      return _mm_cvtsd_f64(
          max_lanes_128<A>(_mm_max_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1))));
    } else if constexpr (sizeof(v) == 32) {
      const __m256d x = v;
      return _mm_cvtsd_f64(
          max_lanes_128<A>(_mm_max_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1))));
    } else {
      return _mm_cvtsd_f64(max_lanes_128<A>(__m128d(v)));
    }
  }
#else
  return horizontal_max_memory(v);
#endif
}

// Smallest lane (NaN as horizontal_max), with the sign flips exact under flush-to-zero.
template <class T, class A>
inline T horizontal_min(xsimd::batch<T, A> const& v) noexcept {
  return -horizontal_max(negate_bits(v));
}

// Sum of the lanes, in double (float lanes are widened first, so the block partial sums lose
// nothing when folded).
template <class T, class A>
inline double horizontal_sum(xsimd::batch<T, A> const& v) noexcept {
#if defined(SMAX_X86_REDUCTIONS)
  if constexpr (sizeof(T) == 4) {
    if constexpr (sizeof(v) == 64) {
      const __m512 x = v;
      const __m512d s = _mm512_add_pd(
          _mm512_cvtps_pd(_mm512_castps512_ps256(x)),
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1))));
      const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
      return sum_lanes_128<A>(_mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1)));
    } else if constexpr (sizeof(v) == 32) {
      const __m256 x = v;
      const __m256d s = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(x)),
                                      _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)));
      return sum_lanes_128<A>(_mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1)));
    } else {
      const __m128 x = v;
      return sum_lanes_128<A>(_mm_add_pd(_mm_cvtps_pd(x), _mm_cvtps_pd(_mm_movehl_ps(x, x))));
    }
  } else {
    if constexpr (sizeof(v) == 64) {
      const __m512d x = v;
      const __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(x), _mm512_extractf64x4_pd(x, 1));
      return sum_lanes_128<A>(_mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1)));
    } else if constexpr (sizeof(v) == 32) {
      const __m256d x = v;
      return sum_lanes_128<A>(_mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1)));
    } else {
      return sum_lanes_128<A>(__m128d(v));
    }
  }
#else
  return horizontal_sum_memory(v);
#endif
}

#if defined(SMAX_X86_REDUCTIONS)
// The AVX2+FMA kernels compiled inside Host's (an AVX-512 architecture's) translation unit: a
// row of at most 16 floats (8 doubles) is one 512-bit register, and the latency of its chain
// (horizontal max, exp, horizontal sum, normalise) is shorter on 256-bit registers (figures in
// bench/results/ and the commit log; docs/dispatch.md). A distinct architecture type per Host, so
// that these instantiations (built with Host's flags, possibly with EVEX-only instructions) never
// share a symbol with the AVX2 translation unit's, or with another Host's. xsimd takes its
// kernels from fma3<avx2> (the base class) and its registers from the specialisation below.
template <class Host>
struct avx2_in : xsimd::fma3<xsimd::avx2> {
  static constexpr char const* name() noexcept { return "avx2_in_avx512"; }
};

template <class A>
struct is_avx2_in : std::false_type {};
template <class Host>
struct is_avx2_in<avx2_in<Host>> : std::true_type {};

// The architecture that rows fitting in one register of Host run on: avx2_in<Host> on AVX-512,
// Host itself elsewhere.
template <class Host>
using short_row_arch =
    std::conditional_t<std::is_base_of<xsimd::avx512f, Host>::value, avx2_in<Host>, Host>;
#else
template <class Host>
using short_row_arch = Host;
template <class A>
struct is_avx2_in : std::false_type {};
#endif

}  // namespace detail
}  // namespace smax

#if defined(SMAX_X86_REDUCTIONS)
// avx2_in<Host> has fma3<avx2>'s registers (XSIMD_DECLARE_SIMD_REGISTER_ALIAS, written out for a
// template; the same in xsimd 8.1, 13 and 14).
namespace xsimd {
namespace types {
template <class T, class Host>
struct simd_register<T, smax::detail::avx2_in<Host>> : simd_register<T, xsimd::fma3<xsimd::avx2>> {
  using register_type = typename simd_register<T, xsimd::fma3<xsimd::avx2>>::register_type;
  simd_register(register_type reg) noexcept : simd_register<T, xsimd::fma3<xsimd::avx2>>{reg} {}
  simd_register() = default;
};
template <class T, class Host>
struct has_simd_register<T, smax::detail::avx2_in<Host>>
    : has_simd_register<T, xsimd::fma3<xsimd::avx2>> {};
}  // namespace types
}  // namespace xsimd
#endif
