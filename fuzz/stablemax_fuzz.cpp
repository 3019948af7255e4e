// Differential fuzzer of StableMax and log-StableMax (smax/stablemax.hpp): forward and backward
// (from x, the forward output and dy), on every instruction set, against the long-double
// reference; and the public header-only calls with zero_masked_rows.
//
// Bounds, as stablemax.hpp states them: stablemax relative error <= 1e-6 (double 1e-14) for
// outputs >= the smallest normal; log_stablemax |error| <= 2^-22·(|z| + 1 + log n) (double
// 1e-14·(...)); backward |dx_i - dx*_i| <= 16ε·g_i·(y_i·|dy_i| + y_i·sum_j y_j·|dy_j|) (log:
// 16ε·g_i·(|dy_i| + y_i·sum_j |dy_j|)), g_i = 1/(1 + |x_i|), against the VJP at the given y (z).
// Contract: masked entries exactly 0
// (-inf), backward 0 there; all masked a NaN row (0 / -inf with zero_masked_rows); NaN or +inf
// anywhere a NaN row; n = 1 exactly [1] / [0].

#include <smax/reference/stablemax.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, bool log) {
  if (n == 0) return;
  const auto ref = smax::reference::stablemax(x, n, log);
  const double eps = sizeof(T) == 4 ? 0x1p-22 : 1e-14, rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  for (std::size_t i = 0; i < n; ++i) {
    const long double e = ref[i];
    bool ok;
    double bound;
    if (log) {
      bound = eps * (std::fabs(static_cast<double>(e)) + 1 + std::log(double(n)));
      // A z below the lowest finite value rounds to -inf (as log-softmax's).
      ok = std::isinf(static_cast<T>(e)) || std::isnan(e) ? close(y[i], e, 0, 0)
                                                          : close(y[i], e, 0.0, bound, false);
    } else {
      bound = rtol;
      ok = close(y[i], e, rtol, std::numeric_limits<T>::min());
    }
    if (!ok)
      fail(x, n, i, y[i], e, bound, log ? "log_stablemax out of bound" : "stablemax out of bound");
  }
  if (n == 1 && std::isfinite(x[0]) && y[0] != (log ? T(0) : T(1)))
    fail(x, n, 0, y[0], log ? 0 : 1, 0, "n = 1 is not exactly [1] / [0]");
}

// dx from the kernel's own forward output y (z), against the VJP at that y (z) in long double (the
// header's dx*: the forward's error is not the backward's), and NaN where the reference from x
// is NaN.
template <class T>
void check_backward_row(const T* x, const T* y, const T* dy, const T* dx, std::size_t n, bool log) {
  if (n == 0) return;
  const auto from_x = smax::reference::stablemax_backward(x, dy, n, log);
  std::vector<long double> p(n);
  long double dot = 0, total = 0, weighted = 0, abs_total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = log ? std::exp(static_cast<long double>(y[i])) : static_cast<long double>(y[i]);
    const long double d = dy[i];
    dot += p[i] * d;
    total += d;
    weighted += p[i] * std::fabs(d);
    abs_total += std::fabs(d);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(from_x[i])) {
      if (!std::isnan(dx[i]))
        fail(x, n, i, dx[i], from_x[i], 0, "stablemax_backward of a NaN row is not NaN");
      continue;
    }
    const long double dyi = dy[i];
    const long double g = x[i] == -inf<T> ? 0 : 1 / (1 + std::fabs(static_cast<long double>(x[i])));
    const long double want = log ? g * (dyi - p[i] * total) : g * p[i] * (dyi - dot);
    const long double b =
        16 * epsilon<T> * g *
        (log ? std::fabs(dyi) + p[i] * abs_total : p[i] * std::fabs(dyi) + p[i] * weighted);
    const double bound = static_cast<double>(b) + std::numeric_limits<T>::min();
    if (!close(dx[i], want, 0.0, bound, false))
      fail(x, n, i, dx[i], want, bound,
           log ? "log_stablemax_backward out of bound" : "stablemax_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const bool zero_masked_rows = in.byte() & 1;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::stablemax_table<A>;
    for (bool log : {false, true}) {
      describe("%s, %s, %s, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
               log ? "log_stablemax" : "stablemax", s.rows, s.cols, s.ld,
               s.in_place ? "in place" : "out of place");
      auto b = prepare(x, s);
      if (s.rows != 0 && s.cols != 0)
        table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, log);
      b.check_untouched(x);
      for (std::size_t r = 0; r < s.rows; ++r)
        check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, log);
      if (s.cols == 0) continue;

      // Backward from this output; in place (dx = dy) when the shape says so.
      describe("%s, %s, %s, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
               log ? "log_stablemax_backward" : "stablemax_backward", s.rows, s.cols, s.ld,
               s.in_place ? "dx = dy" : "dx separate");
      std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
      table::backward(x.data(), s.ld, b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                      dx.data(), s.ld, s.rows, s.cols, log);
      for (std::size_t r = 0; r < s.rows; ++r)
        check_backward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, dy.data() + r * s.ld,
                           dx.data() + r * s.ld, s.cols, log);
    }
  });

  // The public header-only calls (this translation unit's instruction set): the table's bits, and
  // an all-masked row 0 (-inf) with zero_masked_rows.
  if (s.cols == 0) return;
  const smax::stablemax_options opts{zero_masked_rows};
  for (bool log : {false, true}) {
    describe("header-only %s, %s, rows %zu, cols %zu, ld %zu, zero_masked_rows %d",
             log ? "log_stablemax_rows" : "stablemax_rows", type_name<T>(), s.rows, s.cols, s.ld,
             zero_masked_rows);
    auto pub = prepare(x, s);
    auto tab = prepare(x, s);
    if (log)
      smax::log_stablemax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
    else
      smax::stablemax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
    smax::kernels::stablemax_table<xsimd::default_arch>::forward(tab.input(), s.ld, tab.output(),
                                                                 s.ld, s.rows, s.cols, log);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      bool all_masked = true;
      for (std::size_t i = 0; i < s.cols; ++i) all_masked = all_masked && xr[i] == -inf<T>;
      for (std::size_t i = 0; i < s.cols; ++i) {
        const T got = pub.y[r * s.ld + i];
        const T want =
            all_masked && zero_masked_rows ? (log ? -inf<T> : T(0)) : tab.y[r * s.ld + i];
        if (!same_bits_or_both_nan(got, want))
          fail(xr, s.cols, i, got, want, 0, "the header-only call differs from its table");
      }
    }
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
