"""Part I, GEMM: the problems its steps run, its tables, charts and README blocks, in FP32 and in TF32.

An FP32 row compares against cuBLAS FP32 (no TF32); a TF32 row (chapters 11 and 12 on the tensor
cores, the cuBLAS TF32 baseline) against cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32), with cuBLAS FP32
timed there too as its second baseline (alt_baseline): what the tensor cores buy over the CUDA cores;
its pct_of_peak is of the TF32 tensor-core peak. Every process times its library; the tables compare
with the library's best median over the processes that timed it on the problem (results.references).
Each precision has charts and a README section of its own (Math); where cuBLAS FP32 appears on a
TF32 chart it is drawn hatched or dotted in grey and named as the FP32 reference.

Outputs (outputs): <slug>-<section>-{speedup,sweep,roofline}.png and -suite.png (chapter 10's suite
of small and odd problems, when a chapter ran all of it); README.md's block; each chapter's table
over the sweep and the suite, with the table of its candidate plans where it plans each problem
(<slug>-plans.csv, written by bench.py with --explain).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from . import charts, fmt, results
from .baselines import Baselines
from .markdown import Outputs, preamble, row as md_row
from .results import CsvError, Row, geomean, is_chapter, step_order
from .runner import Runner, has_tag, row_precision, vs_alt

HEADLINE_MNK = (4096, 4096, 4096)
# The size sweep, every GEMM step: 256 to 8192, with odd sizes next to the headline (not multiples
# of any tile).
SWEEP = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4095, 4095, 4095),
         (4097, 4093, 4099), (6144, 6144, 6144), (8192, 8192, 8192)]
# The small-and-odd-problem suite of chapter 10: squares, deep K, narrow N and an odd shape; every
# step declared with TAGS suite runs it (chapter 10, the steps around it and the library baselines),
# so they compare.
SUITE = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
         (1024, 1024, 16384), (16384, 128, 4096), (127, 8191, 2049)]


def mnk_name(mnk) -> str:
    return "x".join(str(x) for x in mnk)


HEADLINE = mnk_name(HEADLINE_MNK)  # the `problem` column's name for it
SUITE_NAMES = [mnk_name(x) for x in SUITE]
FP32, TF32 = "FP32", "TF32"
FP32_REF_COLOUR, FP32_REF_HATCH = "#b0b0b0", "xx"
TF32_LIB_COLOUR = "#3a3a3a"


@dataclass(frozen=True)
class Math:
    """What a precision changes in the GEMM outputs: the README section (and the charts' names), the
    library each step is timed against as the tables and the charts name it, the arithmetic roof,
    and the charts' titles."""
    name: str
    section: str
    library: str
    chart_library: str
    peak: str
    sweep_title: str
    roofline_title: str
    suite_title: str


MATHS = {
    FP32: Math(FP32, "gemm", "cuBLAS", "cuBLAS FP32", "FP32 FMA peak", "SGEMM throughput against size",
               "SGEMM roofline: every step at every swept size",
               "SGEMM small and odd problems: % of cuBLAS FP32 (no TF32), its best median over the processes"),
    TF32: Math(TF32, "gemm-tf32", "cuBLAS TF32", "cuBLAS TF32", "TF32 tensor-core peak",
               "GEMM in TF32 on the tensor cores: throughput against size\n"
               "(dotted grey: cuBLAS FP32, no TF32, the FP32 reference)",
               "GEMM in TF32 roofline: every TF32 step at every swept size,\nunder the TF32 tensor-core roof",
               "GEMM in TF32 on the tensor cores, small and odd problems: % of cuBLAS TF32, its best median over the processes"),
}
SECTIONS = {prec: m.section for prec, m in MATHS.items()}  # the precisions with outputs of their own


# ----------------------------------------------------------------------------------------------
# Which steps do what

def runs_suite(step: dict) -> bool:
    """Whether bench.py runs a manifest step on chapter 10's suite: its tags say `suite`."""
    return has_tag(step, "suite")


def plans(step: dict) -> bool:
    """Whether a manifest step chooses a plan per problem (tag `planned`): bench.py then times every
    candidate plan with --explain."""
    return has_tag(step, "planned")


def problem_sort_key(problem: str):
    m, n, k = (int(x) for x in problem.split("x"))
    return (m * n * k, m, n, k)


def headline_rows(latest: dict) -> list[Row]:
    """One row per step at the headline size, in reading order."""
    rows = [r for (_, p), r in latest.items() if p == HEADLINE]
    order = step_order(rows)
    return sorted(rows, key=lambda r: order.index(r.chapter))


def references(latest: dict) -> dict[str, Baselines]:
    """Problem -> the TF32 rows' libraries there: main cuBLAS TF32, alt cuBLAS FP32 (the FP32 reference)."""
    rows = list(latest.values())
    return {p: Baselines([r for r in rows if r.problem == p]) for p in dict.fromkeys(r.problem for r in rows)}


def fp32_ref_label(ref: Baselines) -> str:
    return f"{ref.alt.name}: FP32 reference (CUDA cores, not TF32)"


def odd_sizes_text() -> str:
    """The sweep's odd sizes (no multiple of 32), as the README names them: '4095³ and 4097×4093×4099'."""
    odd = [f"{m}³" if m == n == k else f"{m}×{n}×{k}" for m, n, k in SWEEP if m % 32 or n % 32 or k % 32]
    return " and ".join(odd) if len(odd) < 3 else ", ".join(odd[:-1]) + " and " + odd[-1]


# ----------------------------------------------------------------------------------------------
# Tables

def headline_table(rows: list[Row], m: Math, ref: Baselines | None = None) -> str:
    """At the headline size: each step's time, TFLOP/s, % of the library at its best and × the
    previous step; in FP32 also × step 01; in TF32 also % of the TF32 peak and × cuBLAS FP32, then
    cuBLAS FP32 as the reference (its best over the processes)."""
    tf32 = m.name == TF32
    extra = ["% of TF32 peak", "× cuBLAS FP32"] if tf32 else []
    last = [] if tf32 else ["× step 01"]
    lines = [md_row(["step", "time (ms), median [min, max]", "TFLOP/s", f"% of {m.library}", *extra, "× previous step",
                     *last, "verified"]),
             "|---|---|---:|---:|" + "---:|" * (len(extra) + 1 + len(last)) + ":-:|"]
    chapters = [r for r in rows if r.is_chapter]
    first = chapters[0] if chapters else None
    prev = None
    for r in rows:
        vs_prev = fmt.num(prev.time_ms_median / r.time_ms_median) if r.is_chapter and prev else "–"
        prev = r if r.is_chapter else prev
        cells = [fmt.label(r), fmt.timing(r), f"{r.tflops:.2f}", fmt.pct(r.ratio_to_baseline)]
        if tf32:
            cells += [f"{r.pct_of_peak:.1f}%", fmt.num(r.alt_ratio)]
        cells.append(vs_prev)
        if not tf32:
            cells.append(f"{first.time_ms_median / r.time_ms_median:.1f}" if first else "–")
        lines.append(md_row(cells + [r.verified]))
    if tf32 and ref.alt.has:
        lines.append(f"| {fp32_ref_label(ref)} | {fmt.ms(ref.alt.ms)} | {ref.alt.tflops:.2f} "
                     f"| {fmt.pct(ref.main.ms / ref.alt.ms)} | – | 1.00 | – | – |")
    return "\n".join(lines)


def chapter_table(rows: list[Row], m: Math) -> str:
    """One chapter's rows over the sweep and the suite, against the library (TF32: and cuBLAS FP32)
    at its best over the processes, and the peak of its precision; the plan where it chooses one."""
    tf32 = m.name == TF32
    plans = any(r.config for r in rows)
    extra = ["cuBLAS FP32 (ms)", "× cuBLAS FP32"] if tf32 else []
    lines = [md_row(["problem (M×N×K)", "time (ms), median [min, max]", "TFLOP/s", f"{m.library} (ms)",
                     f"% of {m.library}", f"% of {m.name} peak", *extra, *(["plan"] if plans else []), "verified"]),
             "|---|---|" + "---:|" * (4 + len(extra)) + ("---|" if plans else "") + ":-:|"]
    for r in sorted(rows, key=lambda r: problem_sort_key(r.problem)):
        cells = [fmt.problem(r.problem), fmt.timing(r), f"{r.tflops:.2f}", fmt.ms(r.baseline_time_ms),
                 fmt.pct(r.ratio_to_baseline), f"{r.pct_of_peak:.1f}%"]
        if tf32:
            cells += [fmt.ms(r.alt_baseline_time_ms), fmt.num(r.alt_ratio)]
        lines.append(md_row(cells + ([r.config] if plans else []) + [r.verified]))
    if not tf32:
        return "\n".join(lines)
    base = Baselines(rows)
    names = f"\"cuBLAS TF32\" is {base.main.name}" + (f"; \"cuBLAS FP32\" is {base.alt.name}, on the CUDA cores"
                                                     if base.alt.name else "")
    return (f"TF32 on the tensor cores (A and B rounded to TF32, products summed in FP32), checked against true FP32 "
            f"with the TF32 tolerance. {names}; each the best median over the processes that timed it on the problem "
            f"(the step's own and the other TF32 steps'). % of TF32 peak is of the "
            f"dense TF32 tensor-core peak.\n\n" + "\n".join(lines))


def suite_steps(latest: dict) -> list[str]:
    """The chapters whose rows say they run the suite (tag `suite`) with a row for every suite problem,
    in reading order."""
    return [c for c in step_order(latest.values())
            if is_chapter(c) and all((c, p) in latest for p in SUITE_NAMES)
            and latest[(c, SUITE_NAMES[0])].has_tag("suite")]


def suite_table(latest: dict, m: Math) -> str:
    """Per suite problem: each chapter's % of the library at its best over the processes, the planning
    chapter's plan; the geometric mean last. Empty when no chapter ran the whole suite."""
    steps = suite_steps(latest)
    if not steps:
        return ""
    lib = m.library
    planner = next((c for c in reversed(steps) if any(latest[(c, p)].config for p in SUITE_NAMES)), None)
    head = f"| problem (M×N×K) | {lib} (ms) | " + " | ".join(f"{c[:2]}: % of {lib}" for c in steps) + " |"
    head += f" {planner[:2]}: plan |" if planner else ""
    lines = [head, "|---|---:|" + "---:|" * len(steps) + ("---|" if planner else "")]
    for p in SUITE_NAMES:
        last = latest[(steps[-1], p)]
        cells = " | ".join(fmt.pct(latest[(c, p)].ratio_to_baseline) for c in steps)
        plan = f" {latest[(planner, p)].config} |" if planner else ""
        lines.append(f"| {fmt.problem(p)} | {fmt.ms(last.baseline_time_ms)} | {cells} |{plan}")
    means = " | ".join(f"**{fmt.pct(geomean([latest[(c, p)].ratio_to_baseline for p in SUITE_NAMES]))}**"
                       for c in steps)
    lines.append(f"| geometric mean | | {means} |" + (" |" if planner else ""))
    return "\n".join(lines)


def summary(head: list[Row], latest: dict, m: Math) -> list[str] | None:
    """README's summary row of a precision: its last chapter at the headline size and over the suite."""
    chapters = [r for r in head if r.is_chapter]
    if not chapters:
        return None
    last = chapters[-1]
    over = "–"
    if last.chapter in suite_steps(latest):
        ratios = [latest[(last.chapter, p)].ratio_to_baseline for p in SUITE_NAMES]
        over = f"{fmt.pct(geomean(ratios))} in geometric mean over the suite of small and odd problems " \
               f"(lowest {fmt.pct(min(ratios))})"
    return [fmt.label(last), m.chart_library, f"{fmt.pct(last.ratio_to_baseline)} at {fmt.problem(HEADLINE)}", over]


def plans_table(plans: list[Row], chosen: dict[str, str]) -> str:
    """A planning chapter's candidates (--explain) per suite problem: the rule's plan and time, the
    fastest candidate, and the fastest split of each tile shape. chosen: problem -> the plan the
    step's own row ran (the rule's). Empty without rows."""
    newest: dict[tuple[str, str], Row] = {}
    for r in plans:
        key = (r.problem, r.config)
        if r.config and (key not in newest or r.timestamp >= newest[key].timestamp):
            newest[key] = r
    problems = [p for p in SUITE_NAMES if any(k[0] == p for k in newest)]
    if not problems:
        return ""
    tiles = []
    for (_, cfg) in newest:
        t = cfg.split(" split ")[0]
        if t not in tiles:
            tiles.append(t)
    tiles.sort(key=lambda t: -int(t.split("x")[0]) * int(t.split("x")[1]))
    lines = ["| problem (M×N×K) | the rule's plan | its time (µs) | fastest plan | its time (µs) | rule / fastest | "
             + " | ".join(f"best {t} (µs, split)" for t in tiles) + " |",
             "|---|---|---:|---|---:|---:|" + "---:|" * len(tiles)]
    for p in problems:
        mine = {cfg: r for (q, cfg), r in newest.items() if q == p}
        fastest = min(mine.values(), key=lambda r: r.time_ms_median)
        rule = mine.get(chosen.get(p, ""))
        rule_cells = (f"{rule.config} | {1e3 * rule.time_ms_median:.1f} | {fastest.config} | "
                      f"{1e3 * fastest.time_ms_median:.1f} | {rule.time_ms_median / fastest.time_ms_median:.3f}"
                      if rule else f"– | – | {fastest.config} | {1e3 * fastest.time_ms_median:.1f} | –")
        best = []
        for t in tiles:
            cands = [r for cfg, r in mine.items() if cfg.split(" split ")[0] == t]
            b = min(cands, key=lambda r: r.time_ms_median) if cands else None
            best.append(f"{1e3 * b.time_ms_median:.1f} ({b.config.split(' split ')[1]})" if b else "–")
        lines.append(f"| {fmt.problem(p)} | {rule_cells} | " + " | ".join(best) + " |")
    return "\n".join(lines)


def sweep_table(latest: dict, refs: dict[str, Baselines]) -> str:
    """TF32 over the sweep (and the headline): each chapter's TFLOP/s and % of cuBLAS TF32, cuBLAS TF32
    and cuBLAS FP32 (each at its best over the processes), and whether every step's result at that
    size was verified."""
    sweep = [mnk_name(x) for x in SWEEP]
    if HEADLINE not in sweep:
        sweep.append(HEADLINE)
    sweep.sort(key=problem_sort_key)
    rows = list(latest.values())
    chapters = [c for c in step_order(rows) if is_chapter(c)]
    problems = [p for p in sweep if p in refs]
    if not problems:
        return ""
    lines = ["| problem (M×N×K) | " + " | ".join(f"{c[:2]}: TFLOP/s (% of cuBLAS TF32)" for c in chapters)
             + (" | " if chapters else "") + "cuBLAS TF32: TFLOP/s | cuBLAS FP32 (FP32 reference): TFLOP/s | verified |",
             "|---|" + "---:|" * len(chapters) + "---:|---:|:-:|"]
    for p in problems:
        cells = []
        for c in chapters:
            r = latest.get((c, p))
            cells.append(f"{r.tflops:.2f} ({fmt.pct(r.ratio_to_baseline)})" if r else "–")
        bad = sorted({fmt.label(r) for r in rows if r.problem == p and r.verified != "yes"})
        ok = "yes" if not bad else "no: " + ", ".join(bad)
        lines.append(f"| {fmt.problem(p)} | " + " | ".join(cells) + (" | " if cells else "")
                     + f"{fmt.num(refs[p].main.tflops)} | {fmt.num(refs[p].alt.tflops)} | {ok} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# Charts

def speedup_chart(rows: list[Row], path: Path, m: Math, ref: Baselines | None = None) -> None:
    """Bars: TFLOP/s of each step at the headline size. FP32: labels give × step 01 and % of cuBLAS.
    TF32: labels give % of cuBLAS TF32 and × cuBLAS FP32 (each at its best), cuBLAS FP32
    hatched in grey as the FP32 reference, the TF32 tensor-core peak as a dashed line."""
    names, values = [fmt.label(r) for r in rows], [r.tflops for r in rows]
    colours = [charts.STEP_COLOUR if r.is_chapter else "#7f7f7f" if m.name == FP32 else TF32_LIB_COLOUR for r in rows]
    hatches = [""] * len(rows)
    if m.name == FP32:
        chapters = [r for r in rows if r.is_chapter]
        first = chapters[0] if chapters else rows[0]
        speedups = [f"{first.time_ms_median / r.time_ms_median:.1f}× step 01" for r in rows]
        notes = [f"{s}\n{fmt.pct(r.ratio_to_baseline)} of cuBLAS" if r.is_chapter else s for s, r in zip(speedups, rows)]
        figsize, headroom, peak = (max(6.0, 1.0 + 0.9 * len(rows)), 4.5), 1.25, 0.0
        title = f"SGEMM {fmt.problem(HEADLINE)}, speedup over step 01 and % of cuBLAS FP32"
    else:
        notes = [(f"{fmt.pct(r.ratio_to_baseline)} of cuBLAS TF32\n" if r.is_chapter else "")
                 + f"{fmt.num(r.alt_ratio)}× cuBLAS FP32" for r in rows]
        if ref.alt.has:
            names.append(charts.wrap(fp32_ref_label(ref), 24))
            values.append(ref.alt.tflops)
            colours.append(FP32_REF_COLOUR)
            notes.append("FP32, for reference")
            hatches.append(FP32_REF_HATCH)
        figsize, headroom = (max(8.0, 1.0 + 1.6 * len(names)), 5.5), 1.2
        peak = max(r.peak_gflops for r in rows) / 1e3
        title = (f"GEMM {fmt.problem(HEADLINE)} in TF32 on the tensor cores\nlabels: % of cuBLAS TF32 and × cuBLAS "
                 f"FP32, each at its best over the processes; hatched grey: the FP32 reference, not TF32")
    fig, ax = charts.figure(figsize)
    bars = ax.bar(names, values, color=colours)
    for b, hatch in zip(bars, hatches):
        if hatch:
            b.set_hatch(hatch)
            b.set_edgecolor("#6f6f6f")
    charts.label_bars(ax, bars, notes, 8)
    top = max(values)
    if peak > 0:
        ax.axhline(peak, color="black", lw=1, ls="--", alpha=0.6)
        ax.annotate(f"{m.peak} {peak:.0f} TFLOP/s", (-0.4, peak), va="bottom", fontsize=8)
        top = max(top, peak)
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_ylim(0, top * headroom)
    ax.set_title(f"{title}\n{charts.suffix(rows[0])}", fontsize=10)
    charts.tilt(ax)
    charts.save(fig, path)


def sweep_chart(latest: dict, path: Path, m: Math, refs: dict[str, Baselines] | None = None) -> None:
    """TFLOP/s against problem size, one line per step; odd sizes marked. The sweep's sizes only (the
    suite's deep and narrow problems have no single size to plot against). TF32: cuBLAS FP32 (the
    FP32 reference) dotted in grey, the TF32 peak a dashed line."""
    sweep = {mnk_name(x) for x in SWEEP} | {HEADLINE}
    rows = [r for r in latest.values() if r.problem in sweep]
    fig, ax = charts.figure((8, 5) if m.name == FP32 else (10, 5.2))

    def odd(r: Row) -> bool:  # a size that is no multiple of any tile: 4095, 4097, ...
        return r.m % 32 or r.n % 32 or r.k % 32

    for name in step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: problem_sort_key(r.problem))
        even = [r for r in mine if not odd(r)]
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        line, = ax.plot([r.m for r in even], [r.tflops for r in even], label=fmt.label(mine[0]), **style)
        for r in filter(odd, mine):
            ax.plot([(r.m * r.n * r.k) ** (1 / 3)], [r.tflops], marker="x", color=line.get_color(), ms=8, mew=2)
    if m.name == TF32:
        # One row per problem for its size (any of them: the sizes are the problem's).
        at = {r.problem: r for r in sorted(rows, key=lambda r: problem_sort_key(r.problem))}
        pts = [(at[p], x.alt.tflops) for p, x in refs.items() if p in at and x.alt.tflops == x.alt.tflops]
        pts.sort(key=lambda x: problem_sort_key(x[0].problem))
        even = [(r, v) for r, v in pts if not odd(r)]
        ax.plot([r.m for r, _ in even], [v for _, v in even], color=FP32_REF_COLOUR, ls=":", marker="v", ms=4,
                label=f"{refs[HEADLINE].alt.name or 'cuBLAS FP32'}: FP32 reference\n(its best over the TF32 steps' processes)")
        for r, v in pts:
            if odd(r):
                ax.plot([(r.m * r.n * r.k) ** (1 / 3)], [v], marker="x", color=FP32_REF_COLOUR, ms=8, mew=2)
        peak = max(r.peak_gflops for r in latest.values()) / 1e3
        if peak > 0:
            ax.axhline(peak, color="black", lw=1, ls="--", alpha=0.6)
            ax.annotate(f"{m.peak} {peak:.0f} TFLOP/s", (0.02, peak), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    charts.plain(ax.yaxis)
    if m.name == TF32:
        charts.minor_labels(ax.yaxis, (2, 0.5))  # the TF32 rates lie within a decade or two of the peak
    ax.set_xlabel("problem size: M = N = K; × marks odd sizes (not multiples of 32), at (M·N·K)^(1/3)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"{m.sweep_title}\n{charts.suffix(rows[0])}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    charts.save(fig, path)


def roofline_chart(latest: dict, path: Path, m: Math) -> None:
    """Each step at each size, placed by its minimum-traffic intensity under the arithmetic roof of
    its precision and the DRAM roof."""
    rows = list(latest.values())
    fig, ax = charts.figure((8, 5))
    lo, hi = charts.roofs(ax, rows, m.peak)
    for name in step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: r.intensity)
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        ax.plot([r.intensity for r in mine], [r.tflops for r in mine], label=fmt.label(mine[0]), **style)
    charts.finish_roofline(ax, lo, hi, f"{m.roofline_title}\n{charts.suffix(rows[0])}")
    charts.save(fig, path)


def suite_chart(latest: dict, path: Path, m: Math) -> bool:
    """Bars: % of the library of each chapter that ran the suite, per suite problem and their
    geometric mean, the planning chapter's plan written on its bars. False (no file) when no chapter
    ran the suite."""
    steps = suite_steps(latest)
    if not steps:
        return False
    groups = SUITE_NAMES + ["geometric mean"]
    fig, ax = charts.figure((11, 4.8))
    width = 0.8 / len(steps)
    for i, c in enumerate(steps):
        ratios = [latest[(c, p)].ratio_to_baseline for p in SUITE_NAMES]
        ratios.append(geomean(ratios))
        xs = [g + (i - (len(steps) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, [100 * r for r in ratios], width, label=fmt.label(latest[(c, SUITE_NAMES[0])]))
        charts.label_bars(ax, bars, [f"{100 * r:.0f}" for r in ratios], 7)
        configs = [latest[(c, p)].config for p in SUITE_NAMES]
        if any(configs):
            for b, cfg in zip(bars, configs):
                ax.annotate(cfg.replace(" split ", "\nsplit "), (b.get_x() + b.get_width() / 2, 4), ha="center",
                            va="bottom", fontsize=6, rotation=90, color="white")
    lib = m.chart_library
    ax.axhline(100, color="black", lw=1, ls="--")
    ax.annotate(f"{lib} (its best over the processes)", (len(groups) - 0.5, 101), ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([fmt.problem(g) for g in groups], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(f"% of {lib} (median time)")
    top = max(100 * latest[(c, p)].ratio_to_baseline for c in steps for p in SUITE_NAMES)
    ax.set_ylim(0, max(115, top * 1.12))
    ax.set_title(f"{m.suite_title}\n{charts.suffix(latest[(steps[0], SUITE_NAMES[0])])}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    charts.save(fig, path)
    return True


# ----------------------------------------------------------------------------------------------
# README blocks

def readme_text(head: list[Row], m: Math, ref: Baselines | None) -> str:
    """What the block's opening sentence says was measured, and how, in each precision."""
    lib = Baselines(head).main
    best = (f"{lib.name} at its best: the lowest median over the {lib.processes} processes that timed it at this "
            f"size (every step's and the library's own; here {fmt.ms(lib.lo)}–{fmt.ms(lib.hi)} ms), because a "
            f"library's time moves between processes more than a step's (docs/measuring.md)")
    if m.name == FP32:
        return (f"SGEMM {fmt.problem(HEADLINE)}, row-major FP32, alpha = 1, beta = 0. Each time is the median of "
                f"event-timed runs with L2 flushed before each run; % of cuBLAS compares against {best}.")
    peak = max(r.peak_gflops for r in head) / 1e3
    return (f"GEMM {fmt.problem(HEADLINE)} in **TF32** on the tensor cores: row-major FP32 in and out, A and B rounded "
            f"to TF32 (10-bit mantissa) inside the tensor cores, products summed in FP32; alpha = 1, beta = 0. Each "
            f"time is the median of event-timed runs with L2 flushed before each run. % of cuBLAS TF32 compares "
            f"against {best}; × cuBLAS FP32 is {ref.alt.name or 'cuBLAS FP32'}'s best time (the same way) over the "
            f"step's, what the tensor cores buy over the CUDA cores (its own row is the FP32 reference). % of TF32 peak is "
            f"of the dense TF32 tensor-core peak ({peak:.0f} TFLOP/s here), not the FP32 one. Every result is "
            f"checked against true FP32 with the TF32 tolerance. These rows are in no FP32 table or chart above.")


def readme_block(head: list[Row], m: Math, ref: Baselines | None, sweep: str, suite: str, images: list[Path],
                 out: Outputs) -> str:
    suite_part = ["", f"Small and odd problems (chapter 10's suite; each chapter against {m.library} at its best "
                  "over the processes that timed it on the problem):", "", suite] if suite else []
    sides = [mm for mm, _, _ in SWEEP]
    sweep_part = ["", f"Over the sweep ({min(sides)} to {max(sides)}, with the odd sizes {odd_sizes_text()}): each step's "
                  "TFLOP/s and % of cuBLAS TF32, the libraries at their best over the processes, and "
                  "whether every result at that size was verified:", "", sweep] if sweep else []
    return "\n".join([
        f"{preamble(head[0], head, readme_text(head, m, ref))} {out.generated()}",
        "",
        headline_table(head, m, ref),
        *sweep_part,
        *suite_part,
        "",
        *out.image_links(images),
    ])


def outputs(rows: list[Row], prec: str, out: Outputs) -> list[Path]:
    """The charts and tables of the GEMM rows in one precision (FP32 or TF32); their README block and
    their chapters' blocks go to out. Returns the charts written."""
    m = MATHS[prec]
    latest = results.latest(rows)
    head = headline_rows(latest)
    if not head:
        raise CsvError(f"{out.csv_name}: no {'' if prec == FP32 else 'TF32 GEMM '}rows at the headline size {HEADLINE}")
    refs = references(latest) if prec == TF32 else None
    ref = refs[HEADLINE] if refs else None
    images = out.pngs(m.section, "speedup", "sweep", "roofline")
    speedup_chart(head, images[0], m, ref)
    sweep_chart(latest, images[1], m, refs)
    roofline_chart(latest, images[2], m)
    suite_png = out.png(m.section, "suite")
    if suite_chart(latest, suite_png, m):
        images.insert(1, suite_png)
    suite = suite_table(latest, m)
    sweep = sweep_table(latest, refs) if refs else ""
    if prec == TF32:
        print("TF32 (tensor cores):")
    print(headline_table(head, m, ref))
    for table in (sweep, suite):
        if table:
            print()
            print(table)
    if out.readme:
        out.block(m.section, readme_block(head, m, ref, sweep, suite, images, out))
        if row := summary(head, latest, m):
            out.end(m.section, *row)
    for name in sorted({r.chapter for r in latest.values() if r.is_chapter}):
        mine = [r for r in latest.values() if r.chapter == name]
        body = chapter_table(mine, m)
        chosen = {r.problem: r.config for r in mine if r.config}
        table = plans_table([r for r in out.plans if r.chapter == name], chosen) if chosen else ""
        if table:
            body += ("\n\nEvery candidate plan on the suite (`--explain`, from "
                     f"`plots/data/{out.slug}-plans.csv`; median of 10 runs each):\n\n" + table)
        out.chapter(mine, body)
    return images


# ----------------------------------------------------------------------------------------------
# bench.py: the headline, the sweep, the suite where the step runs it (runs_suite), and every
# candidate plan of a planning step (plans)

def run(runner: Runner, step: dict, mnk, extra: list[str], out: Path | None = None) -> dict | None:
    m, n, k = mnk
    tag = f"{step['name']:<28} {m}x{n}x{k:<8}"
    row, secs = runner.run(step, f"{m}x{n}x{k}", tag, ["--m", str(m), "--n", str(n), "--k", str(k)], extra, out)
    if row is not None:
        plan = f"  plan {row['config']}" if row.get("config") else ""
        # A TF32 row: against cuBLAS TF32, and what the tensor cores buy over cuBLAS FP32.
        tf32 = row_precision(row) == TF32
        of = "cuBLAS TF32" if tf32 else "cuBLAS"
        alt = vs_alt(row)
        fp32 = f"  {alt:5.2f}x cuBLAS FP32" if tf32 and alt is not None else ""
        print(f"  {tag} {float(row['gflops']) / 1e3:7.2f} TFLOP/s  {100 * float(row['ratio_to_baseline']):6.1f}% of "
              f"{of}{fp32}  median {fmt.ms(float(row['time_ms_median']))} ms  verified: {row['verified']}{plan}  "
              f"({secs:.0f} s)")
    return row


def bench(runner: Runner, step: dict) -> None:
    head = run(runner, step, HEADLINE_MNK, [])
    if runner.args.headline_only or head is None:
        return
    head_ms = float(head["time_ms_median"])
    sizes = list(SWEEP)
    if runs_suite(step):
        sizes += [mnk for mnk in SUITE if mnk not in sizes and mnk != HEADLINE_MNK]
    for mnk in sizes:
        predicted_s = head_ms * 1e-3 * (mnk[0] * mnk[1] * mnk[2]) / (HEADLINE_MNK[0] * HEADLINE_MNK[1] * HEADLINE_MNK[2])
        if not runner.too_long(f"{step['name']:<28} {mnk_name(mnk):<17}", predicted_s):
            run(runner, step, mnk, runner.sweep_flags())
    if plans(step):
        # Every candidate plan of every suite problem, timed next to the rule's model (--explain):
        # one row per candidate in the plans file, and the step's own row last.
        print(f"  {step['name']}: every tile shape and split on the suite (--explain) -> {runner.plans_path}")
        for mnk in SUITE:
            run(runner, step, mnk, ["--explain", *runner.sweep_flags()], runner.plans_path)
