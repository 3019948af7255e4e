#pragma once
// With runtime dispatch (smax_enable_dispatch), each instruction set's kernels are compiled in
// their own translation unit with that instruction set's flags. These declarations stop every
// other translation unit from instantiating them with its own flags.

#include "../kernels/table.hpp"

#if defined(SMAX_DISPATCH_SSE2)
extern template struct smax::kernels::table<xsimd::sse2>;
#endif
#if defined(SMAX_DISPATCH_AVX2)
extern template struct smax::kernels::table<xsimd::fma3<xsimd::avx2>>;
#endif
#if defined(SMAX_DISPATCH_AVX512BW)
extern template struct smax::kernels::table<xsimd::avx512bw>;
#endif
#if defined(SMAX_DISPATCH_NEON64)
extern template struct smax::kernels::table<xsimd::neon64>;
#endif
