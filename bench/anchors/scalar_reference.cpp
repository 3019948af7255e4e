// The scalar reference: plain loops, exp and sums in double, compiled without -ffast-math.
//
// exp(x - max) is computed twice (once for the sum, once for the output) rather than stored as a
// float and rescaled, so each output is rounded to float exactly once.
#include "anchors.hpp"

#include <algorithm>
#include <cmath>

namespace smax_bench::anchors {
namespace {

double row_max(const float* x, std::size_t n) {
  float max = x[0];
  for (std::size_t i = 1; i < n; ++i) {
    max = std::max(max, x[i]);
  }
  return max;
}

double sum_exp(const float* x, std::size_t n, double max) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += std::exp(static_cast<double>(x[i]) - max);
  }
  return sum;
}

}  // namespace

void scalar_reference_softmax(const float* x, float* y, std::size_t rows, std::size_t cols,
                              bool log) {
  if (cols == 0) {
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    const double max = row_max(xr, cols);
    const double sum = sum_exp(xr, cols, max);
    if (log) {
      const double log_sum = std::log(sum);
      for (std::size_t i = 0; i < cols; ++i) {
        yr[i] = static_cast<float>((static_cast<double>(xr[i]) - max) - log_sum);
      }
    } else {
      for (std::size_t i = 0; i < cols; ++i) {
        yr[i] = static_cast<float>(std::exp(static_cast<double>(xr[i]) - max) / sum);
      }
    }
  }
}

}  // namespace smax_bench::anchors
