"""Chapter 22: Winograd convolution. Two pictures:

- winograd-tile.png: how F(4x4,3x3) cuts the input into overlapping 6 x 6 patches, one per 4 x 4
  output tile, and one tile's way through the transforms, with numbers: d and g, V = B^T d B,
  U = G g G^T, their element-wise product M, and Y = A^T M A, which equals the direct 3 x 3
  convolution of the patch (checked here in exact rational arithmetic, and by the tests).
- block-roles.png: how a block of the kernel shares the (m+2)^2 point GEMMs among its consumer warps
  (whole points per warp, the left-over points split by filters), and the two roles over a few chunks:
  the producer warps copying and transforming chunk i while the consumers multiply chunk i - 1.

The transform matrices are the kernel's (its comments list them); the block's shape is read from
kernel.cuh. Every number is arithmetic, not a measurement.
"""
from __future__ import annotations

from fractions import Fraction as Fr
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import kernel_constants  # noqa: E402

CHAPTER = "22_winograd"
KERNEL = Path(__file__).resolve().parents[2] / "chapters" / CHAPTER / "kernel.cuh"


def constants(text: str | None = None) -> dict:
    """The block's shape as kernel.cuh declares it: name -> value."""
    return kernel_constants(KERNEL, ("NUM_WARPS", "CONSUMER_WARPS_F4", "BC", "BT", "PRODUCER_WARPS", "LANES_K", "LANES_T"),
                            text)


K = constants()

# ---------------------------------------------------------------------------------------------
# The transforms, F(2,3) and F(4,3), as exact fractions (kernel.cuh's comments, row by row).

BT_2 = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
G_2 = [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]]
AT_2 = [[1, 1, 1, 0], [0, 1, -1, -1]]
BT_4 = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0], [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]
G_4 = [[Fr(1, 4), 0, 0], [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
       [Fr(1, 24), Fr(1, 12), Fr(1, 6)], [Fr(1, 24), Fr(-1, 12), Fr(1, 6)], [0, 0, 1]]
AT_4 = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]
MATRICES = {2: (BT_2, G_2, AT_2), 4: (BT_4, G_4, AT_4)}


def _mul(a, b):
    return [[sum((Fr(a[i][t]) * Fr(b[t][j]) for t in range(len(b))), Fr(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def _t(a):
    return [list(r) for r in zip(*a)]


def winograd_tile(d, g, m: int = 4):
    """One tile and one channel of F(m x m, 3 x 3) in exact arithmetic: (V, U, M, Y) with V = B^T d B,
    U = G g G^T, M = U (.) V and Y = A^T M A (m x m)."""
    bt, gm, at = MATRICES[m]
    v = _mul(_mul(bt, d), _t(bt))
    u = _mul(_mul(gm, g), _t(gm))
    mm = [[u[i][j] * v[i][j] for j in range(m + 2)] for i in range(m + 2)]
    y = _mul(_mul(at, mm), _t(at))
    return v, u, mm, y


def direct(d, g, m: int = 4):
    """The m x m outputs of the 3 x 3 correlation of the (m+2) x (m+2) patch d with g (no flip, as cuDNN's
    cross-correlation and the kernel compute it)."""
    return [[sum(Fr(d[p + r][q + s]) * Fr(g[r][s]) for r in range(3) for s in range(3)) for q in range(m)]
            for p in range(m)]


# The example the picture shows: small integers, so that every value can be checked by hand.
D_EX = [[(3 * i + 2 * j + i * j) % 5 - 1 for j in range(6)] for i in range(6)]
G_EX = [[1, 0, -1], [2, 1, 0], [0, -1, 1]]


def _fmt(x: Fr) -> str:
    if x.denominator == 1:
        return str(x.numerator)
    return f"{x.numerator}/{x.denominator}"


def _matrix(ax, x0, y0, values, title, colour, fontsize=7.0, cell=1.0):
    rows, cols = len(values), len(values[0])
    for i in range(rows):
        for j in range(cols):
            ax.add_patch(Rectangle((x0 + j * cell, y0 + i * cell), cell, cell, fc=colour, ec="#777777", lw=0.4))
            ax.text(x0 + (j + 0.5) * cell, y0 + (i + 0.5) * cell, _fmt(Fr(values[i][j])), ha="center",
                    va="center", fontsize=fontsize)
    ax.text(x0 + cols * cell / 2, y0 - 0.45, title, ha="center", va="bottom", fontsize=8.5)


def _arrow(ax, x0, y0, x1, y1, text=""):
    ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle="-|>", mutation_scale=10, lw=1.0, color="#333333"))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 - 0.3, text, ha="center", va="bottom", fontsize=7.5)


def _patches(ax):
    """Two neighbouring F(4x4) tiles: their 6 x 6 patches overlap by two columns."""
    cols, rows = 10, 6
    ax.set_xlim(-0.5, cols + 7.5)
    ax.set_ylim(rows + 1.5, -2.2)
    ax.set_aspect("equal")
    ax.axis("off")
    for i in range(rows):
        for j in range(cols):
            a, b = j < 6, j >= 4
            colour = "#9ecae1" if a and not b else "#fdae6b" if b and not a else "#c7a4d6"
            ax.add_patch(Rectangle((j, i), 1, 1, fc=colour, ec="#777777", lw=0.4))
    ax.add_patch(Rectangle((0, 0), 6, 6, fill=False, ec="#08519c", lw=2.0))
    ax.add_patch(Rectangle((4, 0), 6, 6, fill=False, ec="#a63603", lw=2.0, ls="--"))
    ax.text(5, -1.2, "input rows 0-5, columns 0-9 (after the padding)\nblue: tile (0,0)'s patch, orange: tile (0,1)'s,"
            " purple: read by both", ha="center", fontsize=8)
    # the two output tiles
    for t, (x0, colour) in enumerate([(11.5, "#9ecae1"), (14.5, "#fdae6b")]):
        for i in range(4):
            for j in range(4):
                ax.add_patch(Rectangle((x0 + j * 0.7, 1 + i * 0.7), 0.7, 0.7, fc=colour, ec="#777777", lw=0.4))
        ax.text(x0 + 1.4, 0.7, f"outputs,\ncolumns {4 * t}-{4 * t + 3}", ha="center", va="bottom", fontsize=7.5)
    ax.text(14.3, 4.8, "each patch: 4 x 4 outputs\n(rows 0-3); the patches\nof tiles (1,0), (1,1) start\nat row 4",
            ha="center", va="top", fontsize=7.5)
    ax.set_title("(1) F(4×4, 3×3) tiles: a 6 × 6 patch per 4 × 4 output tile,\nneighbouring patches share two "
                 "columns (and two rows)", fontsize=10)


def _chain(ax):
    """One tile, one channel: d, g -> V, U -> M -> Y = the direct convolution."""
    v, u, mm, y = winograd_tile(D_EX, G_EX)
    assert y == direct(D_EX, G_EX), "the F(4,3) matrices must reproduce the direct convolution"
    ax.set_xlim(-0.5, 45.5)
    ax.set_ylim(18.0, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    _matrix(ax, 0, 0, D_EX, "d: the patch (6 × 6)", "#deebf7")
    _matrix(ax, 1.5, 9, G_EX, "g: the filter (3 × 3)", "#fee6ce")
    _arrow(ax, 6.3, 3, 8.7, 3, "Bᵀ d B")
    _matrix(ax, 9, 0, v, "V (36 points)", "#c6dbef", fontsize=6.5)
    _arrow(ax, 4.8, 10.5, 8.7, 10.5, "G g Gᵀ")
    _matrix(ax, 9, 7.5, u, "U (36 points, once per filter)", "#fdd0a2", fontsize=5.6, cell=1.25)
    _arrow(ax, 17.0, 6.5, 19.2, 6.5, "⊙: 36 products\n(Σ over channels)")
    _matrix(ax, 19.5, 2.5, mm, "M = U ⊙ V", "#dadaeb", fontsize=5.6, cell=1.25)
    _arrow(ax, 27.3, 6.5, 29.7, 6.5, "Aᵀ M A")
    _matrix(ax, 30, 4.5, y, "Y (4 × 4 outputs)", "#c7e9c0", fontsize=7.5)
    _matrix(ax, 38, 4.5, direct(D_EX, G_EX), "direct 3 × 3: the same", "#e5f5e0", fontsize=7.5)
    ax.text(22.5, 17.6, "36 multiplications per channel for 16 outputs, where the direct method does 16 × 9 = 144: "
            "a quarter.\nWith many channels, the products of one point ξ over channels, filters and tiles are "
            "a GEMM: 36 GEMMs.", ha="center", fontsize=8.5)
    ax.set_title("(2) one tile and one channel, with numbers (exact: the fractions come from G's 1/4, 1/6, 1/12 and "
                 "1/24)", fontsize=10)


def winograd_tile_figure(path: Path) -> None:
    fig = plt.figure(figsize=(16, 10.5))
    gs = fig.add_gridspec(2, 1, height_ratios=[0.8, 1.25], hspace=0.12)
    _patches(fig.add_subplot(gs[0]))
    _chain(fig.add_subplot(gs[1]))
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# The block: points per warp, and the two roles over chunks.

WARP_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                "#bcbd22", "#17becf", "#393b79", "#843c39"]


def consumer_warps(m: int) -> int:
    return K["CONSUMER_WARPS_F4"] if m == 4 else K["NUM_WARPS"]


def point_owners(m: int) -> list[list[int]]:
    """For each point ξ of F(m x m) (row-major over the (m+2) x (m+2) grid), the consumer warps that own
    it: warp w owns points FULL*w .. FULL*w + FULL - 1 whole; the REM left over are split by filters,
    warps / REM warps to a point (the kernel's Tile<M>: CONSUMER_WARPS_F4 warps for F(4x4), NUM_WARPS for
    F(2x2))."""
    nxi, warps = (m + 2) ** 2, consumer_warps(m)
    full, rem = nxi // warps, nxi % warps
    owners = [[xi // full] for xi in range(full * warps)]
    split = warps // rem if rem else 1
    owners += [[w for w in range(warps) if w // split == r] for r in range(rem)]
    return owners


def _points(ax, m: int, x0: float):
    a = m + 2
    owners = point_owners(m)
    for xi, ws in enumerate(owners):
        i, j = divmod(xi, a)
        if len(ws) == 1:
            ax.add_patch(Rectangle((x0 + j, i), 1, 1, fc=WARP_COLOURS[ws[0]], ec="white", lw=1.0, alpha=0.85))
            ax.text(x0 + j + 0.5, i + 0.5, f"w{ws[0]}", ha="center", va="center", fontsize=7, color="white")
        else:
            for t, w in enumerate(ws):
                ax.add_patch(Rectangle((x0 + j + t / len(ws), i), 1 / len(ws), 1, fc=WARP_COLOURS[w], ec="white",
                                       lw=1.0, alpha=0.85))
            ax.text(x0 + j + 0.5, i + 0.5, "+".join(f"w{w}" for w in ws), ha="center", va="center", fontsize=5.5,
                    color="white")
    bk = 32 if m == 4 else 64
    full = a * a // consumer_warps(m)
    per_lane = f"{full} points × 8 × 4 per lane" if m == 4 else f"{full} points × 16 × 4 per lane"
    ax.text(x0 + a / 2, a + 0.4, f"F({m}×{m}): {a * a} points, {bk} filters × {K['BT']} tiles each;\n"
            f"{consumer_warps(m)} consumer warps, {per_lane}", ha="center", va="top", fontsize=8)


def _owners_panel(ax):
    ax.set_xlim(-0.5, 15.5)
    ax.set_ylim(7.9, -0.4)
    ax.set_aspect("equal")
    ax.axis("off")
    _points(ax, 4, 0)
    _points(ax, 2, 10)
    ax.set_title(f"(1) which consumer warp computes which point's GEMM\n(a chunk of {K['BC']} channels at a time; "
                 "a warp that owns a whole point reads each of its U and V values once)", fontsize=10)


def _roles_panel(ax):
    chunks = 4
    ax.set_xlim(-2.6, chunks + 1.2)
    ax.set_ylim(3.3, -0.9)
    ax.axis("off")
    lanes = {f"producers\n({K['PRODUCER_WARPS']} warps)": 0.3,
             f"consumers\n({K['CONSUMER_WARPS_F4']} or\n{K['NUM_WARPS']} warps)": 1.9}
    for name, y in lanes.items():
        ax.text(-0.15, y + 0.5, name, ha="right", va="center", fontsize=9)
    for i in range(chunks):
        # Producer, chunk i: its transformed filter U copied in (into the buffer the consumers freed when
        # they finished chunk i - 2), then its patches transformed (chunk i + 1's patch copies issued first).
        ax.add_patch(Rectangle((i, 0.3), 0.28, 1, fc="#fee6ce", ec="#a63603", lw=0.8, ls="--"))
        ax.text(i + 0.14, 0.8, f"U of\n{i}\ncopied", ha="center", va="center", fontsize=6.3)
        ax.add_patch(Rectangle((i + 0.3, 0.3), 0.65, 1, fc="#fdd0a2", ec="#a63603", lw=0.8))
        ax.text(i + 0.625, 0.8, f"transform chunk {i}\n(the copies of\nchunk {i + 1}'s patches\nissued first)",
                ha="center", va="center", fontsize=6.3)
        # Consumers: chunk i's GEMMs, once both halves of chunk i are in (FULL) and chunk i - 1 is done.
        ax.add_patch(Rectangle((i + 1, 1.9), 0.97, 1, fc="#c6dbef", ec="#08519c", lw=0.8))
        ax.text(i + 1.485, 2.4, f"GEMMs of chunk {i}\n(all points × {K['BC']} channels)", ha="center",
                va="center", fontsize=6.5)
        ax.add_patch(FancyArrowPatch((i + 0.95, 1.3), (i + 1.02, 1.9), arrowstyle="-|>", mutation_scale=8, lw=0.9,
                                     color="#08519c"))
        if i + 2 < chunks:  # chunk i's buffers free: chunk i + 2's U may come in
            ax.add_patch(FancyArrowPatch((i + 1.97, 1.9), (i + 2.03, 1.3), arrowstyle="-|>", mutation_scale=8,
                                         lw=0.9, color="#a63603"))
    ax.text(chunks / 2 + 0.5, -0.55, "blue: the producers' bar.arrive FULL (chunk i's V written, its U landed) ends the "
            "consumers' bar.sync;  orange: the consumers' bar.arrive EMPTY (chunk i's buffers free) ends the producers'",
            ha="center", fontsize=7.5)
    ax.text(chunks / 2 + 0.5, 3.15, "two buffers of V and of U alternate; the raw patches are each producer thread's own "
            "(no barrier)", ha="center", fontsize=7.5)
    ax.set_title("(2) the two roles over chunks: the producers run one chunk ahead of the consumers", fontsize=10)


def block_roles_figure(path: Path) -> None:
    fig = plt.figure(figsize=(15, 9))
    gs = fig.add_gridspec(2, 1, height_ratios=[1.1, 0.9], hspace=0.08)
    _owners_panel(fig.add_subplot(gs[0]))
    _roles_panel(fig.add_subplot(gs[1]))
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"winograd-tile.png": winograd_tile_figure, "block-roles.png": block_roles_figure}
