// smax_bench's main: Google Benchmark's, with
// - --help that explains the names (family/implementation/n), max_error, from_memory and every
//   implementation registered in this build, then Google Benchmark's own flags;
// - the machine in the header and in the JSON context: CPU model, the instruction set smax's
//   header-only API and runtime dispatch use, cache sizes;
// - on the console, a benchmark skipped for a wrong result is reported once (not once per
//   repetition), and each finished benchmark is followed on stderr by a progress line with an
//   estimate of the time left.

#include <benchmark/benchmark.h>

#include <smax/runtime.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "bench_support.hpp"

namespace {

// What each implementation name means. --help lists the ones this build registered; one missing
// here is listed as undocumented.
const std::map<std::string, std::string>& implementation_descriptions() {
  static const std::map<std::string, std::string> d = {
      {"smax",
       "smax's header-only API, untagged (the algorithm is chosen by n), compiled for this "
       "machine (-march=native): the instruction set in the header"},
      {"smax_three_pass",
       "smax, header-only, with the three-pass algorithm forced (softmax, log_softmax, "
       "softpick)"},
      {"smax_online", "smax, header-only, with the online (one-pass max and sum) algorithm forced"},
      {"smax_two_pass",
       "smax, header-only, with the two-pass algorithm (Dukhan & Ablavatski) forced"},
      {"smax_avx512",
       "smax's AVX-512 kernels from the runtime-dispatch tables, without the header-only API "
       "around them: beside smax_avx2, the instruction set's share"},
      {"smax_k64", "top-k softmax with k = 64 (smax is k = 8)"},
      {"sort_baseline",
       "1.5-entmax as deep-spin/entmax computes it: a full sort, prefix sums, the closed-form "
       "threshold (scalar)"},
      {"pow_baseline",
       "alpha-entmax as deep-spin/entmax's bisection computes it: 50 full sweeps with std::pow "
       "(scalar)"},
      {"nth_element_baseline",
       "top-k softmax as a user writes it: std::nth_element for the k-th value, then softmax's "
       "exponentials over the selected entries (k = 8)"},
      {"nth_element_baseline_k64", "nth_element_baseline with k = 64"},
      {"smax_avx2",
       "smax's AVX2+FMA kernels from the runtime-dispatch tables: what a CPU without "
       "AVX-512 runs"},
      {"smax_sort",
       "sparsemax with its threshold found by a small sort (the automatic choice for short rows)"},
      {"smax_pivot", "sparsemax with Condat's pivot method forced (never the automatic choice)"},
      {"smax_filter",
       "sparsemax with the filter method forced: entries above a lower bound of tau, "
       "then Michelot's method (the automatic choice from 128 elements)"},
      {"smax_stream",
       "sparsemax with the first two passes fused forced (the automatic choice for "
       "rows of 2 MiB and more)"},
      {"onednn",
       "oneDNN's softmax_v2 (softmax_accurate, or softmax_log), one thread, its ISA capped to "
       "this build's vector width"},
      {"xnnpack", "XNNPACK's softmax operator, one thread (it has no log-softmax)"},
      {"eigen", "an Eigen 3.4 expression: exp(x - max) / sum, vectorised by Eigen"},
      {"fast_math",
       "a plain C++ loop compiled with -ffast-math (vectorised expf from libmvec): the "
       "loop a user would write"},
      {"scalar_reference",
       "smax::reference, scalar with long-double sums: the tests' ground truth, "
       "for scale (slow)"},
      {"softmax_anchor",
       "smax::softmax_rows on the same rows (multimax): multimax/smax over this is the "
       "cost of the modulation"},
      {"softmax_smax",
       "smax::softmax_rows on the same rows (softpick): the yardstick for softpick's cost"},
      {"naive_scalar", "softpick as its reference code writes it: e^(x-m) - e^-m, scalar"},
      {"sort", "sparsemax as deep-spin/entmax computes it: sort, prefix sum, threshold (scalar)"},
      {"scalar_libm", "sigmoid as 1/(1 + exp(-x)) with libm, scalar"},
      {"two_softmax_baseline",
       "adaptive softmax as a user writes it with smax: softmax, a scalar entropy loop (libm "
       "log), softmax again at temperature 1/beta"},
      {"copy",
       "roof: a streaming copy (read n, write n), what memory allows a one-pass kernel out of "
       "cache"},
      {"sum", "roof: a read-only sum, what memory allows a pass that only reads"},
      {"last_axis",
       "softmax_axis's yardstick: smax::softmax_rows on the same elements laid out along the "
       "last axis"},
      {"transpose",
       "softmax over a middle axis without smax's axis form: transpose (plain loops), "
       "softmax_rows, transpose back"},
      {"float",
       "the 16-bit softmax's yardstick: smax::softmax_rows on float rows of the same values"},
  };
  return d;
}

void print_help() {
  std::printf(
      "smax_bench: smax's kernels beside other implementations, one thread, float32 rows U[-8, "
      "8].\n"
      "\n"
      "Names: family/implementation/n, or family/implementation/ROWSxCOLS for a batch of rows.\n"
      "  family          softmax, log_softmax, sparsemax, softpick, multimax, ssmax, sigmoid,\n"
      "                  sigmoid_attention, stablemax, log_stablemax, sa_softmax(_plain),\n"
      "                  softplus_l1, unified_max_softmax, entmax15, entmax_bisect, topk_softmax,\n"
      "                  adaptive_softmax, gumbel_softmax(_seeded), cross_entropy;\n"
      "                  softmax_axis (the middle axis of OUTERxNxINNER, docs/axis.md);\n"
      "                  softmax_bf16, softmax_fp16 (16-bit x and y, docs/half.md);\n"
      "                  <family>_latency (single rows, each call's input waiting\n"
      "                  for the previous call's output: latency, not throughput); roof (memory).\n"
      "  n               elements per row; a batch runs ROWS rows of COLS in one call.\n"
      "  Select with --benchmark_filter=<regex>, e.g. '^softmax/(smax|onednn)/4096$'.\n"
      "\n"
      "Columns: Time and CPU are per call; items_per_second is elements per second (the tables in\n"
      "results.md give Gelem/s); bytes_per_second counts reading x and writing y.\n"
      "  max_error    the largest error of the implementation's output on the benchmark's own "
      "input,\n"
      "               against a double reference, measured once before timing: relative per "
      "output\n"
      "               for softmax and the normalising families, absolute for log_softmax and\n"
      "               sparsemax. Each benchmark has a gate (1e-3 for every softmax / log_softmax\n"
      "               implementation, the documented bound for smax's other families); above it "
      "the\n"
      "               benchmark is not timed and reports 'wrong result: error E' (e.g. a float sum "
      "of\n"
      "               16M elements drifts past 1e-3 in some anchors).\n"
      "  from_memory  1: the data (%zu MiB last-level cache assumed, the reported %zu MiB clamped "
      "to\n"
      "               [4, 32]) is bigger than a quarter of it, so calls rotate through buffers "
      "twice\n"
      "               its size and read from memory (cold); 0: the data stays in cache (warm).\n"
      "\n"
      "Implementations in this build:\n",
      smax_bench::last_level_cache_bytes() >> 20,
      smax_bench::reported_last_level_cache_bytes() >> 20);
  std::map<std::string, std::set<std::string>> families_of;
  for (const std::string& name : smax_bench::registered_names()) {
    const auto first = name.find('/'), last = name.rfind('/');
    if (first == std::string::npos || first == last) continue;
    families_of[name.substr(first + 1, last - first - 1)].insert(name.substr(0, first));
  }
  for (const auto& [implementation, families] : families_of) {
    const auto found = implementation_descriptions().find(implementation);
    std::string in;
    for (const auto& f : families) in += (in.empty() ? "" : ", ") + f;
    std::printf("  %-17s %s\n  %-17s (in %s)\n", implementation.c_str(),
                found != implementation_descriptions().end()
                    ? found->second.c_str()
                    : "(undocumented: describe it in bench/main.cpp)",
                "", in.c_str());
  }
  std::printf(
      "\nbench/run_bench.sh runs a quick subset (--full: everything) and writes "
      "results.{json,md,png}.\n"
      "\nGoogle Benchmark's flags:\n");
  benchmark::PrintDefaultHelp();
}

std::string read_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    for (const char* key : {"model name", "Model", "Hardware", "cpu model"}) {
      if (line.compare(0, std::strlen(key), key) == 0) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) {
          std::string value = line.substr(colon + 1);
          value.erase(0, value.find_first_not_of(" \t"));
          return value;
        }
      }
    }
  }
  return "unknown CPU";
}

std::string size_text(long bytes) {
  if (bytes <= 0) return "?";
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

// The machine, in the header (custom context is printed by the console reporter) and the JSON.
void add_machine_context() {
  benchmark::AddCustomContext("cpu_model", read_cpu_model());
  benchmark::AddCustomContext("smax_header_only_arch", xsimd::default_arch::name());
#if defined(SMAX_DISPATCH)
  benchmark::AddCustomContext("smax_runtime_arch", smax::runtime::arch_name());
#endif
  benchmark::AddCustomContext("caches", "L1d " + size_text(sysconf(_SC_LEVEL1_DCACHE_SIZE)) +
                                            ", L2 " + size_text(sysconf(_SC_LEVEL2_CACHE_SIZE)) +
                                            ", L3 " + size_text(sysconf(_SC_LEVEL3_CACHE_SIZE)) +
                                            " (as reported; a VM may report the host's)");
  benchmark::AddCustomContext("smax_last_level_cache_bytes",
                              std::to_string(smax_bench::last_level_cache_bytes()));
}

// How many registered benchmarks the filter selects (Google Benchmark's filter is a regular
// expression searched in the name; a leading '-' negates it). Only for the progress line.
std::size_t selected_count(std::string filter) {
  if (filter.empty() || filter == "all") filter = ".";
  bool negate = false;
  if (!filter.empty() && filter[0] == '-') {
    negate = true;
    filter.erase(0, 1);
  }
  try {
    const std::regex re(filter, std::regex::extended);
    std::size_t count = 0;
    for (const auto& name : smax_bench::registered_names())
      if (std::regex_search(name, re) != negate) ++count;
    return count;
  } catch (const std::regex_error&) {
    return 0;
  }
}

template <class R>
auto run_failed(const R& run, int) -> decltype(run.error_occurred, bool()) {
  return run.error_occurred;
}
template <class R>
auto run_failed(const R& run, long) -> decltype(run.skipped, bool()) {  // Google Benchmark >= 1.8
  return static_cast<bool>(run.skipped);
}

// The console reporter, with each failed benchmark reported once and progress on stderr.
class progress_reporter : public benchmark::ConsoleReporter {
 public:
  progress_reporter(OutputOptions options, std::size_t total)
      : ConsoleReporter(options), total_(total), start_(std::chrono::steady_clock::now()) {}

  void ReportRuns(const std::vector<Run>& reports) override {
    std::vector<Run> shown;
    for (const Run& run : reports) {
      const std::string name = run.run_name.str();
      if (run_failed(run, 0) && !failed_.insert(name).second) continue;  // already reported
      shown.push_back(run);
      done_.insert(name);
    }
    if (shown.empty()) return;
    if (tty_) std::fprintf(stderr, "\r\033[K");  // the progress line gives way to the results
    ConsoleReporter::ReportRuns(shown);
    GetOutputStream().flush();
    show_progress();
  }

 private:
  // "[12/140 benchmarks, 35 s, about 6 min left]": on a terminal one line, rewritten after each
  // benchmark; otherwise a line every 10 benchmarks. The estimate is the mean time so far.
  void show_progress() {
    const std::size_t done = done_.size();
    if (total_ < done || done == total_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double left = elapsed / done * (total_ - done);
    if (!tty_ && done % 10 != 0) return;
    std::fprintf(stderr, "[%zu/%zu benchmarks, %.0f s, about %.0f %s left]%s", done, total_,
                 elapsed, left >= 120 ? left / 60 : left, left >= 120 ? "min" : "s",
                 tty_ ? "" : "\n");
    std::fflush(stderr);
  }

  bool tty_ = isatty(STDERR_FILENO) != 0;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
  std::set<std::string> failed_, done_;
};

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_help();
      return 0;
    }
  bool console = true;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0 &&
        std::strcmp(argv[i] + 19, "console") != 0)
      console = false;
  benchmark::Initialize(&argc, argv, print_help);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  add_machine_context();
  if (console) {
    const bool color = isatty(STDOUT_FILENO) != 0;
    progress_reporter reporter(color ? benchmark::ConsoleReporter::OO_ColorTabular
                                     : benchmark::ConsoleReporter::OO_Tabular,
                               selected_count(benchmark::GetBenchmarkFilter()));
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } else {
    benchmark::RunSpecifiedBenchmarks();
  }
  benchmark::Shutdown();
  return 0;
}
