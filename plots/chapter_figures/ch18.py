"""Chapter 18: the 128x128 block tile in warp tiles, who gathers which element of the input tile, and
where one row of that tile comes from in x.

Top left: the block tile of Y split into 32x64 warp tiles, one lane's four 4x4 sub-tiles (chapter 08's
layout). Bottom: the (BLOCK_K, BLOCK_N) input tile Xs, coloured by the warp that gathers each row,
with one thread's eight elements and the column table the gather reads its addresses from. Top right:
for seed_3x3, the 128 output pixels of one block column and the input pixels that one tap reads for them.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import cells  # noqa: E402

CHAPTER = "18_implicit_gemm_cheap_gather"

# The tunables of chapters/18_implicit_gemm_cheap_gather/kernel.cuh.
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 16
WARP_M, WARP_N = 32, 64
THREAD_M, THREAD_N = 8, 8
SUB_M, SUB_N = 4, 4
WARP_SIZE = 32
LANES_M, LANES_N = WARP_M // THREAD_M, WARP_N // THREAD_N  # 4 x 8 lanes
WARPS_M, WARPS_N = BLOCK_M // WARP_M, BLOCK_N // WARP_N  # 4 x 2 warps
NUM_WARPS = WARPS_M * WARPS_N  # 8
SUBS_M, SUBS_N = THREAD_M // SUB_M, THREAD_N // SUB_N  # 2 x 2 sub-tiles per thread
SUB_STRIDE_M, SUB_STRIDE_N = LANES_M * SUB_M, LANES_N * SUB_N  # 16, 32
B_COLS = BLOCK_N // WARP_SIZE  # 4 columns of Xs per thread, WARP_SIZE apart
B_ROWS = BLOCK_K // NUM_WARPS  # 2 rows of Xs per thread, NUM_WARPS apart

# The thread drawn in panels (1) and (3).
SHOWN_WARP, SHOWN_LANE = 3, 5

# Panel (2): seed_3x3 (N = 128, C = 64, 56 x 56, 3x3, pad 1, stride 1). Block column 24 holds output
# pixels j = 3072 .. 3199: the end of image 0 and the start of image 1 (P*Q = 3136).
H = W = 56
R = S = 3
PAD, STRIDE, DIL = 1, 1, 1
P = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1  # 56
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1  # 56
TRACE_BLOCK_COL = 24
TRACE_TAP = (0, 0, 0)  # (c, r, s) of the traced row of Xs: row 0, gathered by warp 0

_TAB10 = plt.get_cmap("tab10")
WARP_COLOURS = [_TAB10(i) for i in (0, 1, 2, 4, 5, 6, 8, 9)]  # one per warp; no red, the highlight's colour
LOAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"]  # the thread's B_COLS gathers of one row
HIGHLIGHT = "#d62728"
PAD_COLOUR = "#d9d9d9"


def lane_pos(lane: int) -> tuple[int, int]:
    """(lane_row, lane_col) of a lane, as the kernel computes them (z-order in pairs of rows)."""
    return (lane // (2 * LANES_N)) * 2 + lane % 2, (lane // 2) % LANES_N


def _block_panel(ax) -> None:
    """Panel (1): the block tile of Y in warp tiles; the shown lane's four sub-tiles."""
    ax.set_xlim(-2, BLOCK_N + 2)
    ax.set_ylim(BLOCK_M + 26, -4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) the {BLOCK_M}×{BLOCK_N} block tile of Y (filters × output pixels):\n"
                 f"{WARPS_M}×{WARPS_N} warps of {WARP_M}×{WARP_N}, lanes in z-order (chapter 08)", fontsize=10)
    for w in range(NUM_WARPS):
        wr, wc = divmod(w, WARPS_N)
        ax.add_patch(Rectangle((wc * WARP_N, wr * WARP_M), WARP_N, WARP_M, fc=WARP_COLOURS[w], alpha=0.22,
                               ec="black", lw=1.6 if w == SHOWN_WARP else 0.6))
        ax.annotate(f"warp {w}", (wc * WARP_N + WARP_N / 2, wr * WARP_M + WARP_M / 2 + 6), ha="center",
                    va="center", fontsize=9, color="#333333")
    wr, wc = divmod(SHOWN_WARP, WARPS_N)
    lr, lc = lane_pos(SHOWN_LANE)
    for im in range(SUBS_M):
        for jn in range(SUBS_N):
            r = wr * WARP_M + lr * SUB_M + im * SUB_STRIDE_M
            c = wc * WARP_N + lc * SUB_N + jn * SUB_STRIDE_N
            ax.add_patch(Rectangle((c, r), SUB_N, SUB_M, color=HIGHLIGHT))
    ax.annotate(f"red: lane {SHOWN_LANE} of warp {SHOWN_WARP}, its {THREAD_M}×{THREAD_N} results as four "
                f"{SUB_M}×{SUB_N} sub-tiles.\nPer k it reads two float4 of the filter tile and two of Xs\n"
                f"(LDS.128) and does {THREAD_M * THREAD_N} FMAs from registers: per warp and K step,\n"
                f"{BLOCK_K * (SUBS_M + SUBS_N)} LDS.128 for {BLOCK_K * THREAD_M * THREAD_N} FFMAs "
                f"(chapter 16: {BLOCK_K + BLOCK_K // 4} shared loads for {BLOCK_K})",
                (0, BLOCK_M + 3), va="top", fontsize=8.5)


def _gather_panel(ax) -> None:
    """Panel (3): warp w gathers rows w, w + 8 of Xs, lane l the columns l, l + 32, l + 64, l + 96."""
    top = 2.5  # room above the tile for the column table
    ax.set_xlim(-13, BLOCK_N + 1)
    ax.set_ylim(top + BLOCK_K + 5.5, -1.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(3) the gather of the ({BLOCK_K}, {BLOCK_N}) input tile Xs: warp w copies rows w and w + "
                 f"{NUM_WARPS},\nlane l the columns l, l + 32, l + 64, l + 96 (colour: the warp; red: lane "
                 f"{SHOWN_LANE} of warp {SHOWN_WARP})", fontsize=10)
    # The column table: one decoded output pixel per column, for the whole K loop.
    for j in range(BLOCK_N):
        mine = j % WARP_SIZE == SHOWN_LANE
        ax.add_patch(Rectangle((j, 0), 1, 1.6, fc=HIGHLIGHT if mine else "#c9d7e8", ec="white", lw=0.3))
    ax.annotate("cols_s[j]", (-0.6, 0.8), ha="right", va="center", fontsize=9, fontweight="bold")
    ax.annotate("{base, ih0, iw0, y} of pixel block_col + j, decoded once per block", (BLOCK_N, -0.2),
                ha="right", va="bottom", fontsize=8)
    # Xs: row kk0 + row of the tile, coloured by the warp that gathers it.
    for row in range(BLOCK_K):
        warp = row % NUM_WARPS
        for j in range(BLOCK_N):
            mine = warp == SHOWN_WARP and j % WARP_SIZE == SHOWN_LANE
            ax.add_patch(Rectangle((j, top + row), 1, 1, fc=HIGHLIGHT if mine else WARP_COLOURS[warp],
                                   alpha=1.0 if mine else 0.35, lw=0))
        tap_mine = warp == SHOWN_WARP
        ax.annotate(f"tap kk0 + {row}: warp {warp}", (-0.6, top + row + 0.55), ha="right", va="center",
                    fontsize=6.5, color=HIGHLIGHT if tap_mine else "black",
                    fontweight="bold" if tap_mine else "normal")
    cells(ax, 0, top, BLOCK_K, BLOCK_N, lw=0.1, ec="#ffffff")
    ax.add_patch(Rectangle((0, top), BLOCK_N, BLOCK_K, fill=False, ec="black", lw=1.0))
    for j in range(WARP_SIZE, BLOCK_N, WARP_SIZE):
        ax.plot([j, j], [top, top + BLOCK_K], color="black", lw=0.6, ls=":")
    ax.annotate(f"red thread, per K step: {B_ROWS} tap decodes (rows {SHOWN_WARP} and {SHOWN_WARP + NUM_WARPS}, "
                f"FastDiv), {B_COLS} LDS.128 of cols_s (its columns), {B_ROWS * B_COLS} predicated loads of x.\n"
                f"Element (kk, j) = x[cols_s[j].base + tap.offset], read only if cols_s[j].ih0 + tap.rd < H and "
                f"cols_s[j].iw0 + tap.sd < W (unsigned: one compare per axis).\n"
                f"Chapter 16: one element per thread and K step, with its own tap_coord (two divisions).",
                (0, top + BLOCK_K + 1.0), va="top", fontsize=8)


def _source_panel(ax) -> None:
    """Panel (2): the input pixels that tap TRACE_TAP reads for the 128 pixels of block column TRACE_BLOCK_COL."""
    c, r, s = TRACE_TAP
    first_j = TRACE_BLOCK_COL * BLOCK_N
    # Which (image, input row) pairs the 128 pixels touch, in order.
    reads = []  # (j, n, ih, iw)
    for j in range(first_j, first_j + BLOCK_N):
        n, pq = divmod(j, P * Q)
        p, q = divmod(pq, Q)
        reads.append((j - first_j, n, p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL))
    rows = sorted({(n, ih) for _, n, ih, _ in reads})
    span = W + 2 * PAD
    gap = 1.6
    ax.set_xlim(-9.5, span + 1)
    ax.set_ylim(len(rows) * gap + 3.4, -0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    inside = sum(1 for _, n, ih, iw in reads if 0 <= ih < H and 0 <= iw < W)
    ax.set_title(f"(2) seed_3x3, block column {TRACE_BLOCK_COL} (pixels j = {first_j} … {first_j + BLOCK_N - 1}: "
                 f"the last {P * Q - first_j % (P * Q)} of image 0, the first "
                 f"{BLOCK_N - (P * Q - first_j % (P * Q))} of image 1).\nRow 0 of Xs, tap (c, r, s) = "
                 f"({c}, {r}, {s}), as warp 0 gathers it: its {B_COLS} loads (colour) each take 32 consecutive "
                 f"pixels;\n{inside} of the 128 are in the image, {BLOCK_N - inside} in the padding (hatched: "
                 "predicated off, stored as 0)", fontsize=10)
    y_of = {key: i * gap for i, key in enumerate(rows)}
    for (n, ih), y in y_of.items():
        for iw in range(-PAD, W + PAD):
            if not (0 <= ih < H and 0 <= iw < W):
                ax.add_patch(Rectangle((PAD + iw, y), 1, 1, color=PAD_COLOUR))
        cells(ax, 0, y, 1, span, lw=0.2)
        label = f"x[{n}][{c}][{ih}][·]" if 0 <= ih < H else f"image {n}, row {ih}"
        ax.annotate(label, (-0.4, y + 0.5), ha="right", va="center", fontsize=8)
    for jj, n, ih, iw in reads:
        colour = LOAD_COLOURS[jj // WARP_SIZE]
        y = y_of[(n, ih)]
        if 0 <= ih < H and 0 <= iw < W:
            ax.add_patch(Rectangle((PAD + iw, y), 1, 1, color=colour))
        else:
            ax.add_patch(Rectangle((PAD + iw, y), 1, 1, fill=False, ec=colour, lw=1.0, hatch="xxx"))
    handles = [Rectangle((0, 0), 1, 1, color=col) for col in LOAD_COLOURS]
    ax.legend(handles, [f"load {k}: columns {k * WARP_SIZE}–{k * WARP_SIZE + WARP_SIZE - 1}"
                        for k in range(B_COLS)],
              loc="lower left", bbox_to_anchor=(0.0, -0.02), ncol=B_COLS, fontsize=8, frameon=False)
    ax.annotate("iw →   (the grey border is the padding, never stored)", (span - 0.5, len(rows) * gap + 0.3),
                ha="right", va="top", fontsize=8)


def warp_tiles_gather(path: Path) -> None:
    fig = plt.figure(figsize=(18, 13))
    gs = fig.add_gridspec(2, 2, width_ratios=[1.0, 2.0], height_ratios=[0.85, 0.75], hspace=0.06, wspace=0.04)
    _block_panel(fig.add_subplot(gs[0, 0]))
    _source_panel(fig.add_subplot(gs[0, 1]))
    _gather_panel(fig.add_subplot(gs[1, :]))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"warp-tiles-gather.png": warp_tiles_gather}
