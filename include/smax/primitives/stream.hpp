#pragma once
// Non-temporal (streaming) stores for rows larger than the last-level cache: writing y without
// first reading its lines into the cache saves a third of the memory traffic of a pass that
// reads x and writes y. On rows that fit in the cache they are several times slower than plain
// stores (the next reader misses), so the kernels use them only past streaming_min_bytes().

#include <stdlib.h>
#include <unistd.h>

#include "map_reduce.hpp"
#include "partial.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SMAX_HAS_STREAMING_STORES 1
#endif

namespace smax {
namespace primitives {

// Bytes of the last-level cache (L3, else L2); 32 MiB if the system does not say.
template <class A>
inline std::size_t last_level_cache_bytes() noexcept {
  long bytes = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0) bytes = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? static_cast<std::size_t>(bytes) : std::size_t(32) << 20;
}

// Bytes a pass must write before it streams: the last-level cache, but at least 4 MiB (no
// last-level cache is smaller, so the system is asked only about rows that take milliseconds)
// and at most 32 MiB. Past 32 MiB of output, output and input together (64 MiB) leave the L3
// one core reaches on every current part but the largest (96 MiB per CCD with 3D V-Cache), and
// virtual machines report the host's whole cache: the benchmark machine claims 480 MiB, yet
// streaming its 64 MiB rows makes softmax and log-softmax markedly faster (docs/dispatch.md).
// The environment variable SMAX_STREAMING_MIN_BYTES replaces it, read once: on a server whose
// last-level cache is shared by many cores, a thread's share of it is the better threshold
// (glibc's memcpy uses 3/4 of that share), and 0 streams every pass (for tests).
template <class A>
inline std::size_t streaming_min_bytes() noexcept {
  static const std::size_t bytes = [] {
    if (const char* s = ::getenv("SMAX_STREAMING_MIN_BYTES")) {
      char* end = nullptr;
      const unsigned long long v = ::strtoull(s, &end, 10);
      if (end != s) return static_cast<std::size_t>(v);
    }
    const std::size_t llc = last_level_cache_bytes<A>();
    const std::size_t lowest = std::size_t(4) << 20, highest = std::size_t(32) << 20;
    return llc < lowest ? lowest : llc > highest ? highest : llc;
  }();
  return bytes;
}

// Whether a pass writing n elements of T should stream.
template <class A, class T>
inline bool should_stream(std::size_t n) noexcept {
  return n * sizeof(T) > streaming_min_bytes<A>();
}

// Stores v to p, which is aligned to the register size, bypassing the cache.
template <class A, class T>
inline void store_streaming(T* p, xsimd::batch<T, A> const& v) noexcept {
#if defined(SMAX_HAS_STREAMING_STORES)
  constexpr bool is_float = sizeof(T) == 4;
  if constexpr (sizeof(v) == 64) {
    if constexpr (is_float)
      _mm512_stream_ps(reinterpret_cast<float*>(p), v);
    else
      _mm512_stream_pd(reinterpret_cast<double*>(p), v);
  } else if constexpr (sizeof(v) == 32) {
    if constexpr (is_float)
      _mm256_stream_ps(reinterpret_cast<float*>(p), v);
    else
      _mm256_stream_pd(reinterpret_cast<double*>(p), v);
  } else {
    if constexpr (is_float)
      _mm_stream_ps(reinterpret_cast<float*>(p), v);
    else
      _mm_stream_pd(reinterpret_cast<double*>(p), v);
  }
#else
  v.store_aligned(p);
#endif
}

// y[i] = f(x[i]) for i < n with streaming stores: plain stores up to the first aligned element of
// y, then aligned streaming stores, then the tail; a fence makes the stores visible in order.
template <class A, class T, class F>
SMAX_FLATTEN inline void map_streaming(const T* x, T* y, std::size_t n, F const& f,
                                       std::size_t prefetch_distance = 0) noexcept {
  using batch = xsimd::batch<T, A>;
  constexpr std::size_t width = batch::size;
  constexpr std::size_t bytes = sizeof(batch);
  std::size_t i = 0;
  const std::size_t misalignment = reinterpret_cast<std::uintptr_t>(y) % bytes;
  if (misalignment != 0 && misalignment % sizeof(T) == 0) {
    const std::size_t head = (bytes - misalignment) / sizeof(T);
    i = head < n ? head : n;
    store_partial<A>(y, i, f(load_partial<A>(x, i, T(0))));
  }
  if (reinterpret_cast<std::uintptr_t>(y + i) % bytes == 0) {
    for (; i + 2 * width <= n; i += 2 * width) {
      if (prefetch_distance) prefetch<A>(x + i + prefetch_distance, 2 * width * sizeof(T));
      store_streaming<A>(y + i, f(batch::load_unaligned(x + i)));
      store_streaming<A>(y + i + width, f(batch::load_unaligned(x + i + width)));
    }
  }
  for (; i + width <= n; i += width) f(batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) store_partial<A>(y + i, n - i, f(load_partial<A>(x + i, n - i, T(0))));
#if defined(SMAX_HAS_STREAMING_STORES)
  _mm_sfence();
#endif
}

}  // namespace primitives
}  // namespace smax
