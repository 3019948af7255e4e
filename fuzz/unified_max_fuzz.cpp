// Differential fuzzer of unified-max softmax (smax/unified_max.hpp): the forward pass on every
// instruction set, float and double, in place and out of place, with options φ, a, b inside and
// outside the fast-path window (and invalid ones through the table), against softmax's long-double
// reference whether or not a row fell back; the returned count of fallen-back rows against an
// independent count; and the public header-only call (its y bits and its count) against its
// table. The backward pass is softmax's (softmax_fuzz covers it).
//
// Bound, as unified_max.hpp states it: softmax's, relative error <= 1e-6 (double 1e-14) for
// outputs >= FLT_MIN (DBL_MIN), fast path or fallback. Count: x is in range when lo <= x <= hi,
// lo = the smallest T >= φ + a, hi = the largest T <= φ + b (the sums in double, then inward to
// T); a row is out of range when it holds a finite entry outside [lo, hi], a NaN or +inf (-inf
// is masked, never out of range; an all -inf row is not reported). For -86 <= a < b <= 84 (float)
// or -707 <= a < b <= 705 - ln n (double) the count is exactly the out-of-range rows; for wider
// (a, b) a call may compute and report every row (and a row whose sum overflows falls back), so
// the count lies between the out-of-range rows and all rows. Contract: n = 0 does nothing and
// returns 0; -inf entries 0; all -inf a NaN row (0 with zero_masked_rows); NaN or +inf a NaN
// row; φ, a or b not finite or a >= b: every row NaN and 0 returned.

#include <smax/reference/softmax.hpp>
#include <smax/unified_max.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

// The smallest T >= v and the largest T <= v.
template <class T>
T up(double v) {
  T f = static_cast<T>(v);
  if (static_cast<double>(f) < v) f = std::nextafter(f, inf<T>);
  return f;
}
template <class T>
T down(double v) {
  T f = static_cast<T>(v);
  if (static_cast<double>(f) > v) f = std::nextafter(f, -inf<T>);
  return f;
}

template <class T>
bool out_of_range(const T* x, std::size_t n, T lo, T hi) {
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == inf<T>) return true;
    if (x[i] == -inf<T>) continue;
    if (x[i] < lo || x[i] > hi) return true;
  }
  return false;
}

template <class T>
void check_row(const T* x, const T* y, std::size_t n) {
  if (n == 0) return;
  const auto ref = smax::reference::softmax(x, n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T> && !std::isnan(ref[i])) {
      if (y[i] != T(0)) fail(x, n, i, y[i], 0.0L, 0, "unified_max: masked entry is not 0");
      continue;
    }
    if (!close(y[i], ref[i], rtol<T>, std::numeric_limits<T>::min(), false))
      fail(x, n, i, y[i], ref[i], rtol<T>, "unified_max_softmax out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  const bool zero_masked_rows = flags & 1;
  double phi = in.pick<double>({6, 0, -6, 1, -1, 20, 1000, -1000, 1e30, -1e30, 3e38, -3e38, 100,
                                1e-30, 0.3466, 1e20, 1e300});
  double a = in.pick<double>({-80, -86, -20, -5, -1, 0, -0.5, -707, -1000, -90, -86.8, -1e300});
  double b = in.pick<double>({80, 84, 20, 5, 1, 0.5, 705, 700, 1000, 90, 87.5, 1e300});
  if (flags & 2) phi += static_cast<double>(static_cast<std::int16_t>(in.u16())) / 64;
  if (flags & 4) a = -static_cast<double>(in.u16()) / 256;
  if (flags & 8) b = static_cast<double>(in.u16()) / 256;
  if ((flags & 0xF0) == 0xF0) {  // invalid options
    switch (in.byte() % 5) {
      case 0: phi = NAN; break;
      case 1: b = a; break;
      case 2: std::swap(a, b); break;
      case 3: b = HUGE_VAL; break;
      default: a = -HUGE_VAL; break;
    }
  }
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);

  const bool valid = std::isfinite(phi) && std::isfinite(a) && std::isfinite(b) && a < b;
  const T lo = up<T>(phi + a), hi = down<T>(phi + b);
  const bool window =
      valid && (sizeof(T) == 4 ? -86 <= a && b <= 84
                               : -707 <= a && b <= 705 - std::log(static_cast<double>(s.cols)));
  std::size_t expected = 0;
  if (s.cols != 0)
    for (std::size_t r = 0; r < s.rows; ++r)
      expected += out_of_range(x.data() + r * s.ld, s.cols, lo, hi);

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::unified_max_table<A>;
    describe("%s, %s, unified_max_softmax, rows %zu, cols %zu, ld %zu, %s, phi %.17g, a %.17g, "
             "b %.17g (lo %.9g, hi %.9g)",
             A::name(), type_name<T>(), s.rows, s.cols, s.ld,
             s.in_place ? "in place" : "out of place", phi, a, b, double(lo), double(hi));
    auto buf = prepare(x, s);
    const std::size_t got =
        s.rows != 0 && s.cols != 0
            ? table::forward(buf.input(), s.ld, buf.output(), s.ld, s.rows, s.cols, phi, a, b)
            : 0;
    buf.check_untouched(x);
    if (!valid) {
      if (got != 0) fail(x.data(), s.cols, 0, double(got), 0, 0, "unified_max: invalid options report rows");
      for (std::size_t r = 0; r < s.rows; ++r)
        for (std::size_t i = 0; i < s.cols; ++i)
          if (!std::isnan(buf.y[r * s.ld + i]))
            fail(x.data() + r * s.ld, s.cols, i, buf.y[r * s.ld + i], NAN, 0,
                 "unified_max: invalid options do not give NaN rows");
      return;
    }
    for (std::size_t r = 0; r < s.rows; ++r)
      check_row(x.data() + r * s.ld, buf.y.data() + r * s.ld, s.cols);
    if (window ? got != expected : (got < expected || got > (s.cols ? s.rows : 0))) {
      for (std::size_t r = 0; r < s.rows; ++r) {
        const T* xr = x.data() + r * s.ld;
        std::fprintf(stderr, "row %zu: out of range %d, max %.9g, min %.9g\n", r,
                     int(out_of_range(xr, s.cols, lo, hi)), double(*std::max_element(xr, xr + s.cols)),
                     double(*std::min_element(xr, xr + s.cols)));
      }
      fail(x.data(), s.cols, 0, double(got), expected, 0,
           window ? "unified_max: fallback count differs from the rows out of range"
                  : "unified_max: fallback count below the rows out of range or above rows");
    }
  });

  // The public header-only call (this translation unit's instruction set) against its table,
  // with valid options only (invalid ones are a precondition, asserted in debug builds).
  if (s.cols == 0 || !valid) return;
  const smax::unified_max_options opts{phi, a, b, zero_masked_rows};
  describe("header-only unified_max_softmax_rows, %s, rows %zu, cols %zu, ld %zu, phi %.17g, "
           "a %.17g, b %.17g, zero_masked_rows %d",
           type_name<T>(), s.rows, s.cols, s.ld, phi, a, b, zero_masked_rows);
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  const std::size_t pub_count =
      smax::unified_max_softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  const std::size_t tab_count = smax::kernels::unified_max_table<xsimd::default_arch>::forward(
      tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, phi, a, b);
  pub.check_untouched(x);
  // With zero_masked_rows the header-only call rewrites the all -inf rows and does not report
  // them; the table may (the finding above: calls computed by softmax's kernels report every row).
  std::size_t masked_rows = 0;
  for (std::size_t r = 0; r < s.rows; ++r) {
    bool all = true;
    for (std::size_t i = 0; i < s.cols; ++i) all = all && x[r * s.ld + i] == -inf<T>;
    masked_rows += all;
  }
  if (zero_masked_rows ? !(pub_count <= tab_count && tab_count <= pub_count + masked_rows)
                       : pub_count != tab_count)
    fail(x.data(), s.cols, 0, double(pub_count), tab_count, 0,
         "the header-only call's count differs from its table's");
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* xr = x.data() + r * s.ld;
    bool all_masked = true;
    for (std::size_t i = 0; i < s.cols; ++i) all_masked = all_masked && xr[i] == -inf<T>;
    for (std::size_t i = 0; i < s.cols; ++i) {
      const T got = pub.y[r * s.ld + i];
      const T want = all_masked && zero_masked_rows ? T(0) : tab.y[r * s.ld + i];
      if (!same_bits_or_both_nan(got, want))
        fail(xr, s.cols, i, got, want, 0, "the header-only call differs from its table");
    }
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
