#pragma once
// smax: fast, exact softmax-family kernels for CPUs. Umbrella header; Eigen overloads are in
// <smax/eigen.hpp> and runtime-dispatched entry points in <smax/runtime.hpp>.

#include "algorithm.hpp"
#include "log_softmax.hpp"
#include "multimax.hpp"
#include "online.hpp"
#include "sigmoid.hpp"
#include "softmax.hpp"
#include "softpick.hpp"
#include "sparsemax.hpp"
#include "ssmax.hpp"
#include "version.hpp"
