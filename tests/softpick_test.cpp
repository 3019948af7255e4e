// softpick (smax/softpick.hpp) on every compiled instruction set, float and double, both
// algorithms: against the long-double reference (reference/softpick.hpp) on random, near-zero and
// adversarial rows at every length around the vector width, the edge cases of docs/edge_cases.md
// and docs/softpick.md, the invariants of docs/softpick.md, and the backward pass against finite
// differences.

#include <smax/reference/softpick.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;
using smax::kernels::softpick_algorithm;

template <class C>
class softpick_test : public ::testing::Test {};
TYPED_TEST_SUITE(softpick_test, all_configs, config_names);

template <class C>
using table_of = smax::kernels::softpick_table<typename C::arch>;

constexpr softpick_algorithm algorithms[] = {
    softpick_algorithm::three_pass, softpick_algorithm::online, softpick_algorithm::automatic};
inline const char* name_of(softpick_algorithm a) {
  return a == softpick_algorithm::three_pass ? "three_pass"
         : a == softpick_algorithm::online   ? "online"
                                             : "automatic";
}

// The bound softpick.hpp states: relative 1e-6 (float) / 1e-14 (double) for outputs >= the
// smallest normal number; outputs the reference makes exactly 0 (x <= 0, masked) must be 0.
template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

template <class C, class T>
void forward(softpick_algorithm a, const T* x, T* y, std::size_t n, double eps = 1e-8) {
  table_of<C>::forward(x, n, y, n, 1, n, eps, a);
}

template <class C, class T>
::testing::AssertionResult matches_reference(softpick_algorithm a, std::vector<T> const& x,
                                             double eps = 1e-8) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));  // one guard element past the end
  forward<C>(a, x.data(), y.data(), n, eps);
  if (y[n] != T(-7)) return ::testing::AssertionFailure() << "wrote past the end";
  const auto ref = smax::reference::softpick(x.data(), n, static_cast<long double>(eps));
  std::size_t failures = 0;
  ::testing::AssertionResult first = ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < n; ++i) {
    auto r = matches(y[i], ref[i], rtol<T>, std::numeric_limits<T>::min(), i);
    if (!r && failures++ == 0) first = r;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return first << " [" << failures << " of " << n << " outputs out of bound; " << name_of(a)
               << ", n = " << n << "]";
}

TYPED_TEST(softpick_test, every_length_around_the_vector_width) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (double offset : {0.0, 3.0}) {
      const auto x = random_row<T>(n, 20.0, offset, static_cast<unsigned>(n));
      for (auto a : algorithms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "offset " << offset;
    }
}

TYPED_TEST(softpick_test, large_rows_spreads_and_offsets) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1000), std::size_t(4099), std::size_t(65537), long_row(1000003)})
    for (double spread : {20.0, 200.0})
      // offsets: mixed signs, mostly negative, mostly positive, m near fast_max, the large form
      // (m > 80), and no positive entry (zeros)
      for (double offset : {0.0, -8.0, 8.0, 70.0, 1000.0, -1000.0}) {
        if (n > 5000 && offset != 0.0 && offset != 1000.0) continue;
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + spread));
        for (auto a : algorithms)
          EXPECT_TRUE((matches_reference<TypeParam>(a, x)))
              << "spread " << spread << ", offset " << offset;
      }
}

// The point of the expm1 form: |x| ~ 1e-6..1e-3, where e^(x-m) - e^-m cancels (~6e-4 relative
// error in float), must meet the same relative bound.
TYPED_TEST(softpick_test, near_zero_inputs) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(5), std::size_t(37), std::size_t(3001)})
    for (double top : {0.0, 1e-3, 0.5, 4.0, 30.0}) {
      std::mt19937_64 rng(n);
      std::uniform_real_distribution<double> e(-6.0, -3.0), s(-1.0, 1.0);
      std::vector<T> x(n);
      for (auto& v : x) v = static_cast<T>(std::copysign(std::pow(10.0, e(rng)), s(rng)));
      if (top > 0) x[n / 2] = static_cast<T>(top);
      for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "max " << top;
    }
  // near-zero inputs, where the code's form e^(x-m) - e^-m cancels
  const std::vector<T> cancel = {T(1e-4), T(2e-4), T(-1e-4), T(5e-5)};
  for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, cancel)));
}

// A masked entry (-inf) at every lane position: exactly 0, excluded from the sum. A finite very
// negative entry is not a mask.
TYPED_TEST(softpick_test, masked_entry_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 4 * TypeParam::width + 3;
  for (std::size_t i = 0; i < n; ++i) {
    auto x = random_row<T>(n, 10.0, 1.0, 7);
    x[i] = -infinity<T>;
    if (i + 1 < n) x[i + 1] = -infinity<T>;
    if (i + 2 < n) x[i + 2] = -std::numeric_limits<T>::max();
    for (auto a : algorithms)
      EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << "masked at " << i;
  }
  std::vector<T> big(100000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = i % 3 == 0 ? -infinity<T> : T(i % 7) - T(3);
  for (std::size_t i = 10000; i < 30000; ++i) big[i] = -infinity<T>;  // fully masked blocks
  for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, big)));
}

// E4 (all masked), E5 (+inf), E6 (NaN): a NaN row, at every lane position, also where the row
// has no positive entry (which would otherwise give zeros) and in long rows.
TYPED_TEST(softpick_test, all_masked_inf_and_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1), std::size_t(3), 4 * TypeParam::width + 5, std::size_t(5000)}) {
    const std::vector<T> masked(n, -infinity<T>);
    for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, masked)));
    const std::size_t step = n > 100 ? 997 : 1;
    for (std::size_t i = 0; i < n; i += step) {
      std::vector<std::vector<T>> rows;
      rows.push_back(masked);
      rows.back()[i] = quiet_nan<T>;
      for (double offset : {0.0, -20.0})
        for (T special : {infinity<T>, quiet_nan<T>}) {
          rows.push_back(random_row<T>(n, 10.0, offset, 3));
          rows.back()[i] = special;
        }
      for (auto const& x : rows)
        for (auto a : algorithms) {
          std::vector<T> y(n);
          forward<TypeParam>(a, x.data(), y.data(), n);
          for (T v : y)
            ASSERT_TRUE(std::isnan(v)) << "special at " << i << ", n = " << n << ", " << name_of(a);
        }
    }
  }
}

// The fixed adversarial inputs (docs/accuracy.md) and softpick's edge rules.
TYPED_TEST(softpick_test, spec_inputs) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max();
  const T sub = std::numeric_limits<T>::denorm_min();
  const std::vector<std::vector<T>> rows = {
      {1, 2, 3},
      {5, 5, 5, 5, 5},
      {2, 2, 1, 1, 0},
      {-3, -2, -1, -7},
      {1, -infinity<T>, 2},
      {1000, -1000, 0},
      {T(3e38), T(-3e38), T(1e38)},
      {big, -big, big, -infinity<T>},
      {-big, -big},
      {1, T(-1e9), -big, -infinity<T>},
      {sub, -sub, 0, T(1e-30)},
      {T(1e-30), T(2), sub},
      {T(4)},
      {T(-4)},
      {T(1e-3)},
      {0, 0, 0},
      {T(79.9), T(80.1), T(-3), T(0.5)},
      // K = 108: 2^(k-K) of the negative entries falls below the smallest normal (clamped to 0)
      {T(75), T(-30), T(1e-3), T(-100), T(-1e-3), T(60), T(-1e-30)},
      {T(75), T(-20), T(1e-3), T(-30), T(-1e-3), T(60), T(-1e-30)},
  };
  for (auto const& x : rows)
    for (auto a : algorithms)
      EXPECT_TRUE((matches_reference<TypeParam>(a, x))) << x.size() << " " << x[0];
  const double eps = 1e-3;  // visible in float
  for (auto a : algorithms) {
    std::vector<T> y(3);
    const std::vector<T> huge = {T(3e38), T(-3e38), T(1e38)};
    forward<TypeParam>(a, huge.data(), y.data(), 3, eps);
    EXPECT_NEAR(y[0], 1 / (1 + eps), 1e-7);  // [1 - eps, 0, 0]: 1/(1 + eps)
    EXPECT_EQ(y[1], T(0));
    EXPECT_EQ(y[2], T(0));
    // n = 1, x > 0: (e^x - 1)/(e^x - 1 + eps·e^x) ~ 1 - eps; x <= 0: 0.
    for (T v : {T(0.5), T(3), T(40), T(100)}) {
      T out;
      forward<TypeParam>(a, &v, &out, 1, eps);
      const double ex = std::expm1(static_cast<double>(v));
      EXPECT_NEAR(out, ex / (ex + eps * std::exp(static_cast<double>(v))), 2e-7) << v;
    }
    for (T v : {T(0), T(-0.5), -big}) {
      T out = 1;
      forward<TypeParam>(a, &v, &out, 1, eps);
      EXPECT_EQ(out, T(0));
    }
    // a finite very negative x adds |expm1(x)|·e^-m to the denominator; -inf adds nothing
    const std::vector<T> not_a_mask = {1, T(-1e9), -infinity<T>};
    forward<TypeParam>(a, not_a_mask.data(), y.data(), 3, 0.0);
    EXPECT_NEAR(y[0], std::expm1(1.0) / (std::expm1(1.0) + 1.0), 1e-6);
    EXPECT_EQ(y[2], T(0));
  }
}

// eps = 0 (allowed) with a maximum below the smallest normal number: S' = sum |a| is then
// below 1/T's largest finite value's reciprocal, and 1/S' overflowed (y = [inf, nan] for
// [1e-39, -1e-39], [inf] for [1e-39]). Rows of one register, several, and batches of four.
TYPED_TEST(softpick_test, subnormal_maximum_with_zero_eps) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T d = std::numeric_limits<T>::min() / T(12);  // 1e-39 (float), 1.9e-309 (double)
  for (std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(3), TypeParam::width + 1, 4 * TypeParam::width,
        4 * TypeParam::width + 3, std::size_t(200), std::size_t(5000)}) {
    std::vector<T> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = i % 2 ? -d : d * T(1 + i % 5);
    for (auto a : algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, x, 0.0))) << "n = " << n;
    // Four rows at once (the interleaved short-row kernel), ld > cols.
    const std::size_t ld = n + 3;
    std::vector<T> xs(4 * ld, T(0)), ys(4 * ld, T(-7));
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t i = 0; i < n; ++i) xs[r * ld + i] = r % 2 ? x[i] : T(2) * x[i];
    table_of<TypeParam>::forward(xs.data(), ld, ys.data(), ld, 4, n, 0.0,
                                 softpick_algorithm::automatic);
    for (std::size_t r = 0; r < 4; ++r) {
      const auto ref = smax::reference::softpick(xs.data() + r * ld, n, 0.0L);
      for (std::size_t i = 0; i < n; ++i)
        EXPECT_TRUE(matches(ys[r * ld + i], ref[i], rtol<T>, std::numeric_limits<T>::min(), i))
            << "row " << r;
    }
  }
  const std::vector<T> pair = {d, -d}, one = {d};
  std::vector<T> y(2);
  forward<TypeParam>(softpick_algorithm::automatic, pair.data(), y.data(), 2, 0.0);
  EXPECT_EQ(y[0], T(0.5));
  EXPECT_EQ(y[1], T(0));
  forward<TypeParam>(softpick_algorithm::automatic, one.data(), y.data(), 1, 0.0);
  EXPECT_EQ(y[0], T(1));
}

TYPED_TEST(softpick_test, eps_is_configurable) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double eps : {0.0, 1e-6, 0.1, 5.0})
    for (std::size_t n : {std::size_t(3), std::size_t(100), std::size_t(3000)})
      for (double offset : {0.0, 1e-3 - 10.0, 100.0}) {  // offset -10 + 1e-3: m ~ 1e-3, S small
        auto x = random_row<T>(n, 20.0, offset, 5);
        for (auto a : algorithms)
          EXPECT_TRUE((matches_reference<TypeParam>(a, x, eps))) << "eps " << eps;
      }
}

// Invariants (docs/softpick.md): y >= 0, y > 0 iff x > 0, sum < 1, not shift invariant.
TYPED_TEST(softpick_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 1001;
  auto x = random_row<T>(n, 16.0, 0.0, 5);
  for (auto& v : x) v = std::round(v * T(1024)) / T(1024);  // on a grid, so x + 1 is exact
  std::vector<T> y(n), y_shifted(n), x_shifted(n);
  for (std::size_t i = 0; i < n; ++i) x_shifted[i] = x[i] + T(1);
  for (auto a : algorithms) {
    forward<TypeParam>(a, x.data(), y.data(), n);
    forward<TypeParam>(a, x_shifted.data(), y_shifted.data(), n);
    long double sum = 0;
    std::size_t shifted_differs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += y[i];
      EXPECT_GE(y[i], T(0));
      EXPECT_EQ(y[i] > T(0), x[i] > T(0)) << i;
      shifted_differs += std::fabs(y[i] - y_shifted[i]) > 1e-3 * y[i];
    }
    EXPECT_LT(static_cast<double>(sum), 1.0);  // finite negative entries exist
    EXPECT_GT(shifted_differs, n / 4) << "not shift invariant";
    // monotone in x on x > 0
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i + 1; j < i + 20 && j < n; ++j)
        if (x[i] > x[j] && x[j] > 0) {
          EXPECT_GE(y[i], y[j]);
        }
  }
  // y_max -> 1 as x_max grows, and sum y < 1 strictly whenever eps > 0.
  for (T top : {T(5), T(20), T(60)}) {
    const std::vector<T> r = {top, 1, T(0.5)};
    std::vector<T> out(3);
    forward<TypeParam>(softpick_algorithm::automatic, r.data(), out.data(), 3);
    EXPECT_GT(out[0], T(1) - T(3) * std::exp(T(1) - top) - T(1e-6));
  }
}

TYPED_TEST(softpick_test, three_pass_and_online_agree_and_rescale) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  // The running maximum grows block after block (K changes: the sum is rescaled), and one row
  // reaches the large form (m > 80) only in its last block.
  const std::size_t n = 50000;
  std::vector<T> rising(n), late_large(n), late_positive(n);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    rising[i] = static_cast<T>(60.0 * i / n + 4 * u(rng));
    late_large[i] = static_cast<T>(i + 10 == n ? 95.0 : 10 * u(rng));
    // no positive entry in the first blocks (K = 0 there), then K jumps to round(12·log2 e)
    late_positive[i] = static_cast<T>(i < n / 2 ? -std::fabs(5 * u(rng)) : 12 * u(rng));
  }
  for (auto a : algorithms) {
    EXPECT_TRUE((matches_reference<TypeParam>(a, rising))) << name_of(a);
    EXPECT_TRUE((matches_reference<TypeParam>(a, late_large))) << name_of(a);
    EXPECT_TRUE((matches_reference<TypeParam>(a, late_positive))) << name_of(a);
  }
}

TYPED_TEST(softpick_test, rows_with_leading_dimension_and_in_place) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t cols : {std::size_t(37), std::size_t(300)}) {
    const std::size_t rows = 5, ld = cols + 3;
    auto x = random_row<T>(rows * ld, 20.0, 0.0, 21);
    std::vector<T> y(rows * ld, T(-7));
    table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols, 1e-8,
                                 softpick_algorithm::automatic);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols), expected(cols);
      forward<TypeParam>(softpick_algorithm::automatic, row.data(), expected.data(), cols);
      for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(y[r * ld + c], expected[c]);
      for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(y[r * ld + c], T(-7)) << "padding written";
    }
  }
  for (std::size_t n : {std::size_t(7), std::size_t(1000), std::size_t(300000)})
    for (auto a : algorithms) {  // in place gives the same bits as out of place
      auto x = random_row<T>(n, 20.0, 0.0, 22);
      x[n / 3] = -infinity<T>;
      auto inplace = x;
      std::vector<T> out(n);
      forward<TypeParam>(a, x.data(), out.data(), n);
      forward<TypeParam>(a, inplace.data(), inplace.data(), n);
      EXPECT_EQ(inplace, out) << name_of(a);
    }
}

// Batches of short rows run four at a time through an interleaved kernel: every row must equal
// the single-row result bit for bit, special rows (NaN, all masked, +inf, m <= 0, large) included.
TYPED_TEST(softpick_test, short_row_batches_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 15;
  for (std::size_t cols : {std::size_t(1), TypeParam::width - 1, TypeParam::width,
                           3 * TypeParam::width + 1, 4 * TypeParam::width}) {
    auto x = random_row<T>(rows * cols, 20.0, 0.0, static_cast<unsigned>(cols));
    for (std::size_t c = 0; c < cols; ++c) x[1 * cols + c] = -infinity<T>;  // all masked
    x[2 * cols + cols / 2] = quiet_nan<T>;
    x[6 * cols] = infinity<T>;
    for (std::size_t c = 0; c < cols; ++c) x[9 * cols + c] = -std::fabs(x[9 * cols + c]);  // m <= 0
    x[12 * cols] = T(90);         // large form
    x[13 * cols] = -infinity<T>;  // one masked entry
    std::vector<T> y(rows * cols);
    table_of<TypeParam>::forward(x.data(), cols, y.data(), cols, rows, cols, 1e-8,
                                 softpick_algorithm::automatic);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> single(cols);
      forward<TypeParam>(softpick_algorithm::three_pass, x.data() + r * cols, single.data(), cols);
      for (std::size_t c = 0; c < cols; ++c) {
        const T got = y[r * cols + c];
        if (std::isnan(single[c]))
          EXPECT_TRUE(std::isnan(got)) << "row " << r;
        else
          EXPECT_EQ(got, single[c]) << "row " << r << ", col " << c << ", cols " << cols;
      }
      EXPECT_TRUE((matches_reference<TypeParam>(
          softpick_algorithm::three_pass,
          std::vector<T>(x.begin() + r * cols, x.begin() + (r + 1) * cols))));
    }
  }
}

// Rows with a leading dimension (ld > cols): the same gradients as row by row.
TYPED_TEST(softpick_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)})
    for (double eps : {1e-8, 0.1}) {
      const std::size_t ld = cols + 7;
      const auto x = random_row<T>(rows * ld, 6.0, 1.0, static_cast<unsigned>(cols));
      const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
      std::vector<T> y(rows * ld);
      table_of<TypeParam>::forward(x.data(), ld, y.data(), ld, rows, cols, eps,
                                   softpick_algorithm::automatic);
      EXPECT_TRUE(rows_equal_single_rows<T>(
          rows, cols, ld,
          [&](T* dx) {
            table_of<TypeParam>::backward(x.data(), ld, y.data(), ld, dy.data(), ld, dx, ld, rows,
                                          cols, eps);
          },
          [&](std::size_t r, T* dx) {
            table_of<TypeParam>::backward(x.data() + r * ld, cols, y.data() + r * ld, cols,
                                          dy.data() + r * ld, cols, dx, cols, 1, cols, eps);
          }))
          << "eps " << eps;
    }
}

// Backward: against central finite differences of the long-double reference (small rows, no
// entry within the step of a kink at 0 or of a tie for the maximum), and against the reference
// VJP on long rows. eps = 0.1 makes the eps·e^m term through m visible.
TYPED_TEST(softpick_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double tol = sizeof(T) == 4 ? 2e-6 : 1e-11;
  for (double eps : {1e-8, 0.1})
    for (double offset : {0.0, 2.0, 90.0})
      for (std::size_t n :
           {std::size_t(1), std::size_t(7), 2 * TypeParam::width + 1, std::size_t(40)}) {
        auto x = random_row<T>(n, 6.0, offset, static_cast<unsigned>(n));
        for (auto& v : x)
          if (std::fabs(v) < T(0.01)) v = T(0.25);
        if (n > 3) x[2] = -infinity<T>;
        if (n > 4) x[3] = T(-1e6);  // not a mask
        if (n == 1) x[0] = std::fabs(x[0]) + T(0.5);
        const auto dy = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
        std::vector<T> y(n), dx(n);
        forward<TypeParam>(softpick_algorithm::automatic, x.data(), y.data(), n, eps);
        table_of<TypeParam>::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n,
                                      eps);
        for (std::size_t i = 0; i < n; ++i) {
          if (x[i] == -infinity<T>) {
            EXPECT_EQ(dx[i], T(0));
            continue;
          }
          // L(x) = <dy, softpick(x)>; dL/dx_i by central differences in long double.
          const long double h = 0x1p-21L;  // ~ (long double epsilon)^(1/3): truncation ~ rounding
          std::vector<long double> xp(x.begin(), x.end()), xm(x.begin(), x.end());
          xp[i] += h;
          xm[i] -= h;
          const auto fp = smax::reference::softpick(xp.data(), n, static_cast<long double>(eps));
          const auto fm = smax::reference::softpick(xm.data(), n, static_cast<long double>(eps));
          long double d = 0;
          for (std::size_t j = 0; j < n; ++j) d += dy[j] * (fp[j] - fm[j]) / (2 * h);
          EXPECT_NEAR(dx[i], static_cast<double>(d), tol * (1 + std::fabs(static_cast<double>(d))))
              << "i = " << i << ", n = " << n << ", eps = " << eps << ", offset " << offset;
        }
      }
  // Rows with no positive entry: dx = 0. NaN rows: NaN.
  for (std::size_t n : {std::size_t(3), std::size_t(100)}) {
    auto x = random_row<T>(n, 6.0, -10.0, 4);
    const auto dy = random_row<T>(n, 2.0, 0.0, 5);
    std::vector<T> y(n), dx(n, T(7));
    forward<TypeParam>(softpick_algorithm::automatic, x.data(), y.data(), n);
    table_of<TypeParam>::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, 1e-8);
    for (T v : dx) EXPECT_EQ(v, T(0));
    x[1] = quiet_nan<T>;
    table_of<TypeParam>::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, 1e-8);
    for (T v : dx) EXPECT_TRUE(std::isnan(v));
    const std::vector<T> masked(n, -infinity<T>);
    table_of<TypeParam>::backward(masked.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n,
                                  1e-8);
    for (T v : dx) EXPECT_TRUE(std::isnan(v));
  }
  // Long rows against the reference VJP: the error is bounded relative to the magnitudes of the
  // two terms, e^(x-m)/S'·(|dy| + |c|), with c's error that of the blocked dot product of y
  // (itself within rtol) and dy.
  for (double offset : {0.0, 5.0}) {
    const std::size_t n = 100003;
    auto x = random_row<T>(n, 20.0, offset, 8);
    x[77] = -infinity<T>;
    const auto dy = random_row<T>(n, 2.0, 0.0, 9);
    std::vector<T> y(n), dx(n);
    forward<TypeParam>(softpick_algorithm::automatic, x.data(), y.data(), n);
    table_of<TypeParam>::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, 1e-8);
    const std::vector<long double> dyl(dy.begin(), dy.end());
    const auto ref = smax::reference::softpick_backward(x.data(), dyl, n);
    const auto yl = smax::reference::softpick(x.data(), n);
    long double m = -HUGE_VALL, s = 1e-8L, c = 0, c_abs = 0;
    for (T v : x) m = v > m ? v : m;
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == -infinity<T>) continue;
      s += std::fabs(x[i] > 0 ? std::exp(x[i] - m) * -std::expm1(-static_cast<long double>(x[i]))
                              : std::expm1(static_cast<long double>(x[i])) * std::exp(-m));
      c += dyl[i] * yl[i];
      c_abs += std::fabs(dyl[i] * yl[i]);
    }
    const double bound_rel = 8 * rtol<T>;
    for (std::size_t i = 0; i < n; ++i) {
      const long double scale = std::exp(x[i] - m) / s * (std::fabs(dyl[i]) + std::fabs(c) + c_abs);
      ASSERT_NEAR(dx[i], static_cast<double>(ref[i]),
                  bound_rel * static_cast<double>(scale) + 1e-30)
          << "i = " << i << ", offset " << offset;
    }
  }
}

// The public, header-only API: float and double, rows, in place, n = 0, backward.
TEST(softpick_api, overloads) {
  std::vector<float> x = {1, 2, 3, -HUGE_VALF, -1}, y(5);
  smax::softpick(x.data(), y.data(), x.size());
  const auto ref = smax::reference::softpick(x.data(), x.size());
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(y[i], static_cast<float>(ref[i]), 1e-7f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 0.0f);
  std::vector<double> xd = {1, 2, 3}, yd(3);
  smax::softpick(xd.data(), yd.data(), 3, {0.5});
  const auto refd = smax::reference::softpick(xd.data(), 3, 0.5L);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(yd[i], static_cast<double>(refd[i]), 1e-15);
  auto inplace = x;
  smax::softpick(inplace.data(), inplace.data(), 5);
  EXPECT_EQ(inplace, y);
  smax::softpick(static_cast<const float*>(nullptr), static_cast<float*>(nullptr), 0);  // E1
  std::vector<float> m = {1, 0, 9, -1, -2, 9}, my(6, 5.0f);
  smax::softpick_rows(m.data(), my.data(), 2, 2, 3);
  EXPECT_NEAR(my[0], std::expm1(1.0) / (std::expm1(1.0) + 1e-8), 1e-7);
  EXPECT_EQ(my[1], 0.0f);
  EXPECT_EQ(my[2], 5.0f);  // padding untouched
  EXPECT_EQ(my[3], 0.0f);  // row 1 is [-1, -2]: zeros
  EXPECT_EQ(my[4], 0.0f);
  std::vector<float> dy = {1, 0, 0, 0, 0}, dx(5);
  smax::softpick_backward(x.data(), y.data(), dy.data(), dx.data(), 5);
  const std::vector<long double> dyl(dy.begin(), dy.end());
  const auto dref = smax::reference::softpick_backward(x.data(), dyl, 5);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_NEAR(dx[i], static_cast<float>(dref[i]), 1e-6f);
  std::vector<double> dyd = {0, 1, 0}, dxd(3);
  smax::softpick_backward_rows(xd.data(), yd.data(), dyd.data(), dxd.data(), 1, 3, 3, {0.5});
  const auto drefd = smax::reference::softpick_backward(
      xd.data(), std::vector<long double>(dyd.begin(), dyd.end()), 3, 0.5L);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_NEAR(dxd[i], static_cast<double>(drefd[i]), 1e-15);
}

}  // namespace
