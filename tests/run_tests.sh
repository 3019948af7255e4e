#!/usr/bin/env bash
# Builds and runs every smax test (unit tests on every instruction set the CPU has, the
# exhaustive exp check, the CMake consumption tests). On Debian 12 it first installs what is
# missing (as root). Usage: bash tests/run_tests.sh [build-dir] [extra cmake arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/tests-release}
shift || true

packages=(g++ cmake ninja-build git ca-certificates libxsimd-dev libeigen3-dev libgtest-dev)
bash cmake/install_debian_packages.sh "${packages[@]}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSMAX_BUILD_TESTS=ON -DSMAX_BUILD_BENCHMARKS=OFF -DSMAX_BUILD_EXAMPLES=ON "$@"
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
