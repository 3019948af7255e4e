// Eigen overloads (smax/eigen.hpp), float and double: every accepted kind of argument (row-major
// matrices, arrays, Maps with outer strides, Refs, blocks, middleRows, row vectors, transposes of
// column-major matrices) gives bit for bit what the pointer API gives on the same rows, writes
// into the destination's own memory and nowhere else, and never allocates (checked with Eigen's
// EIGEN_RUNTIME_NO_MALLOC). Arguments that would need a copy fail to compile:
// tests/eigen_compile_fail/.

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

// Count Eigen's failed assertions instead of aborting, in every build type: with
// EIGEN_RUNTIME_NO_MALLOC, a heap allocation while set_is_malloc_allowed(false) fails one.
namespace smax_test {
inline int eigen_assert_failures = 0;
}
#define EIGEN_RUNTIME_NO_MALLOC
#define eigen_assert(x) ((x) ? void(0) : void(++smax_test::eigen_assert_failures))

#include <gtest/gtest.h>

#include <smax/eigen.hpp>
#include <smax/smax.hpp>

namespace {

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using col_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using row_vector = Eigen::Matrix<T, 1, Eigen::Dynamic>;
template <class T>
using strided_map = Eigen::Map<row_matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T>
row_matrix<T> random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed, T spread = 20) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<T> dist(-spread / 2, spread / 2);
  row_matrix<T> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = dist(rng);
  return m;
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Same shape and the same bits everywhere (NaN payloads included), for any two dense objects.
template <class A, class B>
::testing::AssertionResult bitwise_equal(A const& a, B const& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    return ::testing::AssertionFailure()
           << "shape " << a.rows() << "x" << a.cols() << " vs " << b.rows() << "x" << b.cols();
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j)
      if (!same_bits(a(i, j), b(i, j)))
        return ::testing::AssertionFailure()
               << "at (" << i << ", " << j << "): " << a(i, j) << " vs " << b(i, j);
  return ::testing::AssertionSuccess();
}

enum class op { softmax, log_softmax };

// The pointer API on a compact copy of x: what every Eigen form must reproduce bit for bit.
template <class T, class X>
row_matrix<T> by_pointer_api(op o, X const& x, smax::softmax_options const& opts = {}) {
  const row_matrix<T> in = x;
  row_matrix<T> out(in.rows(), in.cols());
  const auto rows = static_cast<std::size_t>(in.rows()), cols = static_cast<std::size_t>(in.cols());
  if (o == op::softmax)
    smax::softmax_rows(in.data(), out.data(), rows, cols, cols, opts);
  else
    smax::log_softmax_rows(in.data(), out.data(), rows, cols, cols, opts);
  return out;
}

template <class T, class Algorithm, class X>
row_matrix<T> by_pointer_api(Algorithm a, op o, X const& x) {
  const row_matrix<T> in = x;
  row_matrix<T> out(in.rows(), in.cols());
  const auto rows = static_cast<std::size_t>(in.rows()), cols = static_cast<std::size_t>(in.cols());
  if (o == op::softmax)
    smax::softmax_rows(a, in.data(), out.data(), rows, cols, cols);
  else
    smax::log_softmax_rows(a, in.data(), out.data(), rows, cols, cols);
  return out;
}

template <class T, class Y, class DY>
row_matrix<T> backward_by_pointer_api(op o, Y const& y_, DY const& dy_,
                                      smax::softmax_options const& opts = {}) {
  const row_matrix<T> y = y_, dy = dy_;
  row_matrix<T> dx(y.rows(), y.cols());
  const auto rows = static_cast<std::size_t>(y.rows()), cols = static_cast<std::size_t>(y.cols());
  if (o == op::softmax)
    smax::softmax_backward_rows(y.data(), dy.data(), dx.data(), rows, cols, cols, opts);
  else
    smax::log_softmax_backward_rows(y.data(), dy.data(), dx.data(), rows, cols, cols, opts);
  return dx;
}

template <class X, class Y>
void apply(op o, X const& x, Y&& y, smax::softmax_options const& opts = {}) {
  if (o == op::softmax)
    smax::softmax(x, std::forward<Y>(y), opts);
  else
    smax::log_softmax(x, std::forward<Y>(y), opts);
}

constexpr op ops[] = {op::softmax, op::log_softmax};

// A value no kernel writes: marks memory that must stay untouched.
template <class T>
constexpr T guard = T(-12345.25);

template <class T>
class eigen_test : public ::testing::Test {};
using element_types = ::testing::Types<float, double>;
struct element_names {
  template <class T>
  static std::string GetName(int) {
    return sizeof(T) == 4 ? "f32" : "f64";
  }
};
TYPED_TEST_SUITE(eigen_test, element_types, element_names);

TYPED_TEST(eigen_test, row_major_matrices_match_the_pointer_api) {
  using T = TypeParam;
  // Shapes: empty, single elements, around the vector width, and rows long enough (> 1 MiB) for
  // the automatic choice to switch to the online algorithm.
  const Eigen::Index shapes[][2] = {{0, 5},
                                    {5, 0},
                                    {1, 1},
                                    {3, 7},
                                    {17, 33},
                                    {4, 1000},
                                    {2, Eigen::Index(1 << 20) / Eigen::Index(sizeof(T)) + 3}};
  unsigned seed = 1;
  for (auto const& s : shapes) {
    const row_matrix<T> x = random_matrix<T>(s[0], s[1], seed++);
    for (op o : ops)
      for (double t : {1.0, 0.7}) {
        smax::softmax_options opts;
        opts.temperature = t;
        row_matrix<T> y(x.rows(), x.cols());
        apply(o, x, y, opts);
        EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(o, x, opts)))
            << s[0] << "x" << s[1] << " op " << int(o) << " T " << t;
      }
  }
}

TYPED_TEST(eigen_test, algorithm_tags_match_the_pointer_api) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(6, 45, 3, T(200));
  row_matrix<T> y(6, 45);
  smax::softmax(smax::three_pass, x, y);
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::three_pass, op::softmax, x)));
  smax::softmax(smax::online, x, y);
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::online, op::softmax, x)));
  smax::softmax(smax::two_pass, x, y, smax::softmax_options{});
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::two_pass, op::softmax, x)));
  smax::log_softmax(smax::three_pass, x, y);
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::three_pass, op::log_softmax, x)));
  smax::log_softmax(smax::online, x, y);
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::online, op::log_softmax, x)));
  smax::log_softmax(smax::two_pass, x, y);
  EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(smax::two_pass, op::log_softmax, x)));
  // Tag forms on blocks and transposes too.
  col_matrix<T> c = random_matrix<T>(45, 6, 4), out(45, 6);
  smax::softmax(smax::online, c.transpose(), out.transpose());
  EXPECT_TRUE(
      bitwise_equal(out.transpose(), by_pointer_api<T>(smax::online, op::softmax, c.transpose())));
}

TYPED_TEST(eigen_test, options_and_edge_cases_match_the_pointer_api) {
  using T = TypeParam;
  row_matrix<T> x = random_matrix<T>(4, 19, 5);
  x.row(1).setConstant(-std::numeric_limits<T>::infinity());  // fully masked row
  x(2, 3) = -std::numeric_limits<T>::infinity();              // one masked entry
  x(3, 7) = std::numeric_limits<T>::quiet_NaN();              // NaN row
  for (op o : ops)
    for (bool zero : {false, true}) {
      smax::softmax_options opts;
      opts.zero_masked_rows = zero;
      opts.temperature = 2.5;
      row_matrix<T> y(4, 19);
      apply(o, x, y, opts);
      EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(o, x, opts)));
      EXPECT_EQ(std::isnan(y(1, 0)), !zero);
    }
}

// A Map over a buffer with guard values between and around the rows: the results land in the
// buffer, at the Map's own stride, and nothing else in it changes. x and y have different strides
// and y is not aligned.
TYPED_TEST(eigen_test, strided_maps_write_in_place_and_nowhere_else) {
  using T = TypeParam;
  const Eigen::Index rows = 5, cols = 9, ldx = 13, ldy = 11, offset = 1;
  const row_matrix<T> values = random_matrix<T>(rows, cols, 7);
  std::vector<T> xbuf(static_cast<std::size_t>(rows * ldx), guard<T>);
  std::vector<T> ybuf(static_cast<std::size_t>(rows * ldy + 2 * offset), guard<T>);
  strided_map<T> x(xbuf.data(), rows, cols, Eigen::OuterStride<>(ldx));
  x = values;
  const std::vector<T> xbuf_before = xbuf;
  for (op o : ops) {
    std::fill(ybuf.begin(), ybuf.end(), guard<T>);
    apply(o, x, strided_map<T>(ybuf.data() + offset, rows, cols, Eigen::OuterStride<>(ldy)));
    // The pointer API on the very same x buffer, with its one leading dimension.
    std::vector<T> expected(static_cast<std::size_t>(rows * ldx), guard<T>);
    if (o == op::softmax)
      smax::softmax_rows(xbuf.data(), expected.data(), rows, cols, ldx);
    else
      smax::log_softmax_rows(xbuf.data(), expected.data(), rows, cols, ldx);
    for (Eigen::Index i = 0; i < rows * ldy + 2 * offset; ++i) {
      const Eigen::Index r = (i - offset) / ldy, c = (i - offset) % ldy;
      const bool inside = i >= offset && r < rows && c < cols;
      const T want = inside ? expected[static_cast<std::size_t>(r * ldx + c)] : guard<T>;
      EXPECT_TRUE(same_bits(ybuf[static_cast<std::size_t>(i)], want)) << "buffer index " << i;
    }
    EXPECT_TRUE(xbuf == xbuf_before) << "the input changed";
  }
}

// sigmoid, sigmoid attention and SSMax (forward and backward): bit for bit the pointer API on
// strided maps and blocks, nothing written outside, no allocation.
TYPED_TEST(eigen_test, other_families_match_the_pointer_api) {
  using T = TypeParam;
  const Eigen::Index rows = 4, cols = 9, ldx = 13;
  const row_matrix<T> values = random_matrix<T>(rows, cols, 17);
  std::vector<T> xbuf(static_cast<std::size_t>(rows * ldx), guard<T>);
  strided_map<T> x(xbuf.data(), rows, cols, Eigen::OuterStride<>(ldx));
  x = values;
  row_matrix<T> big(rows + 2, cols + 3);
  big.setConstant(guard<T>);
  auto y = big.block(1, 2, rows, cols);
  std::vector<T> expected(static_cast<std::size_t>(rows * cols));
  auto check = [&](const char* what) {
    for (Eigen::Index r = 0; r < rows + 2; ++r)
      for (Eigen::Index c = 0; c < cols + 3; ++c) {
        const bool inside = r >= 1 && r <= rows && c >= 2 && c < cols + 2;
        const T want =
            inside ? expected[static_cast<std::size_t>((r - 1) * cols + c - 2)] : guard<T>;
        EXPECT_TRUE(same_bits(big(r, c), want)) << what << " at " << r << "," << c;
      }
  };
  auto pointer_rows = [&](auto f) {  // the pointer API with x's leading dimension for y too
    std::vector<T> tmp(static_cast<std::size_t>(rows * ldx));
    f(tmp.data());
    for (Eigen::Index r = 0; r < rows; ++r)
      for (Eigen::Index c = 0; c < cols; ++c)
        expected[static_cast<std::size_t>(r * cols + c)] =
            tmp[static_cast<std::size_t>(r * ldx + c)];
  };
  Eigen::internal::set_is_malloc_allowed(false);
  smax::sigmoid(x, y);
  Eigen::internal::set_is_malloc_allowed(true);
  pointer_rows([&](T* out) { smax::sigmoid_rows(xbuf.data(), out, rows, cols, ldx); });
  check("sigmoid");
  smax::sigmoid_attention(x, y, {100});
  pointer_rows(
      [&](T* out) { smax::sigmoid_attention_rows(xbuf.data(), out, rows, cols, ldx, {100}); });
  check("sigmoid_attention");
  const smax::ssmax_options o{0.5, 0.25};
  smax::ssmax(x, y, o);
  pointer_rows([&](T* out) { smax::ssmax_rows(xbuf.data(), out, rows, cols, ldx, o); });
  check("ssmax");
  // Backward passes, dy = x, from y (the SSMax output above).
  row_matrix<T> yc = y;
  row_matrix<T> dx(rows, cols);
  smax::ssmax_param_grads g, g_ptr;
  smax::ssmax_backward(values, yc, values, dx, o, &g);
  row_matrix<T> dx_ptr(rows, cols);
  smax::ssmax_backward_rows(values.data(), yc.data(), values.data(), dx_ptr.data(), rows, cols,
                            cols, o, &g_ptr);
  EXPECT_TRUE(bitwise_equal(dx, dx_ptr));
  EXPECT_EQ(g.s, g_ptr.s);
  EXPECT_EQ(g.bias, g_ptr.bias);
  smax::sigmoid_backward(yc, values, dx);
  smax::sigmoid_backward_rows(yc.data(), values.data(), dx_ptr.data(), rows, cols, cols);
  EXPECT_TRUE(bitwise_equal(dx, dx_ptr));
}

TYPED_TEST(eigen_test, blocks_write_only_the_block) {
  using T = TypeParam;
  const row_matrix<T> source = random_matrix<T>(12, 30, 8);
  for (op o : ops) {
    row_matrix<T> big = row_matrix<T>::Constant(10, 20, guard<T>);
    apply(o, source.block(2, 3, 5, 11), big.block(1, 4, 5, 11));
    EXPECT_TRUE(
        bitwise_equal(big.block(1, 4, 5, 11), by_pointer_api<T>(o, source.block(2, 3, 5, 11))));
    for (Eigen::Index i = 0; i < big.rows(); ++i)
      for (Eigen::Index j = 0; j < big.cols(); ++j)
        if (i < 1 || i >= 6 || j < 4 || j >= 15) {
          EXPECT_TRUE(same_bits(big(i, j), guard<T>)) << i << "," << j;
        }
  }
}

TYPED_TEST(eigen_test, middle_rows_and_refs) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(9, 21, 9);
  for (op o : ops) {
    row_matrix<T> y = row_matrix<T>::Constant(9, 21, guard<T>);
    apply(o, x.middleRows(2, 4), y.middleRows(3, 4));
    EXPECT_TRUE(bitwise_equal(y.middleRows(3, 4), by_pointer_api<T>(o, x.middleRows(2, 4))));
    EXPECT_TRUE((y.topRows(3).array() == guard<T>).all());
    EXPECT_TRUE((y.bottomRows(2).array() == guard<T>).all());
    // Eigen::Ref, the usual way to pass Eigen objects through non-template functions.
    Eigen::Ref<const row_matrix<T>> xr = x.middleRows(1, 5);
    Eigen::Ref<row_matrix<T>> yr = y.topRows(5);
    apply(o, xr, yr);
    EXPECT_TRUE(bitwise_equal(y.topRows(5), by_pointer_api<T>(o, x.middleRows(1, 5))));
  }
}

TYPED_TEST(eigen_test, row_vectors) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(3, 37, 10);
  for (op o : ops) {
    const row_vector<T> v = x.row(1);
    row_vector<T> out(37);
    apply(o, v, out);
    EXPECT_TRUE(bitwise_equal(out, by_pointer_api<T>(o, v)));
    // A row of a row-major matrix, in and out.
    row_matrix<T> y = row_matrix<T>::Constant(3, 37, guard<T>);
    apply(o, x.row(2), y.row(0));
    EXPECT_TRUE(bitwise_equal(y.row(0), by_pointer_api<T>(o, x.row(2))));
    EXPECT_TRUE((y.bottomRows(2).array() == guard<T>).all());
    // Fixed size, and a Map of a row vector.
    const Eigen::Matrix<T, 1, 16> f = x.row(0).template head<16>();
    Eigen::Matrix<T, 1, 16> g;
    apply(o, f, g);
    EXPECT_TRUE(bitwise_equal(g, by_pointer_api<T>(o, f)));
    std::vector<T> buf(37);
    apply(o, v, Eigen::Map<row_vector<T>>(buf.data(), 37));
    EXPECT_TRUE(bitwise_equal(Eigen::Map<row_vector<T>>(buf.data(), 37), out));
    // A 1x1 matrix (column-major by Eigen's default, and a row all the same).
    const Eigen::Matrix<T, 1, 1> one(T(3));
    Eigen::Matrix<T, 1, 1> r;
    apply(o, one, r);
    EXPECT_EQ(r(0), o == op::softmax ? T(1) : T(0));
  }
}

TYPED_TEST(eigen_test, in_place) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(7, 50, 11);
  for (op o : ops) {
    row_matrix<T> m = x;
    apply(o, m, m);
    EXPECT_TRUE(bitwise_equal(m, by_pointer_api<T>(o, x)));
    m = x;
    apply(o, m.block(1, 2, 4, 30), m.block(1, 2, 4, 30));
    EXPECT_TRUE(bitwise_equal(m.block(1, 2, 4, 30), by_pointer_api<T>(o, x.block(1, 2, 4, 30))));
    EXPECT_TRUE(bitwise_equal(m.leftCols(2), x.leftCols(2)));
    EXPECT_TRUE(bitwise_equal(m.rightCols(18), x.rightCols(18)));
    // Disjoint blocks of one matrix are not an overlap.
    m = x;
    apply(o, m.leftCols(20), m.rightCols(20));
    EXPECT_TRUE(bitwise_equal(m.rightCols(20), by_pointer_api<T>(o, x.leftCols(20))));
    EXPECT_TRUE(bitwise_equal(m.leftCols(30), x.leftCols(30)));
  }
}

// softmax(c.transpose(), out.transpose()) is the softmax of each column of the column-major c.
TYPED_TEST(eigen_test, transpose_of_column_major_is_softmax_over_columns) {
  using T = TypeParam;
  const col_matrix<T> c = random_matrix<T>(23, 6, 12);
  for (op o : ops) {
    col_matrix<T> expected(23, 6);
    for (Eigen::Index j = 0; j < c.cols(); ++j) {
      if (o == op::softmax)
        smax::softmax(c.col(j).data(), expected.col(j).data(), 23);
      else
        smax::log_softmax(c.col(j).data(), expected.col(j).data(), 23);
    }
    col_matrix<T> out(23, 6);
    apply(o, c.transpose(), out.transpose());
    EXPECT_TRUE(bitwise_equal(out, expected));
    row_matrix<T> out_rows(6, 23);  // or into a row-major matrix of the transposed shape
    apply(o, c.transpose(), out_rows);
    EXPECT_TRUE(bitwise_equal(out_rows.transpose(), expected));
    // A column block, and a column vector through .transpose().
    col_matrix<T> part = col_matrix<T>::Constant(23, 6, guard<T>);
    apply(o, c.middleCols(1, 3).transpose(), part.middleCols(2, 3).transpose());
    EXPECT_TRUE(bitwise_equal(part.middleCols(2, 3), expected.middleCols(1, 3)));
    EXPECT_TRUE((part.leftCols(2).array() == guard<T>).all());
    EXPECT_TRUE((part.rightCols(1).array() == guard<T>).all());
    const Eigen::Matrix<T, Eigen::Dynamic, 1> v = c.col(4);
    Eigen::Matrix<T, Eigen::Dynamic, 1> w(23);
    apply(o, v.transpose(), w.transpose());
    EXPECT_TRUE(bitwise_equal(w, expected.col(4)));
    // In place over columns.
    col_matrix<T> m = c;
    apply(o, m.transpose(), m.transpose());
    EXPECT_TRUE(bitwise_equal(m, expected));
  }
}

TYPED_TEST(eigen_test, arrays) {
  using T = TypeParam;
  using row_array = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const row_matrix<T> x = random_matrix<T>(5, 17, 13);
  for (op o : ops) {
    const row_array a = x.array();
    row_array b(5, 17);
    apply(o, a, b);
    EXPECT_TRUE(bitwise_equal(b, by_pointer_api<T>(o, x)));
    row_matrix<T> y(5, 17);
    apply(o, x.array(), y.array());  // ArrayWrapper of a matrix
    EXPECT_TRUE(bitwise_equal(y, by_pointer_api<T>(o, x)));
  }
}

TYPED_TEST(eigen_test, backward_matches_the_pointer_api) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(6, 41, 14);
  const row_matrix<T> dy = random_matrix<T>(6, 41, 15, T(2));
  for (double t : {1.0, 0.6}) {
    smax::softmax_options opts;
    opts.temperature = t;
    row_matrix<T> y(6, 41), z(6, 41), dx(6, 41);
    smax::softmax(x, y, opts);
    smax::log_softmax(x, z, opts);
    smax::softmax_backward(y, dy, dx, opts);
    EXPECT_TRUE(bitwise_equal(dx, backward_by_pointer_api<T>(op::softmax, y, dy, opts)));
    smax::log_softmax_backward(z, dy, dx, opts);
    EXPECT_TRUE(bitwise_equal(dx, backward_by_pointer_api<T>(op::log_softmax, z, dy, opts)));

    // Three different layouts: y in a strided Map, dy a block, dx a middleRows of a bigger matrix.
    std::vector<T> ybuf(6 * 50, guard<T>);
    strided_map<T> ym(ybuf.data(), 6, 41, Eigen::OuterStride<>(50));
    ym = y;
    row_matrix<T> dy_big = row_matrix<T>::Constant(8, 45, guard<T>);
    dy_big.block(1, 2, 6, 41) = dy;
    row_matrix<T> dx_big = row_matrix<T>::Constant(9, 41, guard<T>);
    smax::softmax_backward(ym, dy_big.block(1, 2, 6, 41), dx_big.middleRows(2, 6), opts);
    EXPECT_TRUE(bitwise_equal(dx_big.middleRows(2, 6),
                              backward_by_pointer_api<T>(op::softmax, y, dy, opts)));
    EXPECT_TRUE((dx_big.topRows(2).array() == guard<T>).all());
    EXPECT_TRUE((dx_big.bottomRows(1).array() == guard<T>).all());

    // dx may be dy (or y) itself.
    row_matrix<T> g = dy;
    smax::softmax_backward(y, g, g, opts);
    EXPECT_TRUE(bitwise_equal(g, backward_by_pointer_api<T>(op::softmax, y, dy, opts)));
    g = z;
    smax::log_softmax_backward(g, dy, g, opts);
    EXPECT_TRUE(bitwise_equal(g, backward_by_pointer_api<T>(op::log_softmax, z, dy, opts)));
  }
}

TYPED_TEST(eigen_test, backward_over_columns_through_transpose) {
  using T = TypeParam;
  const col_matrix<T> x = random_matrix<T>(19, 4, 16), dy = random_matrix<T>(19, 4, 17, T(2));
  col_matrix<T> y(19, 4), dx(19, 4), expected(19, 4);
  smax::softmax(x.transpose(), y.transpose());
  smax::softmax_backward(y.transpose(), dy.transpose(), dx.transpose());
  for (Eigen::Index j = 0; j < 4; ++j)
    smax::softmax_backward(y.col(j).data(), dy.col(j).data(), expected.col(j).data(), 19);
  EXPECT_TRUE(bitwise_equal(dx, expected));
  smax::log_softmax(x.transpose(), y.transpose());
  smax::log_softmax_backward(y.transpose(), dy.transpose(), dx.transpose());
  for (Eigen::Index j = 0; j < 4; ++j)
    smax::log_softmax_backward(y.col(j).data(), dy.col(j).data(), expected.col(j).data(), 19);
  EXPECT_TRUE(bitwise_equal(dx, expected));
}

// softpick: matrices, strided Maps, blocks and transposes give the pointer API's bits; backward
// too, with dx in place of dy.
TYPED_TEST(eigen_test, softpick_matches_the_pointer_api) {
  using T = TypeParam;
  row_matrix<T> x = random_matrix<T>(6, 41, 20);
  x(2, 5) = -std::numeric_limits<T>::infinity();
  x.row(3).array() -= T(20);  // no positive entry: zeros
  const row_matrix<T> dy = random_matrix<T>(6, 41, 21, T(2));
  const smax::softpick_options opts{1e-3};
  row_matrix<T> expected(6, 41), dx_expected(6, 41);
  smax::softpick_rows(x.data(), expected.data(), 6, 41, 41, opts);
  smax::softpick_backward_rows(x.data(), expected.data(), dy.data(), dx_expected.data(), 6, 41, 41,
                               opts);
  row_matrix<T> y(6, 41);
  smax::softpick(x, y, opts);
  EXPECT_TRUE(bitwise_equal(y, expected));
  std::vector<T> buf(6 * 50, guard<T>);
  strided_map<T> ym(buf.data(), 6, 41, Eigen::OuterStride<>(50));
  smax::softpick(x.array(), ym, opts);
  EXPECT_TRUE(bitwise_equal(ym, expected));
  for (std::size_t r = 0; r < 6; ++r)
    for (std::size_t c = 41; c < 50; ++c) EXPECT_EQ(buf[r * 50 + c], guard<T>);
  row_matrix<T> big = row_matrix<T>::Constant(8, 45, guard<T>);
  big.block(1, 2, 6, 41) = x;
  smax::softpick(big.block(1, 2, 6, 41), big.block(1, 2, 6, 41), opts);  // in place
  EXPECT_TRUE(bitwise_equal(big.block(1, 2, 6, 41), expected));
  EXPECT_TRUE((big.topRows(1).array() == guard<T>).all());
  const col_matrix<T> c = x.transpose();
  col_matrix<T> yc(41, 6);
  smax::softpick(c.transpose(), yc.transpose(), opts);  // softpick of each column of c
  EXPECT_TRUE(bitwise_equal(yc.transpose(), expected));
  row_matrix<T> g = dy;
  smax::softpick_backward(x, ym, g, g, opts);
  EXPECT_TRUE(bitwise_equal(g, dx_expected));
  Eigen::internal::set_is_malloc_allowed(false);
  const int before = smax_test::eigen_assert_failures;
  smax::softpick(c.transpose(), yc.transpose());
  smax::softpick_backward(c.transpose(), yc.transpose(), dy, g);
  Eigen::internal::set_is_malloc_allowed(true);
  EXPECT_EQ(smax_test::eigen_assert_failures, before);
}

// MultiMax: strided Maps, blocks and transposes give the pointer API's result bit for bit, and
// the backward pass's parameter gradients are summed over the rows.
TYPED_TEST(eigen_test, multimax_matches_the_pointer_api) {
  using T = TypeParam;
  smax::multimax_options o;
  o.t = {0.1, 0.2, -0.01, 0.02};
  o.r = {-1, 1, -2, 2};
  const row_matrix<T> x = random_matrix<T>(5, 77, 21);
  const row_matrix<T> dy = random_matrix<T>(5, 77, 22, T(2));
  row_matrix<T> expected(5, 77), expected_dx(5, 77);
  smax::multimax_rows(x.data(), expected.data(), 5, 77, 77, o);
  smax::multimax_param_grads expected_grads, grads;
  smax::multimax_backward_rows(x.data(), expected.data(), dy.data(), expected_dx.data(), 5, 77, 77,
                               o, &expected_grads);
  std::vector<T> ybuf(5 * 80, guard<T>);
  strided_map<T> ym(ybuf.data(), 5, 77, Eigen::OuterStride<>(80));
  smax::multimax(x, ym, o);
  EXPECT_TRUE(bitwise_equal(ym, expected));
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 77; c < 80; ++c) EXPECT_EQ(ybuf[r * 80 + c], guard<T>);
  row_matrix<T> dx_big = row_matrix<T>::Constant(7, 77, guard<T>);
  smax::multimax_backward(x, ym, dy, dx_big.middleRows(1, 5), o, &grads);
  EXPECT_TRUE(bitwise_equal(dx_big.middleRows(1, 5), expected_dx));
  EXPECT_TRUE((dx_big.topRows(1).array() == guard<T>).all());
  EXPECT_TRUE((dx_big.bottomRows(1).array() == guard<T>).all());
  EXPECT_EQ(grads.dt, expected_grads.dt);
  EXPECT_EQ(grads.dr, expected_grads.dr);
  // Over columns, through the transpose of a column-major matrix.
  const col_matrix<T> c = x.transpose();
  col_matrix<T> q(77, 5);
  smax::multimax(c.transpose(), q.transpose(), o);
  EXPECT_TRUE(bitwise_equal(q.transpose(), expected));
  // In place.
  row_matrix<T> m = x;
  smax::multimax(m, m, o);
  EXPECT_TRUE(bitwise_equal(m, expected));
}

// No Eigen temporary anywhere: with EIGEN_RUNTIME_NO_MALLOC, any heap allocation by Eigen while
// malloc is disallowed fails an eigen_assert (counted above). A column-major matrix bound to an
// Eigen::Ref<const RowMatrix> would allocate here; smax's overloads must not.
TYPED_TEST(eigen_test, no_allocation) {
  using T = TypeParam;
  const row_matrix<T> x = random_matrix<T>(8, 33, 18);
  const col_matrix<T> c = random_matrix<T>(33, 8, 19);
  row_matrix<T> y(8, 33), dx(8, 33);
  col_matrix<T> yc(33, 8);
  std::vector<T> buf(8 * 40);
  const int before = smax_test::eigen_assert_failures;
  Eigen::internal::set_is_malloc_allowed(false);
  smax::softmax(x, y);
  smax::log_softmax(smax::two_pass, x.middleRows(1, 3), y.middleRows(4, 3));
  smax::softmax(c.transpose(), yc.transpose());
  smax::softmax(c.transpose(), strided_map<T>(buf.data(), 8, 33, Eigen::OuterStride<>(40)));
  smax::softmax(x.block(1, 1, 3, 30), y.block(2, 2, 3, 30));
  smax::softmax(x.array(), y.array());
  smax::softmax(y, y);
  smax::softmax_backward(y, x, dx);
  smax::log_softmax_backward(c.transpose(), c.transpose(), yc.transpose());
  Eigen::internal::set_is_malloc_allowed(true);
  EXPECT_EQ(smax_test::eigen_assert_failures, before);
  // The check itself works: an Eigen allocation while disallowed is counted.
  Eigen::internal::set_is_malloc_allowed(false);
  const row_matrix<T> copy = c.transpose();
  Eigen::internal::set_is_malloc_allowed(true);
  EXPECT_GT(smax_test::eigen_assert_failures, before);
  smax_test::eigen_assert_failures = before;
  EXPECT_EQ(copy.rows(), 8);
}

TEST(eigen_detail, partially_overlap) {
  using smax::eigen_detail::partially_overlap;
  std::vector<float> b(1000);
  const float* p = b.data();
  EXPECT_FALSE(partially_overlap(p, 20, p, 20, 5, 10));       // in place
  EXPECT_TRUE(partially_overlap(p, 20, p + 1, 20, 5, 10));    // shifted by one element
  EXPECT_TRUE(partially_overlap(p, 20, p, 30, 5, 10));        // same start, other stride
  EXPECT_FALSE(partially_overlap(p, 20, p + 10, 20, 5, 10));  // left and right halves
  EXPECT_FALSE(partially_overlap(p + 10, 20, p, 20, 5, 10));
  EXPECT_TRUE(partially_overlap(p + 9, 20, p, 20, 5, 10));
  EXPECT_TRUE(partially_overlap(p, 20, p + 20, 20, 5, 10));    // one row down
  EXPECT_FALSE(partially_overlap(p, 20, p + 100, 20, 5, 10));  // rows after the last
  EXPECT_TRUE(partially_overlap(p, 20, p + 80, 20, 5, 10));    // y's first row = x's last
  EXPECT_TRUE(partially_overlap(p, 20, p + 89, 20, 5, 10));    // one element in common
  EXPECT_FALSE(partially_overlap(p, 20, p + 90, 20, 5, 10));   // y starts just after x's last
  EXPECT_FALSE(partially_overlap(p, 20, p + 10, 40, 5, 10));   // interleaved, other strides
  EXPECT_TRUE(partially_overlap(p, 20, p + 10, 30, 5, 10));    // y row 1 at 40 = x row 2
  EXPECT_FALSE(partially_overlap(p, 20, p + 10, 20, 1, 10));   // single rows
  EXPECT_TRUE(partially_overlap(p, 7, p + 9, 3, 1, 10));
  EXPECT_FALSE(partially_overlap(p, 20, p + 1, 20, 0, 10));  // empty
  EXPECT_FALSE(partially_overlap(p, 20, p + 1, 20, 5, 0));
}

// sparsemax and its backward pass: every argument form gives the pointer API's bits, writes
// only the destination's rows, and allocates nothing through Eigen.
TYPED_TEST(eigen_test, sparsemax_matches_the_pointer_api) {
  using T = TypeParam;
  const Eigen::Index rows = 5, cols = 300;
  const row_matrix<T> x = random_matrix<T>(rows, cols, 30, T(3));
  row_matrix<T> expected(rows, cols), dx_expected(rows, cols);
  const row_matrix<T> dy = random_matrix<T>(rows, cols, 31);
  const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
  smax::sparsemax_rows(x.data(), expected.data(), r, c, c);
  smax::sparsemax_backward_rows(expected.data(), dy.data(), dx_expected.data(), r, c, c);
  row_matrix<T> y(rows, cols), inplace = x, dx(rows, cols);
  std::vector<T> buffer(static_cast<std::size_t>(rows * (cols + 7)), guard<T>);
  strided_map<T> mapped(buffer.data(), rows, cols, Eigen::OuterStride<>(cols + 7));
  col_matrix<T> cx = x.transpose(), cy(cols, rows);
  const int failures_before = smax_test::eigen_assert_failures;
  Eigen::internal::set_is_malloc_allowed(false);
  smax::sparsemax(x, y);
  smax::sparsemax(inplace, inplace);  // in place
  smax::sparsemax(x, mapped);         // outer stride > cols: the padding stays untouched
  smax::sparsemax(cx.transpose(), cy.transpose());  // over the columns of a column-major matrix
  smax::sparsemax_backward(y, dy, dx);
  Eigen::internal::set_is_malloc_allowed(true);
  EXPECT_TRUE(bitwise_equal(y, expected));
  EXPECT_TRUE(bitwise_equal(inplace, expected));
  EXPECT_TRUE(bitwise_equal(row_matrix<T>(mapped), expected));
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = cols; j < cols + 7; ++j)
      EXPECT_EQ(buffer[static_cast<std::size_t>(i * (cols + 7) + j)], guard<T>);
  EXPECT_TRUE(bitwise_equal(row_matrix<T>(cy.transpose()), expected));
  EXPECT_TRUE(bitwise_equal(dx, dx_expected));
  EXPECT_EQ(smax_test::eigen_assert_failures, failures_before) << "Eigen allocated";
}

// Gumbel-softmax's four Eigen forms (caller's noise and seeded, forward and backward): the pointer
// _rows forms' bits, with the noise in a strided map of its own, in place and over the columns.
TYPED_TEST(eigen_test, gumbel_softmax_matches_the_pointer_api) {
  using T = TypeParam;
  const Eigen::Index rows = 4, cols = 301;
  const auto r = static_cast<std::size_t>(rows), c = static_cast<std::size_t>(cols);
  const row_matrix<T> x = random_matrix<T>(rows, cols, 40, T(6));
  const row_matrix<T> dy = random_matrix<T>(rows, cols, 41);
  std::vector<T> noise_buffer(static_cast<std::size_t>(rows * (cols + 5)), guard<T>);
  strided_map<T> noise(noise_buffer.data(), rows, cols, Eigen::OuterStride<>(cols + 5));
  for (std::size_t i = 0; i < r; ++i) smax::gumbel_noise(&noise(Eigen::Index(i), 0), c, 3, 50 + i * c);
  const row_matrix<T> g = noise;
  for (bool hard : {false, true}) {
    const smax::gumbel_softmax_options opts{0.6, hard};
    row_matrix<T> expected(rows, cols), seeded_expected(rows, cols), dx_expected(rows, cols),
        dx_seeded_expected(rows, cols);
    smax::gumbel_softmax_rows(x.data(), g.data(), expected.data(), r, c, c, opts);
    smax::gumbel_softmax_rows(x.data(), seeded_expected.data(), r, c, c, opts, 3, 50);
    smax::gumbel_softmax_backward_rows(x.data(), g.data(), dy.data(), dx_expected.data(), r, c, c,
                                       opts);
    smax::gumbel_softmax_backward_rows(x.data(), dy.data(), dx_seeded_expected.data(), r, c, c,
                                       opts, 3, 50);
    row_matrix<T> y(rows, cols), ys(rows, cols), inplace = x, dx(rows, cols), dxs(rows, cols);
    col_matrix<T> cx = x.transpose(), cy(cols, rows);
    const int failures_before = smax_test::eigen_assert_failures;
    Eigen::internal::set_is_malloc_allowed(false);
    smax::gumbel_softmax(x, noise, y, opts);
    smax::gumbel_softmax(x, ys, opts, 3, 50);
    smax::gumbel_softmax(inplace, inplace, opts, 3, 50);
    smax::gumbel_softmax(cx.transpose(), noise, cy.transpose(), opts);
    smax::gumbel_softmax_backward(x, noise, dy, dx, opts);
    smax::gumbel_softmax_backward(x, dy, dxs, opts, 3, 50);
    Eigen::internal::set_is_malloc_allowed(true);
    EXPECT_TRUE(bitwise_equal(y, expected));
    EXPECT_TRUE(bitwise_equal(ys, seeded_expected));
    EXPECT_TRUE(bitwise_equal(ys, expected)) << "the seeded noise is gumbel_noise's";
    EXPECT_TRUE(bitwise_equal(inplace, seeded_expected));
    EXPECT_TRUE(bitwise_equal(row_matrix<T>(cy.transpose()), expected));
    EXPECT_TRUE(bitwise_equal(dx, dx_expected));
    EXPECT_TRUE(bitwise_equal(dxs, dx_seeded_expected));
    EXPECT_EQ(smax_test::eigen_assert_failures, failures_before) << "Eigen allocated";
  }
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = cols; j < cols + 5; ++j)
      EXPECT_EQ(noise_buffer[static_cast<std::size_t>(i * (cols + 5) + j)], guard<T>);
}

// Eigen::bfloat16 and Eigen::half matrices: bit for bit the 16-bit pointer forms on the same
// memory (docs/half.md), on a strided map and a block; nothing written outside the block.
template <class E, class H>
void check_half_matrices() {
  const Eigen::Index rows = 5, cols = 37, ldx = 41;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-6.f, 6.f);
  std::vector<E> xbuf(static_cast<std::size_t>(rows * ldx), E(0.f));
  for (auto& v : xbuf) v = E(u(rng));
  Eigen::Map<row_matrix<E>, Eigen::Unaligned, Eigen::OuterStride<>> x(xbuf.data(), rows, cols,
                                                                      Eigen::OuterStride<>(ldx));
  row_matrix<E> big(rows + 2, cols + 3);
  big.setConstant(E(99.f));
  smax::log_softmax(x, big.block(1, 2, rows, cols));
  std::vector<H> want(static_cast<std::size_t>(rows * ldx));
  smax::log_softmax_rows(reinterpret_cast<const H*>(xbuf.data()), want.data(), rows, cols, ldx);
  for (Eigen::Index r = 0; r < rows + 2; ++r)
    for (Eigen::Index c = 0; c < cols + 3; ++c) {
      const bool inside = r >= 1 && r <= rows && c >= 2 && c < cols + 2;
      std::uint16_t got, expected = inside ? want[static_cast<std::size_t>((r - 1) * ldx + c - 2)].to_bits()
                                            : H(99.f).to_bits();
      std::memcpy(&got, &big(r, c), 2);
      EXPECT_EQ(got, expected) << r << "," << c;
    }
  // A family that reports rows reports them here too (unified-max: the rows that fell back).
  row_matrix<E> y(rows, cols);
  EXPECT_EQ(smax::unified_max_softmax(x, y),
            smax::unified_max_softmax_rows(reinterpret_cast<const H*>(xbuf.data()), want.data(),
                                           rows, cols, ldx));
}

TEST(eigen_half, bfloat16_and_half_matrices_match_the_pointer_forms) {
  check_half_matrices<Eigen::bfloat16, smax::bf16>();
  check_half_matrices<Eigen::half, smax::fp16>();
}

TEST(eigen_preconditions, shape_mismatch) {
  const row_matrix<float> x = random_matrix<float>(3, 8, 20);
  row_matrix<float> y = row_matrix<float>::Zero(3, 9);
#if defined(NDEBUG)
  smax::softmax(x, y);  // documented release behaviour: the output becomes NaN
  EXPECT_TRUE(y.array().isNaN().all());
  row_matrix<float> dx = row_matrix<float>::Zero(2, 8);
  smax::softmax_backward(x, x, dx);
  EXPECT_TRUE(dx.array().isNaN().all());
#else
  EXPECT_DEATH(smax::softmax(x, y), "same shape");
#endif
}

#if !defined(NDEBUG)
TEST(eigen_preconditions, partial_overlap_is_asserted) {
  row_matrix<float> m = random_matrix<float>(4, 20, 21);
  EXPECT_DEATH(smax::softmax(m.leftCols(10), m.middleCols(5, 10)), "overlap");
  EXPECT_DEATH(smax::softmax(m.topRows(3), m.bottomRows(3)), "overlap");
}
#endif

}  // namespace
