#pragma once
// Gumbel-softmax (docs/gumbel_softmax.md) for one instruction set A:
//   y = softmax((x + g)/tau)                      (soft)
//   y = one_hot(first argmax of (x + g))          (hard)
// with g the caller's noise or Gumbel noise drawn from Philox-4×32-10 keyed by (seed, element).
//
// The soft form writes z = x + g into y and runs softmax's kernels in place on it (softmax allows
// x == y), a block of rows at a time so that z is still in cache when softmax reads it. The
// backward recomputes y_soft into dx the same way (bit for bit the forward's soft output) and
// runs softmax's backward in place: dx = (1/tau)·y_soft ⊙ (dy - <dy, y_soft>), for soft and hard
// alike (straight-through).
//
// Seeded noise, element k (k = offset + r·cols + c): the Philox block of counter k under key seed;
//   float:  u = (w0 >> 9) + 1/2, scaled by 2^-23: 23 random bits, u in [2^-24, 1 - 2^-24];
//   double: u = ((w0 << 20) | (w1 >> 12)) + 1/2, scaled by 2^-52: u in [2^-53, 1 - 2^-53];
// so u is never 0 or 1 and is exact in T. g = -log(-log(u)): float with the vector log below
// (every product kept apart from its sum, so no instruction set fuses them: the same bits on
// SSE2, AVX2 with FMA and AVX-512), double with libm's log (the same function on every
// instruction set of one machine). The float generator runs on whole registers on x86
// (primitives::philox_word0); the double one, and every one elsewhere, element by element.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "../config.hpp"
#include "../detail/xsimd_compat.hpp"
#include "../primitives/philox.hpp"
#include "../primitives/special.hpp"
#include "softmax.hpp"

namespace smax {
namespace kernels {

template <class A>
struct gumbel_softmax_table {
  // y = gumbel_softmax(x, noise) for a rows × cols block (noise with leading dimension ldn).
  // x == y and noise == y are allowed.
  static void forward(const float* x, std::size_t ldx, const float* noise, std::size_t ldn,
                      float* y, std::size_t ldy, std::size_t rows, std::size_t cols, float tau,
                      bool hard) noexcept;
  static void forward(const double* x, std::size_t ldx, const double* noise, std::size_t ldn,
                      double* y, std::size_t ldy, std::size_t rows, std::size_t cols, double tau,
                      bool hard) noexcept;
  // The same with the seeded noise of elements offset + r·cols + c. x == y is allowed.
  static void forward_seeded(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, float tau, bool hard,
                             std::uint64_t seed, std::uint64_t offset) noexcept;
  static void forward_seeded(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                             std::size_t rows, std::size_t cols, double tau, bool hard,
                             std::uint64_t seed, std::uint64_t offset) noexcept;
  // dx = the soft VJP; dx may alias x (or noise), not dy.
  static void backward(const float* x, std::size_t ldx, const float* noise, std::size_t ldn,
                       const float* dy, std::size_t lddy, float* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, float tau) noexcept;
  static void backward(const double* x, std::size_t ldx, const double* noise, std::size_t ldn,
                       const double* dy, std::size_t lddy, double* dx, std::size_t lddx,
                       std::size_t rows, std::size_t cols, double tau) noexcept;
  static void backward_seeded(const float* x, std::size_t ldx, const float* dy, std::size_t lddy,
                              float* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                              float tau, std::uint64_t seed, std::uint64_t offset) noexcept;
  static void backward_seeded(const double* x, std::size_t ldx, const double* dy,
                              std::size_t lddy, double* dx, std::size_t lddx, std::size_t rows,
                              std::size_t cols, double tau, std::uint64_t seed,
                              std::uint64_t offset) noexcept;
  // g[i] = the Gumbel noise of element offset + i.
  static void noise(float* g, std::size_t n, std::uint64_t seed, std::uint64_t offset) noexcept;
  static void noise(double* g, std::size_t n, std::uint64_t seed, std::uint64_t offset) noexcept;
};

namespace detail {

// log of positive normal floats, Cephes' logf: t = 2^e·m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
// log t = e·ln2 + f - f²/2 + f³·P(f), ln2 split in two (0.693359375 is exact in 9 bits) so e·ln2
// adds no rounding of note. About 1 ulp (tests/gumbel_softmax_test.cpp measures the noise).
// Every product goes through detail::opaque before it is added, so no compiler contracts it into
// an fma: the result has the same bits on every instruction set.
template <class A>
SMAX_ALWAYS_INLINE xsimd::batch<float, A> reproducible_log(xsimd::batch<float, A> const& t) noexcept {
  using fb = xsimd::batch<float, A>;
  using ib = xsimd::batch<std::int32_t, A>;
  using smax::detail::opaque;
  ib i = smax::detail::bitcast<std::int32_t>(t);
  i = i + ib(0x3f800000 - 0x3f3504f3);  // m's exponent becomes 0 exactly when m >= sqrt(1/2)
  const ib e = (i >> 23) - ib(127);
  i = (i & ib(0x007fffff)) + ib(0x3f3504f3);
  const fb f = smax::detail::bitcast<float>(i) - fb(1.0f);
  const fb fe = xsimd::to_float(e);
  const fb z = opaque(f * f);
  fb p(7.0376836292e-2f);
  p = opaque(p * f) + fb(-1.1514610310e-1f);
  p = opaque(p * f) + fb(1.1676998740e-1f);
  p = opaque(p * f) + fb(-1.2420140846e-1f);
  p = opaque(p * f) + fb(1.4249322787e-1f);
  p = opaque(p * f) + fb(-1.6668057665e-1f);
  p = opaque(p * f) + fb(2.0000714765e-1f);
  p = opaque(p * f) + fb(-2.4999993993e-1f);
  p = opaque(p * f) + fb(3.3333331174e-1f);
  fb y = opaque(opaque(p * f) * z);
  y = y + opaque(fe * fb(-2.12194440e-4f));
  y = y - opaque(z * fb(0.5f));
  fb r = f + y;
  r = r + opaque(fe * fb(0.693359375f));
  return r;
}

// Gumbel noise from the uniforms' integers m (u = (m + 1/2)·2^-23).
template <class A>
SMAX_ALWAYS_INLINE xsimd::batch<float, A> gumbel_of(xsimd::batch<std::int32_t, A> const& m) noexcept {
  using fb = xsimd::batch<float, A>;
  const fb u = (xsimd::to_float(m) + fb(0.5f)) * fb(0x1p-23f);  // exact
  const fb t = fb(0.0f) - reproducible_log<A>(u);                 // in [6e-8, 16.7]
  return fb(0.0f) - reproducible_log<A>(t);
}

template <class A>
SMAX_ALWAYS_INLINE double uniform_double(primitives::philox_block const& b) noexcept {
  const std::uint64_t m = (std::uint64_t(b.w[0]) << 20) | (b.w[1] >> 12);
  return (static_cast<double>(m) + 0.5) * 0x1p-52;
}

// Chunks of seeded noise: the Philox integers of a chunk first (scalar), then the vector pass.
constexpr std::size_t noise_chunk = 64;

// y[i] = base[i] + g(k0 + i) for i < n (base null: y = g). base == y is allowed.
template <class A>
inline void add_seeded_noise(const float* base, float* y, std::size_t n, std::uint64_t seed,
                             std::uint64_t k0) noexcept {
  using fb = xsimd::batch<float, A>;
  using ib = xsimd::batch<std::int32_t, A>;
  constexpr std::size_t W = fb::size;
  static_assert(noise_chunk % W == 0, "chunks of whole registers");
  alignas(64) std::int32_t m[noise_chunk];
#if defined(SMAX_PHILOX_VECTOR)
  // Whole registers with the generator on registers (lane j: counter k + j), except where the
  // counter's low word would wrap inside the register.
  using ub = xsimd::batch<std::uint32_t, A>;
  alignas(64) std::uint32_t lane_index[W];
  for (std::size_t j = 0; j < W; ++j) lane_index[j] = std::uint32_t(j);
  const ub lanes = ub::load_aligned(lane_index);
  const std::uint32_t key0 = std::uint32_t(seed), key1 = std::uint32_t(seed >> 32);
  std::size_t whole = 0;
  // Four registers at a time: the generator's rounds and the logarithms' polynomials are chains
  // of dependent operations, and four of them side by side overlap (noise alone, 4096 elements:
  // 2.2 -> 2.0 ns an element on AVX-512, 5.3 -> 4.5 on AVX2, 10.7 -> 9.7 on SSE2; the rest is
  // the generator's ~14 vector operations an element and the two logarithms).
  constexpr std::size_t K = 4;
  for (; whole + K * W <= n; whole += K * W) {
    const std::uint64_t k = k0 + whole;
    if (std::uint32_t(k) > 0xffffffffu - std::uint32_t(K * W - 1)) break;  // the rest below
    ub c[K];
    for (std::size_t j = 0; j < K; ++j) c[j] = ub(std::uint32_t(k + j * W)) + lanes;
    primitives::philox_word0_interleaved<A, K>(c, std::uint32_t(k >> 32), key0, key1);
    fb g[K];
    for (std::size_t j = 0; j < K; ++j)
      g[j] = gumbel_of<A>(smax::detail::bitcast<std::int32_t>(c[j] >> 9));
    for (std::size_t j = 0; j < K; ++j) {
      const fb v = base ? fb::load_unaligned(base + whole + j * W) + g[j] : g[j];
      v.store_unaligned(y + whole + j * W);
    }
  }
  for (; whole + W <= n; whole += W) {
    const std::uint64_t k = k0 + whole;
    ib mv;
    if (std::uint32_t(k) <= 0xffffffffu - std::uint32_t(W - 1)) {
      const ub w0 = primitives::philox_word0<A>(ub(std::uint32_t(k)) + lanes,
                                                std::uint32_t(k >> 32), key0, key1);
      mv = smax::detail::bitcast<std::int32_t>(w0 >> 9);
    } else {
      for (std::size_t j = 0; j < W; ++j)
        m[j] = std::int32_t(primitives::philox_element<A>(seed, k + j).w[0] >> 9);
      mv = ib::load_aligned(m);
    }
    const fb g = gumbel_of<A>(mv);
    const fb v = base ? fb::load_unaligned(base + whole) + g : g;
    v.store_unaligned(y + whole);
  }
  base = base ? base + whole : base;
  y += whole;
  n -= whole;
  k0 += whole;
#endif
  for (std::size_t start = 0; start < n; start += noise_chunk) {
    const std::size_t len = n - start < noise_chunk ? n - start : noise_chunk;
    for (std::size_t i = 0; i < len; ++i)
      m[i] = std::int32_t(primitives::philox_element<A>(seed, k0 + start + i).w[0] >> 9);
    std::size_t i = 0;
    for (; i + W <= len; i += W) {
      const fb g = gumbel_of<A>(ib::load_aligned(m + i));
      const fb v = base ? fb::load_unaligned(base + start + i) + g : g;
      v.store_unaligned(y + start + i);
    }
    if (i < len) {
      alignas(64) float tail[W];
      for (std::size_t j = i; j < len; ++j) m[j - i] = m[j];
      for (std::size_t j = len - i; j < W; ++j) m[j] = 0;
      gumbel_of<A>(ib::load_aligned(m)).store_aligned(tail);
      for (std::size_t j = i; j < len; ++j)
        y[start + j] = base ? base[start + j] + tail[j - i] : tail[j - i];
    }
  }
}

template <class A>
inline void add_seeded_noise(const double* base, double* y, std::size_t n, std::uint64_t seed,
                             std::uint64_t k0) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const double u = uniform_double<A>(primitives::philox_element<A>(seed, k0 + i));
    const double g = -::log(-::log(u));
    y[i] = base ? base[i] + g : g;
  }
}

template <class A, class T>
inline void add_noise(const T* x, const T* noise, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t W = batch::size;
  std::size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const batch a = batch::load_unaligned(x + i) + batch::load_unaligned(noise + i);
    const batch b = batch::load_unaligned(x + i + W) + batch::load_unaligned(noise + i + W);
    a.store_unaligned(y + i);
    b.store_unaligned(y + i + W);
  }
  for (; i + W <= n; i += W)
    (batch::load_unaligned(x + i) + batch::load_unaligned(noise + i)).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = x[i] + noise[i];
}

template <class A, class T>
inline bool valid_tau(T tau) noexcept {
  return primitives::is_finite(tau) && tau > T(0);
}

// y holds z = x + g: the one-hot of its first maximum; NaN for a NaN, +inf or all -inf row (bit
// tests: -ffast-math may fold comparisons with NaN or inf).
template <class A, class T>
inline void one_hot_row(T* y, std::size_t n) noexcept {
  std::size_t best = n;
  T best_value = T(0);
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    const T v = y[i];
    if (primitives::is_nan(v) || primitives::is_pos_inf(v)) {
      bad = true;
      break;
    }
    if (primitives::is_neg_inf(v)) continue;
    if (best == n || v > best_value) best = i, best_value = v;
  }
  if (bad || best == n) return fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
  for (std::size_t i = 0; i < n; ++i) y[i] = T(0);
  y[best] = T(1);
}

// Rows per block: z of a block is written, then normalised while still in cache.
template <class T>
inline std::size_t rows_per_block(std::size_t cols) noexcept {
  const std::size_t bytes = cols * sizeof(T);
  constexpr std::size_t block_bytes = std::size_t(32) << 10;
  return bytes >= block_bytes || bytes == 0 ? 1 : block_bytes / bytes;
}

// The soft (or hard) output from z already in y, for a block of rows.
template <class A, class T>
inline void finish_rows(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, T tau,
                        bool hard) noexcept {
  if (!valid_tau<A>(tau)) {
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  if (hard) {
    for (std::size_t r = 0; r < rows; ++r) one_hot_row<A>(y + r * ldy, cols);
    return;
  }
  softmax_table<A>::forward(y, ldy, y, ldy, rows, cols, tau, 0u, algorithm_id::automatic);
}

// Calls make_z(first_row, count) to write z into a block of rows of y, then finishes them.
template <class A, class T, class F>
inline void blocked_rows(T* y, std::size_t ldy, std::size_t rows, std::size_t cols, T tau,
                         bool hard, F&& make_z) noexcept {
  const std::size_t block = rows_per_block<T>(cols);
  for (std::size_t first = 0; first < rows; first += block) {
    const std::size_t count = rows - first < block ? rows - first : block;
    make_z(first, count);
    finish_rows<A>(y + first * ldy, ldy, count, cols, tau, hard);
  }
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, const T* noise, std::size_t ldn, T* y,
                         std::size_t ldy, std::size_t rows, std::size_t cols, T tau,
                         bool hard) noexcept {
  blocked_rows<A>(y, ldy, rows, cols, tau, hard, [&](std::size_t first, std::size_t count) {
    for (std::size_t r = first; r < first + count; ++r)
      add_noise<A>(x + r * ldx, noise + r * ldn, y + r * ldy, cols);
  });
}

template <class A, class T>
inline void forward_seeded_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                std::size_t rows, std::size_t cols, T tau, bool hard,
                                std::uint64_t seed, std::uint64_t offset) noexcept {
  blocked_rows<A>(y, ldy, rows, cols, tau, hard, [&](std::size_t first, std::size_t count) {
    for (std::size_t r = first; r < first + count; ++r)
      add_seeded_noise<A>(x + r * ldx, y + r * ldy, cols, seed,
                          offset + std::uint64_t(r) * std::uint64_t(cols));
  });
}

template <class A, class T>
inline void backward_rows(const T* x, std::size_t ldx, const T* noise, std::size_t ldn,
                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx, std::size_t rows,
                          std::size_t cols, T tau) noexcept {
  const std::size_t block = rows_per_block<T>(cols);
  for (std::size_t first = 0; first < rows; first += block) {
    const std::size_t count = rows - first < block ? rows - first : block;
    forward_rows<A>(x + first * ldx, ldx, noise + first * ldn, ldn, dx + first * lddx, lddx,
                    count, cols, tau, false);
    softmax_table<A>::backward(dx + first * lddx, lddx, dy + first * lddy, lddy,
                               dx + first * lddx, lddx, count, cols, tau, 0u);
  }
}

template <class A, class T>
inline void backward_seeded_rows(const T* x, std::size_t ldx, const T* dy, std::size_t lddy,
                                 T* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                                 T tau, std::uint64_t seed, std::uint64_t offset) noexcept {
  const std::size_t block = rows_per_block<T>(cols);
  for (std::size_t first = 0; first < rows; first += block) {
    const std::size_t count = rows - first < block ? rows - first : block;
    forward_seeded_rows<A>(x + first * ldx, ldx, dx + first * lddx, lddx, count, cols, tau, false,
                           seed, offset + std::uint64_t(first) * std::uint64_t(cols));
    softmax_table<A>::backward(dx + first * lddx, lddx, dy + first * lddy, lddy,
                               dx + first * lddx, lddx, count, cols, tau, 0u);
  }
}

}  // namespace detail

template <class A>
void gumbel_softmax_table<A>::forward(const float* x, std::size_t ldx, const float* noise,
                                      std::size_t ldn, float* y, std::size_t ldy,
                                      std::size_t rows, std::size_t cols, float tau,
                                      bool hard) noexcept {
  detail::forward_rows<A>(x, ldx, noise, ldn, y, ldy, rows, cols, tau, hard);
}
template <class A>
void gumbel_softmax_table<A>::forward(const double* x, std::size_t ldx, const double* noise,
                                      std::size_t ldn, double* y, std::size_t ldy,
                                      std::size_t rows, std::size_t cols, double tau,
                                      bool hard) noexcept {
  detail::forward_rows<A>(x, ldx, noise, ldn, y, ldy, rows, cols, tau, hard);
}
template <class A>
void gumbel_softmax_table<A>::forward_seeded(const float* x, std::size_t ldx, float* y,
                                             std::size_t ldy, std::size_t rows, std::size_t cols,
                                             float tau, bool hard, std::uint64_t seed,
                                             std::uint64_t offset) noexcept {
  detail::forward_seeded_rows<A>(x, ldx, y, ldy, rows, cols, tau, hard, seed, offset);
}
template <class A>
void gumbel_softmax_table<A>::forward_seeded(const double* x, std::size_t ldx, double* y,
                                             std::size_t ldy, std::size_t rows, std::size_t cols,
                                             double tau, bool hard, std::uint64_t seed,
                                             std::uint64_t offset) noexcept {
  detail::forward_seeded_rows<A>(x, ldx, y, ldy, rows, cols, tau, hard, seed, offset);
}
template <class A>
void gumbel_softmax_table<A>::backward(const float* x, std::size_t ldx, const float* noise,
                                       std::size_t ldn, const float* dy, std::size_t lddy,
                                       float* dx, std::size_t lddx, std::size_t rows,
                                       std::size_t cols, float tau) noexcept {
  detail::backward_rows<A>(x, ldx, noise, ldn, dy, lddy, dx, lddx, rows, cols, tau);
}
template <class A>
void gumbel_softmax_table<A>::backward(const double* x, std::size_t ldx, const double* noise,
                                       std::size_t ldn, const double* dy, std::size_t lddy,
                                       double* dx, std::size_t lddx, std::size_t rows,
                                       std::size_t cols, double tau) noexcept {
  detail::backward_rows<A>(x, ldx, noise, ldn, dy, lddy, dx, lddx, rows, cols, tau);
}
template <class A>
void gumbel_softmax_table<A>::backward_seeded(const float* x, std::size_t ldx, const float* dy,
                                              std::size_t lddy, float* dx, std::size_t lddx,
                                              std::size_t rows, std::size_t cols, float tau,
                                              std::uint64_t seed, std::uint64_t offset) noexcept {
  detail::backward_seeded_rows<A>(x, ldx, dy, lddy, dx, lddx, rows, cols, tau, seed, offset);
}
template <class A>
void gumbel_softmax_table<A>::backward_seeded(const double* x, std::size_t ldx, const double* dy,
                                              std::size_t lddy, double* dx, std::size_t lddx,
                                              std::size_t rows, std::size_t cols, double tau,
                                              std::uint64_t seed, std::uint64_t offset) noexcept {
  detail::backward_seeded_rows<A>(x, ldx, dy, lddy, dx, lddx, rows, cols, tau, seed, offset);
}
template <class A>
void gumbel_softmax_table<A>::noise(float* g, std::size_t n, std::uint64_t seed,
                                    std::uint64_t offset) noexcept {
  detail::add_seeded_noise<A>(static_cast<const float*>(nullptr), g, n, seed, offset);
}
template <class A>
void gumbel_softmax_table<A>::noise(double* g, std::size_t n, std::uint64_t seed,
                                    std::uint64_t offset) noexcept {
  detail::add_seeded_noise<A>(static_cast<const double*>(nullptr), g, n, seed, offset);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(gumbel_softmax_table)
