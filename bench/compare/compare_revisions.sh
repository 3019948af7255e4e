#!/usr/bin/env bash
# Times two revisions of smax side by side in one benchmark binary: the header-only API of
# <revision> (default: HEAD) as `before` and of the working tree as `after`, every family at
# n = 16, 64, 1000, 32768, 2^20 and a 4096x1024 batch, single thread, compiled for this CPU
# (-march=native), medians of five repetitions, printed as a table of after/before ratios
# (below 1: faster). Extra arguments go to Google Benchmark.
#   bash bench/compare/compare_revisions.sh a18ff03 --benchmark_filter='softmax/'
# Needs g++, libxsimd-dev and libbenchmark-dev (Debian).
set -euo pipefail
cd "$(dirname "$0")/../.."
revision=${1:-HEAD}
shift || true
out=build/compare
rm -rf "$out/before"
mkdir -p "$out/before"
git archive "$revision" include | tar -x -C "$out/before"
flags=(-std=c++17 -O2 -march=native -DNDEBUG -Wno-psabi ${COMPARE_FLAGS:-})
for side in before after; do
  sed "s/@SIDE@/$side/g" bench/compare/revision.cpp.in > "$out/$side.cpp"
done
pids=()
g++ "${flags[@]}" -I "$out/before/include" -I bench/compare -c "$out/before.cpp" -o "$out/before.o" & pids+=($!)
g++ "${flags[@]}" -I include -I bench/compare -c "$out/after.cpp" -o "$out/after.o" & pids+=($!)
g++ "${flags[@]}" -I bench/compare -c bench/compare/main.cpp -o "$out/main.o" & pids+=($!)
for pid in "${pids[@]}"; do wait "$pid"; done
g++ "$out/before.o" "$out/after.o" "$out/main.o" -o "$out/compare" -lbenchmark -lpthread
echo "before: $(git rev-parse --short "$revision"), after: the working tree; $(lscpu | sed -n 's/^Model name: *//p')"
"$out/compare" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.1 --benchmark_out="$out/compare.json" --benchmark_out_format=json "$@" > /dev/null
# The medians, after/before: below 1 is faster.
python3 - "$out/compare.json" <<'PY'
import json, sys
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    family, shape, side = b["run_name"].split("/")
    runs.setdefault((family, shape), {})[side] = b["real_time"] if b["time_unit"] == "ns" else None
print(f"{'family':14} {'shape':>10} {'before ns':>12} {'after ns':>12} {'after/before':>13}")
for (family, shape), t in runs.items():
    if "before" in t and "after" in t:
        print(f"{family:14} {shape:>10} {t['before']:12.1f} {t['after']:12.1f} {t['after'] / t['before']:13.3f}")
PY
