// Differential fuzzer of α-entmax by bisection (smax/entmax_bisect.hpp): the forward pass, the
// threshold and support size, and the backward pass on every instruction set, float and double,
// in place and out of place, for α over its domain (the tested values, values near 1 and large
// ones) and outside it (α <= 1, NaN, ±inf: through the table, a NaN row), and n_iter = 0 (the
// bound) or a few steps (the contract only), against the long-double bisection reference; and
// the public header-only calls (forward with and without zero_masked_rows, backward, threshold)
// against their table.
//
// Bounds, as entmax_bisect.hpp states them, with n_iter = 0: u*_i = (α - 1)(x_i - m) - t*,
// p = 1/(α - 1), η = max(1, α - 1)·2^-19 (double 2^-48), D_i = max_{|e| <= η} |[u*_i + e]_+^p -
// [u*_i]_+^p| and D = sum D_i; when D < 1, |y_i - y*_i| <= (D_i + y*_i·D)/(1 - D) + 2^-19·y*_i +
// FLT_MIN (2^-48·y*_i + DBL_MIN) and |sum(y) - 1| <= 2^-19 (2^-48). Backward, for rows whose
// outputs are all 0 or >= FLT_MIN (DBL_MIN): ρ = 2^-22·(1 + 2|2 - α|·max_{y_j > 0}|ln y_j|)
// (double 2^-51), |dx_i - dx*_i| <= 4ρ·s*_i·(|dy_i| + |c*| + sum_j s*_j|dy_j| / sum_j s*_j), dx*
// from the same y; off-support entries exactly 0; for α > 2 an s_j beyond T's range may give NaN
// (and so may a row whose terms s_j·dy_j leave T's range: it has no representable gradient;
// such rows are held to the contract only).
// Contract: n = 0 does nothing; masked entries +0; all -inf a NaN row (0 with zero_masked_rows);
// NaN or +inf a NaN row; α out of its domain a NaN row, threshold {NaN, 0}, backward NaN; the
// outputs of any n_iter are finite and >= 0 (or a NaN row exactly where the contract says).
//
// The header states no numeric bound for the threshold itself (only that y follows from it within
// the bound above); the public entmax_bisect_threshold is checked against the table's state:
// tau = fl((α - 1)·m + t), the same support size, and support_size = the nonzero outputs for
// 1.5 <= α <= 2 (where no support entry's power can underflow), >= them otherwise.

#include <smax/entmax_bisect.hpp>
#include <smax/reference/entmax_bisect.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
constexpr double eta_unit = sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;
template <class T>
constexpr double rho_unit = sizeof(T) == 4 ? 0x1p-22 : 0x1p-51;

bool alpha_valid(double alpha) { return alpha > 1 && std::isfinite(alpha); }

// The forward bound per entry, or an empty vector when D >= 1 (no bound stated).
template <class T>
std::vector<long double> forward_bounds(smax::reference::entmax_bisect_result const& ref,
                                        double alpha, long double* d_total) {
  const std::size_t n = ref.y.size();
  const long double p = 1.0L / (static_cast<long double>(alpha) - 1);
  const long double eta = std::max(1.0, alpha - 1) * eta_unit<T>;
  std::vector<long double> d(n, 0.0L);
  long double total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(ref.z[i])) continue;
    const long double u = ref.z[i] - ref.tau_shifted;
    const long double at = smax::reference::entmax_detail::power(u, p);
    const long double up = smax::reference::entmax_detail::power(u + eta, p);
    const long double down = smax::reference::entmax_detail::power(u - eta, p);
    d[i] = std::max(std::fabs(up - at), std::fabs(at - down));
    total += d[i];
  }
  *d_total = total;
  if (!(total < 1)) return {};
  std::vector<long double> b(n);
  for (std::size_t i = 0; i < n; ++i)
    b[i] = (d[i] + ref.y[i] * total) / (1 - total) + eta_unit<T> * ref.y[i] +
           std::numeric_limits<T>::min();
  return b;
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 2048);
  const std::uint8_t flags = in.byte();
  const bool zero_masked_rows = flags & 1;
  double alpha = in.pick<double>({1.5, 2, 1.01, 1.25, 3, 1.1, 1.75, 2.5, 4, 1.0001, 1.5, 10,
                                  1.000001, 1.3333333333333333, 6, 2});
  if (flags & 2) alpha = 1 + static_cast<double>(1 + in.u16()) / 8192;  // (1, 9]
  const unsigned n_iter = (flags & 4) ? in.byte() % 40 : 0;
  if ((flags & 0xF0) == 0xF0) {  // outside the domain
    alpha = in.pick<double>({1.0, 0.5, -2.0, NAN, HUGE_VAL, -HUGE_VAL, 0.0});
  }
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const bool valid = alpha_valid(alpha);
  const bool bounded = valid && n_iter == 0;

  std::vector<smax::reference::entmax_bisect_result> refs;
  std::vector<std::vector<long double>> bounds;
  for (std::size_t r = 0; r < s.rows; ++r) {
    refs.push_back(smax::reference::entmax_bisect(x.data() + r * s.ld, s.cols,
                                                  static_cast<long double>(alpha)));
    long double d = 0;
    bounds.push_back(bounded && !refs.back().special
                         ? forward_bounds<T>(refs.back(), alpha, &d)
                         : std::vector<long double>{});
  }

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::entmax_bisect_table<A>;
    describe("%s, %s, entmax_bisect, alpha %.17g, n_iter %u, rows %zu, cols %zu, ld %zu, %s",
             A::name(), type_name<T>(), alpha, n_iter, s.rows, s.cols, s.ld,
             s.in_place ? "in place" : "out of place");
    auto b = prepare(x, s);
    if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, alpha, n_iter);
    b.check_untouched(x);
    if (s.cols == 0) return;
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      const T* yr = b.y.data() + r * s.ld;
      const auto& ref = refs[r];
      long double sum = 0;
      for (std::size_t i = 0; i < s.cols; ++i) {
        if (ref.special) {
          if (!std::isnan(yr[i]))
            fail(xr, s.cols, i, yr[i], NAN, 0, "entmax_bisect of a special row is not NaN");
          continue;
        }
        if (xr[i] == -inf<T> && !same_bits(yr[i], T(0)))
          fail(xr, s.cols, i, yr[i], 0, 0, "entmax_bisect: masked entry not exactly +0");
        if (!(yr[i] >= T(0) && std::isfinite(yr[i])))
          fail(xr, s.cols, i, yr[i], ref.y[i], 0, "entmax_bisect: output negative or not finite");
        sum += yr[i];
        if (!bounds[r].empty() && !close(yr[i], ref.y[i], 0.0, double(bounds[r][i]), false))
          fail(xr, s.cols, i, yr[i], ref.y[i], double(bounds[r][i]), "entmax_bisect out of bound");
      }
      if (!ref.special && !bounds[r].empty() && !(std::fabs(sum - 1) <= eta_unit<T>))
        fail(xr, s.cols, 0, double(sum), 1, eta_unit<T>, "entmax_bisect: |sum(y) - 1| out of bound");
      const auto st = table::threshold(xr, s.cols, alpha, n_iter);
      if (ref.special != (st.kind != smax::kernels::entmax_bisect_row_state<T>::ordinary))
        fail(xr, s.cols, 0, st.kind, ref.special, 0,
             "entmax_bisect threshold: row kind differs from the reference");
      if (ref.special) continue;
      std::size_t nonzero = 0;
      for (std::size_t i = 0; i < s.cols; ++i) nonzero += yr[i] != T(0);
      if (st.support_size < nonzero || (alpha >= 1.5 && alpha <= 2 && st.support_size != nonzero))
        fail(xr, s.cols, 0, double(st.support_size), nonzero, 0,
             "entmax_bisect threshold: support_size differs from the nonzero outputs");
    }

    // Backward from this forward output; dx = dy in place when the shape says so.
    describe("%s, %s, entmax_bisect_backward, alpha %.17g, n_iter %u, rows %zu, cols %zu, ld %zu, "
             "%s",
             A::name(), type_name<T>(), alpha, n_iter, s.rows, s.cols, s.ld,
             s.in_place ? "dx = dy" : "dx separate");
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld, dx.data(), s.ld,
                    s.rows, s.cols, alpha);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* yr = b.y.data() + r * s.ld;
      const T* dyr = dy.data() + r * s.ld;
      const T* dxr = dx.data() + r * s.ld;
      const T* xr = x.data() + r * s.ld;
      const auto ref = smax::reference::entmax_bisect_backward(yr, dyr, s.cols,
                                                               static_cast<long double>(alpha));
      bool normal = true, s_in_range = true;
      long double log_max = 0, sum_s = 0, weighted = 0, dot = 0;
      for (std::size_t i = 0; i < s.cols; ++i) {
        if (!(yr[i] > 0)) continue;
        normal = normal && yr[i] >= std::numeric_limits<T>::min();
        const long double si = std::pow(static_cast<long double>(yr[i]), 2 - static_cast<long double>(alpha));
        s_in_range = s_in_range && si <= big<T>;
        log_max = std::max(log_max, std::fabs(std::log(static_cast<long double>(yr[i]))));
        sum_s += si;
        weighted += si * std::fabs(static_cast<long double>(dyr[i]));
        dot += si * dyr[i];
      }
      // A row whose terms s_j·dy_j leave T's range has no representable gradient (the header
      // says so for s_j beyond the range): held to the contract only.
      if (weighted > big<T>) s_in_range = false;
      const long double c = sum_s > 0 ? dot / sum_s : 0;
      const long double spread = sum_s > 0 ? weighted / sum_s : 0;
      const long double rho = rho_unit<T> * (1 + 2 * std::fabs(2 - static_cast<long double>(alpha)) * log_max);
      for (std::size_t i = 0; i < s.cols; ++i) {
        if (std::isnan(ref[i])) {
          if (!std::isnan(dxr[i]))
            fail(xr, s.cols, i, dxr[i], NAN, 0, "entmax_bisect_backward of a NaN row is not NaN");
          continue;
        }
        if (!(yr[i] > 0)) {
          if (dxr[i] != T(0) && !(!s_in_range && std::isnan(dxr[i])))
            fail(xr, s.cols, i, dxr[i], 0, 0, "entmax_bisect_backward: off-support entry not 0");
          continue;
        }
        if (!normal) continue;
        if (!s_in_range) continue;
        const long double si = std::pow(static_cast<long double>(yr[i]), 2 - static_cast<long double>(alpha));
        const double bound = static_cast<double>(
            4 * rho * si * (std::fabs(static_cast<long double>(dyr[i])) + std::fabs(c) + spread));
        if (!close(dxr[i], ref[i], 0.0, bound, false))
          fail(xr, s.cols, i, dxr[i], ref[i], bound, "entmax_bisect_backward out of bound");
      }
    }
  });

  // The public header-only calls against their table (valid α only: the rest is a precondition,
  // asserted in this build).
  if (s.cols == 0 || !valid) return;
  describe("header-only entmax_bisect_rows, %s, alpha %.17g, n_iter %u, rows %zu, cols %zu, "
           "ld %zu, zero_masked_rows %d",
           type_name<T>(), alpha, n_iter, s.rows, s.cols, s.ld, zero_masked_rows);
  using table = smax::kernels::entmax_bisect_table<xsimd::default_arch>;
  const smax::entmax_bisect_options opts{alpha, n_iter, zero_masked_rows};
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::entmax_bisect_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, alpha, n_iter);
  pub.check_untouched(x);
  const std::vector<bool> zeroed = expect_public_equals_table(x, s, pub, tab, zero_masked_rows);
  describe("header-only entmax_bisect_backward_rows, %s, alpha %.17g, rows %zu, cols %zu, ld %zu",
           type_name<T>(), alpha, s.rows, s.cols, s.ld);
  std::vector<T> dx_pub(dy.size(), canary<T>), dx_tab(dy.size(), canary<T>);
  smax::entmax_bisect_backward_rows(pub.y.data(), dy.data(), dx_pub.data(), s.rows, s.cols, s.ld,
                                    opts);
  table::backward(pub.y.data(), s.ld, dy.data(), s.ld, dx_tab.data(), s.ld, s.rows, s.cols, alpha);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t i = 0; i < s.cols; ++i) {
      const std::size_t k = r * s.ld + i;
      if (!same_bits_or_both_nan(dx_pub[k], dx_tab[k]))
        fail(x.data() + r * s.ld, s.cols, i, dx_pub[k], dx_tab[k], 0,
             "the header-only backward differs from its table");
      if (zeroed[r] && dx_pub[k] != T(0))
        fail(x.data() + r * s.ld, s.cols, i, dx_pub[k], 0, 0,
             "entmax_bisect_backward of a zero_masked_rows row is not 0");
    }
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* xr = x.data() + r * s.ld;
    describe("header-only entmax_bisect_threshold, %s, alpha %.17g, n_iter %u, row %zu, n %zu",
             type_name<T>(), alpha, n_iter, r, s.cols);
    const auto th = smax::entmax_bisect_threshold(xr, s.cols, opts);
    const auto st = table::threshold(xr, s.cols, alpha, n_iter);
    if (st.kind != smax::kernels::entmax_bisect_row_state<T>::ordinary) {
      if (!std::isnan(th.tau) || th.support_size != 0)
        fail(xr, s.cols, 0, th.tau, NAN, 0,
             "entmax_bisect_threshold of a special row is not {NaN, 0}");
      continue;
    }
    const T want = static_cast<T>((alpha - 1.0) * static_cast<double>(st.max) +
                                  static_cast<double>(st.tau));
    if (!same_bits(th.tau, want) || th.support_size != st.support_size)
      fail(xr, s.cols, 0, th.tau, want, 0,
           "entmax_bisect_threshold differs from its table's state");
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
