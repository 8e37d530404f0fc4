"""docs/conv-as-gemm.md's picture: a small convolution, its three tensors, and the same computation
as the implicit GEMM Y = W * X_col, with one output pixel, one filter tap and one product traced
through the three index maps.

Not a chapter's figure (its name does not start with "ch"): figures.py draws it into docs/.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import cells  # noqa: E402

# The example problem: small enough to draw every element, with padding and a stride so that both
# show up in the maps. Any sizes work; the drawing follows from them.
N, C, H, W = 2, 2, 5, 5
K, R, S = 4, 3, 3
PAD, STRIDE, DIL = 1, 2, 1
P = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1  # 3
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1  # 3
GEMM_M, GEMM_N, GEMM_K = K, N * P * Q, C * R * S  # 4, 18, 18

# What the picture traces: output pixel (n, p, q) = column j, filter tap (c, r, s) = row kk, channel k.
TRACE_N, TRACE_P, TRACE_Q = 1, 0, 1
TRACE_C, TRACE_R, TRACE_S = 1, 1, 2
TRACE_K = 2
J = (TRACE_N * P + TRACE_P) * Q + TRACE_Q                  # 10
KK = (TRACE_C * R + TRACE_R) * S + TRACE_S                 # 14
IH = TRACE_P * STRIDE - PAD + TRACE_R * DIL                # 0
IW = TRACE_Q * STRIDE - PAD + TRACE_S * DIL                # 3

COL_COLOUR = "#1f77b4"   # output pixel / column j
TAP_COLOUR = "#d62728"   # filter tap / row kk, and the one product
ROW_COLOUR = "#2ca02c"   # output channel / row k of W and Y
PAD_COLOUR = "#d9d9d9"   # the padding (reads zero, never stored)


def _in_image(ih: int, iw: int) -> bool:
    return 0 <= ih < H and 0 <= iw < W


def _tap_pixel(j: int, kk: int) -> tuple[int, int, int, int]:
    """(n, c, ih, iw) that X_col(kk, j) reads: the three maps of the text."""
    n, rem = divmod(j, P * Q)
    p, q = divmod(rem, Q)
    c, rem = divmod(kk, R * S)
    r, s = divmod(rem, S)
    return n, c, p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL


def _box(ax, x, y, w, h, colour, alpha=1.0, lw=0.0, ec=None, fill=True):
    ax.add_patch(Rectangle((x, y), w, h, fc=colour if fill else "none", alpha=alpha, lw=lw, ec=ec or colour))


def _input_panel(ax) -> None:
    """x (NCHW): image TRACE_N, its C channels with the padding ring, the window of the traced pixel."""
    gap = 1.5
    span = W + 2 * PAD
    ax.set_xlim(-1.0, C * span + (C - 1) * gap + 0.5)
    ax.set_ylim(H + 2 * PAD + 2.2, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"x: input, NCHW ({N}×{C}×{H}×{W}); image n = {TRACE_N} drawn,\n"
                 f"padding {PAD} (grey, never stored), stride {STRIDE}", fontsize=9)
    for c in range(C):
        ox = c * (span + gap)  # padded grid's corner; image pixel (ih, iw) at (ox + PAD + iw, PAD + ih)
        for ih in range(-PAD, H + PAD):
            for iw in range(-PAD, W + PAD):
                if not _in_image(ih, iw):
                    _box(ax, ox + PAD + iw, PAD + ih, 1, 1, PAD_COLOUR)
        cells(ax, ox, 0, span, span, lw=0.3)
        ax.add_patch(Rectangle((ox + PAD, PAD), W, H, fill=False, ec="black", lw=1.0))
        # The R x S window of output pixel (p, q): rows p*stride - pad + r*dil, columns q*stride - pad + s*dil.
        for r in range(R):
            for s in range(S):
                ih, iw = TRACE_P * STRIDE - PAD + r * DIL, TRACE_Q * STRIDE - PAD + s * DIL
                _box(ax, ox + PAD + iw, PAD + ih, 1, 1, COL_COLOUR, alpha=0.35)
        top, left = TRACE_P * STRIDE - PAD, TRACE_Q * STRIDE - PAD
        ax.add_patch(Rectangle((ox + PAD + left, PAD + top), DIL * (S - 1) + 1, DIL * (R - 1) + 1, fill=False,
                               ec=COL_COLOUR, lw=2.0))
        if c == TRACE_C:
            _box(ax, ox + PAD + IW, PAD + IH, 1, 1, TAP_COLOUR)
        ax.annotate(f"c = {c}", (ox + span / 2, span + 0.9), ha="center", fontsize=8)
    ax.annotate(f"window of output pixel (p, q) = ({TRACE_P}, {TRACE_Q}): its top row is padding",
                (0, -0.6), fontsize=7.5, color=COL_COLOUR)
    ax.annotate(f"red: tap (c, r, s) = ({TRACE_C}, {TRACE_R}, {TRACE_S}) reads x[{TRACE_N}][{TRACE_C}][{IH}][{IW}]",
                (0, span + 2.0), fontsize=7.5, color=TAP_COLOUR)


def _filter_panel(ax) -> None:
    """w (KCRS): filter TRACE_K as C grids of R x S taps, and the same floats as row k of W."""
    gap = 1.0
    ax.set_xlim(-0.5, GEMM_K + 0.5)
    ax.set_ylim(R + 6.0, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"w: filter, KCRS ({K}×{C}×{R}×{S}); filter k = {TRACE_K} drawn:\n"
                 f"its C·R·S = {GEMM_K} floats lie in memory as row k of W", fontsize=9)
    for c in range(C):
        ox = c * (S + gap)
        cells(ax, ox, 0, R, S, lw=0.4, ec="#888888")
        _box(ax, ox, 0, S, R, ROW_COLOUR, alpha=0.2)
        if c == TRACE_C:
            _box(ax, ox + TRACE_S, TRACE_R, 1, 1, TAP_COLOUR)
        ax.annotate(f"c = {c}", (ox + S / 2, -0.4), ha="center", fontsize=8)
    # The same filter flattened: kk = (c*R + r)*S + s.
    y = R + 2.5
    cells(ax, 0, y, 1, GEMM_K, lw=0.4, ec="#888888")
    _box(ax, 0, y, GEMM_K, 1, ROW_COLOUR, alpha=0.2)
    _box(ax, KK, y, 1, 1, TAP_COLOUR)
    for c in range(1, C):
        ax.plot([c * R * S] * 2, [y - 0.3, y + 1.3], color="black", lw=1.0)
    ax.annotate(f"kk = (c·R + r)·S + s = {KK}", (KK + 0.5, y + 1.3), ha="center", va="top", fontsize=8,
                color=TAP_COLOUR)
    ax.annotate(f"w[{TRACE_K}][·][·][·] flattened: row k = {TRACE_K} of W", (0, y - 0.3), fontsize=8, color=ROW_COLOUR)


def _output_panel(ax) -> None:
    """y (NKPQ): image TRACE_N, its K channels of P x Q, the traced element."""
    gap = 0.8
    ax.set_xlim(-0.5, K * (Q + gap))
    ax.set_ylim(P + 3.0, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"y: output, NKPQ ({N}×{K}×{P}×{Q}); image n = {TRACE_N} drawn\n"
                 f"P = ⌊(H + 2·pad − dil·(R − 1) − 1) / stride⌋ + 1 = {P}", fontsize=9)
    for k in range(K):
        ox = k * (Q + gap)
        cells(ax, ox, 0, P, Q, lw=0.4, ec="#888888")
        if k == TRACE_K:
            _box(ax, ox, 0, Q, P, ROW_COLOUR, alpha=0.2)
            _box(ax, ox + TRACE_Q, TRACE_P, 1, 1, COL_COLOUR)
        ax.annotate(f"k = {k}", (ox + Q / 2, -0.4), ha="center", fontsize=8)
    ax.annotate(f"y[{TRACE_N}][{TRACE_K}][{TRACE_P}][{TRACE_Q}] = Y({TRACE_K}, {J})", (0, P + 1.3), fontsize=8,
                color=COL_COLOUR)


def _gemm_panel(ax) -> None:
    """Y (K x NPQ) = W (K x CRS) * X_col (CRS x NPQ), classic layout: X_col above Y, W left of Y."""
    gx, gy = GEMM_K + 2, GEMM_K + 2  # Y's top-left corner; W at (0, gy), X_col at (gx, 0)
    ax.set_xlim(-7.5, gx + GEMM_N + 1.0)
    ax.set_ylim(gy + GEMM_M + 2.5, -3.5)
    ax.set_aspect("equal")
    ax.axis("off")

    # X_col: every element's source pixel, padding in grey; column j and row kk traced.
    for kk in range(GEMM_K):
        for j in range(GEMM_N):
            _, _, ih, iw = _tap_pixel(j, kk)
            if not _in_image(ih, iw):
                _box(ax, gx + j, kk, 1, 1, PAD_COLOUR)
    _box(ax, gx + J, 0, 1, GEMM_K, COL_COLOUR, alpha=0.35)
    _box(ax, gx, KK, GEMM_N, 1, TAP_COLOUR, alpha=0.12)
    _box(ax, gx + J, KK, 1, 1, TAP_COLOUR)
    cells(ax, gx, 0, GEMM_K, GEMM_N, lw=0.3)
    ax.add_patch(Rectangle((gx, 0), GEMM_N, GEMM_K, fill=False, ec="black", lw=1.0))
    # Groups: images along j, channels along kk.
    for n in range(1, N):
        ax.plot([gx + n * P * Q] * 2, [-1.5, GEMM_K], color="black", lw=1.0)
    for n in range(N):
        ax.annotate(f"n = {n}: (p, q) = (0,0) … ({P - 1},{Q - 1})", (gx + (n + 0.5) * P * Q, -0.5), ha="center",
                    fontsize=7.5)
    for c in range(1, C):
        ax.plot([gx - 1.5, gx + GEMM_N], [c * R * S] * 2, color="black", lw=1.0)
    for c in range(C):
        ax.annotate(f"c = {c}\n(r, s) =\n(0,0) … ({R - 1},{S - 1})", (gx - 0.3, (c + 0.5) * R * S), ha="right",
                    va="center", fontsize=7.5)
    ax.annotate(f"X_col ({GEMM_K}×{GEMM_N}) = B: never stored (implicit GEMM); im2col writes it out.\n"
                f"Grey: the tap lands in the padding, the element is 0.",
                (gx + GEMM_N / 2, -2.0), ha="center", fontsize=8.5)
    ax.annotate(f"j = {J}", (gx + J + 0.5, GEMM_K + 0.1), ha="center", va="top", fontsize=8, color=COL_COLOUR,
                fontweight="bold")
    ax.annotate(f"kk = {KK}", (gx + GEMM_N + 0.2, KK + 0.5), va="center", fontsize=8, color=TAP_COLOUR,
                fontweight="bold")

    # W: the filter as stored, row-major K x CRS.
    _box(ax, 0, gy + TRACE_K, GEMM_K, 1, ROW_COLOUR, alpha=0.3)
    _box(ax, KK, gy + TRACE_K, 1, 1, TAP_COLOUR)
    cells(ax, 0, gy, GEMM_M, GEMM_K, lw=0.3)
    ax.add_patch(Rectangle((0, gy), GEMM_K, GEMM_M, fill=False, ec="black", lw=1.0))
    ax.annotate(f"W ({GEMM_M}×{GEMM_K}) = A: the KCRS filter as it lies in memory,\nrow-major, lda = C·R·S",
                (GEMM_K / 2, gy + GEMM_M + 0.4), ha="center", va="top", fontsize=8.5)
    ax.annotate(f"k = {TRACE_K}", (-0.3, gy + TRACE_K + 0.5), ha="right", va="center", fontsize=8, color=ROW_COLOUR,
                fontweight="bold")

    # Y: K x NPQ; element (k, j) lives at y[n][k][p][q].
    _box(ax, gx, gy + TRACE_K, GEMM_N, 1, ROW_COLOUR, alpha=0.3)
    _box(ax, gx + J, gy, 1, GEMM_M, COL_COLOUR, alpha=0.35)
    _box(ax, gx + J, gy + TRACE_K, 1, 1, COL_COLOUR)
    cells(ax, gx, gy, GEMM_M, GEMM_N, lw=0.3)
    ax.add_patch(Rectangle((gx, gy), GEMM_N, GEMM_M, fill=False, ec="black", lw=1.0))
    for n in range(1, N):
        ax.plot([gx + n * P * Q] * 2, [gy, gy + GEMM_M], color="black", lw=1.0)
    ax.annotate(f"Y ({GEMM_M}×{GEMM_N}) = C: row k of image n is y[n][k][·][·], P·Q consecutive floats",
                (gx + GEMM_N / 2, gy + GEMM_M + 0.4), ha="center", va="top", fontsize=8.5)

    # The maps, in the free corner above W.
    maps = [
        (COL_COLOUR, f"column j → output pixel (n, p, q):   j = (n·P + p)·Q + q\n"
                     f"    n = j / (P·Q),  p = (j / Q) mod P,  q = j mod Q          j = {J} → ({TRACE_N}, {TRACE_P}, {TRACE_Q})"),
        (TAP_COLOUR, f"row kk → filter tap (c, r, s):   kk = (c·R + r)·S + s\n"
                     f"    c = kk / (R·S),  r = (kk / S) mod R,  s = kk mod S       kk = {KK} → ({TRACE_C}, {TRACE_R}, {TRACE_S})"),
        ("black", f"X_col(kk, j) = x[n][c][h][w]  with\n"
                  f"    h = p·stride − pad + r·dil = {IH},   w = q·stride − pad + s·dil = {IW}\n"
                  f"    and 0 when h ∉ [0, H) or w ∉ [0, W) (the padding)"),
        (ROW_COLOUR, "Y(k, j) = Σ_kk W(k, kk) · X_col(kk, j)  is stored at y[n][k][p][q]"),
    ]
    y = 0.5
    ax.annotate(f"the implicit GEMM of this convolution: M = K = {GEMM_M}, N = N·P·Q = {GEMM_N}, "
                f"K = C·R·S = {GEMM_K}", (-7.0, y), fontsize=9, fontweight="bold", va="top")
    y += 2.2
    for colour, text in maps:
        ax.annotate(text, (-7.0, y), fontsize=9.5, va="top", color=colour, family="monospace")
        y += 1.6 + 1.3 * text.count("\n")


def draw(path: Path) -> None:
    fig = plt.figure(figsize=(16, 13))
    grid = fig.add_gridspec(2, 3, height_ratios=[1, 2.1], width_ratios=[1.25, 1.1, 1.25])
    _input_panel(fig.add_subplot(grid[0, 0]))
    _filter_panel(fig.add_subplot(grid[0, 1]))
    _output_panel(fig.add_subplot(grid[0, 2]))
    _gemm_panel(fig.add_subplot(grid[1, :]))
    fig.suptitle(f"A convolution as a GEMM: N={N}, C={C}, H=W={H}, K={K}, R=S={R}, pad {PAD}, stride {STRIDE}: "
                 f"output pixel (n, p, q) = ({TRACE_N}, {TRACE_P}, {TRACE_Q}) is column j = {J}, "
                 f"filter tap (c, r, s) = ({TRACE_C}, {TRACE_R}, {TRACE_S}) is row kk = {KK}", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


# docs/<file name>: drawing function
FIGURES = {"conv-as-gemm.png": draw}
