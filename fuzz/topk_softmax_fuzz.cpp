// Differential fuzzer of top-k softmax (smax/topk_softmax.hpp): the forward and backward passes
// on every instruction set, float and double, in place and out of place, for k from 1 through
// k >= n (softmax) and on both sides of the scratch-buffer threshold (k > 128 on rows over 256),
// and k = 0 (outside the domain: NaN rows, through the table), against the long-double
// reference (selection by value descending, index ascending, masks last); and the public
// header-only calls (forward with and without zero_masked_rows, backward) against their table,
// and against smax::softmax bit for bit when k >= n.
//
// Bounds, as topk_softmax.hpp states them: every output outside S exactly +0; on S relative error
// <= 1e-6 (double 1e-14) for outputs >= FLT_MIN (DBL_MIN) against softmax(x + mask), outputs
// below that within FLT_MIN (they may be flushed); masked entries 0. Backward: |dx_i - dx*_i| <=
// 2^-19·y_i·(|dy_i| + sum_j |dy_j·y_j|) (double 2^-48), dx* the exact VJP at the y passed in,
// plus FLT_MIN (DBL_MIN) for results in the subnormal range, as softmax_fuzz reads softmax's.
// Contract: n = 0 does nothing; all -inf a NaN row (0 with zero_masked_rows, backward 0); NaN or
// +inf a NaN row (backward too); k = 0 NaN rows.

#include <smax/reference/topk_softmax.hpp>
#include <smax/softmax.hpp>
#include <smax/topk_softmax.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
template <class T>
constexpr double dx_unit = sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, std::size_t k,
                       std::vector<long double> const& ref) {
  std::vector<bool> in_set;
  const bool ordinary = smax::reference::topk_select(x, n, k, in_set);
  for (std::size_t i = 0; i < n; ++i) {
    if (!ordinary) {
      if (!std::isnan(y[i])) fail(x, n, i, y[i], NAN, 0, "topk_softmax of a NaN row is not NaN");
      continue;
    }
    if (!in_set[i] || x[i] == -inf<T>) {
      if (!same_bits(y[i], T(0)))
        fail(x, n, i, y[i], 0, 0,
             in_set[i] ? "topk_softmax: masked entry not +0" : "topk_softmax: entry outside S not +0");
      continue;
    }
    if (!close(y[i], ref[i], rtol<T>, std::numeric_limits<T>::min(), false))
      fail(x, n, i, y[i], ref[i], rtol<T>, "topk_softmax out of bound");
  }
}

// The exact VJP at y (as passed in) and the bound, checked.
template <class T>
void check_backward_row(const T* x, const T* y, const T* dy, const T* dx, std::size_t n) {
  bool nan_row = false;
  long double dot = 0, abs_dot = 0;
  for (std::size_t i = 0; i < n; ++i) {
    nan_row = nan_row || std::isnan(y[i]);
    dot += static_cast<long double>(dy[i]) * y[i];
    abs_dot += std::fabs(static_cast<long double>(dy[i]) * y[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (nan_row) {
      if (!std::isnan(dx[i])) fail(x, n, i, dx[i], NAN, 0, "topk_softmax_backward of a NaN row is not NaN");
      continue;
    }
    const long double want = static_cast<long double>(y[i]) * (dy[i] - dot);
    // Plus FLT_MIN (DBL_MIN), as softmax_fuzz holds softmax's backward: the stated bound is
    // relative to y_i and cannot cover the rounding of a result in the subnormal range.
    const double bound = static_cast<double>(
        dx_unit<T> * static_cast<long double>(y[i]) * (std::fabs(static_cast<long double>(dy[i])) + abs_dot)) +
        std::numeric_limits<T>::min();
    if (!close(dx[i], want, 0.0, bound, true))
      fail(x, n, i, dx[i], want, bound, "topk_softmax_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  const bool zero_masked_rows = flags & 1;
  std::size_t k;
  switch ((flags >> 1) & 7) {
    case 0: k = 1; break;
    case 1: k = 2 + in.byte() % 8; break;
    case 2: k = s.cols > 1 ? s.cols - 1 : 1; break;
    case 3: k = s.cols + in.byte() % 3; break;  // softmax
    case 4: k = 1 + in.u16() % 300; break;      // around the scratch threshold (128)
    case 5: k = s.cols ? 1 + in.u16() % s.cols : 1; break;
    case 6: k = (flags & 0x80) ? 0 : 129; break;  // k = 0: outside the domain
    default: k = 1 + s.cols / 2; break;
  }
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);

  std::vector<std::vector<long double>> refs;
  for (std::size_t r = 0; r < s.rows; ++r)
    refs.push_back(smax::reference::topk_softmax(x.data() + r * s.ld, s.cols, k));

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::topk_softmax_table<A>;
    describe("%s, %s, topk_softmax, k %zu, rows %zu, cols %zu, ld %zu, %s", A::name(),
             type_name<T>(), k, s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place");
    auto b = prepare(x, s);
    if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols, k);
    b.check_untouched(x);
    if (s.cols == 0) return;
    for (std::size_t r = 0; r < s.rows; ++r)
      check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, k, refs[r]);

    describe("%s, %s, topk_softmax_backward, k %zu, rows %zu, cols %zu, ld %zu, %s", A::name(),
             type_name<T>(), k, s.rows, s.cols, s.ld, s.in_place ? "dx = dy" : "dx separate");
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld, dx.data(), s.ld,
                    s.rows, s.cols);
    for (std::size_t r = 0; r < s.rows; ++r)
      check_backward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, dy.data() + r * s.ld,
                         dx.data() + r * s.ld, s.cols);
  });

  // The public header-only calls against their table (k >= 1: k = 0 is a precondition, asserted
  // in this build).
  if (s.cols == 0 || k == 0) return;
  describe("header-only topk_softmax_rows, %s, k %zu, rows %zu, cols %zu, ld %zu, "
           "zero_masked_rows %d",
           type_name<T>(), k, s.rows, s.cols, s.ld, zero_masked_rows);
  using table = smax::kernels::topk_softmax_table<xsimd::default_arch>;
  const smax::topk_softmax_options opts{k, zero_masked_rows};
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::topk_softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols, k);
  pub.check_untouched(x);
  const std::vector<bool> zeroed = expect_public_equals_table(x, s, pub, tab, zero_masked_rows);
  if (k >= s.cols) {  // softmax's kernels: the same bits as smax::softmax
    describe("header-only topk_softmax_rows with k %zu >= n %zu against softmax_rows, %s", k,
             s.cols, type_name<T>());
    auto soft = prepare(x, s);
    smax::softmax_options sopts;
    sopts.zero_masked_rows = zero_masked_rows;
    smax::softmax_rows(soft.input(), soft.output(), s.rows, s.cols, s.ld, sopts);
    for (std::size_t kk = 0; kk < soft.y.size(); ++kk)
      if (!same_bits_or_both_nan(pub.y[kk], soft.y[kk]))
        fail(x.data(), s.cols, kk, pub.y[kk], soft.y[kk], 0,
             "topk_softmax with k >= n differs from smax::softmax");
  }
  describe("header-only topk_softmax_backward_rows, %s, k %zu, rows %zu, cols %zu, ld %zu",
           type_name<T>(), k, s.rows, s.cols, s.ld);
  std::vector<T> dx_pub(dy.size(), canary<T>), dx_tab(dy.size(), canary<T>);
  smax::topk_softmax_backward_rows(pub.y.data(), dy.data(), dx_pub.data(), s.rows, s.cols, s.ld,
                                   opts);
  table::backward(pub.y.data(), s.ld, dy.data(), s.ld, dx_tab.data(), s.ld, s.rows, s.cols);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t i = 0; i < s.cols; ++i) {
      const std::size_t kk = r * s.ld + i;
      if (!same_bits_or_both_nan(dx_pub[kk], dx_tab[kk]))
        fail(x.data() + r * s.ld, s.cols, i, dx_pub[kk], dx_tab[kk], 0,
             "the header-only backward differs from its table");
      if (zeroed[r] && dx_pub[kk] != T(0))
        fail(x.data() + r * s.ld, s.cols, i, dx_pub[kk], 0, 0,
             "topk_softmax_backward of a zero_masked_rows row is not 0");
    }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
