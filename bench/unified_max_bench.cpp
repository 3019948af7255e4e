// Unified-max softmax beside softmax: exp(x - σ) with σ chosen from φ instead of the row maximum
// (no max sweep), one thread, inputs U[-8, 8] inside the fast path's range (φ = 6, a = -80,
// b = 80: [-74, 86]). Name: unified_max_softmax/smax/<n>; compare with softmax/smax/<n>.

#include <vector>

#include <smax/unified_max.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

constexpr smax::unified_max_options options{6.0, -80.0, 80.0};

// Softmax's error against the double reference; infinite if a row fell back (the benchmark is
// of the fast path).
double unified_max_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  std::vector<float> again(rows * cols);
  if (smax::unified_max_softmax_rows(x, again.data(), rows, cols, cols, options) != 0)
    return HUGE_VAL;
  return error_against_reference(x, y, rows, cols, false);
}

const bool registered = [] {
  register_variant("unified_max_softmax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::unified_max_softmax_rows(x, y, r, c, c, options);
                     };
                   },
                   unified_max_error, 1e-5, {64, 1000, 4096, 32768, 1048576});
  return true;
}();

}  // namespace
