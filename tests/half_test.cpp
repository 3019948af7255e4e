// The 16-bit types (smax/half.hpp), their vector conversions on every instruction set
// (kernels/convert.hpp) and the 16-bit forms of every family in <smax/families.hpp>
// (api/half.hpp), header-only and in smax::runtime.
//
// Conversions against a reference computed here from the formats' definitions in double
// (nothing shared with the code under test): every one of the 65536 values of each type widened;
// floats narrowed on a sweep (every 4099th float, every bf16 and fp16 tie, every float around
// the fp16 subnormal, normal and overflow thresholds, the float subnormals, infinities and NaNs),
// with x86's FTZ/DAZ set and clear.
// The forms: a row gets the bits of narrow(float rows form(widen(x))) for every family, lengths
// around the vector widths and the float tile, rows with ld > cols across tiles, NaN, +inf,
// masked and all-masked rows, zero_masked_rows, in place, float input; softmax and log-softmax
// rows longer than 65536 entries (by chunks) within one ulp of the output type of that, their
// second pass (read and written as 16-bit values) bit for bit the float pass narrowed; the tile's
// allocation failure (NaN rows); empty calls.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <smax/runtime.hpp>
#include <smax/smax.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "test_support.hpp"

namespace {

using namespace smax_test;

// ---------------------------------------------------------------------------------------------
// The reference: the value of a 16-bit pattern in double, and round to nearest even by search.

// |value| of magnitude bits b of H (b up to the infinity pattern, which stands for the next
// binade's first value: 2^128 for bf16, 2^16 for fp16, as IEEE's overflow rule has it).
template <class H>
double magnitude_value(std::uint32_t b) {
  constexpr int fraction = std::is_same_v<H, smax::bf16> ? 7 : 10;
  constexpr int bias = std::is_same_v<H, smax::bf16> ? 127 : 15;
  const std::uint32_t e = b >> fraction, m = b & ((1u << fraction) - 1);
  if (e == 0) return std::ldexp(double(m), 1 - bias - fraction);
  return std::ldexp(double((1u << fraction) + m), int(e) - bias - fraction);
}
template <class H>
constexpr std::uint32_t infinity_bits = std::is_same_v<H, smax::bf16> ? 0x7F80u : 0x7C00u;

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The expected bits of H(f): finite f rounded to nearest even (±inf beyond the largest value);
// NaN: a quiet NaN with f's sign and top fraction bits.
template <class H>
std::uint16_t reference_narrow(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 31) ? 0x8000u : 0u;
  if (std::isnan(f)) {
    if constexpr (std::is_same_v<H, smax::bf16>)
      return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    else
      return static_cast<std::uint16_t>(sign | 0x7E00u | ((u >> 13) & 0x03FFu));
  }
  const double a = std::fabs(double(f));
  // The largest magnitude pattern whose value is <= a (binary search over the finite patterns
  // and infinity).
  std::uint32_t lo = 0, hi = infinity_bits<H>;
  if (a >= magnitude_value<H>(hi)) return static_cast<std::uint16_t>(sign | hi);
  while (hi - lo > 1) {
    const std::uint32_t mid = (lo + hi) / 2;
    (magnitude_value<H>(mid) <= a ? lo : hi) = mid;
  }
  const double below = a - magnitude_value<H>(lo), above = magnitude_value<H>(lo + 1) - a;
  const std::uint32_t r = below < above ? lo : above < below ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return static_cast<std::uint16_t>(sign | r);
}

// The expected float of pattern h: its value, or ±inf, or a NaN with the same sign and fraction.
template <class H>
std::uint32_t reference_widen_bits(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) ? 0x80000000u : 0u, m = h & 0x7FFFu;
  if (m > infinity_bits<H>) {  // NaN: the fraction bits move to the top of float's fraction
    constexpr int shift = std::is_same_v<H, smax::bf16> ? 16 : 13;
    return sign | 0x7F800000u | ((m & (std::is_same_v<H, smax::bf16> ? 0x7Fu : 0x3FFu)) << shift);
  }
  if (m == infinity_bits<H>) return sign | 0x7F800000u;
  return sign | bits_of(static_cast<float>(magnitude_value<H>(m)));
}

// The floats narrowed: a sweep plus every input where rounding is decided (see the header).
std::vector<float> narrowing_inputs() {
  std::vector<std::uint32_t> bits;
  const std::uint64_t stride = 4099 * exhaustive_stride();
  for (std::uint64_t u = 0; u < (std::uint64_t(1) << 32); u += stride) bits.push_back(std::uint32_t(u));
  for (std::uint32_t top = 0; top < 65536; top += static_cast<std::uint32_t>(exhaustive_stride()))
    for (std::uint32_t low : {0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0u})
      bits.push_back(top << 16 | low);  // bf16 ties and their neighbours
  for (std::uint32_t k = 0; k < (1u << 19); k += static_cast<std::uint32_t>(exhaustive_stride()))
    for (std::uint32_t low : {0x0FFFu, 0x1000u, 0x1001u})
      bits.push_back(k << 13 | low);  // fp16 ties (positive) and their neighbours
  for (std::uint32_t around : {0x33000000u, 0x33800000u, 0x387FC000u, 0x38800000u, 0x477FE000u,
                               0x477FF000u, 0x47800000u, 0x7F7F8000u, 0x7F800000u, 0x00000000u})
    for (std::uint32_t d = 0; d < 8192; ++d) {
      bits.push_back(around + d);
      bits.push_back(around - d);
    }
  for (std::uint32_t u : {0x7FC00000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FFFFFFFu, 0x7FE12345u})
    bits.push_back(u);  // NaNs, quiet and signalling
  std::vector<float> f;
  f.reserve(2 * bits.size());
  for (std::uint32_t u : bits) {
    f.push_back(float_of(u));
    f.push_back(float_of(u ^ 0x80000000u));
  }
  return f;
}

// reference_narrow<H> of every narrowing input, computed once.
template <class H>
std::vector<std::uint16_t> const& narrowed_inputs() {
  static const std::vector<std::uint16_t> table = [] {
    const std::vector<float> f = narrowing_inputs();
    std::vector<std::uint16_t> h(f.size());
    for (std::size_t i = 0; i < f.size(); ++i) h[i] = reference_narrow<H>(f[i]);
    return h;
  }();
  return table;
}

template <class H>
std::vector<std::uint16_t> bits_of(std::vector<H> const& h) {
  std::vector<std::uint16_t> b(h.size());
  std::memcpy(b.data(), h.data(), 2 * h.size());
  return b;
}

// ---------------------------------------------------------------------------------------------
// The scalar types.

TEST(half_types, every_value_widens_exactly) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<std::uint16_t>(b);
    ASSERT_EQ(bits_of(float(smax::bf16::from_bits(h))), reference_widen_bits<smax::bf16>(h)) << b;
    ASSERT_EQ(bits_of(smax::to_float(smax::fp16::from_bits(h))), reference_widen_bits<smax::fp16>(h))
        << b;
    ASSERT_EQ(smax::bf16::from_bits(h).to_bits(), h);
  }
}

TEST(half_types, floats_round_to_nearest_even) {
  const std::vector<float> f = narrowing_inputs();
  for (std::size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(smax::bf16(f[i]).to_bits(), narrowed_inputs<smax::bf16>()[i]) << std::hex << bits_of(f[i]);
    ASSERT_EQ(smax::fp16(f[i]).to_bits(), narrowed_inputs<smax::fp16>()[i]) << std::hex << bits_of(f[i]);
  }
  // A few by hand: 1 + 2^-8 is a bf16 tie (to 1), 65519 rounds to 65504, 65520 overflows.
  EXPECT_EQ(smax::bf16(1.00390625f).to_bits(), 0x3F80u);
  EXPECT_EQ(smax::bf16(1.01171875f).to_bits(), 0x3F82u);
  EXPECT_EQ(smax::fp16(65519.f).to_bits(), 0x7BFFu);
  EXPECT_EQ(smax::fp16(65520.f).to_bits(), 0x7C00u);
  EXPECT_EQ(smax::fp16(-0.f).to_bits(), 0x8000u);
  EXPECT_EQ(smax::fp16(5.9604644775390625e-8f).to_bits(), 0x0001u);   // 2^-24
  EXPECT_EQ(smax::fp16(2.98023223876953125e-8f).to_bits(), 0x0000u);  // 2^-25: a tie, to 0
}

// ---------------------------------------------------------------------------------------------
// The vector conversions, on every instruction set.

template <class C>
class half_convert_test : public ::testing::Test {};
TYPED_TEST_SUITE(half_convert_test, compiled::floats, config_names);

// Rounding and flushing modes the conversions must not depend on (x86: FTZ and DAZ set).
struct flush_to_zero {
#if defined(__x86_64__) || defined(__i386__)
  unsigned saved = _mm_getcsr();
  explicit flush_to_zero(bool on) {
    if (on) _mm_setcsr(saved | 0x8040u);
  }
  ~flush_to_zero() { _mm_setcsr(saved); }
#else
  explicit flush_to_zero(bool) {}
#endif
};

template <class A, class H>
void check_vector_conversions() {
  using table = smax::kernels::convert_table<A>;
  // Every 16-bit value, at every offset from the vector boundaries (lengths 1 ... 65536).
  std::vector<H> all(65536);
  for (std::uint32_t b = 0; b < 65536; ++b) all[b] = H::from_bits(static_cast<std::uint16_t>(b));
  std::vector<float> wide(65536, -7.f);
  for (bool ftz : {true, false}) {
    {
      flush_to_zero mode(ftz);
      table::widen(all.data(), wide.data(), all.size());
    }
    for (std::uint32_t b = 0; b < 65536; ++b)
      ASSERT_EQ(bits_of(wide[b]), reference_widen_bits<H>(static_cast<std::uint16_t>(b)))
          << b << (ftz ? " with FTZ/DAZ" : "");
  }
  for (std::size_t n = 0; n < 70; ++n) {
    std::vector<float> part(n + 1, -7.f);
    table::widen(all.data() + 0x3C00 + n, part.data(), n);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(part[i], wide[0x3C00 + n + i]) << n;
    ASSERT_EQ(part[n], -7.f) << "widen wrote past n = " << n;
  }
  const std::vector<float> f = narrowing_inputs();
  for (bool ftz : {false, true}) {
    std::vector<H> out(f.size() + 1, H::from_bits(0x1234));
    {
      flush_to_zero mode(ftz);
      table::narrow(f.data(), out.data(), f.size());
    }
    const auto got = bits_of(out);
    for (std::size_t i = 0; i < f.size(); ++i)
      ASSERT_EQ(got[i], narrowed_inputs<H>()[i])
          << std::hex << bits_of(f[i]) << (ftz ? " with FTZ/DAZ" : "");
    ASSERT_EQ(got[f.size()], 0x1234u) << "narrow wrote past n";
  }
  for (std::size_t n = 0; n < 70; ++n) {
    std::vector<H> part(n + 1, H::from_bits(0x1234));
    table::narrow(f.data() + 1000 + n, part.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(part[i].to_bits(), narrowed_inputs<H>()[1000 + n + i]) << n;
    ASSERT_EQ(part[n].to_bits(), 0x1234u) << "narrow wrote past n = " << n;
  }
}

TYPED_TEST(half_convert_test, bf16_every_value_and_a_sweep_of_floats) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_vector_conversions<typename TypeParam::arch, smax::bf16>();
}
TYPED_TEST(half_convert_test, fp16_every_value_and_a_sweep_of_floats) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_vector_conversions<typename TypeParam::arch, smax::fp16>();
}

// Pass 2 of a chunked 16-bit softmax / log-softmax row read and written as 16-bit values
// (softmax_table::online_normalize on bf16 / fp16): the bits of the float pass on the widened
// chunk, narrowed, for rows of ordinary values, rows whose outputs are float subnormals (which
// AVX-512 BF16's conversion would flush), masked entries, temperatures, lengths around the vector
// widths, every alignment of y (streaming stores from the first aligned vector), in place, FTZ/DAZ
// set and clear; and false, y untouched, where the float path is needed.
template <class A, class H>
void check_fused_normalize() {
  using table = smax::kernels::softmax_table<A>;
  using convert = smax::kernels::convert_table<A>;
  std::mt19937 rng(17);
  const std::size_t streamed = std::size_t(1) << 40;  // a row_length past any cache: streams
  for (double spread : {8.0, 200.0})
    for (std::size_t n : {1, 2, 7, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100, 1000, 8192})
      for (unsigned flags : {0u, unsigned(smax::kernels::flag_log)})
        for (float temperature : {1.0f, 0.7f, 3.0f}) {
          std::uniform_real_distribution<double> u(-spread, 0.0);
          std::vector<H> x(n + 40);
          for (auto& v : x) v = H(static_cast<float>(u(rng)));
          if (n > 5) x[20 % n] = H(-std::numeric_limits<float>::infinity());  // a masked entry
          for (std::size_t offset : {std::size_t(0), std::size_t(1), std::size_t(3),
                                     std::size_t(8), std::size_t(13)}) {
            const H* xr = x.data() + offset;
            std::vector<float> wide(n), out(n);
            convert::widen(xr, wide.data(), n);
            float max = 0;
            double sum = 0;
            table::online_reduce(wide.data(), n, temperature, &max, &sum);
            for (bool ftz : {false, true}) {
              flush_to_zero mode(ftz);
              std::vector<H> want(n);
              table::online_normalize(wide.data(), out.data(), n, temperature, flags, max, sum);
              convert::narrow(out.data(), want.data(), n);
              for (std::size_t length : {n, streamed}) {
                std::vector<H> got(n + 40, H::from_bits(0x1234));
                ASSERT_TRUE(table::online_normalize(xr, got.data() + offset, n, length,
                                                    temperature, flags, max, sum));
                for (std::size_t i = 0; i < n; ++i)
                  ASSERT_EQ(got[offset + i].to_bits(), want[i].to_bits())
                      << "n " << n << ", entry " << i << ", offset " << offset << ", spread "
                      << spread << ", T " << temperature << ", flags " << flags << ", FTZ " << ftz
                      << (length == n ? "" : ", streamed");
                for (std::size_t i = 0; i < got.size(); ++i)
                  if (i < offset || i >= offset + n) {
                    ASSERT_EQ(got[i].to_bits(), 0x1234u) << i;
                  }
              }
              std::vector<H> same(x);
              ASSERT_TRUE(table::online_normalize(same.data() + offset, same.data() + offset, n,
                                                  n, temperature, flags, max, sum));
              for (std::size_t i = 0; i < n; ++i)
                ASSERT_EQ(same[offset + i].to_bits(), want[i].to_bits()) << "in place, n " << n;
            }
          }
        }
  // The float path's cases: nothing written, false returned.
  const std::vector<H> x(40, H(1.0f));
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  struct declined { float temperature, max; };
  for (declined c : {declined{1.0f, nan}, declined{1.0f, inf}, declined{1.0f, -inf},
                     declined{0.0f, 1.0f}, declined{-1.0f, 1.0f}, declined{1e37f, 1.0f},
                     declined{1e-38f, 1.0f}, declined{nan, 1.0f}}) {
    std::vector<H> y(40, H::from_bits(0x1234));
    EXPECT_FALSE(table::online_normalize(x.data(), y.data(), 40, 40, c.temperature, 0u, c.max, 1.0))
        << "T " << c.temperature << ", max " << c.max;
    for (H v : y) ASSERT_EQ(v.to_bits(), 0x1234u);
  }
}

// Pass 1 of a chunked 16-bit row read as 16-bit values (softmax_table::online_reduce on bf16 /
// fp16): the bits of the float pass on the widened chunk (its maximum and sum), for lengths
// around the vector widths and the 8 KiB blocks, chunks at every offset of a longer row (the
// next block asked for inside it or not), masked entries and masked blocks, a NaN or +inf in a
// later block, every entry masked, temperatures, FTZ/DAZ set and clear; and false, nothing set,
// where the float path is needed.
template <class A, class H>
void check_fused_reduce() {
  using table = smax::kernels::softmax_table<A>;
  using convert = smax::kernels::convert_table<A>;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::mt19937 rng(23);
  const std::size_t block = 8192 / sizeof(float);
  for (std::size_t n : {std::size_t(1), std::size_t(15), std::size_t(16), std::size_t(17),
                        std::size_t(63), std::size_t(65), std::size_t(1000), block - 1, block,
                        block + 1, 2 * block, 3 * block + 37, std::size_t(8192)})
    for (int kind = 0; kind < 6; ++kind) {
      std::uniform_real_distribution<float> u(kind == 4 ? -200.f : -8.f, 8.f);
      std::vector<H> row(n + 3 * block + 40);
      for (auto& v : row) v = H(u(rng));
      if (kind == 1 && n > 5) row[20 % n] = H(-inf);  // a masked entry, and a masked block
      if (kind == 1 && n > block)
        for (std::size_t i = block; i < 2 * block && i < n; ++i) row[i] = H(-inf);
      if (kind == 2) row[n - 1] = H(nan);        // in the last block
      if (kind == 3) row[(2 * n) / 3] = H(inf);  // in a later block of the longer rows
      if (kind == 5)
        for (std::size_t i = 0; i < n; ++i) row[i] = H(-inf);  // every entry masked
      for (std::size_t offset : {std::size_t(0), std::size_t(5)})
        for (std::size_t rest : {n, n + 3 * block})
          for (float temperature : {1.0f, 0.7f, 3.0f})
            for (bool ftz : {false, true}) {
              flush_to_zero mode(ftz);
              const H* x = row.data() + offset;
              std::vector<float> wide(n);
              convert::widen(x, wide.data(), n);
              float want_max = 0, got_max = 0;
              double want_sum = 0, got_sum = 0;
              table::online_reduce(wide.data(), n, temperature, &want_max, &want_sum);
              ASSERT_TRUE(table::online_reduce(x, n, rest, temperature, &got_max, &got_sum));
              const bool nan_max = std::isnan(want_max);
              ASSERT_TRUE(nan_max ? std::isnan(got_max) : got_max == want_max)
                  << "n " << n << ", kind " << kind << ": max " << got_max << " vs " << want_max;
              ASSERT_EQ(std::memcmp(&got_sum, &want_sum, sizeof(double)), 0)
                  << "n " << n << ", kind " << kind << ", offset " << offset << ", rest " << rest
                  << ", T " << temperature << ", FTZ " << ftz << ": sum " << got_sum << " vs "
                  << want_sum;
            }
    }
  // The float path's cases: false, nothing set.
  const std::vector<H> x(40, H(1.0f));
  for (float temperature : {0.0f, -1.0f, nan, inf, 1e37f, 1e-38f}) {
    float max = 123;
    double sum = 456;
    EXPECT_FALSE(table::online_reduce(x.data(), 40, 40, temperature, &max, &sum)) << temperature;
    EXPECT_EQ(max, 123.0f);
    EXPECT_EQ(sum, 456.0);
  }
}

TYPED_TEST(half_convert_test, bf16_softmax_pass_one_equals_the_float_pass) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_fused_reduce<typename TypeParam::arch, smax::bf16>();
}
TYPED_TEST(half_convert_test, fp16_softmax_pass_one_equals_the_float_pass) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_fused_reduce<typename TypeParam::arch, smax::fp16>();
}

TYPED_TEST(half_convert_test, bf16_softmax_pass_two_equals_the_float_pass) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_fused_normalize<typename TypeParam::arch, smax::bf16>();
}
TYPED_TEST(half_convert_test, fp16_softmax_pass_two_equals_the_float_pass) {
  SMAX_SKIP_IF_UNAVAILABLE(TypeParam);
  check_fused_normalize<typename TypeParam::arch, smax::fp16>();
}

// ---------------------------------------------------------------------------------------------
// The 16-bit forms of every family.

template <class H>
bool same_or_both_nan(std::vector<H> const& a, std::vector<H> const& b, std::size_t* at) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint16_t x = a[i].to_bits(), y = b[i].to_bits();
    const bool nx = (x & 0x7FFFu) > infinity_bits<H>, ny = (y & 0x7FFFu) > infinity_bits<H>;
    if (x != y && !(nx && ny)) {
      *at = i;
      return false;
    }
  }
  return true;
}

// Rows of values in [-6, 6], already 16-bit values; row 1 (when there are 4 rows or more) holds a
// NaN, row 2 a +inf, row 3 is all -inf, row 4 the type's largest finite value and its negative,
// and row 0 has a masked entry.
template <class H>
std::vector<float> sample_rows(std::size_t rows, std::size_t cols, std::size_t ld, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<float> x(rows * ld, 99.f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i) x[r * ld + i] = float(H(u(rng)));
  if (rows >= 4) {
    x[1 * ld + cols / 2] = quiet_nan<float>;
    x[2 * ld + cols - 1] = infinity<float>;
    for (std::size_t i = 0; i < cols; ++i) x[3 * ld + i] = -infinity<float>;
  }
  if (cols >= 2) x[cols / 3] = -infinity<float>;
  if (rows >= 5 && cols >= 2) {  // row 4: the type's largest finite values, both signs
    const float big = float(H::from_bits(std::is_same_v<H, smax::bf16> ? 0x7F7F : 0x7BFF));
    x[4 * ld] = big;
    x[4 * ld + cols - 1] = -big;
  }
  return x;
}

template <class H>
std::vector<H> narrowed(std::vector<float> const& f) {
  std::vector<H> h(f.size());
  for (std::size_t i = 0; i < f.size(); ++i) h[i] = H(f[i]);
  return h;
}

// What a 16-bit form must give: narrow(the float rows form on the widened rows), and the rows
// reported.
template <class Family, class Dispatch, class H>
std::vector<H> expected(std::vector<float> const& x, std::size_t rows, std::size_t cols,
                        std::size_t ld, typename Family::options const& opts,
                        std::size_t* reported, std::vector<H> const& untouched) {
  std::vector<float> y(x.size());
  *reported = 0;
  if constexpr (Family::reports_rows)
    *reported = smax::api::forward<Family, Dispatch>(x.data(), ld, y.data(), ld, rows, cols, opts);
  else
    smax::api::forward<Family, Dispatch>(x.data(), ld, y.data(), ld, rows, cols, opts);
  std::vector<H> want = untouched;
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i) want[r * ld + i] = H(y[r * ld + i]);
  return want;
}

template <class Family, class Dispatch, class H, class Form, class RowsForm>
void check_half_form(Form const& form, RowsForm const& rows_form, const char* what) {
  auto opts = sample_options<Family>::get();
  auto call_rows = [&](auto const* x, H* y, std::size_t rows, std::size_t cols, std::size_t ld) {
    std::size_t reported = 0;
    if constexpr (Family::reports_rows)
      reported = rows_form(x, y, rows, cols, ld, opts);
    else
      rows_form(x, y, rows, cols, ld, opts);
    return reported;
  };
  const char* type = std::is_same_v<H, smax::bf16> ? "bf16" : "fp16";
  for (bool zero_masked : {false, true}) {
    if constexpr (has_zero_masked_rows<typename Family::options>::value)
      opts.zero_masked_rows = zero_masked;
    else if (zero_masked)
      continue;
    // One row: lengths around the vector widths, up to the float tile (8192) and past it.
    for (std::size_t n : {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 1000, 8191, 8192}) {
      const auto xf = sample_rows<H>(1, n, n, static_cast<unsigned>(n));
      const auto xh = narrowed<H>(xf);
      std::size_t want_reported = 0;
      const std::vector<H> untouched(n, H::from_bits(0x1234));
      const auto want = expected<Family, Dispatch, H>(xf, 1, n, n, opts, &want_reported, untouched);
      std::vector<H> y(n, H::from_bits(0x1234));
      std::size_t got_reported = 0;
      if constexpr (Family::reports_rows)
        got_reported = form(xh.data(), y.data(), n, opts) ? 1 : 0;
      else
        form(xh.data(), y.data(), n, opts);
      std::size_t at = 0;
      ASSERT_TRUE(same_or_both_nan(y, want, &at))
          << what << " " << type << ": n " << n << ", entry " << at << ", zero_masked_rows " << zero_masked;
      EXPECT_EQ(got_reported, want_reported) << what;
      std::vector<H> y2(n, H::from_bits(0x1234));
      form(xf.data(), y2.data(), n, opts);  // float input
      ASSERT_TRUE(same_or_both_nan(y2, want, &at)) << what << " float -> " << type << ": n " << n;
      auto in_place = xh;
      form(in_place.data(), in_place.data(), n, opts);
      ASSERT_TRUE(same_or_both_nan(in_place, want, &at)) << what << " " << type << " in place: n " << n;
    }
    // Rows with ld > cols, across several tiles (8192 floats a tile: 81 rows of 100), with the
    // special rows; the padding is left alone.
    for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{5, 3}, {7, 17}, {170, 100},
                              {3, 5000}, {5, 9000}, {2, 70000}}) {
      const std::size_t ld = cols + 3;
      const auto xf = sample_rows<H>(rows, cols, ld, static_cast<unsigned>(rows * 31 + cols));
      const auto xh = narrowed<H>(xf);
      std::size_t want_reported = 0;
      const std::vector<H> untouched(xf.size(), H::from_bits(0x1234));
      const auto want = expected<Family, Dispatch, H>(xf, rows, cols, ld, opts, &want_reported, untouched);
      for (bool from_float : {false, true}) {
        std::vector<H> y(xf.size(), H::from_bits(0x1234));
        const std::size_t got_reported =
            from_float ? call_rows(xf.data(), y.data(), rows, cols, ld)
                       : call_rows(xh.data(), y.data(), rows, cols, ld);
        std::size_t at = 0;
        if (Family::splits_long_rows && cols > smax::api::half_whole_row_bytes / sizeof(float)) {
          // By chunks: within one ulp of the output type of the unsplit float call.
          for (std::size_t i = 0; i < y.size(); ++i) {
            const int d = int(y[i].to_bits()) - int(want[i].to_bits());
            const bool nan_both = (y[i].to_bits() & 0x7FFFu) > infinity_bits<H> &&
                                  (want[i].to_bits() & 0x7FFFu) > infinity_bits<H>;
            ASSERT_TRUE(nan_both || (d >= -1 && d <= 1))
                << what << " " << type << ": rows " << rows << " × " << cols << ", entry " << i;
          }
        } else {
          ASSERT_TRUE(same_or_both_nan(y, want, &at))
              << what << " " << type << (from_float ? " (float input)" : "") << ": rows " << rows
              << " × " << cols << ", entry " << at << ", zero_masked_rows " << zero_masked;
        }
        EXPECT_EQ(got_reported, want_reported) << what;
      }
    }
  }
  // The tile cannot be allocated: NaN rows, none reported.
  {
    const auto xh = narrowed<H>(sample_rows<H>(3, 50, 50, 4));
    std::vector<H> y(xh.size(), H::from_bits(0x1234));
    smax::primitives::scratch_limit<smax::api::half_tiles> = 0;
    const std::size_t reported = call_rows(xh.data(), y.data(), 3, 50, 50);
    smax::primitives::scratch_limit<smax::api::half_tiles> = ~std::size_t(0);
    for (H v : y) ASSERT_GT(v.to_bits() & 0x7FFFu, infinity_bits<H>) << what << ": allocation failure";
    EXPECT_EQ(reported, 0u);
  }
}

template <class Family, class Header, class Runtime, class HeaderRows, class RuntimeRows>
void check_half_family(Header const& header, Runtime const& runtime, HeaderRows const& header_rows,
                       RuntimeRows const& runtime_rows) {
  check_half_form<Family, smax::api::header_only, smax::bf16>(header, header_rows, "header-only");
  check_half_form<Family, smax::runtime::dispatch::chosen, smax::bf16>(runtime, runtime_rows, "runtime");
  check_half_form<Family, smax::api::header_only, smax::fp16>(header, header_rows, "header-only");
  check_half_form<Family, smax::runtime::dispatch::chosen, smax::fp16>(runtime, runtime_rows, "runtime");
}

#define SMAX_HALF_TEST(name, extra)                                                   \
  TEST(half_forms, name) {                                                            \
    check_half_family<smax::api::name##_family>(                                      \
        [](auto... a) { return smax::name(a...); },                                   \
        [](auto... a) { return smax::runtime::name(a...); },                          \
        [](auto... a) { return smax::name##_rows(a...); },                            \
        [](auto... a) { return smax::runtime::name##_rows(a...); });                  \
  }
SMAX_FAMILIES(SMAX_HALF_TEST)
#undef SMAX_HALF_TEST

// Nothing to do, nothing read or written: null pointers are fine.
TEST(half_forms, empty_calls_touch_nothing) {
  smax::bf16* none = nullptr;
  smax::softmax(none, none, 0);
  smax::runtime::log_softmax_rows(none, none, 0, 5, 5);
  smax::sparsemax_rows(static_cast<const float*>(nullptr), none, 4, 0, 0);
  std::vector<smax::fp16> x(6, smax::fp16(1.f)), y(6, smax::fp16::from_bits(0x1234));
  smax::softmax_rows(x.data(), y.data(), 0, 6, 6);
  smax::softmax_rows(x.data(), y.data(), 1, 0, 6);
  for (auto v : y) EXPECT_EQ(v.to_bits(), 0x1234u);
}

}  // namespace
