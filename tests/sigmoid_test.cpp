// sigmoid and sigmoid attention (smax/sigmoid.hpp) on every compiled instruction set, float and
// double: <= 2 ulp against the long-double reference over the whole range, special values at
// every lane position, the invariants of docs/sigmoid.md, and the backward pass.

#include <cstdint>
#include <cstring>

#include <smax/reference/sigmoid.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class sigmoid_test : public ::testing::Test {};
TYPED_TEST_SUITE(sigmoid_test, all_configs, config_names);

template <class C, class T>
void sigmoid_of(const std::vector<T>& x, std::vector<T>& y, T bias = 0) {
  y.resize(x.size());
  smax::kernels::sigmoid_table<typename C::arch>::forward(x.data(), x.size(), y.data(), x.size(), 1,
                                                          x.size(), bias);
}

// ulp of a real number in T's format (for results below the smallest normal: of that).
template <class T>
long double ulp_at(long double r) {
  const long double tiny = std::numeric_limits<T>::min();
  int e;
  std::frexp(static_cast<double>(std::max(std::fabs(r), tiny)), &e);
  return std::ldexp(1.0L, e - std::numeric_limits<T>::digits);
}

// The largest error in ulp over x, for outputs >= the smallest normal number (max_ulp and
// worst carry over from earlier calls).
template <class T>
double max_ulp_error(const std::vector<T>& x, const std::vector<T>& y, T bias, T* worst,
                     double max_ulp = 0) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double r = smax::reference::sigmoid(static_cast<long double>(x[i]) + bias);
    if (r < std::numeric_limits<T>::min()) continue;
    const double err = static_cast<double>(std::fabs(y[i] - r) / ulp_at<T>(r));
    if (err > max_ulp) {
      max_ulp = err;
      *worst = x[i];
    }
  }
  return max_ulp;
}

// float: every 97th float of the whole line (about 4.4e7 values); double: 3e6 random values.
TYPED_TEST(sigmoid_test, within_two_ulp_everywhere) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> x, y;
  double max_ulp = 0;
  T worst = 0;
  if constexpr (sizeof(T) == 4) {
    const std::uint64_t stride = 97 * exhaustive_stride();
    x.resize(1 << 20);
    for (std::uint64_t b = 0; b < (std::uint64_t(1) << 32);) {
      std::size_t n = 0;
      for (; n < x.size() && b < (std::uint64_t(1) << 32); ++n, b += stride) {
        const auto bits = static_cast<std::uint32_t>(b);
        std::memcpy(&x[n], &bits, 4);
      }
      x.resize(n);
      sigmoid_of<TypeParam>(x, y);
      max_ulp = max_ulp_error<T>(x, y, T(0), &worst, max_ulp);
      x.resize(1 << 20);
    }
  } else {
    std::mt19937_64 rng(5);
    for (double range : {800.0, 40.0, 1.0}) {
      std::uniform_real_distribution<double> u(-range, range);
      x.resize(sampled(1 << 20));
      for (auto& v : x) v = u(rng);
      sigmoid_of<TypeParam>(x, y);
      max_ulp = max_ulp_error<T>(x, y, T(0), &worst, max_ulp);
    }
  }
  this->RecordProperty("max_ulp", std::to_string(max_ulp));
  // The Newton step of the quotient is exact only with a fused multiply-add.
  EXPECT_LE(max_ulp, smax::detail::has_native_fma<typename TypeParam::arch>::value ? 2.0 : 2.5)
      << "at x = " << worst;
}

TYPED_TEST(sigmoid_test, every_length_with_a_bias_and_special_values_at_every_lane) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T bias = static_cast<T>(-std::log(8192.0));
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n) {
    const auto x = random_row<T>(n, 40.0, 0.0, static_cast<unsigned>(n));
    std::vector<T> y;
    sigmoid_of<TypeParam>(x, y, bias);
    T worst = 0;
    EXPECT_LE(max_ulp_error<T>(x, y, bias, &worst),
              smax::detail::has_native_fma<typename TypeParam::arch>::value ? 2.0 : 2.5)
        << "n = " << n << ", x = " << worst;
  }
  const std::size_t n = 2 * TypeParam::width + 3;
  std::vector<T> base;
  sigmoid_of<TypeParam>(random_row<T>(n, 10.0, 0.0, 3), base);
  for (T special : {-infinity<T>, infinity<T>, quiet_nan<T>, std::numeric_limits<T>::max(),
                    -std::numeric_limits<T>::max(), T(100), T(-100)})
    for (std::size_t i = 0; i < n; ++i) {
      auto x = random_row<T>(n, 10.0, 0.0, 3);
      x[i] = special;
      std::vector<T> y;
      sigmoid_of<TypeParam>(x, y);
      const long double expected = smax::reference::sigmoid(special);
      if (std::isnan(special))
        EXPECT_TRUE(std::isnan(y[i]));
      else
        EXPECT_NEAR(static_cast<long double>(y[i]), expected, 1e-30L) << special << " at " << i;
      for (std::size_t j = 0; j < n; ++j) {  // positions are independent
        if (j != i) {
          EXPECT_EQ(y[j], base[j]) << special << " at " << i << " changed " << j;
        }
      }
    }
}

// Invariants: 0 <= y <= 1, σ(-t) = 1 - σ(t), strictly monotone (non-decreasing in floats),
// x = 0 with b = -ln n gives 1/(1 + n); changing x_j leaves y_i alone.
TYPED_TEST(sigmoid_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> x(20001), y, y_neg, neg(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(-100.0 + 0.01 * i);
  for (std::size_t i = 0; i < x.size(); ++i) neg[i] = -x[i];
  sigmoid_of<TypeParam>(x, y);
  sigmoid_of<TypeParam>(neg, y_neg);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_GE(y[i], T(0));
    EXPECT_LE(y[i], T(1));
    if (i > 0) {
      EXPECT_GE(y[i], y[i - 1]) << "at " << x[i];
    }
    if (y[i] >= T(0.25) && y[i] <= T(0.75)) {  // 2 ulp each side
      EXPECT_NEAR(y[i] + y_neg[i], T(1), 4 * std::numeric_limits<T>::epsilon()) << x[i];
    }
  }
  const std::vector<T> zero(1, T(0));
  std::vector<T> out(1);
  smax::sigmoid_attention(zero.data(), out.data(), 1, {8192});
  // 1/(1 + 8192) up to the rounding of b = -ln 8192 to T (half an ulp of 9.01, relative).
  EXPECT_NEAR(out[0], T(1.0 / 8193), (2 + 9.02 / 2) * std::numeric_limits<T>::epsilon() / 8192);
}

// Sigmoid attention's default bias is b = -ln(seq_len) computed in double and rounded to T;
// the 2-ulp bound is of σ(x + b) for that b, x + b exact (at seq_len = 2^31, σ(x - ln seq_len)
// with the exact logarithm is up to 8 ulp away: b's rounding, 2^-24·21.5, moves σ by that much).
// On every instruction set through the kernel with that b; and the public API uses that b.
TYPED_TEST(sigmoid_test, attention_bias_is_the_rounded_logarithm) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (double seq_len : {2.0, 1000.0, 4096.0, 2147483648.0, 1e12}) {
    const T bias = static_cast<T>(-std::log(seq_len));
    const auto x = random_row<T>(100000, 60.0, -static_cast<double>(bias), 5);
    std::vector<T> y;
    sigmoid_of<TypeParam>(x, y, bias);
    T worst = 0;
    const double max_ulp = max_ulp_error<T>(x, y, bias, &worst);
    EXPECT_LE(max_ulp, smax::detail::has_native_fma<typename TypeParam::arch>::value ? 2.0 : 2.5)
        << "seq_len " << seq_len << " at x = " << worst;
    std::vector<T> z(x.size());
    smax::sigmoid_attention(x.data(), z.data(), x.size(), {static_cast<std::size_t>(seq_len)});
    const double api_ulp = max_ulp_error<T>(x, z, bias, &worst);
    EXPECT_LE(api_ulp, 2.5) << "public API, seq_len " << seq_len << " at x = " << worst;
  }
}

// Rows with a leading dimension (ld > cols): the same gradients as row by row.
TYPED_TEST(sigmoid_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::sigmoid_table<typename TypeParam::arch>;
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)}) {
    const std::size_t ld = cols + 7;
    const auto x = random_row<T>(rows * ld, 12.0, 0.0, static_cast<unsigned>(cols));
    const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
    std::vector<T> y(rows * ld);
    table::forward(x.data(), ld, y.data(), ld, rows, cols, T(-0.5));
    EXPECT_TRUE(rows_equal_single_rows<T>(
        rows, cols, ld,
        [&](T* dx) { table::backward(y.data(), ld, dy.data(), ld, dx, ld, rows, cols); },
        [&](std::size_t r, T* dx) {
          table::backward(y.data() + r * ld, cols, dy.data() + r * ld, cols, dx, cols, 1, cols);
        }));
  }
}

// dx = dy·y·(1 - y) from y, against dy·σ(t)·σ(-t) where y is accurate: <= 2 ulp + y's own error
// propagated (|1 - 2y| · 2 ulp of y, relative to y(1 - y)).
TYPED_TEST(sigmoid_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1), std::size_t(37), std::size_t(1000)}) {
    const auto x = random_row<T>(n, 12.0, 0.0, 11);
    const auto dy = random_row<T>(n, 2.0, 0.0, 12);
    std::vector<T> y, dx(n);
    sigmoid_of<TypeParam>(x, y);
    smax::kernels::sigmoid_table<typename TypeParam::arch>::backward(y.data(), n, dy.data(), n,
                                                                     dx.data(), n, 1, n);
    for (std::size_t i = 0; i < n; ++i) {
      const long double s = smax::reference::sigmoid(x[i]);
      const long double expected = smax::reference::sigmoid_backward(x[i], dy[i]);
      const long double tol =
          std::fabs(expected) * std::numeric_limits<T>::epsilon() * (2 + 2 / (1 - s) + 2 / s) +
          1e-300L;
      EXPECT_NEAR(static_cast<long double>(dx[i]), expected, tol) << "at " << x[i];
    }
  }
  // Saturated: y = 0 and y = 1 give dx = 0.
  const std::vector<T> ys = {T(0), T(1)}, dys = {T(3), T(-3)};
  std::vector<T> dx(2);
  smax::kernels::sigmoid_table<typename TypeParam::arch>::backward(ys.data(), 2, dys.data(), 2,
                                                                   dx.data(), 2, 1, 2);
  EXPECT_EQ(dx[0], T(0));
  EXPECT_EQ(dx[1], T(0));
}

// The backward bound for the given y, as sigmoid.hpp states it: 1.5 ulp of dy·y·(1 - y) with an
// FMA (y - y·y in one rounding), 2.5 without (SSE2: 1 - y rounded for y < 1/2). Products just
// below a power of two are where a relative error costs the most ulp, so dy is chosen to put
// dy·y·(1 - y) there as well as at random; y sweeps (0, 1) with most of it below 1/2, where
// the rounded 1 - y used to cost up to 2.5 ulp on every instruction set.
TYPED_TEST(sigmoid_test, backward_within_its_bound_for_the_given_y) {
  using T = typename TypeParam::value_type;
  using A = typename TypeParam::arch;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double bound = smax::detail::has_native_fma<A>::value ? 1.5 : 2.5;
  const std::size_t n = 1 << 16;
  const auto u = random_row<T>(n, 2.0, 0.0, 41);  // uniform in [-1, 1)
  const auto v = random_row<T>(n, 2.0, 0.0, 42);
  std::vector<T> y(n), dy(n), dx(n);
  for (std::size_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>(i % 4 == 3 ? 0.5 + std::fabs(u[i]) / 2 : std::fabs(u[i]) / 2);
    if (i % 97 == 0) y[i] = static_cast<T>(std::ldexp(1.0, -int(i % 60)));  // small y
    const long double p = static_cast<long double>(y[i]) * (1 - static_cast<long double>(y[i]));
    if (i % 2 == 0) {
      dy[i] = static_cast<T>(v[i] * 4);
    } else {  // dy·p just below a power of two
      int e;
      std::frexp(static_cast<double>(p), &e);
      const long double target = std::ldexp(1.0L - std::fabs(v[i]) * 1e-3L, 1 - e);
      dy[i] = static_cast<T>(target);
    }
  }
  smax::kernels::sigmoid_table<A>::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double yi = y[i];
    const long double want = dy[i] * yi * (1 - yi);
    const double err = static_cast<double>(std::fabs(dx[i] - want) / ulp_at<T>(want));
    worst = std::max(worst, err);
    ASSERT_LE(err, bound) << "y " << y[i] << ", dy " << dy[i] << ": " << dx[i] << " for " << want;
  }
  this->RecordProperty("worst_ulp", std::to_string(worst));
  // The extremes: y from the smallest subnormal to the largest value below 1, dy from the
  // smallest subnormal to ±the largest finite value (y·(1 - y) <= 1/4, so nothing overflows;
  // subnormal results are measured in the subnormals' ulp).
  const T lim[] = {std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(),
                   std::nextafter(T(0.5), T(0)), T(0.5), std::nextafter(T(1), T(0))};
  const T grads[] = {std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::min(), T(1),
                     std::numeric_limits<T>::max(), -std::numeric_limits<T>::max()};
  std::vector<T> ey, edy;
  for (T a : lim)
    for (T g : grads) ey.push_back(a), edy.push_back(g);
  std::vector<T> edx(ey.size());
  smax::kernels::sigmoid_table<A>::backward(ey.data(), ey.size(), edy.data(), ey.size(), edx.data(),
                                            ey.size(), 1, ey.size());
  for (std::size_t i = 0; i < ey.size(); ++i) {
    const long double yi = ey[i];
    const long double want = edy[i] * yi * (1 - yi);
    EXPECT_LE(static_cast<double>(std::fabs(edx[i] - want) / ulp_at<T>(want)), bound)
        << "y " << ey[i] << ", dy " << edy[i] << ": " << edx[i] << " for " << want;
  }
}

template <class T>
void public_api_round_trip() {
  const std::size_t rows = 3, cols = 5, ld = 7;
  std::vector<T> x(rows * ld), y(rows * ld, T(-7));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(int(i % 11) - 5);
  smax::sigmoid_rows(x.data(), y.data(), rows, cols, ld);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < ld; ++c) {
      const std::size_t i = r * ld + c;
      if (c < cols)
        EXPECT_NEAR(y[i], static_cast<T>(smax::reference::sigmoid(x[i])),
                    4 * std::numeric_limits<T>::epsilon());
      else
        EXPECT_EQ(y[i], T(-7));  // the gap between rows is not written
    }
  std::vector<T> z = x;  // in place, with the default attention bias -ln(cols)
  smax::sigmoid_attention_rows(z.data(), z.data(), rows, cols, ld);
  for (std::size_t c = 0; c < cols; ++c)
    EXPECT_NEAR(z[c], static_cast<T>(smax::reference::sigmoid(x[c] - std::log(5.0L))),
                4 * std::numeric_limits<T>::epsilon());
  std::vector<T> y1(cols), dx(cols), dy(cols, T(1));
  smax::sigmoid_attention(x.data(), y1.data(), cols, {0, 0.5});
  EXPECT_NEAR(y1[0], static_cast<T>(smax::reference::sigmoid(x[0] + 0.5L)),
              4 * std::numeric_limits<T>::epsilon());
  smax::sigmoid_backward(y1.data(), dy.data(), dx.data(), cols);
  smax::sigmoid_attention_backward(y1.data(), dy.data(), dy.data(), cols);
  EXPECT_EQ(dx, dy);
  smax::sigmoid(x.data(), y.data(), 0);  // n = 0 touches nothing
}

TEST(sigmoid_api, overloads_rows_and_in_place) {
  public_api_round_trip<float>();
  public_api_round_trip<double>();
}

}  // namespace
