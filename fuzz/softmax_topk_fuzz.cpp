// Differential fuzzer of fused softmax + top-K (smax/softmax_topk.hpp): the forward (K values and
// indices) and the backward on every instruction set, float and double, for k = 0, 1, the list
// (K <= 8), the heap (larger K), k = n and k > n (padding), temperatures over their range and
// outside it (0, negative, ±inf, NaN: through the table, the NaN result), against the long-double
// reference (the full softmax, a stable descending sort: ties keep the lower index first, masks
// never selected); and the public header-only calls against their table. (The family has no
// in-place form: values, indices, dvalues and dx must not overlap x.)
//
// Bounds, as softmax_topk.hpp states them: indices exact; values relative error <= 1e-6 (double
// 1e-14) for values >= FLT_MIN (DBL_MIN), T != 1 adding |x - m|/T·2^-22 (double |x - m|/T·1e-14),
// smaller values within FLT_MIN (they may be flushed). Backward: |dx_i - dx*_i| <= (e_i + 2E)·
// y_i·(|g_i| + sum_j |g_j·y_j|)/T, e_i = c + |x_i - m|/T·u (the u term for T != 1 only), E the
// largest e_j over the selected j, c = 2^-19 (double 2^-45), u = 2^-22 (1e-14), dx* the exact VJP
// (y the exact softmax(x/T), g the dvalues scattered to the indices), gradients below FLT_MIN
// within FLT_MIN. Contract: k = 0 writes nothing; n = 0 writes k slots (0, -1) and the backward
// nothing; -inf never selected (fewer entries pad with (0, -1)), backward 0; all -inf: k slots
// (0, -1), zero gradient; NaN or +inf: values NaN and indices -1 in all k slots, dx NaN; an
// invalid temperature the NaN result, forward and backward.

#include <smax/reference/softmax_topk.hpp>
#include <smax/softmax_topk.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
namespace ref_ns = smax::reference;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
template <class T>
constexpr long double temperature_unit = sizeof(T) == 4 ? 0x1p-22L : 1e-14L;
template <class T>
constexpr long double backward_unit = sizeof(T) == 4 ? 0x1p-19L : 0x1p-45L;

constexpr std::int64_t index_canary = -777;

bool temperature_valid(double t) { return t > 0 && std::isfinite(t); }

template <class T>
void check_forward_row(const T* x, std::size_t n, std::size_t k, const T* values,
                       const std::int64_t* indices, T temperature) {
  const long double t = temperature;
  const auto ref = ref_ns::softmax_topk(x, n, k, t);
  const long double m = row_max(x, n);
  for (std::size_t j = 0; j < k; ++j) {
    if (indices[j] != ref.indices[j])
      fail(x, n, j, double(indices[j]), ref.indices[j], 0, "softmax_topk: wrong index");
    if (std::isnan(ref.values[j])) {
      if (!std::isnan(values[j])) fail(x, n, j, values[j], NAN, 0, "softmax_topk: NaN row value not NaN");
      continue;
    }
    if (ref.indices[j] < 0) {
      if (values[j] != T(0)) fail(x, n, j, values[j], 0, 0, "softmax_topk: padding value not 0");
      continue;
    }
    const long double xi = x[ref.indices[j]];
    const double spread = temperature == T(1) ? 0.0 : static_cast<double>((m - xi) / t);
    // (A spread beyond double's range leaves y* = 0, where the relative term is moot: capped so
    // that inf·0 does not make the comparison NaN.)
    const double bound =
        std::min(rtol<T> + static_cast<double>(temperature_unit<T>) * spread,
                 std::numeric_limits<double>::max());
    if (!close(values[j], ref.values[j], bound, std::numeric_limits<T>::min(), false))
      fail(x, n, j, values[j], ref.values[j], bound, "softmax_topk value out of bound");
  }
}

template <class T>
void check_backward_row(const T* x, std::size_t n, std::size_t k, const std::int64_t* indices,
                        const T* dvalues, const T* dx, T temperature) {
  const long double t = temperature;
  const auto want = ref_ns::softmax_topk_backward(x, n, k, indices, dvalues, t);
  std::vector<long double> y;
  const bool ordinary = ref_ns::softmax_topk_detail::full_softmax(x, n, t, y);
  if (!ordinary) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(dx[i])) fail(x, n, i, dx[i], NAN, 0, "softmax_topk_backward of a NaN row is not NaN");
    return;
  }
  const long double m = row_max(x, n);
  std::vector<long double> g(n, 0.0L);
  for (std::size_t j = 0; j < k; ++j)
    if (indices[j] >= 0 && static_cast<std::size_t>(indices[j]) < n) g[indices[j]] += dvalues[j];
  auto e_of = [&](std::size_t i) {
    long double e = backward_unit<T>;
    if (temperature != T(1) && std::isfinite(m))
      e += std::fabs(static_cast<long double>(x[i]) - m) / t * temperature_unit<T>;
    return e;
  };
  long double big_e = 0, abs_dot = 0;
  for (std::size_t j = 0; j < k; ++j)
    if (indices[j] >= 0 && static_cast<std::size_t>(indices[j]) < n)
      big_e = std::max(big_e, e_of(static_cast<std::size_t>(indices[j])));
  for (std::size_t i = 0; i < n; ++i) abs_dot += std::fabs(g[i] * y[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T>) {
      if (dx[i] != T(0)) fail(x, n, i, dx[i], 0, 0, "softmax_topk_backward: masked entry not 0");
      continue;
    }
    const long double bound =
        (e_of(i) + 2 * big_e) * y[i] * (std::fabs(g[i]) + abs_dot) / t;
    if (!close(dx[i], want[i], 0.0,
               static_cast<double>(bound) + std::numeric_limits<T>::min(), false))
      fail(x, n, i, dx[i], want[i], static_cast<double>(bound), "softmax_topk_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  std::size_t k;
  switch (flags & 7) {
    case 0: k = 1; break;
    case 1: k = 2 + in.byte() % 7; break;    // the list (K <= 8)
    case 2: k = 9 + in.u16() % 120; break;   // the heap
    case 3: k = s.cols; break;                // a stable argsort
    case 4: k = s.cols + 1 + in.byte() % 5; break;  // padding
    case 5: k = 0; break;                     // writes nothing
    case 6: k = 1 + in.u16() % 600; break;
    default: k = s.cols ? 1 + in.u16() % s.cols : 3; break;
  }
  double temperature = in.pick<double>({1, 1, 0.5, 2, 0.1, 10, 1e-3, 1e3, 1e-20, 1e20, 0.7});
  if ((flags & 0xF0) == 0xF0) temperature = in.pick<double>({0.0, -1.0, HUGE_VAL, -HUGE_VAL, NAN});
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dvalues = decode_gradient<T>(in, s.rows, k, k);
  const T t = static_cast<T>(temperature);
  const bool valid = temperature_valid(temperature) && temperature_valid(static_cast<double>(t));

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::softmax_topk_table<A>;
    describe("%s, %s, softmax_topk, k %zu, T %.9g, rows %zu, cols %zu, ld %zu", A::name(),
             type_name<T>(), k, double(t), s.rows, s.cols, s.ld);
    std::vector<T> values(s.rows * k + 1, canary<T>);
    std::vector<std::int64_t> indices(s.rows * k + 1, index_canary);
    const std::vector<T> x_copy = x;
    table::forward(x.data(), s.ld, s.rows, s.cols, k, values.data(), indices.data(), t);
    for (std::size_t kk = 0; kk < x.size(); ++kk)
      if (!same_bits(x[kk], x_copy[kk])) fail(x.data(), s.cols, kk, x[kk], x_copy[kk], 0, "softmax_topk changed its input");
    if (!same_bits(values.back(), canary<T>) || indices.back() != index_canary)
      fail(x.data(), s.cols, s.rows * k, values.back(), canary<T>, 0, "softmax_topk wrote past rows·k");
    if (k == 0) return;
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      if (!valid) {
        for (std::size_t j = 0; j < k; ++j)
          if (!std::isnan(values[r * k + j]) || indices[r * k + j] != -1)
            fail(xr, s.cols, j, values[r * k + j], NAN, 0, "softmax_topk: invalid temperature is not the NaN result");
        continue;
      }
      check_forward_row(xr, s.cols, k, values.data() + r * k, indices.data() + r * k, t);
    }
    if (s.cols == 0) return;

    describe("%s, %s, softmax_topk_backward, k %zu, T %.9g, rows %zu, cols %zu, ld %zu", A::name(),
             type_name<T>(), k, double(t), s.rows, s.cols, s.ld);
    std::vector<T> dx(x.size(), canary<T>);
    table::backward(x.data(), s.ld, s.rows, s.cols, k, indices.data(), dvalues.data(), dx.data(),
                    s.ld, t);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      for (std::size_t i = s.cols; i < s.ld; ++i)
        if (!same_bits(dx[r * s.ld + i], canary<T>))
          fail(xr, s.cols, i, dx[r * s.ld + i], canary<T>, 0, "softmax_topk_backward wrote into the padding");
      if (!valid) {
        for (std::size_t i = 0; i < s.cols; ++i)
          if (!std::isnan(dx[r * s.ld + i]))
            fail(xr, s.cols, i, dx[r * s.ld + i], NAN, 0, "softmax_topk_backward: invalid temperature is not NaN");
        continue;
      }
      check_backward_row(xr, s.cols, k, indices.data() + r * k, dvalues.data() + r * k,
                         dx.data() + r * s.ld, t);
    }
  });

  // The public header-only calls against their table (valid temperatures: the rest is a
  // precondition, asserted in this build).
  if (!valid || k == 0) return;
  using table = smax::kernels::softmax_topk_table<xsimd::default_arch>;
  const smax::softmax_topk_options opts{temperature};
  describe("header-only softmax_topk_rows, %s, k %zu, T %.9g, rows %zu, cols %zu, ld %zu",
           type_name<T>(), k, temperature, s.rows, s.cols, s.ld);
  std::vector<T> vp(s.rows * k, canary<T>), vt(s.rows * k, canary<T>);
  std::vector<std::int64_t> ip(s.rows * k, index_canary), it(s.rows * k, index_canary);
  smax::softmax_topk_rows(x.data(), s.rows, s.cols, s.ld, k, vp.data(), ip.data(), opts);
  table::forward(x.data(), s.ld, s.rows, s.cols, k, vt.data(), it.data(), t);
  for (std::size_t j = 0; j < vp.size(); ++j)
    if (!same_bits_or_both_nan(vp[j], vt[j]) || ip[j] != it[j])
      fail(x.data(), s.cols, j, vp[j], vt[j], 0, "the header-only call differs from its table");
  if (s.cols == 0) return;
  describe("header-only softmax_topk_backward_rows, %s, k %zu, T %.9g, rows %zu, cols %zu, ld %zu",
           type_name<T>(), k, temperature, s.rows, s.cols, s.ld);
  std::vector<T> dxp(x.size(), canary<T>), dxt(x.size(), canary<T>);
  smax::softmax_topk_backward_rows(x.data(), s.rows, s.cols, s.ld, k, vp.data(), ip.data(),
                                   dvalues.data(), dxp.data(), opts);
  table::backward(x.data(), s.ld, s.rows, s.cols, k, it.data(), dvalues.data(), dxt.data(), s.ld, t);
  for (std::size_t j = 0; j < dxp.size(); ++j)
    if (!same_bits_or_both_nan(dxp[j], dxt[j]))
      fail(x.data(), s.cols, j, dxp[j], dxt[j], 0, "the header-only backward differs from its table");
}

}  // namespace

SMAX_FUZZ_TARGET(run)
