"""Part III, GCN inference in FP64: its steps' kinds, its tables, charts and README block.

Every step is bandwidth-bound: its row's gbps is the step's minimum bytes
(common/include/tut/gcn/reference.hpp) over its median time, compared with the device-to-device
copy bandwidth each binary measures in its own process (copy_gbps). Each chapter computes one piece
of the layer, its kind (kind_of: its op), and is compared with that piece's library baseline at its
best over the processes that timed it (results.references): cuBLAS DGEMM (skinny GEMM), cuSPARSE's
fastest CSR algorithm (SpMM; alt: its default), a plain log_softmax kernel, one thread per row
(LogSoftmax; alt: cuDNN's FP64 log softmax), the library pipeline cuBLAS + cuSPARSE + that plain
bias/log_softmax kernel (the layer; alt: the same with cuDNN's softmax). The rows plots/torch_gcn.py
appends (PyTorch's layer, chapter "torch_layer"; PyTorch Geometric's GCNConv, "pyg_gcnconv"; in no
chapters.tsv), each its fastest process (results.fastest_process), appear only in the layer chart
and as extra lines of the Part III table. Tables and charts show one problem, gcn_headline's.

Outputs (outputs): <slug>-gcn-{speedup,bandwidth,layer}.png (layer: when a step with OP layer or a PyTorch
row was measured), README.md's results:gcn block, each chapter's row at that problem.
"""
from __future__ import annotations

from pathlib import Path

from . import charts, fmt, results
from .baselines import Baselines
from .markdown import Outputs, preamble
from .results import CsvError, Row, is_chapter
from .runner import Runner

# The default graph: the R-MAT graph of web-Stanford's size with the default seed, named as
# common/include/tut/gcn/graph.hpp names it. The tables and charts prefer it (gcn_headline).
HEADLINE = "rmat_281903_2312497_s1"
SECTIONS = {"FP64": "gcn"}  # the precision with outputs of its own
# The piece of the layer each OP computes (chapters/CMakeLists.txt declares a step's OP; its rows
# carry it), in the order the tables list them.
OP_KINDS = {"xw": "skinny GEMM", "spmm": "SpMM", "log_softmax": "LogSoftmax", "layer": "layer"}
GCN_OTHER = "other"  # a row whose op names no piece
# The rows plots/torch_gcn.py appends (PyTorch's layer and PyTorch Geometric's GCNConv), which are in
# no step list: what they are, for results.fill_steps.
TORCH_STEPS = {"torch_layer": ("fp64", "layer", ""), "pyg_gcnconv": ("fp64", "layer", "")}
TORCH_CHAPTERS = tuple(TORCH_STEPS)
KIND_COLOURS = {"skinny GEMM": "#4C72B0", "SpMM": "#55A868", "LogSoftmax": "#C44E52", "layer": "#8172B3",
                GCN_OTHER: "#937860"}
LIBRARY_COLOUR, ALT_LIBRARY_COLOUR = "#7f7f7f", "#b5b5b5"
FLOOR_COLOUR, TORCH_COLOUR = "#2ca02c", "#DD8452"


# ----------------------------------------------------------------------------------------------
# Which rows are which

def gcn_kind_order() -> list[str]:
    return [*OP_KINDS.values(), GCN_OTHER]


def kind_of(r: Row) -> str:
    """The piece of the layer a row's step computes, from its op: 'spmm' -> 'SpMM'; PyTorch's rows
    compute the whole layer ('layer')."""
    return OP_KINDS.get(r.op, GCN_OTHER)


def is_torch(r: Row) -> bool:
    return r.chapter in TORCH_CHAPTERS


def gcn_headline(rows) -> str | None:
    """The problem Part III's tables and charts show: HEADLINE when any chapter ran it; else the
    problem the most chapters ran (among equals, the one run last); else the PyTorch rows' (None
    without rows)."""
    rows = list(rows)
    chapters = [r for r in rows if r.is_chapter] or rows
    if not chapters:
        return None
    if any(r.problem == HEADLINE for r in chapters):
        return HEADLINE
    count: dict[str, set] = {}
    newest: dict[str, str] = {}
    for r in chapters:
        count.setdefault(r.problem, set()).add(r.chapter)
        newest[r.problem] = max(newest.get(r.problem, ""), r.timestamp)
    return max(count, key=lambda p: (len(count[p]), newest[p]))


def gcn_head(latest: dict) -> tuple[str | None, list[Row], list[Row]]:
    """(problem, its chapter rows in reading order, its PyTorch rows) for the Part III tables and charts."""
    rows = [r for r in latest.values() if r.is_chapter or is_torch(r)]
    problem = gcn_headline(rows)
    at = [r for r in rows if r.problem == problem]
    chapters = sorted((r for r in at if r.is_chapter), key=lambda r: r.chapter)
    torch_rows = sorted((results.fastest_process(r) for r in at if is_torch(r)), key=lambda r: TORCH_CHAPTERS.index(r.chapter))
    return problem, chapters, torch_rows


def gcn_kinds(chapters: list[Row]) -> list[str]:
    """The kinds the chapters compute, in the layer's order."""
    present = {kind_of(r) for r in chapters}
    return [k for k in gcn_kind_order() if k in present]


def gcn_libraries(chapters: list[Row]) -> dict[str, Baselines]:
    """Kind -> its library baseline (main) and, where the rows have one, its second (alt; SpMM:
    cuSPARSE's default algorithm; LogSoftmax and the layer: with cuDNN's softmax), each at its best
    over the processes. GB/s: the piece's minimum bytes over the library's time."""
    return {k: Baselines([r for r in chapters if kind_of(r) == k]) for k in gcn_kinds(chapters)}


def gcn_copy_gbps(rows: list[Row]) -> float:
    """The median of the copy bandwidths the rows' processes measured (nan: none did)."""
    return results.median([r.copy_gbps for r in rows if r.copy_gbps])


def gcn_shape(r: Row) -> str:
    return f"V = {r.m}, F_in {r.k} → F_out {r.n}"


# ----------------------------------------------------------------------------------------------
# Tables

def headline_table(chapters: list[Row], torch_rows: list[Row], metrics: list | None = None) -> str:
    """At the Part III problem: every chapter against its library baseline at its best and the first
    chapter of its kind, then the PyTorch rows (each its fastest process; GCNConv against PyTorch's layer)."""
    lines = ["| step | kind | time (ms), median [min, max] | GB/s | % of copy | DRAM bytes ÷ minimum | library baseline "
             "| library (ms) | library GB/s | × library | × first of its kind | verified |",
             "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|:-:|"]
    first: dict[str, Row] = {}

    def line(r: Row, kind: str, vs_first: str) -> str:
        # A row that is its own baseline (PyTorch's layer) has no library cells.
        library = (f"{r.baseline} | {fmt.ms(r.baseline_time_ms)} | {fmt.gbs(r.gbps_at(r.baseline_time_ms))} "
                   f"| {r.ratio_to_baseline:.2f}") if r.baseline != r.step else "– | – | – | –"
        dram = results.dram_bytes(metrics or [], r.chapter, r.problem)
        share = f"{dram / (r.gbytes * 1e9):.2f}×" if dram else "–"
        return (f"| {fmt.label(r)} | {kind} | {fmt.timing(r)} | {fmt.gbs(r.gbps)} | {fmt.pct(r.copy_ratio)} | {share} "
                f"| {library} | {vs_first} | {r.verified} |")

    for r in chapters:
        kind = kind_of(r)
        f = first.setdefault(kind, r)
        lines.append(line(r, kind, f"{f.time_ms_median / r.time_ms_median:.2f}"))
    for r in torch_rows:
        lines.append(line(r, kind_of(r), "–"))
    return "\n".join(lines)


def chapter_table(r: Row) -> str:
    """One Part III chapter's block: its row at the Part III problem, against the baselines at their
    best over the processes, and the copy bandwidth measured in its own process."""
    alt = r.alt_baseline_time_ms is not None
    lines = ["| graph | size | time (ms), median [min, max] | GB/s | % of copy | library (ms) | library GB/s | × library "
             + ("| second baseline (ms) | × second baseline " if alt else "") + "| verified |",
             "|---|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if alt else "") + ":-:|"]
    lines.append(f"| {r.problem} | {gcn_shape(r)} | {fmt.timing(r)} | {fmt.gbs(r.gbps)} | {fmt.pct(r.copy_ratio)} "
                 f"| {fmt.ms(r.baseline_time_ms)} | {fmt.gbs(r.gbps_at(r.baseline_time_ms))} | {r.ratio_to_baseline:.2f} "
                 + (f"| {fmt.ms(r.alt_baseline_time_ms)} | {r.alt_ratio:.2f} " if alt else "")
                 + f"| {r.verified} |")
    names = f"Baseline: {r.baseline}" + (f"; second baseline: {r.alt_baseline}" if alt else "")
    copy = (f"the device-to-device copy bandwidth measured in the same process: {fmt.gbs(r.copy_gbps)} GB/s"
            if r.copy_gbps else "no copy bandwidth was measured in this process")
    floor = (f" The memory floor (these minimum bytes at that copy bandwidth): {fmt.ms(r.floor_ms)} ms."
             if kind_of(r) == "layer" and r.copy_gbps else "")
    n = r.fields.get("baseline_processes") or 1
    timed = f"the best median over the {n} processes that timed it" if n > 1 else "timed in the step's process only"
    return (f"{names}; each {timed}; {copy}. GB/s counts the step's "
            f"minimum bytes (each input "
            f"read once, the output written once); the library's GB/s is the same bytes over its time; "
            f"× library is the library's time over the step's.{floor}\n\n" + "\n".join(lines))


# ----------------------------------------------------------------------------------------------
# Charts

def speedup_chart(chapters: list[Row], libs: dict[str, Baselines], problem: str, path: Path) -> None:
    """One panel per kind: each chapter's speedup over the first chapter of its kind, and its
    library baseline(s) on the same scale; labels give × the first chapter and × the library at its
    best over the processes."""
    kinds = gcn_kinds(chapters)
    per_kind = {k: [r for r in chapters if kind_of(r) == k] for k in kinds}
    widths = [len(per_kind[k]) + 1 + libs[k].alt.has for k in kinds]
    fig, axes = charts.figure((max(8.0, 1.25 * sum(widths) + 1.5), 5.5), ncols=len(kinds),
                              gridspec_kw={"width_ratios": widths}, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        mine, lib = per_kind[kind], libs[kind]
        first = mine[0]
        names = [charts.wrap(fmt.label(r)) for r in mine]
        values = [first.time_ms_median / r.time_ms_median for r in mine]
        colours = [KIND_COLOURS[kind]] * len(mine)
        notes = [f"{v:.2f}× {first.chapter[:2]}\n{r.ratio_to_baseline:.2f}× library" for v, r in zip(values, mine)]
        for b, colour in [(lib.main, LIBRARY_COLOUR)] + ([(lib.alt, ALT_LIBRARY_COLOUR)] if lib.alt.has else []):
            names.append(charts.wrap(b.name))
            values.append(first.time_ms_median / b.ms)
            colours.append(colour)
            notes.append(f"{first.time_ms_median / b.ms:.2f}× {first.chapter[:2]}\n{fmt.ms(b.ms)} ms")
        bars = ax.bar(range(len(names)), values, color=colours)
        charts.label_bars(ax, bars, notes, 7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=7, rotation=30, ha="right")
        ax.set_ylim(0, max(values) * 1.3)
        ax.set_title(kind, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("speedup over the first step of its kind\n(its median time / this one's)")
    fig.suptitle(f"GCN layer pieces, FP64, graph {problem}: speedup over the first step of each kind, and the library "
                 f"baseline of each piece (its best median over the processes)\n{charts.suffix(chapters[0])}", fontsize=10)
    charts.save(fig, path)


def bandwidth_chart(chapters: list[Row], libs: dict[str, Baselines], problem: str, path: Path) -> None:
    """GB/s of every chapter and every library baseline (minimum bytes over the median time), grouped
    by kind, under the copy bandwidth measured in the same processes."""
    copy = gcn_copy_gbps(chapters)
    xs, values, colours, names, hatches, lib_at = [], [], [], [], [], []
    x = 0.0
    for kind in gcn_kinds(chapters):
        lib = libs[kind]
        entries = [(fmt.label(r), r.gbps, KIND_COLOURS[kind], "") for r in chapters if kind_of(r) == kind]
        lib_at += [None] * len(entries) + [lib.main] + ([lib.alt] if lib.alt.has else [])
        entries.append((lib.main.name, lib.main.gbps, LIBRARY_COLOUR, "//"))
        if lib.alt.has:
            entries.append((lib.alt.name, lib.alt.gbps, ALT_LIBRARY_COLOUR, "//"))
        for name, v, colour, hatch in entries:
            xs.append(x)
            names.append(charts.wrap(name, 26))
            values.append(v)
            colours.append(colour)
            hatches.append(hatch)
            x += 1.0
        x += 0.6  # a gap between kinds
    fig, ax = charts.figure((max(9.0, 0.75 * len(xs) + 2.5), 6.0))
    bars = ax.bar(xs, values, color=colours)
    for b, hatch in zip(bars, hatches):
        if hatch:
            b.set_hatch(hatch)
    charts.spread(ax, xs, lib_at, "gbps")
    charts.label_bars(ax, bars, [fmt.pct(v / copy) if copy == copy else fmt.gbs(v) for v in values], 7)
    if copy == copy:
        ax.axhline(copy, color="black", ls="--", lw=1.2)
        ax.annotate(f"device-to-device copy {copy:.0f} GB/s (read + write; median of the steps' processes)",
                    (xs[0] - 0.4, copy), va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(names, fontsize=7, rotation=35, ha="right")
    ax.set_ylim(0, max([v for v in values if v == v] + ([copy] if copy == copy else [])) * 1.15)
    ax.set_ylabel("GB/s: minimum bytes / median time")
    handles = [charts.legend_box(color=KIND_COLOURS[k]) for k in gcn_kinds(chapters)]
    handles.append(charts.legend_box(facecolor=LIBRARY_COLOUR, hatch="//"))
    ax.legend(handles, gcn_kinds(chapters) + ["library baseline (same bytes / its time)"], fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(f"GCN layer pieces, FP64, graph {problem}: bandwidth against the copy ceiling "
                 f"(labels: % of copy)\nlibraries at their best over the processes; {charts.SPREAD_NOTE}\n"
                 f"{charts.suffix(chapters[0])}", fontsize=10)
    charts.save(fig, path)


def layer_chart(chapters: list[Row], torch_rows: list[Row], libs: dict[str, Baselines], problem: str,
                path: Path) -> bool:
    """The whole layer: the fused chapter(s), the library pipeline, the PyTorch rows and the memory
    floor (the layer's minimum bytes at the copy bandwidth), as times. False (nothing drawn) when
    there is no layer row at all."""
    layer = [r for r in chapters if kind_of(r) == "layer"]
    ref = layer[-1] if layer else (torch_rows[0] if torch_rows else None)
    if ref is None:
        return False
    entries = []  # (label, ms, colour, the library's Baseline or None)
    floor = ref.floor_ms
    if floor == floor:
        entries.append((f"memory floor: the layer's minimum bytes at the copy bandwidth ({fmt.gbs(ref.copy_gbps)} GB/s)",
                        floor, FLOOR_COLOUR, None))
    entries += [(fmt.label(r), r.time_ms_median, KIND_COLOURS["layer"], None) for r in layer]
    if "layer" in libs:
        # The pipeline with the plain bias + log_softmax kernel, then the same with cuDNN's softmax, where timed.
        for b in (libs["layer"].main, libs["layer"].alt):
            if b.has:
                entries.append((b.name, b.ms, LIBRARY_COLOUR, b))
    for r in torch_rows:
        other = f" (CUDA {r.cuda})" if r.cuda != ref.cuda else ""
        entries.append((r.step + other, r.time_ms_median, TORCH_COLOUR, None))
    fig, ax = charts.figure((10.0, 1.6 + 0.6 * len(entries)))
    ys = range(len(entries))
    ax.barh(ys, [e[1] for e in entries], color=[e[2] for e in entries])
    charts.spread(ax, ys, [e[3] for e in entries], "ms", horizontal=True)
    top = max(e[1] for e in entries)
    for y, (_, ms, colour, _) in zip(ys, entries):
        note = f"{fmt.ms(ms)} ms" + (f", {ms / floor:.1f}× floor" if floor == floor and colour != FLOOR_COLOUR else "")
        ax.annotate(note, (ms + 0.01 * top, y), va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([charts.wrap(e[0], 48) for e in entries], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel("time (ms), median of event-timed runs, L2 flushed before each")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"One GCN layer, FP64: log_softmax(Â (X W) + b)\ngraph {problem} ({gcn_shape(ref)}); libraries and "
                 f"PyTorch at their best over the processes\n{charts.suffix(ref)}", fontsize=10)
    charts.save(fig, path)
    return True


# ----------------------------------------------------------------------------------------------

def readme_block(problem: str, chapters: list[Row], torch_rows: list[Row], libs: dict[str, Baselines],
                 images: list[Path], out: Outputs) -> str:
    copy = gcn_copy_gbps(chapters)
    layer = [r for r in chapters if kind_of(r) == "layer" and r.copy_gbps]
    floor = (f" The whole layer's memory floor, its minimum bytes at the copy bandwidth of step "
             f"{layer[-1].chapter[:2]}'s process, is {fmt.ms(layer[-1].floor_ms)} ms." if layer else "")
    torch_note = (" The last rows time the same layer in PyTorch on the tensors a chapter binary dumped "
                  "(`plots/torch_gcn.py`, optional; each its fastest process, against the baseline it names)."
                  if torch_rows else "")
    copy_text = (f"(median over the steps' processes: {copy:.0f} GB/s)" if copy == copy else "(not measured in these rows)")
    soft = libs.get("LogSoftmax")
    cudnn_note = (f" ({soft.alt.name} takes {fmt.ms(soft.alt.ms)} ms for the log_softmax alone, "
                  f"{fmt.pct(soft.alt.gbps / copy)} of the copy bandwidth: it would make any step look fast)."
                  if soft and soft.alt.has and copy == copy else ".")
    return "\n".join([
        preamble(chapters[0], chapters + torch_rows,
                 f"one GCN layer out = log_softmax(Â (X W) + b) in FP64 on the graph `{problem}` "
                 f"({gcn_shape(chapters[0])}), each step computing one piece of it (its kind). Each time is the median "
                 f"of event-timed runs with L2 flushed before each run. Each step's process also times its piece's "
                 f"library baseline, and the step is compared with the library's best median over the processes that "
                 f"timed it (a library's time moves between processes; docs/measuring.md). The baselines: cuBLAS DGEMM, "
                 f"cuSPARSE's fastest CSR algorithm, and for the log_softmax and the whole layer a plain kernel (one "
                 f"thread per row) and the pipeline cuBLAS + cuSPARSE + that kernel, with cuDNN's FP64 softmax as a "
                 f"second line only{cudnn_note} Each process also measures the device-to-device copy bandwidth, "
                 f"bytes read + written per second {copy_text}, the ceiling for these bandwidth-bound steps. GB/s "
                 f"counts a step's minimum bytes (each input read once, the output written once) over its time, not "
                 f"measured DRAM traffic: a kernel whose output is still in L2 when it ends has not written it to DRAM "
                 f"yet, so a piece can exceed 100% of copy; DRAM bytes ÷ minimum is what Nsight Compute counted at "
                 f"DRAM for the step's kernels (`make profile`, one run, `plots/data/<gpu>-metrics.csv`) over those "
                 f"minimum bytes: under 1 where an output was still in L2 at the end. The library's GB/s "
                 f"is the same bytes over its time. × library is the library's time over the step's; × first of its "
                 f"kind the first step of that kind's time over the step's.{floor}{torch_note} {out.generated()}"),
        "",
        headline_table(chapters, torch_rows, out.metrics),
        "",
        *out.image_links(images),
    ])


def summary(head: list[Row], torch_rows: list[Row], problem: str) -> list[str]:
    """README's summary row: the last chapter (the whole layer, when a step computes it) against its
    library baseline and the PyTorch rows, and its share of the copy speed over its minimum bytes."""
    last = ([r for r in head if kind_of(r) == "layer"] or head)[-1]
    names = {"torch_layer": "PyTorch", "pyg_gcnconv": "PyTorch Geometric"}
    others = [(names[t.chapter], t.time_ms_median / last.time_ms_median) for t in torch_rows if kind_of(t) == kind_of(last)]
    lib = last.baseline.split(" (")[0]
    return [fmt.label(last), ", ".join([lib] + [n for n, _ in others]),
            ", ".join(f"{x:.2f}× {n}" for n, x in [(lib, last.ratio_to_baseline)] + others) + f" on {problem}",
            f"{fmt.pct(last.copy_ratio)} of the copy speed over its minimum bytes (one graph)"]


def outputs(rows: list[Row], prec: str, out: Outputs) -> list[Path]:
    """The Part III charts and tables (FP64, prec); the README block and the chapters' blocks go to
    out. Returns the charts written."""
    problem, head, torch_rows = gcn_head(results.latest(rows))
    if not head:
        raise CsvError(f"{out.csv_name}: no Part III chapter rows (part gcn) at {problem or 'any problem'}: "
                       f"the PyTorch rows alone have nothing to compare with")
    libs = gcn_libraries(head)
    images = out.pngs(SECTIONS[prec], "speedup", "bandwidth", "layer")
    speedup_chart(head, libs, problem, images[0])
    bandwidth_chart(head, libs, problem, images[1])
    if not layer_chart(head, torch_rows, libs, problem, images[2]):
        print(f"note: no layer rows (a step with OP layer, or PyTorch) at {problem}: no {images[2].name}")
        images.pop()
    print(headline_table(head, torch_rows, out.metrics))
    if out.readme:
        out.block(SECTIONS[prec], readme_block(problem, head, torch_rows, libs, images, out))
        out.end(SECTIONS[prec], *summary(head, torch_rows, problem))
    for r in head:
        out.chapter([r], chapter_table(r))
    return images


# ----------------------------------------------------------------------------------------------
# bench.py: each step once at its default problem (the default graph and features: no problem
# flags); the binary names the graph in its row.

def bench(runner: Runner, step: dict) -> None:
    tag = f"{step['name']:<28} default graph"
    row, secs = runner.run(step, None, tag, [], [])
    if row is None:
        return
    copy = float(row.get("copy_gbps") or 0)
    of_copy = f"{100 * float(row['gbps']) / copy:5.1f}% of copy" if copy > 0 else "no copy bandwidth"
    print(f"  {step['name']:<28} {row['problem']:<24} {float(row['gbps']):7.1f} GB/s  {of_copy}  "
          f"{100 * float(row['ratio_to_baseline']):6.1f}% of {row['baseline']}  median "
          f"{fmt.ms(float(row['time_ms_median']))} ms  verified: {row['verified']}  ({secs:.0f} s)")
