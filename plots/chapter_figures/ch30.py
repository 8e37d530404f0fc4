"""Chapter 30: the SpMM with a warp per stream of rows and a warp per piece of a long row, in one kernel.
How one warp walks the entries of its 16 consecutive rows as pairs (a real warp of the default graph, one
of whose rows is long and goes to the list), how the grid's blocks divide into the two kinds of warp, how
the longest row is cut into 512-entry pieces and summed in a fixed order, and how long the slowest unit of
work is, against chapter 29.

Nothing here is measured: the graph is the default one, computed by chapter 29's module from the
generator's definition; the tunables are those of chapters/30_spmm_warp_per_row/kernel.cuh.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

from .ch29 import row_lengths, warp_iterations  # noqa: E402

CHAPTER = "30_spmm_warp_per_row"

# chapters/30_spmm_warp_per_row/kernel.cuh
CHUNK = 32
PAIRS = CHUNK // 2
ROWS_PER_WARP = 16
LONG_ROW = 64
PIECE_CHUNKS = 16
SEGMENT = CHUNK * PIECE_CHUNKS  # 512
LONG_WARPS_PER_SM = 16
RESIDENT_WARPS = 32
SMS = 132  # H100

ROW_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4",
               "#b2df8a", "#fb9a99", "#cab2d6", "#fdbf6f", "#8dd3c7", "#bebada", "#80b1d3", "#fccde5"]
LONG_COLOUR = "#bbbbbb"
LONG_WARP_COLOUR = "#3182bd"
SHORT_WARP_COLOUR = "#fdae6b"


def warp_streams(lengths: np.ndarray) -> np.ndarray:
    """Entries each short-row warp walks: its 16 rows' lengths, rows over LONG_ROW left out."""
    short = np.where(lengths <= LONG_ROW, lengths, 0)
    padded = np.zeros(-(-len(lengths) // ROWS_PER_WARP) * ROWS_PER_WARP, dtype=np.int64)
    padded[:len(lengths)] = short
    return padded.reshape(-1, ROWS_PER_WARP).sum(axis=1)


def pair_steps(entries: np.ndarray) -> np.ndarray:
    """Pairs a warp walks for streams or pieces of `entries` entries: ceil(count / 2) per chunk of 32."""
    return entries // CHUNK * PAIRS + -(-(entries % CHUNK) // 2)


def piece_sizes(lengths: np.ndarray) -> np.ndarray:
    """The entries of every piece of every long row."""
    long_rows = lengths[lengths > LONG_ROW]
    return np.concatenate([np.minimum(SEGMENT, n - np.arange(0, n, SEGMENT)) for n in long_rows])


def example_warp(lengths: np.ndarray) -> int:
    """The first short-row warp of the default graph with one long row (under 300 entries), three or more
    rows of several entries and a stream of 40 to 60 entries: two chunks, small enough to draw."""
    for w in range(len(lengths) // ROWS_PER_WARP):
        rows = lengths[w * ROWS_PER_WARP:(w + 1) * ROWS_PER_WARP]
        short = rows[rows <= LONG_ROW]
        if (rows > LONG_ROW).sum() == 1 and rows.max() < 300 and (short > 2).sum() >= 3 and 40 <= short.sum() <= 60:
            return w
    raise RuntimeError("no warp of the default graph fits the picture")


def _stream(ax, lengths: np.ndarray) -> None:
    w = example_warp(lengths)
    rows = lengths[w * ROWS_PER_WARP:(w + 1) * ROWS_PER_WARP]
    row0 = w * ROWS_PER_WARP
    long_shown = 5  # cells drawn for the long row, then a break
    ax.set_title(f"(1) a short-row warp: warp {w} of the default graph takes rows {row0}..{row0 + ROWS_PER_WARP - 1} "
                 f"(row i below is row {row0} + i), of lengths {', '.join(str(n) for n in rows)}.\nTop: their entries "
                 "as stored in CSR. Bottom: the stream of its short rows, 32 entries per chunk (lane l loads entry l), "
                 "walked as 16 pairs: the lower half-warp takes the even entry of each pair, "
                 "the upper half the odd one",
                 fontsize=9)
    # Top: the entries in A_hat's order.
    x, y_top = 0.0, 0.0
    for i, n in enumerate(rows):
        if n > LONG_ROW:
            for c in range(long_shown):
                ax.add_patch(Rectangle((x + c, y_top), 1, 1, fc=LONG_COLOUR, ec="white", lw=0.6))
            ax.text(x + long_shown + 0.3, y_top + 0.5, f"… {n} entries: longer than LONG_ROW = {LONG_ROW},\n"
                    "a piece of the list (plan kernel)", fontsize=7, va="center")
            ax.text(x + long_shown / 2, y_top - 0.35, f"row {i}", fontsize=6.5, ha="center")
            x += long_shown + 12.5
            continue
        for c in range(n):
            ax.add_patch(Rectangle((x + c, y_top), 1, 1, fc=ROW_COLOURS[i], ec="white", lw=0.6))
        ax.text(x + n / 2, y_top - 0.35, f"{i}", fontsize=6.5, ha="center")
        x += n + 0.4
    # Bottom: the stream in chunks of 16 pairs; row 0 of a chunk = even entries (lower half), row 1 = odd.
    y_s = 3.3
    stream_rows = [i for i, n in enumerate(rows) if n <= LONG_ROW for _ in range(n)]
    total = len(stream_rows)
    chunks = -(-total // CHUNK)
    gap = 6.0
    for c in range(chunks):
        x0 = c * (PAIRS + gap)
        ax.text(x0 - 0.3, y_s + 0.5, "lanes 0-15", fontsize=6.5, ha="right", va="center", color="#555555")
        ax.text(x0 - 0.3, y_s + 1.5, "lanes 16-31", fontsize=6.5, ha="right", va="center", color="#555555")
        last = min(total, (c + 1) * CHUNK) - 1
        ax.text(x0 + PAIRS / 2, y_s + 2.55, f"chunk {c}: entries {c * CHUNK}..{last}, "
                f"{-(-(last - c * CHUNK + 1) // 2)} pairs", fontsize=7.5, ha="center")
        for p in range(PAIRS):
            for h in range(2):
                ax.add_patch(Rectangle((x0 + p, y_s + h), 1, 1, fill=False, ec="#dddddd", lw=0.4))
    for pos, i in enumerate(stream_rows):
        c, e = divmod(pos, CHUNK)
        p, h = divmod(e, 2)
        xx, yy = c * (PAIRS + gap) + p, y_s + h
        ax.add_patch(Rectangle((xx, yy), 1, 1, fc=ROW_COLOURS[i], ec="white", lw=0.6))
        if pos + 1 == total or stream_rows[pos + 1] != i:  # the entry that ends row i
            ax.plot([xx + 0.5], [yy + 0.5], marker="v", ms=4.5, color="black")
    ax.plot([0.1], [y_s + 3.6], marker="v", ms=4.5, color="black")
    ax.text(0.6, y_s + 3.6, "the entry ends a row (a bit of the chunk's ballot, the same in every lane): one shuffle "
            "adds the two halves' sums,\nboth halves hold the row, the warp stores it (store_row), both start the next "
            "row from 0", fontsize=7.5, va="center")
    ax.text(0, y_s + 5.0, "per chunk: the 16 pairs' rows of Z are gathered first (IN_FLIGHT = 16: 32 loads of "
            "128 bytes in flight per warp), then 16 FMA steps; the next chunk's indices and values load meanwhile",
            fontsize=7.5, va="center")
    ax.set_xlim(-5, max(x, chunks * (PAIRS + gap)) + 1)
    ax.set_ylim(y_s + 5.7, -1.2)
    ax.set_aspect("equal")
    ax.axis("off")


def _box(ax, x0, y0, w, h, text, fc, fontsize=8, ec="#555555"):
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.02,rounding_size=0.15", fc=fc, ec=ec, lw=1.0))
    ax.text(x0 + w / 2, y0 + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, lw=1.0, color="#444444",
                                 shrinkA=0, shrinkB=0))


def _grid(ax, lengths: np.ndarray) -> None:
    long_warps = LONG_WARPS_PER_SM * SMS
    short_warps = len(warp_streams(lengths))
    total = long_warps + short_warps
    ax.set_title(f"(2) one kernel, one warp per block: {total:,} blocks\nthe long-row warps first, then the "
                 "short-row warps", fontsize=9)
    ax.set_xlim(0, 10)
    ax.set_ylim(10.6, -0.2)
    ax.axis("off")
    # The grid in block order, to scale.
    frac = long_warps / total
    ax.add_patch(Rectangle((0.3, 0.5), 9.4 * frac, 0.8, fc=LONG_WARP_COLOUR, ec="white"))
    ax.add_patch(Rectangle((0.3 + 9.4 * frac, 0.5), 9.4 * (1 - frac), 0.8, fc=SHORT_WARP_COLOUR, ec="white"))
    ax.text(0.3, 1.65, f"blocks 0..{long_warps - 1}: long-row warps\n({LONG_WARPS_PER_SM} per SM, persistent)",
            fontsize=7, va="top")
    ax.text(9.7, 1.65, f"blocks {long_warps:,}..{total - 1:,}:\nshort-row warps, 16 rows each", fontsize=7, va="top",
            ha="right")
    # One SM's warp slots at the start.
    ax.text(0.3, 3.3, f"one SM, its {RESIDENT_WARPS} warp slots (64 registers per thread, at most 32 blocks):",
            fontsize=7.5)
    for s in range(RESIDENT_WARPS):
        r, c = divmod(s, 16)
        colour = LONG_WARP_COLOUR if s < LONG_WARPS_PER_SM else SHORT_WARP_COLOUR
        ax.add_patch(Rectangle((0.3 + c * 0.58, 3.6 + r * 0.62), 0.52, 0.55, fc=colour, ec="white"))
    ax.text(0.3, 5.2, "at the start: 16 long-row warps, which stay, take pieces;\n16 slots run short-row warps, each "
            "block leaving when\nits warp is done, the next block taking its place", fontsize=7.5, va="top")
    ax.text(0.3, 7.0, "when the list is done, the long-row warps leave too, and\nshort-row warps take all 32 slots",
            fontsize=7.5, va="top")
    ax.text(0.3, 8.4, "both kinds in flight at once: the gathers of one cover\nthe waits of the other; no second "
            "kernel, no gap between", fontsize=7.5, va="top", color="#444444")


def _pieces(ax, lengths: np.ndarray) -> None:
    hub = int(np.argmax(lengths))
    n = int(lengths[hub])
    pieces = -(-n // SEGMENT)
    ax.set_title(f"(3) the longest row (row {hub}, {n:,} entries) in {pieces} pieces of {SEGMENT};\neach piece is one "
                 "long-row warp's, every sum in a fixed order", fontsize=9)
    ax.set_xlim(0, 10)
    ax.set_ylim(10.6, -0.2)
    ax.axis("off")
    w = 9.4 / pieces
    for p in range(pieces):
        size = min(SEGMENT, n - p * SEGMENT)
        ax.add_patch(Rectangle((0.3 + p * w, 0.5), w * size / SEGMENT, 0.8, fc="#9ecae1" if p != 2 else "#3182bd",
                               ec="white", lw=0.8))
    ax.text(0.3, 1.65, f"pieces 0..{pieces - 1} (the last holds {n - (pieces - 1) * SEGMENT}); piece 2 below.\n"
            "A warp takes piece w, then the next by an atomic ticket:\nwhich warp takes which changes from run to run",
            fontsize=7, va="top")
    _box(ax, 0.3, 3.3, 9.4, 1.9, "", "#f4f4f4")
    ax.text(0.5, 3.45, f"one warp on piece 2: {PIECE_CHUNKS} chunks of 32 entries, each walked as\n16 pairs (lower "
            "half: even entries, upper half: odd ones);\nno row ends: each half keeps one sum", fontsize=7, va="top")
    for h in range(2):
        for p in range(PAIRS):
            ax.add_patch(Rectangle((0.5 + p * 0.56, 4.55 + h * 0.3), 0.5, 0.25,
                                   fc=plt.get_cmap("viridis")(0.2 + 0.6 * h), ec="white", lw=0.3))
    _arrow(ax, (5, 5.3), (5, 5.8))
    _box(ax, 0.3, 5.85, 9.4, 0.75, "end of the piece: sum = lower + upper (one shuffle)", "#fff5d6", fontsize=7.5)
    _arrow(ax, (5, 6.65), (5, 7.15))
    _box(ax, 0.3, 7.2, 4.5, 1.4, "a row of 1 piece\n(65..512 entries):\nthe warp stores it", "#e5f5e0", fontsize=7)
    _box(ax, 5.1, 7.2, 4.6, 1.4, "a row of several: the sum to\nthe workspace, then a release\natomicAdd on the row's "
         "counter;\nthe last warp adds all in piece order", "#fde0dd", fontsize=6.8)
    ax.text(5, 9.4, "integer atomics only: where and who change,\nthe order of every addition does not",
            ha="center", fontsize=7.5, va="center", color="#444444")


def _serial_work(ax, lengths: np.ndarray) -> None:
    ch29 = warp_iterations(lengths)
    streams = warp_streams(lengths)
    pieces = piece_sizes(lengths)
    short_steps = pair_steps(streams[streams > 0])
    piece_steps = pair_steps(pieces)
    bins = np.unique(np.round(np.logspace(0, np.log10(ch29.max() + 1), 40)).astype(int))
    ax.hist(ch29, bins=bins, histtype="step", lw=1.6, color="#636363",
            label=f"chapter 29: a warp ({len(ch29):,}), its longest row;\nmax {ch29.max():,} iterations")
    ax.hist(short_steps, bins=bins, histtype="step", lw=1.6, color="#e6550d",
            label=f"27, short-row warp ({len(short_steps):,}): pairs walked;\nmax {short_steps.max()}")
    ax.hist(piece_steps, bins=bins, histtype="step", lw=1.6, color=LONG_WARP_COLOUR,
            label=f"27, a piece ({len(pieces):,}): pairs walked; max {piece_steps.max()}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dependent steps of one warp (log scale)", fontsize=8.5)
    ax.set_ylabel("units of work (log scale)", fontsize=8.5)
    ax.set_ylim(0.7, len(streams) * 60)
    ax.legend(fontsize=7, loc="upper right", frameon=False)
    long_rows = lengths[lengths > LONG_ROW]
    slowest = max(short_steps.max(), piece_steps.max())
    ax.set_title(f"(4) the slowest unit of work: {ch29.max():,} steps in chapter 29,\n{slowest} "
                 f"here. Short rows: {(lengths <= LONG_ROW).sum():,} rows, {lengths[lengths <= LONG_ROW].sum():,} "
                 f"entries;\nlong rows: {len(long_rows):,} rows, {long_rows.sum():,} entries, {len(pieces):,} pieces",
                 fontsize=9)
    ax.tick_params(labelsize=7.5)


def stream_and_pieces(path: Path) -> None:
    lengths = row_lengths()
    fig = plt.figure(figsize=(18, 9.6))
    gs = fig.add_gridspec(2, 3, height_ratios=[0.62, 1.0], width_ratios=[1, 1, 1.15], hspace=0.16, wspace=0.12)
    _stream(fig.add_subplot(gs[0, :]), lengths)
    _grid(fig.add_subplot(gs[1, 0]), lengths)
    _pieces(fig.add_subplot(gs[1, 1]), lengths)
    _serial_work(fig.add_subplot(gs[1, 2]), lengths)
    fig.suptitle("Chapter 30: rows of up to 64 entries as streams of 16 rows per warp, walked as pairs by the two "
                 "half-warps; longer rows in 512-entry pieces; both kinds in one kernel (default graph; computed, "
                 "nothing measured)", fontsize=11, y=0.985)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"stream-and-pieces.png": stream_and_pieces}
