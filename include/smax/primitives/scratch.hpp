#pragma once
// The per-thread scratch buffer of the kernels whose working arrays outgrow their stack buffers:
// sparsemax's and 1.5-entmax's candidates, α-entmax's compacted row, top-k softmax's candidate
// lists. Grown with realloc, never shrunk, freed when the thread ends; null when the allocation
// fails (each kernel then writes the NaN row its header documents).
//
// One buffer per thread and instruction set A, shared by those families: a kernel holds one
// scratch pointer at a time and calls nothing that takes another while it does. Templated on A
// like every kernel helper (an inline function shared by translation units built with different
// flags could be linked from the wrong one), and malloc'ed, so no libstdc++ allocator code
// compiled for one instruction set runs in another's path. The memory is aligned for any scalar
// type (malloc's alignment), not for vectors.

#include <stdlib.h>

#include <cstddef>

#include "../config.hpp"

namespace smax {
namespace primitives {

template <class A>
struct scratch_buffer {
  void* data = nullptr;
  std::size_t bytes = 0;
  ~scratch_buffer() { ::free(data); }
};

// A seam for the tests, which set it to check each kernel's allocation-failure path: a request
// for more bytes than this fails as an allocation failure would. The library never changes it.
// (Always compiled, so that the tests, the examples and a user's build share one set of kernels:
// one load and compare per request, beside a function call.)
template <class A>
inline std::size_t scratch_limit = ~std::size_t(0);

// At least `bytes` bytes of this thread's buffer (its first 8 KiB are allocated on first use).
template <class A>
inline void* scratch_bytes(std::size_t bytes) noexcept {
  if (bytes > scratch_limit<A>) return nullptr;
  static thread_local scratch_buffer<A> buffer;
  if (buffer.bytes < bytes) {
    const std::size_t want = bytes < 8192 ? 8192 : bytes;
    void* p = ::realloc(buffer.data, want);
    if (p == nullptr) return nullptr;
    buffer.data = p;
    buffer.bytes = want;
  }
  return buffer.data;
}

// Room for n elements of T (null if n·sizeof(T) overflows or the allocation fails).
template <class A, class T>
inline T* scratch(std::size_t n) noexcept {
  if (n > ~std::size_t(0) / sizeof(T)) return nullptr;
  return static_cast<T*>(scratch_bytes<A>(n * sizeof(T)));
}

}  // namespace primitives
}  // namespace smax
