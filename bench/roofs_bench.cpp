// Roofs: what the memory system allows. A streaming copy (read n, write n) bounds any softmax
// out of cache; a read-only sum bounds a pass that only reads.

#include "anchors/anchors.hpp"
#include "bench_support.hpp"

namespace {

using namespace smax_bench;

void copy_roof(benchmark::State& state, std::size_t n) {
  buffers b(n, from_memory(n));
  for (auto _ : state) {
    smax_bench::anchors::copy_roof(b.in(), b.out(), n);
    benchmark::ClobberMemory();
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 2 * sizeof(float)));
}

void sum_roof(benchmark::State& state, std::size_t n) {
  buffers b(n, from_memory(n));
  for (auto _ : state) {
    benchmark::DoNotOptimize(smax_bench::anchors::sum_roof(b.in(), n));
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

const bool registered = [] {
  for (std::size_t n : {std::size_t(4194304), std::size_t(16777216)}) {
    register_benchmark("roof/copy/" + std::to_string(n), [n](benchmark::State& s) {
      copy_roof(s, n);
    })->Unit(benchmark::kMicrosecond);
    register_benchmark("roof/sum/" + std::to_string(n), [n](benchmark::State& s) {
      sum_roof(s, n);
    })->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace
