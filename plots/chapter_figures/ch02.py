"""Chapter 02's picture: the coalesced thread mapping, against chapter 01's.

threadIdx.x now walks the columns of C, so a warp is a row segment of C: at each step k its 32 lanes
share one element of A (a broadcast) and read 32 consecutive floats of row k of B (one 128-byte line).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cell_grid, lane_color  # noqa: E402

CHAPTER = "02_coalesced_gemm"

BLOCK_X = 32  # BLOCK_X in chapters/02_coalesced_gemm/kernel.cuh (threads along the columns of C)
BLOCK_Y = 32  # BLOCK_Y in chapters/02_coalesced_gemm/kernel.cuh (threads along the rows of C)
SECTOR_BYTES = 32
STEP_K = 5  # the loop step k shown in the pictures (any k would do)


def _grid(ax, rows, cols, title):
    cell_grid(ax, rows, cols, title, fontsize=10)


def _sector_strip(ax, y, n_sectors, used, label, note, color_of):
    """A row of 32-byte sectors (8 floats each); `used` maps (sector, float) -> lane for the bytes read."""
    ax.annotate(label, (-0.3, y + 0.5), ha="right", va="center", fontsize=10, fontweight="bold")
    for s in range(n_sectors):
        x0 = s * 9.0
        ax.add_patch(Rectangle((x0, y), 8, 1, fc="#eeeeee", ec="#777777", lw=0.8))
        for f in range(8):
            lane = used.get((s, f))
            if lane is not None:
                ax.add_patch(Rectangle((x0 + f, y), 1, 1, color=color_of(lane)))
    ax.annotate(note, (0, y - 0.2), fontsize=9, va="top")


def ch02_coalesced_mapping(path: Path) -> None:
    """Chapter 02: threadIdx.x walks the columns of C; a warp's loads of B and stores of C are coalesced."""
    fig = plt.figure(figsize=(16, 9.5))
    gs = fig.add_gridspec(2, 3, height_ratios=[1.6, 1.0], hspace=0.18, wspace=0.12)

    # (1) The C tile of one block: warp w = threadIdx.y is ROW w, its lane = threadIdx.x the column.
    ax = fig.add_subplot(gs[0, 0])
    _grid(ax, BLOCK_Y, BLOCK_X,
          f"(1) C tile of one {BLOCK_Y}×{BLOCK_X} block:\nwarp w (threadIdx.y = w) is ROW w,\n"
          "its lane = threadIdx.x is the column")
    for w in range(3):
        for lane in range(WARP):
            ax.add_patch(Rectangle((lane, w), 1, 1, color=lane_color(lane), alpha=1.0 if w == 0 else 0.35))
    ax.annotate("↑ warp 0 (bright); warps 1, 2 (faded)", (2, 6.2), fontsize=9)
    ax.annotate("chapter 01: a warp was a COLUMN\nof this tile (dashed)", (2, 12.5), fontsize=9, color="#b03030")
    ax.add_patch(Rectangle((0, 0), 1, BLOCK_Y, fill=False, ec="#b03030", lw=1.4, ls="--"))
    ax.set_xlabel("col (threadIdx.x) →", fontsize=9)
    ax.set_ylabel("row (threadIdx.y)", fontsize=9)

    # (2) A at step k: all 32 lanes of warp 0 need A[row0][k], the same address: one broadcast.
    ax = fig.add_subplot(gs[0, 1])
    _grid(ax, BLOCK_Y, WARP,
          f"(2) A at loop step k = {STEP_K}: all 32 lanes of\nwarp 0 read the SAME element A[row0][k]\n"
          "(one address: a broadcast, 1 sector)")
    ax.add_patch(Rectangle((0, 0), WARP, 1, fill=False, ec="red", lw=1.2))
    ax.add_patch(Rectangle((STEP_K, 0), 1, 1, color="#d62728"))
    ax.annotate("lanes 0…31 all read\nthis one float", (STEP_K + 1.3, 0.6), fontsize=9, va="top",
                xytext=(STEP_K + 3, 5), arrowprops=dict(arrowstyle="->", lw=0.9))
    ax.annotate("(red frame: row0 of A; the warp walks\nit left to right as k grows)", (1, 11), fontsize=9)
    ax.set_xlabel("k →   (rows of A: K consecutive floats in memory)", fontsize=9)

    # (3) B at step k: lane i reads B[k][col0 + i]: 32 consecutive floats, one 128-byte line.
    ax = fig.add_subplot(gs[0, 2])
    _grid(ax, BLOCK_Y, BLOCK_X,
          f"(3) B at loop step k = {STEP_K}: lane i reads B[k][col0 + i],\n"
          "32 consecutive floats of row k\n(128 bytes = 4 sectors, every byte used)")
    for lane in range(WARP):
        ax.add_patch(Rectangle((lane, STEP_K), 1, 1, color=lane_color(lane)))
    ax.annotate("↑ row k of B, in memory order", (2, STEP_K + 2.5), fontsize=9)
    ax.annotate("the same lanes then store C[row0][col0 + i]:\none 128-byte line per warp\n"
                "(chapter 01: 32 lines, one per row)", (1, 16), fontsize=9)
    ax.set_xlabel("col (of B and C) →", fontsize=9)
    ax.set_ylabel("k (rows of B) ↓", fontsize=9)

    # (4) The sectors one warp touches at one step k, chapter 01 against chapter 02.
    ax = fig.add_subplot(gs[1, :])
    ax.set_title("(4) 32-byte sectors one warp touches per loop step k (coloured: bytes used; grey: fetched but not used)",
                 fontsize=11)
    # chapter 01: A[row0 + lane][k] -> one sector per lane, 4 bytes used in each; 8 of the 32 drawn.
    shown = 8
    used01 = {(lane, STEP_K % 8): lane * (WARP // shown) for lane in range(shown)}
    _sector_strip(ax, 4.6, shown, used01, "chapter 01\nload of A",
                  f"32 sectors, 4 bytes used in each ({shown} drawn), addresses 4·K bytes apart  "
                  "+ B: 1 sector (broadcast)  =  33 sectors for 132 useful bytes", lane_color)
    ax.annotate("…", (shown * 9.0 - 0.6, 5.1), fontsize=16, va="center")
    # chapter 02: B[k][col0 + lane] -> 4 sectors, all 32 floats used.
    used02 = {(lane // 8, lane % 8): lane for lane in range(WARP)}
    _sector_strip(ax, 1.9, 4, used02, "chapter 02\nload of B",
                  "4 adjacent sectors (one 128-byte line), all 128 bytes used  "
                  "+ A: 1 sector (broadcast)  =  5 sectors for 132 useful bytes", lane_color)
    ax.add_patch(Rectangle((40.0, 1.9), 8, 1, fc="#eeeeee", ec="#777777", lw=0.8))
    ax.add_patch(Rectangle((40.0 + STEP_K % 8, 1.9), 1, 1, color="#d62728"))
    ax.annotate("load of A: 1 sector,\n4 bytes, sent to all 32 lanes", (49.0, 2.4), fontsize=9, va="center")
    ax.annotate("sectors per load request: (32 + 1) / 2 = 16.5 in chapter 01  →  (1 + 4) / 2 = 2.5 in chapter 02;"
                "  still 2 load instructions per FMA in both", (0, -0.3), fontsize=10, color="#2a7a2a")
    ax.set_xlim(-9, 75)
    ax.set_ylim(-0.6, 5.9)
    ax.axis("off")

    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"coalesced-mapping.png": ch02_coalesced_mapping}
