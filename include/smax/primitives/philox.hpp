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

// The block of element k of the stream `seed`: counter (k low, k high, 0, 0), key (seed low,
// seed high).
template <class A>
SMAX_ALWAYS_INLINE philox_block philox_element(std::uint64_t seed, std::uint64_t k) noexcept {
  return philox4x32_10<A>(std::uint32_t(k), std::uint32_t(k >> 32), 0u, 0u, std::uint32_t(seed),
                          std::uint32_t(seed >> 32));
}

}  // namespace primitives
}  // namespace smax
