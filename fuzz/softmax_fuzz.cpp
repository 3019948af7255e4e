// Differential fuzzer of the softmax family (smax/softmax.hpp, log_softmax.hpp, online.hpp):
// softmax and log-softmax with every algorithm (three-pass, blocked three-pass, online, two-pass,
// the automatic choice), the online state (reduce chunks, merge in either order, normalise each
// chunk), both backward passes, and the axis kernel (float columns: softmax_table::forward_axis),
// on every instruction set, against the long-double reference; and the 16-bit paths of float rows
// (forward_widened, the 16-bit online pass 1) against the float kernels on the widened rows, bit
// for bit.
//
// Bounds, as the README and softmax.hpp state them: softmax relative error <= 1e-6 (double
// 1e-14) for outputs >= the smallest normal, plus |x - m|/T·2^-22 (double 1e-14) when T != 1;
// log-softmax |error| <= 2^-22·(|z| + 1 + log n) (double 1e-14·(...)); backward within 16 ulp of
// the magnitudes of the VJP's two terms. Contract: masked entries exactly 0 (-inf), all masked a
// NaN row (0 / -inf with zero_masked_rows), NaN or +inf anywhere a NaN row, n = 1 gives exactly
// [1] / [0], an invalid temperature a NaN row.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
using smax::kernels::algorithm_id;

template <class T>
T decode_temperature(reader& in) {
  const std::uint8_t k = in.byte();
  if (k < 96) return T(1);
  if (k < 240)
    return static_cast<T>(in.pick<double>({0.5, 2, 1e-30, 1e-10, 1e-6, 1e-3, 0.1, 0.3, 3.7, 10, 1e6,
                                           1e30, 1e38, 3e38, 1.17549435e-38, 1e-300, 1e300}));
  if (k < 248) return in.pick<T>({T(0), -T(0), T(-1), qnan<T>, inf<T>, -inf<T>, big<T>});
  const T t = std::fabs(in.raw<T>());
  return t;
}

const char* name_of(algorithm_id a) {
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

template <class T>
bool valid_temperature(T t) {
  return t > T(0) && t < inf<T>;
}

// One output row of softmax / log-softmax against the reference, with the stated bound.
template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, bool log, T temperature,
                       bool zero_masked_rows, algorithm_id algorithm, bool single_is_exact = true) {
  if (n == 0) return;
  (void)algorithm;  // every algorithm is held to the same bound
  const auto ref = smax::reference::softmax(
      x, n, log, {static_cast<long double>(temperature), zero_masked_rows});
  const long double m = row_max(x, n);
  const long double t = temperature;
  const double eps = sizeof(T) == 4 ? 0x1p-22 : 1e-14;
  const double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
  const double tiny = std::numeric_limits<T>::min();
  for (std::size_t i = 0; i < n; ++i) {
    const long double e = ref[i];
    bool ok;
    double bound;
    if (log) {
      bound = eps * (std::fabs(static_cast<double>(e)) + 1 + std::log(double(n)));
      ok = close(y[i], e, 0.0, bound, false);
      if (std::isinf(static_cast<T>(e)) || std::isnan(e)) ok = close(y[i], e, 0, 0);
    } else {
      const double spread = temperature == T(1) ? 0.0 : static_cast<double>((m - x[i]) / t);
      bound = rtol + eps * (std::isfinite(spread) ? spread : 0.0);
      ok = close(y[i], e, bound, tiny);
    }
    if (!ok)
      fail(x, n, i, y[i], e, bound, log ? "log-softmax out of bound" : "softmax out of bound");
  }
  // n = 1: exactly [1] / [0] for a finite entry (the softmax calls' contract; the online state
  // promises the row's softmax within the bound).
  if (single_is_exact && n == 1 && std::isfinite(x[0]) && valid_temperature(temperature) &&
      y[0] != (log ? T(0) : T(1)))
    fail(x, n, 0, y[0], log ? 0 : 1, 0, "n = 1 is not exactly [1] / [0]");
}

// dx against the reference VJP given the forward output y: within 16 ulp of the magnitudes of
// the two terms, the second's inner sum taken in magnitudes, as softmax.hpp and log_softmax.hpp
// state it: 16ε·(1/T)·y_i·(|dy_i| + sum_j |dy_j·y_j|) (log: (|dy_i| + e^(z_i)·sum_j |dy_j|)).
template <class T>
void check_backward_row(const T* x, std::size_t n, const T* y, const T* dy, const T* dx, bool log,
                        T temperature) {
  std::vector<long double> yl(y, y + n), dyl(dy, dy + n);
  const auto ref =
      smax::reference::backward(yl, dyl, log, {static_cast<long double>(temperature), false});
  long double second = 0;
  for (std::size_t i = 0; i < n; ++i) second += std::fabs(log ? dyl[i] : dyl[i] * yl[i]);
  const long double t = temperature;
  for (std::size_t i = 0; i < n; ++i) {
    const long double t1 = log ? std::fabs(dyl[i]) / t : std::fabs(yl[i] * dyl[i]) / t;
    const long double t2 = (log ? std::exp(yl[i]) : std::fabs(yl[i])) * second / t;
    const double bound =
        static_cast<double>(16 * epsilon<T> * (t1 + t2)) + std::numeric_limits<T>::min();
    if (!close(dx[i], ref[i], 0.0, bound, !log))
      fail(x, n, i, dx[i], ref[i], bound,
           log ? "log_softmax_backward out of bound" : "softmax_backward out of bound");
  }
}

// The 16-bit paths of float rows (api/half.hpp's kernels): x rounded to H, then
// forward_widened (the kernels' first pass widens) against forward on the widened rows, and the
// online pass 1 of each row read as H against the float pass on its widened row, bit for bit,
// where they take the call (they may decline, having written nothing).
template <class A, class H>
void check_widened(std::vector<float> const& x, shape const& s, float temperature, unsigned flags,
                   bool log, bool zero_masked_rows) {
  using table = smax::kernels::softmax_table<A>;
  describe("%s, %s rows from %s, rows %zu, cols %zu, ld %zu, T = %.9g, zero_masked_rows %d",
           A::name(), log ? "log_softmax" : "softmax",
           std::is_same_v<H, smax::bf16> ? "bf16" : "fp16", s.rows, s.cols, s.ld,
           static_cast<double>(temperature), zero_masked_rows);
  std::vector<H> xh(x.size());
  std::vector<float> widened(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    xh[k] = H(x[k]);
    widened[k] = static_cast<float>(xh[k]);
  }
  std::vector<float> want(x.size(), canary<float>), got(x.size(), canary<float>);
  table::forward(widened.data(), s.ld, want.data(), s.ld, s.rows, s.cols, temperature, flags,
                 algorithm_id::automatic);
  if (table::forward_widened(xh.data(), s.ld, got.data(), s.ld, s.rows, s.cols, temperature,
                             flags)) {
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!same_bits_or_both_nan(got[k], want[k]))
        fail(widened.data(), s.cols, k, got[k], want[k], 0,
             "forward_widened differs from forward on the widened rows");
  } else {
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!same_bits_or_both_nan(got[k], canary<float>))
        fail(widened.data(), s.cols, k, got[k], canary<float>, 0,
             "forward_widened declined but wrote");
  }
  for (std::size_t r = 0; r < s.rows; ++r) {
    float want_max = 0, got_max = 0;
    double want_sum = 0, got_sum = 0;
    table::online_reduce(widened.data() + r * s.ld, s.cols, temperature, &want_max, &want_sum);
    if (!table::online_reduce(xh.data() + r * s.ld, s.cols, s.cols, temperature, &got_max,
                              &got_sum))
      continue;
    if (!same_bits_or_both_nan(got_max, want_max) || std::memcmp(&got_sum, &want_sum, 8) != 0)
      fail(widened.data() + r * s.ld, s.cols, 0, got_sum, want_sum, 0,
           "16-bit online_reduce differs from the float pass on the widened row");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 5000);
  const T temperature = decode_temperature<T>(in);
  const bool zero_masked_rows = in.byte() & 1;
  const unsigned flags_zero = zero_masked_rows ? smax::kernels::flag_zero_masked_rows : 0u;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  std::vector<std::uint8_t> cuts(4);
  for (auto& c : cuts) c = in.byte();
  const bool reverse_merge = in.byte() & 1;
  const std::size_t copies_of_rows = 1 + in.byte() % 24;  // the axis kernel's columns, below
  const smax::softmax_options opts{static_cast<double>(temperature), zero_masked_rows};

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::softmax_table<A>;
    for (bool log : {false, true}) {
      const unsigned flags = (log ? smax::kernels::flag_log : 0u) | flags_zero;
      std::vector<T> y_three_pass;
      for (algorithm_id a :
           {algorithm_id::automatic, algorithm_id::three_pass, algorithm_id::blocked_three_pass,
            algorithm_id::online, algorithm_id::two_pass}) {
        describe("%s, %s, %s, %s, rows %zu, cols %zu, ld %zu, %s, T = %.9g, zero_masked_rows %d",
                 A::name(), type_name<T>(), log ? "log_softmax" : "softmax", name_of(a), s.rows,
                 s.cols, s.ld, s.in_place ? "in place" : "out of place",
                 static_cast<double>(temperature), zero_masked_rows);
        auto b = prepare(x, s);
        table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, temperature, flags, a);
        b.check_untouched(x);
        for (std::size_t r = 0; r < s.rows; ++r)
          check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, log, temperature,
                            zero_masked_rows, a);
        if (a == algorithm_id::three_pass) y_three_pass = b.y;
      }
      if constexpr (std::is_same_v<T, float>) {
        check_widened<A, smax::bf16>(x, s, temperature, flags, log, zero_masked_rows);
        check_widened<A, smax::fp16>(x, s, temperature, flags, log, zero_masked_rows);
      }
      if (!valid_temperature(temperature)) continue;  // the forward pass's NaN row is checked above

      // Backward from the three-pass output; in place (dx = dy) when the shape says so.
      describe("%s, %s, %s, rows %zu, cols %zu, ld %zu, %s, T = %.9g", A::name(), type_name<T>(),
               log ? "log_softmax_backward" : "softmax_backward", s.rows, s.cols, s.ld,
               s.in_place ? "dx = dy" : "dx separate", static_cast<double>(temperature));
      std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
      table::backward(y_three_pass.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                      dx.data(), s.ld, s.rows, s.cols, temperature,
                      log ? smax::kernels::flag_log : 0u);
      for (std::size_t r = 0; r < s.rows; ++r)
        check_backward_row(x.data() + r * s.ld, s.cols, y_three_pass.data() + r * s.ld,
                           dy.data() + r * s.ld, dx.data() + r * s.ld, log, temperature);

      // The online state of the first row: up to four chunks, merged in order or reversed.
      const T* x0 = x.data();
      const std::size_t n = s.cols;
      std::vector<std::size_t> bounds{0, n};
      for (auto c : cuts)
        if (n) bounds.push_back(c * n / 255);
      std::sort(bounds.begin(), bounds.end());
      describe("%s, %s, online state (%zu chunks, %s), %s, n %zu, T = %.9g, zero_masked_rows %d",
               A::name(), type_name<T>(), bounds.size() - 1,
               reverse_merge ? "merged in reverse" : "merged in order", log ? "log" : "softmax", n,
               static_cast<double>(temperature), zero_masked_rows);
      std::vector<smax::online_state<T>> parts;
      for (std::size_t k = 0; k + 1 < bounds.size(); ++k) {
        smax::online_state<T> p;
        if (bounds[k + 1] > bounds[k])
          table::online_reduce(x0 + bounds[k], bounds[k + 1] - bounds[k], temperature, &p.max,
                               &p.sum);
        parts.push_back(p);
      }
      if (reverse_merge) std::reverse(parts.begin(), parts.end());
      smax::online_state<T> state;
      for (auto const& p : parts) state = smax::merge(state, p, opts);
      std::vector<T> y(n + 1, canary<T>);
      for (std::size_t k = 0; k + 1 < bounds.size(); ++k)
        if (bounds[k + 1] > bounds[k])
          table::online_normalize(x0 + bounds[k], y.data() + bounds[k], bounds[k + 1] - bounds[k],
                                  temperature, (log ? smax::kernels::flag_log : 0u) | flags_zero,
                                  state.max, state.sum);
      if (y[n] != canary<T>)
        fail(x0, n, n, y[n], canary<T>, 0, "online_normalize wrote past the end");
      check_forward_row(x0, y.data(), n, log, temperature, zero_masked_rows, algorithm_id::online,
                        false);
    }
  });

  // The axis kernel (softmax_table::forward_axis, float): the rows, repeated copies_of_rows
  // times, as the columns of a cols × width block (width up to 128, rows width + ld - cols
  // apart, in place or not); each column against the reference of its row. Where the kernel
  // passes the block back to the rows form, it must have written nothing.
  if constexpr (std::is_same_v<T, float>) {
    const std::size_t width =
        std::min<std::size_t>(s.rows * copies_of_rows, smax::kernels::axis_max_columns);
    const std::size_t n = s.cols, stride = width + (s.ld - s.cols);
    std::vector<float> block(n * stride, canary<float>);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < width; ++j) block[i * stride + j] = x[(j % s.rows) * s.ld + i];
    if (n > 0)
      for_each_arch([&](auto arch) {
        using table = smax::kernels::softmax_table<decltype(arch)>;
        for (bool log : {false, true}) {
          describe(
              "%s, float, %s_axis kernel, n %zu, width %zu, stride %zu, %s, T = %.9g, "
              "zero_masked_rows %d",
              decltype(arch)::name(), log ? "log_softmax" : "softmax", n, width, stride,
              s.in_place ? "in place" : "out of place", static_cast<double>(temperature),
              zero_masked_rows);
          std::vector<float> y =
              s.in_place ? block : std::vector<float>(block.size(), canary<float>);
          const float* input = s.in_place ? y.data() : block.data();
          const bool done = table::forward_axis(input, y.data(), n, stride, width, temperature,
                                                (log ? smax::kernels::flag_log : 0u) | flags_zero);
          for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = done ? width : 0; j < stride; ++j) {
              const float want = s.in_place ? block[i * stride + j] : canary<float>;
              if (!same_bits_or_both_nan(y[i * stride + j], want))
                fail(x.data(), s.cols, i, y[i * stride + j], want, 0,
                     done ? "the axis kernel wrote beside its columns"
                          : "the axis kernel wrote a block it passed back");
            }
          if (!done) continue;
          std::vector<float> column(n);
          for (std::size_t j = 0; j < width; ++j) {
            for (std::size_t i = 0; i < n; ++i) column[i] = y[i * stride + j];
            check_forward_row(x.data() + (j % s.rows) * s.ld, column.data(), n, log, temperature,
                              zero_masked_rows, algorithm_id::automatic);
          }
        }
      });
  }

  // The public header-only calls (this translation unit's instruction set) give the same bits as
  // that instruction set's table.
  if (!valid_temperature(temperature)) return;
  for (bool log : {false, true}) {
    describe("header-only %s, %s, rows %zu, cols %zu, ld %zu, T = %.9g",
             log ? "log_softmax_rows" : "softmax_rows", type_name<T>(), s.rows, s.cols, s.ld,
             static_cast<double>(temperature));
    auto pub = prepare(x, s);
    auto tab = prepare(x, s);
    if (log)
      smax::log_softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
    else
      smax::softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
    smax::kernels::softmax_table<xsimd::default_arch>::forward(
        tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, temperature,
        (log ? smax::kernels::flag_log : 0u) | flags_zero, algorithm_id::automatic);
    for (std::size_t k = 0; k < pub.y.size(); ++k)
      if (!same_bits_or_both_nan(pub.y[k], tab.y[k]))
        fail(x.data(), s.cols, k, pub.y[k], tab.y[k], 0,
             "the header-only call differs from its table");
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
