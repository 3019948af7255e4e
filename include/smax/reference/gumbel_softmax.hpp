#pragma once
// Scalar long-double reference for Gumbel-softmax (docs/gumbel_softmax.md), from the definition:
// z = x + g (exact, in long double), y_soft = softmax(z/tau), y_hard = one_hot(first argmax z),
// dx = (1/tau)·y_soft ⊙ (dy - <dy, y_soft>); and the seeded noise: Philox-4×32-10 written
// separately from the library's, u from the block's words as the library draws it, and
// g = -log(-log u) in long double.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../config.hpp"

SMAX_BEGIN_NAMESPACE
namespace reference {

struct philox_words {
  std::uint32_t w[4];
};

// Philox-4×32-10 of counter c under key k (Salmon et al. 2011).
inline philox_words philox4x32_10(philox_words c, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const unsigned long long a = 0xD2511F53ull * c.w[0], b = 0xCD9E8D57ull * c.w[2];
    c = philox_words{{static_cast<std::uint32_t>(b >> 32) ^ c.w[1] ^ k0,
                      static_cast<std::uint32_t>(b & 0xffffffffu),
                      static_cast<std::uint32_t>(a >> 32) ^ c.w[3] ^ k1,
                      static_cast<std::uint32_t>(a & 0xffffffffu)}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// The uniform of element k (the library's construction, exact in T): sixteen blocks make a group
// of 64 floats (element 64q + 16w + l from word w of block 16q + l) or 32 doubles (element
// 32q + 16h + l from words 2h and 2h + 1 of block 16q + l); block b has counter (b low, b high,
// 0, 0) and key (seed low, seed high).
template <class T>
long double gumbel_uniform(std::uint64_t seed, std::uint64_t k) {
  const bool single = sizeof(T) == 4;
  const std::uint64_t per_group = single ? 64 : 32, q = k / per_group, r = k % per_group;
  const std::uint64_t block = 16 * q + r % 16, part = r / 16;
  const philox_words b = philox4x32_10(
      philox_words{{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), 0u,
                    0u}},
      static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
  if (single) return (static_cast<long double>(b.w[part] >> 9) + 0.5L) * 0x1p-23L;
  const std::uint64_t m =
      (static_cast<std::uint64_t>(b.w[2 * part]) << 20) | (b.w[2 * part + 1] >> 12);
  return (static_cast<long double>(m) + 0.5L) * 0x1p-52L;
}

template <class T>
long double gumbel_noise(std::uint64_t seed, std::uint64_t k) {
  return -std::log(-std::log(gumbel_uniform<T>(seed, k)));
}

// y_soft of one row from z (NaN row for NaN, +inf, all -inf, or tau not finite and > 0).
inline std::vector<long double> gumbel_soft_of(std::vector<long double> const& z,
                                               long double tau) {
  const std::size_t n = z.size();
  std::vector<long double> y(n, NAN);
  if (!(tau > 0) || !std::isfinite(tau)) return y;
  long double m = -INFINITY;
  bool any = false;
  for (long double v : z) {
    if (std::isnan(v) || v == INFINITY) return y;
    if (v == -INFINITY) continue;
    if (!any || v > m) m = v;
    any = true;
  }
  if (!any) return y;
  long double s = 0;
  for (long double v : z)
    if (v != -INFINITY) s += std::exp((v - m) / tau);
  for (std::size_t i = 0; i < n; ++i) y[i] = z[i] == -INFINITY ? 0 : std::exp((z[i] - m) / tau) / s;
  return y;
}

inline std::vector<long double> gumbel_hard_of(std::vector<long double> const& z,
                                               long double tau) {
  const std::size_t n = z.size();
  std::vector<long double> y(n, NAN);
  if (!(tau > 0) || !std::isfinite(tau)) return y;
  std::size_t best = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(z[i]) || z[i] == INFINITY) return y;
    if (z[i] == -INFINITY) continue;
    if (best == n || z[i] > z[best]) best = i;
  }
  if (best == n) return y;
  for (auto& v : y) v = 0;
  y[best] = 1;
  return y;
}

// z = x + g exactly.
template <class T>
std::vector<long double> gumbel_z(const T* x, const T* g, std::size_t n) {
  std::vector<long double> z(n);
  for (std::size_t i = 0; i < n; ++i)
    z[i] = static_cast<long double>(x[i]) + static_cast<long double>(g[i]);
  return z;
}

template <class T>
std::vector<long double> gumbel_softmax(const T* x, const T* g, std::size_t n, long double tau,
                                        bool hard) {
  const auto z = gumbel_z(x, g, n);
  return hard ? gumbel_hard_of(z, tau) : gumbel_soft_of(z, tau);
}

// dx for soft and hard alike (straight-through).
template <class T>
std::vector<long double> gumbel_softmax_backward(const T* x, const T* g, const T* dy,
                                                 std::size_t n, long double tau) {
  const auto y = gumbel_soft_of(gumbel_z(x, g, n), tau);
  long double dot = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (y[i] != 0) dot += static_cast<long double>(dy[i]) * y[i];
  std::vector<long double> dx(n);
  for (std::size_t i = 0; i < n; ++i)
    dx[i] = y[i] == 0 ? 0 : y[i] * (static_cast<long double>(dy[i]) - dot) / tau;
  return dx;
}

}  // namespace reference
SMAX_END_NAMESPACE
