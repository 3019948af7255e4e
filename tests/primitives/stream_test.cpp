// Streaming stores (primitives/stream.hpp): every alignment of the output and every length give
// the same elements as the plain pass, and nothing outside [0, n) is written. Rows only stream
// past the last-level cache, too big for a unit test, so the pass is checked directly here (for
// the instruction set this file is compiled for).

#include <smax/primitives/stream.hpp>

#include "test_support.hpp"

namespace {

TEST(streaming_stores, every_alignment_and_length) {
  using A = xsimd::default_arch;
  using batch = xsimd::batch<float, A>;
  constexpr std::size_t width = batch::size;
  std::vector<float> x(256 + 3 * width);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  for (std::size_t offset = 0; offset < 2 * width; ++offset)
    for (std::size_t n :
         {std::size_t(0), std::size_t(1), width - 1, width, 2 * width + 1, std::size_t(256)}) {
      std::vector<float> y(n + 2 * width + 8, -1.0f);
      smax::primitives::map_streaming<A>(x.data(), y.data() + offset, n,
                                         [](batch const& v) { return v + batch(1.0f); });
      for (std::size_t i = 0; i < y.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        ASSERT_EQ(y[i], inside ? x[i - offset] + 1.0f : -1.0f)
            << "offset " << offset << ", n " << n;
      }
    }
}

TEST(streaming_stores, only_past_the_threshold) {
  using A = xsimd::default_arch;
  const std::size_t threshold = smax::primitives::streaming_min_bytes<A>();
  if (std::getenv("SMAX_STREAMING_MIN_BYTES") == nullptr) {
    // The last-level cache, clamped to [4 MiB, 32 MiB].
    const std::size_t llc = smax::primitives::last_level_cache_bytes<A>();
    const std::size_t lowest = std::size_t(4) << 20, highest = std::size_t(32) << 20;
    EXPECT_EQ(threshold, llc < lowest ? lowest : llc > highest ? highest : llc);
  }
  EXPECT_FALSE((smax::primitives::should_stream<A, float>(threshold / sizeof(float))));
  EXPECT_TRUE((smax::primitives::should_stream<A, float>(threshold / sizeof(float) + 1)));
}

}  // namespace
