// Differential fuzzer of sparsemax (smax/sparsemax.hpp): the forward pass with every algorithm
// (sort, pivot, filter, stream, the automatic choice; rows over 128 use the per-thread scratch
// buffer), the threshold and support size, the backward pass, the sparsemax loss and its
// gradient, on every instruction set, against the long-double sort-based reference.
//
// Bounds, as sparsemax.hpp states them: |y - y*| <= 2^-22 (double 2^-50) absolute, exactly 0 at
// masked entries, support_size = the number of nonzero outputs; backward
// |dx - dx*| <= 2^-23·(|dy_i| + |mean| + mean_S |dy|) (double 2^-52); loss
// |L - L*| <= 2^-22·(1 + |L*|) (double 2^-50). Contract: all masked, NaN or +inf give a NaN row;
// a masked target gives L = +inf and a NaN gradient row.

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
using smax::kernels::sparsemax_algorithm;

const char* name_of(sparsemax_algorithm a) {
  switch (a) {
    case sparsemax_algorithm::sort:
      return "sort";
    case sparsemax_algorithm::pivot:
      return "pivot";
    case sparsemax_algorithm::filter:
      return "filter";
    case sparsemax_algorithm::stream:
      return "stream";
    default:
      return "automatic";
  }
}

template <class T>
constexpr double y_bound = sizeof(T) == 4 ? 0x1p-22 : 0x1p-50;

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n) {
  const auto ref = smax::reference::sparsemax(x, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (ref.special) {
      if (!std::isnan(y[i])) fail(x, n, i, y[i], NAN, 0, "sparsemax of a special row is not NaN");
      continue;
    }
    if (x[i] == -inf<T> && y[i] != T(0))
      fail(x, n, i, y[i], 0, 0, "sparsemax: masked entry not exactly 0");
    if (!(y[i] >= T(0)) || !close(y[i], ref.y[i], 0.0, y_bound<T>, false))
      fail(x, n, i, y[i], ref.y[i], y_bound<T>, "sparsemax out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const std::size_t target = s.cols ? in.u16() % s.cols : 0;
  const T dloss = in.pick<T>({T(1), T(-1), T(0.5), T(1e-30), T(1e30), T(0), T(-3.7)});

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::sparsemax_table<A>;
    std::vector<T> y_auto;
    for (sparsemax_algorithm a :
         {sparsemax_algorithm::automatic, sparsemax_algorithm::sort, sparsemax_algorithm::pivot,
          sparsemax_algorithm::filter, sparsemax_algorithm::stream}) {
      describe("%s, %s, sparsemax %s, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
               name_of(a), s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place");
      auto b = prepare(x, s);
      if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, a);
      b.check_untouched(x);
      for (std::size_t r = 0; r < s.rows; ++r) {
        const T* xr = x.data() + r * s.ld;
        const T* yr = b.y.data() + r * s.ld;
        check_forward_row(xr, yr, s.cols);
        if (s.cols == 0) continue;
        const auto st = table::threshold(xr, s.cols, a);
        std::size_t nonzero = 0;
        for (std::size_t i = 0; i < s.cols; ++i) nonzero += yr[i] != T(0);
        const bool special = std::isnan(yr[0]);
        if (special != (st.kind != smax::kernels::sparsemax_row_state<T>::ordinary))
          fail(xr, s.cols, 0, st.kind, special, 0,
               "sparsemax threshold: row kind differs from the forward pass");
        if (!special && st.support_size != nonzero)
          fail(xr, s.cols, 0, double(st.support_size), nonzero, 0,
               "sparsemax threshold: support_size != nonzero outputs");
      }
      if (a == sparsemax_algorithm::automatic) y_auto = b.y;
    }
    if (s.cols == 0) return;

    // Backward from the forward output; dx = dy in place when the shape says so.
    describe("%s, %s, sparsemax_backward, rows %zu, cols %zu, ld %zu, %s", A::name(),
             type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "dx = dy" : "dx separate");
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(y_auto.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld, dx.data(), s.ld,
                    s.rows, s.cols);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* yr = y_auto.data() + r * s.ld;
      const T* dyr = dy.data() + r * s.ld;
      std::vector<long double> yl(yr, yr + s.cols), dyl(dyr, dyr + s.cols);
      const auto ref = smax::reference::sparsemax_backward(yl, dyl);
      long double sum = 0, abs_sum = 0;
      std::size_t count = 0;
      for (std::size_t i = 0; i < s.cols; ++i)
        if (yl[i] > 0) {
          sum += dyl[i];
          abs_sum += std::fabs(dyl[i]);
          ++count;
        }
      const long double mean = count ? sum / count : 0, abs_mean = count ? abs_sum / count : 0;
      for (std::size_t i = 0; i < s.cols; ++i) {
        const double bound =
            static_cast<double>(epsilon<T> * (std::fabs(dyl[i]) + std::fabs(mean) + abs_mean)) +
            std::numeric_limits<T>::min();
        if (!close(dx[r * s.ld + i], ref[i], 0.0, bound, true))
          fail(x.data() + r * s.ld, s.cols, i, dx[r * s.ld + i], ref[i], bound,
               "sparsemax_backward out of bound");
      }
    }

    // The loss and its gradient, first row.
    describe("%s, %s, sparsemax_loss, n %zu, target %zu, dloss %g", A::name(), type_name<T>(),
             s.cols, target, static_cast<double>(dloss));
    const T* x0 = x.data();
    const std::size_t n = s.cols;
    const T loss = table::loss(x0, n, target);
    const long double loss_ref = smax::reference::sparsemax_loss(x0, n, target);
    const double loss_bound =
        (sizeof(T) == 4 ? 0x1p-22 : 0x1p-50) * (1 + std::fabs(static_cast<double>(loss_ref)));
    if (!close(loss, loss_ref, 0.0, loss_bound, false))
      fail(x0, n, target, loss, loss_ref, loss_bound, "sparsemax_loss out of bound");
    std::vector<T> g(n + 1, canary<T>);
    table::loss_backward(x0, n, target, dloss, g.data());
    if (g[n] != canary<T>)
      fail(x0, n, n, g[n], canary<T>, 0, "sparsemax_loss_backward wrote past the end");
    const auto ref = smax::reference::sparsemax(x0, n);
    const bool nan_row = ref.special || x0[target] == -inf<T>;
    for (std::size_t i = 0; i < n; ++i) {
      const long double want = nan_row ? NAN : dloss * (ref.y[i] - (i == target ? 1 : 0));
      const double bound =
          std::fabs(static_cast<double>(dloss)) *
              (y_bound<T> + epsilon<T> * (std::fabs(static_cast<double>(ref.y[i])) + 1)) +
          std::numeric_limits<T>::min();
      if (!close(g[i], want, 0.0, bound, false))
        fail(x0, n, i, g[i], want, bound, "sparsemax_loss_backward out of bound");
    }
  });

  // The public header-only call gives the bits of this translation unit's table.
  if (s.cols == 0) return;
  describe("header-only sparsemax_rows, %s, rows %zu, cols %zu, ld %zu", type_name<T>(), s.rows,
           s.cols, s.ld);
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::sparsemax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld);
  smax::kernels::sparsemax_table<xsimd::default_arch>::forward(
      tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, sparsemax_algorithm::automatic);
  for (std::size_t k = 0; k < pub.y.size(); ++k)
    if (!same_bits_or_both_nan(pub.y[k], tab.y[k]))
      fail(x.data(), s.cols, k, pub.y[k], tab.y[k], 0,
           "the header-only call differs from its table");
}

}  // namespace

SMAX_FUZZ_TARGET(run)
