// Differential fuzzer of MultiMax (smax/multimax.hpp): forward and backward with parameters t, r
// over their valid (finite) range, on every instruction set, against the long-double reference.
//
// Bounds, as multimax.hpp states them: relative error <= (1 + 1e-6)·e^δ_i - 1, δ_i =
// 2^-20·(W_i + max_j W_j) (double (1 + 1e-14)·e^δ_i - 1, δ_i = 2^-49·(...)) for outputs >= the
// smallest normal, W(x) = (1 + |t0| + |t1|)·(|x| + R) + (|t2| + |t3|)·(|x| + R)², R = max |r_k|,
// the maximum over the unmasked entries, against σ with the parameters rounded to the element
// type; backward each dx_i within 16ε·y_i·(|dy_i| + D)·S_i, D = sum_j y_j·|dy_j|. Rows where σ or
// one of its terms leaves the element type's range (M(x) of the header's valid range; |x - r|
// beyond ~1e19 for float) are unspecified and skipped. Contract: masked entries exactly 0, all
// masked, NaN or +inf a NaN row.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 2048);
  smax::kernels::multimax_parameters<T> p{};
  smax::reference::multimax_parameters ref_p;
  for (int k = 0; k < 8; ++k) {
    const T v = in.pick<T>({T(0), T(0), T(0.1), T(-0.1), T(0.3), T(1.5), T(-2), T(10), T(-0.01),
                            T(1e-30), T(1e3), T(-1e3)});
    (k < 4 ? p.t[k] : p.r[k - 4]) = v;
    (k < 4 ? ref_p.t[k] : ref_p.r[k - 4]) = v;
  }
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  long double R = 0;
  for (int k = 0; k < 4; ++k)
    R = std::max<long double>(R, std::fabs(static_cast<long double>(p.r[k])));
  const long double lin = 1 + std::fabs((long double)p.t[0]) + std::fabs((long double)p.t[1]);
  const long double quad = std::fabs((long double)p.t[2]) + std::fabs((long double)p.t[3]);
  const double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14, wscale = sizeof(T) == 4 ? 0x1p-20 : 0x1p-49;

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::multimax_table<A>;
    describe(
        "%s, %s, multimax, rows %zu, cols %zu, ld %zu, %s, t = (%g, %g, %g, %g), r = (%g, %g, %g, "
        "%g)",
        A::name(), type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place",
        (double)p.t[0], (double)p.t[1], (double)p.t[2], (double)p.t[3], (double)p.r[0],
        (double)p.r[1], (double)p.r[2], (double)p.r[3]);
    auto b = prepare(x, s);
    if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, p);
    b.check_untouched(x);
    for (std::size_t r = 0; r < s.rows && s.cols; ++r) {
      const T* xr = x.data() + r * s.ld;
      const T* yr = b.y.data() + r * s.ld;
      const std::size_t n = s.cols;
      const auto ref = smax::reference::multimax(xr, n, ref_p);
      std::vector<long double> w(n, 0);
      long double max_w = 0;
      bool unspecified = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(xr[i])) continue;
        const long double a = std::fabs(static_cast<long double>(xr[i])) + R;
        w[i] = lin * a + quad * a * a;
        max_w = std::max(max_w, w[i]);
        const long double sigma = smax::reference::multimax_sigma(xr[i], ref_p);
        // M(x) of multimax.hpp's valid range: no partial sum of σ may overflow.
        using smax::reference::multimax_relu;
        const long double v = xr[i], b0 = multimax_relu(ref_p.r[0] - v),
                          a1 = multimax_relu(v - ref_p.r[1]);
        const long double b2 = multimax_relu(ref_p.r[2] - v), a3 = multimax_relu(v - ref_p.r[3]);
        const long double magnitude = std::fabs(v) + std::fabs(ref_p.t[0]) * b0 +
                                      std::fabs(ref_p.t[1]) * a1 + std::fabs(ref_p.t[2]) * b2 * b2 +
                                      std::fabs(ref_p.t[3]) * a3 * a3;
        if (!(std::fabs(sigma) <= static_cast<long double>(big<T>)) ||
            !(magnitude <= static_cast<long double>(big<T>)) || (sizeof(T) == 4 && a > 1e19L))
          unspecified = true;
      }
      if (unspecified) continue;
      for (std::size_t i = 0; i < n; ++i) {
        // (1 + r)·e^δ - 1 (inf where e^δ overflows: then only the contract is checked).
        const double bound = (1 + rtol) * std::exp(wscale * static_cast<double>(w[i] + max_w)) - 1;
        if (!(bound < HUGE_VAL) && !std::isnan(ref[i])) {  // no accuracy promised: a probability
          if (!(yr[i] >= T(0) && yr[i] <= T(1)))
            fail(xr, n, i, yr[i], ref[i], bound, "multimax output outside [0, 1]");
          continue;
        }
        if (!close(yr[i], ref[i], bound, std::numeric_limits<T>::min()))
          fail(xr, n, i, yr[i], ref[i], bound, "multimax out of bound");
      }
      // Backward from this output.
      std::vector<T> dx(n, canary<T>);
      const T* dyr = dy.data() + r * s.ld;
      table::backward(xr, n, yr, n, dyr, n, dx.data(), n, 1, n, p, nullptr);
      std::vector<long double> yl(yr, yr + n), dyl(dyr, dyr + n);
      const auto g = smax::reference::multimax_backward(xr, yl, dyl, ref_p);
      long double D = 0;
      for (std::size_t i = 0; i < n; ++i) D += yl[i] * std::fabs(dyl[i]);
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(yl[i])) {
          if (!std::isnan(dx[i]))
            fail(xr, n, i, dx[i], NAN, 0, "multimax_backward of a NaN row is not NaN");
          continue;
        }
        const long double xi = xr[i];
        const long double S =
            1 + std::fabs((long double)p.t[0]) * (xi < p.r[0]) +
            std::fabs((long double)p.t[1]) * (xi > p.r[1]) +
            2 * std::fabs((long double)p.t[2]) * smax::reference::multimax_relu(p.r[2] - xi) +
            2 * std::fabs((long double)p.t[3]) * smax::reference::multimax_relu(xi - p.r[3]);
        const double bound = static_cast<double>(16 * epsilon<T> * yl[i] * (std::fabs(dyl[i]) + D) *
                                                 (xr[i] == -inf<T> ? 1 : S)) +
                             std::numeric_limits<T>::min();
        if (!close(dx[i], g.dx[i], 0.0, bound, false))
          fail(xr, n, i, dx[i], g.dx[i], bound, "multimax_backward out of bound");
      }
    }
  });
}

}  // namespace

SMAX_FUZZ_TARGET(run)
