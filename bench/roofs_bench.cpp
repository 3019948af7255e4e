// Roofs: what the memory system allows. A streaming copy (read n, write n) bounds any softmax
// out of cache; a read-only sum bounds a pass that only reads.

#include "anchors/anchors.hpp"
#include "bench_support.hpp"

namespace {

using namespace smax_bench;

void copy_roof(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  buffers b(n, n * sizeof(float) > last_level_cache_bytes() / 4);
  for (auto _ : state) {
    smax_bench::anchors::copy_roof(b.in(), b.out(), n);
    benchmark::ClobberMemory();
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 2 * sizeof(float)));
}

void sum_roof(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  buffers b(n, n * sizeof(float) > last_level_cache_bytes() / 4);
  for (auto _ : state) {
    benchmark::DoNotOptimize(smax_bench::anchors::sum_roof(b.in(), n));
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

}  // namespace

BENCHMARK(copy_roof)->Name("roof/copy")->Arg(4194304)->Arg(16777216)->Unit(benchmark::kMicrosecond);
BENCHMARK(sum_roof)->Name("roof/sum")->Arg(4194304)->Arg(16777216)->Unit(benchmark::kMicrosecond);
