#pragma once
// What the public headers share: the header-only kernel table and the argument checks.

#include <cstddef>

#include "../algorithm.hpp"
#include "../kernels/table.hpp"

SMAX_BEGIN_NAMESPACE
namespace api {

// The kernels compiled for the best instruction set the including translation unit enables.
using default_table = kernels::table<xsimd::default_arch>;

inline kernels::algorithm_id algorithm_of(three_pass_t) noexcept { return kernels::algorithm_id::three_pass; }
inline kernels::algorithm_id algorithm_of(online_t) noexcept { return kernels::algorithm_id::online; }
inline kernels::algorithm_id algorithm_of(two_pass_t) noexcept { return kernels::algorithm_id::two_pass; }

inline unsigned flags_of(bool log, softmax_options const& opts) noexcept {
  return (log ? kernels::flag_log : 0u) | (opts.zero_masked_rows ? kernels::flag_zero_masked_rows : 0u);
}

inline void check_options(softmax_options const& opts) noexcept {
  SMAX_ASSERT(opts.temperature > 0.0 && opts.temperature < __builtin_huge_val() &&
              "softmax_options::temperature must be finite and > 0");
  (void)opts;
}

template <class Table, class T>
inline void forward(const T* x, std::size_t ldx, T* y, std::size_t ldy, std::size_t rows,
                    std::size_t cols, bool log, softmax_options const& opts,
                    kernels::algorithm_id algorithm) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || rows == 0 || cols == 0);
  SMAX_ASSERT((ldx >= cols && ldy >= cols) || rows <= 1);
  check_options(opts);
  if (rows == 0 || cols == 0) return;
  Table::forward(x, ldx, y, ldy, rows, cols, static_cast<T>(opts.temperature), flags_of(log, opts),
                 algorithm);
}

template <class Table, class T>
inline void backward(const T* y, std::size_t ldy, const T* dy, std::size_t lddy, T* dx,
                     std::size_t lddx, std::size_t rows, std::size_t cols, bool log,
                     softmax_options const& opts) noexcept {
  SMAX_ASSERT((y != nullptr && dy != nullptr && dx != nullptr) || rows == 0 || cols == 0);
  check_options(opts);
  if (rows == 0 || cols == 0) return;
  Table::backward(y, ldy, dy, lddy, dx, lddx, rows, cols, static_cast<T>(opts.temperature),
                  flags_of(log, opts));
}

}  // namespace api
SMAX_END_NAMESPACE
