// Differential fuzzer of softpick (smax/softpick.hpp): forward with every algorithm (three-pass,
// online, the automatic choice) and eps over its valid range (0 to huge), and the backward pass,
// on every instruction set, against the long-double reference.
//
// Bounds, as softpick.hpp states them: relative error <= 1e-6 (double 1e-14) for outputs >= the
// smallest normal; backward |error| <= 8·r·(e^(x_k - m)/S'·(|dy_k| + |c| + sum_j |dy_j·y_j|) +
// [k = k*]·eps/S'·(|c| + sum_j |dy_j·y_j|)), r = 1e-6 (1e-14), S' = sum_j |a_j| + eps,
// c = <dy, y>, k* the first maximum (the backward pass of rows holding
// subnormal inputs is unspecified). Contract: masked entries exactly 0; no positive entry gives
// zeros; all masked, NaN or +inf give a NaN row.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
using smax::kernels::softpick_algorithm;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, double eps) {
  if (n == 0) return;
  const auto ref = smax::reference::softpick(x, n, static_cast<long double>(eps));
  for (std::size_t i = 0; i < n; ++i) {
    if (!close(y[i], ref[i], rtol<T>, std::numeric_limits<T>::min(), true))
      fail(x, n, i, y[i], ref[i], rtol<T>, "softpick out of bound");
  }
}

template <class T>
void check_backward_row(const T* x, const T* y, const T* dy, const T* dx, std::size_t n,
                        double eps) {
  if (n == 0 || row_has_subnormal(x, n)) return;  // unspecified there
  const long double m = row_max(x, n);
  std::vector<long double> dyl(dy, dy + n);
  const auto ref = smax::reference::softpick_backward(x, dyl, n, static_cast<long double>(eps));
  // S' and c as the reference forms them, and sum |dy·y|.
  long double s = eps, c = 0, abs_c = 0;
  const auto yref = smax::reference::softpick(x, n, static_cast<long double>(eps));
  for (std::size_t i = 0; i < n; ++i) {
    const long double v = x[i];
    if (v == -HUGE_VALL) continue;
    s += std::fabs(v > 0 ? std::exp(v - m) * -std::expm1(-v) : std::expm1(v) * std::exp(-m));
    c += dyl[i] * static_cast<long double>(y[i]);
    abs_c += std::fabs(dyl[i] * static_cast<long double>(y[i]));
  }
  (void)yref;
  const std::size_t k_star = static_cast<std::size_t>(std::find(x, x + n, static_cast<T>(m)) - x);
  for (std::size_t i = 0; i < n; ++i) {
    const long double w = m > 0 && std::isfinite(m) && s > 0 && x[i] != -inf<T>
                              ? std::exp(static_cast<long double>(x[i]) - m) / s
                              : 0;
    // At k*, the eps term -c·eps/S' (of size up to |c|) carries c's error and its own rounding.
    long double b = w * (std::fabs(dyl[i]) + std::fabs(c) + abs_c) +
                    (i == k_star && s > 0 ? eps / s * (std::fabs(c) + abs_c) : 0);
    // A weight e^(x_k - m)/S' below the smallest normal number may be flushed to 0 (outputs below it
    // may be), which takes its product with the gradient terms along.
    const long double tiny = std::numeric_limits<T>::min();
    const double bound =
        static_cast<double>(8 * rtol<T> * b +
                            (w < tiny ? tiny * (std::fabs(dyl[i]) + std::fabs(c) + abs_c) : 0)) +
        std::numeric_limits<T>::min();
    if (!close(dx[i], ref[i], 0.0, bound, false))
      fail(x, n, i, dx[i], ref[i], bound, "softpick_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const double eps =
      in.pick<double>({1e-8, 1e-8, 1e-6, 0, 1, 1e-30, 1e-300, 4.9e-324, 1e30, 1e300, 0.5});
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::softpick_table<A>;
    std::vector<T> y_auto;
    for (softpick_algorithm a : {softpick_algorithm::automatic, softpick_algorithm::three_pass,
                                 softpick_algorithm::online}) {
      describe("%s, %s, softpick %s, rows %zu, cols %zu, ld %zu, %s, eps %g", A::name(),
               type_name<T>(),
               a == softpick_algorithm::online       ? "online"
               : a == softpick_algorithm::three_pass ? "three_pass"
                                                     : "automatic",
               s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place", eps);
      auto b = prepare(x, s);
      if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, eps, a);
      b.check_untouched(x);
      for (std::size_t r = 0; r < s.rows; ++r)
        check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, eps);
      if (a == softpick_algorithm::automatic) y_auto = b.y;
    }
    if (s.cols == 0) return;
    describe("%s, %s, softpick_backward, rows %zu, cols %zu, ld %zu, %s, eps %g", A::name(),
             type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "dx = dy" : "dx separate", eps);
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(x.data(), s.ld, y_auto.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                    dx.data(), s.ld, s.rows, s.cols, eps);
    for (std::size_t r = 0; r < s.rows; ++r)
      check_backward_row(x.data() + r * s.ld, y_auto.data() + r * s.ld, dy.data() + r * s.ld,
                         dx.data() + r * s.ld, s.cols, eps);
  });

  if (s.cols == 0) return;
  describe("header-only softpick_rows, %s, rows %zu, cols %zu, ld %zu, eps %g", type_name<T>(),
           s.rows, s.cols, s.ld, eps);
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::softpick_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, smax::softpick_options{eps});
  smax::kernels::softpick_table<xsimd::default_arch>::forward(
      tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, eps, softpick_algorithm::automatic);
  for (std::size_t k = 0; k < pub.y.size(); ++k)
    if (!same_bits_or_both_nan(pub.y[k], tab.y[k]))
      fail(x.data(), s.cols, k, pub.y[k], tab.y[k], 0,
           "the header-only call differs from its table");
}

}  // namespace

SMAX_FUZZ_TARGET(run)
