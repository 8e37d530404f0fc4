#!/usr/bin/env python3
"""Charts and tables from a results CSV (plots/data/<gpu-slug>.csv), nothing else.

    python plots/plot.py --csv plots/data/nvidia-h100-80gb-hbm3.csv [--part gemm|conv|gcn|all] \
        [--out-dir plots] [--readme README.md] [--chapters-dir chapters]

For each part with rows in the CSV (or the one --part names):
  gemm: <out-dir>/<slug>-gemm-{speedup,sweep,roofline}.png, and -gemm-suite.png (chapter 10's suite of
        small and odd problems, when measured), README.md's results:gemm block; a chapter that
        plans each problem also gets the table of its candidate plans from <slug>-plans.csv (next to
        the CSV, written by bench.py with --explain);
        in TF32 (the tensor-core chapters 11 and 12 and cuBLAS TF32): <slug>-gemm-tf32-{speedup,sweep,
        roofline}.png and -gemm-tf32-suite.png, README.md's results:gemm-tf32 block (the headline
        table against cuBLAS TF32 with cuBLAS FP32 as the reference, the sweep, the suite);
  conv: <out-dir>/<slug>-conv-{speedup,layers,roofline}.png, README.md's results:conv block;
        in TF32 (chapter 21): <slug>-conv-tf32-layers.png, README.md's results:conv-tf32 block (per
        layer against cuDNN with TF32 allowed, with the geometric mean);
  gcn:  <out-dir>/<slug>-gcn-{speedup,bandwidth,layer}.png (layer: when chapter 29 or a PyTorch row
        of plots/torch_gcn.py was measured), README.md's results:gcn block.
Prints the results tables and rewrites the text between the results markers of each measured
chapter's README.md (a sweep table for a GEMM chapter, a per-layer table for a convolution one,
the default graph's row for a GCN one). Parts I and II chart FP32 comparisons, Part III FP64 ones;
the TF32 rows (results.precision: their baselines' names say TF32) go to the TF32 charts and tables
and never to those, and a row in any other precision is left out; every such row is named.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results  # noqa: E402
from results import CONV_HEADLINE, HEADLINE, SUITE, SUITE_FROM, SWEEP, CsvError, Row, mnk_name  # noqa: E402

README_BEGIN = "<!-- results:gemm:begin -->"
README_END = "<!-- results:gemm:end -->"
CONV_README_BEGIN = "<!-- results:conv:begin -->"
CONV_README_END = "<!-- results:conv:end -->"
CHAPTER_BEGIN = "<!-- results:begin -->"
CHAPTER_END = "<!-- results:end -->"


class MarkerError(Exception):
    pass


def label(r: Row) -> str:
    return f"{r.chapter[:2]} {r.step}" if r.is_chapter else r.step


def title_suffix(r: Row) -> str:
    return f"{r.gpu}, CUDA {r.cuda}"


def headline_rows(latest: dict) -> list[Row]:
    """One row per step at the headline size, in reading order."""
    rows = [r for (_, p), r in latest.items() if p == HEADLINE]
    order = results.step_order(rows)
    return sorted(rows, key=lambda r: order.index(r.chapter))


# ----------------------------------------------------------------------------------------------
# Tables

def fmt_ms(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def results_table(rows: list[Row]) -> str:
    """Markdown table at the headline size: time, TFLOP/s, % of cuBLAS (same process), speedups."""
    lines = ["| step | time (ms), median [min, max] | TFLOP/s | % of cuBLAS | × previous step | × step 01 | verified |",
             "|---|---|---:|---:|---:|---:|:-:|"]
    chapters = [r for r in rows if r.is_chapter]
    first = chapters[0] if chapters else None
    prev = None
    for r in rows:
        if r.is_chapter:
            vs_prev = f"{prev.time_ms_median / r.time_ms_median:.2f}" if prev else "–"
            vs_first = f"{first.time_ms_median / r.time_ms_median:.1f}"
            prev = r
        else:
            vs_prev = "–"
            vs_first = f"{first.time_ms_median / r.time_ms_median:.1f}" if first else "–"
        lines.append(f"| {label(r)} | {fmt_ms(r.time_ms_median)} [{fmt_ms(r.time_ms_min)}, {fmt_ms(r.time_ms_max)}] "
                     f"| {r.tflops:.2f} | {100 * r.ratio_to_baseline:.1f}% | {vs_prev} | {vs_first} | {r.verified} |")
    return "\n".join(lines)


def chapter_table(rows: list[Row]) -> str:
    """One chapter's rows over the sweep (and the suite), with the plan it ran where it chooses one."""
    plans = any(r.config for r in rows)
    lines = ["| problem (M×N×K) | time (ms), median [min, max] | TFLOP/s | cuBLAS (ms) | % of cuBLAS | % of FP32 peak | "
             + ("plan | " if plans else "") + "verified |",
             "|---|---|---:|---:|---:|---:|" + ("---|" if plans else "") + ":-:|"]
    for r in sorted(rows, key=lambda r: results.problem_sort_key(r.problem)):
        plan = f" {r.config} |" if plans else ""
        lines.append(f"| {r.problem.replace('x', '×')} | {fmt_ms(r.time_ms_median)} [{fmt_ms(r.time_ms_min)}, "
                     f"{fmt_ms(r.time_ms_max)}] | {r.tflops:.2f} | {fmt_ms(r.baseline_time_ms)} | "
                     f"{100 * r.ratio_to_baseline:.1f}% | {r.pct_of_peak:.1f}% |{plan} {r.verified} |")
    return "\n".join(lines)


def tf32_chapter_table(rows: list[Row]) -> str:
    """A TF32 chapter's rows over the sweep and the suite: against cuBLAS TF32 and cuBLAS FP32, both
    timed in its own process, and the TF32 tensor-core peak; the plan where it chooses one."""
    plans = any(r.config for r in rows)
    newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
    base = _most_common([r.baseline for r in newest_first])
    alt = _most_common([r.alt_baseline for r in newest_first if r.alt_baseline])
    lines = ["| problem (M×N×K) | time (ms), median [min, max] | TFLOP/s | cuBLAS TF32 (ms) | % of cuBLAS TF32 "
             "| % of TF32 peak | cuBLAS FP32 (ms) | × cuBLAS FP32 | " + ("plan | " if plans else "") + "verified |",
             "|---|---|---:|---:|---:|---:|---:|---:|" + ("---|" if plans else "") + ":-:|"]
    for r in sorted(rows, key=lambda r: results.problem_sort_key(r.problem)):
        plan = f" {r.config} |" if plans else ""
        fp32 = fmt_ms4(r.alt_baseline_time_ms) if r.alt_baseline_time_ms is not None else "–"
        lines.append(f"| {r.problem.replace('x', '×')} | {fmt_ms4(r.time_ms_median)} [{fmt_ms4(r.time_ms_min)}, "
                     f"{fmt_ms4(r.time_ms_max)}] | {r.tflops:.2f} | {fmt_ms4(r.baseline_time_ms)} | "
                     f"{pct(r.ratio_to_baseline)} | {r.pct_of_peak:.1f}% | {fp32} | {times(r.alt_ratio)} |{plan} "
                     f"{r.verified} |")
    names = f"\"cuBLAS TF32\" is {base}" + (f"; \"cuBLAS FP32\" is {alt}, on the CUDA cores" if alt else "")
    return (f"TF32 on the tensor cores (A and B rounded to TF32, products summed in FP32), checked against true FP32 "
            f"with the TF32 tolerance. {names}; both timed in the same process as the step. % of TF32 peak is of the "
            f"dense TF32 tensor-core peak.\n\n" + "\n".join(lines))


# ----------------------------------------------------------------------------------------------
# Chapter 10's suite of small and odd problems: every chapter from SUITE_FROM on, against cuBLAS
# timed in its own process.

SUITE_NAMES = [mnk_name(x) for x in SUITE]


def suite_steps(latest: dict) -> list[str]:
    """The chapters from SUITE_FROM on with a row for every suite problem, in reading order."""
    rows = list(latest.values())
    return [c for c in results.step_order(rows)
            if results.is_chapter(c) and int(c[:2]) >= SUITE_FROM
            and all((c, p) in latest for p in SUITE_NAMES)]


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def suite_table(latest: dict, lib: str = "cuBLAS") -> str:
    """Per suite problem: each chapter's % of the library (cuBLAS, or cuBLAS TF32 for the TF32 rows; in
    the chapter's own process), the planning chapter's plan; the geometric mean last. Empty when no
    chapter ran the whole suite."""
    steps = suite_steps(latest)
    if not steps:
        return ""
    planner = next((c for c in reversed(steps) if any(latest[(c, p)].config for p in SUITE_NAMES)), None)
    head = f"| problem (M×N×K) | {lib} (ms) | " + " | ".join(f"{c[:2]}: % of {lib}" for c in steps) + " |"
    head += f" {planner[:2]}: plan |" if planner else ""
    lines = [head, "|---|---:|" + "---:|" * len(steps) + ("---|" if planner else "")]
    for p in SUITE_NAMES:
        last = latest[(steps[-1], p)]
        cells = " | ".join(f"{100 * latest[(c, p)].ratio_to_baseline:.1f}%" for c in steps)
        plan = f" {latest[(planner, p)].config} |" if planner else ""
        lines.append(f"| {p.replace('x', '×')} | {last.baseline_time_ms:.4g} | {cells} |{plan}")
    means = " | ".join(f"**{100 * geomean([latest[(c, p)].ratio_to_baseline for p in SUITE_NAMES]):.1f}%**"
                       for c in steps)
    lines.append(f"| geometric mean | | {means} |" + (" |" if planner else ""))
    return "\n".join(lines)


SUITE_TITLE = "SGEMM small and odd problems: % of cuBLAS FP32 (no TF32) timed in the same process"


def suite_chart(latest: dict, path: Path, lib: str = "cuBLAS FP32", title: str = SUITE_TITLE) -> bool:
    """Bars: % of the library (cuBLAS FP32; cuBLAS TF32 for the TF32 rows) of each chapter from
    SUITE_FROM on, per suite problem and their geometric mean, the planning chapter's plan written on
    its bars. False (no file) when no chapter ran the suite."""
    steps = suite_steps(latest)
    if not steps:
        return False
    groups = SUITE_NAMES + ["geometric mean"]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / len(steps)
    for i, c in enumerate(steps):
        ratios = [latest[(c, p)].ratio_to_baseline for p in SUITE_NAMES]
        ratios.append(geomean(ratios))
        xs = [g + (i - (len(steps) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, [100 * r for r in ratios], width, label=label(latest[(c, SUITE_NAMES[0])]))
        for b, r in zip(bars, ratios):
            ax.annotate(f"{100 * r:.0f}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                        fontsize=7)
        configs = [latest[(c, p)].config for p in SUITE_NAMES]
        if any(configs):
            for b, cfg in zip(bars, configs):
                ax.annotate(cfg.replace(" split ", "\nsplit "), (b.get_x() + b.get_width() / 2, 4), ha="center",
                            va="bottom", fontsize=6, rotation=90, color="white")
    ax.axhline(100, color="black", lw=1, ls="--")
    ax.annotate(f"{lib} (same process)", (len(groups) - 0.5, 101), ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g.replace("x", "×") for g in groups], rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(f"% of {lib} (median time)")
    top = max(100 * latest[(c, p)].ratio_to_baseline for c in steps for p in SUITE_NAMES)
    ax.set_ylim(0, max(115, top * 1.12))
    r0 = latest[(steps[0], SUITE_NAMES[0])]
    ax.set_title(f"{title}\n{title_suffix(r0)}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


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
        lines.append(f"| {p.replace('x', '×')} | {rule_cells} | " + " | ".join(best) + " |")
    return "\n".join(lines)


def replace_between(text: str, begin: str, end: str, body: str, where: str) -> str:
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0 or j < i:
        raise MarkerError(f"{where}: markers {begin} ... {end} not found")
    return text[: i + len(begin)] + "\n" + body.strip("\n") + "\n" + text[j:]


# ----------------------------------------------------------------------------------------------
# Charts

def speedup_chart(rows: list[Row], path: Path) -> None:
    """Bars: TFLOP/s of each step at the headline size; labels give × step 01 and % of cuBLAS."""
    chapters = [r for r in rows if r.is_chapter]
    first = chapters[0] if chapters else rows[0]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 0.9 * len(rows)), 4.5))
    colors = ["#4C72B0" if r.is_chapter else "#7f7f7f" for r in rows]
    bars = ax.bar([label(r) for r in rows], [r.tflops for r in rows], color=colors)
    for b, r in zip(bars, rows):
        speedup = f"{first.time_ms_median / r.time_ms_median:.1f}× step 01"
        text = f"{speedup}\n{100 * r.ratio_to_baseline:.1f}% of cuBLAS" if r.is_chapter else speedup
        ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_ylim(0, max(r.tflops for r in rows) * 1.25)
    ax.set_title(f"SGEMM {HEADLINE.replace('x', '×')}, speedup over step 01 and % of cuBLAS FP32\n{title_suffix(rows[0])}",
                 fontsize=10)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sweep_chart(latest: dict, path: Path, title: str = "SGEMM throughput against size",
                reference: tuple[str, dict[str, float]] | None = None,
                peak: tuple[str, float] | None = None, figsize: tuple[float, float] = (8, 5)) -> None:
    """TFLOP/s against problem size, one line per step; odd sizes marked. The sweep's sizes only (the
    suite's deep and narrow problems have no single size to plot against). reference: (label, problem ->
    TFLOP/s), a series drawn dotted in grey (the TF32 chart's cuBLAS FP32); peak: (label, TFLOP/s), a
    dashed line."""
    sweep = {mnk_name(x) for x in SWEEP} | {HEADLINE}
    rows = [r for r in latest.values() if r.problem in sweep]
    fig, ax = plt.subplots(figsize=figsize)
    def odd(r: Row) -> bool:  # a size that is no multiple of any tile: 4095, 4097, ...
        return r.m % 32 or r.n % 32 or r.k % 32

    for name in results.step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: results.problem_sort_key(r.problem))
        even = [r for r in mine if not odd(r)]
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        line, = ax.plot([r.m for r in even], [r.tflops for r in even], label=label(mine[0]), **style)
        for r in filter(odd, mine):
            ax.plot([(r.m * r.n * r.k) ** (1 / 3)], [r.tflops], marker="x", color=line.get_color(), ms=8, mew=2)
    if reference:
        # One row per problem for its size (any of them: the sizes are the problem's).
        at = {r.problem: r for r in sorted(rows, key=lambda r: results.problem_sort_key(r.problem))}
        pts = [(at[p], v) for p, v in reference[1].items() if p in at and v == v]
        pts.sort(key=lambda x: results.problem_sort_key(x[0].problem))
        even = [(r, v) for r, v in pts if not odd(r)]
        ax.plot([r.m for r, _ in even], [v for _, v in even], color=FP32_REF_COLOUR, ls=":", marker="v", ms=4,
                label=reference[0])
        for r, v in pts:
            if odd(r):
                ax.plot([(r.m * r.n * r.k) ** (1 / 3)], [v], marker="x", color=FP32_REF_COLOUR, ms=8, mew=2)
    if peak and peak[1] > 0:
        ax.axhline(peak[1], color="black", lw=1, ls="--", alpha=0.6)
        ax.annotate(f"{peak[0]} {peak[1]:.0f} TFLOP/s", (0.02, peak[1]), xycoords=("axes fraction", "data"),
                    va="bottom", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    if peak:
        # The TF32 rates lie within a decade or two of the peak: the minor ticks get plain labels too.
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    ax.set_xlabel("problem size: M = N = K; × marks odd sizes (not multiples of 32), at (M·N·K)^(1/3)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"{title}\n{title_suffix(rows[0])}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def roofline_chart(latest: dict, path: Path, title: str = "SGEMM roofline: every step at every swept size",
                   peak_name: str = "FP32 FMA peak") -> None:
    """Each step at each size, placed by its minimum-traffic intensity under the arithmetic roof (the
    rows' peak: FP32 FMA, or the TF32 tensor cores for the TF32 rows) and the DRAM roof."""
    rows = list(latest.values())
    fig, ax = plt.subplots(figsize=(8, 5))
    lo, hi = roofs(ax, rows, peak_name)
    for name in results.step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: r.intensity)
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        ax.plot([r.intensity for r in mine], [r.tflops for r in mine], label=label(mine[0]), **style)
    finish_roofline(ax, lo, hi, f"{title}\n{title_suffix(rows[0])}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def roofs(ax, rows: list[Row], peak_name: str = "FP32 FMA peak") -> tuple[float, float]:
    """The arithmetic (FP32 FMA, or the rows' own: peak_name) and DRAM roofs from the rows' peaks, over
    an x range that holds every row; returns it."""
    peak = max(r.peak_gflops for r in rows) / 1e3
    bw = max(r.peak_gbps for r in rows) / 1e3  # TB/s
    xs = [r.intensity for r in rows if r.gbps > 0]
    lo, hi = min(xs + [1.0]) / 2, max(xs + [100.0]) * 2
    if peak > 0 and bw > 0:
        ridge = peak / bw
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], color="black", lw=1.5)
        ax.annotate(f"{peak_name} {peak:.1f} TFLOP/s", (hi, peak), ha="right", va="bottom", fontsize=8)
        ax.annotate(f"DRAM {bw:.2f} TB/s (ridge at {ridge:.0f} FLOP/B)", (max(lo, ridge / 30), bw * max(lo, ridge / 30)),
                    rotation=0, va="bottom", fontsize=8)
    return lo, hi


def finish_roofline(ax, lo: float, hi: float, title: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel("arithmetic intensity, FLOP per byte of minimum DRAM traffic")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))


# ----------------------------------------------------------------------------------------------

def readme_block(rows: list[Row], images: list[Path], readme: Path, csv_name: str, suite: str = "") -> str:
    r0 = rows[0]
    dates = sorted(r.timestamp for r in rows)
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    suite_part = ["", "Small and odd problems (chapter 10's suite; each chapter against cuBLAS in its own process):",
                  "", suite] if suite else []
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {dates[-1][:10]}; SGEMM {HEADLINE.replace('x', '×')}, row-major FP32, "
        f"alpha = 1, beta = 0. Each time is the median of event-timed runs with L2 flushed before each run; "
        f"% of cuBLAS compares against cuBLAS FP32 (no TF32) timed in the same process. "
        f"Generated by `make tutorial` from `plots/data/{csv_name}`.",
        "",
        results_table(rows),
        *suite_part,
        "",
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


# ----------------------------------------------------------------------------------------------
# Part II: convolution. Every conv row carries two baselines, timed in the step's process. A
# convolution step's (13-19): baseline = the fastest of the FMA algorithms cuDNN's search returns,
# each timed by the harness (named in parentheses), alt_baseline = IMPLICIT_PRECOMP_GEMM, the same
# method as the steps. The fused-epilogue step's (20, conv + bias + ReLU): baseline = cuDNN's fused
# conv+bias+ReLU, alt_baseline = the unfused pipeline (step 19, then a separate bias/ReLU kernel).
# The layers' cuDNN baselines come from the convolution steps' rows only.

LAYER_STEPS_FROM = 17  # the per-layer chart and table show the tiled steps, 17 onwards
PRECOMP_COLOUR, FASTEST_COLOUR = "#7f7f7f", "#3a3a3a"
# A convolution step's bar; the fused-epilogue step's, hatched: it does more work than the others.
STEP_COLOUR, FUSED_COLOUR, FUSED_HATCH = "#4C72B0", "#8172B3", "//"
EPILOGUE_NOTE = "(+ bias, ReLU)"


def conv_label(r: Row) -> str:
    """label(r), and for the fused-epilogue step a note that it does more than the convolution."""
    return f"{label(r)} {EPILOGUE_NOTE}" if results.is_fused_epilogue(r) else label(r)


def fused_short(r: Row) -> str:
    """A fused-epilogue row's baseline, short: 'cuDNN fused' (else its name without the parenthesis)."""
    return "cuDNN fused" if r.baseline.startswith("cuDNN fused") else results.baseline_family(r.baseline)[0]


def unfused_short(r: Row) -> str:
    """A fused-epilogue row's unfused pipeline, short: '19 + separate kernel' (else its name)."""
    ch = results.unfused_chapter(r)
    return f"{ch[:2]} + separate kernel" if ch else r.alt_baseline


class ConvBaselines:
    """The two cuDNN baselines of one layer, summarized over the processes (one per convolution step)
    that timed them: the median of their times, and the algorithm most of them named. Built from the
    layer's rows; those of the fused-epilogue step are left out (results.conv_baseline_rows). A layer
    that only the fused-epilogue step ran has no baselines here (has_fastest is False)."""

    def __init__(self, rows: list[Row]):
        layer_rows = sorted(rows, key=lambda r: r.timestamp, reverse=True)
        rows = results.conv_baseline_rows(rows)
        newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
        self.row = (newest_first or layer_rows)[0]  # for the layer's FLOPs and intensity
        self.processes = len(rows)
        with_alt = [r for r in rows if r.alt_baseline_time_ms is not None]
        self.precomp_name = _most_common([r.alt_baseline for r in newest_first if r.alt_baseline])
        self.precomp_ms = results.median([r.alt_baseline_time_ms for r in with_alt])
        families = [results.baseline_family(r.baseline) for r in newest_first]
        self.fastest_family = _most_common([f for f, _ in families])
        self.fastest_algo = _most_common([a for _, a in families])
        self.fastest_ms = results.median([r.baseline_time_ms for r in rows])

    @property
    def has_fastest(self) -> bool:
        return self.fastest_ms == self.fastest_ms

    @property
    def has_precomp(self) -> bool:
        return bool(self.precomp_name) and self.precomp_ms == self.precomp_ms

    @property
    def precomp_tflops(self) -> float:
        return self.row.tflops_at(self.precomp_ms) if self.has_precomp else float("nan")

    @property
    def fastest_tflops(self) -> float:
        return self.row.tflops_at(self.fastest_ms) if self.has_fastest else float("nan")

    @property
    def fastest_label(self) -> str:
        return f"{self.fastest_family} ({self.fastest_algo})" if self.fastest_algo else self.fastest_family


def _most_common(xs: list[str]) -> str:
    """The most frequent value; among equals, the first (callers pass the newest first)."""
    if not xs:
        return ""
    return max(dict.fromkeys(xs), key=xs.count)


def conv_baselines(latest: dict) -> dict[str, ConvBaselines]:
    """Layer -> its baselines, in the layers' order."""
    rows = list(latest.values())
    return {layer: ConvBaselines([r for r in rows if r.problem == layer]) for layer in results.problem_order(rows)}


def conv_headline_rows(latest: dict) -> list[Row]:
    rows = [r for (_, p), r in latest.items() if p == CONV_HEADLINE]
    order = results.step_order(rows)
    return sorted(rows, key=lambda r: order.index(r.chapter))


def fmt_ms_conv(x: float) -> str:
    """Like fmt_ms, with one more digit under 1 ms (the small layers run in tenths of a millisecond)."""
    return f"{x:.4f}" if x < 1 else fmt_ms(x)


def pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def tf(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def gemm_dims(r: Row) -> str:
    return f"{r.m}×{r.n}×{r.k}"


def conv_results_table(rows: list[Row], base: ConvBaselines) -> str:
    """Markdown table at the headline layer: every step, then the two cuDNN baselines. The fused-epilogue
    step's two % cells compare it with its own baselines, and say which."""
    lines = ["| step | time (ms), median [min, max] | TFLOP/s | % of cuDNN precomp | % of cuDNN fastest "
             f"| × previous step | × step {rows[0].chapter[:2]} | verified |",
             "|---|---|---:|---:|---:|---:|---:|:-:|"]
    first = rows[0]
    prev = None
    for r in rows:
        vs_prev = f"{prev.time_ms_median / r.time_ms_median:.2f}" if prev else "–"
        prev = r
        if results.is_fused_epilogue(r):
            vs_alt = f"{pct(r.alt_ratio)} of {unfused_short(r)}" if r.alt_baseline else "–"
            vs_base = f"{pct(r.ratio_to_baseline)} of {fused_short(r)}"
        else:
            vs_alt, vs_base = pct(r.alt_ratio), pct(r.ratio_to_baseline)
        lines.append(f"| {conv_label(r)} | {fmt_ms_conv(r.time_ms_median)} [{fmt_ms_conv(r.time_ms_min)}, {fmt_ms_conv(r.time_ms_max)}] "
                     f"| {r.tflops:.2f} | {vs_alt} | {vs_base} | {vs_prev} "
                     f"| {first.time_ms_median / r.time_ms_median:.1f} | {r.verified} |")
    if not base.has_fastest:
        return "\n".join(lines)
    if base.has_precomp:
        lines.append(f"| {base.precomp_name} | {fmt_ms_conv(base.precomp_ms)} | {base.precomp_tflops:.2f} | 100.0% "
                     f"| {pct(base.fastest_ms / base.precomp_ms)} | – | {first.time_ms_median / base.precomp_ms:.1f} | – |")
    lines.append(f"| {base.fastest_label} | {fmt_ms_conv(base.fastest_ms)} | {base.fastest_tflops:.2f} "
                 f"| {pct(base.precomp_ms / base.fastest_ms) if base.has_precomp else '–'} | 100.0% | – "
                 f"| {first.time_ms_median / base.fastest_ms:.1f} | – |")
    return "\n".join(lines)


def layer_steps(latest: dict) -> list[str]:
    """The steps the per-layer chart and table show: chapters LAYER_STEPS_FROM onwards."""
    return [c for c in results.step_order(latest.values())
            if results.is_chapter(c) and int(c[:2]) >= LAYER_STEPS_FROM]


def conv_layer_table(latest: dict, bases: dict[str, ConvBaselines]) -> str:
    """Layer x step, TFLOP/s, with both cuDNN baselines and the best convolution step's share of the
    fastest (the fused-epilogue step is shown, its TFLOP/s the convolution's, but not ranked)."""
    steps = layer_steps(latest)
    fused = {s for s in steps if any(results.is_fused_epilogue(r) for (c, _), r in latest.items() if c == s)}
    lines = ["| layer | GEMM M×N×K | " + " | ".join(f"step {s[:2]}" + (f" {EPILOGUE_NOTE}" if s in fused else "") for s in steps)
             + " | cuDNN precomp | cuDNN fastest (algorithm) | best step, % of cuDNN fastest |",
             "|---|---|" + "---:|" * len(steps) + "---:|---|---:|"]
    for layer, base in bases.items():
        cells, best = [], None
        for s in steps:
            r = latest.get((s, layer))
            cells.append(tf(r.tflops) if r else "–")
            if r and not results.is_fused_epilogue(r) and (best is None or r.time_ms_median < best.time_ms_median):
                best = r
        best_cell = f"{best.chapter[:2]}: {pct(best.ratio_to_baseline)}" if best else "–"
        lines.append(f"| {layer} | {gemm_dims(base.row)} | " + " | ".join(cells)
                     + f" | {tf(base.precomp_tflops)} | "
                     + (f"{base.fastest_tflops:.2f} ({base.fastest_algo or base.fastest_family})" if base.has_fastest else "–")
                     + f" | {best_cell} |")
    return "\n".join(lines)


def conv_chapter_table(rows: list[Row], order: list[str], prec: str = "FP32") -> str:
    """One convolution chapter's rows, one per layer, each against the baselines of its own process. A
    TF32 chapter's (prec "TF32") against cuDNN's TF32 baselines, named above the table."""
    if any(results.is_fused_epilogue(r) for r in rows):
        return conv_fused_chapter_table(rows, order)
    lib = "cuDNN" if prec == "FP32" else f"cuDNN {prec}"
    lines = [f"| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s | {lib} precomp (ms) | % of precomp "
             f"| {lib} fastest (ms, algorithm) | % of fastest | verified |",
             "|---|---|---|---:|---:|---:|---|---:|:-:|"]
    for r in sorted(rows, key=lambda r: order.index(r.problem)):
        precomp = fmt_ms_conv(r.alt_baseline_time_ms) if r.alt_baseline_time_ms is not None else "–"
        algo = results.baseline_family(r.baseline)[1] or r.baseline
        lines.append(f"| {r.problem} | {gemm_dims(r)} | {fmt_ms_conv(r.time_ms_median)} [{fmt_ms_conv(r.time_ms_min)}, "
                     f"{fmt_ms_conv(r.time_ms_max)}] | {r.tflops:.2f} | {precomp} | {pct(r.alt_ratio)} "
                     f"| {fmt_ms_conv(r.baseline_time_ms)} ({algo}) | {pct(r.ratio_to_baseline)} | {r.verified} |")
    if prec == "FP32":
        return "\n".join(lines)
    newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
    precomp_name = _most_common([r.alt_baseline for r in newest_first if r.alt_baseline])
    fastest = _most_common([results.baseline_family(r.baseline)[0] for r in newest_first])
    names = (f"\"precomp\" is {precomp_name}; " if precomp_name else "") + f"\"fastest\" is {fastest} (algorithm per layer)"
    return (f"{prec} on the tensor cores, against cuDNN with {prec} allowed: {names}; each timed in the same process "
            f"as the step.\n\n" + "\n".join(lines))


def conv_fused_chapter_table(rows: list[Row], order: list[str]) -> str:
    """The fused-epilogue chapter's rows, one per layer, against its two baselines of its own process:
    the library's fused conv + bias + ReLU and the unfused pipeline."""
    newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
    short = fused_short(newest_first[0])
    lines = [f"| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s (conv FLOPs) | {short} (ms) "
             f"| % of {short} | unfused (ms) | % of unfused | verified |",
             "|---|---|---|---:|---:|---:|---:|---:|:-:|"]
    for r in sorted(rows, key=lambda r: order.index(r.problem)):
        unfused = fmt_ms_conv(r.alt_baseline_time_ms) if r.alt_baseline_time_ms is not None else "–"
        lines.append(f"| {r.problem} | {gemm_dims(r)} | {fmt_ms_conv(r.time_ms_median)} [{fmt_ms_conv(r.time_ms_min)}, "
                     f"{fmt_ms_conv(r.time_ms_max)}] | {r.tflops:.2f} | {fmt_ms_conv(r.baseline_time_ms)} "
                     f"| {pct(r.ratio_to_baseline)} | {unfused} | {pct(r.alt_ratio)} | {r.verified} |")
    fused_name = _most_common([r.baseline for r in newest_first])
    unfused_name = _most_common([r.alt_baseline for r in newest_first if r.alt_baseline])
    names = f"\"{short}\" is {fused_name}" + (f"; \"unfused\" is {unfused_name}" if unfused_name else "")
    return (f"y = max(conv + bias[k], 0). {names}; each timed in the same process as the step. "
            f"TFLOP/s counts the convolution's FLOPs only.\n\n" + "\n".join(lines))


def fused_table(latest: dict) -> str:
    """Per layer, the fused-epilogue step against the convolution step it extends (its own row, the
    convolution alone), the unfused pipeline and the library's fused conv + bias + ReLU. Empty when
    no fused-epilogue step was measured."""
    fused = [r for r in latest.values() if results.is_fused_epilogue(r)]
    order = results.problem_order(latest.values())
    tables = []
    for name in results.step_order(fused):
        mine = sorted((r for r in fused if r.chapter == name), key=lambda r: order.index(r.problem))
        prev = results.unfused_chapter(mine[0]) or ""
        nn, pp = name[:2], prev[:2] or "previous"
        short = fused_short(mine[0])
        lines = [f"| layer | step {nn} (ms) | step {pp}, conv only (ms) | {pp} + separate kernel (ms) | {short} (ms) "
                 f"| {nn} over {pp} | {short} / {nn} |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for r in mine:
            plain = latest.get((results.unfused_chapter(r) or "", r.problem))
            unfused = fmt_ms_conv(r.alt_baseline_time_ms) if r.alt_baseline_time_ms is not None else "–"
            over = f"{100 * (r.time_ms_median / plain.time_ms_median - 1):+.1f}%" if plain else "–"
            lines.append(f"| {r.problem} | {fmt_ms_conv(r.time_ms_median)} | {fmt_ms_conv(plain.time_ms_median) if plain else '–'} "
                         f"| {unfused} | {fmt_ms_conv(r.baseline_time_ms)} | {over} | {r.ratio_to_baseline:.2f}× |")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


def conv_speedup_chart(rows: list[Row], base: ConvBaselines, path: Path) -> None:
    """Bars: TFLOP/s of each step at the headline layer, then the two cuDNN baselines; labels give
    × the first step and % of both baselines (each step against the baselines of its own process;
    the fused-epilogue step against its own: the library's fused conv + bias + ReLU and the unfused
    pipeline)."""
    first = rows[0]
    names = [conv_label(r) for r in rows]
    values = [r.tflops for r in rows]
    colours = [FUSED_COLOUR if results.is_fused_epilogue(r) else STEP_COLOUR for r in rows]

    def note(r: Row) -> str:
        speedup = f"{first.time_ms_median / r.time_ms_median:.1f}× step {first.chapter[:2]}"
        if results.is_fused_epilogue(r):
            alt = f"\n{pct(r.alt_ratio)} of\n{unfused_short(r)}" if r.alt_baseline else ""  # two lines: narrow
            return f"{speedup}\n{pct(r.ratio_to_baseline)} of {fused_short(r)}{alt}"
        return f"{speedup}\n{pct(r.alt_ratio)} of precomp\n{pct(r.ratio_to_baseline)} of fastest"

    notes = [note(r) for r in rows]
    if base.has_precomp:
        names.append(base.precomp_name)
        values.append(base.precomp_tflops)
        colours.append(PRECOMP_COLOUR)
        notes.append(f"{first.time_ms_median / base.precomp_ms:.1f}× step {first.chapter[:2]}")
    if base.has_fastest:
        names.append(base.fastest_label)
        values.append(base.fastest_tflops)
        colours.append(FASTEST_COLOUR)
        notes.append(f"{first.time_ms_median / base.fastest_ms:.1f}× step {first.chapter[:2]}")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 + 1.2 * len(names)), 5.0))
    bars = ax.bar(names, values, color=colours)
    for b, r in zip(bars, rows):
        if results.is_fused_epilogue(r):
            b.set_hatch(FUSED_HATCH)
    for b, text in zip(bars, notes):
        ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
    ax.set_ylabel("TFLOP/s (median; direct-convolution FLOPs)")
    ax.set_ylim(0, max(values) * 1.3)
    ax.set_title(f"Convolution {CONV_HEADLINE} (implicit GEMM {gemm_dims(first)}), FP32 FMA: speedup over step "
                 f"{first.chapter[:2]} and % of cuDNN\n{title_suffix(first)}", fontsize=10)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def conv_layers_chart(latest: dict, bases: dict[str, ConvBaselines], path: Path, steps: list[str] | None = None,
                      title: str | None = None, step_labels: dict[str, str] | None = None,
                      legend_cols: int = 3) -> None:
    """Grouped bars: TFLOP/s per layer of the steps (default: those from LAYER_STEPS_FROM on) and of both
    cuDNN baselines. step_labels: a legend label per step instead of conv_label's."""
    steps = layer_steps(latest) if steps is None else steps
    layers = list(bases)
    # one series per step: (legend label, its row for each layer or None where it did not run)
    series = [((step_labels or {}).get(s) or conv_label(next(r for (c, _), r in latest.items() if c == s)),
               [latest.get((s, l)) for l in layers]) for s in steps]
    width = 0.8 / (len(series) + 2)
    xs = list(range(len(layers)))

    def offsets(i: int) -> list[float]:  # bar i of each group, the group centred on its layer
        return [x + (i - (len(series) + 1) / 2) * width for x in xs]

    fig, ax = plt.subplots(figsize=(max(10.0, 1.3 * len(layers) + 1), 6.5))
    for i, (name, rows) in enumerate(series):
        fused = any(r and results.is_fused_epilogue(r) for r in rows)
        ax.bar(offsets(i), [r.tflops if r else 0.0 for r in rows], width, label=name,
               **({"color": FUSED_COLOUR, "hatch": FUSED_HATCH} if fused else {}))
    precomp = [bases[l].precomp_tflops for l in layers]
    if any(v == v for v in precomp):
        name = _most_common([b.precomp_name for b in bases.values() if b.precomp_name])
        ax.bar(offsets(len(series)), [v if v == v else 0.0 for v in precomp], width, color=PRECOMP_COLOUR, label=name)
    fastest = [bases[l].fastest_tflops for l in layers]
    offs = offsets(len(series) + 1)
    if any(v == v for v in fastest):
        family = _most_common([b.fastest_family for b in bases.values() if b.has_fastest])
        ax.bar(offs, [v if v == v else 0.0 for v in fastest], width, color=FASTEST_COLOUR,
               label=f"{family} (algorithm above its bar)")
    top = max([v for v in fastest + precomp if v == v] + [r.tflops for _, rows in series for r in rows if r])
    for x, v, l in zip(offs, fastest, layers):
        if v == v:
            ax.annotate(bases[l].fastest_algo, (x, v + 0.01 * top), ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{l}\n{gemm_dims(bases[l].row)}" for l in layers], fontsize=7)
    ax.set_ylim(0, top * 1.5)  # room for the algorithm names
    ax.set_ylabel("TFLOP/s (median; direct-convolution FLOPs)")
    ax.set_xlabel("layer, and its implicit GEMM M×N×K = K × N·P·Q × C·R·S", fontsize=8)
    title = title or (f"Convolution per layer, FP32 FMA: steps {LAYER_STEPS_FROM} on and both cuDNN baselines "
                      f"(their median over the convolution steps' processes)")
    ax.set_title(f"{title}\n{title_suffix(bases[layers[0]].row)}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=legend_cols, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def conv_roofline_chart(latest: dict, bases: dict[str, ConvBaselines], path: Path) -> None:
    """Each step at each measured layer, and both cuDNN baselines, at the layer's minimum-traffic intensity."""
    rows = list(latest.values())
    fig, ax = plt.subplots(figsize=(8, 5))
    lo, hi = roofs(ax, rows)
    markers = "os^vD<>ph*"
    for i, name in enumerate(results.step_order(rows)):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: r.intensity)
        ax.plot([r.intensity for r in mine], [r.tflops for r in mine], ls="none", marker=markers[i % len(markers)],
                ms=5, label=conv_label(mine[0]))
    base = [b for b in bases.values() if b.has_fastest]
    with_precomp = [b for b in base if b.has_precomp]
    if with_precomp:
        ax.plot([b.row.intensity for b in with_precomp], [b.precomp_tflops for b in with_precomp], ls="none",
                marker="_", ms=12, mew=2, color=PRECOMP_COLOUR, label=with_precomp[0].precomp_name)
    if base:
        ax.plot([b.row.intensity for b in base], [b.fastest_tflops for b in base], ls="none", marker="_", ms=12, mew=2,
                color=FASTEST_COLOUR, label=_most_common([b.fastest_family for b in base]))
    finish_roofline(ax, lo, hi, f"Convolution roofline, FP32 FMA: every step at every measured layer\n"
                                f"{title_suffix(rows[0])}")
    # The conv points may span less than a decade, where log axes label their minor ticks: plainly too.
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.5)))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def conv_readme_block(head: list[Row], latest: dict, bases: dict[str, ConvBaselines], images: list[Path],
                      readme: Path, csv_name: str) -> str:
    r0 = head[0]
    dates = sorted(r.timestamp for r in latest.values())
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    fused = fused_table(latest)
    fused_rows = [r for r in latest.values() if results.is_fused_epilogue(r)]
    fused_block = [
        "**Fused epilogue (bias + ReLU).** y = max(conv + bias[k], 0) in the store of step "
        f"{', '.join(sorted({r.chapter[:2] for r in fused_rows}))}, against the step it extends run as a plain "
        f"convolution (that step's own row), the unfused pipeline (the convolution, then a separate bias/ReLU kernel) and "
        f"{_most_common([r.baseline for r in fused_rows])}, all timed in the step's process; the last columns: "
        "the time the epilogue adds, and the library's fused time over the step's:",
        "",
        fused,
        "",
    ] if fused else []
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {dates[-1][:10]}; convolution layer `{CONV_HEADLINE}` "
        f"(implicit GEMM {gemm_dims(r0)}), FP32, NCHW input, KCRS filter, NKPQ output. Each time is the median of "
        f"event-timed runs with L2 flushed before each run. Both cuDNN baselines use FMA math (no tensor cores) "
        f"and are timed in the same process as each step: IMPLICIT_PRECOMP_GEMM (\"precomp\", the same method "
        f"as the steps) and the fastest of the algorithms cuDNN's search returns for the layer, each timed the "
        f"same way (\"fastest\", named in parentheses). "
        f"TFLOP/s counts the direct convolution's 2·N·K·P·Q·C·R·S FLOPs for every algorithm. The baselines' "
        f"own rows give the median over the convolution steps' processes. The fused-epilogue step "
        f"{EPILOGUE_NOTE} also adds a bias and applies ReLU; it is compared with cuDNN's fused conv+bias+ReLU and "
        f"with the unfused pipeline instead, and its TFLOP/s counts the convolution's FLOPs only. Generated by "
        f"`make tutorial` from `plots/data/{csv_name}`.",
        "",
        conv_results_table(head, bases[CONV_HEADLINE]),
        "",
        f"Per layer, TFLOP/s (steps {LAYER_STEPS_FROM} on; the last column: the best convolution step's time "
        f"against cuDNN fastest in its own process):",
        "",
        conv_layer_table(latest, bases),
        "",
        *fused_block,
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


# ----------------------------------------------------------------------------------------------
# Part III: GCN inference, FP64. Every step is bandwidth-bound: GB/s is the step's minimum bytes over
# its median time, compared with the device-to-device copy bandwidth each binary measures in its own
# process (copy_gbps). Each chapter computes one piece of the layer, its kind (results.gcn_kind), and
# is timed against that piece's library baseline in the same process. The rows plots/torch_gcn.py
# appends (PyTorch's layer, PyTorch Geometric's GCNConv) appear only in the layer chart and as extra
# lines of the Part III table. Tables and charts show one problem, results.gcn_headline's.

GCN_README_BEGIN = "<!-- results:gcn:begin -->"
GCN_README_END = "<!-- results:gcn:end -->"
KIND_COLOURS = {"skinny GEMM": "#4C72B0", "SpMM": "#55A868", "LogSoftmax": "#C44E52", "layer": "#8172B3",
                results.GCN_OTHER: "#937860"}
LIBRARY_COLOUR, ALT_LIBRARY_COLOUR = "#7f7f7f", "#b5b5b5"
FLOOR_COLOUR, TORCH_COLOUR = "#2ca02c", "#DD8452"


class GcnLibrary:
    """One kind's library baseline at one problem, summarized over the processes that timed it (one
    per chapter of the kind): the median of their times and the name most of them gave (the newest
    among equals); the same for the second baseline where the rows have one (SpMM: cuSPARSE's
    default algorithm). GB/s: the piece's minimum bytes over the library's time."""

    def __init__(self, kind: str, rows: list[Row]):
        newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
        self.kind = kind
        self.row = newest_first[0]  # the piece's minimum bytes
        self.name = _most_common([r.baseline for r in newest_first])
        self.ms = results.median([r.baseline_time_ms for r in rows])
        with_alt = [r for r in newest_first if r.alt_baseline_time_ms is not None]
        self.alt_name = _most_common([r.alt_baseline for r in with_alt])
        self.alt_ms = results.median([r.alt_baseline_time_ms for r in with_alt])

    @property
    def has_alt(self) -> bool:
        return bool(self.alt_name) and self.alt_ms == self.alt_ms

    @property
    def gbps(self) -> float:
        return self.row.gbps_at(self.ms)

    @property
    def alt_gbps(self) -> float:
        return self.row.gbps_at(self.alt_ms) if self.has_alt else float("nan")


def gcn_kind_of(r: Row) -> str:
    return results.gcn_kind(r.chapter) or results.GCN_OTHER


def gcn_head(latest: dict) -> tuple[str | None, list[Row], list[Row]]:
    """(problem, its chapter rows in reading order, its PyTorch rows) for the Part III tables and charts."""
    rows = [r for r in latest.values() if r.is_chapter or results.is_torch(r)]
    problem = results.gcn_headline(rows)
    at = [r for r in rows if r.problem == problem]
    chapters = sorted((r for r in at if r.is_chapter), key=lambda r: r.chapter)
    torch_rows = sorted((r for r in at if results.is_torch(r)), key=lambda r: results.TORCH_CHAPTERS.index(r.chapter))
    return problem, chapters, torch_rows


def gcn_kinds(chapters: list[Row]) -> list[str]:
    """The kinds the chapters compute, in the layer's order."""
    present = {gcn_kind_of(r) for r in chapters}
    return [k for k in results.gcn_kind_order() if k in present]


def gcn_libraries(chapters: list[Row]) -> dict[str, GcnLibrary]:
    return {k: GcnLibrary(k, [r for r in chapters if gcn_kind_of(r) == k]) for k in gcn_kinds(chapters)}


def gcn_copy_gbps(rows: list[Row]) -> float:
    """The median of the copy bandwidths the rows' processes measured (nan: none did)."""
    return results.median([r.copy_gbps for r in rows if r.copy_gbps])


def fmt_ms4(x: float) -> str:
    """Four significant digits: the GCN steps and the TF32 GEMMs run from hundredths of a millisecond to
    milliseconds."""
    if x != x:
        return "–"
    digits = max(0, 3 - math.floor(math.log10(x))) if x > 0 else 3
    return f"{x:.{digits}f}"


def gbs(x: float) -> str:
    return "–" if x != x else f"{x:.0f}"


def gcn_shape(r: Row) -> str:
    return f"V = {r.m}, F_in {r.k} → F_out {r.n}"


def gcn_results_table(chapters: list[Row], torch_rows: list[Row]) -> str:
    """Markdown table at the Part III problem: every chapter against its own process's library
    baseline and the first chapter of its kind, then the PyTorch rows (against their own baseline)."""
    lines = ["| step | kind | time (ms), median [min, max] | GB/s | % of copy | library baseline | library (ms) "
             "| library GB/s | × library | × first of its kind | verified |",
             "|---|---|---|---:|---:|---|---:|---:|---:|---:|:-:|"]
    first: dict[str, Row] = {}

    def line(r: Row, kind: str, vs_first: str) -> str:
        # A row that is its own baseline (PyTorch's layer) has no library cells.
        library = (f"{r.baseline} | {fmt_ms4(r.baseline_time_ms)} | {gbs(r.gbps_at(r.baseline_time_ms))} "
                   f"| {r.ratio_to_baseline:.2f}") if r.baseline != r.step else "– | – | – | –"
        return (f"| {label(r)} | {kind} | {fmt_ms4(r.time_ms_median)} [{fmt_ms4(r.time_ms_min)}, "
                f"{fmt_ms4(r.time_ms_max)}] | {gbs(r.gbps)} | {pct(r.copy_ratio)} | {library} | {vs_first} "
                f"| {r.verified} |")

    for r in chapters:
        kind = gcn_kind_of(r)
        f = first.setdefault(kind, r)
        lines.append(line(r, kind, f"{f.time_ms_median / r.time_ms_median:.2f}"))
    for r in torch_rows:
        lines.append(line(r, gcn_kind_of(r), "–"))
    return "\n".join(lines)


def gcn_chapter_table(r: Row) -> str:
    """One Part III chapter's block: its row at the Part III problem, against the baselines of its
    own process and the copy bandwidth measured there."""
    alt = r.alt_baseline_time_ms is not None
    lines = ["| graph | size | time (ms), median [min, max] | GB/s | % of copy | library (ms) | library GB/s | × library "
             + ("| second baseline (ms) | × second baseline " if alt else "") + "| verified |",
             "|---|---|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if alt else "") + ":-:|"]
    lines.append(f"| {r.problem} | {gcn_shape(r)} | {fmt_ms4(r.time_ms_median)} [{fmt_ms4(r.time_ms_min)}, "
                 f"{fmt_ms4(r.time_ms_max)}] | {gbs(r.gbps)} | {pct(r.copy_ratio)} | {fmt_ms4(r.baseline_time_ms)} "
                 f"| {gbs(r.gbps_at(r.baseline_time_ms))} | {r.ratio_to_baseline:.2f} "
                 + (f"| {fmt_ms4(r.alt_baseline_time_ms)} | {r.alt_ratio:.2f} " if alt else "")
                 + f"| {r.verified} |")
    names = f"Baseline: {r.baseline}" + (f"; second baseline: {r.alt_baseline}" if alt else "")
    copy = (f"the device-to-device copy bandwidth measured in the same process: {gbs(r.copy_gbps)} GB/s"
            if r.copy_gbps else "no copy bandwidth was measured in this process")
    floor = (f" The memory floor (these minimum bytes at that copy bandwidth): {fmt_ms4(r.floor_ms)} ms."
             if gcn_kind_of(r) == "layer" and r.copy_gbps else "")
    return (f"{names}, timed in the same process; {copy}. GB/s counts the step's minimum bytes (each input "
            f"read once, the output written once); the library's GB/s is the same bytes over its time; "
            f"× library is the library's time over the step's.{floor}\n\n" + "\n".join(lines))


def _wrap(text: str, width: int = 22) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text


def gcn_speedup_chart(chapters: list[Row], libs: dict[str, GcnLibrary], problem: str, path: Path) -> None:
    """One panel per kind: each chapter's speedup over the first chapter of its kind, and its
    library baseline(s) on the same scale; labels give × the first chapter and × the library of the
    chapter's own process."""
    kinds = gcn_kinds(chapters)
    per_kind = {k: [r for r in chapters if gcn_kind_of(r) == k] for k in kinds}
    widths = [len(per_kind[k]) + 1 + libs[k].has_alt for k in kinds]
    fig, axes = plt.subplots(1, len(kinds), figsize=(max(8.0, 1.25 * sum(widths) + 1.5), 5.5),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        mine, lib = per_kind[kind], libs[kind]
        first = mine[0]
        names = [_wrap(label(r)) for r in mine]
        values = [first.time_ms_median / r.time_ms_median for r in mine]
        colours = [KIND_COLOURS[kind]] * len(mine)
        notes = [f"{v:.2f}× {first.chapter[:2]}\n{r.ratio_to_baseline:.2f}× library" for v, r in zip(values, mine)]
        for name, ms, colour in [(lib.name, lib.ms, LIBRARY_COLOUR)] + (
                [(lib.alt_name, lib.alt_ms, ALT_LIBRARY_COLOUR)] if lib.has_alt else []):
            names.append(_wrap(name))
            values.append(first.time_ms_median / ms)
            colours.append(colour)
            notes.append(f"{first.time_ms_median / ms:.2f}× {first.chapter[:2]}\n{fmt_ms4(ms)} ms")
        bars = ax.bar(range(len(names)), values, color=colours)
        for b, text in zip(bars, notes):
            ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, fontsize=7, rotation=30, ha="right")
        ax.set_ylim(0, max(values) * 1.3)
        ax.set_title(kind, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].set_ylabel("speedup over the first step of its kind\n(its median time / this one's)")
    fig.suptitle(f"GCN layer pieces, FP64, graph {problem}: speedup over the first step of each kind, and the library "
                 f"baseline of each piece (median over the kind's processes)\n{title_suffix(chapters[0])}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gcn_bandwidth_chart(chapters: list[Row], libs: dict[str, GcnLibrary], problem: str, path: Path) -> None:
    """GB/s of every chapter and every library baseline (minimum bytes over the median time), grouped
    by kind, under the copy bandwidth measured in the same processes."""
    copy = gcn_copy_gbps(chapters)
    xs, values, colours, names, hatches = [], [], [], [], []
    x = 0.0
    for kind in gcn_kinds(chapters):
        lib = libs[kind]
        entries = [(label(r), r.gbps, KIND_COLOURS[kind], "") for r in chapters if gcn_kind_of(r) == kind]
        entries.append((lib.name, lib.gbps, LIBRARY_COLOUR, "//"))
        if lib.has_alt:
            entries.append((lib.alt_name, lib.alt_gbps, ALT_LIBRARY_COLOUR, "//"))
        for name, v, colour, hatch in entries:
            xs.append(x)
            names.append(_wrap(name, 26))
            values.append(v)
            colours.append(colour)
            hatches.append(hatch)
            x += 1.0
        x += 0.6  # a gap between kinds
    fig, ax = plt.subplots(figsize=(max(9.0, 0.75 * len(xs) + 2.5), 6.0))
    bars = ax.bar(xs, values, color=colours)
    for b, hatch in zip(bars, hatches):
        if hatch:
            b.set_hatch(hatch)
    for b, v in zip(bars, values):
        note = pct(v / copy) if copy == copy else gbs(v)
        ax.annotate(note, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=7)
    if copy == copy:
        ax.axhline(copy, color="black", ls="--", lw=1.2)
        ax.annotate(f"device-to-device copy {copy:.0f} GB/s (read + write; median of the steps' processes)",
                    (xs[0] - 0.4, copy), va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels(names, fontsize=7, rotation=35, ha="right")
    ax.set_ylim(0, max([v for v in values if v == v] + ([copy] if copy == copy else [])) * 1.15)
    ax.set_ylabel("GB/s: minimum bytes / median time")
    handles = [plt.Rectangle((0, 0), 1, 1, color=KIND_COLOURS[k]) for k in gcn_kinds(chapters)]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor=LIBRARY_COLOUR, hatch="//"))
    ax.legend(handles, gcn_kinds(chapters) + ["library baseline (same bytes / its time)"], fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_title(f"GCN layer pieces, FP64, graph {problem}: bandwidth against the copy ceiling "
                 f"(labels: % of copy)\n{title_suffix(chapters[0])}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gcn_layer_chart(chapters: list[Row], torch_rows: list[Row], libs: dict[str, GcnLibrary], problem: str,
                    path: Path) -> bool:
    """The whole layer: the fused chapter(s), the library pipeline, the PyTorch rows and the memory
    floor (the layer's minimum bytes at the copy bandwidth), as times. False (nothing drawn) when
    there is no layer row at all."""
    layer = [r for r in chapters if gcn_kind_of(r) == "layer"]
    ref = layer[-1] if layer else (torch_rows[0] if torch_rows else None)
    if ref is None:
        return False
    entries = []  # (label, ms, colour)
    floor = ref.floor_ms
    if floor == floor:
        entries.append((f"memory floor: the layer's minimum bytes at the copy bandwidth ({gbs(ref.copy_gbps)} GB/s)",
                        floor, FLOOR_COLOUR))
    entries += [(label(r), r.time_ms_median, KIND_COLOURS["layer"]) for r in layer]
    if "layer" in libs:
        entries.append((libs["layer"].name, libs["layer"].ms, LIBRARY_COLOUR))
        # The second baseline (the same pipeline with a plain bias + log_softmax kernel), where timed.
        if libs["layer"].has_alt:
            entries.append((libs["layer"].alt_name, libs["layer"].alt_ms, LIBRARY_COLOUR))
    for r in torch_rows:
        other = f" (CUDA {r.cuda})" if r.cuda != ref.cuda else ""
        entries.append((r.step + other, r.time_ms_median, TORCH_COLOUR))
    fig, ax = plt.subplots(figsize=(10.0, 1.6 + 0.6 * len(entries)))
    ys = range(len(entries))
    ax.barh(ys, [ms for _, ms, _ in entries], color=[c for _, _, c in entries])
    top = max(ms for _, ms, _ in entries)
    for y, (_, ms, colour) in zip(ys, entries):
        note = f"{fmt_ms4(ms)} ms" + (f", {ms / floor:.1f}× floor" if floor == floor and colour != FLOOR_COLOUR else "")
        ax.annotate(note, (ms + 0.01 * top, y), va="center", fontsize=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_wrap(name, 48) for name, _, _ in entries], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, top * 1.3)
    ax.set_xlabel("time (ms), median of event-timed runs, L2 flushed before each")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"One GCN layer, FP64: log_softmax(Â (X W) + b)\ngraph {problem} ({gcn_shape(ref)})\n"
                 f"{title_suffix(ref)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def gcn_readme_block(problem: str, chapters: list[Row], torch_rows: list[Row], images: list[Path], readme: Path,
                     csv_name: str) -> str:
    r0 = chapters[0]
    dates = sorted(r.timestamp for r in chapters + torch_rows)
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    copy = gcn_copy_gbps(chapters)
    layer = [r for r in chapters if gcn_kind_of(r) == "layer" and r.copy_gbps]
    floor = (f" The whole layer's memory floor, its minimum bytes at the copy bandwidth of step "
             f"{layer[-1].chapter[:2]}'s process, is {fmt_ms4(layer[-1].floor_ms)} ms." if layer else "")
    torch_note = (" The last rows time the same layer in PyTorch on the tensors a chapter binary dumped "
                  "(`plots/torch_gcn.py`, optional; each against the baseline it names, in its own process)."
                  if torch_rows else "")
    copy_text = (f"(median over the steps' processes: {copy:.0f} GB/s)" if copy == copy else "(not measured in these rows)")
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {dates[-1][:10]}; one GCN layer out = log_softmax(Â (X W) + b) "
        f"in FP64 on the graph `{problem}` ({gcn_shape(r0)}), each step computing one piece of it (its kind). "
        f"Each time is the median of event-timed runs with L2 flushed before each run; each step is timed against "
        f"its piece's library baseline in the same process, and each process also measures the device-to-device "
        f"copy bandwidth, bytes read + written per second {copy_text}, the ceiling for these bandwidth-bound steps. "
        f"GB/s counts a step's minimum bytes (each input read once, the output written once); the library's GB/s is "
        f"the same bytes over its time. × library is the library's time over the step's; × first of its kind the "
        f"first step of that kind's time over the step's.{floor}{torch_note} Generated by `make tutorial` from "
        f"`plots/data/{csv_name}`.",
        "",
        gcn_results_table(chapters, torch_rows),
        "",
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


# ----------------------------------------------------------------------------------------------
# The tensor-core steps, in TF32: Part I's chapters 11 and 12 with the cuBLAS TF32 baseline, Part II's
# chapter 21. A TF32 GEMM row compares against cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) timed in the
# same process; its second baseline (alt_baseline) is cuBLAS FP32 (no TF32), timed there too: what
# the tensor cores buy over the CUDA cores; its pct_of_peak is of the TF32 tensor-core peak. A TF32
# convolution row compares against cuDNN's two baselines with TF32 allowed (cuDNN's default math, the
# tensor cores where cuDNN picks them; both names say "TF32"). These rows have charts and
# README sections of their own (results:gemm-tf32, results:conv-tf32), never the FP32 ones; where
# cuBLAS FP32 appears on a TF32 chart it is drawn hatched or dotted in grey and named as the FP32
# reference. Which rows are TF32 comes from results.precision (the baselines' names say "TF32").

TF32 = "TF32"
GEMM_TF32_BEGIN = "<!-- results:gemm-tf32:begin -->"
GEMM_TF32_END = "<!-- results:gemm-tf32:end -->"
CONV_TF32_BEGIN = "<!-- results:conv-tf32:begin -->"
CONV_TF32_END = "<!-- results:conv-tf32:end -->"
# (part, precision) -> the README section its charts and tables go to; any other precision than the
# part's own is left out of the plots and named.
OWN_SECTIONS = {("gemm", TF32): "results:gemm-tf32", ("conv", TF32): "results:conv-tf32"}
FP32_REF_COLOUR, FP32_REF_HATCH = "#b0b0b0", "xx"
TF32_LIB_COLOUR = "#3a3a3a"


def times(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def odd_sizes_text() -> str:
    """The sweep's odd sizes (no multiple of 32), as the README names them: '4095³ and 4097×4093×4099'."""
    odd = [f"{m}³" if m == n == k else f"{m}×{n}×{k}" for m, n, k in SWEEP if m % 32 or n % 32 or k % 32]
    return " and ".join(odd) if len(odd) < 3 else ", ".join(odd[:-1]) + " and " + odd[-1]


class Fp32Reference:
    """cuBLAS FP32 as the TF32 GEMM rows at one problem timed it, each in its own process (their second
    baseline): the median of those times and the name most of them gave (the newest among equals);
    and cuBLAS TF32 likewise (their baseline). nan where no row has them."""

    def __init__(self, rows: list[Row]):
        newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
        with_alt = [r for r in newest_first if r.alt_baseline_time_ms is not None]
        self.row = newest_first[0]  # for the problem's FLOPs
        self.name = _most_common([r.alt_baseline for r in with_alt])
        self.ms = results.median([r.alt_baseline_time_ms for r in with_alt])
        self.tf32_name = _most_common([r.baseline for r in newest_first])
        self.tf32_ms = results.median([r.baseline_time_ms for r in newest_first])

    @property
    def has(self) -> bool:
        return bool(self.name) and self.ms == self.ms

    @property
    def tflops(self) -> float:
        return self.row.tflops_at(self.ms) if self.has else float("nan")

    @property
    def tf32_tflops(self) -> float:
        return self.row.tflops_at(self.tf32_ms)


def fp32_references(latest: dict) -> dict[str, Fp32Reference]:
    """Problem -> the FP32 reference (and the cuBLAS TF32 median) over the TF32 rows at that problem."""
    rows = list(latest.values())
    return {p: Fp32Reference([r for r in rows if r.problem == p]) for p in {r.problem for r in rows}}


def fp32_ref_label(ref: Fp32Reference) -> str:
    return f"{ref.name}: FP32 reference (CUDA cores, not TF32)"


def tf32_results_table(rows: list[Row], ref: Fp32Reference) -> str:
    """Markdown table at the headline size: each TF32 step and cuBLAS TF32 (time, TFLOP/s, % of cuBLAS
    TF32 and × cuBLAS FP32 in its own process, % of the TF32 peak), then cuBLAS FP32 as the reference."""
    lines = ["| step | time (ms), median [min, max] | TFLOP/s | % of cuBLAS TF32 | % of TF32 peak | × cuBLAS FP32 "
             "| × previous step | verified |",
             "|---|---|---:|---:|---:|---:|---:|:-:|"]
    prev = None
    for r in rows:
        vs_prev = "–"
        if r.is_chapter:
            vs_prev = f"{prev.time_ms_median / r.time_ms_median:.2f}" if prev else "–"
            prev = r
        lines.append(f"| {label(r)} | {fmt_ms4(r.time_ms_median)} [{fmt_ms4(r.time_ms_min)}, {fmt_ms4(r.time_ms_max)}] "
                     f"| {r.tflops:.2f} | {pct(r.ratio_to_baseline)} | {r.pct_of_peak:.1f}% | {times(r.alt_ratio)} "
                     f"| {vs_prev} | {r.verified} |")
    if ref.has:
        lines.append(f"| {fp32_ref_label(ref)} | {fmt_ms4(ref.ms)} | {ref.tflops:.2f} | {pct(ref.tf32_ms / ref.ms)} | – "
                     f"| 1.00 | – | – |")
    return "\n".join(lines)


def tf32_sweep_table(latest: dict, refs: dict[str, Fp32Reference]) -> str:
    """Over the sweep (and the headline): each TF32 chapter's TFLOP/s and % of cuBLAS TF32 (its own
    process), cuBLAS TF32 and cuBLAS FP32 (medians over the processes), and whether every step's
    result at that size was verified."""
    sweep = [mnk_name(x) for x in SWEEP]
    if HEADLINE not in sweep:
        sweep.append(HEADLINE)
    sweep.sort(key=results.problem_sort_key)
    rows = list(latest.values())
    chapters = [c for c in results.step_order(rows) if results.is_chapter(c)]
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
            cells.append(f"{r.tflops:.2f} ({pct(r.ratio_to_baseline)})" if r else "–")
        here = [r for r in rows if r.problem == p]
        bad = sorted({label(r) for r in here if r.verified != "yes"})
        ok = "yes" if not bad else "no: " + ", ".join(bad)
        ref = refs[p]
        lines.append(f"| {p.replace('x', '×')} | " + " | ".join(cells) + (" | " if cells else "")
                     + f"{tf(ref.tf32_tflops)} | {tf(ref.tflops)} | {ok} |")
    return "\n".join(lines)


def tf32_speedup_chart(rows: list[Row], ref: Fp32Reference, path: Path) -> None:
    """Bars: TFLOP/s at the headline size of each TF32 step and cuBLAS TF32, and cuBLAS FP32 hatched in
    grey as the FP32 reference; labels give % of cuBLAS TF32 and × cuBLAS FP32 (each step's own
    process); the TF32 tensor-core peak as a dashed line."""
    names = [label(r) for r in rows]
    values = [r.tflops for r in rows]
    colours = ["#4C72B0" if r.is_chapter else TF32_LIB_COLOUR for r in rows]
    notes = [(f"{pct(r.ratio_to_baseline)} of cuBLAS TF32\n" if r.is_chapter else "") + f"{times(r.alt_ratio)}× cuBLAS FP32"
             for r in rows]
    hatches = [""] * len(rows)
    if ref.has:
        names.append(_wrap(fp32_ref_label(ref), 24))
        values.append(ref.tflops)
        colours.append(FP32_REF_COLOUR)
        notes.append("FP32, for reference")
        hatches.append(FP32_REF_HATCH)
    peak = max(r.peak_gflops for r in rows) / 1e3
    fig, ax = plt.subplots(figsize=(max(8.0, 1.0 + 1.6 * len(names)), 5.5))
    bars = ax.bar(names, values, color=colours)
    for b, hatch in zip(bars, hatches):
        if hatch:
            b.set_hatch(hatch)
            b.set_edgecolor("#6f6f6f")
    for b, text in zip(bars, notes):
        ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    top = max(values)
    if peak > 0:
        ax.axhline(peak, color="black", lw=1, ls="--", alpha=0.6)
        ax.annotate(f"TF32 tensor-core peak {peak:.0f} TFLOP/s", (-0.4, peak), va="bottom", fontsize=8)
        top = max(top, peak)
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_ylim(0, top * 1.2)
    ax.set_title(f"GEMM {HEADLINE.replace('x', '×')} in TF32 on the tensor cores\nlabels: % of cuBLAS TF32 and × cuBLAS "
                 f"FP32 in each step's process; hatched grey: the FP32 reference, not TF32\n{title_suffix(rows[0])}",
                 fontsize=10)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def gemm_tf32_readme_block(head: list[Row], ref: Fp32Reference, sweep: str, suite: str, images: list[Path],
                           readme: Path, csv_name: str) -> str:
    r0 = head[0]
    dates = sorted(r.timestamp for r in head)
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    peak = max(r.peak_gflops for r in head) / 1e3
    tf32_name = _most_common([r.baseline for r in sorted(head, key=lambda r: r.timestamp, reverse=True)])
    suite_part = ["", "Small and odd problems (chapter 10's suite; each chapter against cuBLAS TF32 in its own process):",
                  "", suite] if suite else []
    sides = [m for m, _, _ in SWEEP]
    sweep_part = ["", f"Over the sweep ({min(sides)} to {max(sides)}, with the odd sizes {odd_sizes_text()}): each step's "
                  "TFLOP/s and % of cuBLAS TF32 in its own process, the libraries' medians over the processes, and "
                  "whether every result at that size was verified:", "", sweep] if sweep else []
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {dates[-1][:10]}; GEMM {HEADLINE.replace('x', '×')} in **TF32** on "
        f"the tensor cores: row-major FP32 in and out, A and B rounded to TF32 (10-bit mantissa) inside the tensor "
        f"cores, products summed in FP32; alpha = 1, beta = 0. Each time is the median of event-timed runs with L2 "
        f"flushed before each run. % of cuBLAS TF32 compares against {tf32_name} timed in the same process; "
        f"× cuBLAS FP32 is {ref.name or 'cuBLAS FP32'}'s time in that process over the step's, what the tensor cores "
        f"buy over the CUDA cores (its own row, the FP32 reference, is the median over the processes). % of TF32 peak "
        f"is of the dense TF32 tensor-core peak ({peak:.0f} TFLOP/s here), not the FP32 one. Every result is checked "
        f"against true FP32 with the TF32 tolerance. These rows are in no FP32 table or chart above. Generated by "
        f"`make tutorial` from `plots/data/{csv_name}`.",
        "",
        tf32_results_table(head, ref),
        *sweep_part,
        *suite_part,
        "",
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


def gemm_tf32_outputs(rows: list[Row], out: Path, slug: str, csv_name: str, readme: Path | None, plans: list[Row],
                      blocks: list, chapters: list) -> list[Path]:
    """Part I's TF32 charts and tables; appends its README block and its chapters' blocks."""
    latest = results.latest(rows)
    head = headline_rows(latest)
    if not head:
        raise CsvError(f"{csv_name}: no TF32 GEMM rows at the headline size {HEADLINE}")
    refs = fp32_references(latest)
    ref = refs[HEADLINE]
    out.mkdir(parents=True, exist_ok=True)
    images = [out / f"{slug}-gemm-tf32-speedup.png", out / f"{slug}-gemm-tf32-sweep.png",
              out / f"{slug}-gemm-tf32-roofline.png"]
    tf32_speedup_chart(head, ref, images[0])
    peak = max(r.peak_gflops for r in latest.values()) / 1e3
    sweep_chart(latest, images[1], title="GEMM in TF32 on the tensor cores: throughput against size\n"
                "(dotted grey: cuBLAS FP32, no TF32, the FP32 reference)",
                reference=(f"{ref.name or 'cuBLAS FP32'}: FP32 reference\n(median over the TF32 steps' processes)",
                           {p: x.tflops for p, x in refs.items()}),
                peak=("TF32 tensor-core peak", peak), figsize=(10, 5.2))
    roofline_chart(latest, images[2], title="GEMM in TF32 roofline: every TF32 step at every swept size,\n"
                   "under the TF32 tensor-core roof", peak_name="TF32 tensor-core peak")
    suite_png = out / f"{slug}-gemm-tf32-suite.png"
    if suite_chart(latest, suite_png, lib="cuBLAS TF32",
                   title="GEMM in TF32 on the tensor cores, small and odd problems: % of cuBLAS TF32 timed in the "
                         "same process"):
        images.insert(1, suite_png)
    suite = suite_table(latest, lib="cuBLAS TF32")
    sweep = tf32_sweep_table(latest, refs)
    print("TF32 (tensor cores):")
    print(tf32_results_table(head, ref))
    for table in (sweep, suite):
        if table:
            print()
            print(table)
    if readme:
        blocks.append((GEMM_TF32_BEGIN, GEMM_TF32_END,
                       gemm_tf32_readme_block(head, ref, sweep, suite, images, readme, csv_name)))
    for name in sorted({r.chapter for r in latest.values() if r.is_chapter}):
        mine = [r for r in latest.values() if r.chapter == name]
        body = tf32_chapter_table(mine)
        chosen = {r.problem: r.config for r in mine if r.config}
        table = plans_table([r for r in plans if r.chapter == name], chosen) if chosen else ""
        if table:
            body += ("\n\nEvery candidate plan on the suite (`--explain`, from "
                     f"`plots/data/{slug}-plans.csv`; median of 10 runs each):\n\n" + table)
        chapters.append((name, chapter_block(mine, csv_name, body)))
    return images


def conv_tf32_steps(latest: dict) -> list[str]:
    """Every TF32 convolution chapter, in reading order (there is no slow early step to leave out)."""
    return [c for c in results.step_order(latest.values()) if results.is_chapter(c)]


def conv_tf32_layer_table(latest: dict, bases: dict[str, ConvBaselines]) -> str:
    """Layer x TF32 step: TFLOP/s, both cuDNN TF32 baselines (medians over the processes), each step's
    % of either in its own process, and whether the layer's results were all verified; the geometric
    mean of each step's % over the layers it ran last."""
    steps = conv_tf32_steps(latest)
    lines = ["| layer | GEMM M×N×K | " + " | ".join(f"step {s[:2]}" for s in steps)
             + " | cuDNN TF32 precomp | cuDNN TF32 fastest (algorithm) | "
             + " | ".join(f"{s[:2]}: % of precomp | {s[:2]}: % of fastest" for s in steps) + " | verified |",
             "|---|---|" + "---:|" * len(steps) + "---:|---|" + "---:|---:|" * len(steps) + ":-:|"]
    for layer, base in bases.items():
        mine = [latest.get((s, layer)) for s in steps]
        rates = [tf(r.tflops) if r else "–" for r in mine]
        shares = [f"{pct(r.alt_ratio)} | {pct(r.ratio_to_baseline)}" if r else "– | –" for r in mine]
        bad = [s[:2] for s, r in zip(steps, mine) if r and r.verified != "yes"]
        fastest = (f"{base.fastest_tflops:.2f} ({base.fastest_algo or base.fastest_family})" if base.has_fastest else "–")
        lines.append(f"| {layer} | {gemm_dims(base.row)} | " + " | ".join(rates) + f" | {tf(base.precomp_tflops)} "
                     f"| {fastest} | " + " | ".join(shares) + f" | {'no: ' + ', '.join(bad) if bad else 'yes'} |")
    means = []
    for s in steps:
        mine = [r for (c, _), r in latest.items() if c == s]
        alt = [r.alt_ratio for r in mine if r.alt_ratio == r.alt_ratio]
        means.append(f"**{pct(geomean(alt))}** | " if alt else "– | ")
        means[-1] += f"**{pct(geomean([r.ratio_to_baseline for r in mine]))}**"
    lines.append("| geometric mean | | " + " | ".join("" for _ in steps) + " | | | " + " | ".join(means) + " | |")
    return "\n".join(lines)


def conv_tf32_readme_block(latest: dict, bases: dict[str, ConvBaselines], images: list[Path], readme: Path,
                           csv_name: str) -> str:
    rows = list(latest.values())
    newest_first = sorted(rows, key=lambda r: r.timestamp, reverse=True)
    r0 = newest_first[0]
    precomp = _most_common([r.alt_baseline for r in newest_first if r.alt_baseline])
    fastest = _most_common([results.baseline_family(r.baseline)[0] for r in newest_first])
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    names = (f"{precomp} (\"precomp\") and " if precomp else "") + f"{fastest} (\"fastest\", the algorithm named per layer)"
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {newest_first[0].timestamp[:10]}; the convolution layers in **TF32** "
        f"on the tensor cores (FP32 tensors, the implicit GEMM's factors rounded to TF32, sums in FP32), NCHW input, "
        f"KCRS filter, NKPQ output. Each step is timed in its own process against cuDNN with TF32 allowed (its default math: the tensor "
        f"cores where cuDNN picks them): {names}; the "
        f"baselines' columns are their medians over the steps' processes. TFLOP/s counts the direct convolution's "
        f"2·N·K·P·Q·C·R·S FLOPs. These rows are in no FP32 table or chart above. Generated by `make tutorial` from "
        f"`plots/data/{csv_name}`.",
        "",
        conv_tf32_layer_table(latest, bases),
        "",
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


def conv_tf32_outputs(rows: list[Row], out: Path, slug: str, csv_name: str, readme: Path | None,
                      blocks: list, chapters: list) -> list[Path]:
    """Part II's TF32 chart and table; appends its README block and its chapters' blocks."""
    latest = results.latest(rows)
    bases = conv_baselines(latest)
    steps = conv_tf32_steps(latest)
    out.mkdir(parents=True, exist_ok=True)
    images = [out / f"{slug}-conv-tf32-layers.png"]
    step_labels = {}
    for s in steps:
        mine = [r for (c, _), r in latest.items() if c == s]
        step_labels[s] = (f"{label(mine[0])}: geometric mean over its layers "
                          f"{pct(geomean([r.ratio_to_baseline for r in mine]))} of the fastest, each in its own process")
    conv_layers_chart(latest, bases, images[0], steps=steps, step_labels=step_labels, legend_cols=1,
                      title="Convolution per layer in TF32 on the tensor cores: the TF32 steps and both cuDNN\n"
                            "baselines with TF32 allowed (their median over the steps' processes)")
    print("TF32 (tensor cores):")
    print(conv_tf32_layer_table(latest, bases))
    if readme:
        blocks.append((CONV_TF32_BEGIN, CONV_TF32_END, conv_tf32_readme_block(latest, bases, images, readme, csv_name)))
    order = results.problem_order(latest.values())
    for name in steps:
        mine = [r for r in latest.values() if r.chapter == name]
        chapters.append((name, chapter_block(mine, csv_name, conv_chapter_table(mine, order, TF32))))
    return images


# ----------------------------------------------------------------------------------------------

def split_precision(rows: list[Row], part: str) -> tuple[list[Row], dict[str, list[Row]]]:
    """(the rows in their part's precision (FP32; FP64 for gcn), {precision: rows} of those with charts
    of their own (OWN_SECTIONS: TF32 in Parts I and II)). Every row in another precision is named on
    stdout: where it goes instead, or that it is left out."""
    want = results.part_precision(part)
    groups = results.by_precision(rows)
    own = {}
    for prec in sorted(groups):
        if prec == want:
            continue
        section = OWN_SECTIONS.get((part, prec))
        for chapter in sorted({r.chapter for r in groups[prec]}):
            where = f"its rows go to the {prec} charts and tables (README {section})" if section else "left out"
            print(f"note: {chapter} compares in {prec}, not in the {want} charts and tables: {where}")
        if section:
            own[prec] = groups[prec]
    return groups.get(want, []), own


def part_outputs(part: str, rows: list[Row], out: Path, slug: str, csv_name: str, readme: Path | None,
                 plans: list[Row], blocks: list, chapters: list) -> list[Path]:
    """A part's charts and tables in its own precision (FP32; FP64 for gcn); appends its README block
    and its chapters' blocks, returns the charts written."""
    latest = results.latest(rows)
    if part == "gemm":
        head = headline_rows(latest)
        if not head:
            raise CsvError(f"{csv_name}: no rows at the headline size {HEADLINE}")
        out.mkdir(parents=True, exist_ok=True)
        images = [out / f"{slug}-gemm-speedup.png", out / f"{slug}-gemm-sweep.png", out / f"{slug}-gemm-roofline.png"]
        speedup_chart(head, images[0])
        sweep_chart(latest, images[1])
        roofline_chart(latest, images[2])
        suite_png = out / f"{slug}-gemm-suite.png"
        if suite_chart(latest, suite_png):
            images.insert(1, suite_png)
        suite = suite_table(latest)
        print(results_table(head))
        if suite:
            print()
            print(suite)
        if readme:
            blocks.append((README_BEGIN, README_END, readme_block(head, images, readme, csv_name, suite)))
        for name in sorted({r.chapter for r in latest.values() if r.is_chapter}):
            mine = [r for r in latest.values() if r.chapter == name]
            body = chapter_table(mine)
            chosen = {r.problem: r.config for r in mine if r.config}
            table = plans_table([r for r in plans if r.chapter == name], chosen) if chosen else ""
            if table:
                body += ("\n\nEvery candidate plan on the suite (`--explain`, from "
                         f"`plots/data/{slug}-plans.csv`; median of 10 runs each):\n\n" + table)
            chapters.append((name, chapter_block(mine, csv_name, body)))
    elif part == "gcn":
        problem, head, torch_rows = gcn_head(latest)
        if not head:
            raise CsvError(f"{csv_name}: no Part III chapter rows (part gcn) at {problem or 'any problem'}: "
                           f"the PyTorch rows alone have nothing to compare with")
        libs = gcn_libraries(head)
        out.mkdir(parents=True, exist_ok=True)
        images = [out / f"{slug}-gcn-speedup.png", out / f"{slug}-gcn-bandwidth.png",
                  out / f"{slug}-gcn-layer.png"]
        gcn_speedup_chart(head, libs, problem, images[0])
        gcn_bandwidth_chart(head, libs, problem, images[1])
        if not gcn_layer_chart(head, torch_rows, libs, problem, images[2]):
            print(f"note: no layer rows (chapter 29 or PyTorch) at {problem}: no {images[2].name}")
            images.pop()
        print(gcn_results_table(head, torch_rows))
        if readme:
            blocks.append((GCN_README_BEGIN, GCN_README_END,
                           gcn_readme_block(problem, head, torch_rows, images, readme, csv_name)))
        for r in head:
            chapters.append((r.chapter, chapter_block([r], csv_name, gcn_chapter_table(r))))
    else:
        head = conv_headline_rows(latest)
        if not head:
            raise CsvError(f"{csv_name}: no convolution rows at the headline layer {CONV_HEADLINE}")
        bases = conv_baselines(latest)
        out.mkdir(parents=True, exist_ok=True)
        images = [out / f"{slug}-conv-speedup.png", out / f"{slug}-conv-layers.png",
                  out / f"{slug}-conv-roofline.png"]
        conv_speedup_chart(head, bases[CONV_HEADLINE], images[0])
        conv_layers_chart(latest, bases, images[1])
        conv_roofline_chart(latest, bases, images[2])
        print(conv_results_table(head, bases[CONV_HEADLINE]))
        print()
        print(conv_layer_table(latest, bases))
        if fused_table(latest):
            print()
            print(fused_table(latest))
        if readme:
            blocks.append((CONV_README_BEGIN, CONV_README_END,
                           conv_readme_block(head, latest, bases, images, readme, csv_name)))
        order = results.problem_order(latest.values())
        for name in results.step_order(latest.values()):
            mine = [r for r in latest.values() if r.chapter == name]
            chapters.append((name, chapter_block(mine, csv_name, conv_chapter_table(mine, order))))
    return images


def chapter_block(mine: list[Row], csv_name: str, body: str) -> str:
    return (f"Measured on {mine[0].gpu}, CUDA {mine[0].cuda} (from `plots/data/{csv_name}`, "
            f"written by `make tutorial`):\n\n" + body)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="results CSV written by the chapter binaries")
    ap.add_argument("--part", choices=(*results.PARTS, "all"), default="all",
                    help="which part's charts and tables to make (default: every part with rows)")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent), help="where the PNGs go")
    ap.add_argument("--readme", help="README.md whose results blocks are rewritten")
    ap.add_argument("--chapters-dir", help="folder of chapter folders whose README results blocks are rewritten")
    args = ap.parse_args(argv)
    try:
        all_rows = results.load(args.csv)
        parts = results.PARTS if args.part == "all" else (args.part,)
        out = Path(args.out_dir)
        slug = Path(args.csv).stem  # the binaries name the file after the GPU (its slug)
        csv_name = Path(args.csv).name
        readme = Path(args.readme) if args.readme else None
        blocks = []    # (begin, end, body) for README.md
        chapters = []  # (chapter, body) for chapters/<chapter>/README.md
        plans_csv = Path(args.csv).with_name(f"{slug}-plans.csv")
        plans = results.load(plans_csv) if plans_csv.is_file() else []
        for part in parts:
            rows, own = split_precision(results.of_part(all_rows, part), part)
            if not rows and not own:
                if args.part != "all":
                    raise CsvError(f"{args.csv}: no rows of part '{part}'")
                continue
            images = []
            if rows:
                images += part_outputs(part, rows, out, slug, csv_name, readme, plans, blocks, chapters)
            else:
                print(f"note: no {results.part_precision(part)} rows of part '{part}': its "
                      f"{results.part_precision(part)} charts and tables are left as they were")
            if own.get(TF32) and part == "gemm":
                print()
                images += gemm_tf32_outputs(own[TF32], out, slug, csv_name, readme, plans, blocks, chapters)
            elif own.get(TF32) and part == "conv":
                print()
                images += conv_tf32_outputs(own[TF32], out, slug, csv_name, readme, blocks, chapters)
            for p in images:
                print(f"wrote {p}")
        if readme:
            text = readme.read_text()
            for begin, end, body in blocks:  # every block is checked before the file is written
                text = replace_between(text, begin, end, body, str(readme))
            readme.write_text(text)
            print(f"updated {readme}")
        if args.chapters_dir:
            for name, body in sorted(chapters):
                ch_readme = Path(args.chapters_dir) / name / "README.md"
                if not ch_readme.is_file():
                    continue
                text = ch_readme.read_text()
                ch_readme.write_text(replace_between(text, CHAPTER_BEGIN, CHAPTER_END, body, str(ch_readme)))
                print(f"updated {ch_readme}")
    except (CsvError, MarkerError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
