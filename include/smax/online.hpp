#pragma once
// The online normaliser's state, public: stream a row in chunks, or reduce parts of a row on
// several threads, merge the states in any order, then normalise each chunk (docs/softmax.md).
//
//   smax::online_state<float> s;                       // identity: (-inf, 0)
//   for (chunk c) s = smax::merge(s, smax::online_reduce(c.x, c.n));
//   for (chunk c) smax::online_normalize(s, c.x, c.y, c.n);   // = softmax of the whole row
//
// The result equals softmax of the concatenated row within softmax's bound; merge is associative
// and commutative up to rounding. A chunk holding NaN or +inf gives a NaN state (max = NaN), which
// every merge keeps and which normalises to a NaN row (docs/edge_cases.md).

#include <cmath>
#include <cstddef>

#include "softmax.hpp"  // and online_state.hpp: the state and merge


SMAX_BEGIN_NAMESPACE
namespace api {

// The chunk passes on one dispatcher's kernels (header-only or runtime).
template <class Dispatch, class T>
inline online_state<T> online_reduce(const T* x, std::size_t n,
                                     softmax_options const& opts) noexcept {
  SMAX_ASSERT(x != nullptr || n == 0);
  check_temperature(opts);
  online_state<T> s;
  if (n == 0) return s;
  Dispatch::visit([&](auto a) {
    kernels::softmax_table<decltype(a)>::online_reduce(x, n, static_cast<T>(opts.temperature),
                                                       &s.max, &s.sum);
  });
  return s;
}

template <class Dispatch, bool Log, class T>
inline void online_normalize(online_state<T> const& s, const T* x, T* y, std::size_t n,
                             softmax_options const& opts) noexcept {
  SMAX_ASSERT((x != nullptr && y != nullptr) || n == 0);
  check_temperature(opts);
  if (n == 0) return;
  Dispatch::visit([&](auto a) {
    kernels::softmax_table<decltype(a)>::online_normalize(x, y, n, static_cast<T>(opts.temperature),
                                                          softmax_like_family<Log>::flags(opts),
                                                          s.max, s.sum);
  });
}

}  // namespace api

// online_reduce(x, n [, opts]): (max, sum) of one chunk. The temperature must be the one used for
// merge and normalize.
// online_normalize(s, x, y, n [, opts]): y = exp((x - s.max)/T)/s.sum for one chunk of a row
// whose merged state is s.
// online_log_normalize(s, x, y, n [, opts]): z = (x - s.max)/T - log s.sum for one chunk: the
// log-softmax of the whole row.
#define SMAX_ONLINE_FORMS(Dispatch)                                                           \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline online_state<T> online_reduce(const T* x, std::size_t n,                             \
                                       softmax_options const& opts = {}) noexcept {           \
    return ::smax::api::online_reduce<Dispatch>(x, n, opts);                                  \
  }                                                                                           \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline void online_normalize(online_state<T> const& s, const T* x, T* y, std::size_t n,     \
                               softmax_options const& opts = {}) noexcept {                   \
    ::smax::api::online_normalize<Dispatch, false>(s, x, y, n, opts);                         \
  }                                                                                           \
  template <class T, ::smax::detail::if_real_t<T> = 0>                                        \
  inline void online_log_normalize(online_state<T> const& s, const T* x, T* y, std::size_t n, \
                                   softmax_options const& opts = {}) noexcept {               \
    ::smax::api::online_normalize<Dispatch, true>(s, x, y, n, opts);                          \
  }

SMAX_ONLINE_FORMS(api::header_only)

SMAX_END_NAMESPACE
