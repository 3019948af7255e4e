// Memory roofs: the least time a pass over the data can take, to put softmax times in scale.
#include "anchors.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace smax_bench::anchors {
namespace {

#if defined(__AVX__)
using vector = __m256;
constexpr std::size_t width = 8;
vector zero() {
  return _mm256_setzero_ps();
}
vector load(const float* p) {
  return _mm256_loadu_ps(p);
}
vector add(vector a, vector b) {
  return _mm256_add_ps(a, b);
}
void stream(float* p, vector v) {
  _mm256_stream_ps(p, v);
}
float horizontal_sum(vector v) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, q);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
#elif defined(__SSE2__)
using vector = __m128;
constexpr std::size_t width = 4;
vector zero() {
  return _mm_setzero_ps();
}
vector load(const float* p) {
  return _mm_loadu_ps(p);
}
vector add(vector a, vector b) {
  return _mm_add_ps(a, b);
}
void stream(float* p, vector v) {
  _mm_stream_ps(p, v);
}
float horizontal_sum(vector v) {
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, v);
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
#endif

}  // namespace

void copy_roof(const float* x, float* y, std::size_t n) {
#if defined(__SSE2__)
  // Streaming stores need an aligned destination: plain stores up to the first boundary.
  std::size_t i = 0;
  while (i < n && reinterpret_cast<std::uintptr_t>(y + i) % (width * sizeof(float)) != 0) {
    y[i] = x[i];
    ++i;
  }
  // Four vectors per iteration so whole cache lines reach the write-combining buffers together.
  for (; i + 4 * width <= n; i += 4 * width) {
    const vector a = load(x + i);
    const vector b = load(x + i + width);
    const vector c = load(x + i + 2 * width);
    const vector d = load(x + i + 3 * width);
    stream(y + i, a);
    stream(y + i + width, b);
    stream(y + i + 2 * width, c);
    stream(y + i + 3 * width, d);
  }
  for (; i + width <= n; i += width) {
    stream(y + i, load(x + i));
  }
  for (; i < n; ++i) {
    y[i] = x[i];
  }
  // Streaming stores are weakly ordered: fence so the copy is complete when we return.
  _mm_sfence();
#else
  std::memcpy(y, x, n * sizeof(float));
#endif
}

float sum_roof(const float* x, std::size_t n) {
  std::size_t i = 0;
  float total = 0.0f;
#if defined(__SSE2__)
  // Four accumulators hide the add latency behind two loads per cycle.
  vector a = zero();
  vector b = zero();
  vector c = zero();
  vector d = zero();
  for (; i + 4 * width <= n; i += 4 * width) {
    a = add(a, load(x + i));
    b = add(b, load(x + i + width));
    c = add(c, load(x + i + 2 * width));
    d = add(d, load(x + i + 3 * width));
  }
  total = horizontal_sum(add(add(a, b), add(c, d)));
#endif
  for (; i < n; ++i) {
    total += x[i];
  }
  return total;
}

}  // namespace smax_bench::anchors
