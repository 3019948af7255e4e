// Differential fuzzer of Self-Adjust softmax (smax/sa_softmax.hpp): forward and backward (from x,
// the forward's own output and dy), normalised and plain, on every instruction set, float and
// double, in place and out of place, against the long-double reference; and the public
// header-only call with zero_masked_rows against its table.
//
// Bounds, as sa_softmax.hpp states them: forward relative error <= 1e-6 (double 1e-14) for outputs
// >= FLT_MIN (DBL_MIN), plain outputs only where also exp(x_i - x_max) >= FLT_MIN (DBL_MIN).
// Backward |dx_k - dx*_k| <= 16ε·(p_k·(|dy_k|·(1/D + w_k) + Σ_i p_i·w_i·|dy_i|) + [k = first
// argmin, x_min < 0]·Σ_i p_i·(1 + w_i)·|dy_i|/D + [k = first argmax, x_max > 0]·Σ_i p_i·w_i·
// |dy_i|/D) (normalised) and 16ε·p_k·(|dy_k|·(1 + |x_k|) + Σ_i |dy_i·y_i|) (plain), for entries
// with exp(x_k - x_max) >= FLT_MIN (DBL_MIN). Contract: -inf entries output 0 and backward 0; all
// -inf a NaN row (0 with zero_masked_rows); NaN or +inf a NaN row, backward too; c = a
// (normalised) a zero row and dx = 0; n = 1 gives [x] (plain), [1] for x > 0 and [0] otherwise
// (normalised).

#include <smax/reference/sa_softmax.hpp>
#include <smax/sa_softmax.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

// exp(x_k - x_max) >= the smallest normal number of T (the header's condition), in long double.
template <class T>
bool weight_normal(T xk, long double x_max) {
  return std::exp(static_cast<long double>(xk) - x_max) >=
         static_cast<long double>(std::numeric_limits<T>::min());
}

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, bool normalized) {
  if (n == 0) return;
  const auto parts = smax::reference::sa_softmax_parts_of(x, n, normalized);
  const auto ref = smax::reference::sa_softmax(x, n, normalized);
  const char* what = normalized ? "sa_softmax (normalised) out of bound" : "sa_softmax (plain) out of bound";
  for (std::size_t i = 0; i < n; ++i) {
    if (parts.nan_row) {
      if (!std::isnan(y[i])) fail(x, n, i, y[i], ref[i], 0, "sa_softmax: NaN/+inf/all-masked row is not NaN");
      continue;
    }
    if (x[i] == -inf<T>) {
      if (y[i] != T(0)) fail(x, n, i, y[i], 0.0L, 0, "sa_softmax: masked entry is not 0");
      continue;
    }
    if (normalized && parts.c == parts.a) {
      if (y[i] != T(0)) fail(x, n, i, y[i], 0.0L, 0, "sa_softmax: c = a row is not zero");
      continue;
    }
    if (!normalized && !weight_normal(x[i], parts.x_max)) continue;  // unbounded there
    if (!close(y[i], ref[i], rtol<T>, std::numeric_limits<T>::min(), false))
      fail(x, n, i, y[i], ref[i], rtol<T>, what);
  }
  if (n == 1 && std::isfinite(x[0])) {
    const T want = !normalized ? x[0] : (x[0] > 0 ? T(1) : T(0));
    if (!same_bits(y[0], want) && !(y[0] == want && want == T(0)))
      fail(x, n, 0, y[0], want, 0, "sa_softmax: n = 1 is not [x] / [1] / [0]");
  }
}

template <class T>
void check_backward_row(const T* x, const T* y, const T* dy, const T* dx, std::size_t n,
                        bool normalized) {
  if (n == 0) return;
  const auto r = smax::reference::sa_softmax_parts_of(x, n, normalized);
  auto want = smax::reference::sa_softmax_backward(x, dy, n, normalized);
  if (r.nan_row) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(dx[i]))
        fail(x, n, i, dx[i], want[i], 0, "sa_softmax_backward: NaN row is not NaN");
    return;
  }
  const long double e = epsilon<T>;
  long double pw = 0, p1w = 0, py = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const long double d = std::fabs(static_cast<long double>(dy[i]));
    pw += r.p[i] * r.w[i] * d;
    p1w += r.p[i] * (1 + r.w[i]) * d;
    py += d * std::fabs(r.p[i] * r.w[i]);
  }
  const long double D = r.c - r.a;
  // dx* is the exact VJP with B = <dy, y> over the y passed in (the header's bound): dx depends on
  // y only through B, linearly, so the reference is moved by dB times its derivative.
  long double B = 0, B_exact = 0, abs_B = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (x[j] != -inf<T>) {
      B_exact += static_cast<long double>(dy[j]) * r.p[j] * r.w[j];
      B += static_cast<long double>(dy[j]) * y[j];
      abs_B += std::fabs(static_cast<long double>(dy[j]) * y[j]);
    }
  if (!(normalized && D == 0))
    for (std::size_t i = 0; i < n; ++i) {
      if (x[i] == -inf<T>) continue;
      long double d_by_b = -r.p[i];
      if (normalized && i == r.first_min && r.x_min < 0) d_by_b += 1 / D;
      if (normalized && i == r.first_max && r.x_max > 0) d_by_b -= 1 / D;
      want[i] += d_by_b * (B - B_exact);
    }
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T>) {
      if (dx[i] != T(0)) fail(x, n, i, dx[i], 0.0L, 0, "sa_softmax_backward: masked entry is not 0");
      continue;
    }
    if (normalized && D == 0) {
      if (dx[i] != T(0)) fail(x, n, i, dx[i], 0.0L, 0, "sa_softmax_backward: c = a gives dx != 0");
      continue;
    }
    // The backward bound's condition: p_k a normal number (below, dx_k is formed from a subnormal
    // or flushed p_k).
    if (!(r.p[i] >= static_cast<long double>(std::numeric_limits<T>::min()))) continue;
    // The plain form's stated range: |dy_k·(1 + x_k)| within T's, Σ|dy_i·y_i| below half of it.
    if (!normalized) {
      const long double top = static_cast<long double>(big<T>);
      const long double g = static_cast<long double>(dy[i]) * (1 + static_cast<long double>(x[i]));
      if (std::fabs(g) > top || abs_B >= top / 2) continue;
    }
    // dx* beyond T's range: the bound is infinite there, and dx may be ±inf or NaN.
    if (std::fabs(want[i]) >= static_cast<long double>(big<T>)) continue;
    const long double d = std::fabs(static_cast<long double>(dy[i]));
    long double b;
    if (!normalized)
      b = 16 * e * r.p[i] * (d * (1 + std::fabs(static_cast<long double>(x[i]))) + py);
    else
      b = 16 * e *
          (r.p[i] * (d * (1 / D + r.w[i]) + pw) + (i == r.first_min && r.x_min < 0 ? p1w / D : 0) +
           (i == r.first_max && r.x_max > 0 ? pw / D : 0));
    // The absolute terms: a subnormal dx_k, and (normalised) a subnormal p_k·dy_k times (1 + w)/D.
    const long double tiny = static_cast<long double>(std::numeric_limits<T>::denorm_min());
    b += 2 * tiny + (normalized ? tiny * (1 + r.w[i]) / D : 0);
    // (close: where want ± b passes T's range, ±inf on that side is within the bound.)
    if (!close(dx[i], want[i], 0.0, static_cast<double>(b), false))
      fail(x, n, i, dx[i], want[i], static_cast<double>(b),
           normalized ? "sa_softmax_backward (normalised) out of bound"
                      : "sa_softmax_backward (plain) out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  const bool zero_masked_rows = flags & 1;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::sa_softmax_table<A>;
    for (bool normalized : {true, false}) {
      describe("%s, %s, sa_softmax %s, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
               normalized ? "normalised" : "plain", s.rows, s.cols, s.ld,
               s.in_place ? "in place" : "out of place");
      auto b = prepare(x, s);
      if (s.rows != 0 && s.cols != 0)
        table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, normalized);
      b.check_untouched(x);
      for (std::size_t r = 0; r < s.rows; ++r)
        check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, normalized);
      if (s.cols == 0) continue;

      describe("%s, %s, sa_softmax_backward %s, rows %zu, cols %zu, ld %zu, %s", A::name(),
               type_name<T>(), normalized ? "normalised" : "plain", s.rows, s.cols, s.ld,
               s.in_place ? "dx = dy" : "dx separate");
      std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
      table::backward(x.data(), s.ld, b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                      dx.data(), s.ld, s.rows, s.cols, normalized);
      for (std::size_t r = 0; r < s.rows; ++r) {
        check_backward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, dy.data() + r * s.ld,
                           dx.data() + r * s.ld, s.cols, normalized);
        if (!s.in_place)  // the padding of dx untouched
          for (std::size_t i = s.cols; i < s.ld; ++i)
            if (!same_bits(dx[r * s.ld + i], canary<T>))
              fail(x.data() + r * s.ld, s.cols, i, dx[r * s.ld + i], canary<T>, 0,
                   "sa_softmax_backward wrote into the padding between rows");
      }
    }
  });

  // The public header-only call (this translation unit's instruction set): the table's bits, and
  // an all-masked row 0 with zero_masked_rows.
  if (s.cols == 0) return;
  for (bool normalized : {true, false}) {
    const smax::sa_softmax_options opts{normalized, zero_masked_rows};
    describe("header-only sa_softmax_rows, %s, %s, rows %zu, cols %zu, ld %zu, zero_masked_rows %d",
             type_name<T>(), normalized ? "normalised" : "plain", s.rows, s.cols, s.ld,
             zero_masked_rows);
    auto pub = prepare(x, s);
    auto tab = prepare(x, s);
    smax::sa_softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
    smax::kernels::sa_softmax_table<xsimd::default_arch>::forward(tab.input(), s.ld, tab.output(),
                                                                  s.ld, s.rows, s.cols, normalized);
    pub.check_untouched(x);
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
}

}  // namespace

SMAX_FUZZ_TARGET(run)
