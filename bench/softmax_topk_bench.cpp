// Fused softmax + top-K beside the obvious implementation a user would otherwise write: softmax
// of the whole row into y, then std::partial_sort of the row's indices by y for the K largest
// (ties to the lower index). One thread, inputs as softmax's (bench_support.hpp), T = 1.
// Names: softmax_topk/smax/<n> and softmax_topk/softmax_partial_sort_baseline/<n> for K = 5,
// the same with /k64 appended for K = 64; compare with softmax/smax/<n>. Both are checked
// against each other (same indices, values within 1e-5 relative) before they are timed.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <smax/softmax.hpp>
#include <smax/softmax_topk.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

struct topk_buffers {
  std::vector<float> values;
  std::vector<std::int64_t> indices;
  std::vector<float> y;              // the baseline's full softmax
  std::vector<std::int64_t> order;   // the baseline's index permutation
};

void smax_topk(const float* x, std::size_t n, std::size_t k, topk_buffers& b) {
  smax::softmax_topk(x, n, k, b.values.data(), b.indices.data());
}

void baseline_topk(const float* x, std::size_t n, std::size_t k, topk_buffers& b) {
  smax::softmax(x, b.y.data(), n);
  std::iota(b.order.begin(), b.order.end(), std::int64_t(0));
  const float* y = b.y.data();
  const std::size_t kk = std::min(k, n);
  std::partial_sort(b.order.begin(), b.order.begin() + static_cast<std::ptrdiff_t>(kk),
                    b.order.end(), [y](std::int64_t a, std::int64_t c) {
                      return y[a] > y[c] || (y[a] == y[c] && a < c);
                    });
  for (std::size_t j = 0; j < kk; ++j) {
    b.indices[j] = b.order[j];
    b.values[j] = y[b.order[j]];
  }
}

using topk_kernel = void (*)(const float*, std::size_t, std::size_t, topk_buffers&);

void run_topk(benchmark::State& state, std::size_t n, std::size_t k, topk_kernel run) {
  buffers in(n, from_memory(n));
  topk_buffers b{std::vector<float>(k), std::vector<std::int64_t>(k), std::vector<float>(n),
                 std::vector<std::int64_t>(n)};
  topk_buffers check = b;
  run(in.in(), n, k, b);
  smax_topk(in.in(), n, k, check);
  double worst = 0;
  for (std::size_t j = 0; j < k; ++j) {
    if (b.indices[j] != check.indices[j]) {
      state.SkipWithError("the two implementations select different indices");
      return;
    }
    worst = std::fmax(worst, std::fabs(b.values[j] - check.values[j]) / check.values[j]);
  }
  if (!(worst <= 1e-5)) {
    state.SkipWithError(("values differ: " + std::to_string(worst)).c_str());
    return;
  }
  for (auto _ : state) {
    run(in.in(), n, k, b);
    benchmark::DoNotOptimize(b.values.data());
    benchmark::ClobberMemory();
    in.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  state.counters["from_memory"] = from_memory(n) ? 1 : 0;
}

const bool registered = [] {
  const std::vector<std::size_t> lengths = {64, 1000, 4096, 32000, 32768, 128000, 1048576};
  for (std::size_t k : {std::size_t(5), std::size_t(64)})
    for (std::size_t n : lengths) {
      const std::string label = std::to_string(n) + (k == 5 ? "" : "/k" + std::to_string(k));
      register_benchmark("softmax_topk/smax/" + label,
                         [=](benchmark::State& s) { run_topk(s, n, k, smax_topk); })
          ->Unit(benchmark::kMicrosecond);
      register_benchmark("softmax_topk/softmax_partial_sort_baseline/" + label,
                         [=](benchmark::State& s) { run_topk(s, n, k, baseline_topk); })
          ->Unit(benchmark::kMicrosecond);
    }
  return true;
}();

}  // namespace
