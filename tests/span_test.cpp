// The std::span overloads (C++20 only): compiled by a separate C++20 test binary, since the
// library itself is C++17.

#include <smax/smax.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <span>
#include <vector>

static_assert(__cplusplus >= 202002L, "this file tests the C++20 overloads");

TEST(span_overloads, match_the_pointer_forms) {
  const std::vector<float> x = {1, 2, 3, -HUGE_VALF, 0.5f};
  std::vector<float> a(x.size()), b(x.size());
  smax::softmax(std::span<const float>(x), std::span<float>(a));
  smax::softmax(x.data(), b.data(), x.size());
  EXPECT_EQ(a, b);
  smax::log_softmax(std::span<const float>(x), std::span<float>(a), {0.5, false});
  smax::log_softmax(x.data(), b.data(), x.size(), {0.5, false});
  EXPECT_EQ(a, b);
  std::vector<double> xd(x.begin(), x.end()), yd(x.size()), zd(x.size());
  smax::softmax(std::span<const double>(xd), std::span<double>(yd));
  smax::softmax(xd.data(), zd.data(), xd.size());
  EXPECT_EQ(yd, zd);
}
