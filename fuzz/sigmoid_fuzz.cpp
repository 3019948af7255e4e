// Differential fuzzer of sigmoid and sigmoid attention (smax/sigmoid.hpp): forward with a bias
// (the default -ln seq_len, or a set one) and backward, on every instruction set, against the
// long-double reference.
//
// Bounds, as sigmoid.hpp states them: <= 2 ulp (2.5 on SSE2) of σ(x + b) with x + b exact, for
// outputs >= the smallest normal (smaller ones may be flushed to 0); backward within 1.5 ulp
// (2.5 on SSE2) of dy·y·(1 - y) for the given y. Contract, elementwise: -inf -> 0, +inf -> 1,
// NaN -> NaN at that position only.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  smax::sigmoid_attention_options opts;
  const std::uint8_t how = in.byte();
  opts.seq_len = in.pick<std::size_t>({0, 1, 7, 1024, std::size_t(1) << 31, std::size_t(1) << 40});
  if (how & 1) opts.bias = in.pick<double>({0, 1, -1, 100, -1e30, 1e-30, 88.5, -88.5});
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const bool plain = how & 2;  // sigmoid itself (b = 0)
  // The bias as the kernel receives it (sigmoid.hpp's bound: -ln seq_len in double, rounded to T).
  const T bias =
      plain ? T(0) : static_cast<T>(smax::api::sigmoid_attention_family::bias(opts, s.cols));

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::sigmoid_table<A>;
    const double ulps = std::is_same<A, xsimd::sse2>::value ? 2.5 : 2.0;
    describe("%s, %s, %s, rows %zu, cols %zu, ld %zu, %s, bias %.9g", A::name(), type_name<T>(),
             plain ? "sigmoid" : "sigmoid_attention", s.rows, s.cols, s.ld,
             s.in_place ? "in place" : "out of place", static_cast<double>(bias));
    auto b = prepare(x, s);
    table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, bias);
    b.check_untouched(x);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t i = 0; i < s.cols; ++i) {
        const T xi = x[r * s.ld + i], yi = b.y[r * s.ld + i];
        const long double want = smax::reference::sigmoid(static_cast<long double>(xi) + bias);
        const double bound = want < std::numeric_limits<T>::min() ? std::numeric_limits<T>::min()
                                                                  : ulps * ulp<T>(want);
        if (!close(yi, want, 0.0, bound, false))
          fail(x.data() + r * s.ld, s.cols, i, yi, want, bound, "sigmoid out of bound");
      }
    // Backward from this output.
    std::vector<T> dx(dy.size(), canary<T>);
    if (s.rows != 0 && s.cols != 0)
      table::backward(b.y.data(), s.ld, dy.data(), s.ld, dx.data(), s.ld, s.rows, s.cols);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t i = 0; i < s.cols; ++i) {
        const long double yi = b.y[r * s.ld + i];
        const long double want = dy[r * s.ld + i] * yi * (1 - yi);
        const double bound = (smax::detail::has_native_fma<A>::value ? 1.5 : 2.5) * ulp<T>(want) +
                             std::numeric_limits<T>::min();
        if (!close(dx[r * s.ld + i], want, 0.0, bound, false))
          fail(x.data() + r * s.ld, s.cols, i, dx[r * s.ld + i], want, bound,
               "sigmoid_backward out of bound");
      }
  });
}

}  // namespace

SMAX_FUZZ_TARGET(run)
