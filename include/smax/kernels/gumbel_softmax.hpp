#pragma once
// Gumbel-softmax (docs/gumbel_softmax.md) for one instruction set A:
//   y = softmax((x + g)/tau)                      (soft)
//   y = one_hot(first argmax of (x + g))          (hard)
// with g the caller's noise or Gumbel noise drawn from Philox-4×32-10 keyed by (seed, element).
//
// The soft form runs softmax's kernels on z = x + g: with the caller's noise, z is formed by their
// first pass (in registers for short rows, else written into y as the pass reads x and g, the
// later passes reading y in place: soft_rows); the seeded form, hard rows and temperatures off the
// vector kernels' path write z into y first, a block of rows at a time so that z is still in
// cache when softmax reads it. The backward recomputes y_soft into dx the same way (bit for bit
// the forward's soft output) and runs softmax's backward in place:
// dx = (1/tau)·y_soft ⊙ (dy - <dy, y_soft>), for soft and hard alike (straight-through).
//
// Seeded noise, element k (k = offset + r·cols + c): Philox-4×32-10 blocks under key seed, block b
// of counter (b low, b high, 0, 0). Sixteen blocks make a group; every word of a block is used:
//   float:  element 64q + 16w + l   from word w of block 16q + l           (w < 4, l < 16)
//           u = (word >> 9) + 1/2, scaled by 2^-23: 23 random bits, u in [2^-24, 1 - 2^-24];
//   double: element 32q + 16h + l   from words 2h, 2h + 1 of block 16q + l  (h < 2)
//           u = ((w_2h << 20) | (w_2h+1 >> 12)) + 1/2, scaled by 2^-52: u in [2^-53, 1 - 2^-53];
// so u is never 0 or 1 and is exact in T, and the noise of k depends on (seed, k) alone. A
// register of consecutive elements holds one word of consecutive blocks, so the vector generator
// needs no shuffles, and the fixed 16-block layout gives every instruction set and every split of
// the rows the same noise. g = -log(-log(u)): float with the vector log below (every product kept
// apart from its sum, so no instruction set fuses them: the same bits on SSE2, AVX2 with FMA and
// AVX-512), double with libm's log (the same function on every instruction set of one machine).
// The float generator runs on whole registers on x86 (primitives::philox_interleaved); the double
// one, and every one elsewhere, a block at a time.

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

// log of N registers of positive normal floats, Cephes' logf: t = 2^e·m, m in [sqrt(1/2),
// sqrt(2)), f = m - 1, log t = e·ln2 + f - f²/2 + f³·P(f), ln2 split in two (0.693359375 is exact
// in 9 bits) so e·ln2 adds no rounding of note. About 1 ulp (tests/gumbel_softmax_test.cpp
// measures the noise). Every product goes through detail::opaque before it is added, so no
// compiler contracts it into an fma: the result has the same bits on every instruction set. The N
// registers go step by step side by side: each one's polynomial is a chain of dependent
// operations, and the opaque values keep the compiler from reordering them, so N chains written
// interleaved are what overlaps them.
template <class A, std::size_t N>
SMAX_ALWAYS_INLINE void reproducible_log(xsimd::batch<float, A> (&t)[N]) noexcept {
  using fb = xsimd::batch<float, A>;
  using ib = xsimd::batch<std::int32_t, A>;
  using smax::detail::opaque;
  constexpr float c[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                         -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                         2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
  fb f[N], fe[N], z[N], p[N];
  SMAX_UNROLL
  for (std::size_t j = 0; j < N; ++j) {
    ib i = smax::detail::bitcast<std::int32_t>(t[j]);
    i = i + ib(0x3f800000 - 0x3f3504f3);  // m's exponent becomes 0 exactly when m >= sqrt(1/2)
    fe[j] = xsimd::to_float((i >> 23) - ib(127));
    i = (i & ib(0x007fffff)) + ib(0x3f3504f3);
    f[j] = smax::detail::bitcast<float>(i) - fb(1.0f);
    z[j] = opaque(f[j] * f[j]);
    p[j] = fb(c[0]);
  }
  for (std::size_t k = 1; k < sizeof(c) / sizeof(c[0]); ++k) {
    SMAX_UNROLL
    for (std::size_t j = 0; j < N; ++j) p[j] = opaque(p[j] * f[j]) + fb(c[k]);
  }
  SMAX_UNROLL
  for (std::size_t j = 0; j < N; ++j) {
    fb y = opaque(opaque(p[j] * f[j]) * z[j]);
    y = y + opaque(fe[j] * fb(-2.12194440e-4f));
    y = y - opaque(z[j] * fb(0.5f));
    t[j] = (f[j] + y) + opaque(fe[j] * fb(0.693359375f));
  }
}

// Gumbel noise of N registers of the uniforms' integers m (u = (m + 1/2)·2^-23), in place.
template <class A, std::size_t N>
SMAX_ALWAYS_INLINE void gumbel_of(xsimd::batch<std::uint32_t, A> const (&m)[N],
                                  xsimd::batch<float, A> (&g)[N]) noexcept {
  using fb = xsimd::batch<float, A>;
  SMAX_UNROLL
  for (std::size_t j = 0; j < N; ++j)  // exact
    g[j] = (xsimd::to_float(smax::detail::bitcast<std::int32_t>(m[j])) + fb(0.5f)) * fb(0x1p-23f);
  reproducible_log<A>(g);
  SMAX_UNROLL
  for (std::size_t j = 0; j < N; ++j) g[j] = fb(0.0f) - g[j];  // in [6e-8, 16.7]
  reproducible_log<A>(g);
  SMAX_UNROLL
  for (std::size_t j = 0; j < N; ++j) g[j] = fb(0.0f) - g[j];
}

template <class A>
SMAX_ALWAYS_INLINE double gumbel_double(std::uint32_t high, std::uint32_t low) noexcept {
  const std::uint64_t m = (std::uint64_t(high) << 20) | (low >> 12);
  const double u = (static_cast<double>(m) + 0.5) * 0x1p-52;
  return -::log(-::log(u));
}

// Elements per group of 16 Philox blocks (the layout above).
template <class T>
constexpr std::size_t noise_group = sizeof(T) == 4 ? 64 : 32;

// Float groups computed at once: four registers of blocks in flight (their rounds and the
// logarithms' polynomials are chains of dependent operations that overlap side by side).
template <class A>
constexpr std::size_t float_groups_at_once =
    xsimd::batch<float, A>::size >= 16 ? 4 : xsimd::batch<float, A>::size == 8 ? 2 : 1;

// The noise of the G float groups from q into out (element 64q + i at out[i]).
template <class A, std::size_t G>
SMAX_ALWAYS_INLINE void float_noise_groups(std::uint64_t q, std::uint64_t seed,
                                           float* out) noexcept {
  constexpr std::uint64_t group_mask = (std::uint64_t(1) << 58) - 1;  // 2^64 elements / 64
  using fb = xsimd::batch<float, A>;
  constexpr std::size_t W = fb::size;
  static_assert(16 % W == 0, "a register holds part of a group's 16 blocks");
#if defined(SMAX_PHILOX_VECTOR)
  using ub = xsimd::batch<std::uint32_t, A>;
  constexpr std::size_t R = 16 / W, K = G * R;  // registers of blocks
  alignas(64) std::uint32_t lane_index[W];
  for (std::size_t j = 0; j < W; ++j) lane_index[j] = std::uint32_t(j);
  const ub lanes = ub::load_aligned(lane_index);
  ub w0[K], w1[K], w2[K], w3[K];
  SMAX_UNROLL
  for (std::size_t g = 0; g < G; ++g) {
    SMAX_UNROLL
    for (std::size_t j = 0; j < R; ++j) {
      // 16(q + g) + jW: its low word is a multiple of W, so adding a lane never carries. Groups
      // count modulo 2^58 (element indices modulo 2^64): past the last group comes group 0.
      const std::uint64_t b = ((q + g) & group_mask) * 16 + j * W;
      w0[g * R + j] = ub(std::uint32_t(b)) + lanes;
      w1[g * R + j] = ub(std::uint32_t(b >> 32));
    }
  }
  primitives::philox_interleaved<A, K>(w0, w1, w2, w3, std::uint32_t(seed),
                                       std::uint32_t(seed >> 32));
  // The logarithms of P words at once: P·K chains side by side, up to what the registers hold
  // (a chain keeps four registers live).
  constexpr std::size_t chains = xsimd::batch<float, A>::size >= 16 ? 8 : 4;
  constexpr std::size_t P = K >= chains ? 1 : chains / K >= 4 ? 4 : chains / K;
  ub* words[4] = {w0, w1, w2, w3};
  SMAX_UNROLL
  for (std::size_t w = 0; w < 4; w += P) {
    ub m[P * K];
    SMAX_UNROLL
    for (std::size_t p = 0; p < P; ++p) {
      SMAX_UNROLL
      for (std::size_t r = 0; r < K; ++r) m[p * K + r] = words[w + p][r] >> 9;
    }
    fb g[P * K];
    gumbel_of<A>(m, g);
    // Register r of word w + p holds lanes jW.. of group g's word: elements 64g + 16w + jW + lane.
    SMAX_UNROLL
    for (std::size_t p = 0; p < P; ++p) {
      SMAX_UNROLL
      for (std::size_t r = 0; r < K; ++r)
        g[p * K + r].store_unaligned(out + 64 * (r / R) + 16 * (w + p) + (r % R) * W);
    }
  }
#else
  using ub = xsimd::batch<std::uint32_t, A>;
  alignas(64) std::uint32_t m[64 * G];
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t l = 0; l < 16; ++l) {
      const primitives::philox_block b =
          primitives::philox_of_counter<A>(seed, ((q + g) & group_mask) * 16 + l);
      for (std::size_t w = 0; w < 4; ++w) m[64 * g + 16 * w + l] = b.w[w] >> 9;
    }
  constexpr std::size_t K = 4;  // registers side by side
  static_assert((64 * G) % (K * W) == 0, "whole sets of K registers");
  for (std::size_t i = 0; i < 64 * G; i += K * W) {
    ub v[K];
    fb g[K];
    SMAX_UNROLL
    for (std::size_t r = 0; r < K; ++r) v[r] = ub::load_aligned(m + i + r * W);
    gumbel_of<A>(v, g);
    SMAX_UNROLL
    for (std::size_t r = 0; r < K; ++r) g[r].store_unaligned(out + i + r * W);
  }
#endif
}

// y[i] = base[i] + g[i] for i < n (base null: y = g). base == y is allowed.
template <class A, class T>
SMAX_ALWAYS_INLINE void add_into(const T* base, const T* g, T* y, std::size_t n) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t W = batch::size;
  std::size_t i = 0;
  if (base) {
    for (; i + W <= n; i += W)
      (batch::load_unaligned(base + i) + batch::load_unaligned(g + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = base[i] + g[i];
  } else {
    for (; i + W <= n; i += W) batch::load_unaligned(g + i).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = g[i];
  }
}

// y[i] = base[i] + g(k0 + i) for i < n (base null: y = g). base == y is allowed. Whole groups
// are drawn (a call's first and last may be partial: their other elements are not used).
template <class A>
inline void add_seeded_noise(const float* base, float* y, std::size_t n, std::uint64_t seed,
                             std::uint64_t k0) noexcept {
  constexpr std::size_t G = float_groups_at_once<A>;
  alignas(64) float g[64 * G];
  for (std::size_t i = 0; i < n;) {
    const std::uint64_t k = k0 + i;
    const std::size_t skip = std::size_t(k % 64);
    // G groups at once while the call needs all of them, then one at a time (short rows).
    const bool all = skip + (n - i) > 64 * (G - 1);
    if (all)
      float_noise_groups<A, G>(k / 64, seed, g);
    else
      float_noise_groups<A, 1>(k / 64, seed, g);
    const std::size_t span = all ? 64 * G : 64;
    const std::size_t len = span - skip < n - i ? span - skip : n - i;
    add_into<A>(base ? base + i : base, g + skip, y + i, len);
    i += len;
  }
}

template <class A>
inline void add_seeded_noise(const double* base, double* y, std::size_t n, std::uint64_t seed,
                             std::uint64_t k0) noexcept {
  double g[32];
  for (std::size_t i = 0; i < n;) {
    const std::uint64_t k = k0 + i;
    const std::size_t skip = std::size_t(k % 32);
    const std::size_t len = 32 - skip < n - i ? 32 - skip : n - i;
    for (std::size_t l = 0; l < 16; ++l) {
      // Only the blocks of the elements used: l and 16 + l.
      const bool low = l >= skip && l < skip + len, high = 16 + l >= skip && 16 + l < skip + len;
      if (!low && !high) continue;
      const primitives::philox_block b = primitives::philox_of_counter<A>(seed, (k / 32) * 16 + l);
      g[l] = gumbel_double<A>(b.w[0], b.w[1]);
      g[16 + l] = gumbel_double<A>(b.w[2], b.w[3]);
    }
    add_into<A>(base ? base + i : base, g + skip, y + i, len);
    i += len;
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
  // One softmax call per row: softmax's choice of path may depend on the number of rows, and a
  // row alone (one call with rows = 1) must give the bits of the same row inside a batch.
  for (std::size_t r = 0; r < rows; ++r)
    softmax_table<A>::forward(y + r * ldy, ldy, y + r * ldy, ldy, 1, cols, tau, 0u,
                              algorithm_id::automatic);
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

// Rows of at least this many bytes ask for the next block of x and g while the first pass reads
// one (softmax's blocked form asks for its next block in the exp pass, from the values it
// reads: here y); below it, the row's three arrays fit in L2 and the requests cost more than
// they hide.
constexpr std::size_t noise_block_prefetch_min_bytes = std::size_t(1) << 20;

// The row's values z = x + g for softmax's long-row kernels (a row source: row_policy.hpp):
// written into y as the first pass reads x and g, then read from y.
// The first pass also asks for what comes next from x and g: the next block of a long row, or
// the next row of a batch (next_x, next_g: its distances, 0 for none).
template <class A, class T>
struct noisy_row_source {
  static constexpr bool reads_ahead = true;
  const T* x;
  const T* g;
  T* z;
  std::size_t n;
  std::size_t next_x, next_g;
  template <bool Min>
  SMAX_ALWAYS_INLINE primitives::range_result<T> range(std::size_t start,
                                                       std::size_t len) const noexcept {
    const bool last = start + len >= n;
    const std::size_t next_block = n * sizeof(T) >= noise_block_prefetch_min_bytes ? len : 0;
    const std::size_t ahead_x = !last ? next_block : next_x ? next_x - start : 0;
    const std::size_t ahead_g = !last ? next_block : next_g ? next_g - start : 0;
    return primitives::add_reduce_range<A, Min>(x + start, g + start, z + start, len, ahead_x,
                                                ahead_g);
  }
  const T* block(std::size_t start) const noexcept { return z + start; }
  const T* values() const noexcept { return z; }
};

// A soft row of at most Count registers: z formed in registers and normalised there by softmax's
// short-row kernel.
template <class A, class T, bool Scaled, std::size_t Count>
SMAX_FLATTEN inline void soft_short_row(const T* x, const T* g, T* y, std::size_t n,
                                        row_params<T> const& p) noexcept {
  primitives::register_row<A, T, Count> row(x, n, -__builtin_huge_val());
  const primitives::register_row<A, T, Count> noise(g, n, T(0));
  primitives::unroll<Count>([&](auto j) SMAX_INLINE_LAMBDA { row.v[j] += noise.v[j]; });
  short_row_of<A, T, Scaled, Count>(row, y, n, p);
}

template <class B, class T, bool Scaled>
SMAX_ALWAYS_INLINE void soft_short_rows(const T* x, std::size_t ldx, const T* g, std::size_t ldn,
                                        T* y, std::size_t ldy, std::size_t rows, std::size_t cols,
                                        row_params<T> const& p) noexcept {
  primitives::with_register_count<B, T>(cols, [&](auto count) SMAX_INLINE_LAMBDA {
    for (std::size_t r = 0; r < rows; ++r)
      soft_short_row<B, T, Scaled, decltype(count)::value>(x + r * ldx, g + r * ldn, y + r * ldy,
                                                           cols, p);
  });
}

// The soft rows at 1/T = p.inv_temperature (1 unless Scaled; on the vector kernels' range): the
// bits of softmax's kernels on z (each row as softmax_table::forward on that row alone would
// give them), with z never read back from memory before its first pass: short rows form it in
// registers, long rows in softmax's first pass (noisy_row_source), which takes the place of the
// separate pass that wrote z.
template <class A, class T, bool Scaled>
inline void soft_rows(const T* x, std::size_t ldx, const T* g, std::size_t ldn, T* y,
                      std::size_t ldy, std::size_t rows, std::size_t cols,
                      row_params<T> const& p) noexcept {
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  if (cols <= width)
    return soft_short_rows<smax::detail::short_row_arch<A>, T, Scaled>(x, ldx, g, ldn, y, ldy, rows,
                                                                       cols, p);
  if (cols <= 4 * width)
    return soft_short_rows<A, T, Scaled>(x, ldx, g, ldn, y, ldy, rows, cols, p);
  // As softmax flushes a row alone (its guard counts the call's elements: here one row's).
  [[maybe_unused]] const flush_subnormal_results<A> ftz(
      p.inv_temperature <= flush_max_scale<T> ? cols : 0);
  const std::size_t bytes = cols * sizeof(T);
  for (std::size_t r = 0; r < rows; ++r) {
    const T* const xr = x + r * ldx;
    const T* const gr = g + r * ldn;
    T* const yr = y + r * ldy;
    row_params<T> q = p;
    // The next row: its x and g asked for by the first pass (noisy_row_source), its y by the exp
    // pass, as softmax asks for it.
    const bool ahead = r + 1 < rows && bytes >= prefetch_min_bytes;
    q.next_output_row = ahead ? ldy : 0;
    const noisy_row_source<A, T> source{xr, gr, yr, cols, ahead ? ldx : 0, ahead ? ldn : 0};
    if (cols <= 2 * row_block<T>) {
      three_pass_row_from<A, T, Scaled>(source, yr, cols, q);
    } else if (bytes <= three_pass_max_bytes) {
      if (!try_blocked_three_pass_row_from<A, T, Scaled>(source, yr, cols, q))
        three_pass_row_from<A, T, Scaled>(source, yr, cols, q);
    } else {
      add_noise<A>(xr, gr, yr, cols);
      online_row<A, T, Scaled>(yr, yr, cols, q);
    }
  }
}

template <class A, class T>
inline void forward_rows(const T* x, std::size_t ldx, const T* noise, std::size_t ldn, T* y,
                         std::size_t ldy, std::size_t rows, std::size_t cols, T tau,
                         bool hard) noexcept {
  // Soft rows at a temperature softmax's vector kernels take (softmax.hpp's forward_rows): the
  // fused rows; the rest (hard, invalid or extreme temperatures) z first, then softmax's call.
  if (!hard && valid_tau<A>(tau)) {
    if (tau == T(1))
      return soft_rows<A, T, false>(x, ldx, noise, ldn, y, ldy, rows, cols,
                                    row_params<T>{T(1), false, false});
    const T inv_tau = T(1) / tau;
    if (inv_tau >= wide_range_inv_temperature<T> && inv_tau <= huge_inv_temperature<T>)
      return soft_rows<A, T, true>(x, ldx, noise, ldn, y, ldy, rows, cols,
                                   row_params<T>{inv_tau, false, false});
  }
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
