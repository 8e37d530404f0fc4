"""Chapter 16's picture: the implicit GEMM with 16x16 tiles of W and X_col in shared memory.

Top: the block walks its strip of W (the filter, read as stored) and its strip of X_col, which is
never stored: each K step gathers its tile from x through the coordinate maps. Bottom left: who
gathers which element of X_col's tile (a thread keeps its column, its output pixel, for the whole
loop; its row, a filter tap, moves by BLOCK_K per step). Bottom right: where one row of that tile
comes from in x, at the headline layer.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cell_grid, cells, lane_color  # noqa: E402

CHAPTER = "16_implicit_gemm_smem"

BLOCK_M = 16  # BLOCK_M in chapters/16_implicit_gemm_smem/kernel.cuh (filters k per block tile)
BLOCK_N = 16  # BLOCK_N (output pixels j per block tile)
BLOCK_K = 16  # BLOCK_K (filter taps kk per K step)
NUM_THREADS = BLOCK_M * BLOCK_N

# The walk of panel (1): illustration sizes in block tiles, not the kernel's.
TILES_M, TILES_N, TILES_K = 3, 4, 5
BLOCK_ROW, BLOCK_COL, K_STEP = 1, 2, 2

# Panel (3): the headline layer seed_3x3, the block column whose 16 pixels straddle two output rows.
H = W = 56
R = S = 3
PAD, STRIDE, DIL = 1, 1, 1
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1  # 56
TRACE_BLOCK_COL = 3  # columns j = 48 .. 63: (p, q) = (0, 48) .. (0, 55), (1, 0) .. (1, 7)
TRACE_TAP = (0, 1, 0)  # (c, r, s) of the traced row of the tile
ROWS_DRAWN = 3  # input rows 0 .. 2 (and the padding row -1)

CURRENT = "#e8a33d"  # the tiles of this K step
DONE = "#f6dcb3"  # earlier K steps
AHEAD = "#f4f4f4"  # later K steps
PAD_COLOUR = "#d9d9d9"
BOX = dict(fc="white", ec="none", alpha=0.9, pad=1.5)


def _matrix(ax, x0, y0, rows, cols, name, fill, dashed=False):
    """A matrix of rows x cols block tiles, top-left corner (x0, y0); fill(r, c) -> colour."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c, y0 + r), 1, 1, fc=fill(r, c), ec="#888888", lw=0.8,
                                   ls="--" if dashed else "-"))
    ax.add_patch(Rectangle((x0, y0), cols, rows, fill=False, ec="black", lw=1.4, ls="--" if dashed else "-"))
    ax.annotate(name, (x0 - 0.25, y0 + rows / 2), ha="right", va="center", fontsize=12, fontweight="bold")


def _walk(ax) -> None:
    """Panel (1): the block's strips of W and X_col; X_col's tiles are gathered, never read from a matrix."""
    ax.set_title(f"(1) one block computes a {BLOCK_M}×{BLOCK_N} tile of Y (filters × output pixels); per K step of "
                 f"{BLOCK_K} taps it stages a tile of W and a tile of X_col in shared memory", fontsize=11)
    wx, wy = 0.0, TILES_K + 1.0  # W: below-left
    xx, xy = TILES_K + 1.0, 0.0  # X_col: above Y
    yx, yy = xx, wy  # Y: below X_col, right of W

    def fill_w(r, c):
        if r != BLOCK_ROW:
            return AHEAD
        return CURRENT if c == K_STEP else (DONE if c < K_STEP else "#fbefdc")

    def fill_x(r, c):
        if c != BLOCK_COL:
            return "white"
        return CURRENT if r == K_STEP else (DONE if r < K_STEP else "#fbefdc")

    _matrix(ax, wx, wy, TILES_M, TILES_K, "W", fill_w)
    _matrix(ax, xx, xy, TILES_K, TILES_N, "X_col", fill_x, dashed=True)
    _matrix(ax, yx, yy, TILES_M, TILES_N, "Y", lambda r, c: "#d62728" if (r, c) == (BLOCK_ROW, BLOCK_COL) else "white")
    ax.annotate("Ws", (wx + K_STEP + 0.5, wy + BLOCK_ROW + 0.5), ha="center", va="center", fontsize=11,
                fontweight="bold")
    ax.annotate("Xs", (xx + BLOCK_COL + 0.5, xy + K_STEP + 0.5), ha="center", va="center", fontsize=11,
                fontweight="bold")
    ax.annotate("this\nblock", (yx + BLOCK_COL + 0.5, yy + BLOCK_ROW + 0.5), ha="center", va="center", fontsize=9,
                color="white", fontweight="bold")
    ax.add_patch(FancyArrowPatch((wx + 0.1, wy + TILES_M + 0.45), (wx + TILES_K - 0.1, wy + TILES_M + 0.45),
                                 arrowstyle="->", mutation_scale=14, lw=1.2))
    ax.annotate("kk0 = 0, 16, 32, …  (taps)", (wx + TILES_K / 2, wy + TILES_M + 0.9), ha="center", fontsize=10)
    ax.add_patch(FancyArrowPatch((xx + TILES_N + 0.45, xy + 0.1), (xx + TILES_N + 0.45, xy + TILES_K - 0.1),
                                 arrowstyle="->", mutation_scale=14, lw=1.2))
    ax.annotate("kk0", (xx + TILES_N + 0.65, xy + TILES_K / 2), va="center", fontsize=10)

    tx = xx + TILES_N + 1.8
    lines = [
        ("per K step kk0 (the orange tiles):", "black", "bold"),
        ("1. every thread copies one element of W's tile into Ws[16][16]: w[k·C·R·S + kk],", "black", "normal"),
        ("   the filter as stored (16 consecutive taps per half-warp)", "black", "normal"),
        ("   and GATHERS one element of X_col's tile into Xs[16][16] (panels 2 and 3):", "black", "normal"),
        ("   (c, r, s) = tap_coord(kk), then x[n][c][p·stride − pad + r·dil][q·stride − pad + s·dil]", "black",
         "normal"),
        ("   or 0 in the padding; (n, p, q) = out_coord(j) was found once, before the loop", "black", "normal"),
        ("2. __syncthreads()", "black", "normal"),
        ("3. 16 FMAs out of shared memory: acc += Ws[row][k] · Xs[k][col]   (chapter 03's loop)", "black",
         "normal"),
        ("4. __syncthreads()", "black", "normal"),
        ("", "black", "normal"),
        ("dashed: X_col exists nowhere in memory; only its tiles, one K step at a time, in shared memory.", "#9a6a1e",
         "normal"),
        ("One tap_coord per thread and K step: per 16 FMAs, where chapter 15 needed one per FMA.", "#9a6a1e",
         "normal"),
    ]
    for i, (text, colour, weight) in enumerate(lines):
        ax.annotate(text, (tx, 0.3 + 0.6 * i), fontsize=10, color=colour, fontweight=weight, va="top")
    ax.set_xlim(-1.6, tx + 17.5)
    ax.set_ylim(wy + TILES_M + 1.3, -0.3)
    ax.set_aspect("equal")
    ax.axis("off")


def _gather(ax) -> None:
    """Panel (2): thread tid gathers Xs[tid / 16][tid % 16]; warp w gathers rows 2w and 2w + 1."""
    cell_grid(ax, BLOCK_K, BLOCK_N,
              f"(2) the gather: thread tid writes Xs[tid / {BLOCK_N}][tid % {BLOCK_N}];\n"
              f"its column (one output pixel j) is the same at every K step,\nits row is tap kk0 + tid / {BLOCK_N}",
              fontsize=10)
    rows_per_warp = WARP // BLOCK_N
    for tid in range(NUM_THREADS):
        row, col = divmod(tid, BLOCK_N)
        warp, lane = divmod(tid, WARP)
        ax.add_patch(Rectangle((col, row), 1, 1, color=lane_color(lane), alpha=1.0 if warp == 0 else 0.22))
    ax.annotate(f"← warp 0: rows 0 and 1, {rows_per_warp} taps × {BLOCK_N} pixels", (BLOCK_N + 0.3, 1.0),
                fontsize=9, va="center", annotation_clip=False)
    ax.annotate("lanes 0–15 and 16–31 gather the same 16\noutput pixels for two neighbouring taps",
                (0.5, 9.5), fontsize=9, va="top", bbox=BOX)
    ax.set_xlabel("column of the tile: output pixel j = block_col + tid % 16 →", fontsize=9)
    ax.set_ylabel("row of the tile: tap kk = kk0 + tid / 16", fontsize=9)


def _source(ax) -> None:
    """Panel (3): where the 16 elements of one row of Xs lie in x, for a block column that straddles two rows."""
    c, r, s = TRACE_TAP
    cols = range(-PAD, W + PAD)
    rows = range(-PAD, ROWS_DRAWN)
    x0, y0 = PAD, PAD
    ax.set_xlim(-0.5, len(cols) + 0.5)
    ax.set_ylim(len(rows) + 2.6, -0.2)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    first_j = TRACE_BLOCK_COL * BLOCK_N
    ax.set_title(f"(3) seed_3x3, block column {TRACE_BLOCK_COL} (pixels j = {first_j} … {first_j + BLOCK_N - 1}): "
                 f"where one row of Xs, tap (c, r, s) = ({c}, {r}, {s}), comes from in x[n][c][·][·]\n"
                 f"16 lanes, consecutive j: two runs of neighbouring floats, because the 16 pixels end one output "
                 "row and start the next; hatched: in the padding, stored as 0", fontsize=10)
    for ih in rows:
        for iw in cols:
            if not (0 <= ih < H and 0 <= iw < W):
                ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, color=PAD_COLOUR))
    cells(ax, 0, 0, len(rows), len(cols), lw=0.2)
    ax.add_patch(Rectangle((x0, y0), W, ROWS_DRAWN, fill=False, ec="black", lw=1.0))
    for lane in range(BLOCK_N):
        p, q = divmod(first_j + lane, Q)  # n = 0 for these columns
        ih, iw = p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL
        if 0 <= ih < H and 0 <= iw < W:
            ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, color=lane_color(2 * lane)))
        else:
            ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, fill=False, ec=lane_color(2 * lane), lw=2.0,
                                   hatch="xx"))
    ax.annotate("the same 16 addresses are read once per block and K step, and the value serves all 16 filters "
                "of the tile", (x0 + 2, len(rows) + 1.0), fontsize=9, va="top")
    ax.set_xlabel("iw →", fontsize=9)


def ch16_implicit_gemm_tiles(path: Path) -> None:
    """Chapter 16: 16x16 tiles of W and of the gathered X_col in shared memory."""
    fig = plt.figure(figsize=(18, 11))
    gs = fig.add_gridspec(2, 2, height_ratios=[0.8, 1.0], width_ratios=[1.0, 2.6], hspace=0.02, wspace=0.12)
    _walk(fig.add_subplot(gs[0, :]))
    _gather(fig.add_subplot(gs[1, 0]))
    _source(fig.add_subplot(gs[1, 1]))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"implicit-gemm-tiles.png": ch16_implicit_gemm_tiles}
