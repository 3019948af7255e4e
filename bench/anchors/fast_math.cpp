// The plain three-pass softmax loop as a user writes it, compiled with -O3 -ffast-math.
//
// This file alone gets -ffast-math (a per-source compile option, never a link option: linking
// with -ffast-math would pull in crtfastmath.o and flush subnormals for the whole process). It
// calls the C functions expf/logf and writes its max as a comparison: header inline functions
// such as std::exp or std::max would be emitted here with fast-math semantics as COMDAT copies
// the linker may then pick for other translation units.
#include "anchors.hpp"

#include <math.h>

namespace smax_bench::anchors {
namespace {

// Starts from x[0], not -INFINITY: -ffast-math lets the compiler assume no infinities.
float row_max(const float* x, std::size_t n) {
  float max = x[0];
  for (std::size_t i = 1; i < n; ++i) {
    max = x[i] > max ? x[i] : max;
  }
  return max;
}

void softmax_row(const float* x, float* y, std::size_t n) {
  const float max = row_max(x, n);
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float e = expf(x[i] - max);
    y[i] = e;
    sum += e;
  }
  const float inverse_sum = 1.0f / sum;
  for (std::size_t i = 0; i < n; ++i) {
    y[i] *= inverse_sum;
  }
}

void log_softmax_row(const float* x, float* y, std::size_t n) {
  const float max = row_max(x, n);
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    sum += expf(x[i] - max);
  }
  const float log_sum = logf(sum);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = (x[i] - max) - log_sum;
  }
}

}  // namespace

void fast_math_softmax(const float* x, float* y, std::size_t rows, std::size_t cols, bool log) {
  if (cols == 0) {
    return;
  }
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    if (log) {
      log_softmax_row(xr, yr, cols);
    } else {
      softmax_row(xr, yr, cols);
    }
  }
}

}  // namespace smax_bench::anchors
