"""Chapter 08: the warp tile, the z-order lane layout, and which lanes read the same shared address."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

CHAPTER = "08_warp_tiling"

# The tunables of chapters/08_warp_tiling/kernel.cuh.
BLOCK_M, BLOCK_N = 128, 128
WARP_M, WARP_N = 32, 64
THREAD_M, THREAD_N = 8, 8
SUB_M, SUB_N = 4, 4
WARP_SIZE = 32
LANES_M, LANES_N = WARP_M // THREAD_M, WARP_N // THREAD_N  # 4 x 8 lanes
WARPS_M, WARPS_N = BLOCK_M // WARP_M, BLOCK_N // WARP_N  # 4 x 2 warps
SUBS_M, SUBS_N = THREAD_M // SUB_M, THREAD_N // SUB_N  # 2 x 2 sub-tiles per thread
SUB_STRIDE_M, SUB_STRIDE_N = LANES_M * SUB_M, LANES_N * SUB_N  # 16, 32
# Chapter 07's map, for contrast: a 16 x 16 grid of threads over the whole block tile.
CH07_THREADS_N = BLOCK_N // THREAD_N  # 16
CH07_SUB_STRIDE = (BLOCK_M // THREAD_M) * SUB_M  # 64

SHOWN_WARP = 0  # the warp drawn in panel (2)
SHOWN_LANE = 17  # the lane whose four sub-tiles are highlighted
WARP_COLORS = plt.get_cmap("tab10")
HIGHLIGHT = "#d62728"


def lane_pos(lane: int) -> tuple[int, int]:
    """(lane_row, lane_col) of a lane, as the kernel computes them (z-order in pairs of rows)."""
    return (lane // (2 * LANES_N)) * 2 + lane % 2, (lane // 2) % LANES_N


def wavefronts(addresses: list[int]) -> int:
    """Wavefronts of one LDS.128: 2 when lanes (n, n^1) or (n, n^2) all read the same address, else 4."""
    pairs1 = all(addresses[n] == addresses[n ^ 1] for n in range(WARP_SIZE))
    pairs2 = all(addresses[n] == addresses[n ^ 2] for n in range(WARP_SIZE))
    return 2 if pairs1 or pairs2 else 4


def _block_panel(ax) -> None:
    ax.set_xlim(-2, BLOCK_N + 2)
    ax.set_ylim(BLOCK_M + 16, -6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) the {BLOCK_M}×{BLOCK_N} block tile of C: {WARPS_M}×{WARPS_N} warps,\n"
                 f"each owns a contiguous {WARP_M}×{WARP_N} warp tile (warp = tid / 32)", fontsize=9)
    for w in range(WARPS_M * WARPS_N):
        wr, wc = divmod(w, WARPS_N)
        ax.add_patch(Rectangle((wc * WARP_N, wr * WARP_M), WARP_N, WARP_M, fc=WARP_COLORS(w), alpha=0.22,
                               ec="black", lw=1.6 if w == SHOWN_WARP else 0.6))
        ax.annotate(f"warp {w}", (wc * WARP_N + WARP_N / 2, wr * WARP_M + WARP_M / 2 + 5), ha="center",
                    va="center", fontsize=9, color="#333333")
    # This chapter: lane SHOWN_LANE of warp SHOWN_WARP, four 4x4 sub-tiles 16 rows / 32 columns apart.
    wr, wc = divmod(SHOWN_WARP, WARPS_N)
    lr, lc = lane_pos(SHOWN_LANE)
    for im in range(SUBS_M):
        for jn in range(SUBS_N):
            r = wr * WARP_M + lr * SUB_M + im * SUB_STRIDE_M
            c = wc * WARP_N + lc * SUB_N + jn * SUB_STRIDE_N
            ax.add_patch(Rectangle((c, r), SUB_N, SUB_M, color=HIGHLIGHT))
    # Chapter 07: thread 5's four sub-tiles, 64 rows / 64 columns apart, spread over the whole block.
    t = SHOWN_LANE
    r0, c0 = (t // CH07_THREADS_N) * SUB_M, (t % CH07_THREADS_N) * SUB_N
    for im in range(SUBS_M):
        for jn in range(SUBS_N):
            ax.add_patch(Rectangle((c0 + jn * CH07_SUB_STRIDE, r0 + im * CH07_SUB_STRIDE), SUB_N, SUB_M,
                                   fill=False, ec="black", lw=1.0, hatch="/////"))
    ax.annotate(f"red: lane {SHOWN_LANE} of warp {SHOWN_WARP}, its 8×8 results as four 4×4 sub-tiles\n"
                f"{SUB_STRIDE_M} rows / {SUB_STRIDE_N} columns apart, all inside its warp tile\n"
                f"hatched: thread {t} in chapter 07, sub-tiles {CH07_SUB_STRIDE} / {CH07_SUB_STRIDE} apart",
                (0, BLOCK_M + 3), va="top", fontsize=8)


def _warp_panel(ax) -> None:
    rows, cols = WARP_M // SUB_M, WARP_N // SUB_N  # sub-tile cells: 8 x 16
    ax.set_xlim(-1.4, cols + 0.3)
    ax.set_ylim(rows + 3.0, -0.4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(2) warp {SHOWN_WARP}'s {WARP_M}×{WARP_N} tile; each cell a {SUB_M}×{SUB_N} sub-tile, "
                 f"numbered by the lane that owns it.\nThe lanes form a {LANES_M}×{LANES_N} grid in z-order "
                 f"(lanes 2i, 2i+1 stacked), repeated {SUBS_M}×{SUBS_N} times", fontsize=9)
    for lane in range(WARP_SIZE):
        lr, lc = lane_pos(lane)
        for im in range(SUBS_M):
            for jn in range(SUBS_N):
                x, y = lc + jn * LANES_N, lr + im * LANES_M
                mine = lane == SHOWN_LANE
                ax.add_patch(Rectangle((x, y), 1, 1, fc=HIGHLIGHT if mine else plt.get_cmap("Pastel2")(lc % 8),
                                       ec="#888888", lw=0.4, alpha=1.0 if (im, jn) == (0, 0) or mine else 0.45))
                ax.annotate(str(lane), (x + 0.5, y + 0.55), ha="center", va="center", fontsize=7.5,
                            color="white" if mine else "black", weight="bold" if (im, jn) == (0, 0) else "normal")
    # Quadrant borders: one copy of the lane grid per sub-tile of a thread.
    for im in range(SUBS_M):
        for jn in range(SUBS_N):
            ax.add_patch(Rectangle((jn * LANES_N, im * LANES_M), LANES_N, LANES_M, fill=False, ec="black", lw=1.4))
    # The z-order of the first four lanes.
    path = [lane_pos(n) for n in range(4)]
    ax.plot([c + 0.5 for _, c in path], [r + 0.5 for r, _ in path], color="#1f4e9c", lw=1.2, alpha=0.8)
    # Distances between the highlighted lane's sub-tiles, drawn outside the grid (left and below).
    lr, lc = lane_pos(SHOWN_LANE)
    ax.annotate("", xy=(-0.35, lr + LANES_M + 0.5), xytext=(-0.35, lr + 0.5),
                arrowprops=dict(arrowstyle="->", color=HIGHLIGHT, lw=1.4))
    ax.annotate(f"+{SUB_STRIDE_M} rows", (-0.55, lr + LANES_M / 2 + 0.5), fontsize=8, color=HIGHLIGHT,
                weight="bold", rotation=90, ha="right", va="center")
    ax.annotate("", xy=(lc + LANES_N + 0.5, rows + 0.35), xytext=(lc + 0.5, rows + 0.35),
                arrowprops=dict(arrowstyle="->", color=HIGHLIGHT, lw=1.4))
    ax.annotate(f"+{SUB_STRIDE_N} columns", (lc + LANES_N / 2 + 0.5, rows + 0.55), fontsize=8, color=HIGHLIGHT,
                weight="bold", ha="center", va="top")
    ax.annotate("blue line: lanes 0 → 1 → 2 → 3 (the z-order). Lanes n and n^1 share a column (same B float4),\n"
                "n and n^2 share a row (same A float4); the same holds in all four copies.",
                (0, rows + 1.3), va="top", fontsize=8)


def _strip(ax, y, label, float4_of_lane, prefix, cmap):
    distinct = sorted(set(float4_of_lane))
    for lane, f in enumerate(float4_of_lane):
        ax.add_patch(Rectangle((lane, y), 1, 1, fc=cmap(distinct.index(f) % cmap.N), ec="white", lw=0.8))
        ax.annotate(f"{prefix}{f}", (lane + 0.5, y + 0.5), ha="center", va="center", fontsize=7)
    n_wave = wavefronts(float4_of_lane)
    ax.annotate(label, (-0.4, y + 0.5), ha="right", va="center", fontsize=8)
    ax.annotate(f"{len(distinct)} distinct float4\n→ {n_wave} wavefronts", (WARP_SIZE + 0.4, y + 0.5), va="center",
                fontsize=8, color="#2a7a2a" if n_wave == 2 else HIGHLIGHT, weight="bold")
    return n_wave


def _address_panel(ax) -> None:
    ax.set_xlim(-13, WARP_SIZE + 7)
    ax.set_ylim(8.6, -0.9)
    ax.axis("off")
    ax.set_title("(3) one LDS.128 per sub-tile and k: which float4 of the k-th row of As / Bs each lane reads "
                 "(same label = same address).\nIt costs 4 wavefronts (4 × 128 B), or 2 when lanes (n, n^1) "
                 "or (n, n^2) all read identical addresses", fontsize=9)
    for lane in range(WARP_SIZE):
        ax.annotate(str(lane), (lane + 0.5, -0.35), ha="center", va="center", fontsize=7, color="#555555")
    ax.annotate("lane", (-0.4, -0.35), ha="right", va="center", fontsize=8, color="#555555")
    lanes = range(WARP_SIZE)
    # Chapter 07: lane = tid; thread_row = (tid / 16) * 4, thread_col = (tid % 16) * 4.
    ch07_a = [lane // CH07_THREADS_N for lane in lanes]
    ch07_b = [lane % CH07_THREADS_N for lane in lanes]
    ch08_a = [lane_pos(lane)[0] for lane in lanes]
    ch08_b = [lane_pos(lane)[1] for lane in lanes]
    w = [_strip(ax, 0.3, "ch07, A (row of threads)", ch07_a, "a", plt.get_cmap("Set2")),
         _strip(ax, 1.7, "ch07, B (column of threads)", ch07_b, "b", plt.get_cmap("tab20")),
         _strip(ax, 4.0, "ch08, A (lane_row)", ch08_a, "a", plt.get_cmap("Set2")),
         _strip(ax, 5.4, "ch08, B (lane_col)", ch08_b, "b", plt.get_cmap("Set3"))]
    ax.annotate(f"per k and warp: {SUBS_M}×{w[0]} + {SUBS_N}×{w[1]} = {SUBS_M * w[0] + SUBS_N * w[1]} wavefronts "
                f"(chapter 07)   →   {SUBS_M}×{w[2]} + {SUBS_N}×{w[3]} = {SUBS_M * w[2] + SUBS_N * w[3]} "
                f"(chapter 08): one third fewer.\nIn chapter 07, B lanes n and n+16 read the same float4, but "
                f"neither pairing rule holds, so the load still takes 4.", (-12.5, 7.2), va="top", fontsize=8.5)


def warp_tile(path: Path) -> None:
    fig = plt.figure(figsize=(15, 10.5))
    gs = fig.add_gridspec(2, 2, width_ratios=[1, 1.55], height_ratios=[1.25, 1])
    _block_panel(fig.add_subplot(gs[0, 0]))
    _warp_panel(fig.add_subplot(gs[0, 1]))
    _address_panel(fig.add_subplot(gs[1, :]))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {"warp-tile.png": warp_tile}
