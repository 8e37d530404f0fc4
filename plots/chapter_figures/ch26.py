"""Chapter 26: registers + W in shared memory. The loop turned inside out (k outside, 16 sums in registers,
W read as a broadcast from shared memory), one warp's schedule with one load of X in flight, and the
instructions per row of H against chapter 25.

The schedule is schematic: its latencies are typical values, assumed (L1 hit about 40 cycles, DRAM about
1000), not measured. The instruction counts are the kernels' (cuobjdump -sass of the sm_90 builds).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import cells  # noqa: E402

CHAPTER = "26_skinny_gemm_smem_w"

F_IN = 128
F_OUT = 16
BLOCK_THREADS = 256

# Assumed latencies, in cycles, for the schematic schedule.
L1_HIT = 40
DRAM = 1000
DFMA_BURST = 40  # 16 DFMAs and 8 shared loads of W, once the value of X is there

LOAD_COLOUR = "#6baed6"
MISS_COLOUR = "#de2d26"
FMA_COLOUR = "#31a354"
W_COLOUR = "#e6a817"
ACC_COLOUR = "#fff5d6"


def per_row() -> dict[str, tuple[int, int]]:
    """(chapter 25, chapter 26) per row of H: global loads, global stores, shared loads (thread level)."""
    return {
        "global loads": (2 * F_IN * F_OUT, F_IN + F_IN * F_OUT // BLOCK_THREADS),  # 23: X once + its share of W
        "global stores": (F_IN * F_OUT + F_OUT, F_OUT),
        "shared loads (16 B)": (0, F_IN * F_OUT // 2),  # 8 LDS.128 per k, each a broadcast
    }


def _loop(ax):
    ax.set_xlim(-1, 52)
    ax.set_ylim(22, -3.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("(1) k outside, j inside: one value of X, times a row of W, into 16 sums in registers",
                 fontsize=10, loc="left")
    shown = 24  # of X's 128 columns and W's 128 rows
    k = 6
    # row r of X
    cells(ax, 0, 0, 1, shown)
    ax.add_patch(Rectangle((k, 0), 1, 1, color=LOAD_COLOUR))
    ax.text(0, -0.6, f"row r of X (first {shown} of {F_IN} values): X[r][k], one 8-byte load", fontsize=8)
    # W in shared memory
    wx = 2
    cells(ax, wx, 3, shown - 8, F_OUT)
    for j in range(F_OUT):
        ax.add_patch(Rectangle((wx + j, 3 + k), 1, 1, color=W_COLOUR))
    ax.text(wx, 2.5, "W in shared memory (16 KB per block), row k", fontsize=8)
    ax.text(wx + F_OUT + 0.5, 3 + k + 0.5, "← 8 LDS.128, the same\n   address in all 32 lanes:\n   broadcasts", fontsize=7.5,
            va="center")
    # accumulators
    ax.add_patch(FancyArrowPatch((wx + F_OUT / 2, 3 + shown - 8 + 0.3), (wx + F_OUT / 2, 20.2), arrowstyle="-|>",
                                 mutation_scale=10, color="#444444"))
    cells(ax, wx, 20.3, 1, F_OUT, lw=0.6, ec="#555555")
    for j in range(F_OUT):
        ax.add_patch(Rectangle((wx + j, 20.3), 1, 1, color=ACC_COLOUR, ec="#555555", lw=0.5))
    ax.text(wx + F_OUT + 0.5, 20.8, "acc[0..15] += X[r][k] · W[k][0..15]: 16 DFMAs,\nin registers; stored once, "
            "after k = 127", fontsize=7.5, va="center")
    ax.text(30, 4, "chapter 25:  for j { out[r][j] = 0;\n                for k  out[r][j] += X[r][k]·W[k][j] }\n"
            "   2048 loads of X, 2048 of W, 2064 stores per row\n\n"
            "chapter 26:  for k { x = X[r][k];\n                for j  acc[j] += x·Ws[k][j] }\n"
            "   128 loads of X, 1024 LDS.128 of W, 16 stores",
            fontsize=7.5, va="top", family="monospace")


def _schedule(ax):
    steps = 8
    t = 0
    ax.set_title("(2) one warp, k = 0 .. 7 (schematic: L1 hit ~40 cycles, DRAM ~1000, assumed): one load in "
                 "flight;\nk = 0 and 4 start a new 32-byte sector of each row (a miss), k = 1–3 and 5–7 must find "
                 "it still in L1", fontsize=9.5, loc="left")
    for k in range(steps):
        miss = k % 4 == 0
        lat = DRAM if miss else L1_HIT
        ax.add_patch(Rectangle((t, 0.6), lat, 0.8, color=MISS_COLOUR if miss else LOAD_COLOUR))
        ax.text(t + lat / 2, 1.0, f"load k={k}" if miss else f"{k}", ha="center", va="center", fontsize=7,
                color="white" if miss else "black")
        t += lat
        ax.add_patch(Rectangle((t, 0.6), DFMA_BURST, 0.8, color=FMA_COLOUR))
        t += DFMA_BURST
    ax.set_xlim(0, t * 1.02)
    ax.set_ylim(0, 2)
    ax.set_yticks([])
    ax.set_xlabel("cycles (schematic)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.text(t * 0.5, 1.75, "red: load that misses (DRAM)   blue: load that hits L1   green: 16 DFMAs + 8 LDS.128 of W",
            ha="center", fontsize=8)


def _counts(ax):
    c = per_row()
    names = list(c)
    y = range(len(names))
    a = [c[n][0] for n in names]
    b = [c[n][1] for n in names]
    ax.barh([i - 0.2 for i in y], a, height=0.38, color="#969696", label="chapter 25")
    ax.barh([i + 0.2 for i in y], b, height=0.38, color="#3182bd", label="chapter 26")
    for i in y:
        if a[i]:
            ax.text(a[i] * 1.1, i - 0.2, f"{a[i]:,}", va="center", fontsize=8)
        ax.text(b[i] * 1.1, i + 0.2, f"{b[i]:,}", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_xlim(5, 2e4)
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=9)
    ax.invert_yaxis()
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.set_title("(3) memory instructions per row of H\n(thread level, F_in = 128, F_out = 16)", fontsize=9.5,
                 loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="x", labelsize=8)


def outer_product(path: Path) -> None:
    fig = plt.figure(figsize=(14, 9.5))
    gs = fig.add_gridspec(2, 2, height_ratios=[1.7, 1], width_ratios=[1.9, 1], hspace=0.3, wspace=0.15)
    _loop(fig.add_subplot(gs[0, :]))
    _schedule(fig.add_subplot(gs[1, 0]))
    _counts(fig.add_subplot(gs[1, 1]))
    fig.suptitle("Chapter 26: 16 sums in registers, W in shared memory, one load of X at a time", fontsize=12,
                 y=0.96)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"outer-product.png": outer_product}
