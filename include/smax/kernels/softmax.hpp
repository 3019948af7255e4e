#pragma once
// The kernels of the softmax family (softmax, log-softmax, online state) for one instruction set
// A, as plain functions on raw pointers. The header-only API calls
// softmax_table<xsimd::default_arch>; runtime dispatch compiles softmax_table<A> once per
// instruction set in its own translation unit (cmake/SmaxDispatch.cmake) and
// declares those instantiations extern here, so no other translation unit instantiates them.
//
// Members are defined out of class and not inline: an inline definition would bypass the
// extern template declarations. Nothing below calls a non-A-templated inline function other
// than extern "C" libm functions, so no weak symbol compiled for one instruction set can be
// picked by the linker for another (docs/dispatch.md).

#include <cstddef>

#include "../config.hpp"
#include "../half.hpp"
#include "convert.hpp"
#include "row_driver.hpp"
#include "softmax_axis.hpp"
#include "softmax_backward.hpp"
#include "softmax_online.hpp"
#include "softmax_three_pass.hpp"
#include "softmax_two_pass.hpp"

namespace smax {
namespace kernels {

// blocked_three_pass is chosen by `automatic` only (no public tag): smax::three_pass keeps the
// textbook reloading form, which MultiMax with zero parameters reproduces bit for bit.
enum class algorithm_id : unsigned {
  automatic = 0,
  three_pass = 1,
  online = 2,
  two_pass = 3,
  blocked_three_pass = 4
};

enum : unsigned { flag_log = 1u, flag_zero_masked_rows = 2u };

// Rows up to this many bytes run three-pass (the reloading pass re-reads y from cache); beyond
// two row blocks (16 KiB) in blocks (blocked_three_pass_row). Longer rows run the
// online two-pass kernel, which reads x once less from memory but takes two exponentials per
// element.
constexpr std::size_t three_pass_max_bytes = std::size_t(4) << 20;
// Log-softmax's online form takes no more exponentials than its three-pass form (its second pass
// is (x - m) - log s), so it wins as soon as the row leaves L1 and the saved pass over x has to
// come from L2 (faster from 32768 elements on); at 4096 elements the three-pass form is still
// faster.
constexpr std::size_t log_three_pass_max_bytes = std::size_t(64) << 10;

// Whether a long row split by chunks takes exponentiate_chunk / scale_chunk (one exponential per
// element): softmax rows the single-threaded call takes in blocks (up to three_pass_max_bytes), at a
// temperature on the vector kernels' path. Longer rows and log-softmax take the online state
// (two reads of x and one write, against the stored form's two reads and two writes of y).
template <class T>
inline bool splits_into_exp_chunks(std::size_t cols, T temperature, unsigned flags) noexcept {
  if ((flags & flag_log) || cols * sizeof(T) > three_pass_max_bytes) return false;
  if (!(temperature > T(0) && temperature < T(__builtin_huge_val()))) return false;
  const T inv_t = T(1) / temperature;
  return inv_t >= wide_range_inv_temperature<T> && inv_t <= huge_inv_temperature<T>;
}

template <class A>
struct softmax_table {
  static void forward(const float* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                      std::size_t cols, float temperature, unsigned flags,
                      algorithm_id algorithm) noexcept;
  static void forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                      std::size_t rows, std::size_t cols, double temperature, unsigned flags,
                      algorithm_id algorithm) noexcept;
  static void backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                       float* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                       float temperature, unsigned flags) noexcept;
  static void backward(const double* y, std::size_t ldy, const double* dy, std::size_t lddy,
                       double* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                       double temperature, unsigned flags) noexcept;
  // Pass 1 of the online normaliser over one chunk: max (NaN for a NaN/+inf chunk, -inf for an
  // empty or fully masked one) and sum of exp((x - max)/T).
  static void online_reduce(const float* x, std::size_t n, float temperature, float* max,
                            double* sum) noexcept;
  static void online_reduce(const double* x, std::size_t n, double temperature, double* max,
                            double* sum) noexcept;
  // Pass 2 for one chunk, given the state of the whole row.
  static void online_normalize(const float* x, float* y, std::size_t n, float temperature,
                               unsigned flags, float max, double sum) noexcept;
  static void online_normalize(const double* x, double* y, std::size_t n, double temperature,
                               unsigned flags, double max, double sum) noexcept;
  // A chunk of a long softmax row split across tasks, for rows the single-threaded call takes in
  // blocks (splits_into_exp_chunks): its exponentials stored in y, then scaled once the row's
  // chunks are merged (merge_exp_chunks, softmax_three_pass.hpp).
  static exp_chunk<float> exponentiate_chunk(const float* x, float* y, std::size_t n,
                                             float temperature) noexcept;
  static exp_chunk<double> exponentiate_chunk(const double* x, double* y, std::size_t n,
                                              double temperature) noexcept;
  static void scale_chunk(float* y, std::size_t n, float temperature, unsigned flags,
                          exp_chunk<float> const& own, exp_chunk<float> const& row) noexcept;
  static void scale_chunk(double* y, std::size_t n, double temperature, unsigned flags,
                          exp_chunk<double> const& own, exp_chunk<double> const& row) noexcept;
  // Pass 2 for one chunk of a 16-bit row of row_length entries, computed in float: the bits of
  // the float pass 2 on the widened chunk, rounded to the 16-bit type, with no float row in
  // between (the pass reads and writes memory while it computes; past the cache when the row is
  // larger than it). Returns false, having written nothing, where the float path is needed (a
  // NaN, +inf or masked row, a temperature outside the vector kernels' range).
  static bool online_normalize(const bf16* x, bf16* y, std::size_t n, std::size_t row_length,
                               float temperature, unsigned flags, float max, double sum) noexcept;
  static bool online_normalize(const fp16* x, fp16* y, std::size_t n, std::size_t row_length,
                               float temperature, unsigned flags, float max, double sum) noexcept;
  // Softmax / log-softmax (flags as forward, the automatic algorithm) of rows of 16-bit values
  // into float rows y, the widening done by the kernels' first pass: the bits of forward on the
  // widened rows. Returns false, having written nothing, where that call would not run the
  // three-pass kernels (a temperature off the vector path, log-softmax rows past 64 KiB of floats,
  // softmax rows past 4 MiB).
  static bool forward_widened(const bf16* x, std::size_t ldx, float* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols, float temperature,
                              unsigned flags) noexcept;
  static bool forward_widened(const fp16* x, std::size_t ldx, float* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols, float temperature,
                              unsigned flags) noexcept;
  // Pass 1 of a 16-bit chunk, computed in float: the bits of online_reduce on the widened chunk,
  // with no float row in between; row_rest: the entries of the row from x on (>= n), among which
  // it asks for the next ones. Returns false, having set nothing, for a temperature off the
  // vector kernels' path (invalid, or 1/T outside their range): the float form is needed there.
  static bool online_reduce(const bf16* x, std::size_t n, std::size_t row_rest, float temperature,
                            float* max, double* sum) noexcept;
  static bool online_reduce(const fp16* x, std::size_t n, std::size_t row_rest, float temperature,
                            float* max, double* sum) noexcept;
  // The middle axis of a tensor without transposing it (softmax_axis.hpp): columns [0, width) of
  // n >= 1 rows `stride` floats apart, 1 <= width <= axis_max_columns, normalised down the
  // columns. Returns false, having written nothing, where the rows kernels are needed (a
  // temperature off their vector path; a NaN, +inf or only -inf in a column longer than
  // axis_blocked_max_rows: shorter ones are finished here).
  static bool forward_axis(const float* x, float* y, std::size_t n, std::size_t stride,
                           std::size_t width, float temperature, unsigned flags) noexcept;
};

namespace detail {

// Templated on A like everything here, so that no instruction set shares its code (see above).
template <class A, class T>
inline bool valid_temperature(T temperature) noexcept {
  return temperature > T(0) && temperature < T(__builtin_huge_val());
}

template <class T>
using row_kernel = void (*)(const T*, T*, std::size_t, row_params<T> const&);

// The kernel of rows longer than four registers (or of every row, for an explicit algorithm
// other than three_pass).
template <class A, class T, bool Scaled>
inline row_kernel<T> softmax_row_kernel(algorithm_id algorithm) noexcept {
  switch (algorithm) {
    case algorithm_id::online:
      return &online_row<A, T, Scaled>;
    case algorithm_id::blocked_three_pass:
      return &blocked_three_pass_row<A, T, Scaled>;
    case algorithm_id::two_pass:
      return &two_pass_row<A, T, Scaled>;
    default:
      return &three_pass_row<A, T, Scaled>;
  }
}

// The softmax family's policy for the row driver (row_driver.hpp): 1/T applied when Scaled, the
// register kernels for the three-pass algorithm, softmax_row_kernel's for longer rows (chosen
// there, off the short rows' path).
template <class A, class T, bool Scaled>
struct softmax_rows {
  static constexpr bool flush_subnormals = true;
  static constexpr bool register_kernels = true;
  // By reference: a copy of the caller's row_params is one wide load of the fields it has just
  // stored one by one, a store-forwarding stall that cost SSMax's 16-element row half its time.
  row_params<T> const& params;
  algorithm_id algorithm;  // not automatic

  bool in_registers() const noexcept { return algorithm == algorithm_id::three_pass; }
  // No flush beyond flush_max_scale (row_policy.hpp): subnormal differences x - max would count.
  std::size_t flush_elements(std::size_t elements) const noexcept {
    return params.inv_temperature <= flush_max_scale<T> ? elements : 0;
  }
  template <class B>
  SMAX_ALWAYS_INLINE void row_in_registers(const T* x, T* y, std::size_t n) const noexcept {
    short_row<B, T, Scaled>(x, y, n, params);
  }
  template <class B, std::size_t K>
  SMAX_ALWAYS_INLINE void rows_in_registers(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t n) const noexcept {
    short_rows<B, T, Scaled, K>(x, ldx, y, ldy, n, params);
  }
  template <class F>
  SMAX_ALWAYS_INLINE void with_row_kernel(F&& f) const noexcept {
    const row_kernel<T> kernel = softmax_row_kernel<A, T, Scaled>(algorithm);
    f([this, kernel](const T* x, T* y, std::size_t n, next_rows next) {
      row_params<T> q = params;
      q.next_row = next.x;
      q.next_output_row = next.y;
      kernel(x, y, n, q);
    });
  }
};

// The rows given 1/T (> 0 and finite); `scaled` is false exactly when 1/T = 1. SSMax comes
// here with its λ as 1/T, so it costs what softmax with a temperature costs. Inlined into its
// callers: the call level cost a 16-element row a measurable share of its time.
template <class A, class T>
SMAX_ALWAYS_INLINE void forward_rows_scaled(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                            std::size_t rows, std::size_t cols, T inv_temperature,
                                            bool scaled, unsigned flags,
                                            algorithm_id algorithm) noexcept {
  const row_params<T> p{inv_temperature, (flags & flag_log) != 0,
                        (flags & flag_zero_masked_rows) != 0};
  if (scaled && (inv_temperature < wide_range_inv_temperature<T> ||
                 inv_temperature > huge_inv_temperature<T>)) {  // T > 3.3e35 or < 4.7e-38: scalar
    for (std::size_t r = 0; r < rows; ++r) wide_range_row<A>(x + r * ldx, y + r * ldy, cols, p);
    return;
  }
  if (algorithm == algorithm_id::automatic) {
    const std::size_t bytes = cols * sizeof(T);
    if (cols <= 2 * row_block<T>)
      algorithm = algorithm_id::three_pass;
    else if (p.log)
      algorithm =
          bytes <= log_three_pass_max_bytes ? algorithm_id::three_pass : algorithm_id::online;
    else
      algorithm =
          bytes <= three_pass_max_bytes ? algorithm_id::blocked_three_pass : algorithm_id::online;
  }
  if (scaled)
    return drive_rows<A>(x, ldx, y, ldy, rows, cols, softmax_rows<A, T, true>{p, algorithm});
  drive_rows<A>(x, ldx, y, ldy, rows, cols, softmax_rows<A, T, false>{p, algorithm});
}

template <class A, class T>
inline exp_chunk<T> exponentiate_chunk(const T* x, T* y, std::size_t n, T temperature) noexcept {
  const T inv_t = T(1) / temperature;
  const flush_guard<A, true> guard(inv_t <= flush_max_scale<T> ? n : 0);
  return inv_t != T(1) ? kernels::exponentiate_chunk<A, T, true>(x, y, n, inv_t)
                       : kernels::exponentiate_chunk<A, T, false>(x, y, n, inv_t);
}

template <class A, class T>
inline void scale_chunk(T* y, std::size_t n, T temperature, unsigned flags, exp_chunk<T> const& own,
                        exp_chunk<T> const& row) noexcept {
  const row_params<T> p{T(1) / temperature, false, (flags & flag_zero_masked_rows) != 0};
  if (p.inv_temperature != T(1))
    kernels::scale_chunk<A, T, true>(y, n, own, row, p);
  else
    kernels::scale_chunk<A, T, false>(y, n, own, row, p);
}

// Inlined into the table's entry points (a call level costs a short row a measurable share).
template <class A, class T>
SMAX_ALWAYS_INLINE void forward_rows(const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                     std::size_t rows, std::size_t cols, T temperature,
                                     unsigned flags, algorithm_id algorithm) noexcept {
  if (temperature == T(1))  // the common call: no division and no range checks on its path
    return forward_rows_scaled<A>(x, ldx, y, ldy, rows, cols, T(1), false, flags, algorithm);
  const T inv_temperature = T(1) / temperature;
  if (!valid_temperature<A>(temperature) || !(inv_temperature > T(0))) {
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(y + r * ldy, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  if (inv_temperature == T(__builtin_huge_val())) {  // T < 1/FLT_MAX: rare, scalar (divides by T)
    row_params<T> p{T(1), (flags & flag_log) != 0, (flags & flag_zero_masked_rows) != 0};
    p.divisor = temperature;
    for (std::size_t r = 0; r < rows; ++r) wide_range_row<A>(x + r * ldx, y + r * ldy, cols, p);
    return;
  }
  // Decided on T, not on 1/T, so the choice does not wait for the division.
  forward_rows_scaled<A>(x, ldx, y, ldy, rows, cols, inv_temperature, temperature != T(1), flags,
                         algorithm);
}

template <class A, class T>
inline void backward_rows(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                          std::size_t lddx, std::size_t rows, std::size_t cols, T temperature,
                          unsigned flags) noexcept {
  if (!valid_temperature<A>(temperature)) {
    for (std::size_t r = 0; r < rows; ++r)
      fill_row<A>(dx + r * lddx, cols, static_cast<T>(__builtin_nan("")));
    return;
  }
  const T inv_t = T(1) / temperature;
  if (inv_t == T(__builtin_huge_val())) {  // T < 1/FLT_MAX: rare, scalar (divides by T)
    for (std::size_t r = 0; r < rows; ++r)
      backward_row_dividing<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, temperature,
                               (flags & flag_log) != 0);
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    if (flags & flag_log)
      log_softmax_backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, inv_t);
    else
      softmax_backward_row<A>(y + r * ldy, dy + r * lddy, dx + r * lddx, cols, inv_t);
  }
}

template <class A, class T>
inline void online_reduce(const T* x, std::size_t n, T temperature, T* max, double* sum) noexcept {
  if (!valid_temperature<A>(temperature)) {
    *max = static_cast<T>(__builtin_nan(""));
    *sum = 0.0;
    return;
  }
  const T inv_t = T(1) / temperature;
  const bool inverse_overflows = inv_t == T(__builtin_huge_val());
  if (inv_t < wide_range_inv_temperature<T> ||
      inv_t > huge_inv_temperature<T>) {  // as forward_rows_scaled
    const T m = wide_range_max<A>(x, n);
    *max = m;
    *sum = m > -T(__builtin_huge_val()) && m < T(__builtin_huge_val())
               ? wide_range_sum<A>(x, n, m, inverse_overflows ? T(1) : inv_t,
                                   inverse_overflows ? temperature : T(0))
               : 0.0;
    return;
  }
  const online_partial<T> s = inv_t != T(1) ? online_reduce_row<A, T, true>(x, n, inv_t)
                                            : online_reduce_row<A, T, false>(x, n, inv_t);
  *max = s.max;
  *sum = s.sum;
}

template <class A, class T>
inline void online_normalize(const T* x, T* y, std::size_t n, T temperature, unsigned flags, T max,
                             double sum) noexcept {
  const row_params<T> p{T(1) / temperature, (flags & flag_log) != 0,
                        (flags & flag_zero_masked_rows) != 0};
  if (!valid_temperature<A>(temperature)) {
    fill_row<A>(y, n, static_cast<T>(__builtin_nan("")));
    return;
  }
  if (finish_special_row<A>(max, primitives::is_nan(max), y, n, p)) return;
  if (p.inv_temperature == T(__builtin_huge_val())) {  // T < 1/FLT_MAX: divides by T
    row_params<T> q = p;
    q.inv_temperature = T(1);
    q.divisor = temperature;
    return wide_range_normalize<A>(x, y, n, max, sum, q);
  }
  if (p.inv_temperature < wide_range_inv_temperature<T> ||
      p.inv_temperature > huge_inv_temperature<T>)
    return wide_range_normalize<A>(x, y, n, max, sum, p);
  const online_partial<T> s{max, sum};
  if (p.inv_temperature != T(1))
    online_normalize_row<A, T, true>(x, y, n, s, p);
  else
    online_normalize_row<A, T, false>(x, y, n, s, p);
}

// to[i] = float(from[i]) for i < len, and the range of those floats (as reduce_range), asking for
// from[i + ahead] meanwhile where ahead is not 0.
template <class A, bool Min, class H>
SMAX_FLATTEN inline primitives::range_result<float> widen_range(const H* from, float* to,
                                                                std::size_t len,
                                                                std::size_t ahead) noexcept {
  using batch = xsimd::batch<float, A>;
  return primitives::range_of<A, Min, float>(
      len,
      [=](std::size_t i) SMAX_INLINE_LAMBDA {
        const batch v = convert_detail::load_widened<A, H>(from + i);
        v.store_unaligned(to + i);
        return v;
      },
      [=](std::size_t i, std::size_t count) SMAX_INLINE_LAMBDA {
        convert_table<A>::widen(from + i, to + i, count);
        return static_cast<const float*>(to + i);
      },
      [=](std::size_t i) SMAX_INLINE_LAMBDA {
        if (ahead) primitives::prefetch<A>(from + i + ahead, 4 * batch::size * sizeof(H));
      });
}

// A 16-bit row's values for pass 1 (a source of softmax_online.hpp's online_reduce_row_from; see
// row_policy.hpp): each block widened into a float buffer of row_block<float> as its range is
// taken, with the next block of 16-bit values asked for meanwhile, so the row is read from memory
// once, while the previous block's exponentials keep the core busy, and never held in float.
// The blocks' floats are those of the whole row widened (exactly), so pass 1 has the bits it has
// on that float row.
template <class A, class H>
struct widened_source {
  static constexpr bool reads_ahead = true;
  const H* x;
  std::size_t readable;  // entries of the row from x on (the next block is asked for inside them)
  float* buffer;
  template <bool Min>
  SMAX_ALWAYS_INLINE primitives::range_result<float> range(std::size_t start,
                                                           std::size_t len) const noexcept {
    return widen_range<A, Min>(x + start, buffer, len, start + 2 * len <= readable ? len : 0);
  }
  const float* block(std::size_t) const noexcept { return buffer; }
};

// A 16-bit row widened into the float row y by the first pass of softmax's row kernels
// (three-pass, blocked), which then run on y in place; the first pass of the row's last part asks
// for the next row's x (next_x entries on, 0 for none).
template <class A, class H>
struct widened_row_source {
  static constexpr bool reads_ahead = true;
  const H* x;
  float* y;
  std::size_t n;
  std::size_t next_x;
  template <bool Min>
  SMAX_ALWAYS_INLINE primitives::range_result<float> range(std::size_t start,
                                                           std::size_t len) const noexcept {
    return widen_range<A, Min>(x + start, y + start, len,
                               start + len >= n && next_x ? next_x - start : 0);
  }
  const float* block(std::size_t start) const noexcept { return y + start; }
  const float* values() const noexcept { return y; }
};

// A short row (Count registers of B) of 16-bit values widened into registers (the lanes past n
// hold -inf) and normalised there by softmax's short-row kernel into the float row y.
template <class B, class H, bool Scaled, std::size_t Count>
SMAX_FLATTEN inline void widened_short_row(const H* x, float* y, std::size_t n,
                                           row_params<float> const& p) noexcept {
  using batch = xsimd::batch<float, B>;
  constexpr std::size_t width = batch::size;
  primitives::register_row<B, float, Count> row;
  row.last = n - (Count - 1) * width;
  primitives::unroll<Count - 1>([&](auto j) SMAX_INLINE_LAMBDA {
    row.v[j] = convert_detail::load_widened<B, H>(x + j * width);
  });
  if (row.last == width) {
    row.v[Count - 1] = convert_detail::load_widened<B, H>(x + (Count - 1) * width);
  } else {
    alignas(64) float tail[width];
    convert_table<B>::widen(x + (Count - 1) * width, tail, row.last);
    row.v[Count - 1] = primitives::load_partial<B>(tail, row.last, -float(__builtin_huge_val()));
  }
  short_row_of<B, float, Scaled, Count>(row, y, n, p);
}

// Softmax / log-softmax of rows of 16-bit values into float rows y, the widening done by the
// first pass (see softmax_table::forward_widened): the choices of forward_rows_scaled (flush
// guard, register rows, three-pass or blocked kernel), so each row has the bits of that call on
// the widened rows.
template <class A, class H, bool Scaled>
inline void widened_rows(const H* x, std::size_t ldx, float* y, std::size_t ldy, std::size_t rows,
                         std::size_t cols, row_params<float> const& p) noexcept {
  using T = float;
  constexpr std::size_t width = xsimd::batch<T, A>::size;
  const bool one_short_row = rows == 1 && cols <= 4 * width;
  [[maybe_unused]] const flush_subnormal_results<A> ftz(
      one_short_row || p.inv_temperature > flush_max_scale<T> ? 0 : rows * cols);
  if (cols <= width) {
    using B = smax::detail::short_row_arch<A>;
    primitives::with_register_count<B, T>(cols, [&](auto count) SMAX_INLINE_LAMBDA {
      for (std::size_t r = 0; r < rows; ++r)
        widened_short_row<B, H, Scaled, decltype(count)::value>(x + r * ldx, y + r * ldy, cols, p);
    });
    return;
  }
  if (cols <= 4 * width) {
    primitives::with_register_count<A, T>(cols, [&](auto count) SMAX_INLINE_LAMBDA {
      for (std::size_t r = 0; r < rows; ++r)
        widened_short_row<A, H, Scaled, decltype(count)::value>(x + r * ldx, y + r * ldy, cols, p);
    });
    return;
  }
  const bool prefetch = cols * sizeof(T) >= prefetch_min_bytes;
  for (std::size_t r = 0; r < rows; ++r) {
    const bool ahead = prefetch && r + 1 < rows;
    row_params<T> q = p;
    q.next_output_row = ahead ? ldy : 0;
    T* const yr = y + r * ldy;
    const widened_row_source<A, H> source{x + r * ldx, yr, cols, ahead ? ldx : 0};
    if (p.log || cols <= 2 * row_block<T> ||
        !try_blocked_three_pass_row_from<A, T, Scaled>(source, yr, cols, q))
      three_pass_row_from<A, T, Scaled>(source, yr, cols, q);
  }
}

template <class A, class H>
inline bool forward_widened(const H* x, std::size_t ldx, float* y, std::size_t ldy,
                            std::size_t rows, std::size_t cols, float temperature,
                            unsigned flags) noexcept {
  using T = float;
  const bool log = (flags & flag_log) != 0;
  const std::size_t bytes = cols * sizeof(T);
  if (!valid_temperature<A>(temperature) ||
      bytes > (log ? log_three_pass_max_bytes : three_pass_max_bytes))
    return false;
  const row_params<T> p{T(1) / temperature, log, (flags & flag_zero_masked_rows) != 0};
  if (temperature == T(1)) {
    widened_rows<A, H, false>(x, ldx, y, ldy, rows, cols,
                              row_params<T>{T(1), p.log, p.zero_masked_rows});
    return true;
  }
  if (!(p.inv_temperature >= wide_range_inv_temperature<T> &&
        p.inv_temperature <= huge_inv_temperature<T>))
    return false;
  widened_rows<A, H, true>(x, ldx, y, ldy, rows, cols, p);
  return true;
}

// Pass 1 of a 16-bit chunk (see softmax_table::online_reduce); false where the float form is
// needed (a temperature off the vector kernels' path).
template <class A, class H>
inline bool online_reduce_half(const H* x, std::size_t n, std::size_t readable, float temperature,
                               float* max, double* sum) noexcept {
  using T = float;
  if (!valid_temperature<A>(temperature)) return false;
  const T inv_t = T(1) / temperature;
  if (inv_t < wide_range_inv_temperature<T> || inv_t > huge_inv_temperature<T>) return false;
  alignas(64) float buffer[row_block<float>];
  const widened_source<A, H> source{x, readable > n ? readable : n, buffer};
  const online_partial<T> s = inv_t != T(1) ? online_reduce_row_from<A, T, true>(source, n, inv_t)
                                            : online_reduce_row_from<A, T, false>(source, n, inv_t);
  *max = s.max;
  *sum = s.sum;
  return true;
}

template <class A, class H>
inline bool online_normalize_half(const H* x, H* y, std::size_t n, std::size_t row_length,
                                  float temperature, unsigned flags, float max,
                                  double sum) noexcept {
  using T = float;
  const row_params<T> p{T(1) / temperature, (flags & flag_log) != 0,
                        (flags & flag_zero_masked_rows) != 0};
  // The cases online_normalize takes off the vector path.
  if (!valid_temperature<A>(temperature) || primitives::is_nan(max) ||
      primitives::is_pos_inf(max) || primitives::is_neg_inf(max) ||
      p.inv_temperature < wide_range_inv_temperature<T> ||
      p.inv_temperature > huge_inv_temperature<T>)
    return false;
  const online_partial<T> s{max, sum};
  const bool stream = primitives::should_stream<A, H>(row_length);
  auto write = [&](auto const& f) { map_through_float<A>(x, y, n, f, stream); };
  // (s.min is -inf, as the float pass's chunks have it.)
  if (p.inv_temperature != T(1))
    with_online_normalizer<A, T, true, true>(s, p, write);
  else
    with_online_normalizer<A, T, false, true>(s, p, write);
  return true;
}

}  // namespace detail

template <class A>
void softmax_table<A>::forward(const float* x, std::size_t ldx, float* y, std::size_t ldy,
                               std::size_t rows, std::size_t cols, float temperature,
                               unsigned flags, algorithm_id algorithm) noexcept {
  detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, temperature, flags, algorithm);
}
template <class A>
void softmax_table<A>::forward(const double* x, std::size_t ldx, double* y, std::size_t ldy,
                               std::size_t rows, std::size_t cols, double temperature,
                               unsigned flags, algorithm_id algorithm) noexcept {
  detail::forward_rows<A>(x, ldx, y, ldy, rows, cols, temperature, flags, algorithm);
}
template <class A>
void softmax_table<A>::backward(const float* y, std::size_t ldy, const float* dy, std::size_t lddy,
                                float* dx, std::size_t lddx, std::size_t rows, std::size_t cols,
                                float temperature, unsigned flags) noexcept {
  detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols, temperature, flags);
}
template <class A>
void softmax_table<A>::backward(const double* y, std::size_t ldy, const double* dy,
                                std::size_t lddy, double* dx, std::size_t lddx, std::size_t rows,
                                std::size_t cols, double temperature, unsigned flags) noexcept {
  detail::backward_rows<A>(y, ldy, dy, lddy, dx, lddx, rows, cols, temperature, flags);
}
template <class A>
void softmax_table<A>::online_reduce(const float* x, std::size_t n, float temperature, float* max,
                                     double* sum) noexcept {
  detail::online_reduce<A>(x, n, temperature, max, sum);
}
template <class A>
void softmax_table<A>::online_reduce(const double* x, std::size_t n, double temperature,
                                     double* max, double* sum) noexcept {
  detail::online_reduce<A>(x, n, temperature, max, sum);
}
template <class A>
exp_chunk<float> softmax_table<A>::exponentiate_chunk(const float* x, float* y, std::size_t n,
                                                      float temperature) noexcept {
  return detail::exponentiate_chunk<A>(x, y, n, temperature);
}

template <class A>
exp_chunk<double> softmax_table<A>::exponentiate_chunk(const double* x, double* y, std::size_t n,
                                                       double temperature) noexcept {
  return detail::exponentiate_chunk<A>(x, y, n, temperature);
}

template <class A>
void softmax_table<A>::scale_chunk(float* y, std::size_t n, float temperature, unsigned flags,
                                   exp_chunk<float> const& own,
                                   exp_chunk<float> const& row) noexcept {
  detail::scale_chunk<A>(y, n, temperature, flags, own, row);
}

template <class A>
void softmax_table<A>::scale_chunk(double* y, std::size_t n, double temperature, unsigned flags,
                                   exp_chunk<double> const& own,
                                   exp_chunk<double> const& row) noexcept {
  detail::scale_chunk<A>(y, n, temperature, flags, own, row);
}

template <class A>
void softmax_table<A>::online_normalize(const float* x, float* y, std::size_t n, float temperature,
                                        unsigned flags, float max, double sum) noexcept {
  detail::online_normalize<A>(x, y, n, temperature, flags, max, sum);
}
template <class A>
void softmax_table<A>::online_normalize(const double* x, double* y, std::size_t n,
                                        double temperature, unsigned flags, double max,
                                        double sum) noexcept {
  detail::online_normalize<A>(x, y, n, temperature, flags, max, sum);
}

template <class A>
bool softmax_table<A>::forward_widened(const bf16* x, std::size_t ldx, float* y, std::size_t ldy,
                                       std::size_t rows, std::size_t cols, float temperature,
                                       unsigned flags) noexcept {
  return detail::forward_widened<A>(x, ldx, y, ldy, rows, cols, temperature, flags);
}
template <class A>
bool softmax_table<A>::forward_widened(const fp16* x, std::size_t ldx, float* y, std::size_t ldy,
                                       std::size_t rows, std::size_t cols, float temperature,
                                       unsigned flags) noexcept {
  return detail::forward_widened<A>(x, ldx, y, ldy, rows, cols, temperature, flags);
}
template <class A>
bool softmax_table<A>::online_reduce(const bf16* x, std::size_t n, std::size_t row_rest,
                                     float temperature, float* max, double* sum) noexcept {
  return detail::online_reduce_half<A>(x, n, row_rest, temperature, max, sum);
}
template <class A>
bool softmax_table<A>::online_reduce(const fp16* x, std::size_t n, std::size_t row_rest,
                                     float temperature, float* max, double* sum) noexcept {
  return detail::online_reduce_half<A>(x, n, row_rest, temperature, max, sum);
}
template <class A>
bool softmax_table<A>::online_normalize(const bf16* x, bf16* y, std::size_t n,
                                        std::size_t row_length, float temperature, unsigned flags,
                                        float max, double sum) noexcept {
  return detail::online_normalize_half<A>(x, y, n, row_length, temperature, flags, max, sum);
}
template <class A>
bool softmax_table<A>::online_normalize(const fp16* x, fp16* y, std::size_t n,
                                        std::size_t row_length, float temperature, unsigned flags,
                                        float max, double sum) noexcept {
  return detail::online_normalize_half<A>(x, y, n, row_length, temperature, flags, max, sum);
}

template <class A>
bool softmax_table<A>::forward_axis(const float* x, float* y, std::size_t n, std::size_t stride,
                                    std::size_t width, float temperature, unsigned flags) noexcept {
  return detail::forward_columns<A>(x, y, n, stride, width, temperature, (flags & flag_log) != 0,
                                    (flags & flag_zero_masked_rows) != 0);
}

}  // namespace kernels
}  // namespace smax

#include "../detail/dispatch_declarations.hpp"
SMAX_DECLARE_DISPATCHED_TABLE(softmax_table)
