// The any-axis forms (api/axis.hpp) of every family in <smax/families.hpp>, header-only and in
// smax::runtime, float and double: each column y[o, :, j] of name_axis over an outer × n × inner
// tensor has the bits of the rows form on that column (so every bound, edge rule and option
// carries over): lengths and widths around the tile width (16 floats, 8 doubles), columns too
// long for a 16-column tile, NaN, +inf and all-masked columns, zero_masked_rows, in place, on an
// executor (tasks reversed, on two threads), and the tile buffer's allocation failure (NaN).

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
          ASSERT_TRUE(same_bits(y, want)) << what << ": outer " << outer << ", n " << n
                                          << ", inner " << inner << ", zero_masked_rows "
                                          << zero_masked;
          EXPECT_EQ(got_reported, want_reported) << what;
          auto in_place = x;
          call(in_place, in_place, outer, n, inner);
          ASSERT_TRUE(same_bits(in_place, want)) << what << " in place: n " << n << ", inner " << inner;
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
    EXPECT_TRUE(same_bits(y, want)) << what << ": long columns";
  }
  // On an executor: several tasks of tiles (300 entries × 16 or 8 columns a tile, 128 KiB a task).
  {
    const std::size_t outer = 40, n = 300, inner = 2 * lane + 3;
    const auto x = tensor<T>(outer, n, inner, 9);
    std::size_t want_reported = 0;
    const auto want = by_columns<Family, Dispatch>(x, outer, n, inner, opts, &want_reported);
    std::vector<T> y(x.size(), T(-7));
    EXPECT_EQ(call(x, y, outer, n, inner, reverse_two_threads{}), want_reported) << what;
    EXPECT_TRUE(same_bits(y, want)) << what << ": on an executor";
  }
  // The tile buffer cannot be allocated: NaN columns (inner = 1 is the rows form, no tiles).
  {
    const auto x = tensor<T>(2, 37, 5, 11);
    std::vector<T> y(x.size(), T(-7));
    smax::primitives::scratch_limit<smax::api::axis_tiles> = 0;
    const std::size_t reported = call(x, y, 2, 37, 5);
    smax::primitives::scratch_limit<smax::api::axis_tiles> = ~std::size_t(0);
    for (T v : y) ASSERT_TRUE(std::isnan(v)) << what << ": allocation failure";
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
