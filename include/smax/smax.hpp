#pragma once
// smax: fast, exact softmax-family kernels for CPUs. Umbrella header; Eigen overloads are in
// <smax/eigen.hpp> and runtime-dispatched entry points in <smax/runtime.hpp>.

#include "algorithm.hpp"
#include "families.hpp"
#include "version.hpp"
