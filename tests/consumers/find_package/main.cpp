// A user's program with an installed smax found by find_package, built with
// smax_enable_dispatch: exits non-zero unless both the header-only and the runtime-dispatched
// softmax return a probability distribution.
#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include <cmath>
#include <cstddef>
#include <cstdio>

namespace {

bool is_distribution(const char* what, const float* y, std::size_t n) {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(y[i] >= 0.0f && y[i] <= 1.0f)) {  // also rejects NaN
      std::fprintf(stderr, "%s: y[%zu] = %g is not a probability\n", what, i,
                   static_cast<double>(y[i]));
      return false;
    }
    sum += y[i];
  }
  // Each output carries a few ulp of relative error, so the sum of eleven is within ~3e-7 of 1.
  if (std::fabs(sum - 1.0) > 1e-6) {
    std::fprintf(stderr, "%s: outputs sum to %.9g, not 1\n", what, sum);
    return false;
  }
  std::printf("%s: %zu outputs sum to %.9g\n", what, n, sum);
  return true;
}

}  // namespace

int main() {
  // Eleven values: a full AVX2 register plus a tail, and inputs up to 100, where exp(x) overflows
  // float unless the row maximum is subtracted first.
  const float x[] = {-3.0f, 0.5f, 1.0f, 2.0f, -1.5f, 100.0f, 99.0f, 0.0f, -100.0f, 42.0f, 7.25f};
  constexpr std::size_t n = sizeof(x) / sizeof(x[0]);
  float y[n] = {};
  float y_runtime[n] = {};

  smax::softmax(x, y, n);
  smax::runtime::softmax(x, y_runtime, n);

  std::printf("smax::runtime::arch_name(): %s\n", smax::runtime::arch_name());
  const bool header_ok = is_distribution("smax::softmax", y, n);
  const bool runtime_ok = is_distribution("smax::runtime::softmax", y_runtime, n);
  return header_ok && runtime_ok ? 0 : 1;
}
