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

}  // namespace known_defects
}  // namespace smax_fuzz
