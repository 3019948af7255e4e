#pragma once
// Any axis: a family over the middle axis of a row-major outer × n × inner tensor,
// y[o, :, j] = family(x[o, :, j]) for every o < outer and j < inner (the `_axis` forms that
// SMAX_FAMILY stamps; docs/axis.md). A call with inner = 1 is the rows form on outer rows of n.
// Otherwise the columns are normalised a tile at a time. A family with a native kernel on the
// element type (Family::axis_kernel<T>: softmax and log-softmax on float) takes tiles of up to
// Family::axis_columns columns of one outer slice and normalises them where they lie, reading
// the slice in row order; a tile it passes back (an extreme temperature; a special column among
// columns too long for its blocked form) goes the other way. The other way, every other family's: up to one cache
// line of columns (16 floats, 8 doubles) gathered into rows of n, the family's rows form run on
// them, the results scattered back, so those columns get the bits of the rows form on that
// column, with its bounds, edge rules and options (zero_masked_rows included). The native
// kernel keeps the family's bounds and edge rules. x == y is allowed.
//
// The gathered tiles live in a per-thread buffer (primitives::scratch under its own tag, apart
// from the kernels' buffer, which a family's kernel may take while a tile is held). When it
// cannot be allocated, the columns that needed it are NaN, as the kernels with scratch buffers
// document for their rows; a family that reports rows reports none of them.
// (Included by entry.hpp after the entry it calls, api::forward.)

#include <atomic>
#include <cstddef>

#include "../config.hpp"
#include "../primitives/scratch.hpp"

SMAX_BEGIN_NAMESPACE
namespace api {

// The tag of the axis forms' tile buffer (primitives::scratch_bytes<axis_tiles>; the tests set
// primitives::scratch_limit<axis_tiles> to check the allocation-failure path).
struct axis_tiles {};

// A tile holds at most this many bytes of one of its two arrays (the gathered rows, the rows'
// results): columns beyond what fits are the next tile; at least one column per tile.
inline constexpr std::size_t axis_tile_bytes = std::size_t(256) * 1024;

// The shape of a call's tiles: `columns` columns per tile (the last of an outer slice may have
// fewer), `per_slice` tiles per outer slice. A function of the shape only.
struct axis_tiling {
  std::size_t columns;
  std::size_t per_slice;
  std::size_t ld;  // elements between the tile's rows: n padded to an odd number of 64-byte lines
};
inline constexpr axis_tiling plan_axis_tiles(std::size_t n, std::size_t inner,
                                             std::size_t element_bytes) noexcept {
  std::size_t columns = 64 / element_bytes;  // one cache line of each row of the tensor read
  const std::size_t fit = axis_tile_bytes / (n * element_bytes);
  if (fit < columns) columns = fit < 1 ? 1 : fit;
  if (columns > inner) columns = inner;
  // Rows a power of two of bytes apart share their cache sets (and 4 KiB aliasing): the 16
  // streams of a gather to a tile of 4096 floats fought over 12 ways. An odd number of lines
  // apart, they fall in different sets.
  std::size_t lines = (n * element_bytes + 63) / 64;
  if (lines % 2 == 0) ++lines;
  return {columns, (inner + columns - 1) / columns, lines * 64 / element_bytes};
}

// to[c·to_ld + i] = from[i·from_ld + c] for i < rows, c < cols: a tile's gather (rows = n,
// cols = its columns) and its scatter (the reverse). Square blocks of a 64-byte line's elements
// on both sides, whose loads and stores are whole lines (vector moves and shuffles for the
// compiler), where the plain loop wrote one element to each row in turn; the edges element by
// element.
template <class T>
inline void copy_transposed(const T* from, std::size_t from_ld, T* to, std::size_t to_ld,
                            std::size_t rows, std::size_t cols) noexcept {
  constexpr std::size_t line = 64 / sizeof(T);
  const std::size_t full_rows = rows - rows % line, full_cols = cols - cols % line;
  for (std::size_t i = 0; i < full_rows; i += line)
    for (std::size_t c = 0; c < full_cols; c += line) {
      T block[line][line];
      for (std::size_t k = 0; k < line; ++k)
        for (std::size_t l = 0; l < line; ++l) block[l][k] = from[(i + k) * from_ld + c + l];
      for (std::size_t l = 0; l < line; ++l)
        for (std::size_t k = 0; k < line; ++k) to[(c + l) * to_ld + i + k] = block[l][k];
    }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t c = i < full_rows ? full_cols : 0; c < cols; ++c)
      to[c * to_ld + i] = from[i * from_ld + c];
}

// Columns [0, width) of one outer slice (x and y at the slice's first column, rows `inner`
// apart) through the family's rows form: tiles of plan_axis_tiles(n, width) columns gathered
// into rows, normalised, scattered back. NaN columns where the tile buffer cannot be allocated.
// Returns the number of columns reported.
template <class Family, class Dispatch, class T>
std::size_t gather_columns(const T* xs, T* ys, std::size_t n, std::size_t inner, std::size_t width,
                           typename Family::options const& opts) noexcept {
  const axis_tiling tiling = plan_axis_tiles(n, width, sizeof(T));
  const std::size_t b = tiling.columns, ld = tiling.ld;
  T* rows =
      b * ld <= ~std::size_t(0) / 2 ? primitives::scratch<axis_tiles, T>(2 * b * ld) : nullptr;
  if (rows == nullptr) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t c = 0; c < width; ++c) ys[i * inner + c] = T(__builtin_nan(""));
    return 0;
  }
  T* results = rows + b * ld;
  std::size_t reported = 0;
  for (std::size_t j0 = 0; j0 < width; j0 += b) {
    const std::size_t w = width - j0 < b ? width - j0 : b;
    copy_transposed(xs + j0, inner, rows, ld, n, w);
    if constexpr (Family::reports_rows)
      reported += forward<Family, Dispatch>(rows, ld, results, ld, w, n, opts);
    else
      forward<Family, Dispatch>(rows, ld, results, ld, w, n, opts);
    copy_transposed(results, ld, ys + j0, inner, w, n);
  }
  return reported;
}

// The tiles of a call: for a family with a native kernel on T (Family::axis_kernel<T>), up to
// Family::axis_columns columns of a slice whatever n (the kernel streams through the slice's rows);
// otherwise plan_axis_tiles. A function of the shape only.
template <class Family, class T>
constexpr axis_tiling plan_tiles(std::size_t n, std::size_t inner) noexcept {
  if constexpr (Family::template axis_kernel<T>) {
    const std::size_t columns = inner < Family::axis_columns ? inner : Family::axis_columns;
    return {columns, (inner + columns - 1) / columns, 0};
  } else {
    return plan_axis_tiles(n, inner, sizeof(T));
  }
}

// Tiles [first, first + count) of a call (tile t: outer slice t / per_slice, columns from
// (t % per_slice)·columns), single-threaded; returns the number of columns reported. A tile the
// native kernel passes back (a special column among its columns) takes the rows form.
template <class Family, class Dispatch, class T>
std::size_t forward_axis_tiles(const T* x, T* y, std::size_t n, std::size_t inner,
                               typename Family::options const& opts, axis_tiling tiling,
                               std::size_t first, std::size_t count) noexcept {
  const std::size_t b = tiling.columns;
  std::size_t reported = 0;
  for (std::size_t t = first; t < first + count; ++t) {
    const std::size_t o = t / tiling.per_slice, j0 = (t % tiling.per_slice) * b;
    const std::size_t w = inner - j0 < b ? inner - j0 : b;
    const T* xs = x + o * n * inner + j0;
    T* ys = y + o * n * inner + j0;
    if constexpr (Family::template axis_kernel<T>) {
      if (Dispatch::visit(
              [&](auto a) { return Family::forward_axis(a, xs, ys, n, inner, w, opts); }))
        continue;
    }
    reported += gather_columns<Family, Dispatch>(xs, ys, n, inner, w, opts);
  }
  return reported;
}

template <class Family, class Dispatch, class T>
rows_result_t<Family> forward_axis(const T* x, T* y, std::size_t outer, std::size_t n,
                                   std::size_t inner, typename Family::options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || outer == 0 || n == 0 || inner == 0);
  if (inner == 1 || outer == 0 || n == 0 || inner == 0)  // forward checks the options
    return forward<Family, Dispatch>(x, n, y, n, inner == 0 ? 0 : outer, n, opts);
  Family::check(opts);
  const axis_tiling tiling = plan_tiles<Family, T>(n, inner);
  const std::size_t reported =
      forward_axis_tiles<Family, Dispatch>(x, y, n, inner, opts, tiling, 0, outer * tiling.per_slice);
  if constexpr (Family::reports_rows) return reported;
  (void)reported;
}

// On an executor: tasks of whole tiles, at least task_grain_bytes of x each and at most
// max_tasks, so the columns get the same bits as without one.
template <class Family, class Dispatch, class T, class Executor>
rows_result_t<Family> forward_axis(const T* x, T* y, std::size_t outer, std::size_t n,
                                   std::size_t inner, typename Family::options const& opts,
                                   Executor&& ex) noexcept {
  if (inner == 1 || outer == 0 || n == 0 || inner == 0 || x == nullptr || y == nullptr) {
    if (inner == 1)
      return forward<Family, Dispatch>(x, n, y, n, outer, n, opts, algorithm_choice::automatic,
                                       ex);
    return forward_axis<Family, Dispatch>(x, y, outer, n, inner, opts);
  }
  Family::check(opts);
  const axis_tiling tiling = plan_tiles<Family, T>(n, inner);
  const std::size_t tiles = outer * tiling.per_slice;
  const std::size_t tile_bytes = tiling.columns * n * sizeof(T);  // of x
  std::size_t per_task = tile_bytes >= task_grain_bytes ? 1 : task_grain_bytes / tile_bytes;
  if ((tiles + per_task - 1) / per_task > max_tasks) per_task = (tiles + max_tasks - 1) / max_tasks;
  const std::size_t tasks = (tiles + per_task - 1) / per_task;
  if (tasks <= 1) return forward_axis<Family, Dispatch>(x, y, outer, n, inner, opts);
  [[maybe_unused]] std::atomic<std::size_t> reported{0};
  auto task = [&](std::size_t k) {
    const std::size_t first = k * per_task;
    const std::size_t count = tiles - first < per_task ? tiles - first : per_task;
    const std::size_t r =
        forward_axis_tiles<Family, Dispatch>(x, y, n, inner, opts, tiling, first, count);
    if constexpr (Family::reports_rows) reported.fetch_add(r, std::memory_order_relaxed);
    (void)r;
  };
  ex(tasks, task);
  if constexpr (Family::reports_rows) return reported.load(std::memory_order_relaxed);
}

}  // namespace api
SMAX_END_NAMESPACE
