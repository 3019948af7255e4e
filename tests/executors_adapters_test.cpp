// The adapters of <smax/executors.hpp>, each built when its library is found (tests/CMakeLists.txt
// defines SMAX_WITH_TBB / SMAX_WITH_PTHREADPOOL and compiles with OpenMP as available): each runs
// every task exactly once, and gives the bits of smax::executors::inline_tasks on a batch, a long
// row and MultiMax's parameter gradients.

#include <smax/executors.hpp>
#include <smax/smax.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <vector>

namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  std::vector<float> v(n);
  for (auto& e : v) e = u(rng);
  return v;
}

template <class Executor>
void check_adapter(Executor const& ex) {
  // Every task exactly once, including none.
  for (std::size_t tasks : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(1000)}) {
    std::vector<std::atomic<int>> runs(tasks);
    for (auto& r : runs) r = 0;
    ex(tasks, [&](std::size_t t) { runs[t].fetch_add(1); });
    for (std::size_t t = 0; t < tasks; ++t) ASSERT_EQ(runs[t].load(), 1) << "task " << t;
  }
  const smax::executors::inline_tasks serial;
  // A batch of 64 tasks.
  const std::size_t rows = 2048, cols = 1024;
  const auto x = random_vector(rows * cols, 1), dy = random_vector(rows * cols, 2);
  std::vector<float> want(x.size()), y(x.size());
  smax::softmax_rows(x.data(), want.data(), rows, cols, cols, {}, serial);
  smax::softmax_rows(x.data(), y.data(), rows, cols, cols, {}, ex);
  EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0) << "softmax_rows";
  // A long row, split by chunks.
  smax::log_softmax(x.data(), want.data(), x.size(), {}, serial);
  smax::log_softmax(x.data(), y.data(), x.size(), {}, ex);
  EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0) << "long row";
  // Parameter gradients, summed by task.
  const smax::multimax_options mm{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
  smax::multimax_rows(x.data(), want.data(), rows, cols, cols, mm);
  std::vector<float> dx_want(x.size()), dx(x.size());
  smax::multimax_param_grads g_want, g;
  smax::multimax_backward_rows(x.data(), want.data(), dy.data(), dx_want.data(), rows, cols, cols,
                               mm, &g_want, serial);
  smax::multimax_backward_rows(x.data(), want.data(), dy.data(), dx.data(), rows, cols, cols, mm,
                               &g, ex);
  EXPECT_EQ(std::memcmp(dx.data(), dx_want.data(), dx.size() * sizeof(float)), 0) << "multimax dx";
  EXPECT_EQ(std::memcmp(&g, &g_want, sizeof g), 0) << "multimax parameter gradients";
}

#if defined(_OPENMP)
TEST(executors_adapters, openmp) {
  check_adapter(smax::executors::openmp{});
  check_adapter(smax::executors::openmp{2});
}
#endif

#if defined(SMAX_WITH_TBB)
TEST(executors_adapters, tbb) {
  check_adapter(smax::executors::tbb{});
}
#endif

#if defined(SMAX_WITH_PTHREADPOOL)
TEST(executors_adapters, pthreadpool) {
  pthreadpool_t pool = pthreadpool_create(3);
  ASSERT_NE(pool, nullptr);
  check_adapter(smax::executors::pthreadpool{pool});
  pthreadpool_destroy(pool);
  check_adapter(smax::executors::pthreadpool{nullptr});  // a null pool: the calling thread
}
#endif

TEST(executors_adapters, inline_tasks) {
  check_adapter(smax::executors::inline_tasks{});
}

}  // namespace
