"""Chapter 32: the GCN layer's data flow. The library pipeline (four kernels: DGEMM, SpMM, bias,
log-softmax) against the fused layer (two passes: the GEMM, whose blocks also list the long rows from
indptr, then the SpMM with bias + log_softmax in its epilogue, batched 16 rows per short-row warp), drawn as transfers
between global memory and the SMs, each arrow as wide as the bytes it moves; below, the bytes of each
pipeline (the library pipeline, the chapter's baseline, has the plain bias + log_softmax kernel in
place of the last two) against the floor.

The byte counts are computed here from the default graph's sizes, as the chapter's README computes them
(each tensor counted once, MB = 10^6 bytes, FP64, int32 indices). No measurement.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch  # noqa: E402

CHAPTER = "32_fused_gcn_layer"

# The default graph (docs/gcn-layer.md, graph.hpp) and the layer's sizes.
V = 281903
NNZ = 2312497 + V  # edges + self-loops
F_IN, F_OUT = 128, 16
MB = 1e6

X_MB = 8 * V * F_IN / MB  # 288.7
W_MB = 8 * F_IN * F_OUT / MB  # 0.016
B_MB = 8 * F_OUT / MB  # 0.0001
A_MB = (4 * (V + 1) + 4 * NNZ + 8 * NNZ) / MB  # 32.3: indptr, indices, values
ROWS_MB = 8 * V * F_OUT / MB  # 36.1: H, Y or out, V x 16 doubles
FLOOR_MB = X_MB + W_MB + B_MB + A_MB + ROWS_MB  # 357.0: gcn_layer_cost
FUSED_MB = FLOOR_MB + 2 * ROWS_MB  # 429.2: + H written and read once
INDPTR_MB = 4 * (V + 1) / MB  # 1.1: read by pass 1's plan warps (and again by pass 2, from L2)
LIBRARY_MB = (X_MB + W_MB + ROWS_MB) + (A_MB + 2 * ROWS_MB) + (2 * ROWS_MB + B_MB) + 2 * ROWS_MB  # 573.5
PLAIN_MB = (X_MB + W_MB + ROWS_MB) + (A_MB + 2 * ROWS_MB) + (ROWS_MB + B_MB + ROWS_MB)  # 501.4

X_COLOUR = "#6baed6"
W_COLOUR = "#fd8d3c"
A_COLOUR = "#756bb1"
H_COLOUR = "#e6550d"
Y_COLOUR = "#cb181d"
OUT_COLOUR = "#31a354"
KERNEL_FC = "#f0f0f0"
REGISTER_FC = "#fff5d6"
MEMORY_FC = "#ffffff"

MEM_X0, MEM_X1 = 0.0, 2.9
BOUNDARY = 3.9
SM_X0, SM_X1 = 5.0, 9.9
WIDEST_ARROW = 16.0  # points for X's 288.7 MB
THINNEST_ARROW = 1.2


def _box(ax, x0, y0, x1, y1, text, fc, ec="#555555", ls="-", fontsize=8.5, weight="normal", lw=1.0):
    ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0.02,rounding_size=0.1",
                                fc=fc, ec=ec, ls=ls, lw=lw))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, text, ha="center", va="center", fontsize=fontsize, fontweight=weight)


def _flow(ax, start, end, mb, colour, label, dashed=False):
    """A transfer between memory and an SM, as wide as its bytes, labelled above its middle."""
    width = max(THINNEST_ARROW, WIDEST_ARROW * (mb / X_MB) ** 0.5)  # square root: X would hide the rest
    style = f"simple,tail_width={width},head_width={width + 7},head_length={6 + width * 0.3}"
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=1, shrinkA=0, shrinkB=0,
                                 fc="none" if dashed else colour, ec=colour, lw=1.2 if dashed else 0,
                                 ls=(0, (4, 2)) if dashed else "-", alpha=0.85))
    x = (start[0] + end[0]) / 2
    y = (start[1] + end[1]) / 2 - 0.2
    ax.text(x, y, label, ha="center", va="bottom", fontsize=7.5, color=colour, fontweight="bold",
            bbox=dict(fc="white", ec="none", pad=0.4))


def _frame(ax, title, height):
    ax.set_xlim(-0.15, 10.05)
    ax.set_ylim(height, -0.9)
    ax.axis("off")
    ax.set_title(title, fontsize=10, loc="left")
    ax.plot([BOUNDARY, BOUNDARY], [-0.45, height - 0.1], color="#999999", lw=1.0, ls=(0, (5, 3)), zorder=0)
    ax.text((MEM_X0 + MEM_X1) / 2, -0.55, "global memory", ha="center", fontsize=9, color="#555555",
            fontweight="bold")
    ax.text((SM_X0 + SM_X1) / 2, -0.55, "the SMs", ha="center", fontsize=9, color="#555555", fontweight="bold")


def _kernel(ax, top, bottom, name, detail):
    _box(ax, SM_X0, top, SM_X1, bottom, "", KERNEL_FC)
    ax.text(SM_X0 + 0.12, top + 0.08, name, fontsize=8.5, fontweight="bold", va="top")
    ax.text(SM_X0 + 0.12, top + 0.4, detail, fontsize=7.5, va="top", color="#444444")


def _mem(ax, top, bottom, text, colour, dashed=False):
    _box(ax, MEM_X0, top, MEM_X1, bottom, text, MEMORY_FC, ec=colour, lw=2, ls=(0, (4, 2)) if dashed else "-")


HEIGHT = 14.8


def _library(ax):
    height = HEIGHT
    _frame(ax, f"the pipeline with cuDNN's softmax (second line): four kernels\n{LIBRARY_MB:.1f} MB at least "
               f"({LIBRARY_MB / FLOOR_MB:.2f}× the floor)", height)
    # 1 DGEMM
    _kernel(ax, 0.0, 2.6, "cuBLAS DGEMM", "H = X W")
    _mem(ax, 0.0, 1.1, f"X  {V}×{F_IN}\n{X_MB:.1f} MB", X_COLOUR)
    _mem(ax, 1.3, 1.8, f"W  {W_MB * 1e3:.0f} KB", W_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 0.55), (SM_X0 - 0.05, 0.8), X_MB, X_COLOUR, f"X read {X_MB:.1f}")
    _flow(ax, (MEM_X1 + 0.05, 1.55), (SM_X0 - 0.05, 1.4), W_MB, W_COLOUR, "W")
    _mem(ax, 2.1, 3.3, f"H  {V}×{F_OUT}\n{ROWS_MB:.1f} MB", H_COLOUR)
    _flow(ax, (SM_X0 - 0.05, 2.3), (MEM_X1 + 0.05, 2.5), ROWS_MB, H_COLOUR, f"H written {ROWS_MB:.1f}")
    # 2 SpMM
    _kernel(ax, 3.4, 6.6, "cuSPARSE SpMM", "Y = A_hat H")
    _mem(ax, 3.6, 4.6, f"A_hat  CSR, nnz {NNZ}\n{A_MB:.1f} MB", A_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 3.1), (SM_X0 - 0.05, 3.9), ROWS_MB, H_COLOUR, f"H read ≥ {ROWS_MB:.1f}")
    _flow(ax, (MEM_X1 + 0.05, 4.3), (SM_X0 - 0.05, 4.9), A_MB, A_COLOUR, f"A_hat read {A_MB:.1f}")
    _mem(ax, 5.6, 8.7, f"Y  {ROWS_MB:.1f} MB\nwritten, read,\nwritten, read", Y_COLOUR)
    _flow(ax, (SM_X0 - 0.05, 6.0), (MEM_X1 + 0.05, 6.0), ROWS_MB, Y_COLOUR, f"Y written {ROWS_MB:.1f}")
    # 3 bias
    _kernel(ax, 7.0, 8.9, "bias kernel", "Y += b (in place)")
    _flow(ax, (MEM_X1 + 0.05, 7.1), (SM_X0 - 0.05, 7.5), ROWS_MB, Y_COLOUR, f"Y read {ROWS_MB:.1f}")
    _flow(ax, (SM_X0 - 0.05, 8.3), (MEM_X1 + 0.05, 8.1), ROWS_MB, Y_COLOUR, f"Y written {ROWS_MB:.1f}")
    # 4 log-softmax
    _kernel(ax, 9.3, 11.4, "cuDNN log-softmax", "out = log_softmax(Y)")
    _flow(ax, (MEM_X1 + 0.05, 8.6), (SM_X0 - 0.05, 9.9), ROWS_MB, Y_COLOUR, f"Y read {ROWS_MB:.1f}")
    _mem(ax, 10.6, 11.8, f"out  {ROWS_MB:.1f} MB", OUT_COLOUR)
    _flow(ax, (SM_X0 - 0.05, 11.0), (MEM_X1 + 0.05, 11.2), ROWS_MB, OUT_COLOUR, f"out written {ROWS_MB:.1f}")
    ax.text(0.0, 12.6, "4 launches; H and Y each make round trips through memory", fontsize=8, color="#444444")
    ax.text(0.0, 13.3, "the baseline, the library pipeline: bias + log-softmax in one plain kernel,\n"
            f"one thread per row: Y written and read once, {PLAIN_MB:.1f} MB ({PLAIN_MB / FLOOR_MB:.2f}× the floor)",
            fontsize=8, color="#444444", va="top")


def _fused(ax):
    height = HEIGHT
    _frame(ax, f"chapter 32: two passes, the plan in the first, the epilogue in the SpMM\n{FUSED_MB:.1f} MB with H through DRAM "
               f"({FUSED_MB / FLOOR_MB:.2f}× the floor), {FLOOR_MB:.1f} MB if H stays in L2", height)
    # pass 1, which also lists the long rows (chapter 30's plan) from indptr
    _kernel(ax, 0.0, 3.85, "pass 1: chapter 28's GEMM + the plan", "H = X W: a block per 32-row tile, a warp\nper quarter of F_in; X's copies evict-first in L2;\n"
            "warp 0 lists the tile's long rows as pieces")
    _mem(ax, 0.1, 0.75, f"indptr  {INDPTR_MB:.1f} MB", A_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 0.42), (SM_X0 - 0.05, 0.5), INDPTR_MB, A_COLOUR, "indptr")
    _mem(ax, 1.25, 2.35, f"X  {V}×{F_IN}\n{X_MB:.1f} MB", X_COLOUR)
    _mem(ax, 2.55, 3.05, f"W  {W_MB * 1e3:.0f} KB", W_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 1.8), (SM_X0 - 0.05, 2.15), X_MB, X_COLOUR, f"X read {X_MB:.1f}")
    _flow(ax, (MEM_X1 + 0.05, 2.8), (SM_X0 - 0.05, 2.75), W_MB, W_COLOUR, "W")
    _mem(ax, 3.35, 4.75, f"H  in the workspace\n{ROWS_MB:.1f} MB: fits in the\n50 MB L2", H_COLOUR, dashed=True)
    _flow(ax, (SM_X0 - 0.05, 3.55), (MEM_X1 + 0.05, 3.75), ROWS_MB, H_COLOUR, f"H written {ROWS_MB:.1f}", dashed=True)
    # pass 2
    _kernel(ax, 4.85, 13.4, "pass 2: chapter 30's SpMM + epilogue", "y = A_hat H: a warp per 16 rows, or per piece")
    _mem(ax, 5.65, 6.65, f"A_hat  CSR\n{A_MB:.1f} MB", A_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 4.55), (SM_X0 - 0.05, 5.65), ROWS_MB, H_COLOUR, f"H read ≥ {ROWS_MB:.1f}", dashed=True)
    _flow(ax, (MEM_X1 + 0.05, 6.15), (SM_X0 - 0.05, 6.55), A_MB, A_COLOUR, f"A_hat read {A_MB:.1f}")
    steps = [
        ("gather: y_c += a_vj · H[j][c]\n(half a warp per row, entries in pairs)", 7.05),
        ("short rows: the finished row staged in\nshared memory (16 rows per warp, 2 KB)", 8.05),
        ("t = y + b: 8 lanes × 2 features per row,\n4 rows per instruction;  m = max t (3 shuffles)", 9.05),
        ("s = Σ exp(t − m)  (3 shuffle steps)", 10.05),
        ("log s: once per lane, 16 rows per warp", 10.85),
        ("out = (t − m) − log s:  16-byte stores,\n4 rows (512 bytes) per instruction", 11.65),
    ]
    cx = (SM_X0 + SM_X1) / 2 + 0.1
    tops = []
    for k, (text, y) in enumerate(steps):
        bottom = y + (0.8 if "\n" in text else 0.55)
        tops.append((y, bottom))
        _box(ax, SM_X0 + 0.25, y, SM_X1 - 0.15, bottom, text, REGISTER_FC, fontsize=7.3)
    for k in range(len(tops) - 1):
        ax.add_patch(FancyArrowPatch((cx, tops[k][1]), (cx, tops[k + 1][0]), arrowstyle="-|>", mutation_scale=9,
                                     lw=1.0, color="#444444", shrinkA=0, shrinkB=0))
    ax.text(SM_X0 + 0.25, 12.75, "long rows (4,736): the same, one row at a time,\nboth halves of the warp side by side",
            fontsize=7.3, color="#444444", va="top")
    _mem(ax, 9.0, 9.5, "b  16 doubles", OUT_COLOUR)
    _flow(ax, (MEM_X1 + 0.05, 9.25), (SM_X0 + 0.2, 9.45), B_MB, OUT_COLOUR, "b")
    _mem(ax, 11.5, 12.7, f"out  {ROWS_MB:.1f} MB", OUT_COLOUR)
    _flow(ax, (SM_X0 + 0.2, 11.9), (MEM_X1 + 0.05, 12.1), ROWS_MB, OUT_COLOUR, f"out written {ROWS_MB:.1f}")
    ax.text(0.0, 13.8, "2 kernels + an 8-byte reset; Y and t never reach memory", fontsize=8, color="#444444")


def _bars(ax):
    parts = [
        ("X + W + b read", X_MB + W_MB + B_MB, X_COLOUR, None),
        ("A_hat read", A_MB, A_COLOUR, None),
        ("out written", ROWS_MB, OUT_COLOUR, None),
        ("H written + read", 2 * ROWS_MB, H_COLOUR, "//"),
        ("Y written + read", 2 * ROWS_MB, Y_COLOUR, "\\\\"),
        ("Y written + read, again", 2 * ROWS_MB, "#fb6a4a", "\\\\"),
    ]
    bars = [
        ("floor (gcn_layer_cost)", ["X + W + b read", "A_hat read", "out written"]),
        ("chapter 32, H kept in L2", ["X + W + b read", "A_hat read", "out written"]),
        ("chapter 32, H through DRAM", ["X + W + b read", "A_hat read", "out written", "H written + read"]),
        ("library pipeline (the baseline)", ["X + W + b read", "A_hat read", "out written", "H written + read",
                                             "Y written + read"]),
        ("with cuDNN's softmax", ["X + W + b read", "A_hat read", "out written", "H written + read",
                                      "Y written + read", "Y written + read, again"]),
    ]
    lookup = {name: (mb, colour, hatch) for name, mb, colour, hatch in parts}
    for row, (name, names) in enumerate(bars):
        left = 0.0
        for part in names:
            mb, colour, hatch = lookup[part]
            ax.barh(row, mb, left=left, color=colour, hatch=hatch, edgecolor="white", lw=0.8, height=0.6)
            left += mb
        ax.text(left + 5, row, f"{left:.1f} MB  ({left / FLOOR_MB:.2f}× the floor, {left / 3.0:.0f} µs "
                "at 3.0 TB/s)", va="center", fontsize=8.5)
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars], fontsize=8.5)
    ax.invert_yaxis()
    ax.set_xlim(0, LIBRARY_MB * 1.45)
    ax.set_xlabel("MB to or from DRAM, default graph (each tensor once; H gathered from L2 after its first touch; "
                  "MB = 10⁶ bytes)", fontsize=8.5)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(handles=[Patch(fc=c, hatch=h, ec="white", label=n) for n, _, c, h in parts], fontsize=8, ncol=6,
              frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.3))


def data_flow(path: Path) -> None:
    fig = plt.figure(figsize=(15, 14))
    gs = fig.add_gridspec(2, 2, height_ratios=[3.6, 1.1], hspace=0.14, wspace=0.08, top=0.9)
    _library(fig.add_subplot(gs[0, 0]))
    _fused(fig.add_subplot(gs[0, 1]))
    _bars(fig.add_subplot(gs[1, :]))
    fig.suptitle(f"out = log_softmax(A_hat (X W) + b) on the default graph (V = {V}, nnz = {NNZ}, "
                 f"{F_IN} → {F_OUT}, FP64)\nevery arrow that crosses the dashed line is memory traffic "
                 "(width grows with the square root of its MB; dashed: H, which may stay in L2)",
                 fontsize=11.5, y=0.965)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# The batched epilogue of a short-row warp (kernel.cuh, bias_log_softmax_rows): 16 staged rows of 16
# doubles; 8 lanes per row, 2 adjacent features per lane, 4 rows per round, 4 rounds.
ROWS_PER_WARP, LANES_PER_ROW, ROUNDS = 16, 8, 4
ROWS_AT_ONCE = 32 // LANES_PER_ROW  # 4
ROUND_COLOURS = ["#4C72B0", "#55A868", "#C44E52", "#8172B3"]


def epilogue_lanes(path: Path) -> None:
    """Lane l = 8 r + q holds features 2q, 2q+1 of row 4k + r in round k; it keeps the sum of row
    4 (q % 4) + r (the round k == q % 4), takes its log, and in round k the row's 8 lanes fetch the
    log from lane k of their 8."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(16, 6.2), gridspec_kw=dict(width_ratios=[1, 1.9], wspace=0.12))
    ax1.set_title("(1) the staged rows (st.rows, 16 × 16 doubles, 2 KB):\ncolour: the round k that reads the row; "
                  "Ln: the lane holding the pair", fontsize=9.5)
    for i in range(ROWS_PER_WARP):
        k, r = divmod(i, ROWS_AT_ONCE)
        for q in range(LANES_PER_ROW):
            ax1.add_patch(plt.Rectangle((2 * q, i), 2, 1, fc=ROUND_COLOURS[k], ec="white", lw=0.8, alpha=0.85))
            ax1.text(2 * q + 1, i + 0.55, f"L{LANES_PER_ROW * r + q}", ha="center", va="center", fontsize=7, color="white")
    ax1.set_xlim(0, 16), ax1.set_ylim(ROWS_PER_WARP, 0), ax1.set_aspect("equal")
    ax1.set_xticks(range(0, 17, 2)), ax1.set_yticks([i + 0.5 for i in range(ROWS_PER_WARP)])
    ax1.set_yticklabels([f"row {i}" for i in range(ROWS_PER_WARP)], fontsize=7.5)
    ax1.set_xlabel("feature c (a lane's pair: 2q, 2q + 1, one 16-byte load)", fontsize=8.5)
    ax1.tick_params(length=0, labelsize=7.5)
    ax2.set_title("(2) lane × round: the row a lane works on (one warp instruction serves 4 rows; max and sum in 3 "
                  "butterfly steps, offsets 4, 2, 1, within each 8);\n★ the row whose sum the lane keeps and takes the "
                  "log of (round k == q % 4); in round k the row's lanes fetch it from lane k of their 8", fontsize=9.5)
    for lane in range(32):
        r, q = divmod(lane, LANES_PER_ROW)
        for k in range(ROUNDS):
            row = ROWS_AT_ONCE * k + r
            keep = k == q % ROUNDS
            ax2.add_patch(plt.Rectangle((lane, k), 1, 1, fc=ROUND_COLOURS[k], ec="white", lw=0.6, alpha=0.9 if keep else 0.45))
            ax2.text(lane + 0.5, k + 0.5, f"{row}" + ("★" if keep else ""), ha="center", va="center", fontsize=7.5,
                     color="black", fontweight="bold" if keep else "normal")
    for g in range(1, ROWS_AT_ONCE):
        ax2.axvline(LANES_PER_ROW * g, color="black", lw=1.2)
    ax2.set_xlim(0, 32), ax2.set_ylim(ROUNDS, 0)
    ax2.set_xticks([l + 0.5 for l in range(32)]), ax2.set_xticklabels([str(l) for l in range(32)], fontsize=7)
    ax2.set_yticks([k + 0.5 for k in range(ROUNDS)]), ax2.set_yticklabels([f"round {k}" for k in range(ROUNDS)], fontsize=8)
    ax2.set_xlabel("lane l = 8 r + q (r = l / 8: which of the round's 4 rows; q = l % 8: which pair of features)", fontsize=8.5)
    ax2.tick_params(length=0)
    fig.suptitle("Chapter 32: the batched epilogue of a short-row warp: bias + log_softmax for its 16 rows, "
                 "4 rows per warp instruction, one log per lane", fontsize=11, y=1.0)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"fused-layer-flow.png": data_flow, "epilogue-lanes.png": epilogue_lanes}
