"""Chapter 03's picture: 32x32 tiles of A and B staged in shared memory as the block walks K.

Top: the block's strip of A and strip of B, one tile per K step. Bottom: which thread copies which
element of a tile (a warp copies one row: a coalesced 128-byte load), and who reads what in the inner
loop (every staged element is read by 32 threads: loaded once per tile, used 32 times).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cell_grid, lane_color  # noqa: E402

CHAPTER = "03_smem_tiling"

BLOCK_M = 32  # BLOCK_M in chapters/03_smem_tiling/kernel.cuh (rows of the C tile, and of the A tile)
BLOCK_N = 32  # BLOCK_N in chapters/03_smem_tiling/kernel.cuh (columns of the C tile, and of the B tile)
BLOCK_K = 32  # BLOCK_K in chapters/03_smem_tiling/kernel.cuh (the K step: columns of As, rows of Bs)
NUM_THREADS = BLOCK_M * BLOCK_N  # NUM_THREADS in the kernel: one thread per element of the C tile

# The walk drawn in panel (1): a C made of TILES_M x TILES_N block tiles, K of TILES_K steps, and the
# block (BLOCK_ROW, BLOCK_COL) at its step K_STEP. Illustration sizes, not the kernel's.
TILES_M, TILES_N, TILES_K = 3, 4, 5
BLOCK_ROW, BLOCK_COL, K_STEP = 1, 2, 2
# The inner-loop step k and the thread (THREAD_ROW, THREAD_COL) highlighted in panels (3) and (4).
INNER_K = 7
THREAD_ROW, THREAD_COL = 5, 20

CURRENT = "#e8a33d"  # the tiles staged at this K step
DONE = "#f6dcb3"  # tiles of earlier K steps, already consumed
AHEAD = "#f4f4f4"  # tiles of later K steps
BOX = dict(fc="white", ec="none", alpha=0.9, pad=1.5)  # behind text drawn over a grid


def _grid(ax, rows, cols, title):
    cell_grid(ax, rows, cols, title, fontsize=10)


def _matrix(ax, x0, y0, rows, cols, name, fill):
    """A matrix of rows x cols block tiles with its top-left corner at (x0, y0); fill(r, c) -> colour."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c, y0 + r), 1, 1, fc=fill(r, c), ec="#888888", lw=0.8))
    ax.add_patch(Rectangle((x0, y0), cols, rows, fill=False, ec="black", lw=1.4))
    ax.annotate(name, (x0 - 0.25, y0 + rows / 2), ha="right", va="center", fontsize=13, fontweight="bold")


def _walk(ax) -> None:
    """Panel (1): the block's strips of A and B, one pair of tiles staged per K step."""
    ax.set_title(f"(1) one block computes one {BLOCK_M}×{BLOCK_N} tile of C; it walks K in steps of "
                 f"BLOCK_K = {BLOCK_K}, staging one tile of A and one of B in shared memory per step",
                 fontsize=11)
    ax_x, ax_y = 0.0, TILES_K + 1.0  # A: below-left
    bx_x, bx_y = TILES_K + 1.0, 0.0  # B: above C
    cx_x, cx_y = bx_x, ax_y  # C: below B, right of A

    def fill_a(r, c):
        if r != BLOCK_ROW:
            return AHEAD
        return CURRENT if c == K_STEP else (DONE if c < K_STEP else "#fbefdc")

    def fill_b(r, c):
        if c != BLOCK_COL:
            return AHEAD
        return CURRENT if r == K_STEP else (DONE if r < K_STEP else "#fbefdc")

    _matrix(ax, ax_x, ax_y, TILES_M, TILES_K, "A", fill_a)
    _matrix(ax, bx_x, bx_y, TILES_K, TILES_N, "B", fill_b)
    _matrix(ax, cx_x, cx_y, TILES_M, TILES_N, "C",
            lambda r, c: "#d62728" if (r, c) == (BLOCK_ROW, BLOCK_COL) else "#ffffff")
    ax.annotate("As", (ax_x + K_STEP + 0.5, ax_y + BLOCK_ROW + 0.5), ha="center", va="center", fontsize=11,
                fontweight="bold")
    ax.annotate("Bs", (bx_x + BLOCK_COL + 0.5, bx_y + K_STEP + 0.5), ha="center", va="center", fontsize=11,
                fontweight="bold")
    ax.annotate("this\nblock", (cx_x + BLOCK_COL + 0.5, cx_y + BLOCK_ROW + 0.5), ha="center", va="center",
                fontsize=9, color="white", fontweight="bold")
    # The direction of the walk.
    ax.add_patch(FancyArrowPatch((ax_x + 0.1, ax_y + TILES_M + 0.45), (ax_x + TILES_K - 0.1, ax_y + TILES_M + 0.45),
                                 arrowstyle="->", mutation_scale=14, lw=1.2))
    ax.annotate("k0 = 0, 32, 64, …  (the K loop)", (ax_x + TILES_K / 2, ax_y + TILES_M + 0.85), ha="center",
                fontsize=10)
    ax.add_patch(FancyArrowPatch((bx_x + TILES_N + 0.45, bx_y + 0.1), (bx_x + TILES_N + 0.45, bx_y + TILES_K - 0.1),
                                 arrowstyle="->", mutation_scale=14, lw=1.2))
    ax.annotate("k0", (bx_x + TILES_N + 0.65, bx_y + TILES_K / 2), va="center", fontsize=10)

    # The loop, in words, to the right.
    tx = bx_x + TILES_N + 1.8
    lines = [
        ("per K step k0 (the orange tiles):", "black", "bold"),
        (f"1. every thread copies one element of A's tile into As[{BLOCK_M}][{BLOCK_K}]", "black", "normal"),
        (f"   and one element of B's tile into Bs[{BLOCK_K}][{BLOCK_N}] (panel 2)", "black", "normal"),
        ("2. __syncthreads(): the tiles are complete", "black", "normal"),
        (f"3. every thread does {BLOCK_K} FMAs out of shared memory:", "black", "normal"),
        ("   acc += As[row][k] · Bs[k][col]   (panels 3 and 4)", "black", "normal"),
        ("4. __syncthreads(): nobody reads the tiles any more", "black", "normal"),
        ("", "black", "normal"),
        ("light orange: tiles of earlier steps, already used;", "#9a6a1e", "normal"),
        ("pale: tiles of later steps. Outside the matrix the copy", "#9a6a1e", "normal"),
        ("stores zeros, so ragged edges need no test in step 3.", "#9a6a1e", "normal"),
    ]
    for i, (text, color, weight) in enumerate(lines):
        ax.annotate(text, (tx, 0.3 + 0.62 * i), fontsize=10.5, color=color, fontweight=weight, va="top",
                    family="monospace" if text.startswith("   acc") else None)
    ax.set_xlim(-1.2, tx + 10.5)
    ax.set_ylim(ax_y + TILES_M + 1.2, -0.3)
    ax.set_aspect("equal")
    ax.axis("off")


def _copy(ax) -> None:
    """Panel (2): thread tid copies As[tid / BLOCK_K][tid % BLOCK_K] (and Bs alike): warp w copies row w."""
    _grid(ax, BLOCK_M, BLOCK_K,
          f"(2) the copy: thread tid writes As[tid / {BLOCK_K}][tid % {BLOCK_K}]\n"
          "so warp w copies ROW w of the tile: 32 consecutive\nfloats of A, one coalesced 128-byte load")
    for w in range(BLOCK_M):
        for lane in range(WARP):
            ax.add_patch(Rectangle((lane, w), 1, 1, color=lane_color(lane), alpha=1.0 if w in (0, 1, 2) else 0.22))
    ax.annotate("← warps 0, 1, 2", (BLOCK_K + 0.3, 1.5), fontsize=9, va="center", annotation_clip=False)
    ax.annotate(f"Bs is copied the same way: thread tid\nwrites Bs[tid / {BLOCK_N}][tid % {BLOCK_N}].\n"
                "One global load per thread per tile\nfor each of A and B, all coalesced",
                (1.5, 14), fontsize=9.5, va="top", bbox=BOX)
    ax.set_xlabel("column of the tile (= lane) →", fontsize=9)
    ax.set_ylabel("row of the tile (= warp)", fontsize=9)


def _read_as(ax) -> None:
    """Panel (3): at inner step k, warp w reads As[w][k]: one address, broadcast to its 32 lanes."""
    _grid(ax, BLOCK_M, BLOCK_K,
          f"(3) inner loop, step k = {INNER_K}: every lane of warp w\nreads As[w][k], one address (broadcast);"
          f"\nAs[r][k] serves the {BLOCK_N} threads of row r of C")
    for r in range(BLOCK_M):
        ax.add_patch(Rectangle((INNER_K, r), 1, 1, color="#e8a33d"))
    ax.add_patch(Rectangle((0, THREAD_ROW), BLOCK_K, 1, fill=False, ec="#d62728", lw=1.6))
    ax.add_patch(Rectangle((INNER_K, THREAD_ROW), 1, 1, color="#d62728"))
    ax.annotate(f"red frame: the row that thread\n(row {THREAD_ROW}, col {THREAD_COL}) reads over\n"
                f"the {BLOCK_K} steps of k", (INNER_K + 1.5, THREAD_ROW + 3.2), fontsize=9.5, va="top",
                color="#b01010", bbox=BOX)
    ax.annotate("column k: one element per warp", (INNER_K + 1.5, 24), fontsize=9.5, color="#9a6a1e", bbox=BOX)
    ax.set_xlabel("k →", fontsize=9)
    ax.set_ylabel("row r (warp)", fontsize=9)


def _read_bs(ax) -> None:
    """Panel (4): at inner step k, lane i of every warp reads Bs[k][i]: one row, 32 banks, 1 wavefront."""
    _grid(ax, BLOCK_K, BLOCK_N,
          f"(4) same step k = {INNER_K}: lane i of EVERY warp reads\nBs[k][i], one 128-byte row (32 banks, 1 pass);"
          f"\nBs[k][c] serves the {BLOCK_M} threads of column c of C")
    for lane in range(WARP):
        ax.add_patch(Rectangle((lane, INNER_K), 1, 1, color=lane_color(lane)))
    ax.add_patch(Rectangle((THREAD_COL, 0), 1, BLOCK_K, fill=False, ec="#d62728", lw=1.6))
    ax.add_patch(Rectangle((THREAD_COL, INNER_K), 1, 1, color="#d62728"))
    ax.annotate(f"red frame: the column that thread\n(row {THREAD_ROW}, col {THREAD_COL}) reads", (1, 14),
                fontsize=9.5, color="#b01010", bbox=BOX)
    ax.annotate(f"every staged element is read {BLOCK_K} times\n(once per thread that needs it),\n"
                "after ONE load from global memory", (1, 24), fontsize=9.5, color="#2a7a2a", bbox=BOX)
    ax.set_xlabel("column c (lane) →", fontsize=9)
    ax.set_ylabel("k", fontsize=9)


def ch03_smem_tiles(path: Path) -> None:
    """Chapter 03: the block stages 32x32 tiles of A and B in shared memory, reusing each element 32 times."""
    fig = plt.figure(figsize=(17, 12.5))
    gs = fig.add_gridspec(2, 3, height_ratios=[0.9, 1.0], hspace=0.12, wspace=0.32)
    _walk(fig.add_subplot(gs[0, :]))
    _copy(fig.add_subplot(gs[1, 0]))
    _read_as(fig.add_subplot(gs[1, 1]))
    _read_bs(fig.add_subplot(gs[1, 2]))
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"smem-tiles.png": ch03_smem_tiles}
