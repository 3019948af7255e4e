#!/usr/bin/env python3
"""Plot and tabulate smax benchmark results from Google Benchmark's JSON output.

    softmax_bench --benchmark_out=results.json --benchmark_out_format=json
    python3 bench/plot.py results.json --png results.png --markdown results.md

Benchmarks are named ``family/implementation/n`` (``softmax/onednn/4096``); a multi-part
implementation (``smax/avx2``) is kept whole, and an ``n`` written ``ROWSxCOLS`` is a batch.
Suffixes Google Benchmark appends (``/real_time``, ``/min_time:0.5``, ``/repeats:3``) are ignored.
Throughput is ``items_per_second`` in Gelem/s. Iteration rows are used (median over
repetitions); a benchmark that only has aggregates uses its ``median`` aggregate.

The PNG has one row per family: Gelem/s against n (both log scale), one line per
implementation, and beside it a bar chart of the batch shapes when the family has any. The
markdown has one table of Gelem/s per family (sizes, then batch shapes) and one of ratios to the
baseline implementation (``--baseline``, default ``onednn``) where it was measured.
Only the standard library is needed for markdown; the PNG needs matplotlib.
"""

import argparse
import json
import math
import os
import statistics
import sys
from collections import defaultdict

AGGREGATE_SUFFIXES = ("_mean", "_median", "_stddev", "_cv")
TIME_SUFFIXES = {"real_time", "process_time", "manual_time"}
# Listed first, in this order, after smax's own implementations; anything else follows by name.
ANCHOR_ORDER = ["onednn", "xnnpack", "eigen", "fast_math", "scalar_reference"]
FAMILY_ORDER = ["softmax", "log_softmax"]


class Size:
    """A benchmark's n: a single row length, or a ROWSxCOLS batch."""

    def __init__(self, text):
        self.text = text
        parts = text.lower().split("x")
        self.dims = tuple(int(p) for p in parts)
        self.is_batch = len(self.dims) > 1
        self.elements = math.prod(self.dims)

    def key(self):
        return (self.is_batch, self.elements, self.dims)

    def __eq__(self, other):
        return self.dims == other.dims

    def __hash__(self):
        return hash(self.dims)


def parse_name(run_name):
    """'softmax/smax/avx2/4096/real_time' -> ('softmax', 'smax/avx2', Size('4096'))."""
    parts = [p for p in run_name.split("/") if ":" not in p and p not in TIME_SUFFIXES]
    if len(parts) < 3:
        return None
    try:
        size = Size(parts[-1])
    except ValueError:
        return None
    return parts[0], "/".join(parts[1:-1]), size


def is_aggregate(entry):
    if "run_type" in entry:
        return entry["run_type"] == "aggregate"
    return entry["name"].endswith(AGGREGATE_SUFFIXES)


def aggregate_name(entry):
    if "aggregate_name" in entry:
        return entry["aggregate_name"]
    return entry["name"].rsplit("_", 1)[-1]


def run_name(entry):
    if "run_name" in entry:
        return entry["run_name"]
    name = entry["name"]
    if is_aggregate(entry):
        name = name.rsplit("_", 1)[0]
    return name


def load(path):
    """Returns (context, {family: {implementation: {Size: Gelem/s}}})."""
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    iterations = defaultdict(list)
    medians = {}
    skipped = []
    for entry in document.get("benchmarks", []):
        if entry.get("error_occurred"):
            skipped.append(f"{entry['name']} (error: {entry.get('error_message', '?')})")
            continue
        if "items_per_second" not in entry:
            skipped.append(f"{entry['name']} (no items_per_second)")
            continue
        name = run_name(entry)
        if not is_aggregate(entry):
            iterations[name].append(entry["items_per_second"])
        elif aggregate_name(entry) == "median":
            medians[name] = entry["items_per_second"]

    results = defaultdict(lambda: defaultdict(dict))
    for name in sorted(set(iterations) | set(medians)):
        parsed = parse_name(name)
        if parsed is None:
            skipped.append(f"{name} (not family/implementation/n)")
            continue
        family, implementation, size = parsed
        rate = statistics.median(iterations[name]) if name in iterations else medians[name]
        results[family][implementation][size] = rate / 1e9
    for line in skipped:
        print(f"plot.py: skipped {line}", file=sys.stderr)
    return document.get("context", {}), results


def family_order(families):
    return sorted(families, key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER
                                           else len(FAMILY_ORDER), f))


def implementation_order(implementations):
    def key(name):
        if name.startswith("smax"):
            return (0, 0, name)
        if name in ANCHOR_ORDER:
            return (1, ANCHOR_ORDER.index(name), name)
        return (2, 0, name)

    return sorted(implementations, key=key)


def sizes_of(by_implementation):
    sizes = {size for rates in by_implementation.values() for size in rates}
    return sorted(sizes, key=Size.key)


def size_label(size):
    """16 -> '16', 4096 -> '4Ki', 16777216 -> '16Mi', 1000 -> '1000'; batches as written."""
    if size.is_batch:
        return size.text
    n = size.elements
    for shift, unit in ((20, "Mi"), (10, "Ki")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def context_line(context):
    pieces = []
    if context.get("host_name"):
        pieces.append(context["host_name"])
    if context.get("num_cpus"):
        mhz = context.get("mhz_per_cpu")
        pieces.append(f"{context['num_cpus']} CPUs" + (f" @ {mhz} MHz" if mhz else ""))
    if context.get("date"):
        pieces.append(context["date"])
    return ", ".join(pieces)


def markdown(context, results, baseline, source):
    lines = [f"# Benchmark results ({os.path.basename(source)})", ""]
    about = context_line(context)
    if about:
        lines += [about, ""]
    for family in family_order(results):
        by_implementation = results[family]
        implementations = implementation_order(by_implementation)
        sizes = sizes_of(by_implementation)
        header = "| implementation | " + " | ".join(s.text for s in sizes) + " |"
        rule = "|---|" + "---:|" * len(sizes)

        lines += [f"## {family}: Gelem/s", "", header, rule]
        for implementation in implementations:
            rates = by_implementation[implementation]
            cells = [f"{rates[s]:.2f}" if s in rates else "—" for s in sizes]
            lines.append(f"| {implementation} | " + " | ".join(cells) + " |")
        lines.append("")

        reference = by_implementation.get(baseline, {})
        if reference:
            lines += [f"## {family}: vs {baseline} (× its throughput, higher is faster)", "",
                      header, rule]
            for implementation in implementations:
                if implementation == baseline:
                    continue
                rates = by_implementation[implementation]
                cells = [f"{rates[s] / reference[s]:.2f}×" if s in rates and s in reference
                         else "—" for s in sizes]
                lines.append(f"| {implementation} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines)


def import_pyplot():
    try:
        import matplotlib
    except ImportError:
        # pyenv or a virtualenv may shadow Debian's python3, which is where python3-matplotlib is.
        system_python = "/usr/bin/python3"
        if os.path.exists(system_python) and os.path.realpath(sys.executable) != \
                os.path.realpath(system_python):
            os.execv(system_python, [system_python, *sys.argv])
        sys.exit("plot.py: the PNG needs matplotlib (Debian: apt-get install python3-matplotlib)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot
    from matplotlib.ticker import FuncFormatter, NullFormatter
    return pyplot, FuncFormatter, NullFormatter


def style_of(implementation):
    if "roof" in implementation:
        return {"linestyle": "--", "linewidth": 1.2, "marker": None}
    if implementation.startswith("smax"):
        return {"linestyle": "-", "linewidth": 2.4, "marker": "o", "markersize": 5}
    return {"linestyle": "-", "linewidth": 1.3, "marker": "s", "markersize": 3.5}


def minor_label(value, _position):
    """Labels the 2 and 5 of each decade on a log axis, leaving the rest unlabelled."""
    text = f"{value:g}"
    return text if text.lstrip("0.")[:1] in ("2", "5") else ""


def colors_for(pyplot, results):
    """One colour per implementation; anchors keep theirs from run to run."""
    palette = list(pyplot.get_cmap("tab10").colors + pyplot.get_cmap("Dark2").colors)
    colors = {name: palette.pop(2) for name in ANCHOR_ORDER}
    implementations = {i for by_implementation in results.values() for i in by_implementation}
    for implementation in implementation_order(implementations):
        if implementation in colors:
            continue
        if "roof" in implementation:
            colors[implementation] = "0.35"
        else:
            colors[implementation] = palette.pop(0) if palette else "0.6"
    return colors


def plot_rows(axes, family, by_implementation, colors, formatters):
    """Gelem/s against the row length n, one line per implementation."""
    FuncFormatter, NullFormatter = formatters
    for implementation in implementation_order(by_implementation):
        points = sorted((size.elements, rate)
                        for size, rate in by_implementation[implementation].items()
                        if not size.is_batch)
        if points:
            xs, ys = zip(*points)
            axes.plot(xs, ys, label=implementation, color=colors[implementation],
                      **style_of(implementation))
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks([s.elements for s in sizes_of(by_implementation) if not s.is_batch])
    axes.xaxis.set_major_formatter(FuncFormatter(
        lambda value, _: size_label(Size(str(int(round(value)))))))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.yaxis.set_minor_formatter(FuncFormatter(minor_label))
    axes.tick_params(axis="x", labelrotation=45)
    axes.grid(True, which="major", alpha=0.4)
    axes.grid(True, which="minor", alpha=0.15)
    axes.set_xlabel("n (elements per row)")
    axes.set_ylabel("Gelem/s (higher is faster)")
    axes.set_title(f"{family}: one row of n")
    axes.legend(fontsize="small", loc="best")


def plot_batches(axes, family, by_implementation, colors):
    """Horizontal bars per batch shape, one per implementation, labelled with Gelem/s."""
    batch_sizes = [s for s in sizes_of(by_implementation) if s.is_batch]
    implementations = [i for i in implementation_order(by_implementation)
                       if any(s in by_implementation[i] for s in batch_sizes)]
    if not implementations:
        axes.axis("off")
        return
    height = 0.8 / len(implementations)
    for group, size in enumerate(batch_sizes):
        for index, implementation in enumerate(implementations):
            rate = by_implementation[implementation].get(size)
            if rate is None:
                continue
            y = group + (index - (len(implementations) - 1) / 2) * height
            axes.barh(y, rate, height=height * 0.9, color=colors[implementation])
            axes.text(rate, y, f" {rate:.2f}", va="center", fontsize="x-small")
    axes.set_yticks(range(len(batch_sizes)))
    axes.set_yticklabels([s.text for s in batch_sizes])
    axes.invert_yaxis()
    highest = max(by_implementation[i][s] for i in implementations for s in batch_sizes
                  if s in by_implementation[i])
    axes.set_xlim(0, 1.25 * highest)  # room for the value labels
    axes.grid(True, axis="x", alpha=0.4)
    axes.set_xlabel("Gelem/s")
    axes.set_title(f"{family}: batches (colours as at left)")


def plot(pyplot_modules, context, results, path):
    pyplot, *formatters = pyplot_modules
    families = family_order(results)
    colors = colors_for(pyplot, results)
    has_batches = any(s.is_batch for f in families for s in sizes_of(results[f]))
    figure, axes = pyplot.subplots(
        len(families), 2 if has_batches else 1, squeeze=False,
        figsize=(13 if has_batches else 9, 4.6 * len(families)),
        gridspec_kw={"width_ratios": [3, 1.2]} if has_batches else None)
    for row, family in enumerate(families):
        plot_rows(axes[row][0], family, results[family], colors, formatters)
        if has_batches:
            plot_batches(axes[row][1], family, results[family], colors)
    about = context_line(context)
    if about:
        figure.suptitle(about, fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="Google Benchmark JSON (--benchmark_out_format=json)")
    parser.add_argument("--png", help="write the plot here")
    parser.add_argument("--markdown", help="write the tables here ('-' for stdout)")
    parser.add_argument("--baseline", default="onednn",
                        help="implementation the ratio tables divide by (default: onednn)")
    arguments = parser.parse_args()

    # Fail (or switch interpreter) before any work is done, not after the tables are written.
    pyplot_modules = import_pyplot() if arguments.png else None
    context, results = load(arguments.results)
    if not results:
        sys.exit(f"plot.py: no family/implementation/n benchmarks with items_per_second in "
                 f"{arguments.results}")
    if arguments.png:
        plot(pyplot_modules, context, results, arguments.png)
    if arguments.markdown or not arguments.png:
        text = markdown(context, results, arguments.baseline, arguments.results)
        if arguments.markdown in (None, "-"):
            print(text)
        else:
            with open(arguments.markdown, "w", encoding="utf-8") as f:
                f.write(text + "\n")


if __name__ == "__main__":
    main()
