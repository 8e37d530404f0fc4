"""Chapter 24: the TMA's im2col mode, worked on seed_3x3 (the README's example). One picture,
im2col-copy.png:

1. the output pixels of a tile, in order (they run across the end of a row and into the next image),
   and the input pixel each reads for one filter offset (r, s): where that lies in the padding, the
   TMA writes zeros and reads nothing;
2. the tile in shared memory: one row of 32 channels (128 bytes, eight 16-byte chunks) per output
   pixel, the chunks in the 128-byte swizzle;
3. the K steps of one tile: every filter offset times every span of 32 channels.

All of it follows from the layer's shape and the kernel's tile (kernel.cuh: 256 pixels per tile, 32
channels per K step); nothing here is measured.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

CHAPTER = "24_tma_im2col_wgmma"

# seed_3x3, NHWC: N = 128 images of 56 x 56, C = 64, 3 x 3 filter, pad 1, stride 1, dilation 1.
H = W = 56
C = 64
R = S = 3
PAD, STRIDE, DIL = 1, 1, 1
P = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1
Q = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1
CHANNELS = 32          # channelsPerPixel: one 128-byte swizzle row
CHUNK_FLOATS = 4       # a 16-byte chunk
# The README's example copy: the tile whose first output pixel is (n, 55, 50), filter offset (1, 2),
# channels 32..63.
FIRST = (0, 55, 50)     # (image, p, q), image 0 standing for "n"
OFFSET = (1, 2)         # (r, s)
SPAN = 1                # channels 32 * SPAN ..
ROWS_SHOWN = 10


def output_pixel(i: int, first=FIRST) -> tuple[int, int, int]:
    """The i-th output pixel of a tile that starts at `first`, walking q, then p, then the image."""
    n, p, q = first
    flat = (n * P + p) * Q + q + i
    return flat // (P * Q), flat // Q % P, flat % Q


def tap(pixel, offset=OFFSET) -> tuple[int, int, int]:
    """The input position (image, h, w) the output pixel's window puts at filter offset (r, s), inside
    the image or in the padding."""
    n, p, q = pixel
    r, s = offset
    return n, p * STRIDE - PAD + r * DIL, q * STRIDE - PAD + s * DIL


def source(pixel, offset=OFFSET) -> tuple[int, int, int] | None:
    """The input pixel the output pixel reads at filter offset (r, s), or None when it lies in the
    padding (the TMA writes zeros there)."""
    n, h, w = tap(pixel, offset)
    return (n, h, w) if 0 <= h < H and 0 <= w < W else None


def swizzled(row: int, chunk: int) -> int:
    """Where 16-byte chunk `chunk` of a 128-byte row lands: chunk XOR (row % 8)."""
    return chunk ^ (row % 8)


def k_steps() -> list[tuple[int, int, int]]:
    """A tile's K steps in the producer's order: (r, s, channel span)."""
    return [(r, s, cb) for r in range(R) for s in range(S) for cb in range((C + CHANNELS - 1) // CHANNELS)]


PIXEL_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf"]


def _walk(ax):
    """The input near the end of image n and the start of image n + 1, with what each output pixel reads."""
    ax.set_xlim(-3.5, 22)
    ax.set_ylim(6.4, -2.6)
    ax.set_aspect("equal")
    ax.axis("off")
    # image n: rows 54..56 (56 is the padding), columns 48..56
    cols_n = list(range(48, 57))
    rows_n = [54, 55, 56]
    reads = {i: source(output_pixel(i)) for i in range(ROWS_SHOWN)}
    def draw_block(x0, y0, n, rows, cols, label):
        for a, h in enumerate(rows):
            for b, w in enumerate(cols):
                inside = 0 <= h < H and 0 <= w < W
                ax.add_patch(Rectangle((x0 + b, y0 + a), 1, 1, fc="#f0f0f0" if inside else "#ffffff",
                                       ec="#999999", lw=0.4, hatch=None if inside else "///"))
        for b, w in enumerate(cols):
            ax.text(x0 + b + 0.5, y0 - 0.2, str(w), ha="center", va="bottom", fontsize=6.5)
        for a, h in enumerate(rows):
            ax.text(x0 - 0.2, y0 + a + 0.5, f"h {h}", ha="right", va="center", fontsize=6.5)
        ax.text(x0 + len(cols) / 2, y0 - 1.0, label, ha="center", va="bottom", fontsize=8)
        for i, src in reads.items():
            pix = output_pixel(i)
            if pix[0] != n:
                continue
            _, h, w = tap(pix)
            if h in rows and w in cols:
                x, y = x0 + cols.index(w), y0 + rows.index(h)
                ax.add_patch(Rectangle((x + 0.12, y + 0.12), 0.76, 0.76, fc=PIXEL_COLOURS[i] if src else "none",
                                       ec=PIXEL_COLOURS[i], lw=1.5))
                ax.text(x + 0.5, y + 0.5, str(i), ha="center", va="center", fontsize=7,
                        color="white" if src else PIXEL_COLOURS[i])
    draw_block(0, 0, 0, rows_n, cols_n, "image n, its last rows (w 56 and h 56: the padding, hatched)")
    cols_m = list(range(-1, 8))
    rows_m = [-1, 0, 1]
    draw_block(11.5, 0, 1, rows_m, cols_m, "image n + 1, its first rows (w −1, h −1: the padding)")
    lines = []
    for i in range(ROWS_SHOWN):
        pix, src = output_pixel(i), reads[i]
        where = f"x[{'n' if src and src[0] == 0 else 'n+1'}][{src[1]}][{src[2]}]" if src else "zeros (padding)"
        lines.append(f"row {i}: output ({'n' if pix[0] == 0 else 'n+1'}, {pix[1]}, {pix[2]}) reads {where}")
    ax.text(0, 4.3, "\n".join(lines[:5]), fontsize=7.5, va="top", family="monospace")
    ax.text(11.5, 4.3, "\n".join(lines[5:]), fontsize=7.5, va="top", family="monospace")
    r, s = OFFSET
    ax.set_title(f"(1) one im2col copy of seed_3x3 (pad {PAD}): the tile's output pixels from (n, {FIRST[1]}, "
                 f"{FIRST[2]}) on, filter offset (r, s) = ({r}, {s});\noutput (p, q) reads input (p − {PAD} + {r}, "
                 f"q − {PAD} + {s}); the numbers are the tile's rows", fontsize=10)


def _tile(ax):
    """The tile in shared memory: a row per output pixel, 8 chunks of 4 channels, swizzled."""
    chunks = CHANNELS // CHUNK_FLOATS
    ax.set_xlim(-4.5, chunks + 7.5)
    ax.set_ylim(ROWS_SHOWN + 1.2, -1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    for row in range(ROWS_SHOWN):
        src = source(output_pixel(row))
        for c in range(chunks):
            pos = swizzled(row, c)
            fc = PIXEL_COLOURS[row] if src else "#ffffff"
            ax.add_patch(Rectangle((pos, row), 1, 1, fc=fc, ec="#555555", lw=0.5, alpha=0.35 + 0.65 * (c == 0)
                                   if src else 1.0, hatch=None if src else "///"))
            ax.text(pos + 0.5, row + 0.5, f"c{32 * SPAN + 4 * c}", ha="center", va="center", fontsize=5.5)
        ax.text(-0.3, row + 0.5, f"row {row}", ha="right", va="center", fontsize=7)
        ax.text(chunks + 0.3, row + 0.5, "zeros" if src is None else f"x[..][{src[1]}][{src[2]}]", ha="left",
                va="center", fontsize=7)
    for c in range(chunks):
        ax.text(c + 0.5, -0.2, f"{16 * c}", ha="center", va="bottom", fontsize=6.5)
    ax.text(chunks / 2, -1.0, "byte offset in the 128-byte row", ha="center", va="bottom", fontsize=7.5)
    ax.text(chunks / 2, ROWS_SHOWN + 0.9, "… 256 rows, 32 KB. Chunk j of row i sits at position j XOR (i mod 8)\n"
            "(the strong colour: channels 32-35, chunk 0); wgmma's descriptor names the swizzle", ha="center",
            va="top", fontsize=7.5)
    ax.set_title("(2) what the TMA writes: one row per output pixel,\nits 32 channels (128 bytes) in the 128-byte "
                 "swizzle", fontsize=10)


def _steps(ax):
    steps = k_steps()
    ax.set_xlim(-0.5, len(steps) + 0.5)
    ax.set_ylim(3.2, -1.0)
    ax.axis("off")
    for k, (r, s, cb) in enumerate(steps):
        here = (r, s) == OFFSET and cb == SPAN
        ax.add_patch(Rectangle((k, 0), 0.92, 1.6, fc="#fdd0a2" if here else "#deebf7", ec="#555555", lw=0.6))
        ax.text(k + 0.46, 0.8, f"({r},{s})\nc{32 * cb}-{32 * cb + 31}", ha="center", va="center", fontsize=6.5)
    ax.add_patch(FancyArrowPatch((0, 2.2), (len(steps) - 0.1, 2.2), arrowstyle="-|>", mutation_scale=10, lw=0.8))
    ax.text(len(steps) / 2, 2.5, f"{len(steps)} K steps per tile: {R} × {S} filter offsets × {C // CHANNELS} spans of "
            f"{CHANNELS} channels; each one im2col copy (32 KB) and one filter copy (16 KB); orange: panel 1's",
            ha="center", va="top", fontsize=8)
    ax.set_title("(3) the producer's walk over a tile's K steps (r, s, channel span)", fontsize=10)


def im2col_copy(path: Path) -> None:
    fig = plt.figure(figsize=(16, 8.5))
    gs = fig.add_gridspec(2, 2, height_ratios=[1.0, 0.32], width_ratios=[1.55, 1.0], hspace=0.08, wspace=0.05)
    _walk(fig.add_subplot(gs[0, 0]))
    _tile(fig.add_subplot(gs[0, 1]))
    _steps(fig.add_subplot(gs[1, :]))
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"im2col-copy.png": im2col_copy}
