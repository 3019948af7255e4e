// Two revisions of smax side by side in one Google Benchmark run: every family at the row
// lengths of the structure work (16, 64, 1000, 32768, 2^20 and a 4096x1024 batch), `before` and
// `after` interleaved so that both see the same machine state. Built by compare_revisions.sh.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "families.hpp"

namespace {

using namespace compare_revisions;

struct shape {
  std::size_t rows, cols;
};

void run(benchmark::State& state, family f, shape s, bool after) {
  // Inputs rotate through enough copies to leave the cache for the large shapes (64 MiB in all).
  const std::size_t elements = s.rows * s.cols;
  const std::size_t copies =
      elements * sizeof(float) >= (std::size_t(1) << 20)
          ? std::max<std::size_t>(1, (std::size_t(64) << 20) / (elements * sizeof(float)))
          : 1;
  std::vector<float> x(elements * copies), y(elements * copies);
  std::mt19937 rng(42);
  std::normal_distribution<float> d(0.f, 3.f);
  for (auto& v : x) v = d(rng);
  std::size_t k = 0;
  for (auto _ : state) {
    const float* xi = x.data() + k * elements;
    float* yi = y.data() + k * elements;
    if (after)
      run_family_after(f, xi, yi, s.rows, s.cols);
    else
      run_family_before(f, xi, yi, s.rows, s.cols);
    benchmark::DoNotOptimize(yi[0]);
    benchmark::ClobberMemory();
    k = k + 1 == copies ? 0 : k + 1;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
}

}  // namespace

int main(int argc, char** argv) {
  const shape shapes[] = {{1, 16}, {1, 64}, {1, 1000}, {1, 32768}, {1, 1 << 20}, {4096, 1024}};
  for (int f = 0; f <= static_cast<int>(family::sigmoid); ++f)
    if (has_family_before(static_cast<family>(f)) && has_family_after(static_cast<family>(f)))
      for (shape s : shapes)
        for (bool after : {false, true}) {
          const std::string name = std::string(family_names[f]) + "/" +
                                   (s.rows > 1 ? std::to_string(s.rows) + "x" : "") +
                                   std::to_string(s.cols) + (after ? "/after" : "/before");
          benchmark::RegisterBenchmark(name.c_str(), run, static_cast<family>(f), s, after);
        }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
}
