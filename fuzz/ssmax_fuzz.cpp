// Differential fuzzer of SSMax (smax/ssmax.hpp): y = softmax(λ·x), λ = s·ln n + b, forward and
// backward, with s, b and n over their range (λ = 0, λ < 0, huge and tiny λ, non-finite λ), on
// every instruction set, against the long-double reference.
//
// Bounds, as ssmax.hpp states them: relative error <= 1e-6 + |x_i - m|·|λ|·2^-22 (double
// 1e-14 + |x_i - m|·|λ|·2^-51) for outputs >= the smallest normal, m the entry where λ·x is
// largest; backward as softmax's with T = 1/λ. Contract: masks stay masks for every λ, all masked a
// NaN row (0 with zero_masked_rows), NaN or +inf a NaN row, a non-finite λ a NaN row.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  smax::ssmax_options opts;
  opts.s = in.pick<double>({0.43, 0.43, 0, 1, -1, 1e-30, 1e30, 2.5, -0.43, 1e300});
  opts.bias = in.pick<double>({0, 0, 1, -3, 0.5, -1e30, 1e-10, 100, -100});
  opts.n = in.pick<std::size_t>({0, 0, 1, 2, 18, 1000, std::size_t(1) << 40});
  opts.zero_masked_rows = in.byte() & 1;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const double nk = static_cast<double>(opts.n ? opts.n : s.cols);
  const long double lambda = opts.s * std::log(static_cast<long double>(nk)) + opts.bias;
  const double eps = sizeof(T) == 4 ? 0x1p-22 : 0x1p-51, rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::ssmax_table<A>;
    describe(
        "%s, %s, ssmax, rows %zu, cols %zu, ld %zu, %s, s %g, b %g, n %zu, zero_masked_rows %d",
        A::name(), type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place",
        opts.s, opts.bias, opts.n, opts.zero_masked_rows);
    auto b = prepare(x, s);
    if (s.rows != 0 && s.cols != 0)
      smax::api::ssmax_family::forward(A{}, b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, opts,
                                       smax::api::algorithm_choice::automatic);
    b.check_untouched(x);
    if (s.cols == 0) return;
    const T lambda_t = static_cast<T>(lambda);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      const T* yr = b.y.data() + r * s.ld;
      const std::size_t n = s.cols;
      // The reference takes λ exactly; a λ that is not finite in T is a NaN row.
      auto ref = smax::reference::ssmax(xr, n, lambda, opts.zero_masked_rows);
      if (!std::isfinite(lambda_t)) ref.assign(n, NAN);
      long double m = NAN, best = -HUGE_VALL;
      for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(xr[i]) && lambda * xr[i] >= best) best = lambda * xr[i], m = xr[i];

      // The header's bound: softmax's with 1/T = λ, plus the rounding of λ = s·ln n + b in double
      // relative to its terms, 2^-51·(|s·ln n| + |b|)·(|x_i - m| + max_j |x_j - m|).
      long double max_spread = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(xr[i])) max_spread = std::fmax(max_spread, std::fabs(xr[i] - m));
      const long double lambda_terms =
          0x1p-51L * (std::fabs(opts.s * std::log((long double)nk)) + std::fabs(opts.bias));
      for (std::size_t i = 0; i < n; ++i) {
        const long double d = std::isfinite(xr[i]) ? std::fabs(xr[i] - m) : 0;
        const double bound = rtol + static_cast<double>(d * std::fabs(lambda) * eps +
                                                        lambda_terms * (d + max_spread));
        if (!close(yr[i], ref[i], bound, std::numeric_limits<T>::min()))
          fail(xr, n, i, yr[i], ref[i], bound, "ssmax out of bound");
      }
      if (!std::isfinite(lambda_t)) continue;
      // Backward: dx = λ·y ⊙ (dy - <dy, y>), softmax's bound with 1/T = λ, for the λ the kernel
      // receives, the inner sum taken in magnitudes as softmax.hpp states it.
      const T lambda_kernel = table::lambda(
          opts.s, opts.bias, smax::api::ssmax_family::keys(opts, s.cols), static_cast<T*>(nullptr));
      std::vector<T> dx(n, canary<T>);
      const T* dyr = dy.data() + r * s.ld;
      smax::api::ssmax_family::backward(A{}, xr, n, yr, n, dyr, n, dx.data(), n, 1, n, opts,
                                        nullptr);
      long double dot = 0, second = 0;
      for (std::size_t i = 0; i < n; ++i)
        dot += (long double)dyr[i] * yr[i], second += std::fabs((long double)dyr[i] * yr[i]);
      for (std::size_t i = 0; i < n; ++i) {
        const long double want = (long double)lambda_kernel * yr[i] * (dyr[i] - dot);
        const double bound =
            static_cast<double>(
                16 * epsilon<T> * std::fabs((long double)lambda_kernel) *
                (std::fabs((long double)yr[i] * dyr[i]) + std::fabs((long double)yr[i]) * second)) +
            std::numeric_limits<T>::min();
        if (!close(dx[i], want, 0.0, bound, false))
          fail(xr, n, i, dx[i], want, bound, "ssmax_backward out of bound");
      }
    }
  });
}

}  // namespace

SMAX_FUZZ_TARGET(run)
