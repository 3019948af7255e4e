#pragma once
// Shared by the benchmarks: input rows larger than the last-level cache when asked, a check of
// every implementation against a double reference before it is timed, and the naming scheme
// family/implementation/n (family/implementation/ROWSxCOLS for batches).

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace smax_bench {

// Row lengths of the suite (one row per call), and the batches: 4096×1024, and short attention
// rows (16, 64, 256 columns, 256K elements each, so the batch stays in L2).
inline const std::vector<std::size_t> row_lengths = {16,    64,     256,     1000,    4096,
                                                     32768, 262144, 1048576, 4194304, 16777216};
struct batch_shape {
  std::size_t rows, cols;
};
inline const std::vector<batch_shape> batch_shapes = {
    {4096, 1024}, {16384, 16}, {4096, 64}, {1024, 256}};

// The last-level cache as the system reports it (L3, else L2; 0 if it does not say).
inline std::size_t reported_last_level_cache_bytes() {
  long bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? static_cast<std::size_t>(bytes) : 0;
}

// The last-level cache the benchmarks size their data by: the reported one clamped to
// [4, 32] MiB, as smax's streaming stores are (primitives/stream.hpp). Virtual machines report
// the host's whole L3 (320-480 MiB), far more than one core reaches: sized by that, a 16 MiB
// batch stayed in place and was timed warm.
inline std::size_t last_level_cache_bytes() {
  const std::size_t lowest = std::size_t(4) << 20, highest = std::size_t(32) << 20;
  const std::size_t reported = reported_last_level_cache_bytes();
  if (reported == 0) return highest;
  return reported < lowest ? lowest : reported > highest ? highest : reported;
}

// Whether a benchmark of this many elements reads its input from memory (cold): rows larger than
// a quarter of last_level_cache_bytes() rotate through buffers; smaller ones stay in cache (warm).
inline bool from_memory(std::size_t elements) {
  return elements * sizeof(float) > last_level_cache_bytes() / 4;
}

// Every benchmark name registered through register_benchmark (the driver counts the ones the
// filter selects, for its progress line, and lists the implementations in --help).
inline std::vector<std::string>& registered_names() {
  static std::vector<std::string> names;
  return names;
}

template <class Function>
benchmark::internal::Benchmark* register_benchmark(const std::string& name, Function&& function) {
  registered_names().push_back(name);
  return benchmark::RegisterBenchmark(name.c_str(), std::forward<Function>(function));
}

// Allocations of 2 MiB or more start on a 2 MiB boundary, so that transparent huge pages back
// them whole, as they back a tensor allocator's large blocks. From wherever malloc put them, a
// buffer's pages were a mix of 2 MiB and 4 KiB ones that changed with its address, and the mix
// moved a 1M-element row split on two threads by a third (its passes miss the TLB on 4 KiB pages).
template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t huge_page = std::size_t(2) << 20;
  huge_page_allocator() = default;
  template <class U>
  huge_page_allocator(huge_page_allocator<U> const&) noexcept {}
  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T), align = bytes >= huge_page ? huge_page : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(huge_page_allocator<U> const&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(huge_page_allocator<U> const&) const noexcept {
    return false;
  }
};
template <class T>
using bench_vector = std::vector<T, huge_page_allocator<T>>;

// Input and output buffers for rows of n floats. Rows too big for the cache rotate through
// enough copies that the working set exceeds twice last_level_cache_bytes(), so every call reads
// from memory.
struct buffers {
  std::vector<bench_vector<float>> x, y;
  std::size_t next = 0;

  buffers(std::size_t elements, bool out_of_cache) {
    const std::size_t bytes = 2 * elements * sizeof(float);
    std::size_t copies = 1;
    if (out_of_cache) copies = (2 * last_level_cache_bytes()) / bytes + 1;
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);  // PERFORMANCE.md's rows
    x.resize(copies);
    y.assign(copies, bench_vector<float>(elements));
    for (auto& v : x) {
      v.resize(elements);
      for (auto& e : v) e = u(rng);
    }
  }
  std::size_t size() const { return x.size(); }
  void advance() { next = next + 1 == x.size() ? 0 : next + 1; }
  const float* in() const { return x[next].data(); }
  float* out() { return y[next].data(); }
};

// Largest relative error (softmax) or absolute error (log-softmax) of y against a double
// reference over rows × cols.
inline double error_against_reference(const float* x, const float* y, std::size_t rows,
                                      std::size_t cols, bool log) {
  double worst = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = -HUGE_VAL, s = 0;
    for (std::size_t i = 0; i < cols; ++i) m = std::fmax(m, xr[i]);
    for (std::size_t i = 0; i < cols; ++i) s += std::exp(xr[i] - m);
    for (std::size_t i = 0; i < cols; ++i) {
      const double e = log ? (xr[i] - m) - std::log(s) : std::exp(xr[i] - m) / s;
      const double err = log ? std::fabs(y[r * cols + i] - e) : std::fabs(y[r * cols + i] - e) / e;
      worst = std::fmax(worst, err);
    }
  }
  return worst;
}

// run(x, y) computes rows × cols; the benchmark checks it once, then times it.
using kernel = std::function<void(const float*, float*)>;

inline void run_benchmark(benchmark::State& state, std::size_t rows, std::size_t cols, bool log,
                          kernel const& run) {
  const std::size_t elements = rows * cols;
  buffers b(elements, from_memory(elements));
  run(b.in(), b.out());
  const double err = error_against_reference(b.in(), b.out(), rows, cols, log);
  if (!(err <= (log ? 1e-3 : 1e-3))) {
    state.SkipWithError(("wrong result: error " + std::to_string(err)).c_str());
    return;
  }
  for (auto _ : state) {
    run(b.in(), b.out());
    benchmark::DoNotOptimize(b.out());
    benchmark::ClobberMemory();
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * elements * 2 * sizeof(float)));
  state.counters["max_error"] = err;
  state.counters["from_memory"] = from_memory(elements) ? 1 : 0;
}

// Registers family/implementation/n for every row length, and family/implementation/RxC for
// every batch shape.
// make(rows, cols) returns the kernel (so setup such as oneDNN's primitive is not timed).
inline void register_family(const std::string& family, const std::string& implementation, bool log,
                            std::function<kernel(std::size_t, std::size_t)> make,
                            bool batch = true) {
  auto add = [=](std::size_t rows, std::size_t cols, const std::string& label) {
    register_benchmark(family + "/" + implementation + "/" + label, [=](benchmark::State& state) {
      run_benchmark(state, rows, cols, log, make(rows, cols));
    })->Unit(benchmark::kMicrosecond);
  };
  for (std::size_t n : row_lengths) add(1, n, std::to_string(n));
  if (batch)
    for (auto shape : batch_shapes)
      add(shape.rows, shape.cols, std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
}

// Latency: single rows, each call's input depending on the previous call's output (x[0] is
// rewritten from the last output, to the same value), so calls cannot overlap: the time an
// attention row waits for its softmax. Names: <family>_latency/<implementation>/<n>.
inline const std::vector<std::size_t> latency_lengths = {16,  32,   64,   128, 256,
                                                         512, 1024, 2048, 4096};

inline void run_latency(benchmark::State& state, std::size_t n, bool log, kernel const& run) {
  buffers b(n, false);
  float* x = b.x[0].data();
  float* y = b.y[0].data();
  run(x, y);
  const double err = error_against_reference(x, y, 1, n, log);
  if (!(err <= 1e-3)) {
    state.SkipWithError(("wrong result: error " + std::to_string(err)).c_str());
    return;
  }
  const float x0 = x[0];
  for (auto _ : state) {
    run(x, y);
    x[0] = x0 + y[n - 1] * 0.0f;  // exact (y is finite): same input, but it waits for y
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * 2 * sizeof(float)));
  state.counters["max_error"] = err;
  state.counters["from_memory"] = 0;
}

inline void register_latency(const std::string& family, const std::string& implementation, bool log,
                             std::function<kernel(std::size_t, std::size_t)> make) {
  for (std::size_t n : latency_lengths)
    register_benchmark(family + "_latency/" + implementation + "/" + std::to_string(n),
                       [=](benchmark::State& state) { run_latency(state, n, log, make(1, n)); })
        ->Unit(benchmark::kMicrosecond);
}

// The variants of issue 3 onwards (sparsemax, softpick, ssmax, sigmoid, multimax, ...): each
// names its family and implementation, a kernel maker and a checker that returns the largest
// error of y against a double reference (the benchmark fails if it exceeds max_error), and is
// timed at the same row lengths as softmax, so `softmax/smax/n` and `<family>/smax/n` compare
// directly.
using checker =
    std::function<double(const float* x, const float* y, std::size_t rows, std::size_t cols)>;

inline void run_variant(benchmark::State& state, std::size_t rows, std::size_t cols,
                        kernel const& run, checker const& check, double max_error) {
  const std::size_t elements = rows * cols;
  buffers b(elements, from_memory(elements));
  run(b.in(), b.out());
  const double err = check(b.in(), b.out(), rows, cols);
  if (!(err <= max_error)) {
    state.SkipWithError(("wrong result: error " + std::to_string(err)).c_str());
    return;
  }
  for (auto _ : state) {
    run(b.in(), b.out());
    benchmark::DoNotOptimize(b.out());
    benchmark::ClobberMemory();
    b.advance();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * elements));
  state.SetBytesProcessed(
      static_cast<std::int64_t>(state.iterations() * elements * 2 * sizeof(float)));
  state.counters["max_error"] = err;
  state.counters["from_memory"] = from_memory(elements) ? 1 : 0;
}

inline void register_variant(const std::string& family, const std::string& implementation,
                             std::function<kernel(std::size_t, std::size_t)> make, checker check,
                             double max_error,
                             std::vector<std::size_t> const& lengths = row_lengths,
                             bool batch = true) {
  auto add = [=](std::size_t rows, std::size_t cols, const std::string& label) {
    register_benchmark(family + "/" + implementation + "/" + label, [=](benchmark::State& state) {
      run_variant(state, rows, cols, make(rows, cols), check, max_error);
    })->Unit(benchmark::kMicrosecond);
  };
  for (std::size_t n : lengths) add(1, n, std::to_string(n));
  if (batch)
    for (auto shape : batch_shapes)
      add(shape.rows, shape.cols, std::to_string(shape.rows) + "x" + std::to_string(shape.cols));
}

}  // namespace smax_bench
