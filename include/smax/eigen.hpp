#pragma once
// Eigen overloads of the smax families (softmax, log-softmax, MultiMax, softpick, sparsemax,
// sigmoid, SSMax and their backward passes) over the rows of Eigen row-major matrices, Maps,
// Refs, blocks, transposes and arrays, without copies.
// The only smax header that includes Eigen.
//
//   using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
//   RowMatrixXf logits(rows, cols), p(rows, cols);
//   smax::softmax(logits, p);                          // each row of p sums to 1
//   smax::softmax(smax::online, logits.middleRows(8, 4), p.middleRows(8, 4));
//   Eigen::MatrixXf c(n, m), q(n, m);                  // column-major
//   smax::softmax(c.transpose(), q.transpose());       // softmax of each COLUMN of c
//
// Which arguments are taken. Every argument is a dense Eigen object (Matrix, Array, Map, Ref, a
// block, row or transpose of one) whose rows are contiguous: row-major storage and an inner stride
// of 1 known at compile time. The rows may be any distance apart (outer stride >= cols), and x, y
// (and y, dy, dx) may each have their own outer stride. The functions read and write the
// objects' own memory through data() and outerStride(): nothing is copied, evaluated or allocated.
// - Column-major objects do not compile (static_assert). Eigen::Ref<const RowMatrixXf> would
//   silently copy one; smax refuses instead. Softmax over the columns of a column-major matrix c is
//   the row softmax of c.transpose(), a row-major view of the same memory: pass that.
// - Column vectors (ColsAtCompileTime == 1, e.g. VectorXf) are column-major too, so they do not
//   compile either, rather than being taken as n rows of one element (all ones) or as one row:
//   pass v.transpose() for the softmax of the whole vector. Row vectors (RowVectorXf, m.row(i))
//   are one row.
// - The inner stride must be 1 at compile time: a Map with InnerStride<>, a row of a column-major
//   matrix (stride = its outer stride) and m.col(j) of a row-major matrix do not compile. For a
//   column-major matrix with one row, use Eigen::Map<RowVectorXf>(c.data(), c.cols()).
// - Expressions without storage (a + b, x.exp(), ...) do not compile: evaluate them into a matrix.
// - Scalars: float or double, the same type for every argument.
// - Outputs are non-const lvalue objects (a matrix, or a Map/Ref/block/transpose of one, which may
//   be a temporary), of the same shape as the input. A shape mismatch is a precondition violation:
//   asserted in debug builds; in release builds the output is filled with NaN.
// - An output may be the input itself (smax::softmax(m, m), in place) but must not partially
//   overlap it (asserted in debug builds); disjoint blocks of one matrix are fine.
//
// Results are bit for bit those of the pointer API (softmax.hpp, log_softmax.hpp) on the same rows,
// with the same accuracy, edge-case policy (masked -inf entries, NaN/+inf rows, zero_masked_rows)
// and algorithm choice. The kernels are the header-only ones (xsimd::default_arch); for runtime
// dispatch use smax::runtime:: with data() and outerStride().
//
// ABI note: EIGEN_MAX_ALIGN_BYTES depends on the SIMD flags (16 without AVX, 32 with -mavx2); do
// not pass Eigen objects between translation units built with different flags unless the whole
// build pins EIGEN_MAX_ALIGN_BYTES (docs/dispatch.md).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

#include "log_softmax.hpp"
#include "multimax.hpp"
#include "sigmoid.hpp"
#include "softmax.hpp"
#include "softpick.hpp"
#include "sparsemax.hpp"
#include "ssmax.hpp"

static_assert(EIGEN_VERSION_AT_LEAST(3, 3, 0), "smax/eigen.hpp needs Eigen 3.3 or newer");

SMAX_BEGIN_NAMESPACE

// Not `detail`: a namespace of that name in the instruction-set namespace would hide smax::detail.
namespace eigen_detail {

template <class D>
using plain_t = std::remove_cv_t<std::remove_reference_t<D>>;

// Selects the Eigen overloads for a (possibly temporary) output argument: any dense Eigen object.
// Everything else about it is checked by static_asserts, so a wrong argument gets a message rather
// than "no matching function".
template <class D>
using if_dense_t =
    std::enable_if_t<std::is_base_of<Eigen::DenseBase<plain_t<D>>, plain_t<D>>::value, int>;

// The layout checks shared by inputs and outputs. Each one is a separate static_assert so that the
// compiler shows the one message that applies.
template <class D>
struct rows_of {
  static constexpr bool real = std::is_same<typename D::Scalar, float>::value ||
                               std::is_same<typename D::Scalar, double>::value;
  static constexpr bool direct = (int(D::Flags) & Eigen::DirectAccessBit) != 0;
  static constexpr bool row_major = bool(D::IsRowMajor) || int(D::RowsAtCompileTime) == 1;
  static constexpr bool contiguous = int(D::InnerStrideAtCompileTime) == 1;
  static constexpr bool writable = (int(D::Flags) & Eigen::LvalueBit) != 0;
  static constexpr bool ok = real && direct && row_major && contiguous;
};

template <class D>
constexpr bool check_input() noexcept {
  static_assert(rows_of<D>::real,
                "smax/eigen.hpp: the scalar type must be float or double");
  static_assert(rows_of<D>::direct,
                "smax/eigen.hpp: arguments must have storage (a Matrix, Array, Map, Ref, or a "
                "block, row or transpose of one); evaluate an expression into a matrix first");
  static_assert(rows_of<D>::row_major,
                "smax/eigen.hpp: column-major argument. smax takes the softmax of each ROW and "
                "never copies: pass x.transpose() (a row-major view of the same memory) to take "
                "the softmax over the columns, or over the whole of a column vector");
  static_assert(!rows_of<D>::row_major || rows_of<D>::contiguous,
                "smax/eigen.hpp: the rows must be contiguous (inner stride 1 at compile time); "
                "a Map with InnerStride, or a row of a column-major matrix, is not");
  return rows_of<D>::ok;
}

template <class D>
constexpr bool check_output() noexcept {
  static_assert(!std::is_const<std::remove_reference_t<D>>::value,
                "smax/eigen.hpp: the output is const; pass a non-const matrix, Map, Ref or block");
  static_assert(rows_of<plain_t<D>>::writable || !rows_of<plain_t<D>>::direct,
                "smax/eigen.hpp: the output is read-only (a Map<const ...> or Ref<const ...>)");
  return check_input<plain_t<D>>() && !std::is_const<std::remove_reference_t<D>>::value &&
         rows_of<plain_t<D>>::writable;
}

template <class A, class B>
constexpr bool check_same_scalar() noexcept {
  static_assert(std::is_same<typename A::Scalar, typename B::Scalar>::value,
                "smax/eigen.hpp: all arguments must have the same scalar type");
  static_assert((int(A::RowsAtCompileTime) == Eigen::Dynamic ||
                 int(B::RowsAtCompileTime) == Eigen::Dynamic ||
                 int(A::RowsAtCompileTime) == int(B::RowsAtCompileTime)) &&
                    (int(A::ColsAtCompileTime) == Eigen::Dynamic ||
                     int(B::ColsAtCompileTime) == Eigen::Dynamic ||
                     int(A::ColsAtCompileTime) == int(B::ColsAtCompileTime)),
                "smax/eigen.hpp: the arguments have different compile-time shapes");
  return std::is_same<typename A::Scalar, typename B::Scalar>::value;
}

// Distance between row starts in elements. A single row has no such distance: use cols, which
// is what the pointer API expects then (and an Eigen row vector may report any outer stride).
template <class D>
inline std::size_t leading_dimension(D const& m) noexcept {
  if (m.rows() <= 1) return static_cast<std::size_t>(m.cols());
  SMAX_ASSERT(m.outerStride() >= m.cols());
  return static_cast<std::size_t>(m.outerStride());
}

template <class A, class B>
inline bool same_shape(A const& a, B const& b) noexcept {
  return a.rows() == b.rows() && a.cols() == b.cols();
}

// Fills an output whose shape does not match (release builds; debug builds assert first).
template <class D>
inline void fill_nan(D& y) noexcept {
  using T = typename D::Scalar;
  T* p = y.data();
  const std::size_t ld = leading_dimension(y), cols = static_cast<std::size_t>(y.cols());
  for (std::size_t r = 0; r < static_cast<std::size_t>(y.rows()); ++r)
    for (std::size_t c = 0; c < cols; ++c) p[r * ld + c] = std::numeric_limits<T>::quiet_NaN();
}

inline std::ptrdiff_t floor_div(std::ptrdiff_t a, std::ptrdiff_t b) noexcept {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// True when the rows × cols matrices at x (rows ldx elements apart) and y (ldy apart) share an
// element without being the same matrix (in place: x == y, same layout). Exact, O(rows): row r
// of y overlaps row s of x iff their starts are less than cols elements apart. Debug check only.
template <class T>
inline bool partially_overlap(const T* x, std::size_t ldx, const T* y, std::size_t ldy,
                              std::size_t rows, std::size_t cols) noexcept {
  if (rows == 0 || cols == 0) return false;
  if (x == y && (ldx == ldy || rows == 1)) return false;
  // Byte addresses: x and y need not point into the same array, so no pointer arithmetic.
  const auto xb = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(x));
  const auto yb = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(y));
  const auto size = static_cast<std::ptrdiff_t>(sizeof(T));
  const auto n = static_cast<std::ptrdiff_t>(rows);
  const std::ptrdiff_t width = static_cast<std::ptrdiff_t>(cols) * size;
  const std::ptrdiff_t x_step = static_cast<std::ptrdiff_t>(rows > 1 ? ldx : cols) * size;
  const std::ptrdiff_t y_step = static_cast<std::ptrdiff_t>(rows > 1 ? ldy : cols) * size;
  if (yb >= xb + (n - 1) * x_step + width || xb >= yb + (n - 1) * y_step + width) return false;
  for (std::ptrdiff_t r = 0; r < n; ++r) {
    // Rows s of x with |offset - s·x_step| < width, i.e. offset - width < s·x_step < offset + width.
    const std::ptrdiff_t offset = yb + r * y_step - xb;
    std::ptrdiff_t first = floor_div(offset - width, x_step) + 1;
    std::ptrdiff_t last = -floor_div(-(offset + width), x_step) - 1;  // ceil(...) - 1
    if (first < 0) first = 0;
    if (last > n - 1) last = n - 1;
    if (first <= last) return true;
  }
  return false;
}

template <class X, class Y>
inline void forward(X const& x, Y& y, bool log, softmax_options const& opts,
                    kernels::algorithm_id algorithm) noexcept {
  constexpr bool ok = check_input<X>() && check_output<Y>() && check_same_scalar<X, Y>();
  if constexpr (ok) {
    SMAX_ASSERT(same_shape(x, y) && "smax/eigen.hpp: x and y must have the same shape");
    if (!same_shape(x, y)) return fill_nan(y);
    const auto rows = static_cast<std::size_t>(x.rows());
    const auto cols = static_cast<std::size_t>(x.cols());
    const std::size_t ldx = leading_dimension(x), ldy = leading_dimension(y);
    SMAX_ASSERT(!partially_overlap(x.data(), ldx, y.data(), ldy, rows, cols) &&
                "smax/eigen.hpp: x and y overlap without being the same matrix");
    // The layer under the pointer API takes one stride per operand, so x and y need not share one.
    api::forward<api::default_table>(x.data(), ldx, y.data(), ldy, rows, cols, log, opts,
                                     algorithm);
  }
}

template <class Y, class DY, class DX>
inline void backward(Y const& y, DY const& dy, DX& dx, bool log,
                     softmax_options const& opts) noexcept {
  constexpr bool ok = check_input<Y>() && check_input<DY>() && check_output<DX>() &&
                      check_same_scalar<Y, DY>() && check_same_scalar<Y, DX>();
  if constexpr (ok) {
    SMAX_ASSERT(same_shape(y, dy) && same_shape(y, dx) &&
                "smax/eigen.hpp: y, dy and dx must have the same shape");
    if (!same_shape(y, dy) || !same_shape(y, dx)) return fill_nan(dx);
    const auto rows = static_cast<std::size_t>(y.rows());
    const auto cols = static_cast<std::size_t>(y.cols());
    const std::size_t ldy = leading_dimension(y), lddy = leading_dimension(dy),
                      lddx = leading_dimension(dx);
    SMAX_ASSERT(!partially_overlap(y.data(), ldy, dx.data(), lddx, rows, cols) &&
                !partially_overlap(dy.data(), lddy, dx.data(), lddx, rows, cols) &&
                "smax/eigen.hpp: dx overlaps y or dy without being the same matrix");
    api::backward<api::default_table>(y.data(), ldy, dy.data(), lddy, dx.data(), lddx, rows, cols,
                                      log, opts);
  }
}

// The other families: f(rows, cols, {data, outer stride}...) over an output and its inputs
// after the same checks as forward/backward (row-major, contiguous rows, one shape, no partial
// overlap of the output with an input, NaN output on a shape mismatch in release builds).
template <class F, class Out, class... In>
inline void for_rows(F&& f, Out& out, In const&... in) noexcept {
  constexpr bool ok = check_output<Out>() && (check_input<In>() && ...) &&
                      (check_same_scalar<In, Out>() && ...);
  if constexpr (ok) {
    const bool shapes = (same_shape(in, out) && ...);
    SMAX_ASSERT(shapes && "smax/eigen.hpp: every argument must have the same shape");
    if (!shapes) return fill_nan(out);
    const auto rows = static_cast<std::size_t>(out.rows());
    const auto cols = static_cast<std::size_t>(out.cols());
    SMAX_ASSERT(!(partially_overlap(in.data(), leading_dimension(in), out.data(),
                                    leading_dimension(out), rows, cols) || ...) &&
                "smax/eigen.hpp: the output overlaps an input without being the same matrix");
    if (rows == 0 || cols == 0) return;
    f(rows, cols, out.data(), leading_dimension(out), in.data()..., leading_dimension(in)...);
  }
}

template <class X, class Y>
inline void softpick_forward(X const& x, Y& y, softpick_options const& opts) noexcept {
  for_rows(
      [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp, std::size_t ldx) {
        api::check_options(opts);
        api::softpick_default_table::forward(xp, ldx, yp, ldy, r, c, opts.eps,
                                             kernels::softpick_algorithm::automatic);
      },
      y, x);
}

template <class X, class Y, class DY, class DX>
inline void softpick_backward(X const& x, Y const& y, DY const& dy, DX& dx,
                              softpick_options const& opts) noexcept {
  for_rows(
      [&](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* xp,
          auto const* yp, auto const* dyp, std::size_t ldx, std::size_t ldy, std::size_t lddy) {
        api::check_options(opts);
        api::softpick_default_table::backward(xp, ldx, yp, ldy, dyp, lddy, dxp, lddx, r, c, opts.eps);
      },
      dx, x, y, dy);
}

template <class X, class Y>
inline void sparsemax_forward(X const& x, Y& y) noexcept {
  for_rows(
      [](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp, std::size_t ldx) {
        sparsemax_api::default_table::forward(xp, ldx, yp, ldy, r, c,
                                              kernels::sparsemax_algorithm::automatic);
      },
      y, x);
}

template <class Y, class DY, class DX>
inline void sparsemax_backward(Y const& y, DY const& dy, DX& dx) noexcept {
  for_rows(
      [](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* yp,
         auto const* dyp, std::size_t ldy, std::size_t lddy) {
        sparsemax_api::default_table::backward(yp, ldy, dyp, lddy, dxp, lddx, r, c);
      },
      dx, y, dy);
}

template <class X, class Y>
inline void multimax_forward(X const& x, Y& y, multimax_options const& opts) noexcept {
  for_rows(
      [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp, std::size_t ldx) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(xp)>>;
        kernels::multimax_table<xsimd::default_arch>::forward(xp, ldx, yp, ldy, r, c,
                                                               api::multimax_parameters_of<T>(opts));
      },
      y, x);
}

template <class X, class Y, class DY, class DX>
inline void multimax_backward(X const& x, Y const& y, DY const& dy, DX& dx,
                              multimax_options const& opts,
                              multimax_param_grads* param_grads) noexcept {
  constexpr bool ok = check_input<X>() && check_input<Y>() && check_input<DY>() &&
                      check_output<DX>() && check_same_scalar<X, Y>() &&
                      check_same_scalar<X, DY>() && check_same_scalar<X, DX>();
  if constexpr (ok) {
    using T = typename X::Scalar;
    SMAX_ASSERT(same_shape(x, y) && same_shape(x, dy) && same_shape(x, dx) &&
                "smax/eigen.hpp: x, y, dy and dx must have the same shape");
    double grads[8] = {};
    if (!same_shape(x, y) || !same_shape(x, dy) || !same_shape(x, dx)) {
      fill_nan(dx);
      for (double& g : grads) g = std::numeric_limits<double>::quiet_NaN();
    } else {
      const auto rows = static_cast<std::size_t>(x.rows());
      const auto cols = static_cast<std::size_t>(x.cols());
      const std::size_t ldx = leading_dimension(x), ldy = leading_dimension(y),
                        lddy = leading_dimension(dy), lddx = leading_dimension(dx);
      SMAX_ASSERT(!partially_overlap(x.data(), ldx, dx.data(), lddx, rows, cols) &&
                  !partially_overlap(y.data(), ldy, dx.data(), lddx, rows, cols) &&
                  !partially_overlap(dy.data(), lddy, dx.data(), lddx, rows, cols) &&
                  "smax/eigen.hpp: dx overlaps x, y or dy without being the same matrix");
      if (rows != 0 && cols != 0)
        kernels::multimax_table<xsimd::default_arch>::backward(
            x.data(), ldx, y.data(), ldy, dy.data(), lddy, dx.data(), lddx, rows, cols,
            api::multimax_parameters_of<T>(opts), param_grads ? grads : nullptr);
    }
    if (param_grads)
      for (int k = 0; k < 4; ++k) {
        param_grads->dt[k] = grads[k];
        param_grads->dr[k] = grads[4 + k];
      }
  }
}

}  // namespace eigen_detail

// Softmax of each row of x into the same row of y:
//   y(r, i) = exp(x(r, i)/T) / sum_j exp(x(r, j)/T),  T = opts.temperature,
// computed as exp((x - m)/T)/sum with m the row maximum (nothing overflows), with the algorithm
// best for the row length, exactly as smax::softmax_rows: the bound block of softmax.hpp (accuracy,
// range, edge-case policy) holds.
// Rows only: x and y are row-major with contiguous rows (any outer stride, each its own), never
// copied; a column-major x or y does not compile -- pass .transpose() for the softmax over columns.
// y has x's shape; y may be x itself (in place) but must not partially overlap it.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void softmax(Eigen::DenseBase<X> const& x, Y&& y,
                    softmax_options const& opts = {}) noexcept {
  eigen_detail::forward(x.derived(), y, false, opts, kernels::algorithm_id::automatic);
}

// Softmax of each row with an explicit algorithm: smax::three_pass, smax::online or
// smax::two_pass (see softmax.hpp); otherwise as above.
template <class Algorithm, class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline auto softmax(Algorithm algorithm, Eigen::DenseBase<X> const& x, Y&& y,
                    softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  eigen_detail::forward(x.derived(), y, false, opts, api::algorithm_of(algorithm));
}

// Log-softmax of each row of x into the same row of y:
//   y(r, i) = x(r, i)/T - log sum_j exp(x(r, j)/T),
// computed as (x - m)/T - log s with s = sum exp((x - m)/T) in [1, cols], exactly as
// smax::log_softmax_rows, with the bound block of log_softmax.hpp (accuracy, range, policy:
// masked entries give -inf). Same argument rules as softmax:
// row-major, no copies, .transpose() for columns, y may be x but must not partially overlap it.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void log_softmax(Eigen::DenseBase<X> const& x, Y&& y,
                        softmax_options const& opts = {}) noexcept {
  eigen_detail::forward(x.derived(), y, true, opts, kernels::algorithm_id::automatic);
}

// Log-softmax of each row with an explicit algorithm (smax::three_pass, online, two_pass).
template <class Algorithm, class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline auto log_softmax(Algorithm algorithm, Eigen::DenseBase<X> const& x, Y&& y,
                        softmax_options const& opts = {}) noexcept
    -> decltype(api::algorithm_of(algorithm), void()) {
  eigen_detail::forward(x.derived(), y, true, opts, api::algorithm_of(algorithm));
}

// Backward pass of the row softmax, for y = softmax(x, opts) and the upstream gradient dy:
//   dx(r, i) = (1/T)·y(r, i)·(dy(r, i) - sum_j dy(r, j)·y(r, j)),
// exactly as smax::softmax_backward_rows (softmax.hpp): masked entries (y = 0) get 0 and each row
// of dx sums to 0. y, dy and dx are row-major with contiguous rows and one shape, each with its
// own outer stride, never copied; column-major arguments do not compile (pass .transpose() of all
// three for softmax taken over columns). dx may be y or dy itself, but must not partially overlap
// either.
template <class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void softmax_backward(Eigen::DenseBase<Y> const& y, Eigen::DenseBase<DY> const& dy,
                             DX&& dx, softmax_options const& opts = {}) noexcept {
  eigen_detail::backward(y.derived(), dy.derived(), dx, false, opts);
}

// Backward pass of the row log-softmax, for z = log_softmax(x, opts) and the upstream gradient dy:
//   dx(r, i) = (1/T)·(dy(r, i) - exp(z(r, i))·sum_j dy(r, j)),
// exactly as smax::log_softmax_backward_rows (log_softmax.hpp): at a masked entry (z = -inf)
// dx = dy/T. Same argument rules as softmax_backward.
template <class Z, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void log_softmax_backward(Eigen::DenseBase<Z> const& z, Eigen::DenseBase<DY> const& dy,
                                 DX&& dx, softmax_options const& opts = {}) noexcept {
  eigen_detail::backward(z.derived(), dy.derived(), dx, true, opts);
}

// Softpick of each row of x into the same row of y (docs/softpick.md):
//   y(r, i) = relu(e^x(r, i) - 1) / (sum_j |e^x(r, j) - 1| + eps·e^m),  m = the row maximum,
// exactly as smax::softpick_rows: the bound block of softpick.hpp (accuracy, range, edge-case
// policy: a row with no positive entry gives zeros) holds. Same argument
// rules as softmax: row-major, no copies, .transpose() for columns, y may be x but must not
// partially overlap it.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void softpick(Eigen::DenseBase<X> const& x, Y&& y, softpick_options const& opts = {}) noexcept {
  eigen_detail::softpick_forward(x.derived(), y, opts);
}

// Backward pass of the row softpick, for y = softpick(x, opts) and the upstream gradient dy,
// exactly as smax::softpick_backward_rows (softpick.hpp). x, y, dy and dx have one shape, each its
// own outer stride; dx may be any of the others itself, but must not partially overlap them.
template <class X, class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void softpick_backward(Eigen::DenseBase<X> const& x, Eigen::DenseBase<Y> const& y,
                              Eigen::DenseBase<DY> const& dy, DX&& dx,
                              softpick_options const& opts = {}) noexcept {
  eigen_detail::softpick_backward(x.derived(), y.derived(), dy.derived(), dx, opts);
}

// Sparsemax of each row of x into the same row of y: y(r, i) = max(x(r, i) - tau_r, 0) with
// tau_r such that the row sums to 1, exactly as smax::sparsemax_rows, with the bound block of
// sparsemax.hpp (accuracy, range, edge-case policy). Same argument rules as softmax: row-major,
// no copies, .transpose() for columns, y may be x but must not partially overlap it.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void sparsemax(Eigen::DenseBase<X> const& x, Y&& y) noexcept {
  eigen_detail::sparsemax_forward(x.derived(), y);
}

// Backward pass of the row sparsemax, for y = sparsemax(x) and the upstream gradient dy:
//   dx(r, i) = [y(r, i) > 0]·(dy(r, i) - mean over the support of row r of dy),
// exactly as smax::sparsemax_backward_rows (sparsemax.hpp). Same argument rules as
// softmax_backward.
template <class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void sparsemax_backward(Eigen::DenseBase<Y> const& y, Eigen::DenseBase<DY> const& dy,
                               DX&& dx) noexcept {
  eigen_detail::sparsemax_backward(y.derived(), dy.derived(), dx);
}

// MultiMax of each row of x into the same row of y: y = softmax(σ(x)) with
//   σ(x) = x + t0·relu(r0 - x) + t1·relu(x - r1) + t2·relu(r2 - x)² + t3·relu(x - r3)²,
// exactly as smax::multimax_rows (multimax.hpp), with its bound and edge-case policy (masked
// entries stay masked after σ). Same argument rules as softmax: row-major, no copies, .transpose()
// for columns, y may be x but must not partially overlap it.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void multimax(Eigen::DenseBase<X> const& x, Y&& y, multimax_options const& opts = {}) noexcept {
  eigen_detail::multimax_forward(x.derived(), y, opts);
}

// Backward pass of the row MultiMax, for y = multimax(x, opts) and the upstream gradient dy:
// dx = gz·σ'(x) with gz = y·(dy - <dy, y>) per row, exactly as smax::multimax_backward_rows
// (multimax.hpp); with param_grads, the gradients of the eight parameters summed over all rows.
// x, y, dy and dx have one shape and each its own outer stride; dx may be x, y or dy itself.
template <class X, class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void multimax_backward(Eigen::DenseBase<X> const& x, Eigen::DenseBase<Y> const& y,
                              Eigen::DenseBase<DY> const& dy, DX&& dx,
                              multimax_options const& opts = {},
                              multimax_param_grads* param_grads = nullptr) noexcept {
  eigen_detail::multimax_backward(x.derived(), y.derived(), dy.derived(), dx, opts, param_grads);
}

// The other families over the rows of Eigen objects, with the same argument rules as softmax
// (row-major, contiguous rows, no copies, .transpose() for columns, the output may be the input)
// and the results, bounds and policies of their pointer forms (sigmoid.hpp, ssmax.hpp).

// y = σ(x) elementwise.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void sigmoid(Eigen::DenseBase<X> const& x, Y&& y) noexcept {
  eigen_detail::for_rows([](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp,
                           std::size_t ldx) { api::sigmoid(xp, ldx, yp, ldy, r, c, 0.0); },
                        y, x.derived());
}

// y = σ(x + b), b = -ln(seq_len) (seq_len = 0: the number of columns) unless opts.bias is set.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void sigmoid_attention(Eigen::DenseBase<X> const& x, Y&& y,
                              sigmoid_attention_options const& opts = {}) noexcept {
  eigen_detail::for_rows(
      [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp, std::size_t ldx) {
        api::sigmoid(xp, ldx, yp, ldy, r, c, api::sigmoid_attention_bias(opts, c));
      },
      y, x.derived());
}

// dx = dy·y·(1 - y) for y = sigmoid(x) or sigmoid_attention(x).
template <class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void sigmoid_backward(Eigen::DenseBase<Y> const& y, Eigen::DenseBase<DY> const& dy,
                             DX&& dx) noexcept {
  eigen_detail::for_rows(
      [](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* yp,
         auto const* dyp, std::size_t ldy, std::size_t lddy) {
        api::sigmoid_backward(yp, ldy, dyp, lddy, dxp, lddx, r, c);
      },
      dx, y.derived(), dy.derived());
}

// SSMax of each row: y = softmax(λ·x), λ = s·ln(n) + b with n = opts.n or the number of columns.
template <class X, class Y, eigen_detail::if_dense_t<Y> = 0>
inline void ssmax(Eigen::DenseBase<X> const& x, Y&& y, ssmax_options const& opts = {}) noexcept {
  eigen_detail::for_rows(
      [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp, std::size_t ldx) {
        api::ssmax(xp, ldx, yp, ldy, r, c, opts);
      },
      y, x.derived());
}

// Backward pass of SSMax: dx = λ·y ⊙ (dy - <dy, y>) per row; with grads, the gradients of s and
// b accumulated over the rows (ssmax.hpp).
template <class X, class Y, class DY, class DX, eigen_detail::if_dense_t<DX> = 0>
inline void ssmax_backward(Eigen::DenseBase<X> const& x, Eigen::DenseBase<Y> const& y,
                           Eigen::DenseBase<DY> const& dy, DX&& dx, ssmax_options const& opts = {},
                           ssmax_param_grads* grads = nullptr) noexcept {
  eigen_detail::for_rows(
      [&](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto const* xp,
          auto const* yp, auto const* dyp, std::size_t ldx, std::size_t ldy, std::size_t lddy) {
        api::ssmax_backward(xp, ldx, yp, ldy, dyp, lddy, dxp, lddx, r, c, opts, grads);
      },
      dx, x.derived(), y.derived(), dy.derived());
}

SMAX_END_NAMESPACE
