// Eigen anchor: the softmax a user writes with Eigen 3.4 array expressions, untuned.
#include "anchors.hpp"

#include <Eigen/Core>

namespace smax_bench::anchors {

void eigen_softmax(const float* x, float* y, std::size_t rows, std::size_t cols, bool log) {
    if (rows == 0 || cols == 0) {
        return;  // maxCoeff() of an empty array asserts
    }
    using row_major = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const auto r = static_cast<Eigen::Index>(rows);
    const auto c = static_cast<Eigen::Index>(cols);
    const Eigen::Map<const row_major> in(x, r, c);
    Eigen::Map<row_major> out(y, r, c);

    // The row reductions go to temporaries: written inline they are lazy and would read `out`
    // (and `in`, when x == y) while it is being overwritten.
    const Eigen::ArrayXf max = in.rowwise().maxCoeff();
    if (log) {
        out = in.colwise() - max;
        const Eigen::ArrayXf log_sum = out.exp().rowwise().sum().log();
        out.colwise() -= log_sum;
    } else {
        out = (in.colwise() - max).exp();
        const Eigen::ArrayXf sum = out.rowwise().sum();
        out.colwise() /= sum;
    }
}

}  // namespace smax_bench::anchors
