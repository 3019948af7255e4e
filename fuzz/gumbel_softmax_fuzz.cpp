// Differential fuzzer of Gumbel-softmax (smax/gumbel_softmax.hpp): on every instruction set,
// float and double, in place (y = x, or y = noise) and out of place, soft and hard, for τ over
// its range and outside it (0, negative, ±inf, NaN: through the table, NaN rows):
// - the caller's-noise forward against the long-double reference on the rounded z = x + g (noise
//   from the reference generator, arbitrary values with special ones, or 0), and its backward;
// - the seeded noise (gumbel_noise) against the reference generator's g*, bit-identical on every
//   instruction set and for any split of the elements into calls;
// - the seeded forward and backward equal, bit for bit, the caller's-noise forms given the
//   library's noise for the same (seed, offset) (element (r, c) at offset + r·cols + c), also
//   row by row;
// - the public header-only calls against their table, g = 0 against smax::softmax bit for bit,
//   and smax::runtime's seeded noise and hard samples against the header-only ones bit for bit.
//
// Bounds, as gumbel_softmax.hpp and docs/gumbel_softmax.md state them: soft, softmax's bound for
// the rounded z (relative 1e-6, float, T != 1 adding |z - z_max|/τ·2^-22; double 1e-14 as
// softmax_fuzz reads softmax.hpp) for outputs >= FLT_MIN (smaller ones within FLT_MIN, they may
// be flushed); hard: exactly the one-hot of the first maximum of the rounded z; seeded noise
// |g - g*| <= 2^-21·(1 + |g*|) (double 2^-50); backward, softmax's backward bound for y_soft:
// |dx_i - dx*_i| <= 2^-19·(1/τ)·y_i·(|dy_i| + sum_j |dy_j·y_j|) (double 2^-48), dx* the exact VJP
// at the y_soft the forward writes. Contract: n = 0 does nothing; x = -inf gives +0 and gradient
// 0; a row of only -inf, or a NaN or +inf in z (x + g overflowing included), a NaN row, soft and
// hard, and a NaN gradient; n = 1 gives [1]; τ not finite and > 0 NaN rows forward and backward.

#include <smax/gumbel_softmax.hpp>
#include <smax/reference/gumbel_softmax.hpp>
#include <smax/runtime.hpp>
#include <smax/softmax.hpp>

#include "fuzz_support.hpp"

namespace {

using namespace smax_fuzz;
namespace ref_ns = smax::reference;

template <class T>
constexpr double rtol = sizeof(T) == 4 ? 1e-6 : 1e-14;
template <class T>
constexpr double temperature_unit = sizeof(T) == 4 ? 0x1p-22 : 1e-14;
template <class T>
constexpr double noise_unit = sizeof(T) == 4 ? 0x1p-21 : 0x1p-50;
template <class T>
constexpr double dx_unit = sizeof(T) == 4 ? 0x1p-19 : 0x1p-48;

bool tau_valid(double tau) { return tau > 0 && std::isfinite(tau); }

// The rounded z of one row, as the kernel forms it (x + g in T).
template <class T>
std::vector<long double> rounded_z(const T* x, const T* g, std::size_t n) {
  std::vector<long double> z(n);
  for (std::size_t i = 0; i < n; ++i) z[i] = static_cast<T>(x[i] + g[i]);
  return z;
}

template <class T>
void check_forward_row(const T* x, const T* g, const T* y, std::size_t n, T tau, bool hard) {
  const auto z = rounded_z(x, g, n);
  const long double t = tau;
  const auto ref = hard ? ref_ns::gumbel_hard_of(z, t) : ref_ns::gumbel_soft_of(z, t);
  long double zmax = -HUGE_VALL;
  for (long double v : z) zmax = v > zmax ? v : zmax;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(ref[i])) {
      if (!std::isnan(y[i])) fail(x, n, i, y[i], NAN, 0, "gumbel_softmax of a NaN row is not NaN");
      continue;
    }
    if (x[i] == -inf<T> && !same_bits(y[i], T(0)))
      fail(x, n, i, y[i], 0, 0, "gumbel_softmax: masked entry not +0");
    if (hard) {
      if (!same_bits(y[i], static_cast<T>(ref[i])))
        fail(x, n, i, y[i], ref[i], 0, "gumbel_softmax hard: not the one-hot of the first maximum");
      continue;
    }
    if (x[i] == -inf<T>) continue;
    const double spread = tau == T(1) ? 0.0 : static_cast<double>((zmax - z[i]) / t);
    const double bound = rtol<T> + temperature_unit<T> * (std::isfinite(spread) ? spread : 0.0);
    if (!close(y[i], ref[i], bound, std::numeric_limits<T>::min(), false))
      fail(x, n, i, y[i], ref[i], bound, "gumbel_softmax soft out of bound");
  }
  if (n == 1 && !std::isnan(ref[0]) && y[0] != T(1))
    fail(x, n, 0, y[0], 1, 0, "gumbel_softmax: n = 1 does not give [1]");
}

// dx against the exact VJP at y_soft (the forward's soft output for the same x, g, τ).
template <class T>
void check_backward_row(const T* x, const T* y_soft, const T* dy, const T* dx, std::size_t n,
                        T tau) {
  bool nan_row = false;
  long double dot = 0, abs_dot = 0;
  for (std::size_t i = 0; i < n; ++i) {
    nan_row = nan_row || std::isnan(y_soft[i]);
    dot += static_cast<long double>(dy[i]) * y_soft[i];
    abs_dot += std::fabs(static_cast<long double>(dy[i]) * y_soft[i]);
  }
  const long double t = tau;
  for (std::size_t i = 0; i < n; ++i) {
    if (nan_row) {
      if (!std::isnan(dx[i])) fail(x, n, i, dx[i], NAN, 0, "gumbel_softmax_backward of a NaN row is not NaN");
      continue;
    }
    if (x[i] == -inf<T>) {
      if (dx[i] != T(0)) fail(x, n, i, dx[i], 0, 0, "gumbel_softmax_backward: masked entry not 0");
      continue;
    }
    const long double yi = y_soft[i];
    const long double want = yi * (static_cast<long double>(dy[i]) - dot) / t;
    const double bound = static_cast<double>(
        dx_unit<T> / t * yi * (std::fabs(static_cast<long double>(dy[i])) + abs_dot)) +
        std::numeric_limits<T>::min();
    if (!close(dx[i], want, 0.0, bound, true))
      fail(x, n, i, dx[i], want, bound, "gumbel_softmax_backward out of bound");
  }
}

template <class T>
void expect_same(const T* x, std::size_t n, std::vector<T> const& got, std::vector<T> const& want,
                 const char* what) {
  for (std::size_t k = 0; k < got.size(); ++k)
    if (!same_bits_or_both_nan(got[k], want[k])) fail(x, n, k, got[k], want[k], 0, what);
}

template <class T>
void run(reader& in) {
  const shape s = decode_shape(in, 4096);
  const std::uint8_t flags = in.byte();
  const bool hard = flags & 1;
  const bool noise_is_y = flags & 2;  // in place on the noise instead of x (caller's-noise form)
  const unsigned noise_kind = (flags >> 2) & 3;  // 0, 1: the generator's; 2: decoded; 3: zero
  double tau = in.pick<double>({1, 0.5, 0.1, 2, 10, 1e-3, 1e3, 0.01, 1e-20, 1e20, 0.3, 1, 5});
  if ((flags & 0xF0) == 0xF0) tau = in.pick<double>({0.0, -1.0, HUGE_VAL, -HUGE_VAL, NAN});
  const std::uint64_t seed = in.u64();
  const std::uint64_t offset = (flags & 0x10) ? in.u64() : in.u16();  // huge offsets wrap blocks
  const std::vector<T> x = decode_rows<T>(in, s.rows, s.cols, s.ld, canary<T>);
  const std::vector<T> dy = decode_gradient<T>(in, s.rows, s.cols, s.ld);
  const T t = static_cast<T>(tau);
  const bool valid = tau_valid(tau) && tau_valid(static_cast<double>(t));

  // The caller's noise, with x's layout.
  std::vector<T> noise(x.size(), T(0));
  if (noise_kind == 2) {
    noise = decode_rows<T>(in, s.rows, s.cols, s.ld, T(0));
  } else if (noise_kind < 2) {
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t c = 0; c < s.cols; ++c)
        noise[r * s.ld + c] = static_cast<T>(ref_ns::gumbel_noise<T>(seed, offset + r * s.cols + c));
  }

  // The reference generator's noise for (seed, offset), and the library's on every instruction
  // set: within its bound, the same bits everywhere.
  const std::size_t total = s.rows * s.cols;
  std::vector<T> library_noise;
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::gumbel_softmax_table<A>;
    describe("%s, %s, gumbel noise, n %zu, seed %llu, offset %llu", A::name(), type_name<T>(),
             total, static_cast<unsigned long long>(seed), static_cast<unsigned long long>(offset));
    std::vector<T> g(total + 1, canary<T>);
    if (total) table::noise(g.data(), total, seed, offset);
    if (!same_bits(g[total], canary<T>))
      fail(g.data(), total, total, g[total], canary<T>, 0, "gumbel noise wrote past the end");
    g.pop_back();
    for (std::size_t k = 0; k < total; ++k) {
      const long double want = ref_ns::gumbel_noise<T>(seed, offset + k);
      const double bound = noise_unit<T> * (1 + std::fabs(static_cast<double>(want)));
      if (!std::isfinite(g[k]) || !close(g[k], want, 0.0, bound, false))
        fail(g.data(), total, k, g[k], want, bound, "gumbel noise out of bound");
    }
    // Any split into calls gives the same noise.
    if (total > 1) {
      const std::size_t cut = 1 + (seed >> 7) % (total - 1);
      std::vector<T> split(total);
      table::noise(split.data(), cut, seed, offset);
      table::noise(split.data() + cut, total - cut, seed, offset + cut);
      expect_same(g.data(), total, split, g, "gumbel noise differs when split into two calls");
    }
    if (library_noise.empty())
      library_noise = g;
    else
      expect_same(g.data(), total, g, library_noise, "gumbel noise differs between instruction sets");
  });
  if (s.cols == 0) return;
  // The library's noise in x's layout.
  std::vector<T> seeded_noise(x.size(), T(0));
  for (std::size_t r = 0; r < s.rows; ++r)
    for (std::size_t c = 0; c < s.cols; ++c) seeded_noise[r * s.ld + c] = library_noise[r * s.cols + c];

  std::vector<T> hard_seeded_first;
  for_each_arch([&](auto arch) {
    using A = decltype(arch);
    using table = smax::kernels::gumbel_softmax_table<A>;
    const char* place = !s.in_place ? "out of place" : noise_is_y ? "y = noise" : "y = x";
    describe("%s, %s, gumbel_softmax %s, tau %.17g, noise %u, rows %zu, cols %zu, ld %zu, %s",
             A::name(), type_name<T>(), hard ? "hard" : "soft", double(t), noise_kind, s.rows,
             s.cols, s.ld, place);
    // The caller's-noise form.
    std::vector<T> y;
    if (s.in_place && noise_is_y) {
      y = noise;
      table::forward(x.data(), s.ld, y.data(), s.ld, y.data(), s.ld, s.rows, s.cols, t, hard);
    } else {
      auto b = prepare(x, s);
      table::forward(b.input(), s.ld, noise.data(), s.ld, b.output(), s.ld, s.rows, s.cols, t, hard);
      b.check_untouched(x);
      y = b.y;
    }
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      const T* yr = y.data() + r * s.ld;
      if (!valid) {
        for (std::size_t i = 0; i < s.cols; ++i)
          if (!std::isnan(yr[i])) fail(xr, s.cols, i, yr[i], NAN, 0, "gumbel_softmax: invalid tau is not a NaN row");
        continue;
      }
      check_forward_row(xr, noise.data() + r * s.ld, yr, s.cols, t, hard);
    }

    // The soft output (what the backward recomputes) and the backward, dx = x in place.
    std::vector<T> y_soft(x.size(), canary<T>);
    table::forward(x.data(), s.ld, noise.data(), s.ld, y_soft.data(), s.ld, s.rows, s.cols, t, false);
    if (!hard)
      for (std::size_t r = 0; r < s.rows; ++r)
        for (std::size_t i = 0; i < s.cols; ++i)
          if (!same_bits_or_both_nan(y_soft[r * s.ld + i], y[r * s.ld + i]))
            fail(x.data() + r * s.ld, s.cols, i, y_soft[r * s.ld + i], y[r * s.ld + i], 0,
                 "gumbel_softmax soft differs between calls");
    describe("%s, %s, gumbel_softmax_backward, tau %.17g, noise %u, rows %zu, cols %zu, ld %zu, %s",
             A::name(), type_name<T>(), double(t), noise_kind, s.rows, s.cols, s.ld,
             s.in_place ? "dx = x" : "dx separate");
    std::vector<T> dx = s.in_place ? x : std::vector<T>(x.size(), canary<T>);
    table::backward(s.in_place ? dx.data() : x.data(), s.ld, noise.data(), s.ld, dy.data(), s.ld,
                    dx.data(), s.ld, s.rows, s.cols, t);
    for (std::size_t r = 0; r < s.rows; ++r) {
      const T* xr = x.data() + r * s.ld;
      if (!valid) {
        for (std::size_t i = 0; i < s.cols; ++i)
          if (!std::isnan(dx[r * s.ld + i]))
            fail(xr, s.cols, i, dx[r * s.ld + i], NAN, 0, "gumbel_softmax_backward: invalid tau is not a NaN row");
        continue;
      }
      check_backward_row(xr, y_soft.data() + r * s.ld, dy.data() + r * s.ld, dx.data() + r * s.ld,
                         s.cols, t);
    }

    // The seeded forms: the caller's-noise forms with the library's noise, bit for bit.
    describe("%s, %s, gumbel_softmax seeded %s, tau %.17g, seed %llu, offset %llu, rows %zu, "
             "cols %zu, ld %zu, %s",
             A::name(), type_name<T>(), hard ? "hard" : "soft", double(t),
             static_cast<unsigned long long>(seed), static_cast<unsigned long long>(offset),
             s.rows, s.cols, s.ld, s.in_place ? "in place" : "out of place");
    auto sb = prepare(x, s);
    table::forward_seeded(sb.input(), s.ld, sb.output(), s.ld, s.rows, s.cols, t, hard, seed, offset);
    sb.check_untouched(x);
    auto cb = prepare(x, s);
    table::forward(cb.input(), s.ld, seeded_noise.data(), s.ld, cb.output(), s.ld, s.rows, s.cols,
                   t, hard);
    expect_same(x.data(), s.cols, sb.y, cb.y,
                "gumbel_softmax seeded differs from the caller's form with the same noise");
    if (valid)
      for (std::size_t r = 0; r < s.rows; ++r)
        check_forward_row(x.data() + r * s.ld, seeded_noise.data() + r * s.ld,
                          sb.y.data() + r * s.ld, s.cols, t, hard);
    // Row by row at offset + r·cols: a row alone gives the bits of row r of the batch (the
    // header promises the outputs, not only the noise: each row has its own softmax call).
    for (std::size_t r = 0; r < s.rows; ++r) {
      std::vector<T> one(s.cols, canary<T>),
          want(sb.y.begin() + r * s.ld, sb.y.begin() + r * s.ld + s.cols);
      table::forward_seeded(x.data() + r * s.ld, s.cols, one.data(), s.cols, 1, s.cols, t, hard,
                            seed, offset + r * s.cols);
      expect_same(x.data() + r * s.ld, s.cols, one, want,
                  "gumbel_softmax seeded: a row alone differs from row r of the batch");
    }
    if (hard) {  // the one-hot depends on the noise only: the same bits on every instruction set
      if (hard_seeded_first.empty())
        hard_seeded_first = sb.y;
      else
        expect_same(x.data(), s.cols, sb.y, hard_seeded_first,
                    "gumbel_softmax hard seeded differs between instruction sets");
    }
    std::vector<T> dxs = s.in_place ? x : std::vector<T>(x.size(), canary<T>);
    std::vector<T> dxc(x.size(), canary<T>);
    table::backward_seeded(s.in_place ? dxs.data() : x.data(), s.ld, dy.data(), s.ld, dxs.data(),
                           s.ld, s.rows, s.cols, t, seed, offset);
    table::backward(x.data(), s.ld, seeded_noise.data(), s.ld, dy.data(), s.ld, dxc.data(), s.ld,
                    s.rows, s.cols, t);
    for (std::size_t r = 0; r < s.rows; ++r)
      for (std::size_t i = 0; i < s.cols; ++i)
        if (!same_bits_or_both_nan(dxs[r * s.ld + i], dxc[r * s.ld + i]))
          fail(x.data() + r * s.ld, s.cols, i, dxs[r * s.ld + i], dxc[r * s.ld + i], 0,
               "gumbel_softmax_backward seeded differs from the caller's form with the same noise");
  });

  // The public header-only calls against their table; g = 0 against smax::softmax; runtime's
  // seeded noise and hard samples against the header-only ones. Valid τ only (the rest is a
  // precondition, asserted in this build).
  if (!valid) return;
  using table = smax::kernels::gumbel_softmax_table<xsimd::default_arch>;
  const smax::gumbel_softmax_options opts{tau, hard};
  describe("header-only gumbel_softmax_rows, %s, %s, tau %.17g, rows %zu, cols %zu, ld %zu",
           type_name<T>(), hard ? "hard" : "soft", tau, s.rows, s.cols, s.ld);
  auto pub = prepare(x, s);
  auto tab = prepare(x, s);
  smax::gumbel_softmax_rows(pub.input(), noise.data(), pub.output(), s.rows, s.cols, s.ld, opts);
  table::forward(tab.input(), s.ld, noise.data(), s.ld, tab.output(), s.ld, s.rows, s.cols, t, hard);
  expect_same(x.data(), s.cols, pub.y, tab.y, "the header-only call differs from its table");
  std::vector<T> dxp(x.size(), canary<T>), dxt(x.size(), canary<T>);
  smax::gumbel_softmax_backward_rows(x.data(), noise.data(), dy.data(), dxp.data(), s.rows, s.cols,
                                     s.ld, opts);
  table::backward(x.data(), s.ld, noise.data(), s.ld, dy.data(), s.ld, dxt.data(), s.ld, s.rows,
                  s.cols, t);
  expect_same(x.data(), s.cols, dxp, dxt, "the header-only backward differs from its table");
  if (!hard) {  // g = 0 gives softmax(x/τ) bit for bit
    describe("header-only gumbel_softmax_rows with g = 0 against softmax_rows, %s, tau %.17g",
             type_name<T>(), tau);
    const std::vector<T> zero(x.size(), T(0));
    auto g0 = prepare(x, s);
    auto soft = prepare(x, s);
    smax::gumbel_softmax_rows(g0.input(), zero.data(), g0.output(), s.rows, s.cols, s.ld, opts);
    smax::softmax_options sopts;
    sopts.temperature = tau;
    smax::softmax_rows(soft.input(), soft.output(), s.rows, s.cols, s.ld, sopts);
    expect_same(x.data(), s.cols, g0.y, soft.y, "gumbel_softmax with g = 0 differs from softmax(x/tau)");
  }

  // The seeded forms.
  auto pubs = prepare(x, s);
  auto tabs = prepare(x, s);
  smax::gumbel_softmax_rows(pubs.input(), pubs.output(), s.rows, s.cols, s.ld, opts, seed, offset);
  table::forward_seeded(tabs.input(), s.ld, tabs.output(), s.ld, s.rows, s.cols, t, hard, seed, offset);
  expect_same(x.data(), s.cols, pubs.y, tabs.y, "the header-only seeded call differs from its table");
  smax::gumbel_softmax_backward_rows(x.data(), dy.data(), dxp.data(), s.rows, s.cols, s.ld, opts,
                                     seed, offset);
  table::backward_seeded(x.data(), s.ld, dy.data(), s.ld, dxt.data(), s.ld, s.rows, s.cols, t,
                         seed, offset);
  expect_same(x.data(), s.cols, dxp, dxt, "the header-only seeded backward differs from its table");

  describe("runtime (%s) gumbel_noise and seeded hard samples against header-only, %s",
           smax::runtime::arch_name(), type_name<T>());
  std::vector<T> gr(total), gh(total);
  smax::runtime::gumbel_noise(gr.data(), total, seed, offset);
  smax::gumbel_noise(gh.data(), total, seed, offset);
  expect_same(gh.data(), total, gr, gh, "runtime gumbel_noise differs from the header-only one");
  if (hard) {
    auto rt = prepare(x, s);
    smax::runtime::gumbel_softmax_rows(rt.input(), rt.output(), s.rows, s.cols, s.ld, opts, seed, offset);
    expect_same(x.data(), s.cols, rt.y, pubs.y,
                "runtime hard seeded sample differs from the header-only one");
  }
}

}  // namespace

SMAX_FUZZ_TARGET(run)
