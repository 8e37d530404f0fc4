"""What the charts of every family share: matplotlib on its file-only backend, the figure and its
file, bar labels, plain tick labels on log axes, and the roofline's roofs.

matplotlib is imported on first use, so that bench.py, which imports the family modules for their
benchmark runs, needs no plotting library.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

DPI = 120
STEP_COLOUR = "#4C72B0"  # a chapter's bar or line where the chart has no colour of its own for it


def pyplot():
    """matplotlib.pyplot, drawing to files only (the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(figsize, **kw):
    """(fig, ax) of a new figure; with kw, pyplot.subplots' (fig, axes)."""
    return pyplot().subplots(figsize=figsize, **kw)


def save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)


def suffix(r) -> str:
    """The second line of every chart's title: where it was measured."""
    return f"{r.gpu}, CUDA {r.cuda}"


def label_bars(ax, bars, notes: list[str], fontsize: float) -> None:
    """Each bar's note centred above it."""
    for b, text in zip(bars, notes):
        ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=fontsize)


def spread(ax, xs, libs, rate: str = "tflops", horizontal: bool = False) -> None:
    """Black whiskers over the bars at xs of the libraries (baselines.Baseline) whose processes
    disagreed by more than baselines.WIDE_SPREAD: from the slowest process's rate to the fastest's
    (rate: "tflops", "gbps" or "ms", the bars' unit; horizontal: bars drawn with barh)."""
    for x, b in zip(xs, libs):
        if not (b and b.wide):
            continue
        lo, hi = b.range_in(rate)
        if horizontal:
            ax.plot([lo, hi], [x, x], color="black", lw=1.2, marker="|", ms=6, zorder=5)
        else:
            ax.plot([x, x], [lo, hi], color="black", lw=1.2, marker="_", ms=6, zorder=5)


SPREAD_NOTE = "whiskers: the spread of a library's medians over its processes, where over 5%"


def tilt(ax, rotation: float = 30) -> None:
    """The x tick labels turned, right-aligned under their bars."""
    pyplot().setp(ax.get_xticklabels(), rotation=rotation, ha="right")


def wrap(text: str, width: int = 22) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text


def legend_box(**kw):
    """A plain rectangle for a hand-made legend entry."""
    return pyplot().Rectangle((0, 0), 1, 1, **kw)


def plain(axis) -> None:
    """The axis' major ticks labelled as plain numbers (10, 0.5), not powers of ten."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def minor_labels(axis, thresholds: tuple[float, float]) -> None:
    """Plain labels on the minor ticks of a log axis too, where it spans little (LogFormatter's
    minor_thresholds)."""
    from matplotlib.ticker import LogFormatter

    axis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=thresholds))


def roofs(ax, rows, peak_name: str = "FP32 FMA peak") -> tuple[float, float]:
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
    plain(ax.xaxis)
    plain(ax.yaxis)
    ax.set_xlabel("arithmetic intensity, FLOP per byte of minimum DRAM traffic")
    ax.set_ylabel("TFLOP/s (median)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
