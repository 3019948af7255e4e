// Regression tests for what the differential fuzzers (fuzz/) found, one test per finding, on
// every compiled instruction set. One that still fails is disabled (GoogleTest reports it as
// disabled) until its fix lands, with an entry in fuzz/known_defects.hpp that the fuzzers step
// around: enable the test and delete the entry together.

#include <smax/online.hpp>
#include <smax/reference/gumbel_softmax.hpp>
#include <smax/reference/multimax.hpp>
#include <smax/reference/softpick.hpp>
#include <smax/reference/sparsemax.hpp>
#include <smax/reference/ssmax.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class fuzz_findings : public ::testing::Test {};
TYPED_TEST_SUITE(fuzz_findings, all_configs, config_names);

// The n = 1 contract ([1] / [0] exactly) with the online algorithm: float [-3.40206654e-08] gave
// 0.99999994 (and 2.6e-8 for log-softmax), double [-4.60430974e-08] 1.0000000000000002.
TYPED_TEST(fuzz_findings, online_single_element_is_exact) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (T v : {T(-3.40206654e-08), T(-4.60430974e-08), T(0), T(100), T(-1e30)})
    for (bool log : {false, true}) {
      T y = T(-7);
      forward<TypeParam>(algorithm_id::online, log, &v, &y, 1);
      EXPECT_EQ(y, log ? T(0) : T(1)) << v << (log ? ", log" : "");
    }
}

// The online state (reduce two chunks, merge, normalise each) of row x against the reference.
template <class C, class T>
void expect_online_state_matches(std::vector<T> const& x, T t, bool log) {
  const std::size_t n = x.size(), cut = n / 3;
  using table = typename C::table;
  smax::online_state<T> a, b;
  table::online_reduce(x.data(), cut, t, &a.max, &a.sum);
  table::online_reduce(x.data() + cut, n - cut, t, &b.max, &b.sum);
  const smax::softmax_options opts{static_cast<double>(t), false};
  const smax::online_state<T> s = smax::merge(b, a, opts);
  std::vector<T> y(n);
  const unsigned flags = log ? smax::kernels::flag_log : 0u;
  table::online_normalize(x.data(), y.data(), cut, t, flags, s.max, s.sum);
  table::online_normalize(x.data() + cut, y.data() + cut, n - cut, t, flags, s.max, s.sum);
  const auto ref = smax::reference::softmax(x.data(), n, log, {static_cast<long double>(t), false});
  // The bound of matches_reference (softmax.hpp's).
  long double m = -HUGE_VALL;
  for (T v : x) m = v > m ? v : m;
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : 1e-14;
  for (std::size_t i = 0; i < n; ++i) {
    const double spread = static_cast<double>((m - x[i]) / t);
    if (log)
      EXPECT_TRUE(matches(y[i], ref[i], 0.0,
                          eps * (std::fabs(static_cast<double>(ref[i])) + 1 + std::log(double(n))),
                          i, false));
    else
      EXPECT_TRUE(matches(y[i], ref[i],
                          softmax_rtol<T> + eps * (std::isfinite(spread) ? spread : 0.0),
                          std::numeric_limits<T>::min(), i));
  }
}

// A temperature whose reciprocal is subnormal (T > 1/FLT_MIN), a masked entry, and a call of 1024
// elements or more (the flush-to-zero guard): softmax([0.5 x1023, -inf], T = 3e38) was NaN on
// AVX-512 and AVX2+FMA (float since the §4 fixes; double T = 1e308 still was: 2/T, subnormal,
// was flushed to 0 and -inf·0 made the row NaN). Also the online state of [0 x64] at T = T_MAX
// (double was NaN through log_softmax's online state).
TYPED_TEST(fuzz_findings, subnormal_inverse_temperature_with_a_mask) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (T t : {sizeof(T) == 4 ? T(3e38) : T(1e308), std::numeric_limits<T>::max()}) {
    for (std::size_t n : {std::size_t(1024), std::size_t(1765)}) {
      std::vector<T> x(n, T(0.5));
      x[n - 1] = -infinity<T>;
      x[n / 2] = -std::numeric_limits<T>::max();
      for (auto a : all_algorithms)
        for (bool log : {false, true})
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t))) << "n = " << n << ", T = " << t;
    }
    for (bool log : {false, true}) {
      expect_online_state_matches<TypeParam>(std::vector<T>(64, T(0)), t, log);
      std::vector<T> x(1100, T(-3));
      x[7] = -infinity<T>;
      x[500] = std::numeric_limits<T>::max();
      expect_online_state_matches<TypeParam>(x, t, log);
    }
  }
}

// A temperature so small that 1/T overflows (T < 1/FLT_MAX, still finite and > 0, so valid) gave
// NaN (x - m = 0 times 1/T = inf): double T = 2.67e-315 on 15 entries near 0. The result is not
// always one-hot: entries a few subnormal steps below the maximum have (x - m)/T of order 1.
// Also a 1/T just below the largest finite value (double T = 7.17e-309 on [0 x15], online, AVX-512:
// NaN), and the first T whose 1/T is finite.
TYPED_TEST(fuzz_findings, inverse_temperature_overflows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T edge = std::nextafter(T(1) / std::numeric_limits<T>::max(), T(1));
  for (const T t : {sizeof(T) == 4 ? T(1e-39) : T(2.67e-315), sizeof(T) == 4 ? T(3e-39) : T(7.17064818e-309), edge})
  for (std::size_t n : {std::size_t(1), std::size_t(15), std::size_t(100), std::size_t(1500)}) {
  SCOPED_TRACE(testing::Message() << "T = " << t);
  const T step = std::numeric_limits<T>::denorm_min();
    std::vector<T> near_zero(n), subnormal_steps(n);
    for (std::size_t i = 0; i < n; ++i) {
      near_zero[i] = T(1e-3) * T(i % 17);
      subnormal_steps[i] = step * T(i % 9);
    }
    if (n > 3) near_zero[2] = subnormal_steps[3] = -infinity<T>;
    for (auto const& x : {near_zero, subnormal_steps})
      for (auto a : all_algorithms)
        for (bool log : {false, true})
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t))) << "n = " << n;
    for (auto a : all_algorithms)
      for (bool log : {false, true})
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>(n, T(0)), t))) << "zeros, n = " << n;
    if (n > 1)
      for (bool log : {false, true}) {
        expect_online_state_matches<TypeParam>(near_zero, t, log);
        expect_online_state_matches<TypeParam>(subnormal_steps, t, log);
      }
    // Backward (1/T overflowing made a masked entry's 0·inf NaN): masked entries get exactly 0
    // (log: dy/T), the rest the reference's value, within the bound or both beyond T's range.
    for (bool log : {false, true}) {
      const auto& x = subnormal_steps;
      std::vector<T> y(n), dy(n), dx(n);
      // Gradients small enough that dy/T stays finite, large enough that no product is subnormal.
      for (std::size_t i = 0; i < n; ++i)
        dy[i] = (sizeof(T) == 4 ? T(1e-30) : T(1e-300)) * T(1 + i % 5);
      forward<TypeParam>(algorithm_id::three_pass, log, x.data(), y.data(), n, t);
      TypeParam::table::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, t,
                                 log ? smax::kernels::flag_log : 0u);
      std::vector<long double> yl(y.begin(), y.end()), dyl(dy.begin(), dy.end());
      const auto ref =
          smax::reference::backward(yl, dyl, log, {static_cast<long double>(t), false});
      long double second = 0;
      for (std::size_t i = 0; i < n; ++i) second += std::fabs(log ? dyl[i] : dyl[i] * yl[i]);
      const double eps = sizeof(T) == 4 ? 0x1p-23 : 0x1p-52;
      for (std::size_t i = 0; i < n; ++i) {
        if (!log && x[i] == -infinity<T>) {
          EXPECT_EQ(dx[i], T(0)) << "at " << i;
        }
        const long double t1 = log ? std::fabs(dyl[i]) / t : std::fabs(yl[i] * dyl[i]) / t;
        const long double t2 = (log ? std::exp(yl[i]) : std::fabs(yl[i])) * second / t;
        const long double bound = 16 * eps * (t1 + t2) + std::numeric_limits<T>::min();
        if (std::fabs(ref[i]) > std::numeric_limits<T>::max())
          EXPECT_TRUE(std::isinf(dx[i]) || std::fabs(dx[i] - ref[i]) <= bound) << "at " << i;
        else
          EXPECT_LE(std::fabs(dx[i] - ref[i]), bound) << "at " << i << (log ? ", log" : "");
      }
    }
  }
}

// double softpick passed its 1e-14 relative bound for row maxima from about 300:
// [0, 460.78125, 0] with eps = 1e30 gave 1.55e-14 (2.0e-14 at 599): the row constant
// c = e^(K·ln2 - m), which scales eps, took K·ln2 with ln2 rounded to one double.
TYPED_TEST(fuzz_findings, softpick_large_maximum_within_bound) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  const T top = sizeof(T) == 4 ? T(79) : T(599);
  for (T m : {T(60), T(300), T(460.78125), top})
    for (double eps : {1e30, 1e10, 1.0}) {
      const std::vector<T> x = {T(0), m, T(0)};
      std::vector<T> y(3);
      smax::kernels::softpick_table<typename TypeParam::arch>::forward(
          x.data(), 3, y.data(), 3, 1, 3, eps, smax::kernels::softpick_algorithm::automatic);
      const auto ref = smax::reference::softpick(x.data(), 3, static_cast<long double>(eps));
      for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(matches(y[i], ref[i], rtol, std::numeric_limits<T>::min(), i))
            << "m = " << m << ", eps = " << eps;
    }
}

// softpick_backward's error at the first maximum k*, where the eps term -c·eps/S' is added: with
// eps = 1e300 on a row of 100s (double) dx there was 3.3e-14 off, relative, against a bound of
// about 1e-300·|dy|; float [3.7 x67, 0] with eps = 1e30 (avx512bw, rows of 68) was 1 ulp off,
// 9.7e-37 against a bound of 2.1e-36 that had no eps term. The bound as now stated:
// 8·r·(e^(x_k - m)/S'·(|dy_k| + |c| + sum |dy·y|) + [k = k*]·eps/S'·(|c| + sum |dy·y|)).
TYPED_TEST(fuzz_findings, softpick_backward_stated_bound_with_large_eps) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double r = sizeof(T) == 4 ? 1e-6 : 1e-14;
  const double eps = sizeof(T) == 4 ? 1e30 : 1e300;
  using table = smax::kernels::softpick_table<typename TypeParam::arch>;
  auto check = [&](std::vector<T> const& x, std::vector<T> const& dy, const char* what) {
    const std::size_t n = x.size();
    std::vector<T> y(n), dx = dy;  // in place: dx = dy, as the fuzzer found it
    table::forward(x.data(), n, y.data(), n, 1, n, eps,
                   smax::kernels::softpick_algorithm::automatic);
    table::backward(x.data(), n, y.data(), n, dx.data(), n, dx.data(), n, 1, n, eps);
    std::vector<long double> dyl(dy.begin(), dy.end());
    const auto ref =
        smax::reference::softpick_backward(x.data(), dyl, n, static_cast<long double>(eps));
    long double m = -HUGE_VALL;
    for (T v : x) m = std::max<long double>(m, v);
    long double s = eps, c = 0, abs_c = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == -infinity<T>) continue;
      const long double v = x[i];
      s += std::fabs(v > 0 ? std::exp(v - m) * -std::expm1(-v) : std::expm1(v) * std::exp(-m));
      c += dyl[i] * y[i];
      abs_c += std::fabs(dyl[i] * y[i]);
    }
    const std::size_t k_star = static_cast<std::size_t>(std::find(x.begin(), x.end(), T(m)) - x.begin());
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == -infinity<T>) continue;
      const long double w = std::exp(static_cast<long double>(x[i]) - m) / s;
      const long double b = w * (std::fabs(dyl[i]) + std::fabs(c) + abs_c) +
                            (i == k_star ? eps / s * (std::fabs(c) + abs_c) : 0);
      EXPECT_LE(std::fabs(static_cast<double>(dx[i] - ref[i])), static_cast<double>(8 * r * b))
          << what << " at " << i;
    }
  };
  std::vector<T> x(74, T(100));
  x[49] = -infinity<T>;
  check(x, random_row<T>(74, 2e6, 0, 5), "row of 100s");
  std::vector<T> x2(68, T(3.7));
  x2[67] = 0;
  for (unsigned seed = 0; seed < 20; ++seed) check(x2, random_row<T>(68, 2.0, 0, seed), "[3.7 x67, 0]");
}

// SSMax whose λ·max overflows: double s = 1e300, n = 18 (λ = 2.9e300) on [4.9e-324, 1e30 x2350,
// 2.2e-308, 1e30 x928] was a NaN row; want uniform over the 1e30 entries, 0 elsewhere.
TYPED_TEST(fuzz_findings, ssmax_lambda_times_max_overflows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 3280;
  std::vector<T> x(n, T(1e30)), y(n);
  x[0] = std::numeric_limits<T>::denorm_min();
  x[2351] = std::numeric_limits<T>::min();
  smax::ssmax_options o;
  o.s = sizeof(T) == 4 ? 1e10 : 1e300;
  o.bias = 0.5;
  o.n = 18;
  smax::api::ssmax_family::forward(typename TypeParam::arch{}, x.data(), n, y.data(), n, 1, n, o,
                                   smax::api::algorithm_choice::automatic);
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_TRUE(matches(y[i], x[i] == T(1e30) ? 1.0L / (n - 2) : 0.0L,
                        sizeof(T) == 4 ? 1e-6 : 1e-14, std::numeric_limits<T>::min(), i));
}

// double SSMax with a tiny λ on large entries: λ = 1e-30·ln 1000, 95 copies of 1e38 with one at
// nextafter(1e38, 0) gave 1.76e-11 relative error, bound 1e-14 + |x - m|·|λ|·2^-51. The error was
// the reference's: exp(λ·x_i - max λ·x) carried the rounding of λ·x_i (|λ·x|·2^-64) into every
// output; it now scales the difference, λ·(x_i - m). λ = 1e-25 on the same row was 2.8e-7 off.
TYPED_TEST(fuzz_findings, ssmax_tiny_lambda_on_large_entries) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  std::vector<T> x(95, T(1e38)), y(95);
  x[60] = std::nextafter(T(1e38), T(0));
  for (double s : {1e-30, 1e-25 / std::log(1000.0), 1e-35}) {
    smax::ssmax_options o;
    o.s = s;
    o.n = 1000;
    smax::api::ssmax_family::forward(typename TypeParam::arch{}, x.data(), 95, y.data(), 95, 1, 95,
                                     o, smax::api::algorithm_choice::automatic);
    const long double lambda = s * std::log(1000.0L);
    const auto ref = smax::reference::ssmax(x.data(), 95, lambda);
    // The header's bound; λ's own rounding (to double, then T) is relative to λ here (b = 0).
    const double d = static_cast<double>(std::fabs(static_cast<long double>(x[0]) - x[60]));
    const double bound = (sizeof(T) == 4 ? 1e-6 + d * std::fabs((double)lambda) * 0x1p-22
                                         : 1e-14 + d * std::fabs((double)lambda) * 0x1p-51);
    for (std::size_t i = 0; i < 95; ++i)
      EXPECT_TRUE(matches(y[i], ref[i], bound, 0, i)) << "s = " << s;
  }
}

// A huge scale (SSMax's λ, softmax's 1/T) on a row of zeros and subnormals in a call of 1024
// elements or more: the flush-to-zero guard flushed differences x - m below the smallest normal
// number, and λ·(x - m) lost them (double, s = 1e300: 1.6e-10 relative, bound 1e-14).
TYPED_TEST(fuzz_findings, huge_scale_keeps_subnormal_differences) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 1302;
  std::vector<T> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::numeric_limits<T>::min() / T(8) * T(i % 7);
  smax::ssmax_options o;
  o.s = sizeof(T) == 4 ? 1e33 : 1e300;
  o.n = 18;
  smax::api::ssmax_family::forward(typename TypeParam::arch{}, x.data(), n, y.data(), n, 1, n, o,
                                   smax::api::algorithm_choice::automatic);
  const long double lambda = o.s * std::log(18.0L);
  const auto ref = smax::reference::ssmax(x.data(), n, lambda);
  // The header's bound: |x_i - m|·|λ|·2^-22 (2^-51) and λ's rounding are below 1e-8 here.
  for (std::size_t i = 0; i < n; ++i)
    EXPECT_TRUE(matches(y[i], ref[i], sizeof(T) == 4 ? 1.01e-6 : 1.01e-14,
                        std::numeric_limits<T>::min(), i));
  const T t = static_cast<T>(1 / lambda);
  for (auto a : all_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, false, x, t)));
}

// A scale 1/T beyond 2^900 (float 2^120) with |max/T| inside exp_minus_shift's range: ln2·T, the
// shift's low step, was subnormal and the range reduction inexact. Double, log-softmax through
// the online state, T = 6.7893149e-305, x = [0 x9, -inf, 0 x30, 3.13151306e-294, 0 x22,
// 2.22507386e-308]: the maximum's entry was -1.42e-9, want 0 (the state's sum was 1 + 1.8e-9).
TYPED_TEST(fuzz_findings, online_state_at_a_scale_beyond_two_to_the_900) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = typename TypeParam::table;
  struct row_case {
    T max, t, tail;
  };
  const row_case cases[] = {
      sizeof(T) == 8 ? row_case{T(3.13151306e-294), T(6.7893149e-305), T(2.22507386e-308)}
                     : row_case{T(1e-32), T(1e-37), T(1e-38)},
      sizeof(T) == 8 ? row_case{T(1e-290), T(1e-300), T(0)} : row_case{T(1e-33), T(3.3e-39), T(0)},
  };
  for (auto const& c : cases)
    for (std::size_t n : {std::size_t(64), TypeParam::width + 1, std::size_t(5000)}) {
      std::vector<T> x(n, T(0));
      x[9 % n] = -infinity<T>;
      x[(n * 5) / 8] = c.max;
      x[n - 1] = c.tail;
      T max;
      double sum;
      table::online_reduce(x.data(), n, c.t, &max, &sum);
      EXPECT_EQ(max, c.max);
      EXPECT_EQ(sum, 1.0) << "n " << n << ", T " << c.t;  // every other term underflows
      for (bool log : {false, true}) {
        expect_online_state_matches<TypeParam>(x, c.t, log);
        for (auto a : all_algorithms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, c.t)));
      }
    }
}

// MultiMax's bound was stated linearised, 1e-6 + δ_i with δ_i = 2^-20·(W_i + max W): float,
// t = r = (-1000 x4), entries near 0 (σ ~ -1e9, rounded by 64) turned an output of 2.9e-20 into
// 0.042, far beyond δ_i. The rounding of σ passes through exp: the bound is (1 + 1e-6)·e^δ_i - 1
// (multimax.hpp). Here that is vacuous for the small outputs (e^δ overflows), so the test also
// holds the row to the contract: finite, within [0, 1], summing to 1.
TYPED_TEST(fuzz_findings, multimax_bound_through_exp) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  smax::kernels::multimax_parameters<T> p{};
  smax::reference::multimax_parameters q;
  for (int k = 0; k < 4; ++k) p.t[k] = p.r[k] = T(-1000), q.t[k] = q.r[k] = -1000;
  const std::size_t n = 37;
  std::vector<T> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = T(1e-5) * T(i % 11) - T(2e-5) * T(i % 3);
  smax::kernels::multimax_table<typename TypeParam::arch>::forward(x.data(), n, y.data(), n, 1, n,
                                                                   p);
  const auto ref = smax::reference::multimax(x.data(), n, q);
  const double wscale = sizeof(T) == 4 ? 0x1p-20 : 0x1p-49, rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  std::vector<long double> w(n);
  long double max_w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double a = std::fabs(static_cast<long double>(x[i])) + 1000;
    w[i] = 2001 * a + 2000 * a * a;
    max_w = std::max(max_w, w[i]);
  }
  long double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(y[i]) && y[i] >= T(0) && y[i] <= T(1)) << "at " << i << ": " << y[i];
    sum += y[i];
    const double bound = (1 + rtol) * std::exp(wscale * static_cast<double>(w[i] + max_w)) - 1;
    EXPECT_TRUE(matches(y[i], ref[i], bound, std::numeric_limits<T>::min(), i));
  }
  EXPECT_NEAR(static_cast<double>(sum), 1.0, sizeof(T) == 4 ? 1e-5 : 1e-13);
}

// The blocked three-pass form (the automatic choice for rows over 16 KiB), double, with max/T
// overflowing: T = 1e-300 on 1624 entries of about ±1e36 was NaN. Ties of the maximum in both
// blocks, a block of only negative entries, and masks.
TYPED_TEST(fuzz_findings, blocked_three_pass_max_over_t_overflows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T t = sizeof(T) == 4 ? T(1e-30) : T(1e-300);
  for (std::size_t n : {std::size_t(1624), std::size_t(5000)}) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      std::vector<T> x(n);
      for (std::size_t i = 0; i < n; ++i)
        x[i] = (i % 3 == 0 ? T(-1) : T(1)) * T(1e36) * (T(1) + T(i % 97) * T(1e-3));
      if (pattern == 1)
        for (std::size_t i = 0; i < n / 2; ++i) x[i] = -std::fabs(x[i]);
      if (pattern == 2) x[5] = x[n - 3] = -infinity<T>;
      x[n - 1] = x[n / 3] = T(2e36);
      for (bool log : {false, true})
        for (auto a :
             {algorithm_id::automatic, algorithm_id::blocked_three_pass, algorithm_id::online})
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t)))
              << "n = " << n << ", pattern " << pattern;
    }
  }
}

// log_stablemax_backward's bound is against the VJP at the z it is given (stablemax.hpp): the
// StableMax fuzzer's first run found double rows of entries near ±1e37 (3389 of them) where dx,
// from the kernel's own z, was 3.6e-15 relative from the VJP at the exact z, over 16ε: z's own
// error, 1e-14·(|z| + 1 + log n), enters exp(z)·Σdy. Against the VJP at the given z, within 16ε.
TYPED_TEST(fuzz_findings, stablemax_backward_at_the_given_output) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::stablemax_table<typename TypeParam::arch>;
  const double eps = sizeof(T) == 4 ? 0x1p-23 : 0x1p-52;
  // The second row is like the fuzzer's second finding (2803 entries near ±4e19, gradients up to
  // 1e30): Σdy was summed sequentially, its rounding growing with n (3.7e-15 of dx, over 16ε).
  for (int row = 0; row < 2; ++row) {
    const std::size_t n = row == 0 ? 3389 : 2803;
    const auto x = row == 0 ? random_row<T>(n, 1e38, 0, 11) : random_row<T>(n, 1e20, 0, 13);
    auto dy = row == 0 ? random_row<T>(n, 4, 0, 12) : random_row<T>(n, 2e30, 0, 14);
    if (row == 1)
      for (std::size_t i = 0; i < n; i += 3) dy[i] *= T(1e-20);
    for (bool log : {false, true}) {
      std::vector<T> y(n), dx(n);
      table::forward(x.data(), n, y.data(), n, 1, n, log);
      table::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n, log);
      std::vector<long double> p(n);
      long double dot = 0, total = 0, weighted = 0, abs_total = 0;
      for (std::size_t i = 0; i < n; ++i) {
        p[i] = log ? std::exp(static_cast<long double>(y[i])) : static_cast<long double>(y[i]);
        dot += p[i] * dy[i];
        total += dy[i];
        weighted += p[i] * std::fabs(static_cast<long double>(dy[i]));
        abs_total += std::fabs(static_cast<long double>(dy[i]));
      }
      for (std::size_t i = 0; i < n; ++i) {
        const long double g = 1 / (1 + std::fabs(static_cast<long double>(x[i])));
        const long double d = dy[i];
        const long double want = log ? g * (d - p[i] * total) : g * p[i] * (d - dot);
        const long double bound =
            16 * eps * g *
                (log ? std::fabs(d) + p[i] * abs_total : p[i] * std::fabs(d) + p[i] * weighted) +
            std::numeric_limits<T>::min();
        EXPECT_LE(std::fabs(dx[i] - want), bound)
            << "at " << i << (log ? ", log" : "") << ", row " << row;
      }
    }
  }
}

// Seeded Gumbel noise across counter 2^64 - 1 (found by gumbel_softmax_fuzz): element k of a call is k = offset + i in 64-bit arithmetic and its
// noise a function of (seed, k) alone, so a call that runs past 2^64 - 1 must give elements
// 0, 1, ... the noise of a call at offset 0. Float on AVX2 (two groups of 64 drawn at once) and
// AVX-512 (four, once the call needs them all) drew them from group 2^58 instead: seed
// 18446743922796190940, offset 2^64 - 1, n = 8 on AVX2 gave 4.2432761 for element 0, want
// -1.1684583. Fixed: the groups count modulo 2^58.
TYPED_TEST(fuzz_findings, gumbel_float_noise_wraps_at_two_to_the_64) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::gumbel_softmax_table<typename TypeParam::arch>;
  const std::uint64_t seed = 18446743922796190940ull;
  for (std::uint64_t before : {1u, 2u, 63u, 64u, 200u})
    for (std::size_t after : {std::size_t(7), std::size_t(64), std::size_t(300)}) {
      const std::uint64_t offset = 0 - before;  // the call runs from 2^64 - before to after - 1
      const std::size_t n = static_cast<std::size_t>(before) + after;
      std::vector<T> across(n), at_zero(after), at_offset(static_cast<std::size_t>(before));
      table::noise(across.data(), n, seed, offset);
      table::noise(at_offset.data(), at_offset.size(), seed, offset);
      table::noise(at_zero.data(), after, seed, 0);
      for (std::size_t i = 0; i < at_offset.size(); ++i)
        EXPECT_TRUE(same_bits_or_both_nan(across[i], at_offset[i]))
            << "element 2^64 - " << before - i << ", call of " << n;
      for (std::size_t i = 0; i < after; ++i) {
        const std::size_t k = static_cast<std::size_t>(before) + i;
        EXPECT_TRUE(same_bits_or_both_nan(across[k], at_zero[i]))
            << "element " << i << " after the wrap, call of " << n << ": " << across[k]
            << ", at offset 0 " << at_zero[i] << ", reference "
            << static_cast<double>(smax::reference::gumbel_noise<T>(seed, i));
      }
    }
}

// softmax_topk's backward when <g, y>/T lies beyond T's range (found by softmax_topk_fuzz):
// dx* = y·(g - <g, y>)/T is
// exactly 0 where y = 0 and beyond the range (±inf) where y·<g, y>/T is; the kernel folded
// -<g, y>/T into the normaliser in T, where it overflowed, and wrote NaN for every entry outside
// the selection (float x = [0, 1, 0, 1, ...] of 2221, k = 1, T = 1e-20, dvalues 1e30: dx[0] NaN,
// want 0). softmax_backward on the same y and g gives 0 and ±inf. Fixed: such rows take their
// entries one by one, the factor kept in long double and applied as mantissa·2^exponent.
TYPED_TEST(fuzz_findings, softmax_topk_backward_factor_beyond_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::softmax_topk_table<typename TypeParam::arch>;
  const T temperature = sizeof(T) == 4 ? T(1e-20) : T(1e-300);
  for (std::size_t n : {std::size_t(16), std::size_t(2221)}) {
    std::vector<T> x(n), dx(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = T(i & 1);
    const std::size_t k = 1;
    T value = T(0);
    std::int64_t index = -1;
    const T dvalue = T(1e30);
    table::forward(x.data(), n, 1, n, k, &value, &index, temperature);
    ASSERT_EQ(index, 1);
    table::backward(x.data(), n, 1, n, k, &index, &dvalue, dx.data(), n, temperature);
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == T(0))
        EXPECT_EQ(dx[i], T(0)) << "n = " << n << ", at " << i << " (y = 0)";
      else
        EXPECT_TRUE(std::isinf(dx[i]) && (i == 1 ? dx[i] > 0 : dx[i] < 0))
            << "n = " << n << ", at " << i << ": " << dx[i];
    }
  }
}

// softmax_topk's backward for entries whose probability is below T's smallest normal number
// (found by softmax_topk_fuzz):
// dx*_i = -y*_i·<g, y*>/T outside the selection is a normal number when <g, y*>/T is large, and
// the header lets only gradients below FLT_MIN (DBL_MIN) be flushed; the kernel gave 0 (float
// x = [0, -100, ...] with k = 1 and dvalue 1e30: dx*_1 = -3.7e-14; double x_1 = -740: dx*_1 =
// -4.2e-292). Fixed with the finding above: exp((x - m)/T) is taken shifted by K·ln2 and the
// factor's 2^(exponent - K) applied last.
TYPED_TEST(fuzz_findings, softmax_topk_backward_tiny_probability) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::softmax_topk_table<typename TypeParam::arch>;
  const T far = sizeof(T) == 4 ? T(-100) : T(-740);
  const std::size_t n = 40;
  for (std::size_t at : {std::size_t(1), std::size_t(17), std::size_t(39)}) {
    std::vector<T> x(n, T(-1e4)), dx(n);
    x[0] = T(0);
    x[at] = far;
    T value = T(0);
    std::int64_t index = -1;
    const T dvalue = T(1e30);
    table::forward(x.data(), n, 1, n, 1, &value, &index, T(1));
    ASSERT_EQ(index, 0);
    table::backward(x.data(), n, 1, n, 1, &index, &dvalue, dx.data(), n, T(1));
    const long double e = std::exp(static_cast<long double>(far)), y0 = 1 / (1 + e), y = e * y0;
    const long double want = -y * (static_cast<long double>(dvalue) * y0);
    // The header's bound: (e_i + 2E)·y_i·(|g_i| + sum_j |g_j·y_j|)/T with e_i = E = 2^-19 (2^-45).
    const long double bound = 3 * (sizeof(T) == 4 ? 0x1p-19L : 0x1p-45L) * y * dvalue * y0;
    EXPECT_LE(std::fabs(dx[at] - want), bound)
        << "at " << at << ": " << dx[at] << ", want " << static_cast<double>(want);
  }
}

// 1.5-entmax's support size against its outputs (found by entmax15_fuzz): docs/entmax15.md says
// an entry exactly at the threshold gives 0 and is not in the support, and that support_size
// counts exactly the entries with a positive difference. [0, 1, 0, 1, 0, 1, 0, 1, 0, -0 x15]
// (t* = -0.5 exactly) gave support_size 24 and 4 nonzero outputs (float); a double row of 135
// holding 3 x4, 4 - 2^-51 and 3 x4 (t* = -0.5 - 2^-54, which rounds to -0.5) gave support_size 7
// and 4 nonzero outputs. The threshold's count was taken before its root was refined; the
// threshold call now counts the positive differences on the row, as the write pass forms them.
TYPED_TEST(fuzz_findings, entmax15_support_size_at_the_threshold) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::entmax15_table<typename TypeParam::arch>;
  std::vector<T> tie = {T(0), T(1), T(0), T(1), T(0), T(1), T(0), T(1), T(0)};
  tie.resize(24, T(-0.0));
  std::vector<T> near = {T(2), T(3), T(3), T(1), T(4), T(4), T(0), T(-2), T(0), T(-2), T(2),
                         T(3), T(0), T(-2), T(4), T(2), T(-2), T(0), T(2), T(-3), T(-1), T(1),
                         T(-1), T(2), T(-2), T(2), T(3), T(-3), T(-1), T(2), T(2)};
  near.push_back(std::nextafter(T(4), T(0)));
  for (std::size_t pad : {std::size_t(0), std::size_t(104), std::size_t(4100)})
    for (const auto* base : {&tie, &near}) {
      std::vector<T> x = *base;
      x.resize(x.size() + pad, T(-0.0));
      const std::size_t n = x.size();
      for (auto algorithm : {smax::kernels::entmax15_algorithm::automatic,
                             smax::kernels::entmax15_algorithm::sort,
                             smax::kernels::entmax15_algorithm::filter}) {
        std::vector<T> y(n);
        table::forward(x.data(), n, y.data(), n, 1, n, algorithm);
        std::size_t nonzero = 0;
        for (T v : y) nonzero += v != T(0);
        const auto st = table::threshold(x.data(), n, algorithm);
        EXPECT_EQ(st.support_size, nonzero)
            << (base == &tie ? "tie" : "near") << " row, n = " << n << ", algorithm "
            << static_cast<unsigned>(algorithm);
      }
    }
}

// sparsemax_loss on a long support with one dominant entry: double [0, -0.785645573 x1968, -inf,
// -0.785645573 x1419], target 0 (avx512bw, found in CI) was 4.2e-14 off against the header's
// 2^-50·(1 + |L|) = 9.1e-16: the sum of (z - tau)² added thousands of terms near 4e-9 to a
// partial sum near 0.6, each rounded to its ulp. Also ties at -0.5 and -0.9, and float.
TYPED_TEST(fuzz_findings, sparsemax_loss_dominant_entry_over_a_long_support) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : std::ldexp(1.0, -50);
  for (double v : {-0.785645573, -0.5, -0.9})
    for (std::size_t n : {std::size_t(3389), std::size_t(20000)}) {
      std::vector<T> x(n, static_cast<T>(v));
      x[0] = T(0);
      x[1969] = -infinity<T>;
      for (std::size_t t : {std::size_t(0), std::size_t(5)}) {
        const T got = smax::kernels::sparsemax_table<typename TypeParam::arch>::loss(x.data(), n, t);
        const long double want = smax::reference::sparsemax_loss(x.data(), n, t);
        EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want),
                    eps * (1 + std::fabs(static_cast<double>(want))))
            << "v " << v << ", n " << n << ", target " << t;
      }
    }
}

// sigmoid_attention_backward at a product just below a power of two: float, x = [3.7 x114, inf,
// 3.7 x104], bias -5.38907194, in place (rows 3 x 219, ld 231; avx512bw, found in CI), dy
// 1.88579774 gave 0.248159215 for dy·y·(1 - y) = 0.248159245: 2.02 ulp against the stated 2.
// y·(1 - y) with 1 - y rounded (y = 0.156) cost up to 2.5 ulp; the bound is now 1.5 ulp with an
// FMA (y - y·y in one rounding), 2.5 on SSE2. Also dy one and two floats either side.
TYPED_TEST(fuzz_findings, sigmoid_backward_product_below_a_power_of_two) {
  using T = typename TypeParam::value_type;
  using A = typename TypeParam::arch;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 3, cols = 219, ld = 231;
  std::vector<T> y(rows * ld, static_cast<T>(3.70000005f));
  for (std::size_t r = 0; r < rows; ++r) y[r * ld + 114] = infinity<T>;
  using table = smax::kernels::sigmoid_table<A>;
  table::forward(y.data(), ld, y.data(), ld, rows, cols, static_cast<T>(-5.38907194f));
  const double ulps = smax::detail::has_native_fma<A>::value ? 1.5 : 2.5;
  T d = static_cast<T>(1.88579774f);
  for (int k = 0; k < 2; ++k) d = std::nextafter(d, T(0));
  for (int k = 0; k < 5; ++k, d = std::nextafter(d, T(3))) {
    const std::vector<T> dy(rows * ld, d);
    std::vector<T> dx(rows * ld, T(-7));
    table::backward(y.data(), ld, dy.data(), ld, dx.data(), ld, rows, cols);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t i = 0; i < cols; ++i) {
        const long double yi = y[r * ld + i];
        const long double want = static_cast<long double>(d) * yi * (1 - yi);
        int e;
        std::frexp(static_cast<double>(want == 0 ? 1 : want), &e);
        const double bound = ulps * std::ldexp(1.0, e - std::numeric_limits<T>::digits);
        EXPECT_NEAR(static_cast<double>(dx[r * ld + i]), static_cast<double>(want), bound)
            << "dy " << d << ", at " << r << ", " << i;
      }
  }
}

}  // namespace
