"""Chapter 12: the 128-byte shared-memory swizzle the TMA applies as it writes a tile whose rows are 32
FP32 (128 bytes), and the banks that a read of one 16-byte column of 8 rows touches without and with it.

The pattern is the PTX ISA's (NVIDIA, "Parallel Thread Execution ISA", section "Swizzling Modes",
anchor #tensor-swizzling-modes: section 5.5.7 in PTX ISA 9.1), 128-byte swizzle mode with 16-byte
atomicity: the 16 bytes of a chunk stay together, and in a tile whose start is 1024-byte aligned,
chunk c of row r lands at chunk position c XOR (r mod 8); the pattern repeats every 8 rows (1024
bytes). The tensor map asks for it with CU_TENSOR_MAP_SWIZZLE_128B, which needs the box's inner
dimension to be at most 128 bytes (CUDA Driver API, cuTensorMapEncodeTiled): here exactly one row of
32 floats. A shared-memory bank is 4 bytes wide and there are 32 of them, so byte b sits in bank
(b / 4) mod 32 and a 128-byte row spans every bank once: chunk position p holds banks 4p..4p+3.

The read drawn is 8 rows x 16 bytes, one chunk column: the shape of the core matrices a wgmma reads
from shared memory (PTX ISA, wgmma's "Shared Memory Matrix Layout": 8 rows of 16 bytes each), and of 8
lanes' 16-byte loads. Drawn from these rules alone: no measurement, no kernel constant.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

CHAPTER = "12_tma_wgmma"

FLOAT_BYTES = 4
ROW_FLOATS = 32                          # the tile's inner (K) extent per TMA box row: 32 FP32
ROW_BYTES = ROW_FLOATS * FLOAT_BYTES     # 128: the swizzle span
CHUNK_BYTES = 16                         # the swizzle moves 16-byte chunks (16-byte atomicity)
CHUNKS = ROW_BYTES // CHUNK_BYTES        # 8 chunks per row
PERIOD = 8                               # rows after which the pattern repeats (1024 bytes)
BANKS, BANK_BYTES = 32, 4
READ_CHUNK = 0                           # the chunk column the bank panels read (any of 0..7)
CHUNK_CMAP = plt.get_cmap("tab10")

assert ROW_BYTES == 128 and CHUNKS == 8, "the 128-byte swizzle: rows of 128 bytes, 8 chunks of 16"


def position(r: int, c: int) -> int:
    """The chunk position in shared memory of chunk c (bytes 16c..16c+15) of tile row r."""
    return c ^ (r % PERIOD)


def chunk_at(r: int, p: int) -> int:
    """The inverse: which chunk of row r sits at position p (XOR is its own inverse)."""
    return p ^ (r % PERIOD)


def banks_of(p: int) -> list[int]:
    """The banks of chunk position p within a 128-byte row (every row starts at bank 0)."""
    first = (p * CHUNK_BYTES // BANK_BYTES) % BANKS
    return list(range(first, first + CHUNK_BYTES // BANK_BYTES))


def bank_hits(c: int, rows: int = PERIOD, swizzled: bool = True) -> list[int]:
    """Per bank, how many of rows 0..rows-1 a read of chunk c (16 bytes per row) touches it in."""
    hits = [0] * BANKS
    for r in range(rows):
        for b in banks_of(position(r, c) if swizzled else c):
            hits[b] += 1
    return hits


def wavefronts(c: int, swizzled: bool) -> int:
    """Passes the 8-row read needs: the most distinct addresses that fall into one bank (every row is
    another address)."""
    return max(bank_hits(c, PERIOD, swizzled))


def _tile(ax, swizzled: bool, title: str) -> None:
    ax.set_xlim(0, CHUNKS)
    ax.set_ylim(PERIOD, 0)
    ax.set_aspect("equal")
    ax.set_xticks([p + 0.5 for p in range(CHUNKS)])
    ax.set_xticklabels([f"{p}\nbanks\n{banks_of(p)[0]}–{banks_of(p)[-1]}" for p in range(CHUNKS)], fontsize=6.5)
    ax.set_yticks([r + 0.5 for r in range(PERIOD)])
    ax.set_yticklabels([f"row {r}\n+{r * ROW_BYTES} B" for r in range(PERIOD)], fontsize=6.5)
    ax.tick_params(length=0)
    ax.set_xlabel("16-byte chunk position in the shared-memory row", fontsize=8)
    ax.set_title(title, fontsize=9)
    for r in range(PERIOD):
        for p in range(CHUNKS):
            c = chunk_at(r, p) if swizzled else p
            read = c == READ_CHUNK
            ax.add_patch(Rectangle((p, r), 1, 1, fc=CHUNK_CMAP(c), alpha=1.0 if read else 0.45, ec="white", lw=1.0))
            ax.annotate(f"c{c}\nk {4 * c}–{4 * c + 3}", (p + 0.5, r + 0.5), ha="center", va="center", fontsize=6.5,
                        color="white" if read else "black", fontweight="bold" if read else "normal")
            if read:
                ax.add_patch(Rectangle((p + 0.04, r + 0.04), 0.92, 0.92, fill=False, ec="black", lw=1.8))


def _banks(ax, swizzled: bool, title: str) -> None:
    hits = bank_hits(READ_CHUNK, PERIOD, swizzled)
    ax.bar(range(BANKS), hits, width=0.85,
           color=[CHUNK_CMAP(READ_CHUNK) if h else "#dddddd" for h in hits], edgecolor="black", lw=0.4)
    ax.set_xlim(-0.7, BANKS - 0.3)
    ax.set_ylim(0, PERIOD + 1.2)
    ax.set_xticks(range(0, BANKS, 4))
    ax.tick_params(labelsize=7)
    ax.set_xlabel("bank ((byte address / 4) mod 32)", fontsize=8)
    ax.set_ylabel("rows reading the bank", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    n = wavefronts(READ_CHUNK, swizzled)
    ax.set_title(f"{title}\n{sum(1 for h in hits if h)} banks touched, {max(hits)} row(s) per bank: "
                 f"{n} pass{'es' if n > 1 else ''} ({n}-way conflict)" if n > 1 else
                 f"{title}\nall {BANKS} banks touched once: 1 pass, no conflict", fontsize=9)


def swizzle(path: Path) -> None:
    fig = plt.figure(figsize=(15, 10.5))
    gs = fig.add_gridspec(2, 2, height_ratios=[1.55, 1], hspace=0.42, wspace=0.22)
    _tile(fig.add_subplot(gs[0, 0]), False,
          "without swizzle (CU_TENSOR_MAP_SWIZZLE_NONE): row r of the tile in shared memory\n"
          "as in global memory: chunk c (floats k = 4c..4c+3) at position c")
    _tile(fig.add_subplot(gs[0, 1]), True,
          "CU_TENSOR_MAP_SWIZZLE_128B as the TMA writes the tile:\n"
          "chunk c of row r at position c XOR (r mod 8)")
    _banks(fig.add_subplot(gs[1, 0]), False,
           f"reading chunk c{READ_CHUNK} (k = {4 * READ_CHUNK}–{4 * READ_CHUNK + 3}) of rows 0–7 without swizzle:")
    _banks(fig.add_subplot(gs[1, 1]), True,
           f"reading chunk c{READ_CHUNK} (k = {4 * READ_CHUNK}–{4 * READ_CHUNK + 3}) of rows 0–7 with the swizzle:")
    fig.suptitle(f"Chapter 12: the 128-byte swizzle. The TMA writes rows of {ROW_FLOATS} FP32 ({ROW_BYTES} bytes, "
                 f"{CHUNKS} chunks of {CHUNK_BYTES}) from a 1024-byte-aligned address;\nevery row starts at bank 0, so "
                 f"the same chunk of 8 rows (one 8 × 16-byte core matrix of wgmma, outlined) shares 4 banks unless the "
                 f"chunks are permuted per row", fontsize=11, y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"swizzle.png": swizzle}
