#!/usr/bin/env bash
# Builds and runs every smax test (unit tests on every instruction set the CPU has, the
# exhaustive exp check, the CMake consumption tests). On Debian 12 it first installs what is
# missing (as root). Usage: bash tests/run_tests.sh [build-dir] [extra cmake arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/tests-release}
shift || true

phase_start=$SECONDS
phase() { echo; echo "== [$1/3] $2 ($(date +%H:%M:%S); $(( SECONDS - phase_start )) s so far)"; }

phase 1 "Debian packages: what is missing is installed (a fresh machine: about 1 min)"
packages=(g++ cmake ninja-build git ca-certificates libxsimd-dev libeigen3-dev libgtest-dev libtbb-dev libpthreadpool-dev)
bash cmake/install_debian_packages.sh "${packages[@]}"

phase 2 "building the tests and examples in $build (first build: 15-30 min on 2 cores; each instruction set's kernels are three translation units of a minute or so each, so ninja's counter can stand still for a while)"
# The kernels are compiled as a user's Release build (-O3); the test code itself at -O1, which
# compiles in two thirds of the time and runs the tests as fast (their time is in the kernels).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSMAX_BUILD_TESTS=ON -DSMAX_BUILD_BENCHMARKS=OFF -DSMAX_BUILD_EXAMPLES=ON -DSMAX_TEST_CODE_OPTIONS=-O1 "$@"
cmake --build "$build" -j "$(nproc)"

phase 3 "running the tests (5-20 min on 2 cores: the exhaustive exp sweep, and the CMake consumer tests, which configure and build projects of their own)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
echo "tests finished in $(( SECONDS - phase_start )) s"
