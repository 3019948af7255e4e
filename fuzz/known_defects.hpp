#pragma once
// Known defects the fuzzers step around: each entry is a defect the fuzzers found, reported to
// the lead, with a regression test in tests/fuzz_findings_test.cpp (disabled until its fix lands).
// Each predicate says exactly which inputs the defect covers, and the fuzzers skip (or, where
// stated, bound differently) only those. When a fix is merged, delete its entry and every use of
// it, and enable its test: the fuzzers then hold the code to the documented bound there too.
//
// Nothing else may be added here: a finding that is not one of these items is a new bug.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace smax_fuzz {
namespace known_defects {

// gumbel_softmax, float, AVX2 and AVX-512 (the instruction sets that draw more than one group of
// 64 elements at once): a seeded call whose elements run past counter 2^64 - 1 (offset + n wraps)
// draws the elements after the wrap from group 2^58 (block 2^62 + l) instead of group 0, so their
// noise differs from the reference's g(seed, k) and from a call at offset k (found by
// gumbel_softmax_fuzz: seed 18446743922796190940, offset 2^64 - 1, n = 8 on AVX2: element k = 0
// gave 4.2432761 where every other call gives -1.1684583). Regression test
// fuzz_findings.DISABLED_gumbel_float_noise_wraps_at_two_to_the_64. The fuzzer skips the seeded
// checks of inputs whose elements [offset, offset + count) run past 2^64 - 1, float only.
template <class T>
bool gumbel_float_noise_wraps(std::uint64_t offset, std::uint64_t count) {
  return sizeof(T) == 4 && count > 0 && offset + (count - 1) < offset;
}

}  // namespace known_defects
}  // namespace smax_fuzz
