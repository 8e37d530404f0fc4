"""Chapter 13's picture: the direct convolution's thread mapping at the headline layer.

Thread idx computes y at offset idx, so a warp is 32 consecutive outputs of one (n, k) plane: a
stretch of one row p, or the end of one row and the start of the next. At one filter tap all its
lanes read the same filter value (a broadcast) and neighbouring input pixels of one or two rows.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cell_grid, cells, lane_color  # noqa: E402

CHAPTER = "13_direct_conv"

# The headline layer seed_3x3 (one (n, k) plane and one input channel are drawn).
H = W = 56
R = S = 3
PAD, STRIDE, DIL = 1, 1, 1
P = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1  # 56
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1  # 56
C_DRAWN = 3  # channels of the filter drawn in panel (2)

ROWS_DRAWN = 4  # rows p of the output plane drawn: 4 * 56 = 224 outputs = 7 warps
WARP_SHOWN = 1  # the warp traced in panels (2) and (3): q = 32..55 of row 0 and q = 0..7 of row 1
TAP_R, TAP_S, TAP_C = 1, 2, 0  # the filter tap (c, r, s) of panels (2) and (3)
LANE_WINDOW = 5  # the lane whose whole 3x3 window is outlined in panel (3)

PAD_COLOUR = "#d9d9d9"
BOX = dict(fc="white", ec="none", alpha=0.9, pad=1.5)


def _lane_output(lane: int) -> tuple[int, int]:
    """(p, q) of lane `lane` of WARP_SHOWN: thread idx = warp * 32 + lane computes plane offset p*Q + q."""
    offset = WARP_SHOWN * WARP + lane
    return divmod(offset, Q)


def _in_pixel(p: int, q: int, r: int, s: int) -> tuple[int, int]:
    return p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL


def _plane(ax) -> None:
    """Panel (1): the first rows of one (n, k) plane of y, coloured by warp."""
    cell_grid(ax, ROWS_DRAWN, Q,
              f"(1) y[n][k][·][·], rows p = 0…{ROWS_DRAWN - 1} of {P}: thread idx computes the element at offset idx, "
              f"so warp w is outputs 32w … 32w+31 of the plane.\nA plane of {P}×{Q} = {P * Q} = {P * Q // WARP}×32 "
              "outputs holds whole warps; 3 warps in 7 straddle two rows. Every store is 32 consecutive floats.",
              fontsize=10)
    warp_colours = plt.get_cmap("Pastel1")
    for offset in range(ROWS_DRAWN * Q):
        p, q = divmod(offset, Q)
        warp, lane = divmod(offset, WARP)
        colour = lane_color(lane) if warp == WARP_SHOWN else warp_colours(warp % 9)
        ax.add_patch(Rectangle((q, p), 1, 1, color=colour))
    for warp in range(ROWS_DRAWN * Q // WARP):
        pieces = {}  # row p -> the q of the warp's outputs in that row (one or two rows)
        for offset in range(warp * WARP, (warp + 1) * WARP):
            pieces.setdefault(offset // Q, []).append(offset % Q)
        p, qs = max(pieces.items(), key=lambda item: len(item[1]))  # label the longer piece, at its middle
        q = (qs[0] + qs[-1]) / 2
        ax.annotate(f"warp {warp}", (q + 0.5, p + 0.5), ha="center", va="center", fontsize=8,
                    color="white" if warp == WARP_SHOWN else "black", fontweight="bold")
    ax.set_xlabel("q →", fontsize=9)
    ax.set_ylabel("p", fontsize=9)


def _filter(ax) -> None:
    """Panel (2): the filter w[k]: at tap (c, r, s), all 32 lanes read the same address."""
    gap = 1
    ax.set_xlim(-0.5, C_DRAWN * (S + gap) + 1)
    ax.set_ylim(R + 3.2, -1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(2) w[k]: the same filter for the whole warp;\nat tap (c, r, s) = ({TAP_C}, {TAP_R}, {TAP_S}) "
                 "all 32 lanes read\nw[k][c][r][s]: one address, a broadcast", fontsize=10)
    for c in range(C_DRAWN):
        x0 = c * (S + gap)
        cells(ax, x0, 0, R, S, lw=0.6, ec="#888888")
        ax.annotate(f"c = {c}", (x0 + S / 2, -0.3), ha="center", fontsize=9)
        if c == TAP_C:
            ax.add_patch(Rectangle((x0 + TAP_S, TAP_R), 1, 1, color="#d62728"))
    ax.annotate("…", (C_DRAWN * (S + gap) - 0.3, R / 2), fontsize=14, va="center")
    ax.annotate("loop order: c, then r, then s\n(s fastest: w is read in memory order)", (0, R + 1.0),
                fontsize=9, va="top")


def _input(ax) -> None:
    """Panel (3): the input plane x[n][c] with its padding ring; where the lanes of WARP_SHOWN read at one tap."""
    rows = range(-PAD, ROWS_DRAWN)  # input rows drawn
    cols = range(-PAD, W + PAD)
    x0, y0 = PAD, PAD  # input pixel (ih, iw) is drawn at (x0 + iw, y0 + ih)
    ax.set_xlim(-0.5, len(cols) + 0.5)
    ax.set_ylim(len(rows) + 3.0, -0.2)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"(3) x[n][c = {TAP_C}][·][·], rows −1…{ROWS_DRAWN - 1} (grey: the padding, never stored): at tap "
                 f"(r, s) = ({TAP_R}, {TAP_S}), lane i of warp {WARP_SHOWN} reads pixel "
                 f"(p·{STRIDE} − {PAD} + r, q·{STRIDE} − {PAD} + s) of its output (p, q):\n"
                 "two runs of neighbouring floats (one per output row the warp covers); a lane whose pixel is in the "
                 "padding skips the tap", fontsize=10)
    for ih in rows:
        for iw in cols:
            if not (0 <= ih < H and 0 <= iw < W):
                ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, color=PAD_COLOUR))
    cells(ax, 0, 0, len(rows), len(cols), lw=0.2)
    ax.add_patch(Rectangle((x0, y0), W, ROWS_DRAWN, fill=False, ec="black", lw=1.0))
    skipped = []
    for lane in range(WARP):
        p, q = _lane_output(lane)
        ih, iw = _in_pixel(p, q, TAP_R, TAP_S)
        if 0 <= ih < H and 0 <= iw < W:
            ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, color=lane_color(lane)))
        else:
            skipped.append(lane)
            ax.add_patch(Rectangle((x0 + iw, y0 + ih), 1, 1, fill=False, ec=lane_color(lane), lw=2.0, hatch="xx"))
    p, q = _lane_output(LANE_WINDOW)
    ih0, iw0 = _in_pixel(p, q, 0, 0)
    ax.add_patch(Rectangle((x0 + iw0, y0 + ih0), S * DIL, R * DIL, fill=False, ec="#d62728", lw=1.8))
    ax.annotate(f"red frame: the {R}×{S} window of lane {LANE_WINDOW}, output (p, q) = ({p}, {q}); its top row "
                "lies in the padding, so the loop over s is skipped for r = 0", (x0 + 2, len(rows) + 1.0), fontsize=9,
                color="#b01010", va="top")
    if skipped:
        sp, sq = _lane_output(skipped[0])
        ax.annotate(f"hatched: lane {skipped[0]} (output q = {sq}) meets the padding: no load, no FMA",
                    (x0 + 2, len(rows) + 2.1), fontsize=9, va="top")
    ax.set_xlabel("iw →", fontsize=9)


def ch13_direct_conv_mapping(path: Path) -> None:
    """Chapter 13: one thread per output; a warp is 32 consecutive q of one (n, k) plane."""
    fig = plt.figure(figsize=(18, 6.4))
    gs = fig.add_gridspec(2, 2, height_ratios=[0.5, 1.0], width_ratios=[1.0, 4.2], hspace=0.05, wspace=0.06)
    _plane(fig.add_subplot(gs[0, :]))
    _filter(fig.add_subplot(gs[1, 0]))
    _input(fig.add_subplot(gs[1, 1]))
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"direct-conv-mapping.png": ch13_direct_conv_mapping}
