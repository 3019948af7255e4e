// Differential fuzzer of 1.5-entmax (smax/entmax15.hpp): the forward pass with every algorithm
// (sort, filter, the automatic choice; rows over 128 use the per-thread scratch buffer, rows from
// 4096 the first-sixteenth bound), the threshold and support size, the backward pass, the entmax
// loss and its gradient, on every instruction set, float and double, in place and out of place,
// against the long-double sort-based reference; and the public header-only calls (forward with
// and without zero_masked_rows, backward, threshold) against their table.
//
// Bounds, as entmax15.hpp states them: |y - y*| <= 2^-21 (double 2^-49) absolute, exactly 0 at
// masked entries (an entry within the bound of the threshold may fall on either side);
// support_size = the number of nonzero outputs; threshold |tau - tau*| <= 2^-22 + ulp(tau*)
// (double 2^-50 + ulp); backward |dx - dx*| <= 2^-20·s_i·(|dy_i| + sum_S s_j|dy_j| / sum_S s_j)
// (double 2^-49), dx* from the same y, exactly 0 off the support; loss |L - L*| <= 2^-21·(1 + |L*|)
// (double 2^-49). Contract: n = 0 does nothing; all -inf a NaN row (0 with zero_masked_rows);
// NaN or +inf a NaN row; a masked target L = +inf and a NaN gradient row; special rows give a
// threshold of {NaN, 0}.
//
// entmax15_loss_backward (dloss·(y - e_t)) is held to the header's bound: |dx - dx*| <=
// (1 + 2^-22)·2^-21·|dloss| + 2^-22·|dx*| + FLT_MIN (double (1 + 2^-51)·2^-49·|dloss| +
// 2^-51·|dx*| + DBL_MIN).

#include <smax/entmax15.hpp>
#include <smax/reference/entmax15.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
using smax::kernels::entmax15_algorithm;

const char* name_of(entmax15_algorithm a) {
  switch (a) {
    case entmax15_algorithm::sort:
      return "sort";
    case entmax15_algorithm::filter:
      return "filter";
    default:
      return "automatic";
  }
}

template <class T>
constexpr double y_bound = sizeof(T) == 4 ? 0x1p-21 : 0x1p-49;
template <class T>
constexpr double tau_bound = sizeof(T) == 4 ? 0x1p-22 : 0x1p-50;
template <class T>
constexpr double dx_factor = sizeof(T) == 4 ? 0x1p-20 : 0x1p-49;

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n,
                       smax::reference::entmax15_result const& ref) {
  for (std::size_t i = 0; i < n; ++i) {
    if (ref.special) {
      if (!std::isnan(y[i])) fail(x, n, i, y[i], NAN, 0, "entmax15 of a special row is not NaN");
      continue;
    }
    if (x[i] == -inf<T> && !same_bits(y[i], T(0)))
      fail(x, n, i, y[i], 0, 0, "entmax15: masked entry not exactly +0");
    if (!(y[i] >= T(0)) || !close(y[i], ref.y[i], 0.0, y_bound<T>, false))
      fail(x, n, i, y[i], ref.y[i], y_bound<T>, "entmax15 out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096 + 64);
  const bool zero_masked_rows = in.byte() & 1;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const std::size_t target = s.cols ? in.u16() % s.cols : 0;
  const T dloss = in.pick<T>({T(1), T(-1), T(0.5), T(1e-30), T(1e30), T(0), T(-3.7)});

  std::vector<smax::reference::entmax15_result> refs;
  for (std::size_t r = 0; r < s.rows; ++r)
    refs.push_back(smax::reference::entmax15(x.data() + r * s.ld, s.cols));

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::entmax15_table<A>;
    std::vector<T> y_auto;
    for (entmax15_algorithm a :
         {entmax15_algorithm::automatic, entmax15_algorithm::sort, entmax15_algorithm::filter}) {
      describe("%s, %s, entmax15 %s, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
               name_of(a), s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place");
      auto b = prepare(x, s);
      if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, a);
      b.check_untouched(x);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const T* xr = x.data() + r * s.ld;
        const T* yr = b.y.data() + r * s.ld;
        check_forward_row(xr, yr, s.cols, refs[r]);
        if (s.cols == 0) continue;
        const auto st = table::threshold(xr, s.cols, a);
        std::size_t nonzero = 0;
        for (std::size_t i = 0; i < s.cols; ++i) nonzero += yr[i] != T(0);
        const bool special = refs[r].special;
        if (special != (st.kind != smax::kernels::entmax15_row_state<T>::ordinary))
          fail(xr, s.cols, 0, st.kind, special, 0,
               "entmax15 threshold: row kind differs from the reference");
        // (A positive difference z - tau_T is at least an ulp of tau_T, |tau| >= 1/sqrt(n), so
        // its square never underflows: the support is exactly the nonzero outputs.)
        if (!special && st.support_size != nonzero)
          fail(xr, s.cols, 0, double(st.support_size), nonzero, 0,
               "entmax15 threshold: support_size != nonzero outputs");
      }
      if (a == entmax15_algorithm::automatic) y_auto = b.y;
    }
    if (s.cols == 0) return;

    // Backward from the forward output; dx = dy in place when the shape says so.
    describe("%s, %s, entmax15_backward, rows %zu, cols %zu, ld %zu, %s", A::name(),
             type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "dx = dy" : "dx separate");
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(y_auto.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld, dx.data(), s.ld,
                    s.rows, s.cols);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* yr = y_auto.data() + r * s.ld;
      const T* dyr = dy.data() + r * s.ld;
      std::vector<long double> yl(yr, yr + s.cols), dyl(dyr, dyr + s.cols);
      const auto ref = smax::reference::entmax15_backward(yl, dyl);
      long double weighted = 0, total = 0;
      for (std::size_t i = 0; i < s.cols; ++i)
        if (yl[i] > 0) {
          const long double si = std::sqrt(yl[i]);
          weighted += si * std::fabs(dyl[i]);
          total += si;
        }
      const long double spread = total > 0 ? weighted / total : 0;
      for (std::size_t i = 0; i < s.cols; ++i) {
        const T got = dx[r * s.ld + i];
        if (!std::isnan(ref[i]) && !(yl[i] > 0)) {
          if (got != T(0))
            fail(x.data() + r * s.ld, s.cols, i, got, 0, 0,
                 "entmax15_backward: off-support entry not 0");
          continue;
        }
        const double si = yl[i] > 0 ? static_cast<double>(std::sqrt(yl[i])) : 0;
        const double bound =
            dx_factor<T> * si * static_cast<double>(std::fabs(dyl[i]) + spread) +
            std::numeric_limits<T>::min();
        if (!close(got, ref[i], 0.0, bound, false))
          fail(x.data() + r * s.ld, s.cols, i, got, ref[i], bound,
               "entmax15_backward out of bound");
      }
    }

    // The loss and its gradient, first row.
    describe("%s, %s, entmax15_loss, n %zu, target %zu, dloss %g", A::name(), type_name<T>(),
             s.cols, target, static_cast<double>(dloss));
    const T* x0 = x.data();
    const std::size_t n = s.cols;
    const T loss = table::loss(x0, n, target);
    const long double loss_ref = smax::reference::entmax15_loss(x0, n, target);
    const double loss_bound = y_bound<T> * (1 + std::fabs(static_cast<double>(loss_ref)));
    if (!close(loss, loss_ref, 0.0, loss_bound, false))
      fail(x0, n, target, loss, loss_ref, loss_bound, "entmax15_loss out of bound");
    std::vector<T> g(n + 1, canary<T>);
    table::loss_backward(x0, n, target, dloss, g.data());
    if (!same_bits(g[n], canary<T>))
      fail(x0, n, n, g[n], canary<T>, 0, "entmax15_loss_backward wrote past the end");
    const auto& ref = refs[0];
    const bool nan_row = ref.special || x0[target] == -inf<T>;
    for (std::size_t i = 0; i < n; ++i) {
      const long double want = nan_row ? NAN : dloss * (ref.y[i] - (i == target ? 1 : 0));
      const double rel = sizeof(T) == 4 ? 0x1p-22 : 0x1p-51;
      const double bound = (1 + rel) * y_bound<T> * std::fabs(static_cast<double>(dloss)) +
                           rel * std::fabs(static_cast<double>(want)) +
                           static_cast<double>(std::numeric_limits<T>::min());
      if (!close(g[i], want, 0.0, bound, false))
        fail(x0, n, i, g[i], want, bound, "entmax15_loss_backward out of bound");
    }
    // In place (x == dx) gives the same bits.
    std::vector<T> g2(x0, x0 + n);
    table::loss_backward(g2.data(), n, target, dloss, g2.data());
    for (std::size_t i = 0; i < n; ++i)
      if (!same_bits_or_both_nan(g2[i], g[i]))
        fail(x0, n, i, g2[i], g[i], 0, "entmax15_loss_backward in place differs");
  });

  // The public header-only calls give the bits of this translation unit's table; the threshold
  // against the reference.
  if (s.cols == 0) return;
  describe("header-only entmax15_rows, %s, rows %zu, cols %zu, ld %zu, zero_masked_rows %d",
           type_name<T>(), s.rows, s.cols, s.ld, zero_masked_rows);
  using table = smax::kernels::entmax15_table<xsimd::default_arch>;
  const smax::entmax15_options opts{zero_masked_rows};
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::entmax15_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols,
                 entmax15_algorithm::automatic);
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
  // Backward from the header-only output (zero rows from zero_masked_rows give 0).
  describe("header-only entmax15_backward_rows, %s, rows %zu, cols %zu, ld %zu", type_name<T>(),
           s.rows, s.cols, s.ld);
  std::vector<T> dx_pub(dy.size(), canary<T>), dx_tab(dy.size(), canary<T>);
  smax::entmax15_backward_rows(pub.y.data(), dy.data(), dx_pub.data(), s.rows, s.cols, s.ld, opts);
  table::backward(pub.y.data(), s.ld, dy.data(), s.ld, dx_tab.data(), s.ld, s.rows, s.cols);
  for (std::size_t k = 0; k < dx_pub.size(); ++k)
    if (!same_bits_or_both_nan(dx_pub[k], dx_tab[k]))
      fail(x.data(), s.cols, k, dx_pub[k], dx_tab[k], 0,
           "the header-only backward differs from its table");
  for (std::size_t r = 0; r < s.rows; ++r) {
    const T* xr = x.data() + r * s.ld;
    const auto& ref = refs[r];
    bool all_masked = true;
    for (std::size_t i = 0; i < s.cols; ++i) all_masked = all_masked && xr[i] == -inf<T>;
    if (all_masked && zero_masked_rows)
      for (std::size_t i = 0; i < s.cols; ++i)
        if (dx_pub[r * s.ld + i] != T(0))
          fail(xr, s.cols, i, dx_pub[r * s.ld + i], 0, 0,
               "entmax15_backward of a zero_masked_rows row is not 0");
    describe("header-only entmax15_threshold, %s, row %zu, n %zu", type_name<T>(), r, s.cols);
    const auto th = smax::entmax15_threshold(xr, s.cols);
    if (ref.special) {
      if (!std::isnan(th.tau) || th.support_size != 0)
        fail(xr, s.cols, 0, th.tau, NAN, 0, "entmax15_threshold of a special row is not {NaN, 0}");
      continue;
    }
    const double bound = tau_bound<T> + ulp<T>(ref.tau);
    if (!close(th.tau, ref.tau, 0.0, bound, false))
      fail(xr, s.cols, 0, th.tau, ref.tau, bound, "entmax15_threshold out of bound");
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < s.cols; ++i) nonzero += tab.y[r * s.ld + i] != T(0);
    if (th.support_size != nonzero)
      fail(xr, s.cols, 0, double(th.support_size), nonzero, 0,
           "entmax15_threshold: support_size != nonzero outputs");
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
