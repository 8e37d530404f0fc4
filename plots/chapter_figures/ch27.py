"""Chapter 27: the SpMM with a half-warp per row and a block per piece of a long row. How one group of 16
lanes walks the entries of its 8 consecutive rows as one stream (a real group of the default graph, one
of whose rows is long and goes to the list), how the longest row is cut into 512-entry pieces and summed
in a fixed order, and how long the slowest unit of work is, against chapter 26.

Nothing here is measured: the graph is the default one, computed by chapter 26's module from the
generator's definition; the tunables are those of chapters/27_spmm_warp_per_row/kernel.cuh.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

from .ch26 import WARP, row_lengths, warp_iterations  # noqa: E402

CHAPTER = "27_spmm_warp_per_row"

# chapters/27_spmm_warp_per_row/kernel.cuh
GROUP = 16
CHUNK = GROUP
ROWS_PER_GROUP = 8
LONG_ROW = 64
SHORT_THREADS = 128
LONG_GROUPS = 16
CHUNKS_PER_GROUP = 2
SEGMENT = LONG_GROUPS * CHUNK * CHUNKS_PER_GROUP  # 512

ROW_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#1f78b4"]
LONG_COLOUR = "#bbbbbb"


def group_streams(lengths: np.ndarray) -> np.ndarray:
    """Entries each group of the short-row kernel walks: its 8 rows' lengths, rows over LONG_ROW left out."""
    short = np.where(lengths <= LONG_ROW, lengths, 0)
    padded = np.zeros(-(-len(lengths) // ROWS_PER_GROUP) * ROWS_PER_GROUP, dtype=np.int64)
    padded[:len(lengths)] = short
    return padded.reshape(-1, ROWS_PER_GROUP).sum(axis=1)


def example_group(lengths: np.ndarray) -> int:
    """The first group of the default graph with one long row, two or more rows of several entries and a
    stream of 20 to 40 entries: small enough to draw entry by entry."""
    for g in range(len(lengths) // ROWS_PER_GROUP):
        rows = lengths[g * ROWS_PER_GROUP:(g + 1) * ROWS_PER_GROUP]
        short = rows[rows <= LONG_ROW]
        if (rows > LONG_ROW).sum() == 1 and (short > 2).sum() >= 2 and 20 <= short.sum() <= 40:
            return g
    raise RuntimeError("no group of the default graph fits the picture")


def _stream(ax, lengths: np.ndarray) -> None:
    g = example_group(lengths)
    rows = lengths[g * ROWS_PER_GROUP:(g + 1) * ROWS_PER_GROUP]
    row0 = g * ROWS_PER_GROUP
    long_shown = 6  # cells drawn for the long row, then a break
    ax.set_title(f"(1) the short-row kernel: group {g} of the default graph takes rows {row0}..{row0 + 7} (row i below "
                 f"is row {row0} + i),\nof lengths {', '.join(str(n) for n in rows)}. Top: their entries as stored in "
                 "CSR. Bottom: the\n"
                 f"stream of the short rows, 16 entries per chunk, lane l loading entry l (one coalesced load)",
                 fontsize=9)
    # Top: the entries in A_hat's order.
    x, y_top = 0.0, 0.0
    for i, n in enumerate(rows):
        if n > LONG_ROW:
            for c in range(long_shown):
                ax.add_patch(Rectangle((x + c, y_top), 1, 1, fc=LONG_COLOUR, ec="white", lw=0.6))
            ax.text(x + long_shown + 0.3, y_top + 0.5, f"… {n} entries: longer than LONG_ROW = {LONG_ROW},\n"
                    "listed for the long-row kernel (1 atomic)", fontsize=7.5, va="center")
            ax.text(x + long_shown / 2, y_top - 0.35, f"row {i}", fontsize=7, ha="center")
            x += long_shown + 13.5
            continue
        for c in range(n):
            ax.add_patch(Rectangle((x + c, y_top), 1, 1, fc=ROW_COLOURS[i], ec="white", lw=0.6))
        ax.text(x + n / 2, y_top - 0.35, f"row {i}", fontsize=7, ha="center")
        x += n + 0.4
    # Bottom: the stream, in chunks of 16, with the stores at each row's last entry.
    y_s = 3.2
    stream_rows = [i for i, n in enumerate(rows) if n <= LONG_ROW for _ in range(n)]
    total = len(stream_rows)
    for pos, i in enumerate(stream_rows):
        chunk, lane = divmod(pos, CHUNK)
        xx = chunk * (CHUNK + 1.5) + lane
        ax.add_patch(Rectangle((xx, y_s), 1, 1, fc=ROW_COLOURS[i], ec="white", lw=0.6))
        ax.text(xx + 0.5, y_s + 1.45, str(lane), fontsize=5.5, ha="center", color="#555555")
        last = pos + 1 == total or stream_rows[pos + 1] != i
        if last:
            ax.annotate("", xy=(xx + 0.5, y_s + 2.9), xytext=(xx + 0.5, y_s + 1.9),
                        arrowprops=dict(arrowstyle="->", color=ROW_COLOURS[i], lw=1.2))
    chunks = -(-total // CHUNK)
    for c in range(chunks):
        last = min(total, (c + 1) * CHUNK) - 1
        ax.text(c * (CHUNK + 1.5) + CHUNK / 2, y_s - 0.45, f"chunk {c}: entries {c * CHUNK}..{last}", fontsize=7.5,
                ha="center")
    ax.text(0, y_s + 3.5, "↓ store: the entry that ends a row (end_of ≥ 0) stores the 16 lanes' sums, the next "
            "row starts from 0", fontsize=7.5)
    ax.text(0, y_s + 4.6, "per entry: all 16 lanes read it from shared memory (a broadcast) and gather its row of Z, "
            "lane c loading feature c:\none 128-byte load; 8 such gathers are issued before the first FMA, and the "
            "next chunk's indices and values\nare loaded while this chunk is gathered", fontsize=7.5, va="top")
    ax.set_xlim(-0.5, max(x, chunks * (CHUNK + 1.5)) + 1)
    ax.set_ylim(y_s + 6.0, -1.3)
    ax.set_aspect("equal")
    ax.axis("off")


def _box(ax, x0, y0, w, h, text, fc, fontsize=8, ec="#555555"):
    ax.add_patch(FancyBboxPatch((x0, y0), w, h, boxstyle="round,pad=0.02,rounding_size=0.15", fc=fc, ec=ec, lw=1.0))
    ax.text(x0 + w / 2, y0 + h / 2, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax, a, b):
    ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, lw=1.0, color="#444444",
                                 shrinkA=0, shrinkB=0))


def _pieces(ax, lengths: np.ndarray) -> None:
    hub = int(np.argmax(lengths))
    n = int(lengths[hub])
    pieces = -(-n // SEGMENT)
    ax.set_title(f"(2) the long-row kernel: the longest row (row {hub}, {n:,} entries) in {pieces} pieces of "
                 f"{SEGMENT};\neach piece is one block of {LONG_GROUPS} groups, every sum in a fixed order",
                 fontsize=9)
    ax.set_xlim(0, 20)
    ax.set_ylim(11.3, -0.3)
    ax.axis("off")
    # The row, cut into pieces.
    w = 19.0 / pieces
    for p in range(pieces):
        size = min(SEGMENT, n - p * SEGMENT)
        ax.add_patch(Rectangle((0.5 + p * w, 0.3), w * size / SEGMENT, 0.8, fc="#9ecae1" if p != 2 else "#3182bd",
                               ec="white", lw=0.8))
    ax.text(0.5, 1.45, f"pieces 0..{pieces - 1} (the last holds {n - (pieces - 1) * SEGMENT}); piece 2 drawn "
            "below; each is listed by the short-row kernel, in an order that changes from run to run",
            fontsize=7.5, va="top")
    # One block: 16 groups, group g taking chunks g and g + 16.
    _box(ax, 0.5, 2.6, 19, 3.6, "", "#f4f4f4")
    ax.text(0.7, 2.75, f"one block (256 threads) on piece 2: group g gathers chunks g and g + {LONG_GROUPS} "
            f"(16 entries each) into its 16 lanes", fontsize=7.5, va="top")
    gw = 18.6 / LONG_GROUPS
    for g in range(LONG_GROUPS):
        for c in range(CHUNKS_PER_GROUP):
            ax.add_patch(Rectangle((0.7 + g * gw, 3.5 + c * 0.9), gw - 0.12, 0.75,
                                   fc=plt.get_cmap("viridis")(g / (LONG_GROUPS - 1)), ec="white", lw=0.5))
        ax.text(0.7 + g * gw + gw / 2, 5.55, f"g{g}", fontsize=6.5, ha="center")
    ax.text(0.7, 5.95, f"entries of chunk k of the piece: 16 k .. 16 k + 15;  group g's partial sum: 16 doubles",
            fontsize=7, va="center", color="#555555")
    _arrow(ax, (10, 6.25), (10, 6.85))
    _box(ax, 1.0, 6.9, 18, 0.9, "shared memory: s_sums[16 groups][16 lanes]; group 0 adds them in group order "
         "g0 + g1 + … + g15", "#fff5d6", fontsize=7.5)
    _arrow(ax, (10, 7.85), (10, 8.45))
    _box(ax, 0.5, 8.5, 9.0, 1.2, "a row of 1 piece (rows of 65..512 entries):\nthe block stores it (store_row)",
         "#e5f5e0", fontsize=7.5)
    _box(ax, 10.3, 8.5, 9.2, 1.2, f"a row of several pieces: the piece's sum goes to the\nworkspace, then "
         "atomicAdd(done[row]); the last of its\nblocks adds the pieces' sums in piece order", "#fde0dd",
         fontsize=7.5)
    ax.text(10, 10.4, "integer atomics only: which block is last changes, the order of every addition does not,\n"
            "so the output has the same bits on every run", ha="center", fontsize=7.5, va="center",
            color="#444444")


def _serial_work(ax, lengths: np.ndarray) -> None:
    ch26 = warp_iterations(lengths)
    streams = group_streams(lengths)
    long_rows = lengths[lengths > LONG_ROW]
    piece_entries = np.concatenate([np.minimum(SEGMENT, n - np.arange(0, n, SEGMENT)) for n in long_rows])
    # Entries the busiest group of a piece gathers: group 0 takes chunks 0, 16, 32, ... of 16 entries each.
    per_group = sum(np.clip(piece_entries - c * CHUNK, 0, CHUNK) for c in range(0, SEGMENT // CHUNK, LONG_GROUPS))
    bins = np.unique(np.round(np.logspace(0, np.log10(ch26.max() + 1), 40)).astype(int))
    ax.hist(ch26, bins=bins, histtype="step", lw=1.6, color="#d6604d",
            label=f"chapter 26: a warp ({len(ch26):,}); its longest row, max {ch26.max():,}")
    ax.hist(streams[streams > 0], bins=bins, histtype="step", lw=1.6, color="#2166ac",
            label=f"27, short rows: a group's stream ({(streams > 0).sum():,}), max {streams.max()}")
    ax.hist(per_group, bins=bins, histtype="step", lw=1.6, color="#1a9850",
            label=f"27, long rows: a group's share of a piece ({len(piece_entries):,} pieces), max {per_group.max()}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("entries gathered one after another by one unit of work (log scale)", fontsize=8.5)
    ax.set_ylabel("units of work (log scale)", fontsize=8.5)
    ax.set_ylim(0.7, len(streams) * 40)
    ax.legend(fontsize=7.5, loc="upper right", frameon=False)
    short_rows = (lengths <= LONG_ROW).sum()
    ax.set_title(f"(3) the slowest unit of work: {ch26.max():,} entries in chapter 26, {streams.max()} here.\n"
                 f"short-row kernel: {short_rows:,} rows, {lengths[lengths <= LONG_ROW].sum():,} entries; "
                 f"long-row kernel:\n{len(long_rows):,} rows, {long_rows.sum():,} entries, {len(piece_entries):,} "
                 f"pieces of at most {SEGMENT}", fontsize=9)
    ax.tick_params(labelsize=7.5)


def stream_and_pieces(path: Path) -> None:
    lengths = row_lengths()
    fig = plt.figure(figsize=(17, 9.8))
    gs = fig.add_gridspec(2, 2, height_ratios=[0.8, 1.05], width_ratios=[1.35, 1], hspace=0.2, wspace=0.12)
    _stream(fig.add_subplot(gs[0, :]), lengths)
    _pieces(fig.add_subplot(gs[1, 0]), lengths)
    _serial_work(fig.add_subplot(gs[1, 1]), lengths)
    fig.suptitle("Chapter 27: rows of up to 64 entries as streams of 8 rows per half-warp, longer rows in "
                 "512-entry pieces per block (default graph; computed, nothing measured)", fontsize=11, y=0.98)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"stream-and-pieces.png": stream_and_pieces}
