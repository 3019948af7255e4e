#pragma once
// Shared by the differential fuzzers (one per family, fuzz/<family>_fuzz.cpp): decoding the
// fuzzer's bytes into rows, batches and options; running a kernel table on every instruction set
// this binary was built for and this CPU runs; and checking each output against the long-double
// reference with the bound the README and the public headers state, and the bad-input contract.
//
// Input layout: the first byte picks the element type and the shape flags, the next bytes the
// length, the value pattern and the options; a pattern generator fills the row from a seed (so a
// row of 4000 elements does not need 16 KB of input), and the remaining bytes inject special
// values (±0, ±inf, NaN, ±FLT_MAX, subnormals, ties with the maximum, raw bit patterns) at
// chosen positions. A finding prints what ran and aborts, which libFuzzer records as a crash.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <smax/families.hpp>
#include <smax/reference/multimax.hpp>
#include <smax/reference/sigmoid.hpp>
#include <smax/reference/softmax.hpp>
#include <smax/reference/softpick.hpp>
#include <smax/reference/sparsemax.hpp>
#include <smax/reference/ssmax.hpp>
#include <smax/smax.hpp>

#include "known_defects.hpp"

namespace smax_fuzz {

// ---------------------------------------------------------------------------------------------
// The fuzzer's bytes, read front to back; past the end every read gives 0.
class reader {
 public:
  reader(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}
  std::uint8_t byte() { return n_ ? (--n_, *p_++) : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(byte() | (byte() << 8)); }
  std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
  std::uint64_t u64() { return u32() | (static_cast<std::uint64_t>(u32()) << 32); }
  bool empty() const { return n_ == 0; }
  template <class T>
  T raw() {  // any bit pattern of T, NaNs and infinities included
    T v;
    if (sizeof(T) == 4) {
      const std::uint32_t b = u32();
      std::memcpy(&v, &b, sizeof v);
    } else {
      const std::uint64_t b = u64();
      std::memcpy(&v, &b, sizeof v);
    }
    return v;
  }
  template <class T>
  T pick(std::initializer_list<T> choices) {
    return choices.begin()[byte() % choices.size()];
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

// ---------------------------------------------------------------------------------------------
// Every instruction set compiled in (smax_enable_dispatch) that this CPU runs: f(A{}).
template <class F>
void for_each_arch(F&& f) {
#if defined(SMAX_DISPATCH_AVX512BW)
  if (smax::detail::arch_available<xsimd::avx512bw>()) f(xsimd::avx512bw{});
#endif
#if defined(SMAX_DISPATCH_AVX2)
  if (smax::detail::arch_available<xsimd::fma3<xsimd::avx2>>()) f(xsimd::fma3<xsimd::avx2>{});
#endif
#if defined(SMAX_DISPATCH_NEON64)
  if (smax::detail::arch_available<xsimd::neon64>()) f(xsimd::neon64{});
#endif
#if defined(SMAX_DISPATCH_SSE2)
  f(xsimd::sse2{});
#endif
}

// Lanes of one register of A for T.
template <class A, class T>
constexpr std::size_t width = A::alignment() / sizeof(T);

// ---------------------------------------------------------------------------------------------
template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// What is being run, printed with a finding.
struct context {
  std::string text;
};
inline context& current() {
  static context c;
  return c;
}
template <class... Args>
void describe(const char* format, Args... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  current().text = buffer;
}

template <class T>
const char* type_name() {
  return sizeof(T) == 4 ? "float" : "double";
}

template <class T>
void print_row(const char* name, const T* x, std::size_t n) {
  // Run-length: "v ×k" for a run of k equal values, up to 200 runs.
  std::fprintf(stderr, "%s (%zu) = [", name, n);
  std::size_t runs = 0;
  for (std::size_t i = 0; i < n && runs < 200; ++runs) {
    std::size_t j = i + 1;
    while (j < n && same_bits(x[j], x[i])) ++j;
    std::fprintf(stderr, "%s%.9g", i ? ", " : "", static_cast<double>(x[i]));
    if (j - i > 1) std::fprintf(stderr, " x%zu", j - i);
    i = j;
  }
  std::fprintf(stderr, runs >= 200 ? ", ...]\n" : "]\n");
}

// A finding: what ran, the input row, where it went wrong; abort so libFuzzer keeps the input.
template <class T>
[[noreturn]] void fail(const T* x, std::size_t n, std::size_t index, double got,
                       long double expected, double bound, const char* what) {
  std::fprintf(stderr,
               "\nsmax fuzz finding: %s\n  %s\n  at %zu: got %.17g, expected %.17Lg, bound %.3g\n",
               what, current().text.c_str(), index, got, expected, bound);
  print_row("x", x, n);
  std::abort();
}

// ---------------------------------------------------------------------------------------------
// Values.

template <class T>
constexpr T inf = std::numeric_limits<T>::infinity();
template <class T>
constexpr T qnan = std::numeric_limits<T>::quiet_NaN();
template <class T>
constexpr T big = std::numeric_limits<T>::max();

// A special value (or a raw bit pattern) to inject; `max` is the row's current maximum (ties).
template <class T>
T special(reader& in, T max) {
  const T sub = std::numeric_limits<T>::denorm_min();
  const T tiny = std::numeric_limits<T>::min();
  switch (in.byte() % 22) {
    case 0:
      return T(0);
    case 1:
      return -T(0);
    case 2:
      return inf<T>;
    case 3:
    case 4:
    case 5:
      return -inf<T>;  // masks are the common case
    case 6:
      return qnan<T>;
    case 7:
      return big<T>;
    case 8:
      return -big<T>;
    case 9:
      return sub;
    case 10:
      return -sub;
    case 11:
      return tiny / 3;  // subnormal
    case 12:
      return -tiny * T(0.75);
    case 13:
      return tiny;
    case 14:
      return T(3e38);
    case 15:
      return T(-3e38);
    case 16:
      return T(1e38);
    case 17:
    case 18:
      return std::isfinite(max) ? max : T(1);  // a tie with the maximum
    case 19:
      return std::isfinite(max) ? std::nextafter(max, -inf<T>) : T(0);
    case 20:
      return T(in.u16()) / T(64) - T(512);
    default:
      return in.raw<T>();
  }
}

// Rows of `cols` elements `ld` apart (rows × ld elements; the padding holds `pad`), filled by a
// pattern the input picks, then special values injected at positions the input picks.
template <class T>
std::vector<T> decode_rows(reader& in, std::size_t rows, std::size_t cols, std::size_t ld, T pad,
                           bool allow_specials = true) {
  std::vector<T> x(rows * ld, pad);
  std::mt19937_64 rng(in.u32());
  const double spread = in.pick<double>({1e-7, 1e-3, 1, 2, 20, 200, 1e4, 1e20, 1e38, 6e38});
  const double offset =
      in.pick<double>({0, 0, 0, 1, -1, 1000, -1000, 1e30, -1e30, 3e38, -3e38, 1e-30});
  const unsigned pattern = in.byte() % 6;
  const T constant =
      in.pick<T>({T(0), T(1), T(-6680), T(3.7), T(-1e30), T(1e30), T(-3e38), T(100)});
  std::uniform_real_distribution<double> u(-0.5, 0.5);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i) {
      double v;
      switch (pattern) {
        case 0:
          v = offset + spread * u(rng);
          break;
        case 1:
          v = constant;
          break;
        case 2:
          v = (i & 1) ? 1.0 : 0.0;
          break;  // alternating
        case 3:
          v = offset + std::floor(8 * u(rng));
          break;  // many ties
        case 4:
          v = std::ldexp(u(rng), static_cast<int>(rng() % 60) - 40);
          break;  // near 0
        default:
          v = offset + spread * u(rng) * u(rng) * u(rng);
          break;
      }
      T t = static_cast<T>(v);
      if (!std::isfinite(t)) t = v < 0 ? -big<T> : big<T>;  // finite unless injected
      x[r * ld + i] = t;
    }
  if (!allow_specials || cols == 0) return x;
  const unsigned count = in.byte() % 24;
  for (unsigned k = 0; k < count && !in.empty(); ++k) {
    const std::size_t r = in.byte() % rows;
    T* row = x.data() + r * ld;
    const std::uint8_t how = in.byte();
    T max = -inf<T>;
    for (std::size_t i = 0; i < cols; ++i) max = row[i] > max ? row[i] : max;
    const T value = special<T>(in, max);
    if (how < 16) {  // a run: the whole row, or every entry from a position on
      const std::size_t from = how == 0 ? 0 : in.u16() % cols;
      for (std::size_t i = from; i < cols; ++i) row[i] = value;
    } else {
      row[in.u16() % cols] = value;
    }
  }
  return x;
}

// An upstream gradient for the backward passes: finite, of a magnitude the input picks (up to
// 1e30, so that no sum over a row leaves float's range: that is not what the bounds are about).
template <class T>
std::vector<T> decode_gradient(reader& in, std::size_t rows, std::size_t cols, std::size_t ld) {
  std::vector<T> dy(rows * ld, T(0));
  std::mt19937_64 rng(in.u32());
  const double scale = in.pick<double>({1, 1, 1e-6, 100, 1e6, 1e30});
  const double offset = in.pick<double>({0, 0, 1, -1});
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < cols; ++i)
      dy[r * ld + i] = static_cast<T>(scale * (offset + u(rng)));
  return dy;
}

// The shape of a call: rows × cols with leading dimension ld, in place or not.
struct shape {
  std::size_t rows = 1, cols = 0, ld = 0;
  bool in_place = false;
};
inline shape decode_shape(reader& in, std::size_t max_cols = 4096,
                          std::size_t max_elements = 8192) {
  shape s;
  const std::uint8_t f = in.byte();
  const std::uint16_t length = in.u16();
  switch (f & 3) {  // most rows short, where the vector widths and tails are
    case 0:
      s.cols = length % 40;
      break;
    case 1:
      s.cols = length % 140;
      break;
    case 2:
      s.cols = length % (max_cols + 1);
      break;
    default:
      s.cols = length % 300;
      break;
  }
  s.rows = (f & 4) ? 1 + (f >> 5) % 5 : 1;
  if (s.cols > 0 && s.rows * s.cols > max_elements)
    s.rows = std::max<std::size_t>(1, max_elements / s.cols);
  s.ld = s.cols + ((f & 8) ? 1 + in.byte() % 19 : 0);
  s.in_place = (f & 16) != 0;
  return s;
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

// |got - expected| <= atol + rtol·|expected| with NaN matching NaN, infinities matching exactly,
// and (exact_zeros) an expected exact 0 matching only an exact 0 (masked outputs).
template <class T>
bool close(T got, long double expected, double rtol, double atol, bool exact_zeros = true) {
  const T e = static_cast<T>(expected);
  if (std::isnan(expected)) return std::isnan(got);
  if (std::isinf(e)) return got == e;
  if (exact_zeros && expected == 0.0L) return got == T(0);
  if (std::isnan(got)) return false;
  const long double reach = atol + rtol * std::fabs(expected);
  // ±inf is within the bound where expected ± bound passes T's largest finite number.
  if (std::isinf(got)) {
    const long double top = static_cast<long double>(std::numeric_limits<T>::max());
    return got > 0 ? expected + reach > top : expected - reach < -top;
  }
  return std::fabs(static_cast<long double>(got) - expected) <= reach;
}

template <class T>
bool same_bits_or_both_nan(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// Output buffers: in place, y starts as a copy of x; otherwise it starts as `pad` everywhere, and
// neither x nor the padding between y's rows may change.
template <class T>
constexpr T canary = T(-12345.5);

template <class T>
struct buffers {
  std::vector<T> x, y;
  shape s;
  T* output() { return y.data(); }
  const T* input() const { return s.in_place ? y.data() : x.data(); }
  // y's padding (between cols and ld) untouched, and x untouched when not in place.
  void check_untouched(std::vector<T> const& original) const {
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t i = s.cols; i < s.ld; ++i) {
        const T want = s.in_place ? original[r * s.ld + i] : canary<T>;
        if (!same_bits_or_both_nan(y[r * s.ld + i], want))
          fail(original.data(), s.cols, r * s.ld + i, y[r * s.ld + i], want, 0,
               "wrote into the padding between rows");
      }
    if (!s.in_place)
      for (std::size_t k = 0; k < x.size(); ++k)
        if (!same_bits_or_both_nan(x[k], original[k]))
          fail(original.data(), s.cols, k, x[k], original[k], 0, "changed its input");
  }
};
template <class T>
buffers<T> prepare(std::vector<T> const& x, shape const& s) {
  buffers<T> b{x, {}, s};
  b.y = s.in_place ? x : std::vector<T>(x.size(), canary<T>);
  return b;
}

// The header-only _rows call's output (pub) against its kernel table's (tab), bit for bit, where
// the family's zero_masked_rows turns a row of only -inf into zeros in the public call. Returns
// which rows were zeroed so (the backward checks need it).
template <class T>
std::vector<bool> expect_public_equals_table(std::vector<T> const& x, shape const& s,
                                             buffers<T> const& pub, buffers<T> const& tab,
                                             bool zero_masked_rows) {
  std::vector<bool> zeroed(s.rows);
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* xr = x.data() + r * s.ld;
    bool all_masked = true;
    for (std::size_t i = 0; i < s.cols; ++i) all_masked = all_masked && xr[i] == -inf<T>;
    zeroed[r] = all_masked && zero_masked_rows;
    for (std::size_t i = 0; i < s.cols; ++i) {
      const T got = pub.y[r * s.ld + i];
      const T want = zeroed[r] ? T(0) : tab.y[r * s.ld + i];
      if (!same_bits_or_both_nan(got, want))
        fail(xr, s.cols, i, got, want, 0, "the header-only call differs from its table");
    }
  }
  return zeroed;
}

// Per-row helpers on long double.
template <class T>
long double row_max(const T* x, std::size_t n) {
  long double m = -HUGE_VALL;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] > m) m = x[i];
  return m;
}
template <class T>
bool row_has_nan_or_pos_inf(const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (std::isnan(x[i]) || x[i] == inf<T>) return true;
  return false;
}
template <class T>
bool row_has_subnormal(const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != 0 && std::fabs(x[i]) < std::numeric_limits<T>::min()) return true;
  return false;
}

// The unit roundoff of T and the machine epsilon.
template <class T>
constexpr double unit = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
template <class T>
constexpr double epsilon = sizeof(T) == 4 ? 0x1p-23 : 0x1p-52;

// The spacing of T at |v| (the ulp of v), with the spacing of the smallest normal below it.
template <class T>
double ulp(long double v) {
  const T a = static_cast<T>(std::fabs(v));
  if (!(a >= std::numeric_limits<T>::min())) return std::numeric_limits<T>::denorm_min();
  return static_cast<double>(std::nextafter(a, inf<T>) - a);
}

}  // namespace smax_fuzz

// The libFuzzer entry of a target whose run<T>(reader&) checks one input; the input's first byte
// picks the element type.
#define SMAX_FUZZ_TARGET(run)                                                         \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    ::smax_fuzz::reader in(data, size);                                               \
    if (in.byte() & 1)                                                                \
      run<double>(in);                                                                \
    else                                                                              \
      run<float>(in);                                                                 \
    return 0;                                                                         \
  }
