// SSMax (smax/ssmax.hpp) on every compiled instruction set, float and double: against the
// long-double reference for λ > 0, λ = 1 (softmax bit for bit), λ < 0 and λ = 0, at every length
// around the vector width, with masks and special values; the paper's Figure 1 values; the
// backward pass and the gradients of s and b against finite differences.

#include <smax/reference/ssmax.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class ssmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(ssmax_test, all_configs, config_names);

template <class C, class T>
std::vector<T> ssmax_of(const std::vector<T>& x, T lambda, bool zero_masked_rows = false) {
  std::vector<T> y(x.size());
  if (!x.empty())
    smax::kernels::ssmax_table<typename C::arch>::forward(
        x.data(), x.size(), y.data(), x.size(), 1, x.size(), lambda,
        zero_masked_rows ? smax::kernels::flag_zero_masked_rows : 0u);
  return y;
}

// The bound ssmax.hpp states: softmax's (1e-6 / 1e-14) plus |λ(x_i - m)|·2^-22 (2^-51).
template <class T>
::testing::AssertionResult matches_ssmax_reference(const std::vector<T>& x, const std::vector<T>& y,
                                                   T lambda, bool zero_masked_rows = false) {
  const auto r = smax::reference::ssmax(x.data(), x.size(), lambda, zero_masked_rows);
  long double m = -HUGE_VALL;
  for (T v : x)
    if (std::isfinite(v)) m = std::fmax(m, static_cast<long double>(lambda) * v);
  const double base = sizeof(T) == 4 ? 1e-6 : 1e-14, slope = sizeof(T) == 4 ? 0x1p-22 : 0x1p-51;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double spread =
        std::isfinite(x[i]) ? std::fabs(m - static_cast<long double>(lambda) * x[i]) : 0;
    auto ok = matches(y[i], r[i], base + static_cast<double>(spread) * slope,
                      std::numeric_limits<T>::min(), i);
    if (!ok) return ok << " [lambda " << lambda << ", n = " << x.size() << "]";
  }
  return ::testing::AssertionSuccess();
}

constexpr double lambdas[] = {2.97, 1.0, 0.37, 7.5, -0.8, -1.0, 0.0};

TYPED_TEST(ssmax_test, every_length_and_every_sign_of_lambda) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n) {
    const auto x = random_row<T>(n, 20.0, 3.0, static_cast<unsigned>(n));
    for (double l : lambdas)
      EXPECT_TRUE(matches_ssmax_reference(x, ssmax_of<TypeParam>(x, T(l)), T(l)));
  }
  for (std::size_t n : {std::size_t(1000), std::size_t(65537)}) {
    const auto x = random_row<T>(n, 20.0, -1000.0, static_cast<unsigned>(n));
    for (double l : lambdas)
      EXPECT_TRUE(matches_ssmax_reference(x, ssmax_of<TypeParam>(x, T(l)), T(l)));
  }
}

// λ = 1 is softmax: the same kernel, bit for bit.
TYPED_TEST(ssmax_test, unit_scale_is_softmax) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(7), std::size_t(100), std::size_t(4099)}) {
    const auto x = random_row<T>(n, 20.0, 0.0, 9);
    std::vector<T> y(n);
    forward<TypeParam>(algorithm_id::automatic, false, x.data(), y.data(), n);
    EXPECT_EQ(ssmax_of<TypeParam>(x, T(1)), y);
  }
}

// Masks at every lane for each sign of λ (scaling never touches a mask); all masked; NaN, +inf.
TYPED_TEST(ssmax_test, masks_and_special_values) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 4 * TypeParam::width + 3;
  for (std::size_t i = 0; i < n; ++i)
    for (double l : lambdas) {
      auto x = random_row<T>(n, 10.0, 0.0, 5);
      x[i] = -infinity<T>;
      const auto y = ssmax_of<TypeParam>(x, T(l));
      EXPECT_TRUE(matches_ssmax_reference(x, y, T(l))) << "mask at " << i;
      EXPECT_EQ(y[i], T(0));
      for (T special : {infinity<T>, quiet_nan<T>}) {
        auto z = x;
        z[(i + 1) % n] = special;
        for (T v : ssmax_of<TypeParam>(z, T(l)))
          EXPECT_TRUE(std::isnan(v)) << special << ", lambda " << l;
      }
    }
  const std::vector<T> masked(n, -infinity<T>);
  for (double l : lambdas) {
    for (T v : ssmax_of<TypeParam>(masked, T(l))) EXPECT_TRUE(std::isnan(v));
    for (T v : ssmax_of<TypeParam>(masked, T(l), true)) EXPECT_EQ(v, T(0));
  }
  for (T bad : {infinity<T>, quiet_nan<T>})
    for (T v : ssmax_of<TypeParam>(random_row<T>(5, 1.0, 0.0, 1), bad)) EXPECT_TRUE(std::isnan(v));
  const T big = std::numeric_limits<T>::max();
  const std::vector<T> huge = {big, -big, T(0)};
  EXPECT_EQ(ssmax_of<TypeParam>(huge, T(0.5)), (std::vector<T>{1, 0, 0}));
  EXPECT_EQ(ssmax_of<TypeParam>(huge, T(-0.5)), (std::vector<T>{0, 1, 0}));
}

// The paper's Figure 1 (docs/ssmax.md): x = [-2, ..., -2, 3], s = 0.43.
TYPED_TEST(ssmax_test, paper_figure_one) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::pair<std::size_t, double> cases[] = {{10, 0.94010}, {100, 0.99506}, {1000, 0.99965}};
  for (auto [n, expected] : cases) {
    std::vector<T> x(n, T(-2));
    x.back() = T(3);
    const T lambda = static_cast<T>(0.43 * std::log(static_cast<double>(n)));
    EXPECT_NEAR(ssmax_of<TypeParam>(x, lambda).back(), expected, 5e-6) << "n = " << n;
  }
}

// λ = s·ln n + b rounded from double: where the two terms cancel (s = 1, b = -3, n = 18:
// λ = -0.11) its rounding is relative to |s·ln n| + |b|, not to |λ|, and moves y_i by up to
// δλ·(|x_i - m| + max_j |x_j - m|) relative (the mean of x - m under y as well as x_i's own):
// the bound adds 2^-51·(|s·ln n| + |b|)·(|x_i - m| + max_j |x_j - m|). Checked through the public
// API, which computes λ, against the reference at the exact λ.
TYPED_TEST(ssmax_test, lambda_rounding_where_its_terms_cancel) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  struct lambda_case {
    double s, b;
    std::size_t n;
  };
  for (auto const& c : {lambda_case{1, -3, 18}, lambda_case{1, -3, 20}, lambda_case{0.43, -1.3, 21},
                        lambda_case{-1, 2.9, 18}, lambda_case{2, -5.7, 17}})
    for (unsigned seed = 0; seed < 50; ++seed) {
      const auto x = random_row<T>(c.n, 400.0, 0.0, seed);  // λ·(x - m) up to 44
      std::vector<T> y(c.n);
      smax::ssmax(x.data(), y.data(), c.n, {c.s, c.b});
      const long double lambda = c.s * std::log(static_cast<long double>(c.n)) + c.b;
      const auto r = smax::reference::ssmax(x.data(), c.n, lambda);
      // m: the entry of the largest λ·x (the minimum when λ < 0).
      long double m = lambda >= 0 ? -HUGE_VALL : HUGE_VALL, spread = 0;
      for (T v : x)
        m = lambda >= 0 ? std::fmax(m, static_cast<long double>(v))
                        : std::fmin(m, static_cast<long double>(v));
      for (T v : x) spread = std::fmax(spread, std::fabs(v - m));
      const double base = sizeof(T) == 4 ? 1e-6 : 1e-14, slope = sizeof(T) == 4 ? 0x1p-22 : 0x1p-51;
      const double lambda_error =
          0x1p-51 * (std::fabs(c.s * std::log(double(c.n))) + std::fabs(c.b));
      for (std::size_t i = 0; i < c.n; ++i) {
        const double d = static_cast<double>(std::fabs(x[i] - m));
        const double rtol = base + d * std::fabs(static_cast<double>(lambda)) * slope +
                            lambda_error * (d + static_cast<double>(spread));
        ASSERT_TRUE(matches(y[i], r[i], rtol, std::numeric_limits<T>::min(), i))
            << "s = " << c.s << ", b = " << c.b << ", n = " << c.n << ", seed " << seed;
      }
    }
}

// Rows with a leading dimension (ld > cols): dx the same as row by row, dλ the sum of the rows'.
TYPED_TEST(ssmax_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::ssmax_table<typename TypeParam::arch>;
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)})
    for (T lambda : {T(1.7), T(-0.4)}) {
      const std::size_t ld = cols + 7;
      const auto x = random_row<T>(rows * ld, 8.0, 0.0, static_cast<unsigned>(cols));
      const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
      std::vector<T> y(rows * ld);
      table::forward(x.data(), ld, y.data(), ld, rows, cols, lambda, 0u);
      double batched_dlambda = 0, single_dlambda = 0;
      EXPECT_TRUE(rows_equal_single_rows<T>(
          rows, cols, ld,
          [&](T* dx) {
            table::backward(x.data(), ld, y.data(), ld, dy.data(), ld, dx, ld, rows, cols, lambda,
                            &batched_dlambda);
          },
          [&](std::size_t r, T* dx) {
            table::backward(x.data() + r * ld, cols, y.data() + r * ld, cols, dy.data() + r * ld,
                            cols, dx, cols, 1, cols, lambda, &single_dlambda);
          }))
          << "lambda " << lambda;
      EXPECT_NEAR(batched_dlambda, single_dlambda, 1e-12 * (1 + std::fabs(single_dlambda)));
    }
}

// dx and the parameter gradients against central differences of the long-double reference, for
// the loss L = <w, y>.
TYPED_TEST(ssmax_test, backward_and_parameter_gradients) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 37;
  auto x = random_row<T>(n, 6.0, 0.5, 21);
  x[4] = -infinity<T>;
  const auto w = random_row<T>(n, 2.0, 0.0, 22);
  for (double s : {0.43, -0.3}) {
    const double b = 0.2, ln_n = std::log(static_cast<double>(n));
    const T lambda = static_cast<T>(s * ln_n + b);
    const auto y = ssmax_of<TypeParam>(x, lambda);
    std::vector<T> dx(n);
    double dlambda = 0;
    smax::kernels::ssmax_table<typename TypeParam::arch>::backward(
        x.data(), n, y.data(), n, w.data(), n, dx.data(), n, 1, n, lambda, &dlambda);
    auto loss = [&](std::vector<T> const& xs, long double l) {
      const auto r = smax::reference::ssmax(xs.data(), n, l);
      long double sum = 0;
      for (std::size_t i = 0; i < n; ++i) sum += w[i] * r[i];
      return sum;
    };
    const long double h = 1e-6L;
    const double tol = sizeof(T) == 4 ? 2e-5 : 1e-9;
    for (std::size_t i = 0; i < n; ++i) {
      if (i == 4) {
        EXPECT_EQ(dx[i], T(0));
        continue;
      }
      std::vector<long double> xp(x.begin(), x.end()), xm(x.begin(), x.end());
      auto fd = [&](long double step) {
        std::vector<long double> xs(x.begin(), x.end());
        xs[i] += step;
        const auto r = smax::reference::ssmax(xs.data(), n, static_cast<long double>(lambda));
        long double sum = 0;
        for (std::size_t j = 0; j < n; ++j) sum += w[j] * r[j];
        return sum;
      };
      const long double expected = (fd(h) - fd(-h)) / (2 * h);
      EXPECT_NEAR(dx[i], static_cast<double>(expected), tol) << "dx at " << i << ", s = " << s;
    }
    const long double dl = (loss(x, lambda + h) - loss(x, lambda - h)) / (2 * h);
    EXPECT_NEAR(dlambda, static_cast<double>(dl), tol) << "s = " << s;
    // The public API (header-only: its instruction set may differ): ds = ln(n)·dλ, db = dλ.
    smax::ssmax_param_grads g;
    std::vector<T> dx2(n);
    smax::ssmax_backward(x.data(), y.data(), w.data(), dx2.data(), n, {s, b}, &g);
    for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(dx2[i], dx[i], tol);
    EXPECT_NEAR(g.bias, dlambda, tol);
    EXPECT_NEAR(g.s, ln_n * dlambda, tol * ln_n);
    const smax::ssmax_param_grads first = g;  // set, not accumulated: a second call gives the same
    smax::ssmax_backward(x.data(), y.data(), w.data(), dx2.data(), n, {s, b}, &g);
    EXPECT_EQ(g.s, first.s);
    EXPECT_EQ(g.bias, first.bias);
  }
}

template <class T>
void public_api() {
  const std::size_t rows = 3, cols = 6, ld = 8;
  std::vector<T> x(rows * ld), y(rows * ld, T(-7));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(int(i % 5) - 2);
  smax::ssmax_rows(x.data(), y.data(), rows, cols, ld, {0.5, 0.1});
  const T lambda = static_cast<T>(0.5 * std::log(6.0) + 0.1);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols), out(cols);
    smax::ssmax(row.data(), out.data(), cols, {0.5, 0.1});
    EXPECT_TRUE(matches_ssmax_reference(row, out, lambda));
    for (std::size_t c = 0; c < ld; ++c) EXPECT_EQ(y[r * ld + c], c < cols ? out[c] : T(-7));
  }
  std::vector<T> z(x.begin(), x.begin() + cols);  // in place, explicit n (a causal row)
  std::vector<T> expected(cols);
  smax::ssmax(z.data(), expected.data(), cols, {0.43, 0.0, 100});
  smax::ssmax(z.data(), z.data(), cols, {0.43, 0.0, 100});
  EXPECT_EQ(z, expected);
  smax::ssmax(x.data(), y.data(), 0);  // n = 0 touches nothing
  std::vector<T> one = {T(5)}, out(1);
  smax::ssmax(one.data(), out.data(), 1);  // n = 1: λ = 0 -> [1]
  EXPECT_EQ(out[0], T(1));
}

TEST(ssmax_api, overloads_rows_in_place_and_explicit_n) {
  public_api<float>();
  public_api<double>();
}

}  // namespace
