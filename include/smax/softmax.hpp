#pragma once
// softmax: y_i = exp(x_i/T) / sum_j exp(x_j/T), with a temperature T > 0 (default 1).
// See docs/softmax.md (definition, the three algorithms, the stable form) and
// docs/edge_cases.md (the bad-input contract).
//
// Evaluated as exp((x_i - m)/T) / sum with m the row maximum, so nothing overflows (the largest
// term is exactly 1), with the rounding error of x_i - m carried into the exponential and the sum
// accumulated in blocks folded into double.
//
// Bound block
//   Types:         float, double.
//   Maximum error: float, T = 1: relative error <= 1e-6 for every output >= FLT_MIN, every
//                  algorithm and instruction set (tests/softmax_test.cpp, against a long-double
//                  reference); the sum of a 16M-element row is within 1e-5 of 1. T != 1 adds up
//                  to |x - m|/T·2^-22 (the rounding of 1/T and of (x - m)·(1/T)).
//                  double: relative error <= 1e-14.
//   Valid range:   any finite input up to ±FLT_MAX, rows of any length (tested up to 10^6, with
//                  spreads of 20 and 200 at offsets ±1000): [3e38, -3e38, 1e38] -> [1, 0, 0].
//                  Outputs below FLT_MIN may be flushed to 0.
//   Bad input:     n = 0 does nothing. -inf entries are masked: output 0, excluded from every
//                  reduction. A row of only -inf gives NaN (or 0 with zero_masked_rows). Any NaN
//                  or +inf gives a NaN row. A temperature that is not finite and > 0 is a
//                  precondition violation (asserted in debug builds) and gives a NaN row.
//
// x == y (in place) is allowed; otherwise x and y must not overlap.

#include <cstddef>
#include <type_traits>

#include "algorithm.hpp"
#include "api/entry.hpp"
#include "kernels/softmax.hpp"
#include "online_state.hpp"

SMAX_BEGIN_NAMESPACE
namespace api {

inline void check_temperature(softmax_options const& opts) noexcept {
  SMAX_ASSERT(opts.temperature > 0.0 && opts.temperature < __builtin_huge_val() &&
              "softmax_options::temperature must be finite and > 0");
  (void)opts;
}

inline kernels::algorithm_id kernel_algorithm(algorithm_choice a) noexcept {
  switch (a) {
    case algorithm_choice::three_pass:
      return kernels::algorithm_id::three_pass;
    case algorithm_choice::online:
      return kernels::algorithm_id::online;
    case algorithm_choice::two_pass:
      return kernels::algorithm_id::two_pass;
    default:
      return kernels::algorithm_id::automatic;
  }
}

// Softmax (Log = false) and log-softmax (Log = true): one kernel table, one flag apart.
template <bool Log>
struct softmax_like_family : family_defaults {
  using options = softmax_options;
  static constexpr backward_shape backward_form = backward_shape::from_output;
  static constexpr bool has_algorithms = true;

  static unsigned flags(options const& opts) noexcept {
    return (Log ? kernels::flag_log : 0u) |
           (opts.zero_masked_rows ? kernels::flag_zero_masked_rows : 0u);
  }
  static void check(options const& opts) noexcept { check_temperature(opts); }

  // Long rows on an executor (api/entry.hpp): chunks reduced to online states, merged in chunk
  // order, each chunk normalised by the merged state (online.hpp's functions, on a dispatcher).
  static constexpr bool splits_long_rows = true;
  template <class T>
  using chunk_state = online_state<T>;
  template <class A, class T>
  static online_state<T> reduce_chunk(A, const T* x, std::size_t n, options const& opts) noexcept {
    online_state<T> s;
    kernels::softmax_table<A>::online_reduce(x, n, static_cast<T>(opts.temperature), &s.max,
                                             &s.sum);
    return s;
  }
  template <class T>
  static online_state<T> merge_chunks(online_state<T> const& a, online_state<T> const& b,
                                      options const& opts) noexcept {
    return ::smax::merge(a, b, opts);
  }
  template <class A, class T>
  static void normalize_chunk(A, online_state<T> const& s, const T* x, T* y, std::size_t n,
                              options const& opts) noexcept {
    kernels::softmax_table<A>::online_normalize(x, y, n, static_cast<T>(opts.temperature),
                                                flags(opts), s.max, s.sum);
  }

  // Rows the single-threaded call takes in blocks (softmax, up to 4 MiB) split with their
  // exponentials stored: one exponential per element, as that call (kernels/softmax.hpp).
  template <class T>
  static bool splits_into_exp_chunks(std::size_t cols, options const& opts) noexcept {
    return kernels::splits_into_exp_chunks<T>(cols, static_cast<T>(opts.temperature), flags(opts));
  }
  template <class T>
  using exp_chunk = kernels::exp_chunk<T>;
  template <class A, class T>
  static exp_chunk<T> exponentiate_chunk(A, const T* x, T* y, std::size_t n,
                                         options const& opts) noexcept {
    return kernels::softmax_table<A>::exponentiate_chunk(x, y, n, static_cast<T>(opts.temperature));
  }
  template <class T>
  static exp_chunk<T> merge_exp_chunks(exp_chunk<T> const& a, exp_chunk<T> const& b,
                                       options const& opts) noexcept {
    return kernels::merge_exp_chunks(a, b, T(1) / static_cast<T>(opts.temperature));
  }
  template <class A, class T>
  static void scale_chunk(A, exp_chunk<T> const& own, exp_chunk<T> const& row, T* y, std::size_t n,
                          options const& opts) noexcept {
    kernels::softmax_table<A>::scale_chunk(y, n, static_cast<T>(opts.temperature), flags(opts), own,
                                           row);
  }

  // The same for a chunk of a 16-bit row (api/half.hpp), read as 16-bit values (and written as
  // such, for a row of row_length entries); false where the chunk needs reduce_chunk or
  // normalize_chunk on its widened floats.
  // Rows of 16-bit values into float rows (api/half.hpp's tile), widened by the kernels' first
  // pass; false, nothing written, where the rows need widening first.
  static constexpr bool widens_in_first_pass = true;
  template <class A, class H>
  static bool forward_widened(A, const H* x, std::size_t ldx, float* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols, options const& opts) noexcept {
    return kernels::softmax_table<A>::forward_widened(
        x, ldx, y, ldy, rows, cols, static_cast<float>(opts.temperature), flags(opts));
  }
  template <class A, class H>
  static bool reduce_chunk(A, const H* x, std::size_t n, std::size_t row_rest, options const& opts,
                           online_state<float>& s) noexcept {
    return kernels::softmax_table<A>::online_reduce(
        x, n, row_rest, static_cast<float>(opts.temperature), &s.max, &s.sum);
  }
  template <class A, class H>
  static bool normalize_chunk(A, online_state<float> const& s, const H* x, H* y, std::size_t n,
                              std::size_t row_length, options const& opts) noexcept {
    return kernels::softmax_table<A>::online_normalize(
        x, y, n, row_length, static_cast<float>(opts.temperature), flags(opts), s.max, s.sum);
  }

  // The middle axis natively on float (api/axis.hpp): columns [0, width) of one outer slice,
  // n rows `stride` apart, width <= axis_columns; false, having written nothing, for the columns
  // the rows form must take (kernels/softmax_axis.hpp says which).
  template <class T>
  static constexpr bool axis_kernel = std::is_same_v<T, float>;
  static constexpr std::size_t axis_columns = kernels::axis_max_columns;
  template <class A>
  static bool forward_axis(A, const float* x, float* y, std::size_t n, std::size_t stride,
                           std::size_t width, options const& opts) noexcept {
    return kernels::softmax_table<A>::forward_axis(
        x, y, n, stride, width, static_cast<float>(opts.temperature), flags(opts));
  }

  template <class A, class T>
  static SMAX_ALWAYS_INLINE void forward(A, const T* x, std::size_t ldx, T* y, std::size_t ldy,
                                         std::size_t rows, std::size_t cols, options const& opts,
                                         algorithm_choice algorithm) noexcept {
    kernels::softmax_table<A>::forward(x, ldx, y, ldy, rows, cols, static_cast<T>(opts.temperature),
                                       flags(opts), kernel_algorithm(algorithm));
  }
  template <class A, class T>
  static SMAX_ALWAYS_INLINE void backward(A, const T*, std::size_t, const T* y, std::size_t ldy,
                                          const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                          std::size_t rows, std::size_t cols, options const& opts,
                                          grads*) noexcept {
    kernels::softmax_table<A>::backward(y, ldy, dy, lddy, dx, lddx, rows, cols,
                                        static_cast<T>(opts.temperature), flags(opts));
  }
};
using softmax_family = softmax_like_family<false>;

}  // namespace api

// softmax(x, y, n [, opts]): one row of n elements, with the algorithm best for n: three-pass for
// rows up to 4 MiB (1M floats, 512K doubles), by 8 KiB blocks beyond 16 KiB (4096 floats), the
// blocked online normaliser beyond.
// softmax(algorithm, x, y, n [, opts]): smax::three_pass, smax::online or smax::two_pass; all
// give the same result within the stated bound (two_pass computes rows holding values beyond
// |x/T| > 2^23, 1024 without FMA, with the three-pass algorithm).
// softmax_rows([algorithm,] x, y, rows, cols, ld [, opts]): each row of a row-major rows × cols
// matrix whose rows start ld >= cols elements apart, for x and y alike.
// softmax_backward(y, dy, dx, n [, opts]), softmax_backward_rows(y, dy, dx, rows, cols, ld
// [, opts]): dx = (1/T)·y ⊙ (dy - <dy, y>) for y = softmax(x). Masked entries (y = 0) get 0;
// sum(dx) = 0. Any of y, dy, dx may be the same array.
// Backward error: |dx_i - dx*_i| <= 2^-19·(1/T)·y_i·(|dy_i| + sum_j |dy_j·y_j|) (float; 2^-48 for
// double): <dy, y> is summed with an error relative to the sum of its terms' magnitudes.
// softmax(std::span<const T> x, std::span<T> y [, opts]) under C++20.
SMAX_FAMILY(softmax, api::softmax_family, api::header_only)

SMAX_END_NAMESPACE
