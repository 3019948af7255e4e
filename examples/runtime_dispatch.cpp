// Runtime dispatch: one binary that runs the AVX-512, AVX2 or SSE2 kernels, whichever the CPU
// has, chosen once on first use. Needs `smax_enable_dispatch(<target>)` in CMake (see
// CMakeLists.txt), which compiles the kernels once per instruction set. SMAX_FORCE_ARCH=sse2 (or
// avx2, avx512bw) in the environment forces a choice the CPU supports.

#include <smax/runtime.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  std::printf("smax::runtime kernels: %s\n", smax::runtime::arch_name());

  const std::size_t rows = 64, cols = 1000;
  std::vector<float> x(rows * cols), y(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.1f;

  // Same functions, arguments and results as smax::softmax_rows & co., under smax::runtime.
  smax::runtime::softmax_rows(x.data(), y.data(), rows, cols, cols);
  smax::runtime::log_softmax(smax::two_pass, x.data(), y.data() + cols, cols);  // row 1 as log

  // smax::softmax (no runtime::) stays the header-only kernel of this file's compiler flags.
  std::vector<float> reference(cols);
  smax::softmax(x.data(), reference.data(), cols);
  double worst = 0;
  for (std::size_t i = 0; i < cols; ++i)
    worst = std::fmax(worst, std::fabs(y[i] - reference[i]) / reference[i]);
  const double row1_sum = [&] {
    double s = 0;
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(static_cast<double>(y[cols + i]));
    return s;
  }();
  std::printf("max relative difference to the header-only kernel %.2g\n", worst);
  std::printf("exp(log_softmax) sums to %.7f\n", row1_sum);
  return worst < 2e-6 && std::fabs(row1_sum - 1.0) < 1e-5 ? 0 : 1;
}
