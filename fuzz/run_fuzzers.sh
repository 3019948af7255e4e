#!/usr/bin/env bash
# Builds the differential fuzzers with clang and runs each for a bounded time from its seed corpus
# (fuzz/corpus/<target>; new inputs go to <build>/corpus/<target>, the repository's seeds are not
# touched). Fails on any finding: the input that triggered it is kept in <build>/findings/.
# Runs one target per core at a time. Prints the executions per target and in total.
# The build directory is configured here unless it already has SMAX_BUILD_FUZZERS=ON.
#   bash fuzz/run_fuzzers.sh [build dir] [seconds per target]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/fuzz}
seconds=${2:-45}
targets="softmax sparsemax softpick multimax ssmax sigmoid stablemax sa_softmax softplus_l1 unified_max entmax15 entmax_bisect gumbel_softmax topk_softmax adaptive_softmax softmax_topk"

# A build directory already configured with the fuzzers (CI's clang build, which shares its
# instrumented kernels with the sanitizer tests) is built as it is configured.
if ! grep -qs '^SMAX_BUILD_FUZZERS:BOOL=ON' "$build/CMakeCache.txt"; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=-O2 -g" \
    -DSMAX_BUILD_FUZZERS=ON -DSMAX_BUILD_TESTS=OFF -DSMAX_BUILD_BENCHMARKS=OFF -DSMAX_BUILD_EXAMPLES=OFF \
    -DSMAX_INSTALL=OFF > /dev/null
fi
cmake --build "$build" -j "$(nproc)" $(for t in $targets; do echo --target smax_fuzz_$t; done)

mkdir -p "$build/findings"
run_target() {  # <target>: its log in $build/fuzz_<target>.log, status in $build/fuzz_<target>.status
  local t=$1
  mkdir -p "$build/corpus/$t"
  if "$build/fuzz/smax_fuzz_$t" -max_total_time="$seconds" -max_len=512 -rss_limit_mb=4096 \
       -print_final_stats=1 -artifact_prefix="$build/findings/$t-" "$build/corpus/$t" "fuzz/corpus/$t" \
       > "$build/fuzz_$t.log" 2>&1; then
    echo 0 > "$build/fuzz_$t.status"
  else
    echo 1 > "$build/fuzz_$t.status"
  fi
}
# One target per core at a time (each is single-threaded).
jobs_max=$(nproc)
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  run_target "$t" &
done
wait

total=0
status=0
for t in $targets; do
  log="$build/fuzz_$t.log"
  if [ "$(cat "$build/fuzz_$t.status")" != 0 ]; then
    status=1
    grep -A6 "smax fuzz finding\|ERROR:" "$log" | head -40 || tail -40 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "fuzz $t: ${execs:-?} executions in ${seconds} s"
  total=$((total + ${execs:-0}))
done
echo "fuzz total: $total executions"
exit $status
