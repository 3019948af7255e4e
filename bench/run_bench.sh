#!/usr/bin/env bash
# Builds smax_bench (smax beside oneDNN, XNNPACK, Eigen and a -ffast-math loop, one thread each)
# and runs it: a quick subset by default, everything with --full. Writes the JSON, a markdown
# table and a PNG plot next to the binary, and prints the summary table. On Debian 12 it first
# installs what is missing (as root). The other arguments go to the benchmark binary (e.g.
# --benchmark_filter=..., --benchmark_repetitions=3); `smax_bench --help` explains the names.
# Usage: bash bench/run_bench.sh [--full] [benchmark arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/bench-release
# The quick subset: softmax and log-softmax against every anchor, their latency, the other
# families at five lengths (every benchmark named <family>/smax/<n>, so a new family's file joins
# without an edit here: the plot's time relative to softmax), and the memory roofs.
filter='^(softmax|log_softmax)/(smax|smax_avx2|onednn|xnnpack|eigen|fast_math)/(16|256|1000|4096|32768|16777216|4096x1024|16384x16|4096x64)$'
filter+='|^(softmax|log_softmax)_latency/(smax|smax_avx2|onednn|fast_math)/(16|64|256|1024|4096)$'
filter+='|^[a-z0-9_]+/smax/(64|1000|4096|32768|1048576)$'
filter+='|^roof/'
min_time=(--benchmark_min_time=0.2)
estimate="about 3 min"
full=0
arguments=()
for argument in "$@"; do
  if [ "$argument" = "--full" ]; then full=1; else arguments+=("$argument"); fi
done
if [ "$full" = 1 ]; then
  filter='.*'
  min_time=()
  estimate="about 40 min"
fi
phase_start=$SECONDS
phase() { echo; echo "== [$1/4] $2 ($(date +%H:%M:%S); $(( SECONDS - phase_start )) s so far)"; }

# oneDNN's CMake config needs the OpenCL headers and loader library (Debian builds it with the
# OpenCL GPU runtime), and xnnpack.h includes pthreadpool.h.
phase 1 "Debian packages: what is missing is installed (a fresh machine: about 2 min)"
packages=(g++ cmake ninja-build libxsimd-dev libeigen3-dev libbenchmark-dev libdnnl-dev
          ocl-icd-opencl-dev opencl-c-headers libxnnpack-dev libpthreadpool-dev python3-matplotlib)
bash cmake/install_debian_packages.sh "${packages[@]}"

phase 2 "building smax_bench in $build (first build: about 4 min on 2 idle cores; smax's kernels are compiled once per instruction set, a minute or more each)"
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSMAX_BUILD_TESTS=OFF -DSMAX_BUILD_BENCHMARKS=ON -DSMAX_BUILD_EXAMPLES=OFF > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
grep -E '^-- smax' "$build/configure.log" || true
cmake --build "$build" -j "$(nproc)" --target smax_bench

phase 3 "running the benchmarks ($estimate; progress on stderr)"
# One thread for every library (oneDNN's OpenMP is also held to one thread by the anchor).
OMP_NUM_THREADS=1 "$build/bench/smax_bench" --benchmark_filter="$filter" "${min_time[@]}" \
  --benchmark_out="$build/results.json" --benchmark_out_format=json "${arguments[@]}"

phase 4 "tables and plot"
/usr/bin/python3 bench/plot.py "$build/results.json" --png "$build/results.png" \
  --markdown "$build/results.md" --summary
echo "results: $build/results.json, $build/results.md, $build/results.png ($(( SECONDS - phase_start )) s in all)"
