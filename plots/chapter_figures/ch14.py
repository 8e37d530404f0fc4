"""Chapter 14's picture: im2col + GEMM + permute on a convolution small enough to label every element.

(1) the input, two channels with their padding ring, and the window of one output pixel; (2) the
column matrix X_col that im2col writes: one row per filter tap, one column per output pixel, each
element the input pixel that tap meets (0 in the padding), the window of (1) in column j; (3) the
GEMM Y' = W * X_col; (4) the permute from Y' (rows k, all images side by side) to NKPQ.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import cells  # noqa: E402

CHAPTER = "14_im2col_gemm"

# The example of panels (1) to (3): one image, small enough to label every element of X_col.
N, C, H, W = 1, 2, 4, 4
K, R, S = 3, 3, 3
PAD, STRIDE, DIL = 1, 1, 1
P = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1  # 4
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1  # 4
GEMM_M, GEMM_N, GEMM_K = K, N * P * Q, C * R * S  # 3, 16, 18
TRACE_P, TRACE_Q = 1, 2  # the output pixel whose window is traced
TRACE_J = TRACE_P * Q + TRACE_Q  # its column (n = 0): 6
TRACE_K = 1  # the filter (row of W and of Y') traced in panel (3)
N_PERMUTE = 2  # images in the permute of panel (4)

CHANNEL_COLOURS = ["#9ecae1", "#fdae6b"]  # pixels of channel 0, 1
PAD_COLOUR = "#d9d9d9"
TRACE_COLOUR = "#d62728"
K_COLOURS = ["#a1d99b", "#bcbddc", "#fdd0a2"]  # rows k of Y' and planes k of y in panel (4)


def _pixel_name(c: int, ih: int, iw: int) -> str:
    """Pixel (ih, iw) of channel c: a..p in channel 0, A..P in channel 1."""
    letter = chr(ord("a") + ih * W + iw)
    return letter if c == 0 else letter.upper()


def _x_col(kk: int, j: int) -> tuple[int, int, int] | None:
    """(c, ih, iw) that X_col(kk, j) holds, or None in the padding (kk = (c*R + r)*S + s, j = p*Q + q)."""
    c, rem = divmod(kk, R * S)
    r, s = divmod(rem, S)
    p, q = divmod(j % (P * Q), Q)
    ih, iw = p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL
    return (c, ih, iw) if 0 <= ih < H and 0 <= iw < W else None


def _input(ax) -> None:
    """Panel (1): x, both channels, padded; the window of output pixel (TRACE_P, TRACE_Q)."""
    span, gap = W + 2 * PAD, 1.5
    ax.set_xlim(-0.5, C * span + (C - 1) * gap + 0.5)
    ax.set_ylim(span + 2.8, -0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(1) x: {C} channels of {H}×{W}, padding {PAD} (grey, never stored);\n"
                 f"red: the {R}×{S} window of output pixel (p, q) = ({TRACE_P}, {TRACE_Q})", fontsize=10)
    for c in range(C):
        ox = c * (span + gap)
        for ih in range(-PAD, H + PAD):
            for iw in range(-PAD, W + PAD):
                inside = 0 <= ih < H and 0 <= iw < W
                ax.add_patch(Rectangle((ox + PAD + iw, PAD + ih), 1, 1,
                                       fc=CHANNEL_COLOURS[c] if inside else PAD_COLOUR, ec="white", lw=0.8))
                if inside:
                    ax.annotate(_pixel_name(c, ih, iw), (ox + PAD + iw + 0.5, PAD + ih + 0.5), ha="center",
                                va="center", fontsize=10)
        ih0, iw0 = TRACE_P * STRIDE - PAD, TRACE_Q * STRIDE - PAD
        ax.add_patch(Rectangle((ox + PAD + iw0, PAD + ih0), S * DIL, R * DIL, fill=False, ec=TRACE_COLOUR, lw=2.2))
        ax.annotate(f"c = {c}", (ox + span / 2, span + 0.8), ha="center", fontsize=10)
    ax.annotate(f"an interior pixel lies under {R * S} windows:\nX_col holds it {R * S} times",
                (0, span + 1.5), fontsize=9, va="top")


def _column_matrix(ax) -> None:
    """Panel (2): X_col, every element labelled with the pixel it holds; column TRACE_J traced."""
    ax.set_xlim(-5.2, GEMM_N + 0.3)
    ax.set_ylim(GEMM_K + 1.6, -1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(2) X_col ({GEMM_K}×{GEMM_N}), row-major, written by im2col: row kk = (c·R + r)·S + s is one "
                 f"filter tap,\ncolumn j = (n·P + p)·Q + q one output pixel; column {TRACE_J} is the window of (1), "
                 f"channel by channel, row by row (grey: 0, the padding)", fontsize=10)
    for kk in range(GEMM_K):
        for j in range(GEMM_N):
            src = _x_col(kk, j)
            fc = PAD_COLOUR if src is None else CHANNEL_COLOURS[src[0]]
            ax.add_patch(Rectangle((j, kk), 1, 1, fc=fc, ec="white", lw=0.6))
            ax.annotate("0" if src is None else _pixel_name(*src), (j + 0.5, kk + 0.5), ha="center", va="center",
                        fontsize=7.5, color="#666666" if src is None else "black")
    ax.add_patch(Rectangle((TRACE_J, 0), 1, GEMM_K, fill=False, ec=TRACE_COLOUR, lw=2.2))
    for j in range(GEMM_N):
        ax.annotate(str(j), (j + 0.5, -0.3), ha="center", fontsize=7, color=TRACE_COLOUR if j == TRACE_J else "black")
    ax.annotate("j →", (GEMM_N / 2, -1.0), ha="center", fontsize=9)
    for kk in range(GEMM_K):
        c, rem = divmod(kk, R * S)
        r, s = divmod(rem, S)
        ax.annotate(f"{kk:2d}  ({c},{r},{s})", (-0.3, kk + 0.5), ha="right", va="center", fontsize=7,
                    family="monospace")
    ax.annotate("kk (c,r,s)", (-0.3, -0.3), ha="right", fontsize=7.5, family="monospace")
    ax.annotate(f"{GEMM_K}×{GEMM_N} = {GEMM_K * GEMM_N} floats for an input of {C * H * W}", (0, GEMM_K + 1.0),
                fontsize=9, va="top")


def _gemm(ax) -> None:
    """Panel (3): Y' = W * X_col; element (TRACE_K, TRACE_J) is row TRACE_K of W times column TRACE_J."""
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(3) the GEMM (chapter 09, unchanged): Y' ({GEMM_M}×{GEMM_N}) = W ({GEMM_M}×{GEMM_K}) · X_col;\n"
                 f"W is the KCRS filter as stored, row k = filter k; Y'({TRACE_K}, {TRACE_J}) = row {TRACE_K} of W "
                 f"· column {TRACE_J} of X_col", fontsize=10)
    wx, wy = 0, 0
    for k in range(GEMM_M):
        for kk in range(GEMM_K):
            ax.add_patch(Rectangle((wx + kk, wy + k), 1, 1, fc=CHANNEL_COLOURS[kk // (R * S)], ec="white", lw=0.6,
                                   alpha=1.0 if k == TRACE_K else 0.35))
    ax.add_patch(Rectangle((wx, wy + TRACE_K), GEMM_K, 1, fill=False, ec=TRACE_COLOUR, lw=2.0))
    ax.annotate("W", (wx - 0.4, wy + GEMM_M / 2), ha="right", va="center", fontsize=13, fontweight="bold")
    ax.annotate("· X_col =", (wx + GEMM_K + 0.5, wy + GEMM_M / 2), va="center", fontsize=11)
    yx = wx + GEMM_K + 8.5
    cells(ax, yx, wy, GEMM_M, GEMM_N, lw=0.6, ec="#999999")
    ax.add_patch(Rectangle((yx + TRACE_J, wy + TRACE_K), 1, 1, color=TRACE_COLOUR))
    ax.annotate("Y'", (yx + GEMM_N + 0.4, wy + GEMM_M / 2), va="center", fontsize=13, fontweight="bold")
    ax.annotate("(c = 0 taps blue, c = 1 taps orange)", (wx, wy + GEMM_M + 1.0), fontsize=9, va="top")
    ax.set_xlim(-2, yx + GEMM_N + 2)
    ax.set_ylim(GEMM_M + 2.0, -0.6)


def _permute(ax) -> None:
    """Panel (4): Y' (rows k; the P*Q columns of image 0, then of image 1) -> y (NKPQ), one row segment per plane."""
    seg = 4.0  # drawn width of P*Q floats
    ax.axis("off")
    ax.set_title(f"(4) the permute, drawn for N = {N_PERMUTE}: row k of Y' holds plane k of every image, side by side;"
                 "\ny (NKPQ) keeps each image's K planes together. Each plane is a contiguous segment on both sides",
                 fontsize=10)
    top = 0.0
    for k in range(K):
        for n in range(N_PERMUTE):
            ax.add_patch(Rectangle((n * seg, top + k), seg, 1, fc=K_COLOURS[k], ec="black", lw=0.8))
            ax.annotate(f"k={k}, n={n}", (n * seg + seg / 2, top + k + 0.5), ha="center", va="center", fontsize=9)
    ax.annotate("Y'", (-0.3, top + K / 2), ha="right", va="center", fontsize=13, fontweight="bold")
    ax.annotate("← n = 0: P·Q floats →", (seg / 2, top - 0.35), ha="center", fontsize=8)
    bottom = K + 2.2
    for n in range(N_PERMUTE):
        for k in range(K):
            x0 = (n * K + k) * seg * 0.75
            ax.add_patch(Rectangle((x0, bottom), seg * 0.75, 1, fc=K_COLOURS[k], ec="black", lw=0.8))
            ax.annotate(f"y[{n}][{k}]", (x0 + seg * 0.375, bottom + 0.5), ha="center", va="center", fontsize=9)
            start = (n * seg + (k + 0.5) * seg / K, top + K)  # leave Y' below its columns, one per plane
            ax.add_patch(FancyArrowPatch(start, (x0 + seg * 0.375, bottom),
                                         arrowstyle="->", mutation_scale=10, lw=0.8, color="#555555"))
    ax.annotate("y", (-0.3, bottom + 0.5), ha="right", va="center", fontsize=13, fontweight="bold")
    ax.annotate("y[n][k][p][q] = Y'[k][(n·P + p)·Q + q]: one thread per element of y; reads and writes coalesced",
                (0, bottom + 1.9), fontsize=9, va="top")
    ax.set_xlim(-1.5, N_PERMUTE * K * seg * 0.75 + 0.5)
    ax.set_ylim(bottom + 2.6, -1.0)


def ch14_im2col(path: Path) -> None:
    """Chapter 14: im2col writes the column matrix, the Part I GEMM multiplies, a permute restores NKPQ."""
    fig = plt.figure(figsize=(18, 15))
    gs = fig.add_gridspec(3, 2, height_ratios=[1.0, 0.6, 0.75], width_ratios=[1.0, 1.45], hspace=0.14, wspace=0.06)
    _input(fig.add_subplot(gs[0, 0]))
    _gemm(fig.add_subplot(gs[1, 0]))
    _column_matrix(fig.add_subplot(gs[0:2, 1]))
    _permute(fig.add_subplot(gs[2, :]))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"im2col.png": ch14_im2col}
