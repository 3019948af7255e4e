#pragma once
// The one entry of every family, and the macro that stamps a family's public forms from it.
//
// A family is described by a small struct in its public header (api::<name>_family):
//
//   struct softpick_family {
//     using options = softpick_options;         // a type of plain `smax` (empty if nothing to set)
//     using grads = no_param_grads;              // or the parameter-gradient type
//     static constexpr backward_shape backward_form = backward_shape::from_input;
//     static constexpr bool has_algorithms = false;   // softmax's tags (three_pass, ...)
//     static constexpr bool masks_rows = true;        // zero_masked_rows handled by this layer
//     static constexpr double masked_row = 0.0;       // ... and the value it writes there
//     static constexpr bool reports_rows = false;     // forward returns a per-row report (below)
//     static constexpr bool splits_long_rows = false; // long rows split by chunks (executors)
//     static void check(options const&) noexcept;     // preconditions (asserts)
//     template <class A, class T> static void forward(A, x, ldx, y, ldy, rows, cols, opts, algorithm);
//     template <class A, class T> static void backward(A, x, ldx, y, ldy, dy, lddy, dx, lddx,
//                                                      rows, cols, opts, grads*);
//   };
//
// Its forward/backward only translate the options and call kernels::<family>_table<A>: every
// computation that depends on the instruction set happens inside the table, which runtime
// dispatch compiles in that instruction set's translation unit. (A computation here would be
// compiled with the caller's flags, and the runtime form would give other bits than the
// header-only form of the same instruction set.)
//
// A family whose forward reports something per row (reports_rows: unified-max softmax's
// fallback) has its Family::forward return the number of rows it reported for (std::size_t);
// api::forward and the rows forms return that count, the single-row forms whether the row was
// reported (bool). The other families' forms return void.
//
// A family with parameter gradients (backward_shape::from_input_with_grads) also has
//   static void add_grads(grads& into, grads const& part) noexcept;   // into += part
// with which the executor forms sum the gradients of their tasks (below).
//
// Executors (docs/threads.md): every form also takes an executor as its last argument, any
// object ex callable as ex(std::size_t tasks, f) that runs f(std::size_t task) for every task in
// [0, tasks) and returns when all are done. The call is split into tasks by its shape alone
// (rows, cols, sizeof(T): plan_rows below), never by the number of threads, so the result is
// the same whatever runs the tasks; a call of one task runs inline and never calls ex.
//
// api::forward / api::backward below check the arguments once for every family and every form;
// SMAX_FAMILY(name, family, dispatch) stamps the pointer forms (name, name_rows, name_backward,
// name_backward_rows, std::span forms under C++20, the algorithm-tag forms where the family has
// them) as one-line adaptors of them. The family headers stamp them with api::header_only,
// runtime.hpp with the runtime dispatcher, from the one list in families.hpp.

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "../algorithm.hpp"
#include "../config.hpp"
#include "../primitives/special.hpp"

#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define SMAX_HAS_SPAN 1
#endif

namespace smax {
// The parameter-gradient type of a family without learnable parameters (never passed by users).
struct no_param_grads {};
}  // namespace smax

// A lambda that must be inlined into its caller (the dispatch lambdas below sit on every call).
#define SMAX_LAMBDA_ALWAYS_INLINE __attribute__((always_inline))

SMAX_BEGIN_NAMESPACE
namespace api {

// The algorithm of a call: automatic (by row length) unless a tag names one (softmax family).
enum class algorithm_choice : unsigned { automatic, three_pass, online, two_pass };
inline constexpr algorithm_choice algorithm_of(three_pass_t) noexcept {
  return algorithm_choice::three_pass;
}
inline constexpr algorithm_choice algorithm_of(online_t) noexcept {
  return algorithm_choice::online;
}
inline constexpr algorithm_choice algorithm_of(two_pass_t) noexcept {
  return algorithm_choice::two_pass;
}

// Which arrays a family's backward pass reads besides dy: the forward output y only
// (softmax: dx = f(y, dy)), or the input x as well (softpick, MultiMax, SSMax), and whether it
// also returns the gradients of learnable parameters.
enum class backward_shape { from_output, from_input, from_input_with_grads };

// What a family description says unless it says otherwise: no parameter gradients, no algorithm
// tags, zero_masked_rows left to its kernels (or absent), no preconditions on the options.
struct family_defaults {
  using grads = no_param_grads;
  static constexpr bool has_algorithms = false;
  static constexpr bool masks_rows = false;
  static constexpr double masked_row = 0.0;
  static constexpr bool reports_rows = false;
  static constexpr bool splits_long_rows = false;
  // Whether the family's kernels widen 16-bit rows in their first pass (forward_widened, used by
  // api/half.hpp) rather than from a widened float tile.
  static constexpr bool widens_in_first_pass = false;
  // Whether the family normalises the middle axis of a tensor natively on T (forward_axis, used
  // by api/axis.hpp) rather than through its rows form on gathered columns.
  template <class T>
  static constexpr bool axis_kernel = false;
  template <class Options>
  static void check(Options const&) noexcept {}
};

// What the forms of a family return: the rows forms (and api::forward) the number of rows
// reported, the single-row forms whether that row was; void for the families without a report.
template <class Family>
using rows_result_t = std::conditional_t<Family::reports_rows, std::size_t, void>;
template <class Family>
using row_result_t = std::conditional_t<Family::reports_rows, bool, void>;

// The header-only dispatcher: the kernels of the best instruction set the including translation
// unit's flags enable.
struct header_only {
  template <class F>
  static SMAX_ALWAYS_INLINE decltype(auto) visit(F&& f) noexcept {
    return f(xsimd::default_arch{});
  }
};

// Rows whose entries are all -inf, for the families whose kernels have no zero_masked_rows mode
// of their own: the runs of other rows go to f(first_row, row_count), each all-masked row is
// filled with `fill`. A row is classified by reading up to its first entry that is not -inf, so
// ordinary rows cost one load.
template <class T, class F>
inline void split_masked_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                              std::size_t cols, T fill, F&& f) noexcept {
  // Bit tests: -ffast-math may fold a comparison with -inf to false.
  std::size_t first = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = x + r * ldx;
    std::size_t i = 0;
    while (i < cols && primitives::is_neg_inf(row[i])) ++i;
    if (i < cols) continue;
    if (r > first) f(first, r - first);
    for (std::size_t j = 0; j < cols; ++j) y[r * ldy + j] = fill;
    first = r + 1;
  }
  if (rows > first) f(first, rows - first);
}

// zero_masked_rows for the families whose kernels have no such mode: out of line, so that the
// ordinary call inlines nothing of it.
// All-masked rows are never reported.
template <class Family, class Dispatch, class T>
[[gnu::noinline]] rows_result_t<Family> forward_zero_masked_rows(
    const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows, std::size_t cols,
    typename Family::options const& opts, algorithm_choice algorithm) noexcept {
  const T fill = static_cast<T>(Family::masked_row);
  [[maybe_unused]] std::size_t reported = 0;
  split_masked_rows(x, ldx, y, ldy, rows, cols, fill, [&](std::size_t first, std::size_t count) {
    Dispatch::visit([&](auto a) {
      if constexpr (Family::reports_rows)
        reported += Family::forward(a, x + first * ldx, ldx, y + first * ldy, ldy, count, cols,
                                    opts, algorithm);
      else
        Family::forward(a, x + first * ldx, ldx, y + first * ldy, ldy, count, cols, opts,
                        algorithm);
    });
  });
  if constexpr (Family::reports_rows) return reported;
}

template <class Family, class Dispatch, class T>
SMAX_ALWAYS_INLINE rows_result_t<Family> forward(
    const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows, std::size_t cols,
    typename Family::options const& opts,
    algorithm_choice algorithm = algorithm_choice::automatic) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
  Family::check(opts);
  if (rows == 0 || cols == 0) return rows_result_t<Family>();
  if constexpr (Family::masks_rows) {
    if (opts.zero_masked_rows)
      return forward_zero_masked_rows<Family, Dispatch>(x, ldx, y, ldy, rows, cols, opts,
                                                        algorithm);
  }
  return Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    return Family::forward(a, x, ldx, y, ldy, rows, cols, opts, algorithm);
  });
}

// x may be null for the families whose backward pass reads only y. grads, if not null, is set
// (to zero for an empty call). backward (after the executor section) is this, except that the
// parameter gradients of a call large enough to split are summed by task.
template <class Family, class Dispatch, class T>
SMAX_ALWAYS_INLINE void backward_unsplit(const T* x, std::size_t ldx, const T* y,
                                         std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                         std::size_t lddx, std::size_t rows, std::size_t cols,
                                         typename Family::options const& opts,
                                         typename Family::grads* grads) noexcept {
  constexpr bool reads_x = Family::backward_form != backward_shape::from_output;
  SMAX_ASSERT(((!reads_x || x != nullptr) && y != nullptr && dy != nullptr && dx != nullptr) ||
              rows == 0 || cols == 0);
  SMAX_ASSERT(((!reads_x || ldx >= cols) && ldy >= cols && lddy >= cols && lddx >= cols) ||
              rows <= 1);
  (void)reads_x;
  Family::check(opts);
  if (rows == 0 || cols == 0) {
    if (grads) *grads = typename Family::grads{};
    return;
  }
  if constexpr (Family::masks_rows && Family::backward_form == backward_shape::from_input) {
    // The rows zero_masked_rows set to 0 have zero gradient (x tells them apart; a kernel that
    // reads x would take them for the NaN rows they are without the option).
    if (opts.zero_masked_rows) {
      split_masked_rows(
          x, ldx, dx, lddx, rows, cols, T(0), [&](std::size_t first, std::size_t count) {
            Dispatch::visit([&](auto a) {
              Family::backward(a, x + first * ldx, ldx, y + first * ldy, ldy, dy + first * lddy,
                               lddy, dx + first * lddx, lddx, count, cols, opts, grads);
            });
          });
      return;
    }
  }
  Dispatch::visit([&](auto a) SMAX_LAMBDA_ALWAYS_INLINE {
    Family::backward(a, x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, opts, grads);
  });
}

template <class Family, backward_shape Shape>
using if_backward_t = std::enable_if_t<Family::backward_form == Shape, int>;
template <class Family>
using if_algorithms_t = std::enable_if_t<Family::has_algorithms, int>;

// ---------------------------------------------------------------------------------------------
// Executors: the split of a call into tasks.

// What every task should hold at least (bytes of one array, x's): a call smaller than this is
// one task, run inline. Large against what one executor call costs, small enough for a
// 4096 × 1024 batch to be 128 tasks (docs/threads.md has the measured figures).
inline constexpr std::size_t task_grain_bytes = std::size_t(128) * 1024;
// At most this many tasks per call (larger calls get larger tasks): bounds the per-task storage
// of gradients and online states, and is 16 tasks per core on 64 cores.
inline constexpr std::size_t max_tasks = 1024;
// Rows of at least this many bytes are split into chunks by the families that can (softmax and
// log-softmax through the online state; splits_long_rows).
inline constexpr std::size_t long_row_bytes = std::size_t(256) * 1024;

// A row split: task t runs rows [t·rows_per_task, min(rows, (t + 1)·rows_per_task)).
struct row_split {
  std::size_t tasks;
  std::size_t rows_per_task;
};

// A function of the shape only (rows, cols, element size): never of the thread count.
inline constexpr row_split plan_rows(std::size_t rows, std::size_t cols,
                                     std::size_t element_size) noexcept {
  if (rows == 0 || cols == 0) return {1, rows};
  const std::size_t row_bytes = cols * element_size;
  std::size_t per_task = row_bytes >= task_grain_bytes ? 1 : task_grain_bytes / row_bytes;
  if (per_task > rows) per_task = rows;
  std::size_t tasks = (rows + per_task - 1) / per_task;
  if (tasks > max_tasks) {
    per_task = (rows + max_tasks - 1) / max_tasks;
    tasks = (rows + per_task - 1) / per_task;
  }
  return {tasks, per_task};
}

// At most this many chunks per row in the stored-exponentials form (forward_split_chunks): its
// rows are at most 4 MiB (kernels::three_pass_max_bytes), 32 grains.
inline constexpr std::size_t max_stored_chunks = 32;

// A chunk split of long rows: every row in `chunks` chunks of `chunk` elements (the last one
// shorter); task t is chunk t % chunks of row t / chunks. chunks < 2: the rows are not split.
struct chunk_split {
  std::size_t chunks;
  std::size_t chunk;
};

inline constexpr chunk_split plan_chunks(std::size_t rows, std::size_t cols,
                                         std::size_t element_size) noexcept {
  const std::size_t row_bytes = cols * element_size;
  if (row_bytes < long_row_bytes || rows >= max_tasks / 2) return {1, cols};
  std::size_t chunks = (row_bytes + task_grain_bytes - 1) / task_grain_bytes;
  if (chunks > max_tasks / rows) chunks = max_tasks / rows;
  // Chunks start on 64-element boundaries (whole cache lines and registers when x is aligned).
  std::size_t chunk = (cols + chunks - 1) / chunks;
  chunk = (chunk + 63) / 64 * 64;
  chunks = (cols + chunk - 1) / chunk;
  return {chunks, chunk};
}

// What the executor forms accept: callable as ex(tasks, f) with f callable as f(task).
struct executor_task_probe {
  void operator()(std::size_t) const noexcept {}
};
template <class E, class = void>
struct is_executor : std::false_type {};
template <class E>
struct is_executor<E, std::void_t<decltype(std::declval<E&>()(
                          std::size_t(), std::declval<executor_task_probe&>()))>>
    : std::true_type {};
template <class E>
using if_executor_t = std::enable_if_t<is_executor<std::remove_reference_t<E>>::value, int>;

// Storage for one value per task, taken from the heap only by calls that split (new(nothrow):
// a null array makes the caller run its tasks in order on this thread, with the same result).
template <class V>
inline std::unique_ptr<V[]> task_values(std::size_t tasks) noexcept {
  return std::unique_ptr<V[]>(new (std::nothrow) V[tasks]());
}

// Rows split across tasks, each task the single-threaded call on its rows (zero_masked_rows
// included); a reported-rows count is summed (an integer: order does not matter).
template <class Family, class Dispatch, class T, class Executor>
[[gnu::noinline]] rows_result_t<Family> forward_split_rows(
    const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows, std::size_t cols,
    typename Family::options const& opts, algorithm_choice algorithm, row_split split,
    Executor& ex) noexcept {
  [[maybe_unused]] std::atomic<std::size_t> reported{0};
  auto task = [&](std::size_t t) {
    const std::size_t first = t * split.rows_per_task;
    const std::size_t count =
        rows - first < split.rows_per_task ? rows - first : split.rows_per_task;
    if constexpr (Family::reports_rows)
      reported.fetch_add(forward<Family, Dispatch>(x + first * ldx, ldx, y + first * ldy, ldy,
                                                   count, cols, opts, algorithm),
                         std::memory_order_relaxed);
    else
      forward<Family, Dispatch>(x + first * ldx, ldx, y + first * ldy, ldy, count, cols, opts,
                                algorithm);
  };
  ex(split.tasks, task);
  if constexpr (Family::reports_rows) return reported.load(std::memory_order_relaxed);
}

// Long rows split by chunks (splits_long_rows families), in one of two forms chosen by the
// family for the row (Family::splits_into_exp_chunks):
// * online (Stored = false): each chunk reduced to its online state (one task each), the states
//   of a row merged in chunk order on the calling thread, then every chunk normalised by its
//   row's merged state (one task each): x read twice, two exponentials per element;
// * stored exponentials (Stored = true, rows the single-threaded call takes in blocks): each
//   chunk's exponentials stored in y with its own shift (one task each), the chunks' (maximum,
//   shift, sum) merged in chunk order, then every chunk scaled in place by its share of the
//   row's sum: one exponential per element, as the single-threaded call.
// The result depends on the chunk split, which depends on the shape (and for the form, on the
// options) only.
template <class Family, class Dispatch, bool Stored, class T, class Executor>
[[gnu::noinline]] void forward_split_chunks(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t rows, std::size_t cols,
                                            typename Family::options const& opts, chunk_split split,
                                            Executor& ex) noexcept {
  using state = std::conditional_t<Stored, typename Family::template exp_chunk<T>,
                                   typename Family::template chunk_state<T>>;
  const std::size_t tasks = rows * split.chunks;
  auto length = [&](std::size_t c) {
    const std::size_t first = c * split.chunk;
    return cols - first < split.chunk ? cols - first : split.chunk;
  };
  auto reduce = [&](std::size_t t, state* out) {
    const std::size_t r = t / split.chunks, c = t % split.chunks;
    const T* const xc = x + r * ldx + c * split.chunk;
    Dispatch::visit([&](auto a) {
      if constexpr (Stored)
        *out = Family::exponentiate_chunk(a, xc, y + r * ldy + c * split.chunk, length(c), opts);
      else
        *out = Family::reduce_chunk(a, xc, length(c), opts);
    });
  };
  // The row's state from its chunks', in chunk order (cheap: a few exp per chunk, so not a task).
  auto merge_row = [&](const state* chunk) {
    state s = chunk[0];
    for (std::size_t c = 1; c < split.chunks; ++c) {
      if constexpr (Stored)
        s = Family::merge_exp_chunks(s, chunk[c], opts);
      else
        s = Family::merge_chunks(s, chunk[c], opts);
    }
    return s;
  };
  auto normalize = [&](std::size_t t, state const& own, state const& row) {
    const std::size_t r = t / split.chunks, c = t % split.chunks;
    T* const yc = y + r * ldy + c * split.chunk;
    Dispatch::visit([&](auto a) {
      if constexpr (Stored) {
        Family::scale_chunk(a, own, row, yc, length(c), opts);
      } else {
        (void)own;
        Family::normalize_chunk(a, row, x + r * ldx + c * split.chunk, yc, length(c), opts);
      }
    });
  };
  // Per task its chunk's state, then per row the merged one.
  const auto states = task_values<state>(tasks + rows);
  if (!states) {  // no memory for the states: the same reductions and merges, in order, here
    for (std::size_t r = 0; r < rows; ++r) {
      state chunk[max_stored_chunks];  // the row's chunks (the online form keeps the current one)
      state s{};
      for (std::size_t c = 0; c < split.chunks; ++c) {
        state& part = chunk[Stored ? c : 0];
        reduce(r * split.chunks + c, &part);
        if constexpr (!Stored) s = c == 0 ? part : Family::merge_chunks(s, part, opts);
      }
      if constexpr (Stored) s = merge_row(chunk);
      for (std::size_t c = 0; c < split.chunks; ++c)
        normalize(r * split.chunks + c, chunk[Stored ? c : 0], s);
    }
    return;
  }
  auto reduce_task = [&](std::size_t t) { reduce(t, &states[t]); };
  ex(tasks, reduce_task);
  for (std::size_t r = 0; r < rows; ++r) states[tasks + r] = merge_row(&states[r * split.chunks]);
  auto normalize_task = [&](std::size_t t) {
    normalize(t, states[t], states[tasks + t / split.chunks]);
  };
  ex(tasks, normalize_task);
}

// api::forward on an executor: the same result as without one for rows split across tasks
// (every family's rows are independent); long rows of splits_long_rows families (automatic
// algorithm only) split by chunks, within the family's bound of the unsplit call.
template <class Family, class Dispatch, class T, class Executor>
inline rows_result_t<Family> forward(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                     std::size_t rows, std::size_t cols,
                                     typename Family::options const& opts,
                                     algorithm_choice algorithm, Executor&& ex) noexcept {
  if (rows == 0 || cols == 0 || x == nullptr || y == nullptr)  // forward checks and returns
    return forward<Family, Dispatch>(x, ldx, y, ldy, rows, cols, opts, algorithm);
  if constexpr (Family::splits_long_rows) {
    if (algorithm == algorithm_choice::automatic) {
      const chunk_split chunks = plan_chunks(rows, cols, sizeof(T));
      if (chunks.chunks > 1) {
        SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
        Family::check(opts);
        if (Family::template splits_into_exp_chunks<T>(cols, opts) &&
            chunks.chunks <= max_stored_chunks)
          forward_split_chunks<Family, Dispatch, true>(x, ldx, y, ldy, rows, cols, opts, chunks,
                                                       ex);
        else
          forward_split_chunks<Family, Dispatch, false>(x, ldx, y, ldy, rows, cols, opts, chunks,
                                                        ex);
        return rows_result_t<Family>();
      }
    }
  }
  const row_split split = plan_rows(rows, cols, sizeof(T));
  if (split.tasks <= 1)
    return forward<Family, Dispatch>(x, ldx, y, ldy, rows, cols, opts, algorithm);
  SMAX_ASSERT(ldx >= cols && ldy >= cols);
  return forward_split_rows<Family, Dispatch>(x, ldx, y, ldy, rows, cols, opts, algorithm, split,
                                              ex);
}

// The backward pass of rows [first, first + count) of a call (a task of the row split).
template <class Family, class Dispatch, class T>
inline void backward_part(const T* x, std::size_t ldx, const T* y, std::size_t ldy, const T* dy,
                          std::size_t lddy, T* dx, std::size_t lddx, std::size_t first,
                          std::size_t count, std::size_t cols,
                          typename Family::options const& opts,
                          typename Family::grads* grads) noexcept {
  constexpr bool reads_x = Family::backward_form != backward_shape::from_output;
  backward_unsplit<Family, Dispatch>(reads_x ? x + first * ldx : x, ldx, y + first * ldy, ldy,
                                     dy + first * lddy, lddy, dx + first * lddx, lddx, count,
                                     cols, opts, grads);
}

// Parameter gradients of a split call: each task's into its own slot, then summed in task order
// from zero. The single-threaded call of a shape that splits sums the same way (api::backward),
// so the gradients are the same bits with or without an executor.
template <class Family, class Dispatch, class T, class Executor>
[[gnu::noinline]] void backward_split_grads(const T* x, std::size_t ldx, const T* y,
                                            std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                            std::size_t lddx, std::size_t rows, std::size_t cols,
                                            typename Family::options const& opts,
                                            typename Family::grads* grads, row_split split,
                                            Executor* ex) noexcept {
  using grads_t = typename Family::grads;
  auto part = [&](std::size_t t, grads_t* g) {
    const std::size_t first = t * split.rows_per_task;
    const std::size_t count =
        rows - first < split.rows_per_task ? rows - first : split.rows_per_task;
    backward_part<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, first, count, cols, opts,
                                    g);
  };
  std::unique_ptr<grads_t[]> parts;
  if (ex) parts = task_values<grads_t>(split.tasks);
  grads_t total{};
  if (!parts) {  // no executor (or no memory): the tasks in order on this thread
    for (std::size_t t = 0; t < split.tasks; ++t) {
      grads_t g{};
      part(t, &g);
      Family::add_grads(total, g);
    }
  } else {
    auto task = [&](std::size_t t) { part(t, &parts[t]); };
    (*ex)(split.tasks, task);
    for (std::size_t t = 0; t < split.tasks; ++t) Family::add_grads(total, parts[t]);
  }
  *grads = total;
}

// The executor of the single-threaded call: never called (backward_split_grads gets a null one).
struct no_executor {
  template <class F>
  void operator()(std::size_t, F&&) const noexcept {}
};

// The single-threaded backward pass (every form without an executor).
template <class Family, class Dispatch, class T>
SMAX_ALWAYS_INLINE void backward(const T* x, std::size_t ldx, const T* y, std::size_t ldy,
                                 const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols,
                                 typename Family::options const& opts,
                                 typename Family::grads* grads) noexcept {
  if constexpr (Family::backward_form == backward_shape::from_input_with_grads) {
    if (grads && rows != 0 && cols != 0) {
      const row_split split = plan_rows(rows, cols, sizeof(T));
      if (split.tasks > 1) {
        Family::check(opts);
        return backward_split_grads<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows,
                                                      cols, opts, grads, split,
                                                      static_cast<no_executor*>(nullptr));
      }
    }
  }
  backward_unsplit<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, opts, grads);
}

// Rows split across tasks, without parameter gradients.
template <class Family, class Dispatch, class T, class Executor>
[[gnu::noinline]] void backward_split_rows(const T* x, std::size_t ldx, const T* y,
                                           std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                                           std::size_t lddx, std::size_t rows, std::size_t cols,
                                           typename Family::options const& opts, row_split split,
                                           Executor& ex) noexcept {
  auto task = [&](std::size_t t) {
    const std::size_t first = t * split.rows_per_task;
    const std::size_t count =
        rows - first < split.rows_per_task ? rows - first : split.rows_per_task;
    backward_part<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, first, count, cols, opts,
                                    nullptr);
  };
  ex(split.tasks, task);
}

// api::backward on an executor: rows split across tasks (a long row stays one task); the same
// dx bits as without one, and the same parameter gradients (summed by task, as without one).
template <class Family, class Dispatch, class T, class Executor>
inline void backward(const T* x, std::size_t ldx, const T* y, std::size_t ldy, const T* dy,
                     std::size_t lddy, T* dx, std::size_t lddx, std::size_t rows,
                     std::size_t cols, typename Family::options const& opts,
                     typename Family::grads* grads, Executor&& ex) noexcept {
  const row_split split = plan_rows(rows, cols, sizeof(T));
  if (rows == 0 || cols == 0 || y == nullptr || split.tasks <= 1)
    return backward<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, opts, grads);
  constexpr bool reads_x = Family::backward_form != backward_shape::from_output;
  SMAX_ASSERT((!reads_x || x != nullptr) && dy != nullptr && dx != nullptr);
  SMAX_ASSERT((!reads_x || ldx >= cols) && ldy >= cols && lddy >= cols && lddx >= cols);
  (void)reads_x;
  Family::check(opts);
  if constexpr (Family::backward_form == backward_shape::from_input_with_grads) {
    if (grads) {
      auto* e = &ex;
      return backward_split_grads<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows,
                                                    cols, opts, grads, split, e);
    }
  }
  backward_split_rows<Family, Dispatch>(x, ldx, y, ldy, dy, lddy, dx, lddx, rows, cols, opts,
                                        split, ex);
}

}  // namespace api
SMAX_END_NAMESPACE

#include "axis.hpp"
#include "half.hpp"

// The span forms (C++20): x.size() == y.size() is a precondition.
#if defined(SMAX_HAS_SPAN)
#define SMAX_DETAIL_SPAN_FORMS(name, Family, Dispatch)                                            \
  inline ::smax::api::row_result_t<Family> name(                                                  \
      std::span<const float> x, std::span<float> y,                                               \
      typename Family::options const& opts = {}) noexcept {                                       \
    SMAX_ASSERT(x.size() == y.size());                                                            \
    return static_cast<::smax::api::row_result_t<Family>>(::smax::api::forward<Family, Dispatch>( \
        x.data(), x.size(), y.data(), x.size(), 1, x.size(), opts));                              \
  }                                                                                               \
  inline ::smax::api::row_result_t<Family> name(                                                  \
      std::span<const double> x, std::span<double> y,                                             \
      typename Family::options const& opts = {}) noexcept {                                       \
    SMAX_ASSERT(x.size() == y.size());                                                            \
    return static_cast<::smax::api::row_result_t<Family>>(::smax::api::forward<Family, Dispatch>( \
        x.data(), x.size(), y.data(), x.size(), 1, x.size(), opts));                              \
  }
#else
#define SMAX_DETAIL_SPAN_FORMS(name, Family, Dispatch)
#endif

// Every public form of a family, as adaptors of api::forward / api::backward:
//   name(x, y, n [, opts])                          name_rows(x, y, rows, cols, ld [, opts])
//   name(algorithm, x, y, n [, opts])               name_rows(algorithm, x, y, rows, cols, ld [, opts])
//   name_backward(y, dy, dx, n [, opts])            name_backward_rows(y, dy, dx, rows, cols, ld [, opts])
//   name_backward(x, y, dy, dx, n [, opts [, grads]])
//   name_backward_rows(x, y, dy, dx, rows, cols, ld [, opts [, grads]])
//   name(std::span<const T> x, std::span<T> y [, opts])                     (C++20)
//   name_axis(x, y, outer, n, inner [, opts])       (any axis, below)
// The algorithm forms exist where the family has algorithms; the backward form is the one its
// backward_shape names (the others are removed by SFINAE: Family is a default template argument
// so that the condition depends on the call).
#define SMAX_FAMILY(name, Family, Dispatch)                                                        \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                             \
  inline ::smax::api::row_result_t<Family> name(                                                   \
      const T* x, T* y, std::size_t n, typename Family::options const& opts = {}) noexcept {       \
    return static_cast<::smax::api::row_result_t<Family>>(                                         \
        ::smax::api::forward<Family, Dispatch>(x, n, y, n, 1, n, opts));                           \
  }                                                                                                \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                             \
  inline ::smax::api::rows_result_t<Family> name##_rows(                                           \
      const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,                        \
      typename Family::options const& opts = {}) noexcept {                                        \
    return ::smax::api::forward<Family, Dispatch>(x, ld, y, ld, rows, cols, opts);                 \
  }                                                                                                \
  template <class Algorithm, class T, class F_ = Family, ::smax::api::if_algorithms_t<F_> = 0,     \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline auto name(Algorithm algorithm, const T* x, T* y, std::size_t n,                           \
                   typename F_::options const& opts = {}) noexcept                                 \
      ->decltype(::smax::api::algorithm_of(algorithm), ::smax::api::row_result_t<F_>()) {          \
    return static_cast<::smax::api::row_result_t<F_>>(::smax::api::forward<F_, Dispatch>(          \
        x, n, y, n, 1, n, opts, ::smax::api::algorithm_of(algorithm)));                            \
  }                                                                                                \
  template <class Algorithm, class T, class F_ = Family, ::smax::api::if_algorithms_t<F_> = 0,     \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline auto name##_rows(Algorithm algorithm, const T* x, T* y, std::size_t rows,                 \
                          std::size_t cols, std::size_t ld,                                        \
                          typename F_::options const& opts = {}) noexcept                          \
      ->decltype(::smax::api::algorithm_of(algorithm), ::smax::api::rows_result_t<F_>()) {         \
    return ::smax::api::forward<F_, Dispatch>(x, ld, y, ld, rows, cols, opts,                      \
                                              ::smax::api::algorithm_of(algorithm));               \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_output> = 0,          \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward(const T* y, const T* dy, T* dx, std::size_t n,                       \
                              typename F_::options const& opts = {}) noexcept {                    \
    ::smax::api::backward<F_, Dispatch>(static_cast<const T*>(nullptr), n, y, n, dy, n, dx, n, 1,  \
                                        n, opts, nullptr);                                         \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_output> = 0,          \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,               \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts = {}) noexcept {               \
    ::smax::api::backward<F_, Dispatch>(static_cast<const T*>(nullptr), ld, y, ld, dy, ld, dx, ld, \
                                        rows, cols, opts, nullptr);                                \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input> = 0,           \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,           \
                              typename F_::options const& opts = {}) noexcept {                    \
    ::smax::api::backward<F_, Dispatch>(x, n, y, n, dy, n, dx, n, 1, n, opts, nullptr);            \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input> = 0,           \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,   \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts = {}) noexcept {               \
    ::smax::api::backward<F_, Dispatch>(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts, nullptr);  \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input_with_grads> =   \
                0,                                                                                 \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,           \
                              typename F_::options const& opts = {},                               \
                              typename F_::grads * grads = nullptr) noexcept {                     \
    ::smax::api::backward<F_, Dispatch>(x, n, y, n, dy, n, dx, n, 1, n, opts, grads);              \
  }                                                                                                \
  template <class T, class F_ = Family,                                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input_with_grads> =   \
                0,                                                                                 \
            ::smax::detail::if_real_t<T> = 0>                                                      \
  inline void name##_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,   \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts = {},                          \
                                   typename F_::grads * grads = nullptr) noexcept {                \
    ::smax::api::backward<F_, Dispatch>(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts, grads);    \
  }                                                                                                \
  SMAX_DETAIL_SPAN_FORMS(name, Family, Dispatch)                                                   \
  SMAX_DETAIL_EXECUTOR_FORMS(name, Family, Dispatch)                                               \
  SMAX_DETAIL_AXIS_FORMS(name, Family, Dispatch)                                                   \
  SMAX_DETAIL_HALF_FORMS(name, Family, Dispatch)

// The 16-bit forms (api/half.hpp): x and y both smax::bf16 or both smax::fp16, or x float and y
// 16-bit; computed in float, rounded once to the output type.
//   name(x, y, n [, opts])       name_rows(x, y, rows, cols, ld [, opts])
#define SMAX_DETAIL_HALF_FORMS(name, Family, Dispatch)                                             \
  template <class In, class Out, ::smax::api::if_half_io_t<In, Out> = 0>                           \
  inline ::smax::api::row_result_t<Family> name(const In* x, Out* y, std::size_t n,                \
                                                typename Family::options const& opts = {}) noexcept { \
    return static_cast<::smax::api::row_result_t<Family>>(                                         \
        ::smax::api::forward_half<Family, Dispatch>(x, n, y, n, 1, n, opts));                      \
  }                                                                                                \
  template <class In, class Out, ::smax::api::if_half_io_t<In, Out> = 0>                           \
  inline ::smax::api::rows_result_t<Family> name##_rows(                                           \
      const In* x, Out* y, std::size_t rows, std::size_t cols, std::size_t ld,                     \
      typename Family::options const& opts = {}) noexcept {                                        \
    return ::smax::api::forward_half<Family, Dispatch>(x, ld, y, ld, rows, cols, opts);            \
  }

// The any-axis forms (api/axis.hpp): the family over the middle axis of a row-major
// outer × n × inner tensor; they return what the rows forms return (the number of columns
// reported, for a family that reports rows).
//   name_axis(x, y, outer, n, inner [, opts])       name_axis(x, y, outer, n, inner, opts, ex)
#define SMAX_DETAIL_AXIS_FORMS(name, Family, Dispatch)                                             \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                             \
  inline ::smax::api::rows_result_t<Family> name##_axis(                                           \
      const T* x, T* y, std::size_t outer, std::size_t n, std::size_t inner,                       \
      typename Family::options const& opts = {}) noexcept {                                        \
    return ::smax::api::forward_axis<Family, Dispatch>(x, y, outer, n, inner, opts);               \
  }                                                                                                \
  template <class T, class Executor, ::smax::detail::if_real_t<T> = 0,                             \
            ::smax::api::if_executor_t<Executor> = 0>                                              \
  inline ::smax::api::rows_result_t<Family> name##_axis(                                           \
      const T* x, T* y, std::size_t outer, std::size_t n, std::size_t inner,                       \
      typename Family::options const& opts, Executor&& ex) noexcept {                              \
    return ::smax::api::forward_axis<Family, Dispatch>(x, y, outer, n, inner, opts, ex);           \
  }

// The same forms on an executor (api/entry.hpp, docs/threads.md), the executor last: after the
// options, which are then required, and after grads for the families that have them (nullptr
// when not wanted):
//   name(x, y, n, opts, ex)
//   name_rows(x, y, rows, cols, ld, opts, ex)
//   name(algorithm, x, y, n, opts, ex), name_rows(algorithm, x, y, rows, cols, ld, opts, ex)
//   name_backward(y, dy, dx, n, opts, ex), name_backward_rows(y, dy, dx, rows, cols, ld, opts, ex)
//   name_backward(x, y, dy, dx, n, opts, ex), name_backward_rows(x, y, dy, dx, ..., ld, opts, ex)
//   name_backward(x, y, dy, dx, n, opts, grads, ex), name_backward_rows(..., opts, grads, ex)
#define SMAX_DETAIL_EXECUTOR_FORMS(name, Family, Dispatch)                                         \
  template <class T, class Executor, ::smax::detail::if_real_t<T> = 0,                             \
            ::smax::api::if_executor_t<Executor> = 0>                                              \
  inline ::smax::api::row_result_t<Family> name(const T* x, T* y, std::size_t n,                   \
                                                typename Family::options const& opts,              \
                                                Executor&& ex) noexcept {                          \
    return static_cast<::smax::api::row_result_t<Family>>(::smax::api::forward<Family, Dispatch>(  \
        x, n, y, n, 1, n, opts, ::smax::api::algorithm_choice::automatic, ex));                    \
  }                                                                                                \
  template <class T, class Executor, ::smax::detail::if_real_t<T> = 0,                             \
            ::smax::api::if_executor_t<Executor> = 0>                                              \
  inline ::smax::api::rows_result_t<Family> name##_rows(                                           \
      const T* x, T* y, std::size_t rows, std::size_t cols, std::size_t ld,                        \
      typename Family::options const& opts, Executor&& ex) noexcept {                              \
    return ::smax::api::forward<Family, Dispatch>(x, ld, y, ld, rows, cols, opts,                  \
                                                  ::smax::api::algorithm_choice::automatic, ex);   \
  }                                                                                                \
  template <class Algorithm, class T, class Executor, class F_ = Family,                           \
            ::smax::api::if_algorithms_t<F_> = 0, ::smax::detail::if_real_t<T> = 0,                \
            ::smax::api::if_executor_t<Executor> = 0>                                              \
  inline auto name(Algorithm algorithm, const T* x, T* y, std::size_t n,                           \
                   typename F_::options const& opts, Executor&& ex) noexcept                       \
      ->decltype(::smax::api::algorithm_of(algorithm), ::smax::api::row_result_t<F_>()) {          \
    return static_cast<::smax::api::row_result_t<F_>>(::smax::api::forward<F_, Dispatch>(          \
        x, n, y, n, 1, n, opts, ::smax::api::algorithm_of(algorithm), ex));                        \
  }                                                                                                \
  template <class Algorithm, class T, class Executor, class F_ = Family,                           \
            ::smax::api::if_algorithms_t<F_> = 0, ::smax::detail::if_real_t<T> = 0,                \
            ::smax::api::if_executor_t<Executor> = 0>                                              \
  inline auto name##_rows(Algorithm algorithm, const T* x, T* y, std::size_t rows,                 \
                          std::size_t cols, std::size_t ld, typename F_::options const& opts,      \
                          Executor&& ex) noexcept                                                  \
      ->decltype(::smax::api::algorithm_of(algorithm), ::smax::api::rows_result_t<F_>()) {         \
    return ::smax::api::forward<F_, Dispatch>(x, ld, y, ld, rows, cols, opts,                      \
                                              ::smax::api::algorithm_of(algorithm), ex);           \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_output> = 0,          \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward(const T* y, const T* dy, T* dx, std::size_t n,                       \
                              typename F_::options const& opts, Executor&& ex) noexcept {          \
    ::smax::api::backward<F_, Dispatch>(static_cast<const T*>(nullptr), n, y, n, dy, n, dx, n, 1,  \
                                        n, opts, nullptr, ex);                                     \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_output> = 0,          \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward_rows(const T* y, const T* dy, T* dx, std::size_t rows,               \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts, Executor&& ex) noexcept {     \
    ::smax::api::backward<F_, Dispatch>(static_cast<const T*>(nullptr), ld, y, ld, dy, ld, dx, ld, \
                                        rows, cols, opts, nullptr, ex);                            \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input> = 0,           \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,           \
                              typename F_::options const& opts, Executor&& ex) noexcept {          \
    ::smax::api::backward<F_, Dispatch>(x, n, y, n, dy, n, dx, n, 1, n, opts, nullptr, ex);        \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input> = 0,           \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,   \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts, Executor&& ex) noexcept {     \
    ::smax::api::backward<F_, Dispatch>(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts, nullptr,   \
                                        ex);                                                       \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input_with_grads> =   \
                0,                                                                                 \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward(const T* x, const T* y, const T* dy, T* dx, std::size_t n,           \
                              typename F_::options const& opts, typename F_::grads* grads,         \
                              Executor&& ex) noexcept {                                            \
    ::smax::api::backward<F_, Dispatch>(x, n, y, n, dy, n, dx, n, 1, n, opts, grads, ex);          \
  }                                                                                                \
  template <class T, class Executor, class F_ = Family,                                            \
            ::smax::api::if_backward_t<F_, ::smax::api::backward_shape::from_input_with_grads> =   \
                0,                                                                                 \
            ::smax::detail::if_real_t<T> = 0, ::smax::api::if_executor_t<Executor> = 0>            \
  inline void name##_backward_rows(const T* x, const T* y, const T* dy, T* dx, std::size_t rows,   \
                                   std::size_t cols, std::size_t ld,                               \
                                   typename F_::options const& opts, typename F_::grads* grads,    \
                                   Executor&& ex) noexcept {                                       \
    ::smax::api::backward<F_, Dispatch>(x, ld, y, ld, dy, ld, dx, ld, rows, cols, opts, grads,     \
                                        ex);                                                       \
  }
