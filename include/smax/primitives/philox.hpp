#pragma once
// Philox-4×32-10 (Salmon, Moraes, Dror & Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011): a counter-based generator. A 128-bit counter and a 64-bit key map to 128 random bits
// through ten rounds of two 32×32 -> 64-bit products; the same (counter, key) gives the same bits
// everywhere, so element k of a stream is computed from k alone, in any order, split or thread.
//
// Round:  (hi0, lo0) = M0·c0,  (hi1, lo1) = M1·c2,
//         c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0),
// and the key is bumped by the Weyl constants (W0, W1) between rounds. Checked against the
// paper's known-answer vectors (Random123's kat_vectors) in tests/gumbel_softmax_test.cpp.
//
// Templated on the instruction set A like every kernel helper (an inline function shared by
// translation units built with different flags could be linked from the wrong one).

#include <cstdint>

#include "../config.hpp"
#include "../detail/xsimd_compat.hpp"

namespace smax {
namespace primitives {

struct philox_block {
  std::uint32_t w[4];
};

template <class A>
SMAX_ALWAYS_INLINE philox_block philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2,
                                              std::uint32_t c3, std::uint32_t k0,
                                              std::uint32_t k1) noexcept {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t(m0) * c0;
    const std::uint64_t p1 = std::uint64_t(m1) * c2;
    const std::uint32_t hi0 = std::uint32_t(p0 >> 32), lo0 = std::uint32_t(p0);
    const std::uint32_t hi1 = std::uint32_t(p1 >> 32), lo1 = std::uint32_t(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += w0;
    k1 += w1;
  }
  return {{c0, c1, c2, c3}};
}

// Block b of the stream `seed`: counter (b low, b high, 0, 0), key (seed low, seed high).
template <class A>
SMAX_ALWAYS_INLINE philox_block philox_of_counter(std::uint64_t seed, std::uint64_t b) noexcept {
  return philox4x32_10<A>(std::uint32_t(b), std::uint32_t(b >> 32), 0u, 0u, std::uint32_t(seed),
                          std::uint32_t(seed >> 32));
}

#if defined(__x86_64__) || defined(__i386__)
#define SMAX_PHILOX_VECTOR 1

// (hi, lo) = m·c lane by lane, 32×32 -> 64 bits: the even lanes' products from one unsigned
// 32-bit multiply of the 64-bit lanes (pmuludq), the odd lanes' from a second one after shifting
// them down; then the halves are put back in their lanes (a blend where the instruction set has
// one: one instruction instead of an and and an or).
template <class A>
SMAX_ALWAYS_INLINE void philox_mulhilo(xsimd::batch<std::uint32_t, A> const& c, std::uint32_t m,
                                       xsimd::batch<std::uint32_t, A>& hi,
                                       xsimd::batch<std::uint32_t, A>& lo) noexcept {
  using reg = typename xsimd::batch<std::uint32_t, A>::register_type;
  const reg v = c;
  reg h, l;
  if constexpr (sizeof(reg) == 64) {
    const __m512i mm = _mm512_set1_epi64(static_cast<long long>(m));
    const __m512i even = _mm512_mul_epu32(v, mm);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(v, 32), mm);
    constexpr __mmask16 odd_lanes = 0xAAAA;
    l = _mm512_mask_blend_epi32(odd_lanes, even, _mm512_slli_epi64(odd, 32));
    h = _mm512_mask_blend_epi32(odd_lanes, _mm512_srli_epi64(even, 32), odd);
  } else if constexpr (sizeof(reg) == 32) {
    const __m256i mm = _mm256_set1_epi64x(static_cast<long long>(m));
    const __m256i even = _mm256_mul_epu32(v, mm);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(v, 32), mm);
    l = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
    h = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  } else {
    const __m128i mm = _mm_set1_epi64x(static_cast<long long>(m));
    const __m128i even = _mm_mul_epu32(v, mm);
    const __m128i odd = _mm_mul_epu32(_mm_srli_epi64(v, 32), mm);
    const __m128i low_half = _mm_set1_epi64x(0xffffffffll);
    l = _mm_or_si128(_mm_and_si128(even, low_half), _mm_slli_epi64(odd, 32));
    h = _mm_or_si128(_mm_srli_epi64(even, 32), _mm_andnot_si128(low_half, odd));
  }
  hi = h;
  lo = l;
}

// The four words of the blocks of counters (w0, w1, 0, 0) under key (k0, k1), one block a lane,
// K registers at once: philox4x32_10's rounds on whole registers, interleaved, since one
// register's rounds are a chain of dependent products and K chains keep the multiplier busy.
// On entry w0 and w1 hold the counters' low and high words; on return w0..w3 the block's words.
template <class A, std::size_t K>
SMAX_ALWAYS_INLINE void philox_interleaved(xsimd::batch<std::uint32_t, A> (&w0)[K],
                                           xsimd::batch<std::uint32_t, A> (&w1)[K],
                                           xsimd::batch<std::uint32_t, A> (&w2)[K],
                                           xsimd::batch<std::uint32_t, A> (&w3)[K],
                                           std::uint32_t k0, std::uint32_t k1) noexcept {
  using ub = xsimd::batch<std::uint32_t, A>;
  // Round 1: words 2 and 3 of the counter are 0, so the second product is 0.
  {
    const ub key0(k0), key1(k1);
    SMAX_UNROLL
    for (std::size_t j = 0; j < K; ++j) {
      ub hi0, lo0;
      philox_mulhilo<A>(w0[j], 0xD2511F53u, hi0, lo0);
      w0[j] = w1[j] ^ key0;
      w1[j] = ub(0u);
      w2[j] = hi0 ^ key1;
      w3[j] = lo0;
    }
  }
  SMAX_UNROLL
  for (int round = 1; round < 10; ++round) {
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
    const ub key0(k0), key1(k1);
    SMAX_UNROLL
    for (std::size_t j = 0; j < K; ++j) {
      ub hi0, lo0, hi1, lo1;
      philox_mulhilo<A>(w0[j], 0xD2511F53u, hi0, lo0);
      philox_mulhilo<A>(w2[j], 0xCD9E8D57u, hi1, lo1);
      w0[j] = hi1 ^ w1[j] ^ key0;
      w1[j] = lo1;
      w2[j] = hi0 ^ w3[j] ^ key1;
      w3[j] = lo0;
    }
  }
}
#endif

}  // namespace primitives
}  // namespace smax
