// Executors (api/entry.hpp, docs/threads.md): every family of <smax/families.hpp> called with an
// executor as its last argument.
//
// - A batch split into tasks gives the bits of the single-threaded call, forward and backward
//   (and the parameter gradients), whatever runs the tasks: a std::thread executor with 1 to 8
//   threads, and an odd one that runs the tasks in reverse order, unevenly over two threads.
//   On every instruction set compiled in (api::forward / api::backward on that set's kernels);
//   the stamped forms, header-only and smax::runtime, in executors_forms_test.cpp.
// - zero_masked_rows composes: each task runs the single-threaded path on its rows.
// - A short batch (less than one task's grain) never calls the executor.
// - A long softmax / log-softmax row is split by chunks: within the stated bound of the long-double
//   reference (the bound of the single-threaded call), and the same bits with every executor.
//
// Built into smax_threads_tests (every instruction set the tests compile; CI runs it with g++,
// under AddressSanitizer and under ThreadSanitizer; not under qemu, whose run has no time for it).

#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstddef>
#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "executors_support.hpp"
#include "test_support.hpp"

namespace {

// One family on one dispatcher: forward and backward on every executor against the call
// without one, bit for bit (and the parameter gradients).
template <class Family, class Dispatch, class T>
void check_family_split(const char* name, bool every_thread_count, bool masked) {
  using grads_t = typename Family::grads;
  constexpr bool with_grads = Family::backward_form == backward_shape::from_input_with_grads;
  constexpr bool reads_x = Family::backward_form != backward_shape::from_output;
  constexpr std::size_t rows = batch_rows_of<T>(), cols = batch_cols, ld = batch_ld;
  ASSERT_EQ(smax::api::plan_rows(rows, cols, sizeof(T)).tasks, 9u);
  auto opts = options_for<Family>();
  auto x = random_matrix<T>(rows * ld, 1);
  const auto dy = random_matrix<T>(rows * ld, 2);
  if constexpr (has_zero_masked_rows<typename Family::options>::value) {
    if (masked) {
      opts.zero_masked_rows = true;
      // All-masked rows at the start, in the middle and at the end of tasks.
      const std::size_t per_task = smax::api::plan_rows(rows, cols, sizeof(T)).rows_per_task;
      for (std::size_t r : {std::size_t(0), per_task - 1, per_task, rows - 1})
        for (std::size_t c = 0; c < cols; ++c) x[r * ld + c] = -smax_test::infinity<T>;
    }
  }
  if (masked && !has_zero_masked_rows<typename Family::options>::value) return;

  std::vector<T> want(rows * ld, T(-7));
  [[maybe_unused]] std::size_t reported = 0;
  if constexpr (Family::reports_rows)
    reported =
        smax::api::forward<Family, Dispatch>(x.data(), ld, want.data(), ld, rows, cols, opts);
  else
    smax::api::forward<Family, Dispatch>(x.data(), ld, want.data(), ld, rows, cols, opts);
  std::vector<T> dwant(rows * ld, T(-7));
  grads_t gwant{};
  smax::api::backward<Family, Dispatch>(x.data(), ld, want.data(), ld, dy.data(), ld,
                                        dwant.data(), ld, rows, cols, opts,
                                        with_grads ? &gwant : nullptr);

  std::vector<T> y(rows * ld), dx(rows * ld);
  auto check = [&](auto&& ex, std::string const& what) {
    std::fill(y.begin(), y.end(), T(-7));
    if constexpr (Family::reports_rows) {
      const std::size_t got = smax::api::forward<Family, Dispatch>(
          x.data(), ld, y.data(), ld, rows, cols, opts, smax::api::algorithm_choice::automatic, ex);
      EXPECT_EQ(got, reported) << name << ", reported rows, " << what;
    } else {
      smax::api::forward<Family, Dispatch>(x.data(), ld, y.data(), ld, rows, cols, opts,
                                           smax::api::algorithm_choice::automatic, ex);
    }
    EXPECT_TRUE(same_bits(y, want)) << name << " forward, " << what;
    std::fill(dx.begin(), dx.end(), T(-7));
    grads_t g{};
    smax::api::backward<Family, Dispatch>(reads_x ? x.data() : nullptr, ld, want.data(), ld,
                                          dy.data(), ld, dx.data(), ld, rows, cols, opts,
                                          with_grads ? &g : nullptr, ex);
    EXPECT_TRUE(same_bits(dx, dwant)) << name << " backward, " << what;
    if (with_grads) {
      EXPECT_EQ(std::memcmp(&g, &gwant, sizeof g), 0) << name << " parameter gradients, " << what;
    }
  };
  // Under emulation or the sanitizers (CI sets these variables there), 1, 2, 5 and 8 threads.
  const bool reduced =
      smax_test::exhaustive_stride() > 1 || std::getenv("SMAX_TEST_LONG_ROW_LIMIT") != nullptr;
  for (unsigned threads = 1; threads <= 8; ++threads)
    if (every_thread_count
            ? !reduced || threads == 1 || threads == 2 || threads == 5 || threads == 8
            : threads == 3)
      check(thread_executor{threads}, std::to_string(threads) + " threads");
  check(odd_executor{}, "reverse, uneven executor");
}

template <class C>
class executors_test : public ::testing::Test {};
TYPED_TEST_SUITE(executors_test, smax_test::all_configs, smax_test::config_names);

// Every family, on every instruction set compiled in: thread counts 1 to 8 and the odd executor.
TYPED_TEST(executors_test, batches_equal_the_single_threaded_call) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  using T = typename TypeParam::value_type;
#define SMAX_EXECUTORS_FAMILY(name, extra) \
  check_family_split<smax::api::name##_family, on_arch<A>, T>(#name, true, false);
  SMAX_FAMILIES(SMAX_EXECUTORS_FAMILY)
#undef SMAX_EXECUTORS_FAMILY
}

// zero_masked_rows: all-masked rows at task edges; each task runs the single-threaded path.
TYPED_TEST(executors_test, zero_masked_rows_compose) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  using T = typename TypeParam::value_type;
#define SMAX_EXECUTORS_FAMILY(name, extra) \
  check_family_split<smax::api::name##_family, on_arch<A>, T>(#name, false, true);
  SMAX_FAMILIES(SMAX_EXECUTORS_FAMILY)
#undef SMAX_EXECUTORS_FAMILY
}


// A call of less than one task's grain runs inline: the executor is never called.
template <class Family, class T>
void check_short_batch_inline(const char* name) {
  using grads_t = typename Family::grads;
  constexpr bool with_grads = Family::backward_form == backward_shape::from_input_with_grads;
  const auto opts = options_for<Family>();
  // 8 rows of 1000, and one row just under the grain (and, for the chunking families, under the
  // long-row threshold).
  const std::size_t one_row = smax::api::task_grain_bytes / sizeof(T) - 16;
  for (auto shape : {std::pair<std::size_t, std::size_t>{8, 1000}, {1, one_row}}) {
    const std::size_t rows = shape.first, cols = shape.second;
    ASSERT_EQ(smax::api::plan_rows(rows, cols, sizeof(T)).tasks, 1u);
    const auto x = random_matrix<T>(rows * cols, 6), dy = random_matrix<T>(rows * cols, 7);
    std::vector<T> y(rows * cols), dx(rows * cols);
    grads_t g{};
    std::size_t calls = 0;
    smax::api::forward<Family, smax::api::header_only>(x.data(), cols, y.data(), cols, rows, cols,
                                                       opts, smax::api::algorithm_choice::automatic,
                                                       counting_executor{&calls});
    smax::api::backward<Family, smax::runtime::dispatch::chosen>(
        x.data(), cols, y.data(), cols, dy.data(), cols, dx.data(), cols, rows, cols, opts,
        with_grads ? &g : nullptr, counting_executor{&calls});
    EXPECT_EQ(calls, 0u) << name << ", " << rows << " x " << cols;
  }
}

TEST(executors, short_batches_never_call_the_executor) {
#define SMAX_EXECUTORS_FAMILY(name, extra)                            \
  check_short_batch_inline<smax::api::name##_family, float>(#name); \
  check_short_batch_inline<smax::api::name##_family, double>(#name);
  SMAX_FAMILIES(SMAX_EXECUTORS_FAMILY)
#undef SMAX_EXECUTORS_FAMILY
}

// The split is a function of the shape only.
TEST(executors, the_split_depends_on_the_shape_only) {
  using smax::api::plan_rows;
  // 4096 x 1024 floats: 32 rows (128 KiB) per task.
  EXPECT_EQ(plan_rows(4096, 1024, 4).tasks, 128u);
  EXPECT_EQ(plan_rows(4096, 1024, 4).rows_per_task, 32u);
  // Rows longer than the grain: one per task; more than max_tasks rows: larger tasks.
  EXPECT_EQ(plan_rows(10, 100000, 4).tasks, 10u);
  EXPECT_LE(plan_rows(100000, 100000, 4).tasks, smax::api::max_tasks);
  EXPECT_EQ(plan_rows(0, 10, 4).tasks, 1u);
  EXPECT_EQ(plan_rows(10, 0, 4).tasks, 1u);
  // Long rows: chunks of about one grain, on 64-element boundaries, covering the row.
  const auto c = smax::api::plan_chunks(1, std::size_t(1) << 20, 4);
  EXPECT_EQ(c.chunks, 32u);
  EXPECT_EQ(c.chunk % 64, 0u);
  EXPECT_GE(c.chunks * c.chunk, std::size_t(1) << 20);
  EXPECT_LT((c.chunks - 1) * c.chunk, std::size_t(1) << 20);
  EXPECT_EQ(smax::api::plan_chunks(1, 60000, 4).chunks, 1u);  // under 256 KiB: not split
  EXPECT_LE(smax::api::plan_chunks(100, 1 << 20, 4).chunks * 100, smax::api::max_tasks);
}

// A long softmax / log-softmax row, split by chunks: within the bound of the single-threaded call
// against the long-double reference, and the same bits with every executor.
template <class C>
class executors_long_row_test : public ::testing::Test {};
TYPED_TEST_SUITE(executors_long_row_test, smax_test::all_configs, smax_test::config_names);

template <class T>
::testing::AssertionResult within_bound(std::vector<T> const& x, std::vector<T> const& y,
                                        bool log, double temperature) {
  const std::size_t n = x.size();
  const auto ref = smax::reference::softmax(x.data(), n, log,
                                            smax::reference::options{temperature, false});
  long double m = -HUGE_VALL;
  for (T v : x) m = v > m ? v : m;
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : 1e-14;
  for (std::size_t i = 0; i < n; ++i) {
    ::testing::AssertionResult r = ::testing::AssertionSuccess();
    if (log) {
      const double z = std::fabs(static_cast<double>(ref[i]));
      r = smax_test::matches(y[i], ref[i], 0.0, eps * (z + 1 + std::log(double(n))), i, false);
    } else {
      const double spread = temperature == 1 ? 0.0 : static_cast<double>((m - x[i]) / temperature);
      r = smax_test::matches(y[i], ref[i], smax_test::softmax_rtol<T> + eps * spread,
                             std::numeric_limits<T>::min(), i);
    }
    if (!r) return r << " (n = " << n << (log ? ", log" : "") << ", T = " << temperature << ")";
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(executors_long_row_test, split_by_chunks_within_the_bound) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  using T = typename TypeParam::value_type;
  // Long enough to split (>= 256 KiB) whatever SMAX_TEST_LONG_ROW_LIMIT says; the tail is odd.
  const std::size_t n = (smax::api::long_row_bytes / sizeof(T)) * 3 / 2 + 37;
  ASSERT_GT(smax::api::plan_chunks(1, n, sizeof(T)).chunks, 1u);
  const auto x = smax_test::random_row<T>(n, 40.0, 100.0, 8);
  for (bool log : {false, true})
    for (double temperature : {1.0, 2.5}) {
      const smax::softmax_options opts{temperature};
      std::vector<T> first(n, T(-7));
      std::size_t calls = 0;
      auto run = [&](auto&& ex, std::vector<T>& y, const T* in = nullptr) {
        in = in ? in : x.data();
        if (log)
          smax::api::forward<smax::api::log_softmax_family, on_arch<A>>(
              in, n, y.data(), n, 1, n, opts, smax::api::algorithm_choice::automatic, ex);
        else
          smax::api::forward<smax::api::softmax_family, on_arch<A>>(
              in, n, y.data(), n, 1, n, opts, smax::api::algorithm_choice::automatic, ex);
      };
      run(counting_executor{&calls}, first);
      EXPECT_EQ(calls, 2u) << "the reductions, then the normalisations";
      EXPECT_TRUE(within_bound(x, first, log, temperature));
      for (unsigned threads : {1u, 2u, 5u, 8u}) {
        std::vector<T> y(n, T(-7));
        run(thread_executor{threads}, y);
        EXPECT_TRUE(same_bits(y, first)) << threads << " threads, log " << log;
      }
      std::vector<T> y(n, T(-7));
      run(odd_executor{}, y);
      EXPECT_TRUE(same_bits(y, first)) << "odd executor, log " << log;
      // In place (each chunk is read before it is written, by the same task).
      y = x;
      run(thread_executor{2}, y, y.data());
      EXPECT_TRUE(same_bits(y, first)) << "in place, log " << log;
    }
}

// The split's two forms on rows whose chunks differ: softmax rows up to 4 MiB store each chunk's
// exponentials with the chunk's own shift and scale them once the row is merged; longer rows and
// log-softmax take the online state. Chunk maxima falling and rising by 30 per chunk (later or
// earlier chunks underflow next to the row's maximum), a masked chunk among them, a NaN or a +inf
// in one chunk, a row of only -inf; temperatures 0.01 and 100 on the stored form, 1e36 beyond
// its range. Within the single-threaded call's bound, with the same bits on every executor.
TYPED_TEST(executors_long_row_test, chunks_of_different_ranges) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using A = typename TypeParam::arch;
  using T = typename TypeParam::value_type;
  const T inf = smax_test::infinity<T>;
  // Five chunks or so, the last one short; a row past 4 MiB takes the online form.
  const std::size_t lengths[] = {(smax::api::long_row_bytes / sizeof(T)) * 5 / 2 + 13,
                                 (std::size_t(4) << 20) / sizeof(T) + 4099};
  // Under emulation or the sanitizers (CI sets these variables there), the first length only.
  const bool reduced =
      smax_test::exhaustive_stride() > 1 || std::getenv("SMAX_TEST_LONG_ROW_LIMIT") != nullptr;
  for (std::size_t n : lengths) {
    const bool online_form = n * sizeof(T) > (std::size_t(4) << 20);
    if (online_form && reduced) continue;
    const auto split = smax::api::plan_chunks(1, n, sizeof(T));
    ASSERT_GT(split.chunks, 2u);
    std::mt19937 gen(17);
    std::uniform_real_distribution<double> u(-5.0, 5.0);
    auto ranged = [&](double step) {
      std::vector<T> x(n);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = static_cast<T>(u(gen) + step * static_cast<double>(i / split.chunk));
      return x;
    };
    for (bool log : {false, true}) {
      auto run = [&](auto&& ex, std::vector<T> const& x, smax::softmax_options const& opts) {
        std::vector<T> y(n, T(-7));
        if (log)
          smax::api::forward<smax::api::log_softmax_family, on_arch<A>>(
              x.data(), n, y.data(), n, 1, n, opts, smax::api::algorithm_choice::automatic, ex);
        else
          smax::api::forward<smax::api::softmax_family, on_arch<A>>(
              x.data(), n, y.data(), n, 1, n, opts, smax::api::algorithm_choice::automatic, ex);
        return y;
      };
      auto same_on_every_executor = [&](std::vector<T> const& x, smax::softmax_options const& opts,
                                        std::vector<T> const& want) {
        for (unsigned threads : {1u, 2u, 5u})
          if (!same_bits(run(thread_executor{threads}, x, opts), want)) return false;
        return static_cast<bool>(same_bits(run(odd_executor{}, x, opts), want));
      };
      for (double step : {-30.0, 30.0}) {
        auto x = ranged(step);
        // 1e36: 1/T below the vector kernels' range for float, where the split takes the online
        // form whatever the length.
        for (double temperature : {1.0, 0.01, 100.0, 1e36}) {
          if (online_form && temperature != 1.0) continue;  // the stored form's shifts only
          const smax::softmax_options opts{temperature};
          const auto y = run(thread_executor{2}, x, opts);
          EXPECT_TRUE(within_bound(x, y, log, temperature)) << "step " << step;
          EXPECT_TRUE(same_on_every_executor(x, opts, y)) << "step " << step << ", log " << log;
        }
        // The second chunk masked: zeros (-inf) there, the rest as the row without it.
        for (std::size_t i = split.chunk; i < 2 * split.chunk; ++i) x[i] = -inf;
        const auto y = run(thread_executor{2}, x, {});
        for (std::size_t i = split.chunk; i < 2 * split.chunk; ++i)
          ASSERT_EQ(y[i], log ? -inf : T(0)) << "masked chunk at " << i << ", step " << step;
        EXPECT_TRUE(within_bound(x, y, log, 1.0)) << "masked chunk, step " << step;
        EXPECT_TRUE(same_on_every_executor(x, {}, y));
      }
      // A NaN in the third chunk, a +inf in the last one: NaN rows.
      for (T special : {smax_test::quiet_nan<T>, inf}) {
        auto x = ranged(-30.0);
        x[special == inf ? n - 1 : 2 * split.chunk + 5] = special;
        const auto y = run(thread_executor{2}, x, {});
        for (std::size_t i = 0; i < n; ++i) ASSERT_TRUE(std::isnan(y[i])) << i << ", log " << log;
      }
      // Only -inf: NaN, or the masked rule with zero_masked_rows.
      const std::vector<T> masked(n, -inf);
      smax::softmax_options zero;
      zero.zero_masked_rows = true;
      const auto y_nan = run(thread_executor{2}, masked, {});
      const auto y_zero = run(thread_executor{2}, masked, zero);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(std::isnan(y_nan[i])) << i;
        ASSERT_EQ(y_zero[i], log ? -inf : T(0)) << i;
      }
    }
  }
}

// Rows of long rows, through the public forms: a fully masked row (zero_masked_rows), a NaN row,
// an ordinary one; padding untouched; header-only and runtime agree with themselves across
// executors and within the bound.
TEST(executors_long_rows, rows_forms_masked_and_nan_rows) {
  using T = float;
  const std::size_t cols = smax::api::long_row_bytes / sizeof(T) + 1000, ld = cols + 5, rows = 3;
  auto x = random_matrix<T>(rows * ld, 9);
  for (std::size_t c = 0; c < cols; ++c) x[c] = -smax_test::infinity<T>;  // row 0 masked
  x[ld + cols / 2] = smax_test::quiet_nan<T>;                              // row 1 NaN
  smax::softmax_options opts;
  opts.zero_masked_rows = true;
  for (bool log : {false, true})
    for (int runtime = 0; runtime < 2; ++runtime) {
      auto run = [&](auto&& ex) {
        std::vector<T> y(rows * ld, T(-7));
        if (log)
          runtime ? smax::runtime::log_softmax_rows(x.data(), y.data(), rows, cols, ld, opts, ex)
                  : smax::log_softmax_rows(x.data(), y.data(), rows, cols, ld, opts, ex);
        else
          runtime ? smax::runtime::softmax_rows(x.data(), y.data(), rows, cols, ld, opts, ex)
                  : smax::softmax_rows(x.data(), y.data(), rows, cols, ld, opts, ex);
        return y;
      };
      const auto y = run(thread_executor{2});
      EXPECT_TRUE(same_bits(run(odd_executor{}), y));
      for (std::size_t c = 0; c < cols; ++c) {
        ASSERT_EQ(y[c], log ? -smax_test::infinity<T> : T(0)) << "masked row at " << c;
        ASSERT_TRUE(std::isnan(y[ld + c])) << "NaN row at " << c;
      }
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = cols; c < ld; ++c) ASSERT_EQ(y[r * ld + c], T(-7)) << "padding";
      const std::vector<T> x2(x.begin() + 2 * ld, x.begin() + 2 * ld + cols),
          y2(y.begin() + 2 * ld, y.begin() + 2 * ld + cols);
      EXPECT_TRUE(within_bound(x2, y2, log, 1.0)) << (runtime ? "runtime" : "header-only");
    }
}

}  // namespace
