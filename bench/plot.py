#!/usr/bin/env python3
"""Plot and tabulate smax benchmark results from Google Benchmark's JSON output.

    softmax_bench --benchmark_out=results.json --benchmark_out_format=json
    python3 bench/plot.py results.json --png results.png --markdown results.md

Benchmarks are named ``family/implementation/n`` (``softmax/onednn/4096``); a multi-part
implementation (``smax/avx2``) is kept whole, and an ``n`` written ``ROWSxCOLS`` is a batch.
Suffixes Google Benchmark appends (``/real_time``, ``/min_time:0.5``, ``/repeats:3``) are ignored.
Throughput is ``items_per_second`` in Gelem/s. Iteration rows are used (median over
repetitions); a benchmark that only has aggregates uses its ``median`` aggregate.

The PNG has one row per family measured with more than one implementation: Gelem/s against n
(both log scale), one line per implementation, a note where one stops short of the others, and
beside it a bar chart of the batch shapes when the family has any; then the latency families
(microseconds per call, each call waiting for the previous one's output); then every family's
time relative to softmax's (smax against smax) at each n, beside the memory roofs. The title
names the machine (CPU model, instruction set, caches). The markdown has one table of Gelem/s
per family (sizes, then batch shapes) and one of ratios to the baseline implementation
(``--baseline``, default ``onednn``) where it was measured; ``--summary`` prints the short form
to stdout. Only the standard library is needed for markdown; the PNG needs matplotlib.
"""

import argparse
import json
import math
import os
import statistics
import sys
import textwrap
from collections import defaultdict

AGGREGATE_SUFFIXES = ("_mean", "_median", "_stddev", "_cv")
TIME_SUFFIXES = {"real_time", "process_time", "manual_time"}
# Listed first, in this order, after smax's own implementations; anything else follows by name.
ANCHOR_ORDER = ["onednn", "xnnpack", "eigen", "fast_math", "scalar_reference"]
FAMILY_ORDER = ["softmax", "log_softmax", "softmax_latency", "log_softmax_latency"]


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
    """Returns (context, {family: {implementation: {Size: Gelem/s}}}, times, failures).

    times: {family: {implementation: {Size: microseconds per call}}}, from items_per_second as
    the throughput is (Google Benchmark's CPU time: on a busy machine the wall time also counts
    the time the thread was not running); failures: {family:
    {implementation: {Size: message}}} for benchmarks that reported an error (e.g. a wrong
    result), each reported once however many repetitions it had.
    """
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    iterations = defaultdict(list)
    medians = {}
    skipped = {}
    for entry in document.get("benchmarks", []):
        name = run_name(entry)
        if entry.get("error_occurred") or entry.get("skipped"):
            message = entry.get("error_message") or entry.get("skip_message") or "?"
            skipped.setdefault(name, f"error: {message}")
            continue
        if "items_per_second" not in entry:
            if not is_aggregate(entry):
                skipped.setdefault(name, "no items_per_second")
            continue
        if not is_aggregate(entry):
            iterations[name].append(entry["items_per_second"])
        elif aggregate_name(entry) == "median":
            medians[name] = entry["items_per_second"]

    results = defaultdict(lambda: defaultdict(dict))
    times = defaultdict(lambda: defaultdict(dict))
    failures = defaultdict(lambda: defaultdict(dict))
    for name in sorted(set(iterations) | set(medians)):
        parsed = parse_name(name)
        if parsed is None:
            skipped.setdefault(name, "not family/implementation/n")
            continue
        family, implementation, size = parsed
        rate = statistics.median(iterations[name]) if name in iterations else medians[name]
        results[family][implementation][size] = rate / 1e9
        times[family][implementation][size] = size.elements / rate * 1e6
    for name, why in skipped.items():
        parsed = parse_name(name)
        if parsed is not None:
            family, implementation, size = parsed
            failures[family][implementation][size] = why
        else:
            print(f"plot.py: skipped {name} ({why})", file=sys.stderr)
    return document.get("context", {}), results, times, failures


def is_latency(family):
    return family.endswith("_latency")


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
    """The machine: CPU model, smax's instruction set, caches, CPUs, host and date."""
    pieces = []
    if context.get("cpu_model"):
        pieces.append(context["cpu_model"])
    if context.get("smax_header_only_arch"):
        isa = f"smax on {context['smax_header_only_arch']}"
        if context.get("smax_runtime_arch"):
            isa += f" (runtime dispatch: {context['smax_runtime_arch']})"
        pieces.append(isa)
    if context.get("caches"):
        pieces.append(context["caches"])
    elif context.get("caches_list"):
        pieces.append(context["caches_list"])
    if context.get("num_cpus"):
        mhz = context.get("mhz_per_cpu")
        pieces.append(f"{context['num_cpus']} CPUs" + (f" @ {mhz} MHz" if mhz else ""))
    if context.get("host_name"):
        pieces.append(context["host_name"])
    if context.get("date"):
        pieces.append(context["date"])
    return ", ".join(pieces)


def time_label(microseconds):
    return f"{microseconds:.3g}" if microseconds < 1000 else f"{microseconds:.0f}"


def cell_text(family, implementation, size, results, times, failures):
    if size in results[family].get(implementation, {}):
        return None
    failure = failures.get(family, {}).get(implementation, {}).get(size)
    return "failed" if failure else "—"


def relative_to_softmax(results, times):
    """{family: {Size: time / softmax's time}} for smax's implementation of every family other
    than softmax, at the n where both were measured (one row of n, or the same batch)."""
    reference = times.get("softmax", {}).get("smax", {})
    ratios = {}
    for family in family_order(results):
        if family == "softmax" or is_latency(family) or family == "roof":
            continue
        mine = times[family].get("smax", {})
        common = {size: mine[size] / reference[size] for size in mine if size in reference}
        if common:
            ratios[family] = common
    return ratios


def markdown(context, results, times, failures, baseline, source):
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

        if is_latency(family):
            lines += [f"## {family}: µs per call (each call waits for the previous output)", "",
                      header, rule]
            for implementation in implementations:
                spent = times[family][implementation]
                cells = [time_label(spent[s]) if s in spent
                         else cell_text(family, implementation, s, results, times, failures)
                         for s in sizes]
                lines.append(f"| {implementation} | " + " | ".join(cells) + " |")
            lines.append("")
            continue

        lines += [f"## {family}: Gelem/s", "", header, rule]
        for implementation in implementations:
            rates = by_implementation[implementation]
            cells = [f"{rates[s]:.2f}" if s in rates
                     else cell_text(family, implementation, s, results, times, failures)
                     for s in sizes]
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

    ratios = relative_to_softmax(results, times)
    if ratios:
        sizes = sorted({size for by_size in ratios.values() for size in by_size}, key=Size.key)
        lines += ["## every family: smax's time relative to softmax's (smax) at the same n", "",
                  "| family | " + " | ".join(s.text for s in sizes) + " |",
                  "|---|" + "---:|" * len(sizes)]
        for family, by_size in ratios.items():
            cells = [f"{by_size[s]:.2f}×" if s in by_size else "—" for s in sizes]
            lines.append(f"| {family} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def summary(context, results, times, failures, baseline):
    """The short form for the terminal: per family and n, smax's Gelem/s and its ratio to the
    baseline (and the best other implementation's), latency in µs, families against softmax."""
    out = []
    about = context_line(context)
    if about:
        out += [about, ""]

    def table(title, header, rows):
        widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
        out.append(title)
        for row in [header] + rows:
            out.append("  " + "  ".join(str(cell).rjust(width) if i else str(cell).ljust(width)
                                        for i, (cell, width) in enumerate(zip(row, widths))))
        out.append("")

    for family in family_order(results):
        by_implementation = results[family]
        sizes = sizes_of(by_implementation)
        labels = [size_label(s) for s in sizes]
        if is_latency(family):
            rows = [[implementation] + [time_label(times[family][implementation][s])
                                        if s in times[family][implementation] else "—"
                                        for s in sizes]
                    for implementation in implementation_order(by_implementation)]
            table(f"{family}: µs per call (lower is faster)", ["implementation"] + labels, rows)
            continue
        reference = by_implementation.get(baseline, {})
        if not reference:
            if family in FAMILY_ORDER or family in relative_to_softmax(results, times):
                rows = [[i] + [f"{by_implementation[i][s]:.2f}" if s in by_implementation[i]
                               else cell_text(family, i, s, results, times, failures)
                               for s in sizes]
                        for i in implementation_order(by_implementation)
                        if len(by_implementation) > 1 or family in FAMILY_ORDER]
                if rows:
                    table(f"{family}: Gelem/s (higher is faster; {baseline} not measured)",
                          ["implementation"] + labels, rows)
            continue
        sizes = [s for s in sizes if s in reference]
        labels = [size_label(s) for s in sizes]
        rows = []
        for implementation in implementation_order(by_implementation):
            if implementation == baseline:
                continue
            rates = by_implementation[implementation]
            rows.append([implementation] + [
                f"{rates[s]:.2f} ({rates[s] / reference[s]:.2f}×)" if s in rates and s in reference
                else (f"{rates[s]:.2f}" if s in rates
                      else cell_text(family, implementation, s, results, times, failures))
                for s in sizes])
        rows.append([baseline] + [f"{reference[s]:.2f}" if s in reference else "—" for s in sizes])
        table(f"{family}: Gelem/s (× {baseline}; higher is faster)", ["implementation"] + labels,
              rows)

    ratios = relative_to_softmax(results, times)
    if ratios:
        sizes = sorted({size for by_size in ratios.values() for size in by_size}, key=Size.key)
        rows = [[family] + [f"{by_size[s]:.2f}×" if s in by_size else "—" for s in sizes]
                for family, by_size in ratios.items()]
        table("every family: smax's time relative to softmax's at the same n (lower is faster)",
              ["family"] + [size_label(s) for s in sizes], rows)
    roof = results.get("roof")
    if roof:
        sizes = sizes_of(roof)
        rows = [[i] + [f"{roof[i][s]:.2f}" if s in roof[i] else "—" for s in sizes] for i in roof]
        table("roof: Gelem/s (what memory allows)", ["implementation"] +
              [size_label(s) for s in sizes], rows)
    failed = sorted({f"{family}/{implementation}/{size.text}: {why}"
                     for family, by_implementation in failures.items()
                     for implementation, by_size in by_implementation.items()
                     for size, why in by_size.items()})
    if failed:
        out.append("not timed (their result failed the max_error gate, or another error):")
        out += ["  " + line for line in failed]
    return "\n".join(out)


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


def readable_log_ticks(axes, low, high):
    """Major ticks on a log y axis, labelled, at least three whatever the range: 1-2-5 per
    decade, or finer steps when the data spans less than a decade (the roof panel, a single
    family), coarser when it spans many."""
    if not (low > 0 and high > 0):
        return
    low, high = low / 1.15, high * 1.15
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
    for steps in ((1,), (1, 3), (1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8)):
        ticks = [m * 10.0 ** e for e in decades for m in steps if low <= m * 10.0 ** e <= high]
        if len(ticks) >= 3:
            break
    if len(ticks) > 9:  # many decades: one tick a decade
        ticks = [10.0 ** e for e in decades if low <= 10.0 ** e <= high]
    axes.set_ylim(low, high)
    axes.set_yticks(ticks)
    axes.set_yticklabels([f"{t:g}" for t in ticks])
    axes.minorticks_off()


def note_stops(axes, by_implementation, failures, colors, to_y):
    """Where an implementation's line ends before the panel's last n, say so at its last point
    (e.g. XNNPACK: not timed at 16Mi, its result failed the max_error gate)."""
    sizes = [s for s in sizes_of(by_implementation) if not s.is_batch]
    if not sizes:
        return
    largest = max(s.elements for s in sizes)
    for implementation in implementation_order(by_implementation):
        points = sorted((s.elements, s) for s in by_implementation[implementation]
                        if not s.is_batch)
        if not points or points[-1][0] >= largest:
            continue
        last_n, last = points[-1]
        beyond = [s for s in failures.get(implementation, {}) if s.elements > last_n]
        why = f"wrong result at {size_label(min(beyond, key=Size.key))}" if beyond \
            else "not run"
        axes.annotate(f"{implementation} stops at {size_label(last)}\n({why} beyond)",
                      (last_n, to_y(implementation, last)), textcoords="offset points",
                      xytext=(6, -14), fontsize="x-small", color=colors[implementation])


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


def plot_rows(axes, family, by_implementation, colors, formatters, failures, values=None,
              ylabel="Gelem/s (higher is faster)", title=None):
    """One line per implementation against the row length n: Gelem/s, or the values given
    (e.g. microseconds per call)."""
    FuncFormatter, NullFormatter = formatters
    values = values or by_implementation
    seen = []
    for implementation in implementation_order(by_implementation):
        points = sorted((size.elements, value)
                        for size, value in values[implementation].items() if not size.is_batch)
        if points:
            xs, ys = zip(*points)
            seen += ys
            axes.plot(xs, ys, label=implementation, color=colors[implementation],
                      **style_of(implementation))
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks([s.elements for s in sizes_of(by_implementation) if not s.is_batch])
    axes.xaxis.set_major_formatter(FuncFormatter(
        lambda value, _: size_label(Size(str(int(round(value)))))))
    axes.xaxis.set_minor_formatter(NullFormatter())
    if seen:
        readable_log_ticks(axes, min(seen), max(seen))
    note_stops(axes, by_implementation, failures, colors,
               lambda implementation, size: values[implementation][size])
    axes.tick_params(axis="x", labelrotation=45)
    axes.grid(True, which="major", alpha=0.4)
    axes.set_xlabel("n (elements per row)")
    axes.set_ylabel(ylabel)
    axes.set_title(title or f"{family}: one row of n")
    axes.legend(fontsize="small", loc="best")


def plot_relative(axes, ratios, colors, formatters):
    """Every family's time relative to softmax's (smax against smax) at each n."""
    FuncFormatter, NullFormatter = formatters
    seen = []
    for family, by_size in ratios.items():
        points = sorted((s.elements, r) for s, r in by_size.items() if not s.is_batch)
        if points:
            xs, ys = zip(*points)
            seen += ys
            axes.plot(xs, ys, label=family, color=colors.get(family, "0.4"), marker="o",
                      markersize=4, linewidth=1.6)
    axes.axhline(1.0, color="0.3", linewidth=1, linestyle="--")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    sizes = sorted({s.elements for by_size in ratios.values() for s in by_size if not s.is_batch})
    axes.set_xticks(sizes)
    axes.xaxis.set_major_formatter(FuncFormatter(
        lambda value, _: size_label(Size(str(int(round(value)))))))
    axes.xaxis.set_minor_formatter(NullFormatter())
    if seen:
        low, high = min(seen + [1.0]), max(seen + [1.0])
        readable_log_ticks(axes, low, high)
        axes.set_ylim(top=high * (high / low) ** 0.45 * 1.15)  # room for the legend above the lines
    axes.tick_params(axis="x", labelrotation=45)
    axes.grid(True, which="major", alpha=0.4)
    axes.set_xlabel("n (elements per row)")
    axes.set_ylabel("time / softmax's time (lower is faster)")
    axes.set_title("every family, smax: time relative to softmax's (dashed line) at the same n")
    axes.legend(fontsize="small", loc="upper center", ncol=4)


def plot_roof(axes, by_implementation):
    """The memory roofs as labelled bars (two or three sizes: a line plot had one y label)."""
    sizes = sizes_of(by_implementation)
    implementations = sorted(by_implementation)
    height = 0.8 / max(1, len(implementations))
    palette = ["0.35", "0.65", "0.5"]
    for index, implementation in enumerate(implementations):
        for group, size in enumerate(sizes):
            rate = by_implementation[implementation].get(size)
            if rate is None:
                continue
            y = group + (index - (len(implementations) - 1) / 2) * height
            axes.barh(y, rate, height=height * 0.9, color=palette[index % len(palette)],
                      label=implementation if group == 0 else None)
            axes.text(rate, y, f" {implementation} {rate:.2f}", va="center", fontsize="x-small")
    axes.set_yticks(range(len(sizes)))
    axes.set_yticklabels([size_label(s) for s in sizes])
    axes.invert_yaxis()
    highest = max(r for rates in by_implementation.values() for r in rates.values())
    axes.set_xlim(0, 1.45 * highest)
    axes.grid(True, axis="x", alpha=0.4)
    axes.set_xlabel("Gelem/s")
    axes.set_ylabel("n")
    axes.set_title("roof: copy (read n, write n), sum (read n)")


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


def plot(pyplot_modules, context, results, times, failures, path):
    pyplot, *formatters = pyplot_modules
    families = [f for f in family_order(results)
                if not is_latency(f) and f != "roof" and len(results[f]) > 1]
    latency = [f for f in family_order(results) if is_latency(f)]
    ratios = relative_to_softmax(results, times)
    roof = results.get("roof")
    colors = colors_for(pyplot, results)
    family_palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                      "#17becf", "#ff7f0e", "#7f7f7f"]
    for index, family in enumerate(ratios):
        colors.setdefault(family, family_palette[index % len(family_palette)])

    rows = len(families) + (1 if latency else 0) + (1 if ratios or roof else 0)
    figure = pyplot.figure(figsize=(14, 4.8 * rows + 0.6))
    grid = figure.add_gridspec(rows, 1)
    row = 0
    for family in families:
        has_batches = any(s.is_batch for s in sizes_of(results[family]))
        cells = grid[row, 0].subgridspec(1, 2, width_ratios=[3, 1.2]) if has_batches else None
        axes = figure.add_subplot(cells[0, 0] if cells else grid[row, 0])
        plot_rows(axes, family, results[family], colors, formatters, failures.get(family, {}))
        if cells:
            plot_batches(figure.add_subplot(cells[0, 1]), family, results[family], colors)
        row += 1
    if latency:
        cells = grid[row, 0].subgridspec(1, len(latency))
        for index, family in enumerate(latency):
            plot_rows(figure.add_subplot(cells[0, index]), family, results[family], colors,
                      formatters, failures.get(family, {}), values=times[family],
                      ylabel="µs per call (lower is faster)",
                      title=f"{family}: one row, each call waiting for the last")
        row += 1
    if ratios or roof:
        cells = grid[row, 0].subgridspec(1, 2, width_ratios=[3, 1.2])
        if ratios:
            plot_relative(figure.add_subplot(cells[0, 0]), ratios, colors, formatters)
        if roof:
            plot_roof(figure.add_subplot(cells[0, 1]), roof)
    about = context_line(context)
    if about:
        figure.suptitle(textwrap.fill(about, 160), fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="Google Benchmark JSON (--benchmark_out_format=json)")
    parser.add_argument("--png", help="write the plot here")
    parser.add_argument("--markdown", help="write the tables here ('-' for stdout)")
    parser.add_argument("--summary", action="store_true",
                        help="print the short tables (Gelem/s and × the baseline) to stdout")
    parser.add_argument("--baseline", default="onednn",
                        help="implementation the ratio tables divide by (default: onednn)")
    arguments = parser.parse_args()

    # Fail (or switch interpreter) before any work is done, not after the tables are written.
    pyplot_modules = import_pyplot() if arguments.png else None
    context, results, times, failures = load(arguments.results)
    if not results:
        sys.exit(f"plot.py: no family/implementation/n benchmarks with items_per_second in "
                 f"{arguments.results}")
    if arguments.png:
        plot(pyplot_modules, context, results, times, failures, arguments.png)
    if arguments.markdown or not (arguments.png or arguments.summary):
        text = markdown(context, results, times, failures, arguments.baseline, arguments.results)
        if arguments.markdown in (None, "-"):
            print(text)
        else:
            with open(arguments.markdown, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    if arguments.summary:
        print(summary(context, results, times, failures, arguments.baseline))
    else:
        for family, by_implementation in failures.items():
            for implementation, by_size in by_implementation.items():
                for size, why in by_size.items():
                    print(f"plot.py: not timed: {family}/{implementation}/{size.text} ({why})",
                          file=sys.stderr)


if __name__ == "__main__":
    main()
