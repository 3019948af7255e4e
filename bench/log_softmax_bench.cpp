// log_softmax: the same implementations as softmax_bench.cpp (XNNPACK has no log-softmax).

#include <string>

void register_softmax_family(const std::string& family, bool log);

namespace {
const bool registered = [] {
  register_softmax_family("log_softmax", true);
  return true;
}();
}  // namespace
