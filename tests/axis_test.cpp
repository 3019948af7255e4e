// The any-axis forms (api/axis.hpp) of every family in <smax/families.hpp>, header-only and in
// smax::runtime, float and double: each column y[o, :, j] of name_axis over an outer × n × inner
// tensor has the bits of the rows form on that column (so every bound, edge rule and option
// carries over), or, for softmax and log-softmax on float (the native kernel), is within their
// bounds of the long-double reference, with the same bits in place, on an executor and alone:
// lengths and widths around the tile width (16 floats, 8 doubles), columns too long for a
// 16-column tile, NaN, +inf and all-masked columns, zero_masked_rows, in place, on an executor
// (tasks reversed, on two threads), and the tile buffer's allocation failure (NaN). The native
// kernel itself on every instruction set: every width up to its tile, adversarial columns, the
// columns it must pass back.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using smax_test::sample_options;

using smax_test::has_zero_masked_rows;

template <class T>
bool same_bits(std::vector<T> const& a, std::vector<T> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!smax_test::same_bits_or_both_nan(a[i], b[i])) return false;
  return true;
}

// Tasks in reverse order, the last half on a second thread.
struct reverse_two_threads {
  template <class F>
  void operator()(std::size_t tasks, F&& f) const {
    std::thread other([&] {
      for (std::size_t t = tasks; t-- > tasks / 2;) f(t);
    });
    for (std::size_t t = tasks / 2; t-- > 0;) f(t);
    other.join();
  }
};

// A tensor of values in [-6, 6]; column `nan_column` holds a NaN, `inf_column` a +inf and
// `masked_column` is all -inf (where those columns exist).
template <class T>
std::vector<T> tensor(std::size_t outer, std::size_t n, std::size_t inner, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-6.0, 6.0);
  std::vector<T> x(outer * n * inner);
  for (auto& v : x) v = static_cast<T>(u(rng));
  if (inner >= 3) {
    const std::size_t o = outer - 1;
    x[(o * n + n / 2) * inner + 0] = smax_test::quiet_nan<T>;
    x[(o * n + n - 1) * inner + 1] = smax_test::infinity<T>;
    for (std::size_t i = 0; i < n; ++i) x[(o * n + i) * inner + 2] = -smax_test::infinity<T>;
  }
  return x;
}

// What the axis form must give: the rows form on every column, and the columns reported.
template <class Family, class Dispatch, class T>
std::vector<T> by_columns(std::vector<T> const& x, std::size_t outer, std::size_t n,
                          std::size_t inner, typename Family::options const& opts,
                          std::size_t* reported) {
  std::vector<T> y(x.size()), column(n), out(n);
  *reported = 0;
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      for (std::size_t i = 0; i < n; ++i) column[i] = x[(o * n + i) * inner + j];
      if constexpr (Family::reports_rows)
        *reported += smax::api::forward<Family, Dispatch>(column.data(), n, out.data(), n, 1, n, opts);
      else
        smax::api::forward<Family, Dispatch>(column.data(), n, out.data(), n, 1, n, opts);
      for (std::size_t i = 0; i < n; ++i) y[(o * n + i) * inner + j] = out[i];
    }
  return y;
}

// Families whose float axis form runs the native kernel: within the bound of the reference
// instead of the rows form's bits.
template <class Family, class T>
constexpr bool native = Family::template axis_kernel<T>;

// Every column of y against the long-double reference of softmax or log-softmax (Family) with
// opts; columns of the outer slices [first_slice, outer) only.
template <class Family, class T>
::testing::AssertionResult columns_match_reference(std::vector<T> const& x, std::vector<T> const& y,
                                                   std::size_t outer, std::size_t n,
                                                   std::size_t inner,
                                                   typename Family::options const& opts,
                                                   std::size_t first_slice = 0) {
  const bool log = std::is_same_v<Family, smax::api::log_softmax_family>;
  std::vector<T> column(n), out(n);
  for (std::size_t o = first_slice; o < outer; ++o)
    for (std::size_t j = 0; j < inner; ++j) {
      for (std::size_t i = 0; i < n; ++i) {
        column[i] = x[(o * n + i) * inner + j];
        out[i] = y[(o * n + i) * inner + j];
      }
      auto r = smax_test::output_matches_reference(
          column, out.data(), log, static_cast<T>(opts.temperature), opts.zero_masked_rows);
      if (!r) return r << " (slice " << o << ", column " << j << ")";
    }
  return ::testing::AssertionSuccess();
}

// What name_axis must give on x: the rows form's bits on every column, or (native) values within
// the bound of the reference, reported in `ok`.
template <class Family, class Dispatch, class T>
::testing::AssertionResult axis_result_ok(std::vector<T> const& x, std::vector<T> const& y,
                                          std::vector<T> const& by_rows, std::size_t outer,
                                          std::size_t n, std::size_t inner,
                                          typename Family::options const& opts) {
  if constexpr (native<Family, T>) {
    return columns_match_reference<Family>(x, y, outer, n, inner, opts);
  } else {
    (void)x, (void)outer, (void)n, (void)inner, (void)opts;
    if (same_bits(y, by_rows)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "not the rows form's bits";
  }
}

// One form (header-only or runtime, `Dispatch` its dispatcher) of one family on element type T.
template <class Family, class Dispatch, class T, class Form>
void check_form(Form const& form, const char* what) {
  auto opts = sample_options<Family>::get();
  const std::size_t lane = 64 / sizeof(T);
  auto call = [&](std::vector<T> const& x, std::vector<T>& y, std::size_t outer, std::size_t n,
                  std::size_t inner, auto&&... ex) {
    std::size_t reported = 0;
    if constexpr (Family::reports_rows)
      reported = form(x.data(), y.data(), outer, n, inner, opts, ex...);
    else
      form(x.data(), y.data(), outer, n, inner, opts, ex...);
    return reported;
  };
  for (bool zero_masked : {false, true}) {
    if constexpr (has_zero_masked_rows<typename Family::options>::value)
      opts.zero_masked_rows = zero_masked;
    else if (zero_masked)
      continue;
    for (std::size_t outer : {std::size_t(1), std::size_t(3)})
      for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(5), std::size_t(37),
                            std::size_t(300)})
        for (std::size_t inner : {std::size_t(1), std::size_t(2), std::size_t(3), lane - 1, lane,
                                  lane + 1, 2 * lane + 5}) {
          const auto x = tensor<T>(outer, n, inner, static_cast<unsigned>(outer * 1000 + n * 7 + inner));
          std::size_t want_reported = 0;
          const auto want = by_columns<Family, Dispatch>(x, outer, n, inner, opts, &want_reported);
          std::vector<T> y(x.size(), T(-7));
          const std::size_t got_reported = call(x, y, outer, n, inner);
          ASSERT_TRUE((axis_result_ok<Family, Dispatch>(x, y, want, outer, n, inner, opts)))
              << what << ": outer " << outer << ", n " << n << ", inner " << inner
              << ", zero_masked_rows " << zero_masked;
          EXPECT_EQ(got_reported, want_reported) << what;
          auto in_place = x;
          call(in_place, in_place, outer, n, inner);
          ASSERT_TRUE(same_bits(in_place, y))
              << what << " in place: n " << n << ", inner " << inner;
        }
  }
  // Columns longer than a 16-column tile holds (256 KiB): one or two columns a tile.
  {
    const std::size_t outer = 1, n = 40000, inner = 3;
    const auto x = tensor<T>(outer, n, inner, 5);
    std::size_t want_reported = 0;
    const auto want = by_columns<Family, Dispatch>(x, outer, n, inner, opts, &want_reported);
    std::vector<T> y(x.size(), T(-7));
    EXPECT_EQ(call(x, y, outer, n, inner), want_reported) << what;
    EXPECT_TRUE((axis_result_ok<Family, Dispatch>(x, y, want, outer, n, inner, opts)))
        << what << ": long columns";
  }
  // On an executor: several tasks of tiles (300 entries × 16 or 8 columns a tile, 128 KiB a task).
  {
    const std::size_t outer = 40, n = 300, inner = 2 * lane + 3;
    const auto x = tensor<T>(outer, n, inner, 9);
    std::size_t want_reported = 0;
    const auto want = by_columns<Family, Dispatch>(x, outer, n, inner, opts, &want_reported);
    std::vector<T> y(x.size(), T(-7)), alone(x.size(), T(-7));
    EXPECT_EQ(call(x, y, outer, n, inner, reverse_two_threads{}), want_reported) << what;
    EXPECT_TRUE((axis_result_ok<Family, Dispatch>(x, y, want, outer, n, inner, opts)))
        << what << ": on an executor";
    call(x, alone, outer, n, inner);
    EXPECT_TRUE(same_bits(y, alone)) << what << ": on an executor, the single-threaded bits";
  }
  // The tile buffer cannot be allocated: NaN columns (inner = 1 is the rows form, no tiles). The
  // native kernel needs no tile buffer (its columns of up to 2048 rows finish NaN, +inf and
  // all-masked columns themselves).
  {
    const auto x = tensor<T>(2, 37, 5, 11);
    std::vector<T> y(x.size(), T(-7));
    smax::primitives::scratch_limit<smax::api::axis_tiles> = 0;
    const std::size_t reported = call(x, y, 2, 37, 5);
    smax::primitives::scratch_limit<smax::api::axis_tiles> = ~std::size_t(0);
    if constexpr (native<Family, T>) {
      EXPECT_TRUE((columns_match_reference<Family>(x, y, 2, 37, 5, opts)))
          << what << ": the native kernel needs no tile buffer";
    } else {
      for (T v : y) ASSERT_TRUE(std::isnan(v)) << what << ": allocation failure";
    }
    EXPECT_EQ(reported, 0u);
    const auto x1 = tensor<T>(3, 37, 1, 12);
    std::size_t want_reported = 0;
    const auto want = by_columns<Family, Dispatch>(x1, 3, 37, 1, opts, &want_reported);
    std::vector<T> y1(x1.size());
    smax::primitives::scratch_limit<smax::api::axis_tiles> = 0;
    call(x1, y1, 3, 37, 1);
    smax::primitives::scratch_limit<smax::api::axis_tiles> = ~std::size_t(0);
    EXPECT_TRUE(same_bits(y1, want)) << what << ": inner = 1 needs no tile";
  }
}

template <class Family, class T, class Header, class Runtime>
void check_family(Header const& header, Runtime const& runtime) {
  check_form<Family, smax::api::header_only, T>(header, "header-only");
  check_form<Family, smax::runtime::dispatch::chosen, T>(runtime, "runtime");
}

#define SMAX_AXIS_TEST(name, extra)                                                           \
  TEST(axis, name) {                                                                          \
    auto header = [](auto... a) { return smax::name##_axis(a...); };                         \
    auto runtime = [](auto... a) { return smax::runtime::name##_axis(a...); };               \
    check_family<smax::api::name##_family, float>(header, runtime);                          \
    check_family<smax::api::name##_family, double>(header, runtime);                         \
  }
SMAX_FAMILIES(SMAX_AXIS_TEST)
#undef SMAX_AXIS_TEST

// An empty tensor (outer, n or inner 0) does nothing and reads nothing: null pointers are fine,
// and y is left as it was.
TEST(axis, empty_calls_touch_nothing) {
  float* none = nullptr;
  smax::softmax_axis(none, none, 0, 5, 3);
  smax::softmax_axis(none, none, 4, 0, 3);
  smax::softmax_axis(none, none, 4, 5, 0);
  smax::runtime::sparsemax_axis(none, none, 0, 5, 3);
  smax::log_softmax_axis(none, none, 4, 5, 0, {}, reverse_two_threads{});
  std::vector<double> x(12, 1.0), y(12, -7.0);
  smax::softmax_axis(x.data(), y.data(), 4, 3, 0);
  smax::softmax_axis(x.data(), y.data(), 0, 3, 4);
  for (double v : y) EXPECT_EQ(v, -7.0);
}

// The tiling is a function of the shape: 16 floats (8 doubles) a tile while a tile of n stays
// within 256 KiB, fewer for longer columns, never more than inner; rows an odd number of lines
// apart.
TEST(axis, tiling) {
  EXPECT_EQ(smax::api::plan_axis_tiles(1000, 64, 4).columns, 16u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1000, 64, 4).per_slice, 4u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1000, 64, 8).columns, 8u);
  EXPECT_EQ(smax::api::plan_axis_tiles(4096, 256, 4).columns, 16u);
  EXPECT_EQ(smax::api::plan_axis_tiles(8192, 256, 4).columns, 8u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1 << 20, 256, 4).columns, 1u);
  EXPECT_EQ(smax::api::plan_axis_tiles(10, 5, 4).columns, 5u);
  EXPECT_EQ(smax::api::plan_axis_tiles(10, 5, 4).per_slice, 1u);
  // The tile's rows an odd number of 64-byte lines apart (4096 floats: 257 lines, not 256).
  EXPECT_EQ(smax::api::plan_axis_tiles(4096, 256, 4).ld, 4112u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1000, 64, 4).ld, 1008u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1000, 64, 8).ld, 1000u);
  EXPECT_EQ(smax::api::plan_axis_tiles(1, 64, 4).ld, 16u);
}

}  // namespace

// The native kernel of softmax / log-softmax on float (softmax_table<A>::forward_axis), on every
// compiled instruction set: a block of n rows `stride` apart, `width` columns of it.
template <class C>
class axis_kernel : public ::testing::Test {};
TYPED_TEST_SUITE(axis_kernel, smax_test::compiled::floats, smax_test::config_names);

// Runs the kernel on columns [0, width) of a block whose rows are width + 3 apart, the three
// columns past the block holding a guard value; returns what it returned.
template <class C>
bool run_kernel(std::vector<float> const& x, std::vector<float>& y, std::size_t n,
                std::size_t width, float temperature, bool log) {
  return C::table::forward_axis(x.data(), y.data(), n, width + 3, width, temperature,
                                log ? smax::kernels::flag_log : 0u);
}

// Column j of a block (rows width + 3 apart).
inline std::vector<float> column_of(std::vector<float> const& block, std::size_t n,
                                    std::size_t width, std::size_t j) {
  std::vector<float> c(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = block[i * (width + 3) + j];
  return c;
}

// Checks every column of a kernel run on x against the reference, and that nothing beyond the
// columns was written.
template <class C>
::testing::AssertionResult kernel_matches_reference(std::vector<float> const& x, std::size_t n,
                                                    std::size_t width, float temperature,
                                                    bool log) {
  std::vector<float> y(x.size(), -7.0f);
  if (!run_kernel<C>(x, y, n, width, temperature, log))
    return ::testing::AssertionFailure() << "passed back a block of ordinary columns";
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = width; j < width + 3; ++j)
      if (y[i * (width + 3) + j] != -7.0f)
        return ::testing::AssertionFailure() << "wrote past the columns (row " << i << ")";
  for (std::size_t j = 0; j < width; ++j) {
    const auto col = column_of(x, n, width, j), out = column_of(y, n, width, j);
    auto r = smax_test::output_matches_reference(col, out.data(), log, temperature);
    if (!r)
      return r << " (column " << j << " of " << width << ", n " << n << ", T " << temperature
               << ")";
  }
  return ::testing::AssertionSuccess();
}

inline std::vector<float> random_block(std::size_t n, std::size_t width, double spread,
                                       double offset, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(offset - spread / 2, offset + spread / 2);
  std::vector<float> x(n * (width + 3));
  for (auto& v : x) v = static_cast<float>(u(rng));
  return x;
}

// Every width up to the kernel's tile (whole lines, whole vectors, a partial vector), lengths
// around the 16-row blocks, temperatures below and above 1 (the halved log-softmax form).
TYPED_TEST(axis_kernel, every_width_and_length) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t width = 1; width <= smax::kernels::axis_max_columns;
       width += width < 40 ? 1 : 29)
    for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(15), std::size_t(16),
                          std::size_t(17), std::size_t(33), std::size_t(100)})
      for (float temperature : {1.0f, 0.37f, 3.7f})
        for (bool log : {false, true}) {
          const auto x = random_block(n, width, 30.0, 0.0, static_cast<unsigned>(width * 131 + n));
          ASSERT_TRUE(kernel_matches_reference<TypeParam>(x, n, width, temperature, log))
              << (log ? "log-softmax" : "softmax");
        }
}

// Long columns (the sum folded over many blocks), offsets that make x - max inexact, spreads
// that underflow.
TYPED_TEST(axis_kernel, long_columns_spreads_and_offsets) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1000), smax_test::long_row(40000)})
    for (double spread : {20.0, 200.0})
      for (double offset : {0.0, 1000.0, -1000.0})
        for (bool log : {false, true}) {
          if (n > 5000 && (offset != 0.0 || spread != 20.0)) continue;  // n is about the sums
          const std::size_t width = 19;
          const auto x = random_block(n, width, spread, offset, static_cast<unsigned>(n + spread));
          EXPECT_TRUE(kernel_matches_reference<TypeParam>(x, n, width, 1.0f, log))
              << "spread " << spread << ", offset " << offset;
        }
}

// Masked entries (-inf) in some rows of every lane; values near ±FLT_MAX (x - max overflows: exp
// is 0, and log-softmax's halved form keeps (x - max)/T finite where it is); maxima beyond the
// power-of-two shift's range beside ordinary columns; subnormal entries; a constant column;
// temperatures up to the edges of the vector path (3e35 < FLT_MAX/1024, 5e-38 > 16/FLT_MAX).
TYPED_TEST(axis_kernel, adversarial_columns) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const float inf = smax_test::infinity<float>, big = 3e38f;
  const std::size_t width = 21, ld = width + 3;
  for (std::size_t n : {std::size_t(37), smax::kernels::axis_blocked_max_rows + 3})
    for (float temperature : {1.0f, 0.5f, 3.7f, 1e30f, 1e-30f, 3e35f, 5e-38f})
      for (bool log : {false, true}) {
        auto x = random_block(n, width, 10.0, 0.0, 3);
        for (std::size_t j = 0; j < width; ++j) x[((j * 5) % n) * ld + j] = -inf;  // a mask a lane
        for (std::size_t i = 0; i < n; ++i) x[i * ld + 1] = i % 3 == 0 ? big : -big;
        for (std::size_t i = 0; i < n; ++i) x[i * ld + 2] = i % 2 ? 1e38f : -3e38f;
        x[5 * ld + 3] = 4e7f;  // beyond exp_minus_shift's range
        for (std::size_t i = 0; i < n; ++i) x[i * ld + 4] = 1e-40f * static_cast<float>(i);
        for (std::size_t i = 0; i < n; ++i) x[i * ld + 5] = 2.5f;
        for (std::size_t i = 0; i < n; ++i) x[i * ld + 6] = i == 7 ? 0.0f : -1e30f;
        EXPECT_TRUE(kernel_matches_reference<TypeParam>(x, n, width, temperature, log))
            << (log ? "log-softmax" : "softmax") << ", n " << n;
      }
}

// A column's result does not depend on its neighbours or its lane (columns of up to
// axis_blocked_max_rows rows: the blocked form has one arithmetic for every column): each
// column alone (width 1, a partial vector) gives the bits it has in a block of 37 columns.
TYPED_TEST(axis_kernel, columns_are_independent_of_their_lane) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 50, width = 37;
  for (bool log : {false, true}) {
    const auto x = random_block(n, width, 40.0, 5.0, 8);
    std::vector<float> y(x.size());
    ASSERT_TRUE(run_kernel<TypeParam>(x, y, n, width, 1.0f, log));
    for (std::size_t j = 0; j < width; ++j) {
      std::vector<float> xj(n * 4, 0.0f), yj(n * 4, 0.0f);
      for (std::size_t i = 0; i < n; ++i) xj[i * 4] = x[i * (width + 3) + j];
      ASSERT_TRUE(run_kernel<TypeParam>(xj, yj, n, 1, 1.0f, log));
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_TRUE(smax_test::same_bits_or_both_nan(yj[i * 4], y[i * (width + 3) + j]))
            << "column " << j << ", row " << i;
    }
  }
}

// Special columns: columns of up to axis_blocked_max_rows rows are finished by the kernel as the
// rows kernels finish such rows (NaN for a NaN or +inf at any lane and row, NaN or 0 / -inf for a
// column of only -inf), the other columns unharmed; longer columns are passed back to the rows
// form with nothing written. Temperatures off the vector path (T > 3.3e35, T < 4.7e-38,
// invalid) are always passed back.
TYPED_TEST(axis_kernel, special_columns) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t width = 21, ld = width + 3;
  const float inf = smax_test::infinity<float>;
  for (std::size_t n : {std::size_t(19), smax::kernels::axis_blocked_max_rows + 5}) {
    const bool finished_here = n <= smax::kernels::axis_blocked_max_rows;
    for (bool log : {false, true})
      for (bool zero_masked : {false, true}) {
        const unsigned flags = (log ? smax::kernels::flag_log : 0u) |
                               (zero_masked ? smax::kernels::flag_zero_masked_rows : 0u);
        auto check = [&](std::vector<float> const& x, const char* what, std::size_t j) {
          std::vector<float> y(x.size(), -7.0f);
          const bool done =
              TypeParam::table::forward_axis(x.data(), y.data(), n, ld, width, 1.0f, flags);
          ASSERT_EQ(done, finished_here) << what << " in column " << j << ", n " << n;
          if (!done) {
            for (float v : y) ASSERT_EQ(v, -7.0f) << what << ": written although passed back";
            return;
          }
          for (std::size_t c = 0; c < width; ++c) {
            const auto col = column_of(x, n, width, c), out = column_of(y, n, width, c);
            ASSERT_TRUE(
                smax_test::output_matches_reference(col, out.data(), log, 1.0f, zero_masked))
                << what << " in column " << j << ", column " << c << ", n " << n;
          }
        };
        for (std::size_t j = 0; j < width; j += j < 17 ? 1 : 3) {
          auto x = random_block(n, width, 10.0, 0.0, 4);
          x[((j * 7) % n) * ld + j] = smax_test::quiet_nan<float>;
          check(x, "NaN", j);
          x[((j * 7) % n) * ld + j] = inf;
          check(x, "+inf", j);
          for (std::size_t i = 0; i < n; ++i) x[i * ld + j] = -inf;
          check(x, "all masked", j);
          x[(n / 2) * ld + j] = smax_test::quiet_nan<float>;
          check(x, "NaN among masks", j);
        }
      }
    const auto x = random_block(n, width, 10.0, 0.0, 5);
    for (float temperature : {4e35f, 1e37f, 4e-38f, 1e-38f, 0.0f, -1.0f, inf,
                              smax_test::quiet_nan<float>}) {
      std::vector<float> y(x.size(), -7.0f);
      EXPECT_FALSE(run_kernel<TypeParam>(x, y, n, width, temperature, false)) << temperature;
      for (float v : y) ASSERT_EQ(v, -7.0f) << "T = " << temperature;
    }
  }
}
