// Many cores through an executor (docs/threads.md, issue 14 §2): each shape single-threaded
// (the form without an executor) beside the same call on an executor, in the same binary.
//
//   executors/softmax/<shape>/single          smax::softmax_rows / smax::softmax, no executor
//   executors/softmax/<shape>/inline_tasks    the executor split, every task on this thread
//                                             (what the split itself costs: for a long row, the
//                                             merge and the chunks' own passes)
//   executors/softmax/<shape>/openmp_2        smax::executors::openmp{2}: two threads
//   executors/softmax/<shape>/openmp_dynamic_2 the same loop with schedule(dynamic, 1): no
//                                             affinity between the two calls of a long row
//   executors/copy/<shape>/{single,openmp_2}  memcpy of the same bytes (x to y), one thread and
//                                             split in two halves on two threads: the memory roof
//   executors/fork_join/openmp_2              two empty tasks on the executor: what one
//                                             executor call costs
//
// Shapes: 256x1024 (1 MiB, 8 tasks: in cache, what two cores give where memory is not the limit),
// 4096x1024 (16 MiB, one task is 32 rows), 1x1048576 (one row of 1M floats, 4 MiB: 32
// chunks) and 1x16777216 (16M floats, 64 MiB: 512 chunks). Inputs uniform on [-8, 8]; shapes
// larger than a quarter of the last-level cache rotate through buffers and are read from memory
// (bench_support.hpp). Bytes processed: x read and y written once.
//
// Every executor result is checked against the single-threaded call before timing (bit for bit
// for the batch, within 2e-6 relative for the split long rows).

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <smax/executors.hpp>
#include <smax/softmax.hpp>

#include "bench_support.hpp"

namespace {

using namespace smax_bench;

struct shape {
  std::size_t rows, cols;
};
const shape shapes[] = {
    {256, 1024}, {4096, 1024}, {1, std::size_t(1) << 20}, {1, std::size_t(1) << 24}};

std::string name_of(shape s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols);
}

// Softmax of the shape, on an executor or (ex = nullptr) without one.
template <class Executor>
void softmax_call(shape s, const float* x, float* y, Executor const* ex) {
  if (ex) {
    if (s.rows == 1)
      smax::softmax(x, y, s.cols, {}, *ex);
    else
      smax::softmax_rows(x, y, s.rows, s.cols, s.cols, {}, *ex);
  } else {
    if (s.rows == 1)
      smax::softmax(x, y, s.cols);
    else
      smax::softmax_rows(x, y, s.rows, s.cols, s.cols);
  }
}

template <class Executor>
void run_softmax(benchmark::State& state, shape s, Executor const* ex) {
  const std::size_t elements = s.rows * s.cols;
  buffers b(elements, from_memory(elements));
  {  // against the single-threaded call
    std::vector<float> want(elements);
    softmax_call<Executor>(s, b.in(), want.data(), nullptr);
    softmax_call(s, b.in(), b.out(), ex);
    double worst = 0;
    for (std::size_t i = 0; i < elements; ++i)
      worst = std::fmax(worst, std::fabs(double(b.out()[i]) - want[i]) / want[i]);
    if (worst > (s.rows == 1 ? 2e-6 : 0.0)) {
      const std::string what = "differs from the single-threaded call: " + std::to_string(worst);
      state.SkipWithError(what.c_str());
      return;
    }
  }
  for (auto _ : state) {
    softmax_call(s, b.in(), b.out(), ex);
    benchmark::DoNotOptimize(b.out());
    b.advance();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 8);
  state.counters["from_memory"] = from_memory(elements);
}

// memcpy of x to y, in `parts` equal parts on an executor (or one part without).
template <class Executor>
void run_copy(benchmark::State& state, shape s, Executor const* ex) {
  const std::size_t elements = s.rows * s.cols;
  buffers b(elements, from_memory(elements));
  for (auto _ : state) {
    const float* x = b.in();
    float* y = b.out();
    if (ex) {
      const std::size_t half = elements / 2;
      (*ex)(2, [&](std::size_t t) {
        const std::size_t first = t * half, count = t ? elements - half : half;
        std::memcpy(y + first, x + first, count * sizeof(float));
      });
    } else {
      std::memcpy(y, x, elements * sizeof(float));
    }
    benchmark::DoNotOptimize(y);
    b.advance();
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * std::int64_t(elements));
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(elements) * 8);
}

// What handing tasks to the executor costs: two empty tasks (one fork-join).
template <class Executor>
void run_fork_join(benchmark::State& state, Executor const& ex) {
  std::size_t sink = 0;
  for (auto _ : state) {
    ex(2, [&](std::size_t t) { benchmark::DoNotOptimize(sink += t); });
  }
}

const smax::executors::inline_tasks inline_executor{};
#if defined(_OPENMP)
const smax::executors::openmp two_threads{2};
// The adapter's loop with a dynamic schedule (task t on whichever thread is free): what an
// executor without affinity between its calls gives.
struct openmp_dynamic {
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    const auto count = static_cast<std::ptrdiff_t>(tasks);
#pragma omp parallel for schedule(dynamic, 1) num_threads(2)
    for (std::ptrdiff_t t = 0; t < count; ++t) f(static_cast<std::size_t>(t));
  }
};
const openmp_dynamic two_threads_dynamic{};
#endif

const bool registered = [] {
#if defined(_OPENMP)
  register_benchmark("executors/fork_join/openmp_2",
                     [](benchmark::State& st) { run_fork_join(st, two_threads); })
      ->UseRealTime();
#endif
  for (shape s : shapes) {
    const std::string n = name_of(s);
    register_benchmark("executors/softmax/" + n + "/single", [s](benchmark::State& st) {
      run_softmax<smax::executors::inline_tasks>(st, s, nullptr);
    })->UseRealTime();
    register_benchmark("executors/softmax/" + n + "/inline_tasks", [s](benchmark::State& st) {
      run_softmax(st, s, &inline_executor);
    })->UseRealTime();
    register_benchmark("executors/copy/" + n + "/single", [s](benchmark::State& st) {
      run_copy<smax::executors::inline_tasks>(st, s, nullptr);
    })->UseRealTime();
#if defined(_OPENMP)
    register_benchmark("executors/softmax/" + n + "/openmp_2", [s](benchmark::State& st) {
      run_softmax(st, s, &two_threads);
    })->UseRealTime();
    register_benchmark("executors/softmax/" + n + "/openmp_dynamic_2", [s](benchmark::State& st) {
      run_softmax(st, s, &two_threads_dynamic);
    })->UseRealTime();
    register_benchmark("executors/copy/" + n + "/openmp_2", [s](benchmark::State& st) {
      run_copy(st, s, &two_threads);
    })->UseRealTime();
#endif
  }
  return true;
}();

}  // namespace

#if defined(SMAX_EXECUTORS_BENCH_MAIN)
BENCHMARK_MAIN();
#endif
