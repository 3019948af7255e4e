// softmax (smax/softmax.hpp) on every compiled instruction set, float and double, every
// algorithm: against the long-double reference on random and adversarial rows, at every length
// around the vector width and unroll factor, and the bad-input contract (docs/edge_cases.md).

#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class softmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(softmax_test, all_configs, config_names);

constexpr bool forms[] = {false, true};  // softmax, log-softmax: both share these kernels

TYPED_TEST(softmax_test, every_length_around_the_vector_width) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  // unroll 4: every n from 0 to 4·(width·4) + 1, each tail position and block count.
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n) {
    const auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(n));
    for (auto a : all_algorithms)
      for (bool log : forms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, x)));
  }
}

TYPED_TEST(softmax_test, large_rows_spreads_and_offsets) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n :
       {std::size_t(1000), std::size_t(4099), std::size_t(65537), long_row(1000003)})
    for (double spread : {20.0, 200.0})
      for (double offset : {0.0, 1000.0, -1000.0}) {
        if (n > 5000 && offset != 0.0) continue;  // offsets are about the subtraction, not n
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + spread));
        for (auto a : all_algorithms)
          for (bool log : forms)
            EXPECT_TRUE((matches_reference<TypeParam>(a, log, x)))
                << "spread " << spread << ", offset " << offset;
      }
}

// A masked entry (-inf) at every lane position: exactly 0 (-inf for log), excluded from the sum.
TYPED_TEST(softmax_test, masked_entry_at_every_position) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 4 * TypeParam::width + 3;
  for (std::size_t i = 0; i < n; ++i) {
    auto x = random_row<T>(n, 10.0, 0.0, 7);
    x[i] = -infinity<T>;
    if (i + 1 < n) x[i + 1] = -infinity<T>;
    for (auto a : all_algorithms)
      for (bool log : forms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, x))) << "masked at " << i;
  }
}

// E4: all masked gives NaN, or 0 / -inf with zero_masked_rows. E5/E6: +inf or NaN anywhere gives
// a NaN row, at every lane position.
TYPED_TEST(softmax_test, all_masked_inf_and_nan_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(1), std::size_t(3), 4 * TypeParam::width + 5}) {
    const std::vector<T> masked(n, -infinity<T>);
    for (auto a : all_algorithms)
      for (bool log : forms) {
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, masked)));
        std::vector<T> y(n);
        forward<TypeParam>(a, log, masked.data(), y.data(), n, T(1), true);
        for (T v : y) EXPECT_EQ(v, log ? -infinity<T> : T(0));
      }
    // A NaN among masked entries: the maximum (-inf) cannot tell, the row is still NaN.
    for (std::size_t i = 0; i < n; ++i) {
      auto x = masked;
      x[i] = quiet_nan<T>;
      for (auto a : all_algorithms)
        for (bool log : forms) {
          std::vector<T> y(n);
          forward<TypeParam>(a, log, x.data(), y.data(), n, T(1), true);
          for (T v : y) EXPECT_TRUE(std::isnan(v)) << "NaN at " << i << ", " << name_of(a);
        }
    }
    for (T special : {infinity<T>, quiet_nan<T>})
      for (std::size_t i = 0; i < n; ++i) {
        auto x = random_row<T>(n, 10.0, 0.0, 3);
        x[i] = special;
        for (auto a : all_algorithms)
          for (bool log : forms) {
            std::vector<T> y(n);
            forward<TypeParam>(a, log, x.data(), y.data(), n);
            for (T v : y)
              EXPECT_TRUE(std::isnan(v)) << special << " at " << i << ", " << name_of(a);
          }
      }
  }
}

// Rows the blocked three-pass form takes (more than two 8 KiB blocks): masked, NaN and +inf
// entries in the first, a middle and the last block, the row maximum in a later block than the
// first, temperatures, and batches (whose rows prefetch the next one) equal to single rows.
TYPED_TEST(softmax_test, blocked_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t block = smax::kernels::row_block<T>;
  const std::size_t n = 3 * block + 5;
  const algorithm_id blocked[] = {algorithm_id::blocked_three_pass, algorithm_id::automatic};
  const auto base = random_row<T>(n, 20.0, 0.0, 41);
  auto check = [&](std::vector<T> const& x, const char* what, T t = T(1)) {
    for (auto a : blocked)
      for (bool log : forms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t))) << what;
  };
  check(base, "random");
  check(base, "T = 0.5", T(0.5));
  check(base, "T = 2", T(2));
  auto late_max = base;
  late_max[n - 2] = T(40);  // the last block holds the maximum: the others are scaled down
  check(late_max, "maximum in the last block");
  for (std::size_t b : {std::size_t(0), std::size_t(1), std::size_t(3)}) {
    auto x = base;
    for (std::size_t i = b * block; i < std::min(n, (b + 1) * block); ++i) x[i] = -infinity<T>;
    check(x, "a masked block");
    x[b * block + 1] = quiet_nan<T>;  // a NaN the masked block's maximum cannot see
    for (auto a : blocked) {
      std::vector<T> y(n);
      forward<TypeParam>(a, false, x.data(), y.data(), n);
      for (T v : y) EXPECT_TRUE(std::isnan(v)) << "NaN in masked block " << b;
    }
  }
  for (T special : {infinity<T>, quiet_nan<T>})
    for (std::size_t i : {std::size_t(3), block + 7, n - 1}) {
      auto x = base;
      x[i] = special;
      for (auto a : blocked)
        for (bool log : forms) {
          std::vector<T> y(n);
          forward<TypeParam>(a, log, x.data(), y.data(), n);
          for (T v : y) EXPECT_TRUE(std::isnan(v)) << special << " at " << i;
        }
    }
  const std::vector<T> masked(n, -infinity<T>);
  for (auto a : blocked) {
    std::vector<T> y(n);
    forward<TypeParam>(a, false, masked.data(), y.data(), n);
    for (T v : y) EXPECT_TRUE(std::isnan(v));
    forward<TypeParam>(a, false, masked.data(), y.data(), n, T(1), true);
    for (T v : y) EXPECT_EQ(v, T(0));
  }
  // A batch of three such rows, ld > cols: each row as computed alone, bit for bit.
  const std::size_t rows = 3, ld = n + 3;
  const auto x = random_row<T>(rows * ld, 20.0, 0.0, 43);
  std::vector<T> y(rows * ld, T(-7)), single(n);
  TypeParam::table::forward(x.data(), ld, y.data(), ld, rows, n, T(1), 0u, algorithm_id::automatic);
  for (std::size_t r = 0; r < rows; ++r) {
    forward<TypeParam>(algorithm_id::automatic, false, x.data() + r * ld, single.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(y[r * ld + i], single[i]) << "row " << r << ", " << i;
    for (std::size_t i = n; i < ld && r + 1 < rows; ++i) EXPECT_EQ(y[r * ld + i], T(-7));
  }
}

// The fixed adversarial inputs (docs/accuracy.md), including ±FLT_MAX and subnormals.
TYPED_TEST(softmax_test, spec_inputs) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max();
  const T sub = std::numeric_limits<T>::denorm_min();
  const std::vector<std::vector<T>> rows = {
      {1, 2, 3},
      {5, 5, 5, 5, 5},
      {2, 2, 1, 1, 0},
      {-3, -2, -1, -7},
      {1000, -1000, 0},
      {T(3e38), T(-3e38), T(1e38)},
      {big, -big, big, -infinity<T>},
      {-big, -big},
      {sub, -sub, 0, T(1e-30)},
      {T(4)},
      {T(-4)},
  };
  for (auto const& x : rows)
    for (auto a : all_algorithms)
      for (bool log : forms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, x)));
  std::vector<T> y(3);
  const std::vector<T> huge = {T(3e38), T(-3e38), T(1e38)};
  for (auto a : all_algorithms) {
    forward<TypeParam>(a, false, huge.data(), y.data(), 3);
    EXPECT_EQ(y, (std::vector<T>{1, 0, 0})) << name_of(a);
  }
}

TYPED_TEST(softmax_test, temperature) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (T t : {T(0.5), T(2), T(0.01), T(100)}) {
    const auto x = random_row<T>(777, 20.0, 3.0, 11);
    for (auto a : all_algorithms)
      for (bool log : forms)
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t))) << "T = " << t;
  }
  // temp_huge_input: x/T computed first would overflow.
  const std::vector<T> huge = {T(3e38), T(-3e38), T(2.9e38)};
  for (auto a : all_algorithms)
    for (bool log : forms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, huge, T(0.5))));
  // Invalid temperatures give a NaN row (the public API also asserts in debug builds).
  for (T t : {T(0), T(-1), quiet_nan<T>, infinity<T>}) {
    std::vector<T> y(5);
    const std::vector<T> x = {1, 2, 3, 4, 5};
    forward<TypeParam>(algorithm_id::automatic, false, x.data(), y.data(), 5, t);
    for (T v : y) EXPECT_TRUE(std::isnan(v)) << "T = " << t;
  }
}

// Invariants: sum 1, range [0, 1], shift invariance, order preservation.
TYPED_TEST(softmax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t n = 1001;
  auto x = random_row<T>(n, 16.0, 0.0, 5);
  for (auto& v : x) v = std::round(v * T(1024)) / T(1024);  // on a 2^-10 grid, so x + 64 is exact
  std::vector<T> y(n), y_shifted(n), x_shifted(n);
  for (std::size_t i = 0; i < n; ++i) x_shifted[i] = x[i] + T(64);
  for (auto a : all_algorithms) {
    forward<TypeParam>(a, false, x.data(), y.data(), n);
    forward<TypeParam>(a, false, x_shifted.data(), y_shifted.data(), n);
    long double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += y[i];
      EXPECT_GE(y[i], T(0));
      EXPECT_LE(y[i], T(1));
      EXPECT_NEAR(y[i], y_shifted[i], 2 * softmax_rtol<T> * y[i]);
    }
    EXPECT_NEAR(static_cast<double>(sum), 1.0, n * std::numeric_limits<T>::epsilon());
    for (std::size_t i = 1; i < n; ++i)
      if (x[i] > x[i - 1]) {
        EXPECT_GE(y[i], y[i - 1]);
      }
  }
}

// The sum of a 16M-element row stays within 1e-5 of 1 (the anchors, summing in float lanes, reach
// 1e-3): blocked summation.
TYPED_TEST(softmax_test, sum_of_a_16m_row) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  if (sizeof(T) != 4) return;  // double has 2^29 times the headroom
  // (Cut under emulation, long_row: SSE2 runs the whole row natively with NEON's lane count.)
  const std::size_t n = long_row(std::size_t(1) << 24);
  const auto x = random_row<T>(n, 20.0, 0.0, 99);
  std::vector<T> y(n);
  for (auto a : all_algorithms) {
    forward<TypeParam>(a, false, x.data(), y.data(), n);
    // In double: 2^24 additions of terms of a sum <= 1 err by at most 2^24·2^-53 = 2e-9, far
    // below the bound (long double is software on AArch64, minutes under CI's emulation).
    double sum = 0;
    for (T v : y) sum += v;
    EXPECT_LE(std::fabs(sum - 1.0), 1e-5) << name_of(a);
  }
}

TYPED_TEST(softmax_test, rows_with_leading_dimension_and_in_place) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 5, cols = 37, ld = 40;
  auto x = random_row<T>(rows * ld, 20.0, 0.0, 21);
  for (bool log : forms) {
    std::vector<T> y(rows * ld, T(-7));
    TypeParam::table::forward(x.data(), ld, y.data(), ld, rows, cols, T(1),
                              log ? smax::kernels::flag_log : 0u, algorithm_id::automatic);
    for (std::size_t r = 0; r < rows; ++r) {
      std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols), expected(cols);
      forward<TypeParam>(algorithm_id::automatic, log, row.data(), expected.data(), cols);
      for (std::size_t c = 0; c < cols; ++c) EXPECT_EQ(y[r * ld + c], expected[c]);
      for (std::size_t c = cols; c < ld; ++c) EXPECT_EQ(y[r * ld + c], T(-7)) << "padding written";
    }
    for (auto a : all_algorithms) {  // in place gives the same bits as out of place
      auto inplace = x;
      std::vector<T> out(x.size());
      forward<TypeParam>(a, log, x.data(), out.data(), x.size());
      forward<TypeParam>(a, log, inplace.data(), inplace.data(), inplace.size());
      EXPECT_EQ(inplace, out) << name_of(a);
    }
  }
}

// Batches of short rows run four at a time through an interleaved kernel: every row must equal
// the single-row result bit for bit, special rows (NaN, all masked, +inf) included.
TYPED_TEST(softmax_test, short_row_batches_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 11;
  for (std::size_t cols : {std::size_t(1), TypeParam::width - 1, TypeParam::width,
                           3 * TypeParam::width + 1, 4 * TypeParam::width}) {
    auto x = random_row<T>(rows * cols, 20.0, 0.0, static_cast<unsigned>(cols));
    for (std::size_t c = 0; c < cols; ++c) x[1 * cols + c] = -infinity<T>;  // all masked
    x[2 * cols + cols / 2] = quiet_nan<T>;
    x[6 * cols] = infinity<T>;
    for (bool log : forms)
      for (bool zero_masked : {false, true}) {
        std::vector<T> y(rows * cols);
        const unsigned flags = (log ? smax::kernels::flag_log : 0u) |
                               (zero_masked ? smax::kernels::flag_zero_masked_rows : 0u);
        TypeParam::table::forward(x.data(), cols, y.data(), cols, rows, cols, T(1), flags,
                                  algorithm_id::automatic);
        for (std::size_t r = 0; r < rows; ++r) {
          std::vector<T> single(cols);
          forward<TypeParam>(algorithm_id::three_pass, log, x.data() + r * cols, single.data(),
                             cols, T(1), zero_masked);
          for (std::size_t c = 0; c < cols; ++c) {
            const T got = y[r * cols + c];
            if (std::isnan(single[c]))
              EXPECT_TRUE(std::isnan(got)) << "row " << r;
            else
              EXPECT_EQ(got, single[c]) << "row " << r << ", col " << c << ", cols " << cols;
          }
        }
      }
  }
}

// Softmax rows with |max·s| below the power-of-two shift's limit (primitives::
// power_of_two_shift_limit) take exp_minus_shift, the others exp_minus_max. Rows and blocks on both sides of it:
// long rows whose blocks (blocked three-pass, online) were exponentiated with different shifts,
// temperatures that move max·s across it, and batches of short rows that mix both kinds (each
// equal to its single row, bit for bit).
TYPED_TEST(softmax_test, rows_across_the_shift_limit) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double limit = smax::primitives::power_of_two_shift_limit<typename TypeParam::arch, T>();
  const std::size_t block = smax::kernels::row_block<T>;
  const std::size_t n = 4 * block + 9;
  for (double sign : {1.0, -1.0}) {
    // Block b lies near sign·limit, below it for even b and above it for odd b (spread 20).
    auto x = random_row<T>(n, 20.0, 0.0, 51);
    for (std::size_t i = 0; i < n; ++i) {
      const double side = (i / block) % 2 ? 12.0 : -12.0;
      x[i] = static_cast<T>(sign * limit + side + static_cast<double>(x[i]) / 4);
    }
    for (auto a : all_algorithms)
      for (bool log : forms)
        for (T t : {T(1), T(0.5), T(2)})
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, t)))
              << "sign " << sign << ", T = " << t;
  }
  // Short rows: every other row beyond the limit.
  const std::size_t rows = 9;
  for (std::size_t cols : {std::size_t(2), TypeParam::width, 3 * TypeParam::width + 1}) {
    auto x = random_row<T>(rows * cols, 20.0, 0.0, static_cast<unsigned>(cols + 5));
    for (std::size_t i = 0; i < rows * cols; ++i)
      x[i] = static_cast<T>(((i / cols) % 2 ? limit + 30.0 : limit - 30.0) +
                            static_cast<double>(x[i]));
    for (bool log : forms) {
      std::vector<T> y(rows * cols), single(cols);
      TypeParam::table::forward(x.data(), cols, y.data(), cols, rows, cols, T(1),
                                log ? smax::kernels::flag_log : 0u, algorithm_id::automatic);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<T> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
        EXPECT_TRUE((matches_reference<TypeParam>(algorithm_id::automatic, log, row)))
            << "row " << r;
        forward<TypeParam>(algorithm_id::three_pass, log, row.data(), single.data(), cols);
        for (std::size_t c = 0; c < cols; ++c)
          ASSERT_EQ(y[r * cols + c], single[c]) << "row " << r << ", col " << c;
      }
    }
  }
}

// Backward: against central finite differences of the long-double reference (small rows) and
// against the reference VJP (long rows); masked entries get 0; sum(dx) = 0.
TYPED_TEST(softmax_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double tol = sizeof(T) == 4 ? 2e-6 : 1e-11;
  for (T temperature : {T(1), T(0.7)})
    for (std::size_t n :
         {std::size_t(1), std::size_t(7), 2 * TypeParam::width + 1, std::size_t(40)}) {
      auto x = random_row<T>(n, 6.0, 0.0, static_cast<unsigned>(n));
      if (n > 3) x[2] = -infinity<T>;
      auto dy = random_row<T>(n, 2.0, 0.0, static_cast<unsigned>(n + 1));
      // A masked output's derivative is -inf - -inf to finite differences; the VJP formula gives
      // it -p_i (PyTorch's value), checked against the reference below. Here it gets dy = 0.
      if (n > 3) dy[2] = 0;
      for (bool log : forms) {
        std::vector<T> y(n), dx(n);
        forward<TypeParam>(algorithm_id::automatic, log, x.data(), y.data(), n, temperature);
        TypeParam::table::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, temperature,
                                   log ? smax::kernels::flag_log : 0u);
        // L(x) = <dy, f(x)>; dL/dx_i by central differences in long double.
        const smax::reference::options o{temperature, false};
        for (std::size_t i = 0; i < n; ++i) {
          if (x[i] == -infinity<T>) {
            EXPECT_EQ(dx[i], log ? dy[i] / temperature : T(0));
            continue;
          }
          const long double h = 0x1p-21L;  // ~ (long double epsilon)^(1/3): truncation ~ rounding
          std::vector<long double> xp(x.begin(), x.end()), xm(x.begin(), x.end());
          xp[i] += h;
          xm[i] -= h;
          const auto fp = smax::reference::softmax(xp.data(), n, log, o);
          const auto fm = smax::reference::softmax(xm.data(), n, log, o);
          long double d = 0;
          for (std::size_t j = 0; j < n; ++j)
            if (x[j] != -infinity<T>) d += dy[j] * (fp[j] - fm[j]) / (2 * h);
          EXPECT_NEAR(dx[i], static_cast<double>(d), tol * (1 + std::fabs(static_cast<double>(d))))
              << "i = " << i << ", n = " << n << (log ? ", log" : "");
        }
      }
    }
  const std::size_t n = 100003;
  const auto x = random_row<T>(n, 20.0, 0.0, 8);
  const auto dy = random_row<T>(n, 2.0, 0.0, 9);
  for (bool log : forms) {
    std::vector<T> y(n), dx(n);
    forward<TypeParam>(algorithm_id::automatic, log, x.data(), y.data(), n);
    TypeParam::table::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, T(1),
                               log ? smax::kernels::flag_log : 0u);
    const std::vector<long double> yl(y.begin(), y.end()), dyl(dy.begin(), dy.end());
    const auto ref = smax::reference::backward(yl, dyl, log);
    // The VJP subtracts two terms: its error is bounded relative to their magnitudes, not to the
    // difference, with the inner sum's error bounded by that of blocked summation (at most 16
    // float additions per lane before a fold into double) over sum |terms|.
    long double inner = 0;
    for (std::size_t i = 0; i < n; ++i) inner += std::fabs(log ? dyl[i] : dyl[i] * yl[i]);
    const double eps = std::numeric_limits<T>::epsilon();
    long double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      sum += dx[i];
      const long double terms = log ? std::fabs(dyl[i]) + std::exp(yl[i]) * std::fabs(inner)
                                    : std::fabs(yl[i]) * (std::fabs(dyl[i]) + std::fabs(inner));
      ASSERT_NEAR(dx[i], static_cast<double>(ref[i]), 16 * eps * static_cast<double>(terms))
          << "i = " << i << (log ? ", log" : "");
    }
    if (!log) {
      EXPECT_NEAR(static_cast<double>(sum), 0.0, 1e-6);
    }
  }
}

// Rows whose x/T is below the lowest finite value ([-1e30] at T = 1e-30): two_pass's x/T
// overflows to -inf, which must not be taken for a mask (the row is not masked: [1], or 1/n).
TYPED_TEST(softmax_test, scaled_row_below_the_lowest_finite_value) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool is_float = sizeof(T) == 4;
  const T low = is_float ? T(-1e30) : T(-1e300), tiny_t = is_float ? T(1e-30) : T(1e-10);
  const T lowest = std::numeric_limits<T>::lowest() * T(0.88);  // -3e38 (float)
  for (std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(3), 4 * TypeParam::width + 1,
                        16 * TypeParam::width + 3}) {
    for (auto a : all_algorithms)
      for (bool log : forms) {
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>(n, low), tiny_t)));
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>(n, lowest), T(0.5))));
        auto mixed = std::vector<T>(n, low);
        mixed[n / 2] = -infinity<T>;  // a real mask among them
        if (n > 1) {
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, mixed, tiny_t)));
        }
      }
  }
}

// Blocks of a long row whose maxima are -max and +max (found by the ssmax fuzzer through the
// softmax core, double, 2985 elements): the gap between the blocks' shifts overflowed and the
// blocked three-pass row came out NaN; want [1, 0, ...].
TYPED_TEST(softmax_test, blocks_whose_maxima_are_the_extremes) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>;
  std::vector<T> x;
  auto add = [&](T v, std::size_t k) { x.insert(x.end(), k, v); };
  add(big, 1);
  add(-inf, 113);
  add(-std::numeric_limits<T>::denorm_min(), 1);
  add(-inf, 1880);
  add(-big, 1);
  add(-inf, 854);
  add(T(1e30), 1);
  add(-inf, 134);
  for (auto a : all_algorithms)
    for (bool log : forms) EXPECT_TRUE((matches_reference<TypeParam>(a, log, x)));
}

// x - max beyond the largest finite value while (x - max)/T is finite (T > 1): the difference
// must not overflow before the division. softmax([3e38, -3e38], T = 1e38) = [0.9975, 0.0025];
// log_softmax([3e38, -3e38, 1e38], T = 3.7)[1] = -1.6216e38.
TYPED_TEST(softmax_test, difference_beyond_the_largest_finite_value) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max() * T(0.88);  // 3e38 (float), 1.6e308 (double)
  for (std::size_t n : {std::size_t(2), std::size_t(3), 4 * TypeParam::width + 1,
                        16 * TypeParam::width + 5, std::size_t(5000)}) {
    auto x = random_row<T>(n, 20.0, 0.0, static_cast<unsigned>(n));
    x[0] = big;
    x[1] = -big;
    if (n > 2) x[n - 1] = big / 3;
    for (auto a : all_algorithms)
      for (bool log : forms)
        for (T temperature : {big / 3, T(3.7), big / 100})
          EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, temperature)))
              << "T = " << temperature;
  }
}

// A single entry is exactly [1] ([0] for log-softmax) whatever the algorithm.
TYPED_TEST(softmax_test, single_entry_is_exact) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (T v : {T(100), T(5), T(-7), T(0.001), T(1e30), T(-1e30)})
    for (T temperature : {T(1), T(0.37), T(3)})
      for (auto a : all_algorithms) {
        T y = -7;
        forward<TypeParam>(a, false, &v, &y, 1, temperature);
        EXPECT_EQ(y, T(1)) << name_of(a) << " x = " << v << ", T = " << temperature;
        forward<TypeParam>(a, true, &v, &y, 1, temperature);
        EXPECT_EQ(y, T(0)) << name_of(a) << " log, x = " << v << ", T = " << temperature;
      }
}

// Regular rows, whose lane sums round the same way lane after lane: [0, 1, 0, 1, ...] and
// constant rows, at T = 1 and T = 1e6. two_pass's float lane sums once took 128 to 512 terms
// each (3.0e-6 at n = 16192 on SSE2, 1.9e-6 for 4095 copies of 3.7 at T = 1e6 on AVX-512,
// 1.008e-14 for a double constant row of 2860).
TYPED_TEST(softmax_test, regular_long_rows_within_the_bound) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n : {std::size_t(2860), std::size_t(3000), std::size_t(4095), std::size_t(8191),
                        std::size_t(16192)}) {
    std::vector<T> alternating(n);
    for (std::size_t i = 0; i < n; ++i) alternating[i] = T(i % 2);
    const std::vector<T> constant(n, T(3.7));
    for (auto a : all_algorithms)
      for (bool log : forms) {
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, alternating)));
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, constant)));
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, constant, T(1e6))));
        EXPECT_TRUE((matches_reference<TypeParam>(a, log, alternating, T(1e6))));
      }
  }
}

// Double rows whose max/T overflows double (1e300 at T = 1e-10): the online and blocked kernels'
// shifts max·(1/T) are then infinite and must not meet as inf - inf. Also the online state of
// such a chunk ({-1e300} at T = 1e-10 has sum 1).
TYPED_TEST(softmax_test, maximum_over_temperature_beyond_the_range) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const bool is_float = sizeof(T) == 4;
  const T huge = is_float ? T(3e38) : T(1e300);
  const T tiny_t = is_float ? T(1e-30) : T(1e-10), small_t = is_float ? T(1e-20) : T(1e-6);
  for (auto a : all_algorithms)
    for (bool log : forms) {
      EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>{huge, T(0)}, tiny_t)));
      EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>{-huge}, tiny_t)));
      EXPECT_TRUE((matches_reference<TypeParam>(a, log, std::vector<T>{huge * T(0.7)}, small_t)));
      // Three row blocks (online's and the blocked kernel's) whose maxima differ.
      auto x = random_row<T>(3 * 8192 / sizeof(T), 20.0, 0.0, 11);
      x[5] = huge / 2;
      x[x.size() - 9] = huge;
      EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, tiny_t)));
      for (auto& v : x) v = -v;  // the huge entries now the minima: (x - max)/T overflows
      EXPECT_TRUE((matches_reference<TypeParam>(a, log, x, tiny_t)));
    }
  T max = 0;
  double sum = 0;
  const T one = -huge;
  TypeParam::table::online_reduce(&one, 1, tiny_t, &max, &sum);
  EXPECT_EQ(max, -huge);
  EXPECT_EQ(sum, 1.0);
}

// The online state through the table at the temperatures above: chunks reduced apart, merged
// (smax::merge), normalised chunk by chunk, equal the whole row's reference.
TYPED_TEST(softmax_test, online_state_at_extreme_temperatures) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max() * T(0.88);
  const bool is_float = sizeof(T) == 4;
  struct row_case {
    std::vector<T> x;
    T temperature;
  };
  const row_case cases[] = {
      {{big, -big, big / 3}, big / 3},
      {{big, -big, big / 3}, T(3.7)},
      {{is_float ? T(-1e30) : T(-1e300), T(-1e30)}, is_float ? T(1e-30) : T(1e-10)},
      {{is_float ? T(3e38) : T(1e300), T(0)}, is_float ? T(1e-30) : T(1e-10)}};
  for (auto const& c : cases)
    for (bool log : forms) {
      const std::size_t n = c.x.size();
      smax::online_state<T> s;
      for (std::size_t i = 0; i < n; ++i) {
        smax::online_state<T> part;
        TypeParam::table::online_reduce(&c.x[i], 1, c.temperature, &part.max, &part.sum);
        s = smax::merge(s, part, {static_cast<double>(c.temperature), false});
      }
      std::vector<T> y(n);
      for (std::size_t i = 0; i < n; ++i)
        TypeParam::table::online_normalize(&c.x[i], &y[i], 1, c.temperature,
                                           log ? smax::kernels::flag_log : 0u, s.max, s.sum);
      const auto ref = smax::reference::softmax(c.x.data(), n, log,
                                                {static_cast<long double>(c.temperature), false});
      for (std::size_t i = 0; i < n; ++i) {
        const double bound = log ? 0x1p-22 * (std::fabs(static_cast<double>(ref[i])) + 2)
                                 : softmax_rtol<T> + 0x1p-22 * 6;
        EXPECT_TRUE(matches(y[i], ref[i], log ? 0.0 : bound, log ? bound : 0.0, i, !log))
            << (log ? "log, " : "") << "T = " << c.temperature;
      }
    }
}

// The backward bound where <dy, y> cancels (y = [0.33189312, 0.32246792, 0.34563896],
// dy = [-0.81112695, 0.0055932, 0.76367134]: dx_1 is 21 ulp off its two terms' magnitudes, which
// is not a bound): |dx_i - dx*_i| <= 2^-19·(1/T)·y_i·(|dy_i| + sum_j |dy_j·y_j|) (log-softmax:
// 2^-19·(1/T)·(|dy_i| + e^(z_i)·sum_j |dy_j|)); double 2^-48. dy is made orthogonal to y.
TYPED_TEST(softmax_test, backward_bound_where_the_inner_product_cancels) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double unit = sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;
  auto check = [&](std::vector<T> const& y, std::vector<T> const& dy, bool log, T temperature) {
    const std::size_t n = y.size();
    std::vector<T> dx(n);
    TypeParam::table::backward(y.data(), n, dy.data(), n, dx.data(), n, 1, n, temperature,
                               log ? smax::kernels::flag_log : 0u);
    const std::vector<long double> yl(y.begin(), y.end()), dyl(dy.begin(), dy.end());
    const auto ref = smax::reference::backward(yl, dyl, log, {temperature, false});
    long double inner = 0;
    for (std::size_t i = 0; i < n; ++i) inner += std::fabs(log ? dyl[i] : dyl[i] * yl[i]);
    for (std::size_t i = 0; i < n; ++i) {
      const long double terms =
          log ? std::fabs(dyl[i]) + std::exp(yl[i]) * inner : yl[i] * (std::fabs(dyl[i]) + inner);
      const double bound = unit * static_cast<double>(terms / temperature);
      if (!(std::fabs(static_cast<long double>(dx[i]) - ref[i]) <= bound))
        return ::testing::AssertionFailure()
               << "at " << i << ": " << dx[i] << " against " << static_cast<double>(ref[i])
               << ", bound " << bound << (log ? " (log)" : "") << ", n = " << n;
    }
    return ::testing::AssertionSuccess();
  };
  for (T temperature : {T(1), T(0.7), T(3)}) {
    EXPECT_TRUE(check({T(0.33189312), T(0.32246792), T(0.34563896)},
                      {T(-0.81112695), T(0.0055932), T(0.76367134)}, false, temperature));
    for (std::size_t n :
         {std::size_t(3), 2 * TypeParam::width + 1, std::size_t(1000), std::size_t(70000)})
      for (unsigned seed = 0; seed < 20; ++seed) {
        if (n > 1000 && seed > 1) break;
        const auto x = random_row<T>(n, 6.0, 0.0, seed);
        auto dy = random_row<T>(n, 2.0, 0.0, seed + 100);
        for (bool log : forms) {
          std::vector<T> y(n);
          forward<TypeParam>(algorithm_id::automatic, log, x.data(), y.data(), n);
          // dy minus its projection on y (on 1 for log-softmax): <dy, y> (sum dy) ~ 0.
          long double dot = 0, norm = 0;
          for (std::size_t i = 0; i < n; ++i) {
            const long double w = log ? 1.0L : static_cast<long double>(y[i]);
            dot += dy[i] * w;
            norm += w * w;
          }
          std::vector<T> d(n);
          for (std::size_t i = 0; i < n; ++i)
            d[i] = static_cast<T>(dy[i] - dot / norm * (log ? 1.0L : y[i]));
          EXPECT_TRUE(check(y, d, log, temperature)) << "seed " << seed;
        }
      }
  }
}

// Rows with a leading dimension (ld > cols), softmax and log-softmax: the same gradients as row
// by row.
TYPED_TEST(softmax_test, rows_backward_equals_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const std::size_t rows = 5;
  for (std::size_t cols :
       {std::size_t(1), std::size_t(3), 2 * TypeParam::width + 1, std::size_t(300)})
    for (bool log : forms)
      for (T temperature : {T(1), T(0.6)}) {
        const std::size_t ld = cols + 7;
        const auto x = random_row<T>(rows * ld, 8.0, 0.0, static_cast<unsigned>(cols));
        const auto dy = random_row<T>(rows * ld, 2.0, 0.0, static_cast<unsigned>(cols + 1));
        const unsigned flags = log ? smax::kernels::flag_log : 0u;
        std::vector<T> y(rows * ld);
        TypeParam::table::forward(x.data(), ld, y.data(), ld, rows, cols, temperature, flags,
                                  algorithm_id::automatic);
        EXPECT_TRUE(rows_equal_single_rows<T>(
            rows, cols, ld,
            [&](T* dx) {
              TypeParam::table::backward(y.data(), ld, dy.data(), ld, dx, ld, rows, cols,
                                         temperature, flags);
            },
            [&](std::size_t r, T* dx) {
              TypeParam::table::backward(y.data() + r * ld, cols, dy.data() + r * ld, cols, dx,
                                         cols, 1, cols, temperature, flags);
            }))
            << (log ? "log" : "softmax") << ", T = " << temperature;
      }
}

// The public, header-only API: every overload, both types, n = 0, in place.
TEST(softmax_api, overloads) {
  std::vector<float> x = {1, 2, 3, -HUGE_VALF}, y(4);
  smax::softmax(x.data(), y.data(), x.size());
  EXPECT_NEAR(y[2], 0.66524096f, 1e-7f);
  EXPECT_EQ(y[3], 0.0f);
  for (auto run :
       {+[](const float*a, float*b, std::size_t n) { smax::softmax(smax::three_pass, a, b, n); },
        +[](const float*a, float*b, std::size_t n) { smax::softmax(smax::online, a, b, n); },
        +[](const float*a, float*b, std::size_t n) { smax::softmax(smax::two_pass, a, b, n); }}) {
    std::vector<float> z(4);
    run(x.data(), z.data(), 4);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(z[i], y[i], 1e-7f);
  }
  std::vector<double> xd = {1, 2, 3}, yd(3);
  smax::softmax(xd.data(), yd.data(), 3, {2.0, false});
  EXPECT_NEAR(yd[2], std::exp(1.5) / (std::exp(0.5) + std::exp(1.0) + std::exp(1.5)), 1e-15);
  smax::softmax(x.data(), x.data(), 3);  // in place
  EXPECT_NEAR(x[2], 0.66524096f, 1e-7f);
  smax::softmax(static_cast<const float*>(nullptr), static_cast<float*>(nullptr), 0);  // E1
  std::vector<float> m(6, 0.f), my(6);
  m[3] = m[4] = -HUGE_VALF;
  smax::softmax_rows(m.data(), my.data(), 2, 2, 3, {1.0, true});
  EXPECT_EQ(my[0], 0.5f);
  EXPECT_EQ(my[3], 0.0f);  // row 1 is [-inf, -inf]: a zero row with zero_masked_rows
  std::vector<float> dy = {1, 0, 0}, dx(3);
  smax::softmax_backward(y.data(), dy.data(), dx.data(), 3);
  EXPECT_NEAR(dx[0], y[0] * (1 - y[0]), 1e-7f);
}

}  // namespace
