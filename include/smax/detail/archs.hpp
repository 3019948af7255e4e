#pragma once
// The one list of instruction sets that runtime dispatch can compile (smax_enable_dispatch), best
// first: X(data, name, xsimd type) for each one (data is passed through) compiled into this
// program. The name is what smax_enable_dispatch(ARCHS ...), SMAX_FORCE_ARCH and
// smax::runtime::arch_name() use; an entry is compiled in when SMAX_DISPATCH_<NAME> is defined
// (smax_enable_dispatch defines it for every translation unit of its target).
// cmake/SmaxDispatch.cmake reads the names, types and the "flags:" comment of the entries below
// with a regular expression: keep one entry a line.

// clang-format off
#define SMAX_COMPILED_ARCHS(X, data)                                                                     \
  SMAX_DETAIL_IF_avx512bw(X(data, avx512bw, ::xsimd::avx512bw)) /* flags: -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx512vl -mfma */ \
  SMAX_DETAIL_IF_avx2(X(data, avx2, ::xsimd::fma3<::xsimd::avx2>)) /* flags: -mavx2 -mfma -mf16c */         \
  SMAX_DETAIL_IF_neon64(X(data, neon64, ::xsimd::neon64)) /* flags: */                                      \
  SMAX_DETAIL_IF_sse2(X(data, sse2, ::xsimd::sse2)) /* flags: -mno-avx */
// clang-format on

#if defined(SMAX_DISPATCH_AVX512BW)
#define SMAX_DETAIL_IF_avx512bw(...) __VA_ARGS__
#else
#define SMAX_DETAIL_IF_avx512bw(...)
#endif
#if defined(SMAX_DISPATCH_AVX2)
#define SMAX_DETAIL_IF_avx2(...) __VA_ARGS__
#else
#define SMAX_DETAIL_IF_avx2(...)
#endif
#if defined(SMAX_DISPATCH_NEON64)
#define SMAX_DETAIL_IF_neon64(...) __VA_ARGS__
#else
#define SMAX_DETAIL_IF_neon64(...)
#endif
#if defined(SMAX_DISPATCH_SSE2)
#define SMAX_DETAIL_IF_sse2(...) __VA_ARGS__
#else
#define SMAX_DETAIL_IF_sse2(...)
#endif
