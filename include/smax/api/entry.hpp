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
// api::forward / api::backward below check the arguments once for every family and every form;
// SMAX_FAMILY(name, family, dispatch) stamps the pointer forms (name, name_rows, name_backward,
// name_backward_rows, std::span forms under C++20, the algorithm-tag forms where the family has
// them) as one-line adaptors of them. The family headers stamp them with api::header_only,
// runtime.hpp with the runtime dispatcher, from the one list in families.hpp.

#include <cstddef>
#include <type_traits>

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
// (to zero for an empty call).
template <class Family, class Dispatch, class T>
SMAX_ALWAYS_INLINE void backward(const T* x, std::size_t ldx, const T* y, std::size_t ldy,
                                 const T* dy, std::size_t lddy, T* dx, std::size_t lddx,
                                 std::size_t rows, std::size_t cols,
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

}  // namespace api
SMAX_END_NAMESPACE

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
  SMAX_DETAIL_SPAN_FORMS(name, Family, Dispatch)
