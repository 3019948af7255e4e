#pragma once
// Algorithm tags and options shared by the softmax family. These types carry no code, so they
// live in `smax` itself (not in the instruction-set namespace) and can cross translation units.

#include <type_traits>

namespace smax {

// Three passes: max; exp + store + sum; scale (docs/softmax.md). Fastest while the row is in cache.
struct three_pass_t {
  explicit three_pass_t() = default;
};
// Online normaliser, blocked (Milakov & Gimelshein 2018): two passes over memory.
struct online_t {
  explicit online_t() = default;
};
// Mantissa/exponent accumulation (Dukhan & Ablavatski 2020): two passes, no max.
struct two_pass_t {
  explicit two_pass_t() = default;
};
inline constexpr three_pass_t three_pass{};
inline constexpr online_t online{};
inline constexpr two_pass_t two_pass{};

struct softmax_options {
  // y = softmax(x / temperature). Must be finite and > 0; anything else is a precondition
  // violation (asserted in debug builds) and gives a NaN row.
  double temperature = 1.0;
  // A row whose entries are all -inf (masked) gives NaN by default, as PyTorch does.
  // With this set it gives 0 (softmax) or -inf (log-softmax): the "safe softmax" of attention
  // kernels. The backward pass of such a row then gives 0 (softmax) or dy/T (log-softmax).
  bool zero_masked_rows = false;
};

namespace detail {
template <class T>
using if_real_t =
    std::enable_if_t<std::is_same<T, float>::value || std::is_same<T, double>::value, int>;
}  // namespace detail

}  // namespace smax
