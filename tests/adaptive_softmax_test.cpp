// Adaptive-temperature softmax (smax/adaptive_softmax.hpp) on every compiled instruction set,
// float and double: against the long-double reference with the header's bound at every length
// around the vector width and on long rows, with masks at every lane, extreme values and special
// rows, rows whose entropy sits on the gates (0.5, 0.8486, 5.9445) on both sides and on the
// margin of the shortcut that skips the exact entropy; the invariants of the definition; the
// backward pass against the reference VJP with the header's bound, and the reference VJP against
// central differences of the reference.

#include <algorithm>
#include <cstring>

#include <smax/reference/adaptive_softmax.hpp>
#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

template <class C>
class adaptive_softmax_test : public ::testing::Test {};
TYPED_TEST_SUITE(adaptive_softmax_test, all_configs, config_names);

template <class C, class T>
std::vector<T> adaptive_of(std::vector<T> const& x) {
  std::vector<T> y(x.size() + 1, T(-7));  // one guard element past the end
  smax::kernels::adaptive_softmax_table<typename C::arch>::forward(
      x.data(), x.size(), y.data(), x.size(), x.empty() ? 0 : 1, x.size());
  EXPECT_EQ(y.back(), T(-7)) << "wrote past the end";
  y.pop_back();
  return y;
}

// The unit roundoff of T and the header's constants.
template <class T>
constexpr double unit = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
constexpr double max_slope = 2.5255;  // max |P'(H)| where β > 1
constexpr double max_beta = 2.4214;

// The header's forward bound for output k of a row (relative to y*_k) and the row's largest
// (over outputs >= the smallest normal number): ρ + 2^-22·β·|x_k - m| (4ε·β·|x_k - m| for
// double) + Δβ·|x_k - x̄|, Δβ = 2.5255·16ε·(1 + ln n) + ε·β.
template <class T>
struct forward_bound {
  std::vector<double> rel;
  double row = 0;         // φ: the largest rel[k] over the normal outputs
  double delta_beta = 0;  // Δβ
};

template <class T>
forward_bound<T> forward_bound_of(std::vector<T> const& x,
                                  smax::reference::adaptive_softmax_parts const& r) {
  const std::size_t n = x.size();
  forward_bound<T> b;
  b.rel.assign(n, 0);
  if (r.nan_row) return b;
  const double eps = unit<T>;
  const double delta_h = 16 * eps * (1 + std::log(static_cast<double>(n)));
  const double delta_beta = max_slope * delta_h + eps * static_cast<double>(r.beta);
  b.delta_beta = delta_beta;
  long double mean = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (r.y[j] > 0) mean += r.y[j] * static_cast<long double>(x[j]);
  for (std::size_t k = 0; k < n; ++k) {
    if (x[k] == -infinity<T>) continue;
    const long double from_max = r.max - static_cast<long double>(x[k]);
    const long double from_mean = std::fabs(static_cast<long double>(x[k]) - mean);
    b.rel[k] =
        static_cast<double>(softmax_rtol<T> + 4 * eps * r.beta * from_max + delta_beta * from_mean);
    if (r.y[k] >= std::numeric_limits<T>::min()) b.row = std::max(b.row, b.rel[k]);
  }
  return b;
}

template <class C, class T>
::testing::AssertionResult matches_adaptive_reference(std::vector<T> const& x) {
  const auto y = adaptive_of<C>(x);
  // (adaptive_softmax is parts_of's y, NaN for a NaN row: one reference pass, not two.)
  const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), x.size());
  const std::vector<long double> ref =
      r.nan_row ? std::vector<long double>(x.size(), NAN) : r.y;
  const auto bound = forward_bound_of(x, r);
  for (std::size_t i = 0; i < x.size(); ++i) {
    auto ok =
        matches(y[i], ref[i], r.nan_row ? 0.0 : bound.rel[i], std::numeric_limits<T>::min(), i);
    if (!ok)
      return ok << " [n = " << x.size() << ", H = " << static_cast<double>(r.entropy)
                << ", beta = " << static_cast<double>(r.beta) << "]";
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(adaptive_softmax_test, every_length_and_spread) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  for (std::size_t n = 0; n <= 16 * TypeParam::width + 1; ++n)
    for (double spread : {0.5, 2.0, 8.0, 20.0, 150.0})
      for (double offset : {0.0, -5.0, 7.0}) {
        const auto x = random_row<T>(n, spread, offset, static_cast<unsigned>(n + 7 * spread));
        EXPECT_TRUE((matches_adaptive_reference<TypeParam>(x)));
      }
  for (std::size_t n : {std::size_t(1000), std::size_t(4099), std::size_t(65537)}) {
    for (double spread : {2.0, 16.0, 40.0, 200.0})
      EXPECT_TRUE((matches_adaptive_reference<TypeParam>(random_row<T>(n, spread, -50.0, 3))));
    auto masked = random_row<T>(n, 30.0, 0.0, 5);
    for (std::size_t i = 0; i < n; i += 3) masked[i] = -infinity<T>;
    EXPECT_TRUE((matches_adaptive_reference<TypeParam>(masked)));
  }
  // A 10^6 row with its entropy in the active range (a few large entries over a flat floor):
  // the exact entropy pass on a long row, where the 1e-9 matters (Σ p·log(1 + 1e-9/p) ~ 1e-3).
  std::vector<T> big = random_row<T>(long_row(1000000), 1.0, -14.0, 11);
  for (std::size_t i = 0; i < big.size(); i += 50000) big[i] = T(2) + T(i % 7);
  EXPECT_TRUE((matches_adaptive_reference<TypeParam>(big)));
}

TYPED_TEST(adaptive_softmax_test, extreme_values_masks_and_special_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const T big = std::numeric_limits<T>::max(), inf = infinity<T>, nan = quiet_nan<T>;
  const T tiny = std::numeric_limits<T>::denorm_min(), small = std::numeric_limits<T>::min();
  const T f = static_cast<T>(3e38), g = static_cast<T>(1e38);
  const std::vector<std::vector<T>> rows = {
      {f, -f, g},                          // [1, 0, 0]
      {big, big, big, -big, T(0)},         // H = ln 3: β = P(ln 3) on ties at FLT_MAX
      {big, -big, big},                    // H = ln 2, x - m overflows to -inf
      {-big, -big, -big, -big},            // ties at -FLT_MAX: uniform, β = P(ln 4)
      {-big, T(-1e30), -f},                //
      {T(1000), T(-1000), T(0)},           //
      {T(1), T(2), T(3)},                  //
      {T(2), T(2), T(2), T(2)},            // all ties
      {T(-4), T(-4), T(1), T(1)},          // partial ties
      {T(5)},                              // n = 1: [1]
      {T(-5)},                             //
      {-inf, T(2), -inf, T(-3)},           // masked entries
      {T(1e-30), T(-1e-30), T(0), -T(0)},  // ties around 0
      {small, T(2) * small, tiny},         //
      {T(-1e-6), T(-3e-7), T(1e-7)},       // values near zero
      {-inf, -inf},                        // all masked: NaN
      {T(1), nan, T(2)},                   // NaN: NaN row
      {T(1), inf, T(2)},                   // +inf: NaN row
      {-inf, nan},                         // NaN beside masks
      {-inf, inf},                         //
  };
  for (auto const& x : rows) {
    EXPECT_TRUE((matches_adaptive_reference<TypeParam>(x)));
    for (std::size_t lane = 0; lane < 5 * TypeParam::width + 3; ++lane) {
      // The same values at every lane position of longer rows (register kernels and the fused
      // passes) of ordinary entries.
      for (std::size_t len : {2 * TypeParam::width + 3, 5 * TypeParam::width + 3}) {
        if (lane >= len) continue;
        auto row = random_row<T>(len, 4.0, 0.0, static_cast<unsigned>(lane + len));
        for (std::size_t k = 0; k < x.size() && lane + k < row.size(); ++k) row[lane + k] = x[k];
        EXPECT_TRUE((matches_adaptive_reference<TypeParam>(row))) << "lane " << lane;
      }
    }
  }
  // The exact figures: ties at FLT_MAX share the mass whatever β is.
  const auto y = adaptive_of<TypeParam>(std::vector<T>{big, big, big, -big, T(0)});
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], 1.0 / 3, 4 * unit<T>);
  EXPECT_EQ(y[3], T(0));
  EXPECT_EQ(y[4], T(0));
  const auto y2 = adaptive_of<TypeParam>(std::vector<T>{f, -f, g});
  EXPECT_EQ(y2[0], T(1));
  EXPECT_EQ(y2[1], T(0));
  EXPECT_EQ(y2[2], T(0));
  for (T v : {T(5), T(-5), big, -big, T(0)})
    EXPECT_EQ(adaptive_of<TypeParam>(std::vector<T>{v})[0], T(1)) << v;
  for (std::size_t len : {std::size_t(3), 5 * TypeParam::width + 3, std::size_t(1000)}) {
    // Masked outputs are +0, at every position; all-masked rows NaN.
    std::vector<T> x = random_row<T>(len, 10.0, -3.0, 9);
    for (std::size_t i = 0; i < len; i += 2) x[i] = -inf;
    const auto ym = adaptive_of<TypeParam>(x);
    for (std::size_t i = 0; i < len; i += 2) {
      EXPECT_EQ(ym[i], T(0)) << i;
      EXPECT_FALSE(std::signbit(ym[i])) << i;
    }
    for (T v : adaptive_of<TypeParam>(std::vector<T>(len, -inf))) EXPECT_TRUE(std::isnan(v));
  }
}

// x = [t, 0, ..., 0] (n entries) with t chosen (bisection on the reference's entropy) so that
// H lands on `target`, moved by `steps` units of T's last place in t.
template <class T>
std::vector<T> row_with_entropy(std::size_t n, long double target, int steps) {
  // The reference's H = -sum p log(p + 1e-9) of this row in closed form (t >= 0 is the maximum):
  // p_0 = 1/s, the n - 1 others e^-t/s, s = 1 + (n - 1) e^-t. A row-long reference call per
  // bisection step made this test the slowest of the suite under emulation.
  auto entropy = [&](T t) {
    const long double e = std::exp(-static_cast<long double>(t));
    const long double s = 1 + static_cast<long double>(n - 1) * e;
    const long double p0 = 1 / s, pi = e / s;
    return -(p0 * std::log(p0 + 1e-9L) + static_cast<long double>(n - 1) * pi * std::log(pi + 1e-9L));
  };
  // H decreases in t >= 0 once one entry dominates: from ln n at t = 0 towards 0.
  T lo = T(0), hi = T(60);
  for (int i = 0; i < 200; ++i) {
    const T mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) break;
    (entropy(mid) > target ? lo : hi) = mid;
  }
  T t = lo;
  for (int s = 0; s < std::abs(steps); ++s) t = std::nextafter(t, steps > 0 ? T(100) : T(-100));
  std::vector<T> x(n, T(0));
  x[0] = t;
  // The closed form is the reference's entropy (up to the order of its sum).
  EXPECT_NEAR(static_cast<double>(smax::reference::adaptive_softmax_parts_of(x.data(), n).entropy),
              static_cast<double>(entropy(t)), 1e-12);
  return x;
}

// Rows whose entropy sits on the gates (0.8486 and 5.9445, where P = 1; 0.5, where the H > 0.5
// test is redundant) and on the shortcut's margin, on both sides, short and long, shifted: β is
// continuous, so the bound holds whichever side the computed entropy falls on.
TYPED_TEST(adaptive_softmax_test, entropy_at_the_gates) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const long double gates[] = {0.5L, 0.848581996L, 5.944520828L};
  std::size_t checked = 0;
  // Under a sampling stride (CI's emulated run, where the long-double reference is software) the
  // offsets nearest the gate and the farthest.
  const std::vector<long double> offsets =
      exhaustive_stride() == 1
          ? std::vector<long double>{0.0L, 1e-7L, -1e-7L, 1e-4L, -1e-4L, 3e-3L, -3e-3L, 2e-2L, -2e-2L}
          : std::vector<long double>{0.0L, 1e-7L, -1e-7L, 2e-2L, -2e-2L};
  for (long double gate : gates)
    for (long double offset : offsets)
      for (std::size_t n :
           {std::size_t(3), 2 * TypeParam::width + 1, std::size_t(512), std::size_t(5000)}) {
        if (std::log(static_cast<long double>(n)) <= gate + offset) continue;
        for (int steps : {-1, 0, 1}) {
          auto x = row_with_entropy<T>(n, gate + offset, steps);
          EXPECT_TRUE((matches_adaptive_reference<TypeParam>(x))) << "gate " << double(gate);
          // Shifted and mixed into the lanes: the same H.
          std::rotate(x.begin(), x.begin() + n / 2, x.end());
          for (auto& v : x) v -= T(3.25);
          EXPECT_TRUE((matches_adaptive_reference<TypeParam>(x))) << "gate " << double(gate);
          ++checked;
        }
      }
  EXPECT_GT(checked, 50u);
}

// Batches: every row of a rows × cols call equals the same row alone, bit for bit, with special
// rows inside a group, padding between rows left untouched, and in place.
TYPED_TEST(adaptive_softmax_test, rows_equal_single_rows) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::adaptive_softmax_table<typename TypeParam::arch>;
  const std::size_t w = TypeParam::width;
  for (std::size_t cols : {std::size_t(1), std::size_t(2), w - 1, w, w + 1, 3 * w + 2, 4 * w,
                           4 * w + 1, 9 * w + 3, std::size_t(300), std::size_t(3000)})
    for (std::size_t rows : {std::size_t(1), std::size_t(3), std::size_t(4), std::size_t(9)}) {
      if (cols == 0) continue;
      const std::size_t ld = cols + 3;
      auto x = random_row<T>(rows * ld, 6.0, 0.5, static_cast<unsigned>(rows * 131 + cols));
      if (rows > 4) {
        x[5 * ld + cols / 2] = quiet_nan<T>;                                  // row 5: NaN
        for (std::size_t i = 0; i < cols; ++i) x[6 * ld + i] = -infinity<T>;  // row 6: masked
        x[7 * ld] = -infinity<T>;                                             // row 7: a mask
        for (std::size_t i = 0; i < cols; ++i) x[8 * ld + i] = T(0);          // row 8: uniform
      }
      std::vector<T> y(rows * ld, T(-7)), inplace = x;
      table::forward(x.data(), ld, y.data(), ld, rows, cols);
      table::forward(inplace.data(), ld, inplace.data(), ld, rows, cols);
      for (std::size_t r = 0; r < rows; ++r) {
        const std::vector<T> row(x.begin() + r * ld, x.begin() + r * ld + cols);
        const auto alone = adaptive_of<TypeParam>(row);
        for (std::size_t i = 0; i < cols; ++i) {
          ASSERT_TRUE(same_bits_or_both_nan(y[r * ld + i], alone[i]))
              << "row " << r << " of " << rows << ", cols " << cols << ", at " << i;
          ASSERT_TRUE(same_bits_or_both_nan(inplace[r * ld + i], alone[i]))
              << "in place, row " << r << ", cols " << cols << ", at " << i;
        }
        for (std::size_t i = cols; i < ld && r * ld + i < y.size(); ++i)
          ASSERT_EQ(y[r * ld + i], T(-7)) << "padding written";
      }
    }
}

// Σy = 1, shift invariance, β in [1, 2.4214] (read off two outputs), H(y) <= H(p), uniform rows
// (8: β = 2.12 and still uniform; 1000: H > 5.9445, softmax itself), masked entries taking no
// part in H.
TYPED_TEST(adaptive_softmax_test, invariants) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  const double eps = unit<T>;
  auto entropy_of = [](std::vector<T> const& p) {
    double h = 0;
    for (T v : p)
      if (v > 0) h -= v * std::log(static_cast<double>(v));
    return h;
  };
  for (std::size_t n : {std::size_t(2), std::size_t(7), std::size_t(2 * TypeParam::width + 1),
                        std::size_t(64), std::size_t(777), std::size_t(20000)})
    for (double spread : {1.0, 4.0, 12.0, 40.0}) {
      const auto x = random_row<T>(n, spread, 1.0, static_cast<unsigned>(n + spread));
      const auto y = adaptive_of<TypeParam>(x);
      double sum = 0;
      for (T v : y) sum += v;
      EXPECT_NEAR(sum, 1.0, 1e-5) << "n = " << n;
      // Shift invariance (up to the bound of each call).
      auto shifted = x;
      for (auto& v : shifted) v += T(17.5);
      const auto ys = adaptive_of<TypeParam>(shifted);
      const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
      const auto bound = forward_bound_of(x, r);
      for (std::size_t i = 0; i < n; ++i)
        if (y[i] >= std::numeric_limits<T>::min()) {
          EXPECT_NEAR(ys[i], y[i], 2.5 * bound.rel[i] * y[i] + std::numeric_limits<T>::min()) << i;
        }
      // β from the two largest distinct outputs: log(y_i/y_j)/(x_i - x_j).
      std::size_t a = 0, b = n > 1 ? 1 : 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (x[i] > x[a]) a = i;
        if (x[i] < x[b]) b = i;
      }
      if (x[a] - x[b] > 0.5 && y[b] > 1e-30) {
        const double beta = std::log(static_cast<double>(y[a]) / y[b]) / (x[a] - x[b]);
        EXPECT_GE(beta, 1 - 1e-4) << "n = " << n;
        EXPECT_LE(beta, max_beta + 1e-4) << "n = " << n;
      }
      std::vector<T> p(n);
      smax::softmax(x.data(), p.data(), n);
      EXPECT_LE(entropy_of(y), entropy_of(p) + 1e-5) << "n = " << n;
    }
  // uniform8: H = ln 8, β = P(ln 8) = 2.12, y uniform.
  for (T c : {T(0), T(-3), T(1e6)}) {
    const auto u8 = adaptive_of<TypeParam>(std::vector<T>(8, c));
    for (T v : u8) EXPECT_NEAR(v, 0.125, 4 * eps);
  }
  const std::vector<T> eight(8, T(0));
  const auto parts8 = smax::reference::adaptive_softmax_parts_of(eight.data(), 8);
  EXPECT_NEAR(static_cast<double>(parts8.beta), 2.1214, 1e-4);
  // Slightly perturbed, β is read off the outputs.
  std::vector<T> near8(8, T(0));
  near8[0] = T(0.01);
  const auto yn8 = adaptive_of<TypeParam>(near8);
  const auto partsn8 = smax::reference::adaptive_softmax_parts_of(near8.data(), 8);
  EXPECT_NEAR(static_cast<double>(partsn8.beta), 2.1214, 1e-4);
  EXPECT_NEAR(std::log(static_cast<double>(yn8[0]) / yn8[1]) / static_cast<double>(near8[0]),
              static_cast<double>(partsn8.beta), sizeof(T) == 4 ? 1e-3 : 1e-9);
  // uniform1000: H = ln 1000 > 5.9445, no sharpening: softmax.
  for (double spread : {0.0, 0.5}) {
    const auto x = random_row<T>(1000, spread, 0.0, 21);
    const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), x.size());
    EXPECT_GT(static_cast<double>(r.entropy), 5.9445);
    EXPECT_EQ(static_cast<double>(r.beta), 1.0);
    const auto y = adaptive_of<TypeParam>(x);
    std::vector<T> p(x.size());
    smax::softmax(x.data(), p.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], p[i], 2 * softmax_rtol<T> * p[i]) << i;
  }
  // Masked entries take no part in H: a row with masks gives the compacted row's outputs.
  for (std::size_t n : {std::size_t(5), std::size_t(40), std::size_t(600)}) {
    const auto x = random_row<T>(n, 6.0, 0.0, static_cast<unsigned>(3 * n));
    std::vector<T> masked;
    for (std::size_t i = 0; i < n; ++i) {
      masked.push_back(x[i]);
      if (i % 2 == 0) masked.push_back(-infinity<T>);
    }
    const auto y = adaptive_of<TypeParam>(x);
    const auto ym = adaptive_of<TypeParam>(masked);
    const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
    const auto bound = forward_bound_of(x, r);
    for (std::size_t i = 0, j = 0; i < n; ++i, ++j) {
      EXPECT_NEAR(ym[j], y[i], 2 * bound.rel[i] * y[i] + std::numeric_limits<T>::min()) << i;
      if (i % 2 == 0) {
        EXPECT_EQ(ym[++j], T(0));
      }
    }
  }
}

// The header's backward bound: |dx_k - dx*_k| <= 2ψ·(β·y*_k·(|dy_k| + Σ y*_j|dy_j|) + [β > 1]·
// p_k·(|ln(p_k + 1e-9)| + 2 + H)·(|P'(H)| + 1)·G) + 32·FLT_MIN·(|dy_k| + |c| + 1), with ψ = φ + Δβ,
// φ the forward's largest relative bound over the row, Δβ the error of β, and
// G = Σ y*_j·(|dy_j| + |c|)·(1 + |x_j - m|).
template <class T>
std::vector<long double> backward_bound(std::vector<T> const& x, std::vector<T> const& dy) {
  const std::size_t n = x.size();
  const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
  const auto fb = forward_bound_of(x, r);
  long double c = 0, ydy = 0;
  for (std::size_t j = 0; j < n; ++j) {
    c += r.y[j] * dy[j];
    ydy += r.y[j] * std::fabs(static_cast<long double>(dy[j]));
  }
  long double g = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (x[j] != -infinity<T>)
      g += r.y[j] * (std::fabs(static_cast<long double>(dy[j])) + std::fabs(c)) *
           (1 + (r.max - static_cast<long double>(x[j])));
  const long double slope =
      r.active ? std::fabs(smax::reference::adaptive_polynomial_slope(r.entropy)) + 1 : 0;
  std::vector<long double> bound(n);
  for (std::size_t k = 0; k < n; ++k) {
    const long double d = std::fabs(static_cast<long double>(dy[k]));
    bound[k] = 2 * (fb.row + fb.delta_beta) *
                   (r.beta * r.y[k] * (d + ydy) +
                    r.p[k] * (std::fabs(std::log(r.p[k] + 1e-9L)) + 2 + r.entropy) * slope * g) +
               32 * std::numeric_limits<T>::min() * (d + std::fabs(c) + 1);
  }
  return bound;
}

// Backward: against the long-double VJP, with the header's bound; masked entries 0; special rows
// NaN; dx aliasing dy, y or x.
TYPED_TEST(adaptive_softmax_test, backward) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::adaptive_softmax_table<typename TypeParam::arch>;
  const T big = std::numeric_limits<T>::max();
  std::vector<std::vector<T>> rows;
  for (std::size_t n :
       {std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(TypeParam::width + 1),
        std::size_t(64), std::size_t(100), std::size_t(1000), std::size_t(4099)})
    for (double spread : {1.0, 6.0, 12.0, 40.0}) {
      auto x = random_row<T>(n, spread, 2.0, static_cast<unsigned>(n + spread));
      if (n > 2) x[1] = -infinity<T>;
      rows.push_back(x);
    }
  rows.push_back({big, big, big, -big, T(0)});  // active on ties at FLT_MAX
  rows.push_back({T(3), T(-2), T(3), T(-2)});   //
  rows.push_back({T(0), T(0), T(0)});           // uniform, β = P(ln 3)
  rows.push_back({big, -big, T(1)});            // one-hot
  std::size_t active = 0;
  for (auto const& x : rows) {
    const std::size_t n = x.size();
    const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
    // Away from the gates (the derivative jumps there).
    if (std::fabs(static_cast<double>(r.entropy) - 0.848582) < 1e-3 ||
        std::fabs(static_cast<double>(r.entropy) - 5.944521) < 1e-3)
      continue;
    active += r.active;
    const auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 1));
    const auto y = adaptive_of<TypeParam>(x);
    std::vector<T> dx(n), in_dy = dy, in_y = y, in_x = x;
    table::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n);
    table::backward(x.data(), n, y.data(), n, in_dy.data(), n, in_dy.data(), n, 1, n);
    table::backward(x.data(), n, in_y.data(), n, dy.data(), n, in_y.data(), n, 1, n);
    table::backward(in_x.data(), n, y.data(), n, dy.data(), n, in_x.data(), n, 1, n);
    const auto want = smax::reference::adaptive_softmax_backward(x.data(), dy.data(), n);
    const auto bound = backward_bound(x, dy);
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isinf(x[i]) && x[i] < 0) {
        EXPECT_EQ(dx[i], T(0));
        continue;
      }
      EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
          << "n = " << n << ", i = " << i << ": " << dx[i] << " vs " << static_cast<double>(want[i])
          << ", H = " << static_cast<double>(r.entropy);
      EXPECT_TRUE(same_bits_or_both_nan(dx[i], in_dy[i])) << "dy == dx";
      EXPECT_TRUE(same_bits_or_both_nan(dx[i], in_y[i])) << "y == dx";
      EXPECT_TRUE(same_bits_or_both_nan(dx[i], in_x[i])) << "x == dx";
    }
  }
  EXPECT_GT(active, 10u);
  for (auto const& x : std::vector<std::vector<T>>{
           {T(1), quiet_nan<T>}, {T(1), infinity<T>}, {-infinity<T>, -infinity<T>}}) {
    const std::vector<T> y(2, quiet_nan<T>), dy(2, T(1));
    std::vector<T> dx(2);
    table::backward(x.data(), 2, y.data(), 2, dy.data(), 2, dx.data(), 2, 1, 2);
    EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
  }
}

// The backward bound holds from δH = 16ε·(1 + ln n) of a gate on (adaptive_softmax.hpp: the
// computed entropy is within δH of H*, so the backward takes H*'s side): rows whose entropy H* is
// 2δH above and below each gate, short and long, against the long-double VJP of H*'s side. The
// gates are solved here in long double (P(H) = 1), since δH is 1e-14 for double rows.
TYPED_TEST(adaptive_softmax_test, backward_at_twice_the_entropy_error_from_a_gate) {
  using T = typename TypeParam::value_type;
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  using table = smax::kernels::adaptive_softmax_table<typename TypeParam::arch>;
  auto solve_gate = [](long double lo, long double hi) {  // P - 1 changes sign on [lo, hi]
    const bool rising = smax::reference::adaptive_polynomial(lo) < 1;
    for (int i = 0; i < 200; ++i) {
      const long double mid = (lo + hi) / 2;
      if (mid == lo || mid == hi) break;
      ((smax::reference::adaptive_polynomial(mid) < 1) == rising ? lo : hi) = mid;
    }
    return lo;
  };
  const long double gates[] = {solve_gate(0.8L, 0.9L), solve_gate(5.9L, 6.0L)};
  const long double eps = sizeof(T) == 4 ? 0x1p-24L : 0x1p-53L;
  std::size_t checked = 0, active = 0;
  for (long double gate : gates)
    for (std::size_t n : {std::size_t(3), 2 * TypeParam::width + 1, std::size_t(512),
                          std::size_t(5000)})
      for (int side : {-1, 1}) {
        const long double delta_h = 16 * eps * (1 + std::log(static_cast<long double>(n)));
        if (std::log(static_cast<long double>(n)) <= gate + 2 * delta_h) continue;
        const auto x = row_with_entropy<T>(n, gate + side * 2 * delta_h, 0);
        const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
        // The row's own entropy (x rounded to T) is still more than δH from the gate.
        ASSERT_GT(std::fabs(r.entropy - gate), delta_h) << "n = " << n << ", side " << side;
        active += r.active;
        const auto dy = random_row<T>(n, 2.0, 0.3, static_cast<unsigned>(n + 3));
        const auto y = adaptive_of<TypeParam>(x);
        std::vector<T> dx(n);
        table::backward(x.data(), n, y.data(), n, dy.data(), n, dx.data(), n, 1, n);
        const auto want = smax::reference::adaptive_softmax_backward(x.data(), dy.data(), n);
        const auto bound = backward_bound(x, dy);
        for (std::size_t i = 0; i < n; ++i)
          EXPECT_LE(std::fabs(dx[i] - want[i]), bound[i])
              << "gate " << static_cast<double>(gate) << ", n = " << n << ", side " << side
              << ", i = " << i << ": " << dx[i] << " vs " << static_cast<double>(want[i]);
        ++checked;
      }
  EXPECT_GE(checked, 12u);
  EXPECT_GE(active, 6u);  // H* inside (0.8486, 5.9445): β > 1
}

// The reference VJP against central differences of the reference forward (long double), away
// from the gates: the formula, with the gradient through β, is the derivative. Also checks that
// the rows cover β > 1 and β = 1.
TEST(adaptive_softmax_reference, vjp_matches_finite_differences) {
  std::size_t active = 0, plain = 0;
  for (std::size_t n : {std::size_t(3), std::size_t(9), std::size_t(40), std::size_t(500)})
    for (double spread : {0.3, 2.0, 6.0, 30.0}) {
      const auto x = random_row<double>(n, spread, 0.5, static_cast<unsigned>(n + 10 * spread));
      const auto r = smax::reference::adaptive_softmax_parts_of(x.data(), n);
      if (std::fabs(static_cast<double>(r.entropy) - 0.848582) < 1e-3 ||
          std::fabs(static_cast<double>(r.entropy) - 5.944521) < 1e-3)
        continue;
      (r.active ? active : plain) += 1;
      const auto dy = random_row<double>(n, 2.0, 0.0, 18);
      const auto dx = smax::reference::adaptive_softmax_backward(x.data(), dy.data(), n);
      for (std::size_t k = 0; k < n; k += (n > 40 ? 37 : 1)) {
        const double h = 1e-6;
        auto xp = x, xm = x;
        xp[k] += h;
        xm[k] -= h;
        const auto yp = smax::reference::adaptive_softmax(xp.data(), n);
        const auto ym = smax::reference::adaptive_softmax(xm.data(), n);
        long double fd = 0;
        for (std::size_t i = 0; i < n; ++i) fd += dy[i] * (yp[i] - ym[i]) / (2 * h);
        EXPECT_NEAR(static_cast<double>(fd), static_cast<double>(dx[k]), 1e-7)
            << "n = " << n << ", spread " << spread << ", k = " << k;
      }
    }
  EXPECT_GT(active, 4u);
  EXPECT_GT(plain, 2u);
}

// The definition's figures, from the reference: the gates, the peak, uniform8.
TEST(adaptive_softmax_reference, gates_and_peak) {
  using smax::reference::adaptive_polynomial;
  EXPECT_LT(adaptive_polynomial(0.5L), 1);
  EXPECT_NEAR(static_cast<double>(adaptive_polynomial(0.848581996L)), 1.0, 1e-8);
  EXPECT_NEAR(static_cast<double>(adaptive_polynomial(5.944520828L)), 1.0, 1e-8);
  EXPECT_NEAR(static_cast<double>(adaptive_polynomial(4.4124L)), 2.42139, 1e-5);
  double worst_slope = 0;
  for (int i = 0; i <= 100000; ++i) {
    const long double h = 0.848581996L + (5.944520828L - 0.848581996L) * i / 100000;
    EXPECT_LE(adaptive_polynomial(h), 2.4214L);
    worst_slope = std::max(
        worst_slope, std::fabs(static_cast<double>(smax::reference::adaptive_polynomial_slope(h))));
  }
  EXPECT_LE(worst_slope, max_slope);
  // P <= 1 outside the gates, up to H = ln 2^64.
  for (int i = 0; i <= 10000; ++i) {
    const long double h = 44.4L * i / 10000;
    if (h < 0.848581L || h > 5.944521L) {
      EXPECT_LE(adaptive_polynomial(h), 1.0L) << double(h);
    }
  }
}

// The public forms: defaults, the _rows form and in place equal the single row; zero_masked_rows
// gives 0 for an all -inf row and dx = 0 there.
TEST(adaptive_softmax_api, forms_and_options) {
  const auto x = random_row<float>(300, 12.0, 0.0, 5);
  std::vector<float> a(300), b(x), c(300);
  smax::adaptive_softmax(x.data(), a.data(), x.size());
  smax::adaptive_softmax(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
  smax::adaptive_softmax_rows(x.data(), c.data(), 1, x.size(), x.size());
  EXPECT_EQ(a, c);
  const auto ref = smax::reference::adaptive_softmax(x.data(), x.size());
  EXPECT_NEAR(a[7], static_cast<double>(ref[7]), 1e-5 * static_cast<double>(ref[7]));
  const std::vector<float> masked(5, -infinity<float>), dy(5, 1.f);
  std::vector<float> y(5), dx(5);
  smax::adaptive_softmax(masked.data(), y.data(), 5);
  EXPECT_TRUE(std::isnan(y[0]));
  smax::adaptive_softmax_options zero;
  zero.zero_masked_rows = true;
  smax::adaptive_softmax(masked.data(), y.data(), 5, zero);
  EXPECT_EQ(y, std::vector<float>(5, 0.f));
  smax::adaptive_softmax_backward(masked.data(), y.data(), dy.data(), dx.data(), 5, zero);
  EXPECT_EQ(dx, std::vector<float>(5, 0.f));
  std::vector<double> xd(x.begin(), x.end()), yd(300), dyd(300, 0.5), dxd(300);
  smax::adaptive_softmax(xd.data(), yd.data(), xd.size());
  smax::adaptive_softmax_backward(xd.data(), yd.data(), dyd.data(), dxd.data(), xd.size());
  for (double v : dxd) EXPECT_NEAR(v, 0.0, 1e-12);  // dy constant: dx = 0
}

}  // namespace
