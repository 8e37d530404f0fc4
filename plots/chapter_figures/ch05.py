"""Chapter 05: the 128x128 block tile, a thread's 8x8 results as four 4x4 sub-tiles, and the outer product per k."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import cells  # noqa: E402

CHAPTER = "05_2d_register_tiling"

# The tunables of chapters/05_2d_register_tiling/kernel.cuh.
BLOCK_M, BLOCK_N = 128, 128  # BLOCK_M, BLOCK_N
BLOCK_K = 16  # BLOCK_K
THREAD_M, THREAD_N = 8, 8  # THREAD_M, THREAD_N
SUB_M, SUB_N = 4, 4  # SUB_M, SUB_N
THREADS_M, THREADS_N = BLOCK_M // THREAD_M, BLOCK_N // THREAD_N  # THREADS_M = THREADS_N = 16
SUBS_M, SUBS_N = THREAD_M // SUB_M, THREAD_N // SUB_N  # SUBS_M = SUBS_N = 2
SUB_STRIDE_M, SUB_STRIDE_N = THREADS_M * SUB_M, THREADS_N * SUB_N  # SUB_STRIDE_M = SUB_STRIDE_N = 64
WARP = 32
WARP_ROWS = WARP // THREADS_N  # a warp is 2 rows of 16 threads

# Panel (1) draws the tile in units of one sub-tile (SUB_M x SUB_N elements).
UNITS_M, UNITS_N = BLOCK_M // SUB_M, BLOCK_N // SUB_N  # 32 x 32
STRIDE_UNITS_M, STRIDE_UNITS_N = SUB_STRIDE_M // SUB_M, SUB_STRIDE_N // SUB_N  # 16

# Threads drawn in colour: (ty, tx) -> colour.
SHOWN = {(0, 0): "#d62728", (0, 1): "#ff7f0e", (1, 0): "#9467bd"}
WARP_COLOR = "#1f77b4"
A_COLOR = "#1f77b4"
B_COLOR = "#ff7f0e"
QUAD_COLORS = ["#d62728", "#e377c2", "#8c564b", "#bcbd22"]  # the four sub-tiles of one thread


def _block_panel(ax) -> None:
    """(1) The block tile, the shared column As[:, k] and row Bs[k, :], and who owns which sub-tiles."""
    ox, oy = 3.0, 3.0  # origin of the C tile; the As strip sits left of it, the Bs strip above it
    ax.set_xlim(-0.5, ox + UNITS_N + 0.5)
    ax.set_ylim(oy + UNITS_M + 6.5, -1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) the {BLOCK_M}×{BLOCK_N} C tile of a block ({THREADS_M}×{THREADS_N} = "
                 f"{THREADS_M * THREADS_N} threads), one cell = one {SUB_M}×{SUB_N} sub-tile:\n"
                 f"thread (ty, tx) owns four sub-tiles, SUB_STRIDE = {SUB_STRIDE_M} rows / columns apart",
                 fontsize=9)
    cells(ax, ox, oy, UNITS_M, UNITS_N, lw=0.25)
    # Warp 0: threads 0..31 = rows ty = 0, 1 of the thread grid, all 16 columns; it appears in each quadrant.
    for im in range(SUBS_M):
        for jn in range(SUBS_N):
            ax.add_patch(Rectangle((ox + jn * STRIDE_UNITS_N, oy + im * STRIDE_UNITS_M), THREADS_N, WARP_ROWS,
                                   fc=WARP_COLOR, alpha=0.18, ec=WARP_COLOR, lw=0.8))
    for (ty, tx), color in SHOWN.items():
        for im in range(SUBS_M):
            for jn in range(SUBS_N):
                ax.add_patch(Rectangle((ox + tx + jn * STRIDE_UNITS_N, oy + ty + im * STRIDE_UNITS_M), 1, 1,
                                       color=color))
    # The quadrant boundaries: rows and columns 64 apart.
    ax.plot([ox + STRIDE_UNITS_N] * 2, [oy, oy + UNITS_M], color="black", lw=1.0)
    ax.plot([ox, ox + UNITS_N], [oy + STRIDE_UNITS_M] * 2, color="black", lw=1.0)
    ax.add_patch(Rectangle((ox, oy), UNITS_N, UNITS_M, fill=False, ec="black", lw=1.2))
    for u, label in ((0, "0"), (STRIDE_UNITS_N, str(SUB_STRIDE_N)), (UNITS_N, str(BLOCK_N))):
        ax.annotate(label, (ox + u, oy + UNITS_M + 0.9), ha="center", fontsize=7, color="#555555")
    # The shared operands at one k: column k of As (left strip) and row k of Bs (top strip).
    ax.add_patch(Rectangle((0, oy), 1, UNITS_M, fill=False, ec="black", lw=0.8))
    ax.add_patch(Rectangle((ox, 0), UNITS_N, 1, fill=False, ec="black", lw=0.8))
    for u in range(UNITS_M):
        ax.add_patch(Rectangle((0, oy + u), 1, 1, fill=False, lw=0.25, ec="#bbbbbb"))
        ax.add_patch(Rectangle((ox + u, 0), 1, 1, fill=False, lw=0.25, ec="#bbbbbb"))
    for im in range(SUBS_M):
        ax.add_patch(Rectangle((0, oy + im * STRIDE_UNITS_M), 1, 1, color=A_COLOR))
    for jn in range(SUBS_N):
        ax.add_patch(Rectangle((ox + jn * STRIDE_UNITS_N, 0), 1, 1, color=B_COLOR))
    ax.annotate("As[:, k]", (0.5, oy - 0.4), ha="center", va="bottom", fontsize=8, color=A_COLOR)
    ax.annotate("Bs[k, :]", (ox - 0.3, 0.5), ha="right", va="center", fontsize=8, color="#b35900")
    ax.annotate(f"a_frag of thread (0, 0):\nrows 0–3 and {SUB_STRIDE_M}–{SUB_STRIDE_M + 3}",
                xy=(1, oy + STRIDE_UNITS_M + 0.5), xytext=(ox + 1.5, oy + STRIDE_UNITS_M + 7), fontsize=8,
                color=A_COLOR, arrowprops=dict(arrowstyle="->", color=A_COLOR, lw=0.9))
    ax.annotate(f"b_frag of thread (0, 0): columns 0–3 and {SUB_STRIDE_N}–{SUB_STRIDE_N + 3}",
                xy=(ox + STRIDE_UNITS_N + 1, 0.5), xytext=(ox + STRIDE_UNITS_N + 2.5, -0.9), fontsize=8,
                color="#b35900", arrowprops=dict(arrowstyle="->", color="#b35900", lw=0.9))
    # A double arrow for the stride.
    x = ox + UNITS_N - 2.5
    ax.annotate("", xy=(x, oy + STRIDE_UNITS_M), xytext=(x, oy), arrowprops=dict(arrowstyle="<->", lw=1.0))
    ax.annotate(f"SUB_STRIDE_M\n= {SUB_STRIDE_M} rows", (x - 0.4, oy + STRIDE_UNITS_M / 2), ha="right",
                va="center", fontsize=8)
    ax.annotate(f"light blue: warp 0 = threads 0–31 = thread rows ty = 0, 1 ({WARP_ROWS}×{THREADS_N} threads)",
                (ox, oy + UNITS_M + 2.6), fontsize=8, color=WARP_COLOR)
    ax.annotate("red: thread (0, 0)   orange: thread (0, 1)   purple: thread (1, 0)",
                (ox, oy + UNITS_M + 4.4), fontsize=8)


def _outer_product_panel(ax) -> None:
    """(2) Thread (0, 0) at step k: 8 values of A and 8 of B in registers, 64 FMAs into acc[8][8]."""
    gap = 0.6  # drawn between the two sub-tiles to show they lie 64 rows / columns apart in C
    ox, oy = 4.2, 2.6  # origin of acc

    def pos(i: int) -> float:
        return i + (gap if i >= SUB_M else 0.0)

    size = THREAD_M + gap
    ax.set_xlim(-0.5, ox + size + 3.2)
    ax.set_ylim(oy + size + 3.6, -2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("(2) thread (0, 0) at one step k: the outer product\n"
                 "acc[m][n] += a_frag[m] · b_frag[n]  (8 × 8 = 64 FMAs)", fontsize=9)
    rows = [im * SUB_STRIDE_M + i for im in range(SUBS_M) for i in range(SUB_M)]
    cols = [jn * SUB_STRIDE_N + j for jn in range(SUBS_N) for j in range(SUB_N)]
    for m in range(THREAD_M):
        ax.add_patch(Rectangle((ox - 2.2, oy + pos(m)), 1, 1, fc=A_COLOR, alpha=0.8, ec="black", lw=0.5))
        ax.annotate(f"a{m}", (ox - 1.7, oy + pos(m) + 0.5), ha="center", va="center", fontsize=8, color="white")
        ax.annotate(f"row {rows[m]}", (ox - 2.35, oy + pos(m) + 0.5), ha="right", va="center", fontsize=7)
    for n in range(THREAD_N):
        ax.add_patch(Rectangle((ox + pos(n), oy - 2.2), 1, 1, fc=B_COLOR, alpha=0.9, ec="black", lw=0.5))
        ax.annotate(f"b{n}", (ox + pos(n) + 0.5, oy - 1.7), ha="center", va="center", fontsize=8)
        ax.annotate(f"{cols[n]}", (ox + pos(n) + 0.5, oy - 2.35), ha="center", va="bottom", fontsize=7)
    ax.annotate("col", (ox - 0.2, oy - 2.35), ha="right", va="bottom", fontsize=7)
    for m in range(THREAD_M):
        for n in range(THREAD_N):
            q = (m // SUB_M) * SUBS_N + n // SUB_N
            ax.add_patch(Rectangle((ox + pos(n), oy + pos(m)), 1, 1, fc=QUAD_COLORS[q], alpha=0.55, ec="black",
                                   lw=0.4))
    ax.annotate("a0·b5", (ox + pos(5) + 0.5, oy + pos(0) + 0.5), ha="center", va="center", fontsize=6)
    ax.annotate("a7·b3", (ox + pos(3) + 0.5, oy + pos(7) + 0.5), ha="center", va="center", fontsize=6)
    for q in range(SUBS_M * SUBS_N):
        qm, qn = divmod(q, SUBS_N)
        r0, c0 = qm * SUB_STRIDE_M, qn * SUB_STRIDE_N
        ax.annotate(f"rows {r0}–{r0 + SUB_M - 1}\ncols {c0}–{c0 + SUB_N - 1}",
                    (ox + pos(qn * SUB_N) + SUB_N / 2, oy + pos(qm * SUB_M) + SUB_M / 2), ha="center",
                    va="center", fontsize=7, bbox=dict(fc="white", ec="none", alpha=0.7, pad=1.0))
    ax.annotate("each colour: one 4×4 sub-tile of C", (ox, oy + size + 0.3), va="top", fontsize=7, color="#444444")
    ax.annotate(f"from shared memory: {THREAD_M} + {THREAD_N} = {THREAD_M + THREAD_N} values;\n"
                f"{THREAD_M * THREAD_N} FMAs on registers only", (ox + size + 3.1, oy + size + 2.2), ha="right",
                va="top", fontsize=8)


def _ratio_panel(ax) -> None:
    """(3) Shared loads per FMA in the source, for the three tilings: 2, 9/8, 16/64."""
    steps = ["03\n1 result", f"04\n{8}×1 column", f"05\n{THREAD_M}×{THREAD_N} outer product"]
    loads = [2.0, (8 + 1) / 8, (THREAD_M + THREAD_N) / (THREAD_M * THREAD_N)]
    colors = ["#aaaaaa", "#7f9fbf", "#d62728"]
    bars = ax.bar(range(3), loads, color=colors, width=0.6)
    for b, v in zip(bars, loads):
        flop_per_byte = 2.0 / (4.0 * v)
        ax.annotate(f"{v:g} loads / FMA\n= {flop_per_byte:.2g} FLOP per\nshared byte", (b.get_x() + b.get_width() / 2, v),
                    xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(3))
    ax.set_xticklabels(steps, fontsize=8)
    ax.set_ylim(0, 2.9)
    ax.set_ylabel("shared-memory loads per FMA (per thread, as written)", fontsize=8)
    ax.tick_params(axis="y", labelsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("(3) reuse from registers: in 04 one value of B feeds 8 FMAs,\n"
                 f"in 05 every value loaded feeds {THREAD_N}", fontsize=9)


def ch05_outer_product(path: Path) -> None:
    fig, axes = plt.subplots(1, 3, figsize=(18, 7.2), gridspec_kw=dict(width_ratios=[1.25, 1.0, 0.75]))
    _block_panel(axes[0])
    _outer_product_panel(axes[1])
    _ratio_panel(axes[2])
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {"outer-product.png": ch05_outer_product}
