// sparsemax: smax beside the reference library's algorithm (deep-spin/entmax's sort-based
// sparsemax: subtract the max, std::sort descending, float prefix sum, threshold; one thread),
// same inputs (U[-8, 8]). Names: sparsemax/<implementation>/<n>. sparsemax/smax_<algorithm>/<n>
// time each threshold algorithm alone (how the automatic choice by n was measured).

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

#include <smax/sparsemax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};
const std::vector<std::size_t> algorithm_lengths = {8,   16,   32,   64,    128,    256,
                                                    512, 1000, 4096, 32768, 262144, 1048576};

// Largest absolute error of y against a double sort-based sparsemax of each row.
double check(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  std::vector<double> z(cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    const double m = *std::max_element(xr, xr + cols);
    for (std::size_t i = 0; i < cols; ++i) z[i] = double(xr[i]) - m;
    std::sort(z.begin(), z.end(), std::greater<double>());
    double s = 0, best_sum = 0;
    std::size_t k = 0;
    for (std::size_t j = 0; j < cols; ++j) {
      s += z[j];
      if (1 + double(j + 1) * z[j] > s) {
        k = j + 1;
        best_sum = s;
      }
    }
    const double tau = (best_sum - 1) / double(k);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = std::max(double(xr[i]) - m - tau, 0.0);
      worst = std::max(worst, std::fabs(y[r * cols + i] - e));
    }
  }
  return worst;
}

// deep-spin/entmax SparsemaxFunction (_sparsemax_threshold_and_support), one row at a time in
// float: z = x - max; sort descending; cumsum - 1; support = k·z_(k) > cumsum_k - 1; tau.
struct sort_sparsemax {
  std::vector<float> sorted;
  void operator()(const float* x, float* y, std::size_t n) {
    const float m = *std::max_element(x, x + n);
    sorted.resize(n);
    for (std::size_t i = 0; i < n; ++i) sorted[i] = x[i] - m;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    float cumsum = 0, tau_sum = 0;
    std::size_t k = 0;
    for (std::size_t j = 0; j < n; ++j) {
      cumsum += sorted[j];
      if (float(j + 1) * sorted[j] > cumsum - 1.0f) {
        k = j + 1;
        tau_sum = cumsum - 1.0f;
      }
    }
    const float tau = tau_sum / float(k);
    for (std::size_t i = 0; i < n; ++i) y[i] = std::max((x[i] - m) - tau, 0.0f);
  }
};

const double smax_max_error = std::ldexp(1.0, -22);  // sparsemax.hpp's bound

void register_sparsemax() {
  register_variant(
      "sparsemax", "smax",
      [](std::size_t rows, std::size_t cols) -> kernel {
        return [=](const float* x, float* y) { smax::sparsemax_rows(x, y, rows, cols, cols); };
      },
      check, smax_max_error, lengths, true);
  register_variant(
      "sparsemax", "sort",
      [](std::size_t rows, std::size_t cols) -> kernel {
        auto s = std::make_shared<sort_sparsemax>();
        return [=](const float* x, float* y) {
          for (std::size_t r = 0; r < rows; ++r) (*s)(x + r * cols, y + r * cols, cols);
        };
      },
      check, 1e-5, lengths, true);
  using smax::kernels::sparsemax_algorithm;
  const std::pair<const char*, sparsemax_algorithm> algorithms[] = {
      {"smax_sort", sparsemax_algorithm::sort},
      {"smax_pivot", sparsemax_algorithm::pivot},
      {"smax_filter", sparsemax_algorithm::filter},
      {"smax_stream", sparsemax_algorithm::stream}};
  for (auto const& [name, algorithm] : algorithms) {
    const sparsemax_algorithm a = algorithm;
    register_variant(
        "sparsemax", name,
        [a](std::size_t rows, std::size_t cols) -> kernel {
          return [=](const float* x, float* y) {
            smax::kernels::sparsemax_table<xsimd::default_arch>::forward(x, cols, y, cols, rows,
                                                                         cols, a);
          };
        },
        check, smax_max_error, algorithm_lengths, false);
  }
}

const bool registered = (register_sparsemax(), true);

}  // namespace
