// MultiMax (smax/multimax.hpp, docs/multimax.md) on every compiled instruction set, float and
// double: against the long-double reference (reference/multimax.hpp) on random and adversarial rows
// at every length around the vector width and unroll factor, the bad-input contract
// (docs/edge_cases.md; masking after the modulation), the invariants of docs/multimax.md, zero
// parameters equal to softmax bit for bit, and the backward pass with all eight parameter gradients
// against central finite differences of the reference.

#include <smax/multimax.hpp>
#include <smax/reference/multimax.hpp>
#include <smax/smax.hpp>

#include <array>
#include <cfloat>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class multimax_test : public ::testing::Test {};
TYPED_TEST_SUITE(multimax_test, all_configs, config_names);

// A parameter set, given in double (as multimax_options holds it).
struct params {
  std::array<double, 4> t, r;
};

const params zero_params{{0, 0, 0, 0}, {0, 0, 0, 0}};
// The benchmark's set: mild, monotone (the sufficient condition for a nondecreasing σ holds).
const params mild{{0.1, 0.1, -0.01, 0.01}, {-1, 1, -2, 2}};
// The parameters ts = (.5, .3, .1, .05) of docs/multimax.md: t2 > 0 boosts very negative scores.
const params spec_vector{{0.5, 0.3, 0.1, 0.05}, {0, 0, 0, 0}};
// Not monotone: t0 > 1 reverses the order below r0, t3 < 0 bends the top down.
const params reversing{{1.75, -0.4, 0.03, -0.02}, {-0.5, 0.25, -3, 3}};
const params all_sets[] = {zero_params, mild, spec_vector, reversing};

bool all_zero_t(params const& p) {
  return p.t == std::array<double, 4>{0, 0, 0, 0};
}

// The parameters as the kernel for T uses them (rounded to T), and the reference's copy of those.
template <class T>
smax::kernels::multimax_parameters<T> kernel_params(params const& p) {
  smax::kernels::multimax_parameters<T> k{};
  for (int i = 0; i < 4; ++i) {
    k.t[i] = static_cast<T>(p.t[i]);
    k.r[i] = static_cast<T>(p.r[i]);
  }
  return k;
}
template <class T>
smax::reference::multimax_parameters reference_params(params const& p) {
  smax::reference::multimax_parameters q;
  for (int i = 0; i < 4; ++i) {
    q.t[i] = static_cast<T>(p.t[i]);
    q.r[i] = static_cast<T>(p.r[i]);
  }
  return q;
}

template <class C, class T>
void forward(params const& p, const T* x, T* y, std::size_t n) {
  smax::kernels::multimax_table<typename C::arch>::forward(x, n, y, n, 1, n, kernel_params<T>(p));
}

// W(x) = (1 + |t0| + |t1|)·(|x| + R) + (|t2| + |t3|)·(|x| + R)², R = max|r_k|: what the rounding
// of σ in T is bounded by (16u·W, multimax.hpp).
template <class T>
long double magnitude(T x, smax::reference::multimax_parameters const& q) {
  long double r = 0;
  for (auto v : q.r) r = std::fmax(r, std::fabs(v));
  const long double w = std::fabs(static_cast<long double>(x)) + r;
  return (1 + std::fabs(q.t[0]) + std::fabs(q.t[1])) * w +
         (std::fabs(q.t[2]) + std::fabs(q.t[3])) * w * w;
}

// S(x) = 1 + |t0|·[x < r0] + |t1|·[x > r1] + 2|t2|·relu(r2 - x) + 2|t3|·relu(x - r3): the
// magnitude of the terms of σ'(x), which the dx bound of multimax.hpp scales with.
inline long double slope_magnitude(long double x, smax::reference::multimax_parameters const& q) {
  using smax::reference::multimax_relu;
  return 1 + std::fabs(q.t[0]) * (x < q.r[0]) + std::fabs(q.t[1]) * (x > q.r[1]) +
         2 * std::fabs(q.t[2]) * multimax_relu(q.r[2] - x) +
         2 * std::fabs(q.t[3]) * multimax_relu(x - q.r[3]);
}

// |what gz multiplies| at x in the sum for parameter k (0-3: t0..t3, 4-7: r0..r3), |t| included.
inline long double gradient_factor(int k, long double x,
                                   smax::reference::multimax_parameters const& q) {
  using smax::reference::multimax_relu;
  switch (k) {
    case 0:
      return multimax_relu(q.r[0] - x);
    case 1:
      return multimax_relu(x - q.r[1]);
    case 2:
      return multimax_relu(q.r[2] - x) * multimax_relu(q.r[2] - x);
    case 3:
      return multimax_relu(x - q.r[3]) * multimax_relu(x - q.r[3]);
    case 4:
      return std::fabs(q.t[0]) * (x < q.r[0]);
    case 5:
      return std::fabs(q.t[1]) * (x > q.r[1]);
    case 6:
      return 2 * std::fabs(q.t[2]) * multimax_relu(q.r[2] - x);
    default:
      return 2 * std::fabs(q.t[3]) * multimax_relu(x - q.r[3]);
  }
}

// The backward bounds of multimax.hpp, for y, dy given to the kernel (D = Σ y_j·|dy_j|):
// dx_i within 16ε·y_i·(|dy_i| + D)·S(x_i); parameter gradient k within 24ε·Σ y_i·(|dy_i| + D)·factor_k(x_i).
template <class T>
struct backward_bounds {
  std::vector<long double> dx;
  std::array<long double, 8> params{};
};
template <class T>
backward_bounds<T> backward_bound(std::vector<T> const& x, std::vector<T> const& y,
                                  std::vector<T> const& dy,
                                  smax::reference::multimax_parameters const& q) {
  const long double eps = std::numeric_limits<T>::epsilon();
  const std::size_t n = x.size();
  long double d = 0;
  for (std::size_t i = 0; i < n; ++i)
    d += static_cast<long double>(y[i]) * std::fabs(static_cast<long double>(dy[i]));
  backward_bounds<T> b;
  b.dx.assign(n, 0.0L);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -infinity<T>) continue;
    const long double w = y[i] * (std::fabs(static_cast<long double>(dy[i])) + d);
    b.dx[i] = 16 * eps * w * slope_magnitude(x[i], q);
    for (int k = 0; k < 8; ++k) b.params[k] += 24 * eps * w * gradient_factor(k, x[i], q);
  }
  return b;
}

// The forward bound of multimax.hpp: relative 1e-6 + 2^-20·(W_i + max_j W_j) (float), 1e-14 +
// 2^-49·(W_i + max_j W_j) (double), the W terms absent when every t is 0; outputs below the
// smallest normal may be flushed.
template <class C, class T>
::testing::AssertionResult matches_reference(params const& p, std::vector<T> const& x) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));  // one guard element past the end
  forward<C>(p, x.data(), y.data(), n);
  if (y[n] != T(-7)) return ::testing::AssertionFailure() << "wrote past the end";
  const auto q = reference_params<T>(p);
  const auto ref = smax::reference::multimax(x.data(), n, q);
  const double sigma_eps = all_zero_t(p) ? 0.0 : (sizeof(T) == 4 ? 0x1p-20 : 0x1p-49);
  long double max_magnitude = 0;
  for (T v : x)
    if (std::isfinite(v)) max_magnitude = std::fmax(max_magnitude, magnitude(v, q));
  std::size_t failures = 0;
  ::testing::AssertionResult first = ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < n; ++i) {
    const double m_i =
        std::isfinite(x[i]) ? static_cast<double>(magnitude(x[i], q) + max_magnitude) : 0.0;
    const auto r =
        matches(y[i], ref[i], softmax_rtol<T> + sigma_eps * m_i, std::numeric_limits<T>::min(), i);
    if (!r && failures++ == 0) first = r;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return first << " [" << failures << " of " << n << " outputs out of bound; n = " << n << ", t = ("
               << p.t[0] << ", " << p.t[1] << ", " << p.t[2] << ", " << p.t[3] << ")]";
}

TYPED_TEST(multimax_test, every_length_around_the_vector_width) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n) {
    const auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(n));
    for (auto const& p : all_sets) EXPECT_TRUE((matches_reference<TypeParam>(p, x)));
  }
}

TYPED_TEST(multimax_test, large_rows_spreads_and_offsets) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1000), std::size_t(4099), std::size_t(65537), long_row(1000003)})
    for (double spread : {20.0, 200.0})
      for (double offset : {0.0, 1000.0, -1000.0}) {
        if (n > 5000 && offset != 0.0) continue;
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + spread));
        for (std::size_t k = 0; k < 4; ++k) {
          if (n > 5000 && k != 1 && k != 3)
            continue;  // long rows: mild and reversing only (the cost is the reference)
          EXPECT_TRUE((matches_reference<TypeParam>(all_sets[k], x)))
              << "spread " << spread << ", offset " << offset;
        }
      }
}

// Long rows whose modulation is large at ordinary values: the nondecreasing form's rounding
// margin (2^-19·W(x), W ~ t3·x²) once lowered every exponential by e^-margin, and from a margin
// of ~88 (float) the row's sum underflowed to 0 and the row came out NaN: 100 copies of -6680
// with t3 = 1.5 (σ(x) = x there), or of -3.5e7 with t0 = 0.3. A constant row must give 1/n;
// a row below r3 (σ(x) = x exactly) must give softmax(x).
TYPED_TEST(multimax_test, long_rows_with_a_large_modulation) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool is_float = sizeof(T) == 4;
  const params square{{0, 0, 0, 1.5}, {0, 0, 0, 10}};
  const params linear{{0.3, 0, 0, 0}, {0, 0, 0, 0}};
  struct row_case {
    params p;
    T value;
  };
  const row_case cases[] = {
      {square, is_float ? T(-5472) : T(-1.4e7)}, {square, is_float ? T(-6680) : T(-4e8)},
      {square, is_float ? T(-3e4) : T(-1e9)},    {linear, is_float ? T(-3.5e7) : T(-1.5e17)},
      {linear, is_float ? T(-1e9) : T(-1e18)},   {square, T(-2)}};
  for (std::size_t n :
       {std::size_t(17), std::size_t(33), std::size_t(65), std::size_t(100), std::size_t(1000)}) {
    for (auto const& c : cases) {
      const std::vector<T> x(n, c.value);
      std::vector<T> y(n);
      forward<TypeParam>(c.p, x.data(), y.data(), n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_TRUE(matches(y[i], 1.0L / n, softmax_rtol<T>, 0.0, i))
            << "x = " << c.value << ", n = " << n;
    }
    // Below r3 the modulation is exactly 0: the result is softmax's, within softmax's bound.
    const auto x = random_row<T>(n, 20.0, is_float ? -6680.0 : -4e8, static_cast<unsigned>(n));
    std::vector<T> y(n);
    forward<TypeParam>(square, x.data(), y.data(), n);
    const auto ref = smax::reference::softmax(x.data(), n, false);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(matches(y[i], ref[i], softmax_rtol<T>, std::numeric_limits<T>::min(), i))
          << "n = " << n;
  }
}

// Rows with a leading dimension (ld > cols): dx the same as row by row, the parameter gradients
// the sum of the rows'.
TYPED_TEST(multimax_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::multimax_table<typename TypeParam::arch>;
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)})
    for (auto const& p : all_sets) {
      const std::size_t ld = cols + 7;
      const auto x = random_row<T>(rows * ld, 8.0, 0.0, static_cast<unsigned>(cols));
      const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
      const auto k = kernel_params<T>(p);
      std::vector<T> y(rows * ld);
      table::forward(x.data(), ld, y.data(), ld, rows, cols, k);
      double batched[8] = {}, single[8] = {};
      EXPECT_TRUE(rows_equal_single_rows<T>(
          rows, cols, ld,
          [&](T* dx) {
            table::backward(x.data(), ld, y.data(), ld, dy.data(), ld, dx, ld, rows, cols, k,
                            batched);
          },
          [&](std::size_t r, T* dx) {
            double g[8];  // overwritten by each call: summed here
            table::backward(x.data() + r * ld, cols, y.data() + r * ld, cols, dy.data() + r * ld,
                            cols, dx, cols, 1, cols, k, g);
            for (int j = 0; j < 8; ++j) single[j] += g[j];
          }));
      for (int j = 0; j < 8; ++j)
        EXPECT_NEAR(batched[j], single[j], 1e-12 * (1 + std::fabs(single[j]))) << j;
    }
}

// Zero parameters give softmax. The arithmetic is the same (σ(x) = x exactly), so
// the result is the three-pass softmax's bit for bit, masked entries and special rows included.
TYPED_TEST(multimax_test, zero_parameters_are_softmax_bit_for_bit) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  auto same = [](std::vector<T> const& x) {
    const std::size_t n = x.size();
    std::vector<T> y(n), s(n);
    forward<TypeParam>(zero_params, x.data(), y.data(), n);
    TypeParam::table::forward(x.data(), n, s.data(), n, 1, n, T(1), 0u, algorithm_id::three_pass);
    for (std::size_t i = 0; i < n; ++i)
      if (!(y[i] == s[i] || (std::isnan(y[i]) && std::isnan(s[i]))))
        return ::testing::AssertionFailure()
               << "at " << i << " of " << n << ": " << y[i] << " vs " << s[i];
    return ::testing::AssertionSuccess();
  };
  for (std::size_t n = 1; n <= 16 * TypeParam::width + 1; ++n) {
    auto x = random_row<T>(n, 30.0, 5.0, static_cast<unsigned>(n + 100));
    EXPECT_TRUE(same(x));
    x[n / 2] = -infinity<T>;
    EXPECT_TRUE(same(x));
  }
  for (std::size_t n : {std::size_t(4099), long_row(300007)})
    for (double offset : {0.0, 1000.0, -1000.0})
      EXPECT_TRUE(same(random_row<T>(n, 200.0, offset, static_cast<unsigned>(n))));
  const T big = std::numeric_limits<T>::max();
  EXPECT_TRUE(same({T(3e38), T(-3e38), T(1e38)}));
  EXPECT_TRUE(same({big, -big, big, -infinity<T>}));
  EXPECT_TRUE(same({1000, -1000, 0}));
}

// Masking happens after the modulation: a -inf entry is exactly 0 and takes no part in the
// reductions, whatever σ(-inf) would be (NaN or ±inf for these parameters), at every lane.
TYPED_TEST(multimax_test, masked_entry_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {3 * TypeParam::width + 3, 4 * TypeParam::width + 3}) {  // short and long rows
    for (std::size_t i = 0; i < n; ++i) {
      auto x = random_row<T>(n, 10.0, 0.0, 7);
      x[i] = -infinity<T>;
      if (i + 1 < n) x[i + 1] = -infinity<T>;
      for (auto const& p : all_sets) {
        EXPECT_TRUE((matches_reference<TypeParam>(p, x))) << "masked at " << i;
        std::vector<T> y(n);
        forward<TypeParam>(p, x.data(), y.data(), n);
        EXPECT_EQ(y[i], T(0));
      }
    }
  }
}

// E4: all masked gives NaN. E5/E6: +inf or NaN anywhere gives a NaN row, at every lane position
// (also a NaN among masked entries, where the maximum cannot tell).
TYPED_TEST(multimax_test, all_masked_inf_and_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  auto all_nan = [](std::vector<T> const& y) {
    for (T v : y)
      if (!std::isnan(v)) return false;
    return true;
  };
  for (std::size_t n : {std::size_t(1), std::size_t(3), 4 * TypeParam::width + 5})
    for (auto const& p : all_sets) {
      const std::vector<T> masked(n, -infinity<T>);
      std::vector<T> y(n);
      forward<TypeParam>(p, masked.data(), y.data(), n);
      EXPECT_TRUE(all_nan(y)) << "all masked, n = " << n;
      for (std::size_t i = 0; i < n; ++i) {
        auto x = masked;
        x[i] = quiet_nan<T>;
        forward<TypeParam>(p, x.data(), y.data(), n);
        EXPECT_TRUE(all_nan(y)) << "NaN among masked at " << i;
      }
      for (T special : {infinity<T>, quiet_nan<T>})
        for (std::size_t i = 0; i < n; ++i) {
          auto x = random_row<T>(n, 10.0, 0.0, 3);
          x[i] = special;
          forward<TypeParam>(p, x.data(), y.data(), n);
          EXPECT_TRUE(all_nan(y)) << special << " at " << i << ", n = " << n;
        }
    }
  // Parameters that are not finite (a precondition violation): a NaN row.
  std::vector<T> x = {1, 2, 3}, y(3);
  for (double bad : {HUGE_VAL, std::nan("")}) {
    params p = mild;
    p.r[2] = bad;
    forward<TypeParam>(p, x.data(), y.data(), 3);
    EXPECT_TRUE(all_nan(y));
  }
}

// The fixed adversarial inputs (docs/accuracy.md) for every parameter set, and the exact results
// where they are known.
TYPED_TEST(multimax_test, spec_inputs) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T sub = std::numeric_limits<T>::denorm_min();
  const std::vector<std::vector<T>> rows = {
      {1, 2, 3},
      {5, 5, 5, 5, 5},
      {2, 2, 1, 1, 0},
      {-3, -2, -1, -7},
      {1000, -1000, 0},
      {sub, -sub, 0, T(1e-30)},
      {T(4)},
      {T(-4)},
      {-5, -6, T(-7.5)},
      {-1, 1, -2, 2, T(-0.5), T(0.25)},
  };
  for (auto const& x : rows)
    for (auto const& p : all_sets) EXPECT_TRUE((matches_reference<TypeParam>(p, x)));
  std::vector<T> y(3);
  // With ts = (.5, .3, .1, .05), [1000, -1000, 0] -> z ≈ [51300, 99500, 0]: y = [0, 1, 0].
  const std::vector<T> wide = {1000, -1000, 0};
  forward<TypeParam>(spec_vector, wide.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<T>{0, 1, 0}));
  // ... and [-5, -6, -7.5] puts most of the mass on -7.5 (z = [0, 0.6, 1.875]).
  const std::vector<T> negative = {-5, -6, T(-7.5)};
  forward<TypeParam>(spec_vector, negative.data(), y.data(), 3);
  EXPECT_GT(y[2], T(0.6));
  EXPECT_GT(y[1], y[0]);
  // E7: huge finite values are exact while σ stays finite.
  const std::vector<T> huge = {T(3e38), T(-3e38), T(1e38)};
  forward<TypeParam>(zero_params, huge.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<T>{1, 0, 0}));
  const params halving{{0.5, -0.5, 0, 0}, {0, 0, 0, 0}};  // σ(x) = x/2 for x < 0 and x > 0
  forward<TypeParam>(halving, huge.data(), y.data(), 3);
  EXPECT_EQ(y, (std::vector<T>{1, 0, 0}));
  EXPECT_TRUE((matches_reference<TypeParam>(halving, huge)));
  // n = 1: [1] for any finite x and parameters.
  for (auto const& p : all_sets)
    for (T v : {T(-50), T(0), T(7)}) {
      forward<TypeParam>(p, &v, y.data(), 1);
      EXPECT_EQ(y[0], T(1));
    }
}

// flatten_below. One might expect t0 = -1 to flatten, but with σ(x) = x + t0·relu(r0 - x)
// (the formula as the reference code's SeLU writes it) it is t0 = +1 that maps every x < r0 to r0;
// t0 = -1 gives 2x - r0. Both are checked against the formula.
TYPED_TEST(multimax_test, flatten_below) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 3 * TypeParam::width + 5;
  auto x = random_row<T>(n, 8.0, 0.0, 17);
  x[0] = T(1.5);  // at least one above r0
  const params flat{{1, 0, 0, 0}, {0.5, 0, 0, 0}};
  std::vector<T> y(n);
  forward<TypeParam>(flat, x.data(), y.data(), n);
  EXPECT_TRUE((matches_reference<TypeParam>(flat, x)));
  // Every x < r0 gets the same output, up to the rounding of σ(x) = x + (r0 - x) (the forward
  // bound, twice: 1e-6 + 2^-20·2·max W each in float).
  const auto q = reference_params<T>(flat);
  long double max_magnitude = 0;
  for (T v : x) max_magnitude = std::fmax(max_magnitude, magnitude(v, q));
  const double rtol = 2 * (softmax_rtol<T> + (sizeof(T) == 4 ? 0x1p-20 : 0x1p-49) * 2 *
                                                 static_cast<double>(max_magnitude));
  T below = -1;
  std::size_t count = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] < T(0.5)) {
      if (below < 0) below = y[i];
      EXPECT_NEAR(y[i], below, rtol * below) << "every x < r0 gets the same output";
      ++count;
    }
  EXPECT_GT(count, n / 4);
  const params steep{{-1, 0, 0, 0}, {0.5, 0, 0, 0}};
  EXPECT_TRUE((matches_reference<TypeParam>(steep, x)));
}

// Invariants: Σy = 1 (within n·ε), 0 <= y <= 1; order preserved when σ is strictly increasing
// (t2 <= 0, t3 >= 0, 1 - t0 > 0, 1 + t1 > 0, 1 - t0 + t1 > 0: the `mild` set).
TYPED_TEST(multimax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 1001;
  const auto x = random_row<T>(n, 16.0, 0.0, 5);
  std::vector<T> y(n);
  for (auto const& p : all_sets) {
    forward<TypeParam>(p, x.data(), y.data(), n);
    long double sum = 0;
    for (T v : y) {
      sum += v;
      EXPECT_GE(v, T(0));
      EXPECT_LE(v, T(1));
    }
    EXPECT_NEAR(static_cast<double>(sum), 1.0, n * std::numeric_limits<T>::epsilon());
  }
  forward<TypeParam>(mild, x.data(), y.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j : {(i + 1) % n, (i + 7) % n})
      if (x[i] > x[j]) {
        EXPECT_GE(y[i], y[j]) << i << ", " << j;
      }
  // The non-monotone case: with t0 = 1.75 > 1, x < r0 reverse order.
  const std::vector<T> low = {-3, -2, -1};  // all below r0 = -0.5
  std::vector<T> yl(3);
  forward<TypeParam>(reversing, low.data(), yl.data(), 3);
  EXPECT_GT(yl[0], yl[1]);
  EXPECT_GT(yl[1], yl[2]);
}

TYPED_TEST(multimax_test, rows_with_leading_dimension_and_in_place) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t cols : {std::size_t(5), std::size_t(37), 9 * TypeParam::width + 1}) {
    const std::size_t rows = 5, ld = cols + 3;
    const auto x = random_row<T>(rows * ld, 20.0, 0.0, 21);
    std::vector<T> y(rows * ld, T(-7));
    smax::kernels::multimax_table<typename TypeParam::arch>::forward(
        x.data(), ld, y.data(), ld, rows, cols, kernel_params<T>(mild));
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> expected(cols);
      forward<TypeParam>(mild, x.data() + r * ld, expected.data(), cols);
      for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(y[r * ld + c], expected[c]);
      for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(y[r * ld + c], T(-7)) << "padding written";
    }
    auto inplace = x;
    std::vector<T> out(x.size());
    forward<TypeParam>(reversing, x.data(), out.data(), x.size());
    forward<TypeParam>(reversing, inplace.data(), inplace.data(), inplace.size());
    EXPECT_EQ(inplace, out);
  }
}

// Batches of short rows run four at a time through an interleaved kernel: every row must equal
// the single-row result bit for bit, special rows (NaN, all masked, +inf) included.
TYPED_TEST(multimax_test, short_row_batches_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 11;
  for (std::size_t cols : {std::size_t(1), TypeParam::width - 1, TypeParam::width,
                           3 * TypeParam::width + 1, 4 * TypeParam::width}) {
    auto x = random_row<T>(rows * cols, 20.0, 0.0, static_cast<unsigned>(cols));
    for (std::size_t c = 0; c < cols; ++c) x[1 * cols + c] = -infinity<T>;  // all masked
    x[2 * cols + cols / 2] = quiet_nan<T>;
    x[6 * cols] = infinity<T>;
    x[9 * cols + cols / 3] = -infinity<T>;
    for (auto const& p : all_sets) {
      std::vector<T> y(rows * cols);
      smax::kernels::multimax_table<typename TypeParam::arch>::forward(
          x.data(), cols, y.data(), cols, rows, cols, kernel_params<T>(p));
      for (std::size_t r = 0; r < rows; ++r) {
        std::vector<T> single(cols);
        forward<TypeParam>(p, x.data() + r * cols, single.data(), cols);
        for (std::size_t c = 0; c < cols; ++c) {
          const T got = y[r * cols + c];
          if (std::isnan(single[c]))
            EXPECT_TRUE(std::isnan(got)) << "row " << r;
          else
            EXPECT_EQ(got, single[c]) << "row " << r << ", col " << c << ", cols " << cols;
        }
        if (r != 1 && r != 2 && r != 6) {
          EXPECT_TRUE((matches_reference<TypeParam>(
              p, std::vector<T>(x.begin() + r * cols, x.begin() + (r + 1) * cols))));
        }
      }
    }
  }
}

// Backward: dx and the eight parameter gradients against central finite differences of the
// long-double reference forward, for y given as the reference output rounded to T (so that only
// the backward kernel's own error is measured), within the bounds of multimax.hpp
// (backward_bound) plus the finite differences' own error (absolute 1e-11·(1 + |d|): step 2^-21
// in long double) and, for the parameter gradients, 8e-6 relative (what central differences
// reach on the small parameter gradients).
TYPED_TEST(multimax_test, backward_against_finite_differences) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (auto const& p : {mild, spec_vector, reversing})
    for (std::size_t n : {std::size_t(1), std::size_t(7), 2 * TypeParam::width + 1, std::size_t(40),
                          17 * TypeParam::width + 3}) {
      auto x = random_row<T>(n, 6.0, 0.0, static_cast<unsigned>(n));
      if (n > 3) x[2] = -infinity<T>;
      const auto dy = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
      const auto q = reference_params<T>(p);
      const auto y_ref = smax::reference::multimax(x.data(), n, q);
      std::vector<T> y(n), dx(n);
      for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<T>(y_ref[i]);
      double grads[8];
      smax::kernels::multimax_table<typename TypeParam::arch>::backward(
          x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, kernel_params<T>(p), grads);
      const auto bound = backward_bound(x, y, dy, q);
      // L(x, t, r) = <dy, multimax(x)>, masked outputs (always 0) left out.
      auto loss = [&](std::vector<long double> const& xs,
                      smax::reference::multimax_parameters const& qs) {
        const auto f = smax::reference::multimax(xs.data(), n, qs);
        long double l = 0;
        for (std::size_t j = 0; j < n; ++j)
          if (x[j] != -infinity<T>) l += dy[j] * f[j];
        return l;
      };
      const long double h = 0x1p-21L;
      const std::vector<long double> x0(x.begin(), x.end());
      for (std::size_t i = 0; i < n; ++i) {
        if (x[i] == -infinity<T>) {
          EXPECT_EQ(dx[i], T(0));
          continue;
        }
        auto xp = x0, xm = x0;
        xp[i] += h;
        xm[i] -= h;
        const long double d = (loss(xp, q) - loss(xm, q)) / (2 * h);
        EXPECT_NEAR(dx[i], static_cast<double>(d),
                    static_cast<double>(bound.dx[i] + 1e-11L * (1 + std::fabs(d))))
            << "dx, i = " << i << ", n = " << n << ", t0 = " << p.t[0];
      }
      for (int k = 0; k < 8; ++k) {
        auto qp = q, qm = q;
        (k < 4 ? qp.t[k] : qp.r[k - 4]) += h;
        (k < 4 ? qm.t[k] : qm.r[k - 4]) -= h;
        const long double d = (loss(x0, qp) - loss(x0, qm)) / (2 * h);
        EXPECT_NEAR(grads[k], static_cast<double>(d),
                    static_cast<double>(bound.params[k] + 8e-6L * std::fabs(d) +
                                        1e-11L * (1 + std::fabs(d))))
            << (k < 4 ? "dt" : "dr") << k % 4 << ", n = " << n << ", t0 = " << p.t[0];
      }
    }
}

// Backward on long rows from the kernel's own forward output, against the reference VJP
// (analytic, long double) from that same y, within backward_bound; kinks; NaN rows.
TYPED_TEST(multimax_test, backward_long_rows_and_edge_cases) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 100003;
  auto x = random_row<T>(n, 20.0, 0.0, 8);
  x[5] = -infinity<T>;
  const auto dy = random_row<T>(n, 2.0, 0.0, 9);
  for (auto const& p : {zero_params, mild, reversing}) {
    std::vector<T> y(n), dx(n);
    forward<TypeParam>(p, x.data(), y.data(), n);
    double grads[8];
    smax::kernels::multimax_table<typename TypeParam::arch>::backward(
        x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, kernel_params<T>(p), grads);
    const auto q = reference_params<T>(p);
    const auto ref =
        smax::reference::multimax_backward(x.data(), std::vector<long double>(y.begin(), y.end()),
                                           std::vector<long double>(dy.begin(), dy.end()), q);
    const auto bound = backward_bound(x, y, dy, q);
    long double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += dx[i];
      if (x[i] == -infinity<T>) {
        ASSERT_EQ(dx[i], T(0));
        continue;
      }
      ASSERT_NEAR(dx[i], static_cast<double>(ref.dx[i]), static_cast<double>(bound.dx[i]))
          << "i = " << i;
    }
    for (int k = 0; k < 8; ++k) {
      const long double r = k < 4 ? ref.dt[k] : ref.dr[k - 4];
      EXPECT_NEAR(grads[k], static_cast<double>(r), static_cast<double>(bound.params[k]))
          << (k < 4 ? "dt" : "dr") << k % 4 << ", t0 = " << p.t[0];
    }
    if (all_zero_t(p)) {  // softmax: Σ dx = 0, and dr = t·(...) = 0
      EXPECT_NEAR(static_cast<double>(sum), 0.0, 1e-6);
      for (int k = 4; k < 8; ++k) EXPECT_EQ(grads[k], 0.0);
    }
  }
  // Kinks (strict inequalities, relu'(0) = 0): x exactly at every r_k.
  const params p = reversing;
  const auto q = reference_params<T>(p);
  const std::vector<T> xk = {T(-0.5), T(0.25), T(-3), T(3), T(1), T(-1)};
  const std::vector<T> dyk = {1, -2, T(0.5), 3, -1, T(0.25)};
  std::vector<T> yk(6), dxk(6);
  forward<TypeParam>(p, xk.data(), yk.data(), 6);
  smax::kernels::multimax_table<typename TypeParam::arch>::backward(
      xk.data(), 6, yk.data(), 6, dyk.data(), 6, dxk.data(), 6, 1, 6, kernel_params<T>(p), nullptr);
  const auto rk =
      smax::reference::multimax_backward(xk.data(), std::vector<long double>(yk.begin(), yk.end()),
                                         std::vector<long double>(dyk.begin(), dyk.end()), q);
  const auto bk = backward_bound(xk, yk, dyk, q);
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(dxk[i], static_cast<double>(rk.dx[i]), static_cast<double>(bk.dx[i]))
        << "kink at x = " << xk[i];
  // A NaN row (all masked: y is NaN) gives NaN gradients (E4).
  const std::vector<T> masked(5, -infinity<T>);
  std::vector<T> ym(5), dym(5, T(1)), dxm(5);
  forward<TypeParam>(p, masked.data(), ym.data(), 5);
  double gm[8];
  smax::kernels::multimax_table<typename TypeParam::arch>::backward(
      masked.data(), 5, ym.data(), 5, dym.data(), 5, dxm.data(), 5, 1, 5, kernel_params<T>(p), gm);
  for (T v : dxm) EXPECT_TRUE(std::isnan(v));
  for (double g : gm) EXPECT_TRUE(std::isnan(g));
}

// The public, header-only API: both types, rows, in place, n = 0, parameter gradients summed over
// rows.
TEST(multimax_api, overloads) {
  smax::multimax_options o;
  o.t = {0.1, 0.1, -0.01, 0.01};
  o.r = {-1, 1, -2, 2};
  std::vector<float> x = {1, 2, 3, -HUGE_VALF}, y(4);
  smax::multimax(x.data(), y.data(), x.size());  // default options: softmax
  EXPECT_NEAR(y[2], 0.66524096f, 1e-7f);
  EXPECT_EQ(y[3], 0.0f);
  smax::multimax(x.data(), y.data(), x.size(), o);
  const smax::reference::multimax_parameters q{{0.1L, 0.1L, -0.01L, 0.01L}, {-1, 1, -2, 2}};
  const auto ref = smax::reference::multimax(x.data(), 4, q);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(y[i], static_cast<double>(ref[i]), 2e-6 * static_cast<double>(ref[i]));
  std::vector<double> xd = {1, 2, 3}, yd(3);
  smax::multimax(xd.data(), yd.data(), 3, o);
  const auto refd = smax::reference::multimax(xd.data(), 3, q);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(yd[i], static_cast<double>(refd[i]), 1e-14);
  smax::multimax(xd.data(), xd.data(), 3, o);  // in place
  EXPECT_EQ(xd, yd);
  smax::multimax(static_cast<const float*>(nullptr), static_cast<float*>(nullptr), 0);  // E1
  // Two rows of 3 with ld = 4; the gradients of the two rows add up.
  std::vector<float> m = {1, 2, 3, 99, -1, 0, 4, 99}, my(8, -7.f);
  smax::multimax_rows(m.data(), my.data(), 2, 3, 4, o);
  EXPECT_EQ(my[3], -7.f);
  std::vector<float> dy = {1, 0, -1, 0, 0.5f, 2, 1, 0}, dx(8), dx0(3), dx1(3);
  smax::multimax_param_grads g, g0, g1;
  smax::multimax_backward_rows(m.data(), my.data(), dy.data(), dx.data(), 2, 3, 4, o, &g);
  smax::multimax_backward(m.data(), my.data(), dy.data(), dx0.data(), 3, o, &g0);
  smax::multimax_backward(m.data() + 4, my.data() + 4, dy.data() + 4, dx1.data(), 3, o, &g1);
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(g.dt[k], g0.dt[k] + g1.dt[k], 1e-12);
    EXPECT_NEAR(g.dr[k], g0.dr[k] + g1.dr[k], 1e-12);
  }
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(dx[c], dx0[c]);
    EXPECT_EQ(dx[4 + c], dx1[c]);
  }
  std::vector<double> dyd = {1, 0, 0}, dxd(3);
  smax::multimax_backward(xd.data(), yd.data(), dyd.data(), dxd.data(), 3);  // t = 0: softmax VJP
  EXPECT_NEAR(dxd[0], yd[0] * (1 - yd[0]), 1e-16);
}

}  // namespace
