#!/usr/bin/env python3
"""Charts and tables from a results CSV (plots/data/<gpu-slug>.csv), nothing else.

    python plots/plot.py --csv plots/data/nvidia-h100-80gb-hbm3.csv \
        [--out-dir plots] [--readme README.md] [--chapters-dir chapters]

Writes <out-dir>/<slug>-gemm-{speedup,sweep,roofline}.png, prints the results table, and rewrites
the text between the results markers of README.md and of each chapter's README.md.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results  # noqa: E402
from results import HEADLINE, CsvError, Row  # noqa: E402

README_BEGIN = "<!-- results:gemm:begin -->"
README_END = "<!-- results:gemm:end -->"
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
    """One chapter's rows over the sweep."""
    lines = ["| problem (M×N×K) | time (ms), median [min, max] | TFLOP/s | cuBLAS (ms) | % of cuBLAS | % of FP32 peak | verified |",
             "|---|---|---:|---:|---:|---:|:-:|"]
    for r in sorted(rows, key=lambda r: results.problem_sort_key(r.problem)):
        lines.append(f"| {r.problem.replace('x', '×')} | {fmt_ms(r.time_ms_median)} [{fmt_ms(r.time_ms_min)}, "
                     f"{fmt_ms(r.time_ms_max)}] | {r.tflops:.2f} | {fmt_ms(r.baseline_time_ms)} | "
                     f"{100 * r.ratio_to_baseline:.1f}% | {r.pct_of_peak:.1f}% | {r.verified} |")
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


def sweep_chart(latest: dict, path: Path) -> None:
    """TFLOP/s against problem size, one line per step; odd sizes marked."""
    rows = list(latest.values())
    fig, ax = plt.subplots(figsize=(8, 5))
    def odd(r: Row) -> bool:  # a size that is no multiple of any tile: 4095, 4097, ...
        return r.m % 32 or r.n % 32 or r.k % 32

    for name in results.step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: results.problem_sort_key(r.problem))
        even = [r for r in mine if not odd(r)]
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        line, = ax.plot([r.m for r in even], [r.tflops for r in even], label=label(mine[0]), **style)
        for r in filter(odd, mine):
            ax.plot([(r.m * r.n * r.k) ** (1 / 3)], [r.tflops], marker="x", color=line.get_color(), ms=8, mew=2)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("problem size: M = N = K; × marks odd sizes (not multiples of 32), at (M·N·K)^(1/3)")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"SGEMM throughput against size\n{title_suffix(rows[0])}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def roofline_chart(latest: dict, path: Path) -> None:
    """Each step at each size, placed by its minimum-traffic intensity under the FP32 and DRAM roofs."""
    rows = list(latest.values())
    peak = max(r.peak_gflops for r in rows) / 1e3
    bw = max(r.peak_gbps for r in rows) / 1e3  # TB/s
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [r.intensity for r in rows if r.gbps > 0]
    lo, hi = min(xs + [1.0]) / 2, max(xs + [100.0]) * 2
    if peak > 0 and bw > 0:
        ridge = peak / bw
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(grid, [min(peak, bw * x) for x in grid], color="black", lw=1.5)
        ax.annotate(f"FP32 FMA peak {peak:.1f} TFLOP/s", (hi, peak), ha="right", va="bottom", fontsize=8)
        ax.annotate(f"DRAM {bw:.2f} TB/s (ridge at {ridge:.0f} FLOP/B)", (max(lo, ridge / 30), bw * max(lo, ridge / 30)),
                    rotation=0, va="bottom", fontsize=8)
    for name in results.step_order(rows):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: r.intensity)
        style = dict(marker="o", ms=4) if mine[0].is_chapter else dict(marker="s", ms=4, color="black", ls="--")
        ax.plot([r.intensity for r in mine], [r.tflops for r in mine], label=label(mine[0]), **style)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.set_xlabel("arithmetic intensity, FLOP per byte of minimum DRAM traffic")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(f"SGEMM roofline: every step at every swept size\n{title_suffix(rows[0])}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------------------------

def readme_block(rows: list[Row], images: list[Path], readme: Path, csv_name: str) -> str:
    r0 = rows[0]
    dates = sorted(r.timestamp for r in rows)
    rel = [(p.stem, Path(os.path.relpath(p, readme.parent)).as_posix()) for p in images]
    return "\n".join([
        f"Measured on **{r0.gpu}**, CUDA {r0.cuda}, {dates[-1][:10]}; SGEMM {HEADLINE.replace('x', '×')}, row-major FP32, "
        f"alpha = 1, beta = 0. Each time is the median of event-timed runs with L2 flushed before each run; "
        f"% of cuBLAS compares against cuBLAS FP32 (no TF32) timed in the same process. "
        f"Generated by `make tutorial` from `plots/data/{csv_name}`.",
        "",
        results_table(rows),
        "",
        *[f"![{stem}]({path})" for stem, path in rel],
    ])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="results CSV written by the chapter binaries")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent), help="where the PNGs go")
    ap.add_argument("--readme", help="README.md whose results block is rewritten")
    ap.add_argument("--chapters-dir", help="folder of chapter folders whose README results blocks are rewritten")
    args = ap.parse_args(argv)
    try:
        rows = results.load(args.csv)
        latest = results.latest(rows)
        head = headline_rows(latest)
        if not head:
            raise CsvError(f"{args.csv}: no rows at the headline size {HEADLINE}")
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        slug = Path(args.csv).stem  # the binaries name the file after the GPU (its slug)
        images = [out / f"{slug}-gemm-speedup.png", out / f"{slug}-gemm-sweep.png", out / f"{slug}-gemm-roofline.png"]
        speedup_chart(head, images[0])
        sweep_chart(latest, images[1])
        roofline_chart(latest, images[2])
        print(results_table(head))
        for p in images:
            print(f"wrote {p}")
        if args.readme:
            readme = Path(args.readme)
            text = readme.read_text()
            readme.write_text(replace_between(text, README_BEGIN, README_END, readme_block(head, images, readme, Path(args.csv).name),
                                              str(readme)))
            print(f"updated {readme}")
        if args.chapters_dir:
            for name in sorted({r.chapter for r in latest.values() if r.is_chapter}):
                ch_readme = Path(args.chapters_dir) / name / "README.md"
                if not ch_readme.is_file():
                    continue
                mine = [r for r in latest.values() if r.chapter == name]
                body = (f"Measured on {mine[0].gpu}, CUDA {mine[0].cuda} (from `plots/data/{Path(args.csv).name}`, "
                        f"written by `make tutorial`):\n\n" + chapter_table(mine))
                text = ch_readme.read_text()
                ch_readme.write_text(replace_between(text, CHAPTER_BEGIN, CHAPTER_END, body, str(ch_readme)))
                print(f"updated {ch_readme}")
    except (CsvError, MarkerError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
