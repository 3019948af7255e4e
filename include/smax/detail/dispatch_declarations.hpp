#pragma once
// With runtime dispatch (smax_enable_dispatch), each instruction set's kernels are compiled in
// their own translation unit with that instruction set's flags. Every family's kernel table
// ends its header with SMAX_DECLARE_DISPATCHED_TABLE(<table>): the extern template declarations
// that stop every other translation unit from instantiating it with its own flags.

#include "../config.hpp"

#if defined(SMAX_DISPATCH_SSE2)
#define SMAX_DECLARE_TABLE_SSE2(name) extern template struct smax::kernels::name<xsimd::sse2>;
#else
#define SMAX_DECLARE_TABLE_SSE2(name)
#endif
#if defined(SMAX_DISPATCH_AVX2)
#define SMAX_DECLARE_TABLE_AVX2(name) extern template struct smax::kernels::name<xsimd::fma3<xsimd::avx2>>;
#else
#define SMAX_DECLARE_TABLE_AVX2(name)
#endif
#if defined(SMAX_DISPATCH_AVX512BW)
#define SMAX_DECLARE_TABLE_AVX512BW(name) extern template struct smax::kernels::name<xsimd::avx512bw>;
#else
#define SMAX_DECLARE_TABLE_AVX512BW(name)
#endif
#if defined(SMAX_DISPATCH_NEON64)
#define SMAX_DECLARE_TABLE_NEON64(name) extern template struct smax::kernels::name<xsimd::neon64>;
#else
#define SMAX_DECLARE_TABLE_NEON64(name)
#endif

#define SMAX_DECLARE_DISPATCHED_TABLE(name) \
  SMAX_DECLARE_TABLE_SSE2(name)             \
  SMAX_DECLARE_TABLE_AVX2(name)             \
  SMAX_DECLARE_TABLE_AVX512BW(name)         \
  SMAX_DECLARE_TABLE_NEON64(name)
