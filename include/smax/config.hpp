#pragma once
// Configuration shared by every smax header: the xsimd include, the debug precondition macro and
// the name of the inline namespace that isolates header-only code compiled with different flags.

#include <cassert>

#include <xsimd/xsimd.hpp>

#include "version.hpp"

static_assert(XSIMD_VERSION_MAJOR >= 8, "smax needs xsimd 8.1 or newer");

// -ffast-math: the bad-input contract survives it (special values are tested on their bits,
// primitives/special.hpp), the accuracy bounds do not (the compiler may reassociate the error-free
// transformations they rest on). README, "Compiler flags".
#if defined(__FAST_MATH__) && !defined(SMAX_ALLOW_FAST_MATH) && \
    (defined(__GNUC__) || defined(__clang__))
#warning \
    "smax compiled with -ffast-math: NaN/inf/mask handling holds, the documented accuracy bounds do not (README, Compiler flags); compile smax's kernels without it, or define SMAX_ALLOW_FAST_MATH to silence this"
#endif

// Preconditions are asserted in debug builds; release builds give the documented result instead
// (usually a NaN row), never undefined behaviour.
#ifndef SMAX_ASSERT
#define SMAX_ASSERT(condition) assert(condition)
#endif

// The header-only API is compiled for the best instruction set the including translation unit's
// flags enable (xsimd::default_arch). Two translation units built with different flags would
// otherwise define the same inline symbols with different machine code, and the linker may keep
// the wrong one (an AVX2 body called on an SSE2-only CPU). Every inline function therefore lives
// in an inline namespace named after that instruction set; the types (options, tags, states)
// carry no code and stay in `smax` itself.
#if defined(SMAX_ABI_NAMESPACE)
// set by the user
#elif XSIMD_WITH_AVX512BW
#define SMAX_ABI_NAMESPACE v0_avx512bw
#elif XSIMD_WITH_AVX512F
#define SMAX_ABI_NAMESPACE v0_avx512f
#elif XSIMD_WITH_FMA3_AVX2
#define SMAX_ABI_NAMESPACE v0_fma3_avx2
#elif XSIMD_WITH_AVX2
#define SMAX_ABI_NAMESPACE v0_avx2
#elif XSIMD_WITH_FMA3_AVX
#define SMAX_ABI_NAMESPACE v0_fma3_avx
#elif XSIMD_WITH_AVX
#define SMAX_ABI_NAMESPACE v0_avx
#elif XSIMD_WITH_FMA4
#define SMAX_ABI_NAMESPACE v0_fma4
#elif XSIMD_WITH_FMA3_SSE
#define SMAX_ABI_NAMESPACE v0_fma3_sse4_2
#elif XSIMD_WITH_SSE4_2
#define SMAX_ABI_NAMESPACE v0_sse4_2
#elif XSIMD_WITH_SSE4_1
#define SMAX_ABI_NAMESPACE v0_sse4_1
#elif XSIMD_WITH_SSSE3
#define SMAX_ABI_NAMESPACE v0_ssse3
#elif XSIMD_WITH_SSE3
#define SMAX_ABI_NAMESPACE v0_sse3
#elif XSIMD_WITH_SSE2
#define SMAX_ABI_NAMESPACE v0_sse2
#elif XSIMD_WITH_NEON64
#define SMAX_ABI_NAMESPACE v0_neon64
#elif XSIMD_WITH_NEON
#define SMAX_ABI_NAMESPACE v0_neon
#else
#error \
    "smax needs an instruction set xsimd supports (SSE2, AVX2, AVX-512, NEON): check the compiler flags"
#endif

// Supported compilers: GCC and Clang (both tested). The kernels use their builtins
// (__builtin_huge_val, __builtin_nan, __builtin_expect, ...) throughout; MSVC is not supported.
#if !defined(__GNUC__) && !defined(__clang__)
#error "smax needs GCC or Clang (its kernels use their builtins); MSVC is not supported"
#endif

// The hot building blocks (the exp, the per-element functors) are forced inline, and the loops
// that call them (map_sum, map, short_row, ...) inline everything they call. GCC stops inlining
// in a translation unit once it has grown by --param inline-unit-growth, and a dispatch unit,
// which instantiates every family for one instruction set, reaches that limit: the exp was then
// called out of line once per vector, which made short rows markedly slower.
#define SMAX_ALWAYS_INLINE inline __attribute__((always_inline))
#define SMAX_FLATTEN __attribute__((flatten))
// The same for a lambda's call operator, written after its parameter list: the bodies handed to
// primitives::unroll (one per register of a short row) hold the exp, and GCC left them out of
// line (twice per 16-element row) even inside a flattened kernel.
#define SMAX_INLINE_LAMBDA __attribute__((always_inline))
// Fully unrolls the loop it precedes. For the fixed-count loops over arrays of registers that
// interleave independent chains (the Philox rounds, the noise's logarithms): GCC unrolls them
// at -O3 only; at -O2 the arrays stayed in memory and the seeded noise took 1.8x as long.
#define SMAX_UNROLL _Pragma("GCC unroll 32")

#define SMAX_BEGIN_NAMESPACE \
  namespace smax {           \
  inline namespace SMAX_ABI_NAMESPACE {
#define SMAX_END_NAMESPACE \
  }                        \
  }
