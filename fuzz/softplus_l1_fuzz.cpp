// Differential fuzzer of softplus + l1 with the length scale (smax/softplus_l1.hpp): forward and
// backward (from x, the forward's own output and dy) on every instruction set, float and double,
// in place and out of place, with λ = softplus_l1_table<A>::lambda(base, n_keys) for bases in
// (1, DBL_MAX] (1 + 2^-52 and just above 1 included, λ up to about 2^57) and n_keys from 1 (λ = 0)
// to 2^64 - 1, against the long-double reference at the exact λ = ln n/ln base; invalid bases
// (1, below 1, inf, NaN) through the table; and the public header-only call against its table.
//
// Bounds, as softplus_l1.hpp states them: relative error <= 1e-6 + 2^-21·(g_i + Σ_j y_j·g_j)
// (double 1e-14 + 2^-50·(...)) for outputs >= FLT_MIN (DBL_MIN), g = 1 + max(0, -λ·x); outputs
// below FLT_MIN may be flushed to 0. Backward |dx_i - dx*_i| <= 16ε·λ·r_i·y_i·(|dy_i| + Σ_j y_j·
// |dy_j|) + 2·(1 + λ)·d, r = σ(λx)/softplus(λx), d the smallest subnormal, dx* the VJP at the y
// passed in. Contract: -inf entries 0, backward 0; all -inf a NaN row (0 with zero_masked_rows);
// NaN or +inf a NaN row; n = 1 gives [1]; λ = 0 the uniform distribution over the unmasked
// entries, backward 0; a base not finite and > 1 gives NaN rows and NaN dx.

#include <smax/reference/softplus_l1.hpp>
#include <smax/softplus_l1.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
template <class T>
constexpr double gtol = sizeof(T) == 4 ? 0x1p-21 : 0x1p-50;

bool valid_base(double base) { return base > 1.0 && base < HUGE_VAL; }

template <class T>
bool row_bad(const T* x, std::size_t n, bool& all_masked) {
  all_masked = true;
  bool bad = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == inf<T>) bad = true;
    if (x[i] != -inf<T>) all_masked = false;
  }
  return bad;
}

// lambda: the exact λ (long double); valid: whether the base is.
template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, long double lambda, bool valid,
                       bool zero_masked_rows) {
  if (n == 0) return;
  bool all_masked;
  const bool bad = row_bad(x, n, all_masked);
  if (!valid || bad || (all_masked && !zero_masked_rows)) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(y[i]))
        fail(x, n, i, y[i], NAN, 0,
             valid ? "softplus_l1: NaN/+inf/all-masked row is not NaN"
                   : "softplus_l1: an invalid base does not give a NaN row");
    return;
  }
  if (all_masked) {
    for (std::size_t i = 0; i < n; ++i)
      if (y[i] != T(0)) fail(x, n, i, y[i], 0.0L, 0, "softplus_l1: zero_masked_rows row is not 0");
    return;
  }
  const auto ref = smax::reference::softplus_l1(x, n, lambda);
  auto g = [&](T v) {
    const long double u = lambda * static_cast<long double>(v);
    return 1 + (u < 0 ? -u : 0.0L);
  };
  long double spread_g = 0;
  std::size_t unmasked = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (x[i] != -inf<T>) spread_g += ref[i] * g(x[i]), ++unmasked;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T>) {
      if (y[i] != T(0)) fail(x, n, i, y[i], 0.0L, 0, "softplus_l1: masked entry is not 0");
      continue;
    }
    if (lambda == 0) {  // the uniform distribution over the unmasked entries (within the bound)
      const long double want = 1.0L / unmasked;
      if (!close(y[i], want, rtol<T>, std::numeric_limits<T>::min(), false))
        fail(x, n, i, y[i], want, rtol<T>, "softplus_l1: λ = 0 is not uniform");
      continue;
    }
    const double bound = rtol<T> + gtol<T> * static_cast<double>(g(x[i]) + spread_g);
    if (!(bound < HUGE_VAL)) {  // no bound (g beyond double): only a number
      if (std::isnan(y[i])) fail(x, n, i, y[i], ref[i], bound, "softplus_l1: NaN in a finite row");
      continue;
    }
    if (!close(y[i], ref[i], bound, std::numeric_limits<T>::min(), false))
      fail(x, n, i, y[i], ref[i], bound, "softplus_l1 out of bound");
  }
  if (n == 1 && lambda == 0 && y[0] != T(1))
    fail(x, n, 0, y[0], 1.0L, 0, "softplus_l1: n = 1 (λ = 0) is not [1]");
}

template <class T>
void check_backward_row(const T* x, const T* y, const T* dy, const T* dx, std::size_t n,
                        long double lambda, bool valid) {
  if (n == 0) return;
  if (!valid) {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isnan(dx[i]))
        fail(x, n, i, dx[i], NAN, 0, "softplus_l1_backward: an invalid base does not give NaN dx");
    return;
  }
  bool all_masked;
  if (row_bad(x, n, all_masked) || all_masked) return;  // the header states no backward there
  long double dot = 0, weighted = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T>) continue;
    dot += static_cast<long double>(y[i]) * dy[i];
    weighted += static_cast<long double>(y[i]) * std::fabs(static_cast<long double>(dy[i]));
  }
  const long double e = epsilon<T>;
  for (std::size_t i = 0; i < n; ++i) {
    if (x[i] == -inf<T> || lambda == 0) {
      if (dx[i] != T(0))
        fail(x, n, i, dx[i], 0.0L, 0,
             lambda == 0 ? "softplus_l1_backward: λ = 0 gives dx != 0"
                         : "softplus_l1_backward: masked entry is not 0");
      continue;
    }
    const long double r = smax::reference::softplus_ratio(lambda * static_cast<long double>(x[i]));
    const long double yi = y[i];
    // The header's range: |dy_i - <dy, y>| within T's, and dx* itself (rounded near T's largest
    // value, which may round to inf).
    const long double top = static_cast<long double>(big<T>);
    if (std::fabs(static_cast<long double>(dy[i]) - dot) > top ||
        std::fabs(lambda * yi * r * (dy[i] - dot)) >= top * (1 - 0x1p-10L))
      continue;
    const long double want = lambda * yi * r * (dy[i] - dot);
    const long double b = 16 * e * lambda * r * yi * (std::fabs(static_cast<long double>(dy[i])) + weighted) +
                          2 * (1 + lambda) * std::numeric_limits<T>::denorm_min();
    if (!close(dx[i], want, 0.0, static_cast<double>(b), false))
      fail(x, n, i, dx[i], want, static_cast<double>(b), "softplus_l1_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  const bool zero_masked_rows = flags & 1;
  double base = in.pick<double>({64, 64, 2, 1.5, 1 + 0x1p-52, 1 + 1e-12, 1.0000001, 1.001, 10,
                                 128, 4096, 1e6, 1e30, 1e300, 1.7976931348623157e308,
                                 /* invalid: */ 1, 0.5, -2, HUGE_VAL, NAN, 0});
  if (flags & 2) {  // any double above 1, from its bits
    std::uint64_t bits = in.u64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    v = std::fabs(v);
    if (std::isfinite(v)) base = 1 + v;
  }
  const std::size_t n_keys = in.pick<std::size_t>(
      {0, 0, 0, 1, 2, 3, 64, 1000, std::size_t(1) << 40, ~std::size_t(0)});
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const double keys = static_cast<double>(n_keys ? n_keys : s.cols);
  const bool valid = valid_base(base);
  const long double exact =
      valid ? std::log(static_cast<long double>(keys)) / std::log(static_cast<long double>(base))
            : NAN;

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::softplus_l1_table<A>;
    const T lambda = table::lambda(base, keys, static_cast<T*>(nullptr));
    describe("%s, %s, softplus_l1, rows %zu, cols %zu, ld %zu, %s, base %.17g, keys %.17g, λ %.9g, "
             "zero_masked_rows %d",
             A::name(), type_name<T>(), s.rows, s.cols, s.ld,
             s.in_place ? "in place" : "out of place", base, keys, double(lambda),
             zero_masked_rows);
    if (valid != !std::isnan(lambda))
      fail(x.data(), s.cols, 0, lambda, exact, 0, "softplus_l1: λ NaN for a valid base or not for an invalid one");
    auto b = prepare(x, s);
    if (s.rows != 0 && s.cols != 0)
      table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, lambda, zero_masked_rows);
    b.check_untouched(x);
    for (std::size_t r = 0; r < s.rows; ++r)
      check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, exact, valid,
                        zero_masked_rows);
    if (s.cols == 0) return;

    describe("%s, %s, softplus_l1_backward, rows %zu, cols %zu, ld %zu, %s, base %.17g, keys "
             "%.17g, λ %.9g",
             A::name(), type_name<T>(), s.rows, s.cols, s.ld,
             s.in_place ? "dx = dy" : "dx separate", base, keys, double(lambda));
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(x.data(), s.ld, b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                    dx.data(), s.ld, s.rows, s.cols, lambda);
    for (std::size_t r = 0; r < s.rows; ++r) {
      check_backward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, dy.data() + r * s.ld,
                         dx.data() + r * s.ld, s.cols, exact, valid);
      if (!s.in_place)
        for (std::size_t i = s.cols; i < s.ld; ++i)
          if (!same_bits(dx[r * s.ld + i], canary<T>))
            fail(x.data() + r * s.ld, s.cols, i, dx[r * s.ld + i], canary<T>, 0,
                 "softplus_l1_backward wrote into the padding between rows");
    }
  });

  // The public header-only call (this translation unit's instruction set) against its table, with
  // a valid base only (an invalid one is a precondition, asserted in debug builds).
  if (s.cols == 0 || !valid) return;
  smax::softplus_l1_options opts;
  opts.base = base;
  opts.n_keys = n_keys;
  opts.zero_masked_rows = zero_masked_rows;
  describe("header-only softplus_l1_rows, %s, rows %zu, cols %zu, ld %zu, base %.17g, n_keys %zu, "
           "zero_masked_rows %d",
           type_name<T>(), s.rows, s.cols, s.ld, base, n_keys, zero_masked_rows);
  using table = smax::kernels::softplus_l1_table<xsimd::default_arch>;
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::softplus_l1_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols,
                 table::lambda(base, keys, static_cast<T*>(nullptr)), zero_masked_rows);
  pub.check_untouched(x);
  for (std::size_t k = 0; k < pub.y.size(); ++k)
    if (!same_bits_or_both_nan(pub.y[k], tab.y[k]))
      fail(x.data(), s.cols, k, pub.y[k], tab.y[k], 0, "the header-only call differs from its table");
}

}  // namespace

SMAX_FUZZ_TARGET(run)
