"""Chapter 04: a thread computes a column of THREAD_M results, reusing one value of B from a register."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from chapter_figures._draw import WARP, cells, lane_color  # noqa: E402

CHAPTER = "04_1d_register_tiling"

# The tunables of chapters/04_1d_register_tiling/kernel.cuh.
BLOCK_M = 64  # BLOCK_M
BLOCK_N = 64  # BLOCK_N
BLOCK_K = 8  # BLOCK_K
THREAD_M = 8  # THREAD_M: results per thread, stacked in one column of C
THREAD_ROWS = BLOCK_M // THREAD_M  # rows of threads in the block (8)
NUM_THREADS = THREAD_ROWS * BLOCK_N  # NUM_THREADS = 512

SHOWN_K = 3  # the loop step k drawn in panel (2)
HIGHLIGHT = "#d62728"  # thread 0
A_COLOR = "#1f77b4"
B_COLOR = "#ff7f0e"
ACC_COLOR = "#2ca02c"


def _c_tile_panel(ax) -> None:
    """(1) Who computes what: thread tid owns rows (tid / BLOCK_N) * THREAD_M + 0..7 of column tid % BLOCK_N."""
    ax.set_xlim(-1, BLOCK_N + 1)
    ax.set_ylim(BLOCK_M + 9, -1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) the {BLOCK_M}×{BLOCK_N} C tile of one block ({NUM_THREADS} threads):\n"
                 f"each thread owns a column of THREAD_M = {THREAD_M} results;\n"
                 f"warp 0 = threads 0–31 = the first row of threads", fontsize=9)
    cells(ax, 0, 0, BLOCK_M, BLOCK_N)
    # Warp 0: lanes 0..31 -> columns 0..31, rows 0..7; warp 1: columns 32..63 of the same rows (faded).
    for lane in range(WARP):
        ax.add_patch(Rectangle((lane, 0), 1, THREAD_M, color=lane_color(lane)))
        ax.add_patch(Rectangle((WARP + lane, 0), 1, THREAD_M, color=lane_color(lane), alpha=0.3))
    for tr in range(THREAD_ROWS + 1):  # boundaries between rows of threads
        ax.plot([0, BLOCK_N], [tr * THREAD_M] * 2, color="#777777", lw=0.6)
    ax.add_patch(Rectangle((0, 0), 1, THREAD_M, fill=False, ec=HIGHLIGHT, lw=2.0))
    ax.add_patch(Rectangle((0, 0), BLOCK_N, BLOCK_M, fill=False, ec="black", lw=1.0))
    ax.annotate("thread 0: rows 0–7 of column 0", xy=(1, THREAD_M / 2), xytext=(10, 20), fontsize=8,
                color=HIGHLIGHT, arrowprops=dict(arrowstyle="->", color=HIGHLIGHT, lw=1.0))
    ax.annotate("warp 0 (bright) and warp 1 (faded):\nrow 0 of threads", xy=(40, 4), xytext=(34, 30),
                fontsize=8, arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.annotate(f"thread {BLOCK_N}: rows {THREAD_M}–{2 * THREAD_M - 1} of column 0 (row 1 of threads)",
                xy=(0.5, THREAD_M + 4), xytext=(6, 42), fontsize=8,
                arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.annotate(f"{THREAD_ROWS} rows of threads × {BLOCK_N} columns = {NUM_THREADS} threads",
                (BLOCK_N / 2, BLOCK_M + 4), ha="center", fontsize=8)


def _step_panel(ax) -> None:
    """(2) One step k of the inner loop, laid out as a small GEMM: As on the left, Bs on top, C below it."""
    gap = 2
    cx, cy = BLOCK_K + gap, BLOCK_K + gap  # origin of the C tile
    ax.set_xlim(-1, cx + BLOCK_N + 1)
    ax.set_ylim(cy + BLOCK_M + 10, -5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(2) the shared tiles at loop step k = {SHOWN_K} (BLOCK_K = {BLOCK_K}):\n"
                 "what warp 0 reads from shared memory", fontsize=9)
    # As: BLOCK_M x BLOCK_K at (0, cy); Bs: BLOCK_K x BLOCK_N at (cx, 0); C: BLOCK_M x BLOCK_N at (cx, cy).
    cells(ax, 0, cy, BLOCK_M, BLOCK_K)
    cells(ax, cx, 0, BLOCK_K, BLOCK_N)
    ax.add_patch(Rectangle((0, cy), BLOCK_K, BLOCK_M, fill=False, ec="black", lw=1.0))
    ax.add_patch(Rectangle((cx, 0), BLOCK_N, BLOCK_K, fill=False, ec="black", lw=1.0))
    ax.add_patch(Rectangle((cx, cy), BLOCK_N, BLOCK_M, fc="#f4f4f4", ec="black", lw=1.0))
    ax.annotate("As", (-0.5, cy + BLOCK_M / 2), ha="right", va="center", fontsize=9)
    ax.annotate("Bs", (cx + BLOCK_N / 2, -1.5), ha="center", fontsize=9)
    # A: As[0..7][k], the same 8 values for all 32 lanes of warp 0 (a broadcast).
    ax.add_patch(Rectangle((SHOWN_K, cy), 1, THREAD_M, color=A_COLOR))
    ax.add_patch(Rectangle((SHOWN_K, cy), 1, THREAD_M, fill=False, ec=HIGHLIGHT, lw=1.6))
    # B: Bs[k][lane], one value per lane: a row segment of 32 consecutive floats.
    for lane in range(WARP):
        ax.add_patch(Rectangle((cx + lane, SHOWN_K), 1, 1, color=lane_color(lane)))
    ax.add_patch(Rectangle((cx, SHOWN_K), 1, 1, fill=False, ec=HIGHLIGHT, lw=1.6))
    # C: warp 0's results, which the step updates.
    for lane in range(WARP):
        ax.add_patch(Rectangle((cx + lane, cy), 1, THREAD_M, color=lane_color(lane), alpha=0.45))
    ax.add_patch(Rectangle((cx, cy), 1, THREAD_M, fill=False, ec=HIGHLIGHT, lw=1.6))
    ax.annotate(f"As[0..{THREAD_M - 1}][k]: {THREAD_M} loads,\nthe same address in all\n"
                "32 lanes (broadcast)", xy=(SHOWN_K + 1, cy + THREAD_M / 2), xytext=(cx + 3, cy + 22),
                fontsize=8, color=A_COLOR, arrowprops=dict(arrowstyle="->", color=A_COLOR, lw=1.0))
    ax.annotate("Bs[k][lane]: 1 load,\n32 consecutive floats", xy=(cx + WARP - 2, SHOWN_K + 1),
                xytext=(cx + WARP + 4, cy + 14), fontsize=8, color="#b35900",
                arrowprops=dict(arrowstyle="->", color="#b35900", lw=1.0))
    ax.annotate(f"each lane: {THREAD_M} FMAs into its column", xy=(cx + WARP / 2, cy + THREAD_M),
                xytext=(cx + 20, cy + 40), fontsize=8, arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.annotate("red: thread 0", (cx, cy + BLOCK_M + 4), fontsize=8, color=HIGHLIGHT)


def _register_panel(ax) -> None:
    """(3) Inside thread 0 at step k: b in a register, THREAD_M values of A, THREAD_M accumulators."""
    ax.set_xlim(-0.5, 14)
    ax.set_ylim(THREAD_M + 4.5, -3.8)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("(3) inside thread 0 at step k:\n"
                 "acc[i] += As[row + i][k] · b,  i = 0 … 7", fontsize=9)
    y0 = 1.0
    # The b register, above the arrows that use it.
    bx = 7.0
    ax.add_patch(Rectangle((bx, -1.9), 1.4, 1.1, fc=B_COLOR, ec="black", lw=0.8))
    ax.annotate("b", (bx + 0.7, -1.35), ha="center", va="center", fontsize=10, weight="bold")
    ax.annotate("b = Bs[k][col]: 1 shared load,\nthen read from a register 8 times", (bx + 1.7, -1.35),
                va="center", fontsize=8, color="#b35900")
    # The A values, loaded from shared memory.
    ax_x = 2.5
    for i in range(THREAD_M):
        ax.add_patch(Rectangle((ax_x, y0 + i), 1.6, 1, fc=A_COLOR, alpha=0.75, ec="black", lw=0.6))
        ax.annotate(f"a{i}", (ax_x + 0.8, y0 + i + 0.5), ha="center", va="center", fontsize=8, color="white")
    ax.annotate(f"a_i =\nAs[row + i][k]:\n{THREAD_M} shared\nloads of A", (ax_x - 0.3, y0 + THREAD_M / 2), ha="right", va="center",
                fontsize=8, color=A_COLOR)
    # The accumulators; each arrow is one FMA: acc[i] += a_i * b.
    acc_x = 10.5
    for i in range(THREAD_M):
        ax.add_patch(Rectangle((acc_x, y0 + i), 1.8, 1, fc=ACC_COLOR, alpha=0.6, ec="black", lw=0.6))
        ax.annotate(f"acc[{i}]", (acc_x + 0.9, y0 + i + 0.5), ha="center", va="center", fontsize=8)
        ax.add_patch(FancyArrowPatch((ax_x + 1.7, y0 + i + 0.5), (acc_x - 0.1, y0 + i + 0.5), arrowstyle="->",
                                     mutation_scale=8, lw=0.7, color="#555555"))
        ax.annotate("× b", (bx + 0.7, y0 + i + 0.42), ha="center", va="center", fontsize=8, color="#b35900",
                    bbox=dict(fc="white", ec="none", pad=0.5))
    ax.add_patch(FancyArrowPatch((bx + 0.7, -0.75), (bx + 0.7, y0 + 0.1), arrowstyle="->", mutation_scale=8,
                                 lw=0.9, color=B_COLOR))
    ax.annotate(f"{THREAD_M} registers,\nkept for all of K", (acc_x + 0.9, y0 - 0.3), ha="center", va="bottom",
                fontsize=8, color="#1e6b1e")
    ax.annotate(f"per k: {THREAD_M} + 1 = {THREAD_M + 1} shared loads for {THREAD_M} FMAs  "
                f"({(THREAD_M + 1) / THREAD_M:.3f} per FMA)\n"
                "chapter 03: 2 shared loads for 1 FMA  (2 per FMA)",
                (0.3, y0 + THREAD_M + 1.2), fontsize=8, va="top")


def ch04_register_column(path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(17, 6.8), gridspec_kw=dict(width_ratios=[1.0, 1.15, 0.95]))
    _c_tile_panel(axes[0])
    _step_panel(axes[1])
    _register_panel(axes[2])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {"register-column.png": ch04_register_column}
