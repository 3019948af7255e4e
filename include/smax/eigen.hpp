#pragma once
// Eigen overloads of every smax family and its backward pass (the list in families.hpp) over the
// rows of Eigen row-major matrices, Maps, Refs, blocks, transposes and arrays, without copies.
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
// - Scalars: float or double, the same type for every argument; or, for the forward forms
//   without an algorithm tag, Eigen::bfloat16 or Eigen::half (Eigen 3.4 or newer), computed as
//   smax::bf16 / smax::fp16 are (docs/half.md: in float, rounded once).
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
#include <tuple>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

#include "families.hpp"

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
// The smax type of an Eigen 16-bit scalar (void for the others): the same two bytes.
template <class S>
struct half_of {
  using type = void;
};
#if EIGEN_VERSION_AT_LEAST(3, 4, 0)
template <>
struct half_of<Eigen::bfloat16> {
  using type = ::smax::bf16;
};
template <>
struct half_of<Eigen::half> {
  using type = ::smax::fp16;
};
static_assert(sizeof(Eigen::bfloat16) == 2 && sizeof(Eigen::half) == 2,
              "smax/eigen.hpp: Eigen's 16-bit scalars must be two bytes");
#endif
template <class S>
constexpr bool is_half_scalar = !std::is_void<typename half_of<S>::type>::value;

template <class D>
struct rows_of {
  static constexpr bool real = std::is_same<typename D::Scalar, float>::value ||
                               std::is_same<typename D::Scalar, double>::value ||
                               is_half_scalar<typename D::Scalar>;
  static constexpr bool direct = (int(D::Flags) & Eigen::DirectAccessBit) != 0;
  static constexpr bool row_major = bool(D::IsRowMajor) || int(D::RowsAtCompileTime) == 1;
  static constexpr bool contiguous = int(D::InnerStrideAtCompileTime) == 1;
  static constexpr bool writable = (int(D::Flags) & Eigen::LvalueBit) != 0;
  static constexpr bool ok = real && direct && row_major && contiguous;
};

template <class D>
constexpr bool check_input() noexcept {
  static_assert(rows_of<D>::real,
                "smax/eigen.hpp: the scalar type must be float, double, Eigen::bfloat16 or "
                "Eigen::half");
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
  static_assert(
      (int(A::RowsAtCompileTime) == Eigen::Dynamic || int(B::RowsAtCompileTime) == Eigen::Dynamic ||
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

// The other families: f(rows, cols, {data, outer stride}...) over an output and its inputs
// after the same checks as forward/backward (row-major, contiguous rows, one shape, no partial
// overlap of the output with an input, NaN output on a shape mismatch in release builds).
template <class F, class Out, class... In>
inline void for_rows(F&& f, Out& out, In const&... in) noexcept {
  constexpr bool ok =
      check_output<Out>() && (check_input<In>() && ...) && (check_same_scalar<In, Out>() && ...);
  if constexpr (ok) {
    const bool shapes = (same_shape(in, out) && ...);
    SMAX_ASSERT(shapes && "smax/eigen.hpp: every argument must have the same shape");
    if (!shapes) return fill_nan(out);
    const auto rows = static_cast<std::size_t>(out.rows());
    const auto cols = static_cast<std::size_t>(out.cols());
    SMAX_ASSERT(!(partially_overlap(in.data(), leading_dimension(in), out.data(),
                                    leading_dimension(out), rows, cols) ||
                  ...) &&
                "smax/eigen.hpp: the output overlaps an input without being the same matrix");
    if (rows == 0 || cols == 0) return;
    f(rows, cols, out.data(), leading_dimension(out), in.data()..., leading_dimension(in)...);
  }
}

// Every family's Eigen forms go through these two, on the header-only kernels.
// A family with a per-row report (api/entry.hpp) returns the number of rows reported (0 on a
// shape mismatch).
template <class Family, class X, class Y>
inline api::rows_result_t<Family> forward(X const& x, Y& y, typename Family::options const& opts,
                                          api::algorithm_choice algorithm) noexcept {
  [[maybe_unused]] std::size_t reported = 0;
  for_rows(
      [&](std::size_t r, std::size_t c, auto* yp, std::size_t ldy, auto const* xp,
          std::size_t ldx) {
        using S = std::remove_pointer_t<decltype(yp)>;
        if constexpr (is_half_scalar<S>) {  // the 16-bit forms (automatic algorithm only)
          using H = typename half_of<S>::type;
          (void)algorithm;
          const H* xh = reinterpret_cast<const H*>(xp);
          H* yh = reinterpret_cast<H*>(yp);
          if constexpr (Family::reports_rows)
            reported = api::forward_half<Family, api::header_only>(xh, ldx, yh, ldy, r, c, opts);
          else
            api::forward_half<Family, api::header_only>(xh, ldx, yh, ldy, r, c, opts);
        } else if constexpr (Family::reports_rows) {
          reported =
              api::forward<Family, api::header_only>(xp, ldx, yp, ldy, r, c, opts, algorithm);
        } else {
          api::forward<Family, api::header_only>(xp, ldx, yp, ldy, r, c, opts, algorithm);
        }
      },
      y, x);
  if constexpr (Family::reports_rows) return reported;
}

// Inputs: (y, dy) or (x, y, dy) as the family's backward_form says. grads, if not null, is set:
// to zero for an empty call or a shape mismatch (whose dx is NaN).
template <class Family, class DX, class... In>
inline void backward(DX& dx, typename Family::options const& opts, typename Family::grads* grads,
                     In const&... in) noexcept {
  static_assert(!is_half_scalar<typename plain_t<DX>::Scalar>,
                "smax/eigen.hpp: the backward passes take float or double (the 16-bit forms are "
                "forward only)");
  if (grads) *grads = typename Family::grads{};
  for_rows(
      [&](std::size_t r, std::size_t c, auto* dxp, std::size_t lddx, auto... p) {
        const auto args = std::make_tuple(p...);  // the data pointers, then the strides
        using T = std::remove_pointer_t<decltype(dxp)>;
        if constexpr (sizeof...(In) == 2)
          api::backward<Family, api::header_only>(
              static_cast<const T*>(nullptr), 0, std::get<0>(args), std::get<2>(args),
              std::get<1>(args), std::get<3>(args), dxp, lddx, r, c, opts, grads);
        else
          api::backward<Family, api::header_only>(
              std::get<0>(args), std::get<3>(args), std::get<1>(args), std::get<4>(args),
              std::get<2>(args), std::get<5>(args), dxp, lddx, r, c, opts, grads);
      },
      dx, in...);
}

}  // namespace eigen_detail

// Every family's forms over the rows of Eigen objects, stamped from the list in families.hpp:
//
//   name(x, y [, opts])                   name(algorithm, x, y [, opts])   (softmax, log_softmax)
//     (a family with a per-row report returns the number of rows reported: api/entry.hpp)
//   name_backward(y, dy, dx [, opts])     (the families whose backward pass reads only y)
//   name_backward(x, y, dy, dx [, opts])  (softpick)
//   name_backward(x, y, dy, dx [, opts [, grads]])   (MultiMax, SSMax: grads summed over rows)
//
// Each computes, row by row, exactly what the pointer form name_rows / name_backward_rows
// computes (the same kernels, bits, bounds and bad-input rules: see the family's header), with the
// argument rules above: row-major, contiguous rows, one shape, each argument its own outer
// stride, never copied; .transpose() for the columns; the output may be an input itself but must
// not partially overlap one.
#define SMAX_DETAIL_EIGEN_FORMS(name, extra_forms)                                            \
  template <class X, class Y, class F_ = api::name##_family, eigen_detail::if_dense_t<Y> = 0> \
  inline api::rows_result_t<F_> name(Eigen::DenseBase<X> const& x, Y&& y,                     \
                                     typename F_::options const& opts = {}) noexcept {        \
    return eigen_detail::forward<F_>(x.derived(), y, opts, api::algorithm_choice::automatic); \
  }                                                                                           \
  template <class Algorithm, class X, class Y, class F_ = api::name##_family,                 \
            eigen_detail::if_dense_t<Y> = 0, api::if_algorithms_t<F_> = 0>                    \
  inline auto name(                                                                           \
      Algorithm algorithm, Eigen::DenseBase<X> const& x, Y&& y,                               \
      typename F_::options const& opts = {}) noexcept->decltype(api::algorithm_of(algorithm), \
                                                                api::rows_result_t<F_>()) {   \
    static_assert(!eigen_detail::is_half_scalar<typename X::Scalar>,                          \
                  "smax/eigen.hpp: the 16-bit forms have no algorithm tags");                 \
    return eigen_detail::forward<F_>(x.derived(), y, opts, api::algorithm_of(algorithm));     \
  }                                                                                           \
  template <class Y, class DY, class DX, class F_ = api::name##_family,                       \
            eigen_detail::if_dense_t<DX> = 0,                                                 \
            api::if_backward_t<F_, api::backward_shape::from_output> = 0>                     \
  inline void name##_backward(Eigen::DenseBase<Y> const& y, Eigen::DenseBase<DY> const& dy,   \
                              DX&& dx, typename F_::options const& opts = {}) noexcept {      \
    eigen_detail::backward<F_>(dx, opts, nullptr, y.derived(), dy.derived());                 \
  }                                                                                           \
  template <class X, class Y, class DY, class DX, class F_ = api::name##_family,              \
            eigen_detail::if_dense_t<DX> = 0,                                                 \
            api::if_backward_t<F_, api::backward_shape::from_input> = 0>                      \
  inline void name##_backward(Eigen::DenseBase<X> const& x, Eigen::DenseBase<Y> const& y,     \
                              Eigen::DenseBase<DY> const& dy, DX&& dx,                        \
                              typename F_::options const& opts = {}) noexcept {               \
    eigen_detail::backward<F_>(dx, opts, nullptr, x.derived(), y.derived(), dy.derived());    \
  }                                                                                           \
  template <class X, class Y, class DY, class DX, class F_ = api::name##_family,              \
            eigen_detail::if_dense_t<DX> = 0,                                                 \
            api::if_backward_t<F_, api::backward_shape::from_input_with_grads> = 0>           \
  inline void name##_backward(Eigen::DenseBase<X> const& x, Eigen::DenseBase<Y> const& y,     \
                              Eigen::DenseBase<DY> const& dy, DX&& dx,                        \
                              typename F_::options const& opts = {},                          \
                              typename F_::grads * grads = nullptr) noexcept {                \
    eigen_detail::backward<F_>(dx, opts, grads, x.derived(), y.derived(), dy.derived());      \
  }
SMAX_FAMILIES(SMAX_DETAIL_EIGEN_FORMS)
#undef SMAX_DETAIL_EIGEN_FORMS

// The families of other shapes stamp their own Eigen forms (see each family's header).
#define SMAX_DETAIL_EIGEN_OTHER_FORMS(name, forms, eigen_forms) eigen_forms
SMAX_OTHER_SHAPE_FAMILIES(SMAX_DETAIL_EIGEN_OTHER_FORMS)
#undef SMAX_DETAIL_EIGEN_OTHER_FORMS

SMAX_END_NAMESPACE
