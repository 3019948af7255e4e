#pragma once
// Executors for the thread pools engines already have (docs/threads.md). Every smax form takes an
// executor as its last argument: any object ex callable as ex(std::size_t tasks, f) that runs
// f(std::size_t task) for every task in [0, tasks) and returns when all are done. smax has no
// thread pool of its own; these adapt the common ones:
//
//   smax::executors::openmp{}            #pragma omp parallel for        (compiled with -fopenmp)
//   smax::executors::openmp{4}           ... on at most 4 threads
//   smax::executors::tbb{}               tbb::parallel_for               (SMAX_WITH_TBB defined)
//   smax::executors::pthreadpool{pool}   pthreadpool_parallelize_1d      (SMAX_WITH_PTHREADPOOL)
//
//   smax::softmax_rows(x, y, rows, cols, ld, {}, smax::executors::openmp{});
//
// Which adapters exist is decided by what the including translation unit asks for, never by
// what happens to be installed: openmp when the compiler has OpenMP enabled (_OPENMP), tbb when
// SMAX_WITH_TBB is defined before this header (it then includes <tbb/parallel_for.h>; link
// TBB::tbb), pthreadpool when SMAX_WITH_PTHREADPOOL is (it includes <pthreadpool.h>; link
// -lpthreadpool). A header-only library should not pull a threading runtime into a program that
// did not choose it.
//
// The result of a call does not depend on the executor (the split is a function of the call's
// shape), provided its threads run with the caller's floating-point environment: smax's kernels
// round to nearest, and keep their own flush-to-zero guard where they need one, but a worker
// thread with denormals-are-zero set (pthreadpool's PTHREADPOOL_FLAG_DISABLE_DENORMALS, which the
// adapter below never passes) would read subnormal inputs as 0.
//
// The task function never throws; an executor may run tasks in any order and on any threads,
// including the calling one, and may run them all inline.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#if defined(SMAX_WITH_TBB)
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#endif
#if defined(SMAX_WITH_PTHREADPOOL)
#include <pthreadpool.h>
#endif

namespace smax {
namespace executors {

// Runs the tasks in order on the calling thread: the split of an executor call without threads
// (the result is that of any other executor).
struct inline_tasks {
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    for (std::size_t t = 0; t < tasks; ++t) f(t);
  }
};

#if defined(_OPENMP)
// An OpenMP parallel loop over the tasks, on the team's default size (threads = 0) or at most
// `threads` threads. Static schedule: each thread runs one contiguous block of the tasks, the
// same block in both executor calls of a split long row, so the pass that scales a chunk runs on
// the core that wrote it (with a dynamic schedule about half the chunks were read back from the
// other core's cache, and a 1M-element row gained 1.15x on two threads instead of 1.8x:
// bench/executors_bench.cpp has both).
struct openmp {
  int threads = 0;
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    const auto count = static_cast<std::ptrdiff_t>(tasks);
    if (threads > 0) {
#pragma omp parallel for schedule(static) num_threads(threads)
      for (std::ptrdiff_t t = 0; t < count; ++t) f(static_cast<std::size_t>(t));
    } else {
#pragma omp parallel for schedule(static)
      for (std::ptrdiff_t t = 0; t < count; ++t) f(static_cast<std::size_t>(t));
    }
  }
};
#endif

#if defined(SMAX_WITH_TBB)
// tbb::parallel_for over the tasks, one task a range (smax's tasks are already the grain), in the
// current task arena (a user's tbb::task_arena::execute around the call picks the threads).
struct tbb {
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    ::tbb::parallel_for(::tbb::blocked_range<std::size_t>(0, tasks, 1),
                        [&f](::tbb::blocked_range<std::size_t> const& r) {
                          for (std::size_t t = r.begin(); t != r.end(); ++t) f(t);
                        });
  }
};
#endif

#if defined(SMAX_WITH_PTHREADPOOL)
// pthreadpool_parallelize_1d on the caller's pool (the pool XNNPACK uses; a null pool runs the
// tasks on the calling thread). No flags: PTHREADPOOL_FLAG_DISABLE_DENORMALS would change what
// subnormal inputs mean.
struct pthreadpool {
  pthreadpool_t pool = nullptr;
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    using task_fn = std::remove_reference_t<F>;
    void* context = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
    pthreadpool_parallelize_1d(
        pool, [](void* c, std::size_t t) { (*static_cast<task_fn*>(c))(t); }, context, tasks, 0);
  }
};
#endif

}  // namespace executors
}  // namespace smax
