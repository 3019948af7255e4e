#pragma once
// Shared by the tests: the instruction sets compiled into this binary as GoogleTest types, row
// generators, and the comparison rule of docs/accuracy.md.

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <smax/detail/archs.hpp>
#include <smax/kernels/softmax.hpp>
#include <smax/reference/softmax.hpp>

namespace smax_test {

// One instruction set A and one element type T.
template <class A, class T>
struct config {
  using arch = A;
  using value_type = T;
  using table = smax::kernels::softmax_table<A>;
  // Lanes per register, without instantiating a batch this translation unit cannot compile.
  static constexpr std::size_t width = A::alignment() / sizeof(T);
};

template <class... As>
struct configs_of;
template <class... As>
struct configs_of<void, As...> {  // void leads the list so every entry can start with a comma
  using type = ::testing::Types<config<As, float>..., config<As, double>...>;
  using floats = ::testing::Types<config<As, float>...>;
  using doubles = ::testing::Types<config<As, double>...>;
};

// Instruction sets compiled in by smax_enable_dispatch(smax_tests), best first.
#define SMAX_TEST_CONFIG_ARCH(data, name, type) , type
using compiled = configs_of<void SMAX_COMPILED_ARCHS(SMAX_TEST_CONFIG_ARCH, ~)>;
#undef SMAX_TEST_CONFIG_ARCH
using all_configs = compiled::type;

struct config_names {
  template <class C>
  static std::string GetName(int) {
    return std::string(C::arch::name()) + (sizeof(typename C::value_type) == 4 ? "_f32" : "_f64");
  }
};

// Skips (never silently passes) an instruction set this CPU lacks.
#define SMAX_SKIP_IF_UNAVAILABLE(C)                      \
  if (!smax::detail::arch_available<typename C::arch>()) \
  GTEST_SKIP() << C::arch::name() << " is not supported by this CPU"

// Every stride-th input of an exhaustive sweep (1 = all; CI samples under the sanitizers and
// under emulation, SMAX_TEST_EXHAUSTIVE_STRIDE). Random samples shrink by it too (sampled()).
inline std::size_t exhaustive_stride() {
  const char* s = std::getenv("SMAX_TEST_EXHAUSTIVE_STRIDE");
  const long v = s ? std::atol(s) : 1;
  return v > 0 ? static_cast<std::size_t>(v) : 1;
}

// The length of a long row: n natively. Under emulation (CI's AArch64 run under qemu, where long
// double is software and a million-entry reference takes minutes) SMAX_TEST_LONG_ROW_LIMIT caps
// it, keeping n's tail (n mod 64) so the vector tails stay the ones the test chose; the cap is set
// well past the kernels' 8 KiB blocks, so every blocked path still runs.
inline std::size_t long_row(std::size_t n) {
  const char* s = std::getenv("SMAX_TEST_LONG_ROW_LIMIT");
  const std::size_t limit = s ? static_cast<std::size_t>(std::strtoull(s, nullptr, 10)) : 0;
  if (limit < 64 || n <= limit) return n;
  return limit - limit % 64 + n % 64;
}

// The positions [0, n) of a sweep "at every position" of a row: all of them natively; under a
// sampling stride (CI's emulated and sanitizer runs) the first and last 4·width and every
// stride-th one between, so the row's ends, each vector tail and each lane are still visited.
inline std::vector<std::size_t> positions(std::size_t n, std::size_t width) {
  const std::size_t stride = exhaustive_stride(), edge = 4 * width;
  std::vector<std::size_t> k;
  for (std::size_t i = 0; i < n; ++i)
    if (stride == 1 || i < edge || i + edge >= n || i % stride == 0) k.push_back(i);
  return k;
}

// The size of a random sample of `full` inputs under that stride (at least 1024).
inline std::size_t sampled(std::size_t full) {
  const std::size_t n = full / exhaustive_stride();
  return n < 1024 ? 1024 : n;
}

template <class T>
constexpr T infinity = std::numeric_limits<T>::infinity();
template <class T>
constexpr T quiet_nan = std::numeric_limits<T>::quiet_NaN();

// A random row: uniform on [offset - spread/2, offset + spread/2].
template <class T>
std::vector<T> random_row(std::size_t n, double spread, double offset, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(offset - spread / 2, offset + spread / 2);
  std::vector<T> x(n);
  for (auto& v : x) v = static_cast<T>(u(rng));
  return x;
}

// Relative tolerance of softmax at T = 1 (softmax.hpp states the same bounds).
template <class T>
constexpr double softmax_rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

// The comparison rule (docs/accuracy.md): expected rounded to T; NaN matches NaN, infinities and
// exact zeros (masked entries) match exactly; otherwise |got - expected| <= atol + rtol·|expected|.
// Outputs below the smallest normal number may be flushed (E8, docs/edge_cases.md), hence atol =
// that number for probabilities.
// exact_zeros: an expected 0 must be exactly 0 (masked probabilities); off for the log domain,
// where 0 is an ordinary value.
template <class T>
::testing::AssertionResult matches(T got, long double expected, double rtol, double atol,
                                   std::size_t index, bool exact_zeros = true) {
  const T e = static_cast<T>(expected);
  if (std::isnan(e)) {
    if (std::isnan(got)) return ::testing::AssertionSuccess();
  } else if (std::isinf(e) || (exact_zeros && expected == 0.0L)) {
    if (got == e) return ::testing::AssertionSuccess();
  } else if (std::fabs(static_cast<long double>(got) - expected) <=
             atol + rtol * std::fabs(expected)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "at " << index << ": got " << got << ", expected " << static_cast<double>(expected)
         << " (rel err " << static_cast<double>(std::fabs((got - expected) / expected)) << ")";
}

using smax::kernels::algorithm_id;
constexpr algorithm_id all_algorithms[] = {algorithm_id::three_pass, algorithm_id::online,
                                           algorithm_id::two_pass, algorithm_id::automatic};
inline const char* name_of(algorithm_id a) {
  switch (a) {
    case algorithm_id::three_pass:
      return "three_pass";
    case algorithm_id::online:
      return "online";
    case algorithm_id::two_pass:
      return "two_pass";
    case algorithm_id::blocked_three_pass:
      return "blocked_three_pass";
    default:
      return "automatic";
  }
}

// Runs the forward kernel of configuration C on one row.
template <class C, class T>
void forward(algorithm_id algorithm, bool log, const T* x, T* y, std::size_t n, T temperature = 1,
             bool zero_masked_rows = false) {
  const unsigned flags = (log ? smax::kernels::flag_log : 0u) |
                         (zero_masked_rows ? smax::kernels::flag_zero_masked_rows : 0u);
  C::table::forward(x, n, y, n, 1, n, temperature, flags, algorithm);
}

// The long-double softmax reference of x, kept for the next call: the tests check one row with
// every algorithm (and a long row's reference is most of a test's time, minutes under emulation).
// The row is compared bit for bit, so NaN rows hit the cache too. Test-only: smax_tests runs
// one test at a time per thread.
template <class T>
const std::vector<long double>& cached_softmax_reference(std::vector<T> const& x, bool log,
                                                         T temperature, bool zero_masked_rows) {
  struct entry {
    std::vector<T> x;
    bool log = false, zero_masked_rows = false;
    T temperature = 0;
    std::vector<long double> ref;
    bool valid = false;
  };
  static thread_local entry entries[2];  // one per form: the loops alternate softmax and log
  entry& last = entries[log ? 1 : 0];
  const bool same = last.valid && last.log == log && last.zero_masked_rows == zero_masked_rows &&
                    std::memcmp(&last.temperature, &temperature, sizeof(T)) == 0 &&
                    last.x.size() == x.size() &&
                    (x.empty() || std::memcmp(last.x.data(), x.data(), x.size() * sizeof(T)) == 0);
  if (!same) {
    last.ref = smax::reference::softmax(
        x.data(), x.size(), log, {static_cast<long double>(temperature), zero_masked_rows});
    last.x = x;
    last.log = log;
    last.zero_masked_rows = zero_masked_rows;
    last.temperature = temperature;
    last.valid = true;
  }
  return last.ref;
}

// Checks the output y of one row x against the long-double reference with the bounds the public
// doc comments state: softmax relative 1e-6 (float) / 1e-14 (double) for outputs >= the smallest
// normal, plus |x - m|/T·2^-22 when T != 1; log-softmax |error| <= 2^-22·(|z| + 1 + log n)
// (float) / 1e-14·(|z| + 1 + log n) (double). Reports the first mismatch and how many there were.
template <class T>
::testing::AssertionResult output_matches_reference(std::vector<T> const& x, const T* y, bool log,
                                                    T temperature = 1,
                                                    bool zero_masked_rows = false) {
  const std::size_t n = x.size();
  const auto& ref = cached_softmax_reference(x, log, temperature, zero_masked_rows);
  long double m = -HUGE_VALL;
  for (T v : x) m = v > m ? v : m;
  const double eps = sizeof(T) == 4 ? std::ldexp(1.0, -22) : 1e-14;
  const double tiny = std::numeric_limits<T>::min();
  std::size_t failures = 0;
  ::testing::AssertionResult first = ::testing::AssertionSuccess();
  for (std::size_t i = 0; i < n; ++i) {
    ::testing::AssertionResult r = ::testing::AssertionSuccess();
    if (log) {
      const double bound = eps * (std::fabs(static_cast<double>(ref[i])) + 1 + std::log(double(n)));
      r = matches(y[i], ref[i], 0.0, bound, i, false);
    } else {
      const double spread =
          temperature == T(1) ? 0.0 : static_cast<double>((m - x[i]) / temperature);
      r = matches(y[i], ref[i], softmax_rtol<T> + eps * (std::isfinite(spread) ? spread : 0.0),
                  tiny, i);
    }
    if (!r && failures++ == 0) first = r;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return first << " [" << failures << " of " << n << " outputs out of bound" << (log ? ", log" : "")
               << ", n = " << n << "]";
}

// The same for the forward kernel of configuration C with the given algorithm on x.
template <class C, class T>
::testing::AssertionResult matches_reference(algorithm_id algorithm, bool log,
                                             std::vector<T> const& x, T temperature = 1,
                                             bool zero_masked_rows = false) {
  const std::size_t n = x.size();
  std::vector<T> y(n + 1, T(-7));  // one guard element past the end
  forward<C>(algorithm, log, x.data(), y.data(), n, temperature, zero_masked_rows);
  if (y[n] != T(-7)) return ::testing::AssertionFailure() << "wrote past the end";
  ::testing::AssertionResult r =
      output_matches_reference(x, y.data(), log, temperature, zero_masked_rows);
  if (!r) r << " [" << name_of(algorithm) << "]";
  return r;
}

// A `_rows` backward against its single-row form: batched(dx) writes all rows of a rows × cols
// matrix with leading dimension ld (> cols) into dx (prefilled with -7), single(r, dx_r) row r
// alone into cols values. The rows must equal the single rows bit for bit, the padding untouched.
template <class T, class Batched, class Single>
::testing::AssertionResult rows_equal_single_rows(std::size_t rows, std::size_t cols,
                                                  std::size_t ld, Batched const& batched,
                                                  Single const& single) {
  std::vector<T> dx(rows * ld, T(-7));
  batched(dx.data());
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<T> one(cols, T(-5));
    single(r, one.data());
    for (std::size_t i = 0; i < cols; ++i)
      if (!(dx[r * ld + i] == one[i] || (std::isnan(dx[r * ld + i]) && std::isnan(one[i]))))
        return ::testing::AssertionFailure() << "row " << r << ", " << i << ": " << dx[r * ld + i]
                                             << " against " << one[i] << " (cols " << cols << ")";
    for (std::size_t i = cols; i < ld; ++i)
      if (dx[r * ld + i] != T(-7))
        return ::testing::AssertionFailure() << "padding of row " << r << " written";
  }
  return ::testing::AssertionSuccess();
}

// Equal bits, or both NaN (any payload): what "bit for bit" means for outputs that may be NaN.
template <class T>
bool same_bits_or_both_nan(T a, T b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// The options a generic call uses: {} unless the family description gives sample_options() (a
// family with a required parameter, which {} leaves unset).
template <class Family, class = void>
struct sample_options {
  static typename Family::options get() { return {}; }
};
template <class Family>
struct sample_options<Family, std::void_t<decltype(Family::sample_options())>> {
  static typename Family::options get() { return Family::sample_options(); }
};

// Whether a family's options have zero_masked_rows.
template <class Opts, class = void>
struct has_zero_masked_rows : std::false_type {};
template <class Opts>
struct has_zero_masked_rows<Opts, std::void_t<decltype(Opts{}.zero_masked_rows)>>
    : std::true_type {};

}  // namespace smax_test
