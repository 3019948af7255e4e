// Top-k softmax beside softmax and beside the code a user would otherwise write, one thread,
// inputs U[-8, 8]. Names: topk_softmax/smax/<n> (k = 8), topk_softmax/smax_k64/<n> (k = 64), and
// topk_softmax/nth_element_baseline/<n> and .../nth_element_baseline_k64/<n>: std::nth_element on
// an index array (ties to the lower index) and std::exp on the k selected; compare with
// softmax/smax/<n>.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include <smax/reference/topk_softmax.hpp>
#include <smax/topk_softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

const std::vector<std::size_t> lengths = {64, 1000, 4096, 32768, 1048576};

// Largest relative error against the long-double definition over its nonzero outputs; infinite
// if an output outside the selected set is not 0.
template <std::size_t K>
double topk_error(const float* x, const float* y, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const auto want = smax::reference::topk_softmax(x + r * cols, cols, K);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = static_cast<double>(want[i]), got = y[r * cols + i];
      if (e == 0) {
        if (got != 0) return HUGE_VAL;
      } else {
        worst = std::fmax(worst, std::fabs(got - e) / e);
      }
    }
  }
  return worst;
}

// What a user writes without smax: an index array partitioned by std::nth_element (larger value
// first, the lower index among equals), the maximum of the k, std::exp, zeros elsewhere.
template <std::size_t K>
kernel nth_element_baseline(std::size_t rows, std::size_t cols) {
  auto index = std::make_shared<std::vector<std::size_t>>(cols);
  return [=](const float* x, float* y) {
    const std::size_t k = K < cols ? K : cols;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      std::vector<std::size_t>& id = *index;
      std::iota(id.begin(), id.end(), std::size_t(0));
      std::nth_element(id.begin(), id.begin() + (k - 1), id.end(),
                       [xr](std::size_t a, std::size_t b) {
                         return xr[a] > xr[b] || (xr[a] == xr[b] && a < b);
                       });
      float m = xr[id[0]];
      for (std::size_t j = 1; j < k; ++j) m = std::max(m, xr[id[j]]);
      double sum = 0;
      for (std::size_t j = 0; j < k; ++j) sum += std::exp(xr[id[j]] - m);
      std::fill(yr, yr + cols, 0.0f);
      const float inv = static_cast<float>(1.0 / sum);
      for (std::size_t j = 0; j < k; ++j) yr[id[j]] = std::exp(xr[id[j]] - m) * inv;
    }
  };
}

const bool registered = [] {
  register_variant("topk_softmax", "smax",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::topk_softmax_rows(x, y, r, c, c, smax::topk_softmax_options{8});
                     };
                   },
                   topk_error<8>, 1e-5, lengths);
  register_variant("topk_softmax", "smax_k64",
                   [](std::size_t r, std::size_t c) -> kernel {
                     return [=](const float* x, float* y) {
                       smax::topk_softmax_rows(x, y, r, c, c, smax::topk_softmax_options{64});
                     };
                   },
                   topk_error<64>, 1e-5, lengths);
  register_variant("topk_softmax", "nth_element_baseline", nth_element_baseline<8>, topk_error<8>,
                   1e-5, lengths);
  register_variant("topk_softmax", "nth_element_baseline_k64", nth_element_baseline<64>,
                   topk_error<64>, 1e-5, lengths);
  return true;
}();

}  // namespace
