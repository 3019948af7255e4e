// The public online normaliser state (smax/online.hpp): streaming a row in chunks and merging
// partial states in any order gives the softmax of the whole row (docs/softmax.md).

#include <smax/smax.hpp>

#include "test_support.hpp"

namespace {

using namespace smax_test;

TEST(online_state, chunked_equals_whole_row) {
  const std::size_t n = 10007;
  const auto x = random_row<float>(n, 40.0, 0.0, 3);
  std::vector<float> whole(n), streamed(n);
  smax::softmax(x.data(), whole.data(), n);
  for (std::size_t chunk :
       {std::size_t(1), std::size_t(7), std::size_t(1000), std::size_t(4096), n}) {
    smax::online_state<float> s;
    for (std::size_t b = 0; b < n; b += chunk)
      s = smax::merge(s, smax::online_reduce(x.data() + b, std::min(chunk, n - b)));
    for (std::size_t b = 0; b < n; b += chunk)
      smax::online_normalize(s, x.data() + b, streamed.data() + b, std::min(chunk, n - b));
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_NEAR(streamed[i], whole[i], 2e-6f * whole[i]) << chunk;
  }
}

TEST(online_state, merge_order_and_identity) {
  const auto x = random_row<double>(3000, 20.0, 0.0, 4);
  const auto a = smax::online_reduce(x.data(), 1000);
  const auto b = smax::online_reduce(x.data() + 1000, 1000);
  const auto c = smax::online_reduce(x.data() + 2000, 1000);
  const auto left = smax::merge(smax::merge(a, b), c);
  const auto right = smax::merge(a, smax::merge(c, b));
  const auto whole = smax::online_reduce(x.data(), 3000);
  EXPECT_EQ(left.max, whole.max);
  EXPECT_NEAR(left.sum, whole.sum, 1e-13 * whole.sum);
  EXPECT_NEAR(right.sum, whole.sum, 1e-13 * whole.sum);
  const smax::online_state<double> identity;
  EXPECT_EQ(smax::merge(identity, a).sum, a.sum);
  EXPECT_GE(whole.sum, 1.0);  // d in [1, n]
  EXPECT_LE(whole.sum, 3000.0);
}

// A leading fully masked chunk has state (-inf, 0) and contributes nothing; a NaN
// chunk poisons the row.
TEST(online_state, masked_and_nan_chunks) {
  const std::vector<float> masked = {-HUGE_VALF, -HUGE_VALF}, tail = {2, 1};
  const auto m = smax::online_reduce(masked.data(), 2);
  EXPECT_EQ(m.max, -HUGE_VALF);
  EXPECT_EQ(m.sum, 0.0);
  const auto s = smax::merge(m, smax::online_reduce(tail.data(), 2));
  std::vector<float> y(2);
  smax::online_normalize(s, masked.data(), y.data(), 2);
  EXPECT_EQ(y, (std::vector<float>{0, 0}));
  smax::online_normalize(s, tail.data(), y.data(), 2);
  EXPECT_NEAR(y[0], 0.7310586f, 1e-7f);
  smax::online_log_normalize(s, tail.data(), y.data(), 2);
  EXPECT_NEAR(y[1], -1.3132617f, 1e-6f);
  std::vector<float> bad = {1, NAN};
  const auto poisoned = smax::merge(smax::online_reduce(bad.data(), 2), s);
  smax::online_normalize(poisoned, tail.data(), y.data(), 2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
  smax::online_normalize(m, masked.data(), y.data(), 2);  // all masked: NaN by default (E4)
  EXPECT_TRUE(std::isnan(y[0]));
}

}  // namespace
