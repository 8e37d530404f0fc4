"""Chapter 25: the naive skinny GEMM H = X W, one thread per row, the sum kept in global memory. What one
warp touches at one step (j, k) of its loops, and the traffic of the whole problem against the minimum.

Every number is arithmetic from the default problem's sizes and the kernel's loops (the README's counts),
not a measurement.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cells, lane_color  # noqa: E402

CHAPTER = "25_skinny_gemm_naive"

# The default problem (docs/gcn-layer.md) and the H100 of the README.
V = 281903
F_IN = 128
F_OUT = 16
SECTOR = 32  # bytes
DOUBLE = 8
RESIDENT_THREADS = 132 * 2048  # 32 registers per thread: 2048 threads per SM

SECTOR_COLOUR = "#d62728"
W_COLOUR = "#e6a817"


def counts() -> dict[str, tuple[float, float]]:
    """(sectors the kernel asks L1 for, the minimum) per stream, in millions, on the default problem."""
    steps = V * F_IN * F_OUT  # thread-level steps: one load of X, one of W, one store of out each
    warps = -(-V // WARP)
    return {
        "loads of X": (steps / 1e6, V * F_IN * DOUBLE / SECTOR / 1e6),  # 32 rows per request: 1 sector per lane
        "loads of W": (warps * F_IN * F_OUT / 1e6, F_IN * F_OUT * DOUBLE / SECTOR / 1e6),  # a broadcast: 1 sector
        "stores of out": ((steps + V * F_OUT) / 1e6, V * F_OUT * DOUBLE / SECTOR / 1e6),
    }


def _grid(ax, x0, rows, cols, title, note=None):
    cells(ax, x0, 0, rows, cols)
    ax.text(x0 + cols / 2, -1.2, title, ha="center", va="bottom", fontsize=9)
    if note:
        ax.text(x0 + cols / 2, rows + 0.8, note, ha="center", va="top", fontsize=7.5, color="#333333")


def _warp_step(ax):
    rows = WARP
    x_cols = 24  # the first 24 of X's 128 columns
    k, j = 5, 3  # the step drawn
    ax.set_xlim(-3, 76)
    ax.set_ylim(rows + 9, -4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) warp 0 at step (j = {j}, k = {k}): out[r][j] += X[r][k] * W[k][j] for its 32 rows r",
                 fontsize=10, loc="left")
    # X: 32 rows (one per lane), the first 24 columns; column k read, its sector (4 doubles) outlined
    _grid(ax, 0, rows, x_cols, f"X, rows 0–31 (first {x_cols} of {F_IN} columns)",
          "32 rows 1 KB apart: 32 lines,\n32 sectors for 256 useful bytes")
    for lane in range(rows):
        ax.add_patch(Rectangle((k, lane), 1, 1, color=lane_color(lane)))
        ax.add_patch(Rectangle((4, lane), 4, 1, fill=False, ec=SECTOR_COLOUR, lw=0.8))
    # W: one element, the same for every lane
    wx = x_cols + 5
    w_rows = 24
    _grid(ax, wx, w_rows, F_OUT, f"W (first {w_rows} of {F_IN} rows)", "one address for all 32 lanes:\na broadcast")
    ax.add_patch(Rectangle((wx + j, k), 1, 1, color=W_COLOUR))
    # out: 32 rows of 16; column j read-modified-written
    ox = wx + F_OUT + 5
    _grid(ax, ox, rows, F_OUT, "out = H, rows 0–31", "store of the running sum at every\nstep: 32 sectors, 8 B of each")
    for lane in range(rows):
        ax.add_patch(Rectangle((ox + j, lane), 1, 1, color=lane_color(lane)))
        ax.add_patch(Rectangle((ox, lane), 4, 1, fill=False, ec=SECTOR_COLOUR, lw=0.8))
    ax.text(ox + F_OUT + 1, 2, "per thread:\n2048 steps =\n16 columns j\n× 128 k,\neach a load\nof X, a load\nof W, "
            "a DFMA\nand a store", fontsize=7.5, va="top")
    ax.text(ox + F_OUT + 1, 18, "j outside k:\nthe thread\nsweeps its\n1 KB row of X\n16 times", fontsize=7.5,
            va="top")


def _traffic(ax):
    c = counts()
    names = list(c)
    y = range(len(names))
    asked = [c[n][0] for n in names]
    least = [c[n][1] for n in names]
    ax.barh([i - 0.2 for i in y], asked, height=0.38, color="#de2d26", label="sectors the kernel asks for")
    ax.barh([i + 0.2 for i in y], least, height=0.38, color="#3182bd", label="the minimum (each byte once)")
    for i in y:
        ax.text(asked[i] * 1.15, i - 0.2, f"{asked[i]:,.1f} M", va="center", fontsize=8)
        ax.text(least[i] * 1.15, i + 0.2, f"{least[i]:,.3f} M" if least[i] < 1 else f"{least[i]:,.1f} M",
                va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(1e-4, 5e3)
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.set_xlabel("32-byte sectors, millions (log scale)", fontsize=8.5)
    ax.legend(fontsize=8, loc="lower right", frameon=False)
    ax.set_title(f"(2) the whole problem (V = {V:,}, {F_IN} → {F_OUT}): L1 requests by sector\n"
                 f"{RESIDENT_THREADS:,} threads resident = {RESIDENT_THREADS / V:.0%} of the rows: each sweep "
                 "of j streams nearly all of X (288.6 MB) again:\nup to 16 × 288.6 MB = 4.6 GB from DRAM",
                 fontsize=9.5, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="x", labelsize=8)


def naive_traffic(path: Path) -> None:
    fig = plt.figure(figsize=(13, 9.5))
    gs = fig.add_gridspec(2, 1, height_ratios=[1.5, 1], hspace=0.25)
    _warp_step(fig.add_subplot(gs[0]))
    _traffic(fig.add_subplot(gs[1]))
    fig.suptitle("Chapter 25: one thread per row of X, the running sum stored to global memory at every step",
                 fontsize=12, y=0.97)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"naive-traffic.png": naive_traffic}
