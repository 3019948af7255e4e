#!/usr/bin/env bash
# Builds smax_bench (smax beside oneDNN, XNNPACK, Eigen and a -ffast-math loop, one thread each)
# and runs it: a quick subset by default, everything with --full. Writes the JSON, a markdown
# table and a PNG plot next to the binary. On Debian 12 it first installs what is missing (as
# root). Extra arguments go to the benchmark binary (e.g. --benchmark_filter=...).
# Usage: bash bench/run_bench.sh [--full] [benchmark arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/bench-release
filter='^(softmax|log_softmax)/(smax|smax_avx2|onednn|xnnpack|eigen|fast_math)/(16|256|1000|4096|32768|16777216|4096x1024|16384x16|4096x64)$|^roof/'
min_time=(--benchmark_min_time=0.2)
if [ "${1:-}" = "--full" ]; then
  filter='.*'
  min_time=()
  shift
fi

# oneDNN's CMake config needs the OpenCL headers and loader library (Debian builds it with the
# OpenCL GPU runtime), and xnnpack.h includes pthreadpool.h.
packages=(g++ cmake ninja-build libxsimd-dev libeigen3-dev libbenchmark-dev libdnnl-dev
          ocl-icd-opencl-dev opencl-c-headers libxnnpack-dev libpthreadpool-dev python3-matplotlib)
bash cmake/install_debian_packages.sh "${packages[@]}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSMAX_BUILD_TESTS=OFF -DSMAX_BUILD_BENCHMARKS=ON -DSMAX_BUILD_EXAMPLES=OFF
cmake --build "$build" -j "$(nproc)" --target smax_bench
# One thread for every library (oneDNN's OpenMP is also held to one thread by the anchor).
OMP_NUM_THREADS=1 "$build/bench/smax_bench" --benchmark_filter="$filter" "${min_time[@]}" \
  --benchmark_out="$build/results.json" --benchmark_out_format=json "$@"
/usr/bin/python3 bench/plot.py "$build/results.json" --png "$build/results.png" \
  --markdown "$build/results.md"
echo "results: $build/results.json, $build/results.md, $build/results.png"
