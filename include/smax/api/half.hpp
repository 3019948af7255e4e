#pragma once
// 16-bit input and output (smax::bf16, smax::fp16; docs/half.md): the forms
//   name(x, y, n [, opts]), name_rows(x, y, rows, cols, ld [, opts])
// with x and y both bf16 or both fp16, or x float and y 16-bit, for every family. The family
// computes in float: its rows are widened (exactly) into a float tile, the family's float rows
// form runs on the tile, and its results are rounded to the output type (to nearest even). So a
// row gets the bits of narrow(family(widen(x))), with the family's float bound, edge rules and
// options (zero_masked_rows included), plus the final rounding: at most half an ulp of the output
// type.
//
// Rows longer than half_whole_row_bytes of floats: the families that split long rows (softmax,
// log-softmax) go through their chunk states as the executor forms do (api/entry.hpp: each
// chunk reduced, the states merged in order, each chunk normalised), widening each chunk twice
// and never holding the row in float, within the family's bound of the float call; the other
// families widen the whole row. x == y is allowed (same type); a float x must not overlap y.
//
// The tile lives in a per-thread buffer (primitives::scratch under the tag half_tiles). When it
// cannot be allocated, every row of the call is NaN (and none is reported), as the kernels with
// scratch buffers document. (Included by entry.hpp after the entry it calls, api::forward.)

#include <cstddef>
#include <type_traits>

#include "../config.hpp"
#include "../half.hpp"
#include "../kernels/convert.hpp"
#include "../primitives/scratch.hpp"

SMAX_BEGIN_NAMESPACE
namespace api {

// The tag of the 16-bit forms' float tile (primitives::scratch_bytes<half_tiles>; the tests set
// primitives::scratch_limit<half_tiles> to check the allocation-failure path).
struct half_tiles {};

// The float tile: rows of up to this many bytes together (a row longer than this is a tile of
// its own; one that splits, chunks of this size). Small enough to stay in the L1 or L2 cache
// between its widening, the family's passes and its narrowing.
inline constexpr std::size_t half_tile_bytes = std::size_t(32) * 1024;
// A row of a family that splits long rows goes through a tile of its own, whole, up to this many
// bytes of floats: there it stays in L2 and the family's float algorithm runs unchanged (softmax:
// one exponential per entry, where the chunks' online states take two). Longer rows go by
// chunks of half_tile_bytes.
inline constexpr std::size_t half_whole_row_bytes = std::size_t(256) * 1024;

template <class In, class Out>
using if_half_io_t = std::enable_if_t<
    ::smax::detail::is_half_v<Out> && (std::is_same_v<In, Out> || std::is_same_v<In, float>), int>;

// to[i] = float(from[i]) (a float row is copied by the family's call itself: see below).
template <class Dispatch, class H>
SMAX_ALWAYS_INLINE void widen_row(const H* from, float* to, std::size_t n) noexcept {
  Dispatch::visit([&](auto a) { kernels::convert_table<decltype(a)>::widen(from, to, n); });
}
template <class Dispatch, class H>
SMAX_ALWAYS_INLINE void narrow_row(const float* from, H* to, std::size_t n) noexcept {
  Dispatch::visit([&](auto a) { kernels::convert_table<decltype(a)>::narrow(from, to, n); });
}

template <class H>
inline H half_nan() noexcept {
  return H::from_bits(std::is_same_v<H, bf16> ? 0x7FC0 : 0x7E00);
}

// Long rows by chunks of the tile (splits_long_rows families), one row at a time.
template <class Family, class Dispatch, class In, class Out>
void forward_half_chunks(const In* x, std::size_t ldx, Out* y, std::size_t ldy,
                         std::size_t rows, std::size_t cols, typename Family::options const& opts,
                         float* tile, std::size_t chunk) noexcept {
  using state = typename Family::template chunk_state<float>;
  for (std::size_t r = 0; r < rows; ++r) {
    const In* xr = x + r * ldx;
    Out* yr = y + r * ldy;
    // The chunk at `first` as floats: x itself when it is float, else widened into the tile.
    auto floats = [&](std::size_t first, std::size_t count) -> const float* {
      if constexpr (std::is_same_v<In, float>) {
        (void)count;
        return xr + first;
      } else {
        widen_row<Dispatch>(xr + first, tile, count);
        return tile;
      }
    };
    state s{};
    for (std::size_t first = 0; first < cols; first += chunk) {
      const std::size_t count = cols - first < chunk ? cols - first : chunk;
      // A 16-bit chunk straight from x (widened a block at a time in registers and L1, the same
      // bits), else through the tile.
      state part{};
      bool done = false;
      if constexpr (!std::is_same_v<In, float>)
        Dispatch::visit([&](auto a) {
          done = Family::reduce_chunk(a, xr + first, count, cols - first, opts, part);
        });
      if (!done) {
        const float* xc = floats(first, count);
        Dispatch::visit([&](auto a) { part = Family::reduce_chunk(a, xc, count, opts); });
      }
      s = Family::merge_chunks(s, part, opts);
    }
    // Pass 2 straight from x to y where both are 16-bit (widened and narrowed a vector at a time,
    // the same bits; past the cache when the row is larger than it).
    for (std::size_t first = 0; first < cols; first += chunk) {
      const std::size_t count = cols - first < chunk ? cols - first : chunk;
      if constexpr (std::is_same_v<In, Out>) {
        bool done = false;
        Dispatch::visit([&](auto a) {
          done = Family::normalize_chunk(a, s, xr + first, yr + first, count, cols, opts);
        });
        if (done) continue;
      }
      const float* xc = floats(first, count);
      Dispatch::visit([&](auto a) { Family::normalize_chunk(a, s, xc, tile, count, opts); });
      narrow_row<Dispatch>(tile, yr + first, count);
    }
  }
}

template <class Family, class Dispatch, class In, class Out>
rows_result_t<Family> forward_half(const In* x, std::size_t ldx, Out* y, std::size_t ldy,
                                   std::size_t rows, std::size_t cols,
                                   typename Family::options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
  Family::check(opts);
  [[maybe_unused]] std::size_t reported = 0;
  if (rows != 0 && cols != 0) {
    constexpr std::size_t tile_floats = half_tile_bytes / sizeof(float);
    const bool chunked = Family::splits_long_rows && cols > half_whole_row_bytes / sizeof(float);
    const std::size_t per_tile = chunked || cols >= tile_floats ? 1 : tile_floats / cols;
    float* tile = primitives::scratch<half_tiles, float>(chunked ? tile_floats : per_tile * cols);
    if (tile == nullptr) {
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t i = 0; i < cols; ++i) y[r * ldy + i] = half_nan<Out>();
    } else if (chunked) {
      if constexpr (Family::splits_long_rows)
        forward_half_chunks<Family, Dispatch>(x, ldx, y, ldy, rows, cols, opts, tile, tile_floats);
    } else {
      for (std::size_t first = 0; first < rows; first += per_tile) {
        const std::size_t count = rows - first < per_tile ? rows - first : per_tile;
        bool widened = false;
        if constexpr (Family::widens_in_first_pass && !std::is_same_v<In, float>)
          Dispatch::visit([&](auto a) {
            widened =
                Family::forward_widened(a, x + first * ldx, ldx, tile, cols, count, cols, opts);
          });
        if (widened) {
          for (std::size_t r = 0; r < count; ++r)
            narrow_row<Dispatch>(tile + r * cols, y + (first + r) * ldy, cols);
          continue;
        }
        const float* xs;
        std::size_t ldxs;
        if constexpr (std::is_same_v<In, float>) {
          xs = x + first * ldx;
          ldxs = ldx;
        } else {
          for (std::size_t r = 0; r < count; ++r)
            widen_row<Dispatch>(x + (first + r) * ldx, tile + r * cols, cols);
          xs = tile;
          ldxs = cols;
        }
        if constexpr (Family::reports_rows)
          reported += forward<Family, Dispatch>(xs, ldxs, tile, cols, count, cols, opts);
        else
          forward<Family, Dispatch>(xs, ldxs, tile, cols, count, cols, opts);
        for (std::size_t r = 0; r < count; ++r)
          narrow_row<Dispatch>(tile + r * cols, y + (first + r) * ldy, cols);
      }
    }
  }
  if constexpr (Family::reports_rows) return reported;
}

}  // namespace api
SMAX_END_NAMESPACE
