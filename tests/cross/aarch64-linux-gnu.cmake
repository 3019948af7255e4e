# Cross build for AArch64 (NEON), run under qemu-user: Debian's g++-aarch64-linux-gnu and
# qemu-user. The headers (xsimd, Eigen, GoogleTest sources) are architecture-independent and come
# from the host; GoogleTest is built from source (an installed libgtest.a is for the host): give
# FetchContent a local copy, e.g. Debian's libgtest-dev sources, to build it offline.
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=tests/cross/aarch64-linux-gnu.cmake \
#         -DSMAX_BUILD_TESTS=ON -Dxsimd_DIR=/usr/lib/x86_64-linux-gnu/cmake/xsimd \
#         -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
