// A user program for the add_subdirectory and FetchContent consumers: exits non-zero unless smax::softmax returns a
// probability distribution.
#include <smax/smax.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>

int main() {
  // Eleven values: a full AVX2 register plus a tail, and inputs up to 100, where exp(x) overflows
  // float unless the row maximum is subtracted first.
  const float x[] = {-3.0f, 0.5f, 1.0f, 2.0f, -1.5f, 100.0f, 99.0f, 0.0f, -100.0f, 42.0f, 7.25f};
  constexpr std::size_t n = sizeof(x) / sizeof(x[0]);
  float y[n] = {};

  smax::softmax(x, y, n);

  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(y[i] >= 0.0f && y[i] <= 1.0f)) {  // also rejects NaN
      std::fprintf(stderr, "y[%zu] = %g is not a probability\n", i, static_cast<double>(y[i]));
      return 1;
    }
    sum += y[i];
  }
  // Each output carries a few ulp of relative error, so the sum of eleven is within ~3e-7 of 1.
  if (std::fabs(sum - 1.0) > 1e-6) {
    std::fprintf(stderr, "outputs sum to %.9g, not 1\n", sum);
    return 1;
  }
  std::printf("smax::softmax: %zu outputs sum to %.9g\n", n, sum);
  return 0;
}
