"""Chapter 28: coalesced tiles. What one warp-wide load of X touches when each thread streams its own row
(chapters 25-27, any load width) against one warp's cp.async of a tile (consecutive lanes, consecutive
16-byte chunks); the tile in shared memory with the warps' quarters of F_in and one lane's 4 x 4 block of
H; and the L1 and shared-memory work per row of X of the two designs.

Every number is arithmetic from the kernels' layouts and the sizes (the README's counts), not a
measurement.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP, lane_color  # noqa: E402

CHAPTER = "28_skinny_gemm_coalesced"

F_IN = 128
F_OUT = 16
TILE_ROWS = 32
NUM_WARPS = 4
K_PER_WARP = F_IN // NUM_WARPS
ROW_BYTES = F_IN * 8  # 1 KB
LINE = 128
SECTOR = 32

WARP_COLOURS = ["#6baed6", "#74c476", "#fd8d3c", "#9e9ac8"]
W_COLOUR = "#e6a817"
H_COLOUR = "#de2d26"


def lane_col(lane: int) -> int:
    return (lane & 1) | ((lane >> 1) & 2)


def lane_row(lane: int) -> int:
    return ((lane >> 1) & 1) | ((lane >> 2) & 6)


def per_kb() -> dict[str, tuple[float, float, float]]:
    """Per KB of X (one row's worth): (warp-wide load requests, 128-byte lines they touch, sectors per
    request). A thread-per-row request reads WARP rows, one line each; a coalesced one 512 contiguous bytes."""
    return {
        "chapter 27, VEC = 1\n(8-byte loads)": (ROW_BYTES / (8 * WARP), ROW_BYTES / (8 * WARP) * WARP, 32),
        "chapter 27, VEC = 2 or 4\n(16-byte loads)": (ROW_BYTES / (16 * WARP), ROW_BYTES / (16 * WARP) * WARP, 32),
        "chapter 28\n(cp.async, coalesced)": (ROW_BYTES / 512, ROW_BYTES / 512 * 512 / LINE, 16),
    }


def shared_per_row() -> dict[str, dict[str, float]]:
    """Shared-memory wavefronts per row of X: chapter 27 (W broadcasts), chapter 28 (both pairings / X only)."""
    return {
        "chapter 27": {"W (and X data)": 64 + 8},
        "chapter 28, both\nloads paired": {"products": 32, "copy into shared": 8, "partial sums": 8},
        "chapter 28, only X's\nloads paired": {"products": 48, "copy into shared": 8, "partial sums": 8},
    }


def _per_thread_rows(ax):
    rows, cols = WARP, 64  # chunks of 16 bytes per row; a row of X is 64 of them
    ax.set_xlim(-1, cols + 1)
    ax.set_ylim(rows + 3, -3)
    ax.axis("off")
    ax.set_title("(1) a thread per row (chapters 25–27): one warp-wide 16-byte load\n"
                 "32 rows 1 KB apart: 32 lines, 32 sectors, 16 B of each used", fontsize=9.5, loc="left")
    for r in range(rows):
        ax.add_patch(Rectangle((0, r), cols, 0.8, fill=False, ec="#cccccc", lw=0.4))
        ax.add_patch(Rectangle((10, r), 1, 0.8, color=lane_color(r)))
        ax.add_patch(Rectangle((8, r), 8, 0.8, fill=False, ec="#555555", lw=0.5))  # the 128-byte line
    ax.text(cols / 2, rows + 1.5, "each row: 1 KB = 64 chunks of 16 B; boxed: the 128-byte line the load touches",
            ha="center", fontsize=7.5)


def _coalesced(ax):
    cols = 64
    ax.set_xlim(-1, cols + 1)
    ax.set_ylim(TILE_ROWS + 3, -3)
    ax.axis("off")
    ax.set_title("(2) this chapter: a block copies the tile, rows 0–31 (32 KB contiguous);\n"
                 "one warp-wide cp.async: 32 lanes × 16 B = 512 contiguous bytes, 4 lines, 16 sectors",
                 fontsize=9.5, loc="left")
    for r in range(TILE_ROWS):
        ax.add_patch(Rectangle((0, r), cols, 0.8, fill=False, ec="#cccccc", lw=0.4))
    # warp 0 of the block copies row 0, chunks 0..31 (then rows 2, 4, ...); warp 1 chunks 32..63
    for lane in range(WARP):
        ax.add_patch(Rectangle((lane, 0), 1, 0.8, color=lane_color(lane)))
    for line in range(4):
        ax.add_patch(Rectangle((line * 8, 0), 8, 0.8, fill=False, ec="#555555", lw=0.8))
    for r in range(2, TILE_ROWS, 2):
        ax.add_patch(Rectangle((0, r), 32, 0.8, color="#c6dbef"))
    ax.text(cols / 2, TILE_ROWS + 1.5, "warp 0's 16 copies: rows 0, 2, 4, … (first half of each row); "
            "warp 1: the same rows' second half; warps 2, 3: the odd rows", ha="center", fontsize=7.5)


def _tile(ax):
    ax.set_xlim(-2, F_IN + 30)
    ax.set_ylim(TILE_ROWS + 4, -4)
    ax.set_aspect("equal")
    ax.axis("off")
    lane = 5
    rows = [lane_row(lane) + 8 * i for i in range(4)]
    ax.set_title(f"(3) the tile in shared memory: warp w multiplies columns 32w .. 32w+31 (its quarter of F_in). "
                 f"Lane {lane} of warp 1 reads rows {', '.join(map(str, rows))} of its quarter\nand writes a 4 × 4 "
                 f"block of the warp's partial sums (columns {4 * lane_col(lane)}–{4 * lane_col(lane) + 3}); the 4 "
                 "warps' partials of each element are then added in shared memory, in a fixed order",
                 fontsize=9.5, loc="left")
    for w in range(NUM_WARPS):
        ax.add_patch(Rectangle((w * K_PER_WARP, 0), K_PER_WARP, TILE_ROWS, color=WARP_COLOURS[w], alpha=0.35))
        ax.text(w * K_PER_WARP + K_PER_WARP / 2, -1.0, f"warp {w}", ha="center", fontsize=8)
    for i in range(4):
        r = lane_row(lane) + 8 * i
        ax.add_patch(Rectangle((K_PER_WARP, r), K_PER_WARP, 1, color=lane_color(lane)))
    ax.add_patch(Rectangle((0, 0), F_IN, TILE_ROWS, fill=False, ec="#555555", lw=0.8))
    ax.text(F_IN / 2, TILE_ROWS + 1.6, f"X tile: {TILE_ROWS} rows × {F_IN} (rows padded to 130 doubles)",
            ha="center", fontsize=8)
    # the lane's 4 x 4 block of H
    hx = F_IN + 8
    ax.add_patch(Rectangle((hx, 0), F_OUT, TILE_ROWS, fill=False, ec="#555555", lw=0.8))
    for i in range(4):
        ax.add_patch(Rectangle((hx + 4 * lane_col(lane), lane_row(lane) + 8 * i), 4, 1, color=H_COLOUR))
    ax.text(hx + F_OUT / 2, TILE_ROWS + 1.6, "partial sums of\nwarp 1 (32 × 16)", ha="center", fontsize=8,
            va="top")
    ax.text(hx + F_OUT + 1, 4, f"lane {lane}:\nlane_row {lane_row(lane)},\nlane_col {lane_col(lane)}",
            fontsize=7.5, va="top")


def _bars(ax):
    k = per_kb()
    names = list(k)
    y = range(len(names))
    lines = [k[n][1] for n in names]
    ax.barh(list(y), lines, color=["#969696", "#bdbdbd", "#3182bd"], height=0.6)
    for i, n in enumerate(names):
        req, ln, spr = k[n]
        ax.text(ln + 2, i, f"{ln:.0f}: {req:.0f} requests × {ln / req:.0f} lines\n({spr} sectors per request)",
                va="center", fontsize=8)
    ax.set_yticks(list(y))
    ax.set_yticklabels(names, fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 200)
    ax.set_xlabel("128-byte lines L1 looks up per KB of X (one row)", fontsize=8.5)
    ax.set_title("(4) the loads of X: L1 work per row", fontsize=9.5, loc="left")
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _shared(ax):
    s = shared_per_row()
    names = list(s)
    colours = {"W (and X data)": W_COLOUR, "products": "#3182bd", "copy into shared": "#9ecae1",
               "partial sums": "#fd8d3c"}
    seen = set()
    for i, n in enumerate(names):
        left = 0.0
        for part, value in s[n].items():
            ax.barh(i, value, left=left, color=colours[part], height=0.6,
                    label=part if part not in seen else None)
            seen.add(part)
            left += value
        ax.text(left + 1, i, f"{left:.0f}", va="center", fontsize=8)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlim(0, 90)
    ax.set_xlabel("shared-memory wavefronts (cycles of the SM's shared pipe) per row of X", fontsize=8.5)
    ax.set_title("(5) shared memory per row: the FP64 pipes need 32 cycles per row", fontsize=9.5, loc="left")
    ax.legend(fontsize=7.5, frameon=False, loc="lower right")
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def coalesced_tiles(path: Path) -> None:
    fig = plt.figure(figsize=(15, 15))
    gs = fig.add_gridspec(3, 2, height_ratios=[1.2, 1.05, 0.75], hspace=0.32, wspace=0.12)
    _per_thread_rows(fig.add_subplot(gs[0, 0]))
    _coalesced(fig.add_subplot(gs[0, 1]))
    _tile(fig.add_subplot(gs[1, :]))
    _bars(fig.add_subplot(gs[2, 0]))
    _shared(fig.add_subplot(gs[2, 1]))
    fig.suptitle("Chapter 28: X copied in coalesced tiles through shared memory, multiplied with a 4 × 4 "
                 "register tile per lane", fontsize=12, y=0.93)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"coalesced-tiles.png": coalesced_tiles}
