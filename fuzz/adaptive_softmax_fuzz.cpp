// Differential fuzzer of adaptive-temperature softmax (smax/adaptive_softmax.hpp): the forward
// and backward passes on every instruction set, float and double, in place and out of place,
// against the long-double reference (p, H, β and y from the definition; the VJP with the gradient
// through β); and the public header-only calls (forward with and without zero_masked_rows,
// backward) against their table. The family has no options besides zero_masked_rows.
//
// Bounds, as adaptive_softmax.hpp states them, ε = 2^-24 (2^-53), ρ = 1e-6 (1e-14),
// δH = 16ε·(1 + ln n), Δβ = 2.5255·δH + ε·β, x̄ = sum y*_j·x_j: forward, for y*_k >= FLT_MIN
// (DBL_MIN), |y_k - y*_k| <= y*_k·(ρ + 4ε·β·|x_k - m| + Δβ·|x_k - x̄|); smaller outputs within
// FLT_MIN (they may be flushed). Backward, away from the gates: |dx_k - dx*_k| <= 2ψ·(β·y*_k·(|dy_k|
// + sum_j y*_j|dy_j|) + [β > 1]·p_k·(|ln(p_k + 1e-9)| + 2 + H)·(|P'(H)| + 1)·G) +
// 32·FLT_MIN·(|dy_k| + |c| + 1), ψ = φ + Δβ, φ the row's largest relative forward bound over its
// normal outputs, c = <dy, y*>, G = sum_j y*_j·(|dy_j| + |c|)·(1 + |x_j - m|).
// "Away from the gates" is taken as: P(H - δH) - 1 and P(H + δH) - 1 have the same sign (the
// computed H, within δH of H, cannot fall on the other side); rows within δH of a gate have
// their backward checked for the contract only. Contract: n = 0 does nothing; -inf entries 0
// (backward 0); all -inf a NaN row (0 with zero_masked_rows, backward 0); NaN or +inf a NaN row
// (backward too); n = 1 gives [1].

#include <smax/adaptive_softmax.hpp>
#include <smax/reference/adaptive_softmax.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
namespace ref_ns = smax::reference;

template <class T>
constexpr long double rho = sizeof(T) == 4 ? 1e-6L : 1e-14L;
template <class T>
constexpr long double eps = sizeof(T) == 4 ? 0x1p-24L : 0x1p-53L;

// The row's reference and its bounds.
template <class T>
struct row_check {
  ref_ns::adaptive_softmax_parts parts;
  std::vector<long double> relative;  // forward bound over y*_k
  long double phi = 0, delta_beta = 0, delta_h = 0;
  bool near_gate = false;
};

template <class T>
row_check<T> prepare_row(const T* x, std::size_t n) {
  row_check<T> r;
  r.parts = ref_ns::adaptive_softmax_parts_of(x, n);
  if (r.parts.nan_row || n == 0) return r;
  const auto& p = r.parts;
  r.delta_h = 16 * eps<T> * (1 + std::log(static_cast<long double>(n)));
  r.delta_beta = 2.5255L * r.delta_h + eps<T> * p.beta;
  long double xbar = 0;
  for (std::size_t j = 0; j < n; ++j)
    if (x[j] != -inf<T>) xbar += p.y[j] * static_cast<long double>(x[j]);
  r.relative.assign(n, 0);
  for (std::size_t k = 0; k < n; ++k) {
    if (x[k] == -inf<T>) continue;
    const long double xk = x[k];
    r.relative[k] = rho<T> + 4 * eps<T> * p.beta * std::fabs(xk - p.max) +
                    r.delta_beta * std::fabs(xk - xbar);
    if (p.y[k] >= std::numeric_limits<T>::min()) r.phi = std::max(r.phi, r.relative[k]);
  }
  auto active = [](long double h) { return h > 0.5L && ref_ns::adaptive_polynomial(h) > 1; };
  r.near_gate = active(p.entropy - r.delta_h) != active(p.entropy + r.delta_h);
  return r;
}

template <class T>
void check_forward_row(const T* x, const T* y, std::size_t n, row_check<T> const& rc) {
  for (std::size_t k = 0; k < n; ++k) {
    if (rc.parts.nan_row) {
      if (!std::isnan(y[k])) fail(x, n, k, y[k], NAN, 0, "adaptive_softmax of a NaN row is not NaN");
      continue;
    }
    if (x[k] == -inf<T>) {
      if (!same_bits(y[k], T(0))) fail(x, n, k, y[k], 0, 0, "adaptive_softmax: masked entry not +0");
      continue;
    }
    const long double want = rc.parts.y[k];
    const double bound = static_cast<double>(want * rc.relative[k]);
    if (!close(y[k], want, 0.0, bound + std::numeric_limits<T>::min(), false) ||
        (want >= std::numeric_limits<T>::min() && !close(y[k], want, 0.0, bound, false)))
      fail(x, n, k, y[k], want, bound, "adaptive_softmax out of bound");
  }
  if (n == 1 && !rc.parts.nan_row && x[0] != -inf<T> && y[0] != T(1))
    fail(x, n, 0, y[0], 1, 0, "adaptive_softmax: n = 1 does not give [1]");
}

template <class T>
void check_backward_row(const T* x, const T* dy, const T* dx, std::size_t n,
                        row_check<T> const& rc) {
  const auto& p = rc.parts;
  if (p.nan_row) {
    for (std::size_t k = 0; k < n; ++k)
      if (!std::isnan(dx[k]))
        fail(x, n, k, dx[k], NAN, 0, "adaptive_softmax_backward of a NaN row is not NaN");
    return;
  }
  const auto want = ref_ns::adaptive_softmax_backward(x, dy, n);
  long double c = 0, abs_dot = 0, g = 0;
  for (std::size_t j = 0; j < n; ++j) {
    c += static_cast<long double>(dy[j]) * p.y[j];
    abs_dot += p.y[j] * std::fabs(static_cast<long double>(dy[j]));
  }
  for (std::size_t j = 0; j < n; ++j)
    if (x[j] != -inf<T>)
      g += p.y[j] * (std::fabs(static_cast<long double>(dy[j])) + std::fabs(c)) *
           (1 + std::fabs(static_cast<long double>(x[j]) - p.max));
  const long double psi = rc.phi + rc.delta_beta;
  const long double slope = std::fabs(ref_ns::adaptive_polynomial_slope(p.entropy)) + 1;
  for (std::size_t k = 0; k < n; ++k) {
    if (x[k] == -inf<T>) {
      if (dx[k] != T(0)) fail(x, n, k, dx[k], 0, 0, "adaptive_softmax_backward: masked entry not 0");
      continue;
    }
    if (rc.near_gate) {
      if (!std::isfinite(dx[k]))
        fail(x, n, k, dx[k], want[k], 0, "adaptive_softmax_backward not finite at a gate");
      continue;
    }
    long double term = p.beta * p.y[k] * (std::fabs(static_cast<long double>(dy[k])) + abs_dot);
    if (p.active)
      term += p.p[k] * (std::fabs(std::log(p.p[k] + 1e-9L)) + 2 + p.entropy) * slope * g;
    const long double bound =
        2 * psi * term + 32 * static_cast<long double>(std::numeric_limits<T>::min()) *
                             (std::fabs(static_cast<long double>(dy[k])) + std::fabs(c) + 1);
    if (!close(dx[k], want[k], 0.0, static_cast<double>(bound), false))
      fail(x, n, k, dx[k], want[k], static_cast<double>(bound),
           "adaptive_softmax_backward out of bound");
  }
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const bool zero_masked_rows = in.byte() & 1;
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);

  std::vector<row_check<T>> checks;
  for (std::size_t r = 0; r < s.rows; ++r) checks.push_back(prepare_row(x.data() + r * s.ld, s.cols));

  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::adaptive_softmax_table<A>;
    describe("%s, %s, adaptive_softmax, rows %zu, cols %zu, ld %zu, %s", A::name(), type_name<T>(),
             s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place");
    auto b = prepare(x, s);
    if (s.cols) table::forward(b.input(), s.ld, b.output(), s.ld, s.rows, s.cols);
    b.check_untouched(x);
    if (s.cols == 0) return;
    for (std::size_t r = 0; r < s.rows; ++r)
      check_forward_row(x.data() + r * s.ld, b.y.data() + r * s.ld, s.cols, checks[r]);

    describe("%s, %s, adaptive_softmax_backward, rows %zu, cols %zu, ld %zu, %s", A::name(),
             type_name<T>(), s.rows, s.cols, s.ld, s.in_place ? "dx = dy" : "dx separate");
    std::vector<T> dx = s.in_place ? dy : std::vector<T>(dy.size(), canary<T>);
    table::backward(x.data(), s.ld, b.y.data(), s.ld, s.in_place ? dx.data() : dy.data(), s.ld,
                    dx.data(), s.ld, s.rows, s.cols);
    for (std::size_t r = 0; r < s.rows; ++r)
      check_backward_row(x.data() + r * s.ld, dy.data() + r * s.ld, dx.data() + r * s.ld, s.cols,
                         checks[r]);
  });

  if (s.cols == 0) return;
  describe("header-only adaptive_softmax_rows, %s, rows %zu, cols %zu, ld %zu, zero_masked_rows %d",
           type_name<T>(), s.rows, s.cols, s.ld, zero_masked_rows);
  using table = smax::kernels::adaptive_softmax_table<xsimd::default_arch>;
  const smax::adaptive_softmax_options opts{zero_masked_rows};
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::adaptive_softmax_rows(pub.input(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, tab.output(), s.ld, s.rows, s.cols);
  pub.check_untouched(x);
  const std::vector<bool> zeroed = expect_public_equals_table(x, s, pub, tab, zero_masked_rows);
  describe("header-only adaptive_softmax_backward_rows, %s, rows %zu, cols %zu, ld %zu, "
           "zero_masked_rows %d",
           type_name<T>(), s.rows, s.cols, s.ld, zero_masked_rows);
  std::vector<T> dx_pub(dy.size(), canary<T>), dx_tab(dy.size(), canary<T>);
  smax::adaptive_softmax_backward_rows(x.data(), pub.y.data(), dy.data(), dx_pub.data(), s.rows,
                                       s.cols, s.ld, opts);
  table::backward(x.data(), s.ld, pub.y.data(), s.ld, dy.data(), s.ld, dx_tab.data(), s.ld, s.rows,
                  s.cols);
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t i = 0; i < s.cols; ++i) {
      const std::size_t k = r * s.ld + i;
      const T want = zeroed[r] ? T(0) : dx_tab[k];
      if (!same_bits_or_both_nan(dx_pub[k], want))
        fail(x.data() + r * s.ld, s.cols, i, dx_pub[k], want, 0,
             zeroed[r] ? "adaptive_softmax_backward of a zero_masked_rows row is not 0"
                       : "the header-only backward differs from its table");
    }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
