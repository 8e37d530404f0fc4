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

The other figures draw the kernel's machinery from its constants (read from kernel.cuh: the largest tile
shape of SHAPE_BLOCK_M, BLOCK_N, BLOCK_K, STAGES, CLUSTER_N, CLUSTER_M, GROUP_M) and from the PTX ISA and
CUDA Driver API rules they follow: the mbarrier's phases and byte counts (PTX ISA, "mbarrier"), the tensor
maps (cuTensorMapEncodeTiled), wgmma's shared-memory matrix descriptor and the register fragments of
wgmma.mma_async.m64nNk8 (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"), the cluster's
multicast, the persistent tile order (the kernel's work_of) and a schematic timeline. None is a measurement.
"""
from __future__ import annotations

from pathlib import Path

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402

from chapter_figures import ch11  # noqa: E402  (wgmma's layouts within a warp are mma.m16n8k8's)
from chapter_figures._draw import kernel_constants  # noqa: E402
from chapter_figures.ch11 import a_coord, c_coord  # noqa: E402

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


# ---------------------------------------------------------------------------------------------
# The kernel's constants, read from kernel.cuh, and what the kernel derives from them.

KERNEL = Path(__file__).resolve().parents[2] / "chapters" / CHAPTER / "kernel.cuh"


def constants(text: str | None = None) -> dict:
    """The tunables of kernel.cuh: name -> value; BLOCK_M: the largest tile shape, the one drawn."""
    text = KERNEL.read_text() if text is None else text
    out = kernel_constants(KERNEL, ("BLOCK_N", "BLOCK_K", "STAGES", "CLUSTER_N", "CLUSTER_M", "GROUP_M"), text)
    m = re.search(r"constexpr int SHAPE_BLOCK_M\[\] = \{([0-9, ]+)\};", text)
    if m is None:
        raise ValueError(f"{KERNEL}: no constexpr int SHAPE_BLOCK_M[] = {{...}};")
    out["BLOCK_M"] = max(int(v) for v in m.group(1).split(","))
    return out


K = constants()
WGMMA_M, WGMMA_K, WARPGROUP = 64, 8, 128
CONSUMERS = K["BLOCK_N"] // WGMMA_M                                # 2
B_BOX_N = ROW_BYTES // FLOAT_BYTES                                  # 32 columns of B per box
A_BOX_M = K["BLOCK_M"] // K["CLUSTER_N"]                            # 128 rows of A per block's box
A_TILE_BYTES = K["BLOCK_M"] * K["BLOCK_K"] * FLOAT_BYTES            # 32 KB
A_BOX_BYTES = A_BOX_M * K["BLOCK_K"] * FLOAT_BYTES                  # 16 KB
B_BOX_BYTES = K["BLOCK_K"] * B_BOX_N * FLOAT_BYTES                  # 4 KB
B_BOXES = K["BLOCK_N"] // B_BOX_N                                   # 4
STAGE_BYTES = A_TILE_BYTES + B_BOXES * B_BOX_BYTES                  # 48 KB: what each full barrier expects
WRITERS = K["CLUSTER_N"] + K["CLUSTER_M"] - 1
EMPTY_ARRIVALS = CONSUMERS * 4 * WRITERS                            # one per consumer warp per writer block: 16
ATOM = PERIOD * ROW_BYTES                                           # 1024: the swizzle atom, the descriptor's SBO

COL = {"prod": "#d1495b", "tma": "#edae49", "c0": "#00798c", "c1": "#30638e", "wait": "#dddddd", "epi": "#8d6a9f", "A0": "#66a182", "A1": "#b5d99c", "B": "#edae49", "bar": "#444444"}


def _box(ax, x, y, w, h, fc, text="", fs=7.5, tc="black", **kw):
    ax.add_patch(Rectangle((x, y), w, h, fc=fc, ec=kw.pop("ec", "white"), lw=kw.pop("lw", 1.0), **kw))
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=tc)


def _arrow(ax, xy0, xy1, colour="black", text="", fs=7, rad=0.0, **kw):
    kw.setdefault("lw", 1.1)
    ax.add_patch(FancyArrowPatch(xy0, xy1, arrowstyle="-|>", mutation_scale=10, color=colour,
                                 connectionstyle=f"arc3,rad={rad}", **kw))
    if text:
        ax.text((xy0[0] + xy1[0]) / 2, (xy0[1] + xy1[1]) / 2, text, fontsize=fs, ha="center", va="center",
                color=colour, bbox=dict(fc="white", ec="none", pad=0.5))


def full_barrier_events() -> list[tuple[str, int, int]]:
    """One phase of full[s] in the block of cluster rank 0, in one possible order: (event, arrivals, bytes).
    The partner's multicast half may land before this block's producer has armed the barrier."""
    return [("init / previous phase done", 1, 0), ("rank 1's multicast A half lands", 1, -A_BOX_BYTES),
            ("producer: arrive.expect_tx", 0, STAGE_BYTES - A_BOX_BYTES), ("own A half lands", 0, B_BOXES * B_BOX_BYTES)] + \
           [(f"B box {j} lands", 0, (B_BOXES - 1 - j) * B_BOX_BYTES) for j in range(B_BOXES)]


def mbarrier(path: Path) -> None:
    fig = plt.figure(figsize=(17.5, 9.2))
    gs = fig.add_gridspec(2, 2, width_ratios=[1, 1.7], height_ratios=[1, 1], hspace=0.45, wspace=0.18)
    # (a) one phase of full[s]: pending arrivals and tx-count after each event
    ax = fig.add_subplot(gs[0, 0])
    ev = full_barrier_events()
    xs = range(len(ev))
    ax.step(xs, [b / 1024 for _, _, b in ev], where="post", color=COL["tma"], lw=2, label="tx-count (KB still expected)")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(list(xs), [e for e, _, _ in ev], rotation=28, ha="right", fontsize=7)
    ax.set_ylabel("tx-count (KB)", fontsize=8, color=COL["tma"])
    ax2 = ax.twinx()
    ax2.step(xs, [a for _, a, _ in ev], where="post", color=COL["prod"], lw=2, ls="--")
    ax2.set(ylim=(-0.6, 2.2), yticks=[0, 1])
    ax2.set_ylabel("pending arrivals (dashed)", fontsize=8, color=COL["prod"])
    ax.set_title(f"(a) one phase of full[s] (init count 1) in the block of rank 0: expect_tx adds {STAGE_BYTES} "
                 f"bytes,\neach landing box subtracts its size ({A_BOX_BYTES} per half of A, {B_BOX_BYTES} per box "
                 "of B);\nthe phase completes when both counts are 0, here at the last box", fontsize=8.5)
    # (b) empty[s]: who arrives
    ax = fig.add_subplot(gs[1, 0])
    ax.axis("off")
    ax.set(xlim=(0, 10), ylim=(0, 6))
    ax.set_title(f"(b) one phase of empty[s] (init count {EMPTY_ARRIVALS}): lane 0 of every consumer warp of "
                 f"both blocks arrives", fontsize=8.5)
    for b in range(K["CLUSTER_N"]):
        x0 = 0.3 + 5 * b
        _box(ax, x0, 0.4, 4.3, 5.0, "#f4f4f4", ec="#999999")
        ax.text(x0 + 2.15, 5.1, f"block of cluster rank {b}", ha="center", fontsize=8)
        _box(ax, x0 + 1.2, 0.7, 1.9, 0.8, COL["bar"], f"empty[s]\n{EMPTY_ARRIVALS} arrivals", fs=7, tc="white")
        for c in range(CONSUMERS):
            for w in range(4):
                x, y = x0 + 0.25 + w * 1.0, 3.9 - 1.4 * c
                _box(ax, x, y, 0.8, 0.6, COL[f"c{c}"], f"c{c} w{w}", fs=6.5, tc="white")
                _arrow(ax, (x + 0.4, y), (x0 + 2.15 + (w - 1.5) * 0.25, 1.5), colour=COL[f"c{c}"], lw=0.6)
                if c == 0 and w in (0, 3):  # the same arrivals on the partner's barrier, drawn for two warps
                    _arrow(ax, (x + 0.4, y + 0.6), (5.3 - 5 * b + 2.15 + 0.6 - 1.2 * b, 1.5), colour="#999999",
                           rad=0.35 * (2 * b - 1), ls=":")
    ax.text(5.0, 0.05, "dotted: the same arrivals on the partner's barrier (mapa, arrive.shared::cluster); all 8 warps "
            "send them", ha="center", fontsize=7, color="#666666")
    # (c) the cycle of phases and parities of one stage
    ax = fig.add_subplot(gs[:, 1])
    ax.axis("off")
    rounds = 4
    ax.set(xlim=(-4.4, rounds * 3.4 + 0.2), ylim=(-1.4, 8.6))
    rows = {"producer": 7.0, "full[s]": 5.0, "consumers": 3.0, "empty[s]": 1.0}
    for name, y in rows.items():
        ax.text(-4.3, y + 0.4, name + ("\n(K step it:\nround it / STAGES)" if name == "producer" else ""), fontsize=9,
                va="center", fontweight="bold")
    for r in range(rounds):
        x, w = r * 3.4, 2.75
        _box(ax, x, rows["producer"], w, 0.8, COL["prod"], f"round {r}: wait empty[s]\nwith parity {(r & 1) ^ 1}",
             fs=7, tc="white")
        _box(ax, x + 0.2, rows["full[s]"], w, 0.8, COL["tma"], f"phase {r} (parity {r & 1}):\narmed, TMA fills",
             fs=7)
        _box(ax, x + 0.4, rows["consumers"], w, 0.8, COL["c0"], f"round {r}: wait full[s]\nwith parity {r & 1}", fs=7,
             tc="white")
        _box(ax, x + 0.6, rows["empty[s]"], w, 0.8, COL["bar"], f"phase {r} (parity {r & 1}):\n"
             f"{EMPTY_ARRIVALS} releases", fs=7, tc="white")
        _arrow(ax, (x + 1.2, rows["producer"]), (x + 1.4, rows["full[s]"] + 0.8), COL["prod"])
        _arrow(ax, (x + 1.4, rows["full[s]"]), (x + 1.6, rows["consumers"] + 0.8), COL["tma"],
               "completes" if r == 0 else "")
        _arrow(ax, (x + 1.6, rows["consumers"]), (x + 1.8, rows["empty[s]"] + 0.8), COL["c0"])
        if r + 1 < rounds:
            _arrow(ax, (x + w + 0.4, rows["empty[s]"] + 0.8), (x + 3.4 + 0.3, rows["producer"]), "#444444",
                   "completes" if r == 0 else "")
    _box(ax, -3.2, rows["empty[s]"] - 1.3, 2.6, 0.8, "white", "phase −1, parity 1\n(counts as complete)", fs=7,
         ec="#444444", ls="--")
    _arrow(ax, (-1.9, rows["empty[s]"] - 0.5), (0.3, rows["producer"]), "#444444", "returns at once", rad=-0.15)
    ax.text(rounds * 1.7 - 2.0, -1.1,
            "try_wait.parity p succeeds once the current phase has the other parity: the last phase of parity p has "
            "completed.\nRound r of stage s (K step it, r = it / STAGES) is phase r of both barriers: consumers wait for "
            "phase r of full[s]\n(parity r & 1); the producer waits for phase r − 1 of empty[s] (parity (r & 1) ^ 1), "
            "the releases of the previous round.", fontsize=8, ha="center", va="center")
    ax.set_title(f"(c) stage s of the ring of {K['STAGES']}: each round is one phase of each barrier; two parities "
                 "suffice because no side can get two phases ahead", fontsize=9)
    fig.suptitle("Chapter 12: the mbarriers of one stage. full[s] counts 1 arrival and the stage's bytes; empty[s] "
                 f"counts {EMPTY_ARRIVALS} arrivals;\nwaiters name the phase they wait for by its parity", fontsize=11,
                 y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)

# The tensor-map figure's problem: small enough to draw, partial boxes at both edges (the sanitizer's problem).
EX_M, EX_N, EX_K = 300, 260, 100


def _matrix(ax, rows, cols, ld, box_r, box_c, boxes, title, xlabel, ylabel, dims_text, sx=1.0, sy=1.0):
    """A row-major rows x cols matrix (row pitch ld elements), its box grid, and `boxes` (c0, c1, colour, label)
    where the TMA reads them, the parts outside the matrix hatched (they arrive as zeros). Not to scale: x and y
    are stretched by sx and sy."""
    def rect(x, y, w, h, **kw):
        ax.add_patch(Rectangle((x * sx, y * sy), w * sx, h * sy, **kw))
    bottom = max(rows, max(c1 + box_r for _, c1, _, _ in boxes))
    ax.set(xlim=(-30, ld * sx + 40), ylim=(bottom * sy + 75, -40), aspect="equal")
    ax.axis("off")
    rect(0, 0, cols, rows, fc="#f2f2f2", ec="black", lw=1.2)
    if ld > cols:
        rect(cols, 0, ld - cols, rows, fc="white", ec="#999999", lw=0.8, hatch="...")
        ax.text((cols + ld) / 2 * sx, rows * sy / 2, "row padding\n(ld > K)", ha="center", va="center", fontsize=6.5,
                rotation=90)
    ax.vlines([x * sx for x in range(0, cols, box_c)], 0, rows * sy, color="#cccccc", lw=0.5)
    ax.hlines([y * sy for y in range(0, rows, box_r)], 0, cols * sx, color="#cccccc", lw=0.5)
    for c0, c1, colour, label in boxes:
        rect(c0, c1, box_c, box_r, fc=colour, ec="black", lw=1.0, alpha=0.85)
        ox, oy = min(cols, c0 + box_c), min(rows, c1 + box_r)
        if ox < c0 + box_c:
            rect(ox, c1, c0 + box_c - ox, box_r, fc="white", ec="black", lw=0.6, hatch="////")
        if oy < c1 + box_r:
            rect(c0, max(oy, c1), ox - c0, c1 + box_r - max(oy, c1), fc="white", ec="black", lw=0.6, hatch="////")
        ax.text((c0 + box_c / 2) * sx, (c1 + box_r / 2) * sy, label, ha="center", va="center", fontsize=7)
    ax.annotate("", xy=(cols * sx, -8), xytext=(0, -8), arrowprops=dict(arrowstyle="<->", lw=0.8))
    ax.text(cols * sx / 2, -12, xlabel, ha="center", va="bottom", fontsize=7.5)
    ax.annotate("", xy=(-8, rows * sy), xytext=(-8, 0), arrowprops=dict(arrowstyle="<->", lw=0.8))
    ax.text(-12, rows * sy / 2, ylabel, ha="right", va="center", fontsize=7.5, rotation=90)
    ax.text(0.02, 0.02, dims_text, ha="left", va="bottom", fontsize=7.5, family="monospace", transform=ax.transAxes,
            multialignment="left", bbox=dict(fc="white", ec="#999999", pad=3))
    ax.set_title(title, fontsize=8.5)


def tensormap(path: Path) -> None:
    fig = plt.figure(figsize=(16, 9.5))
    gs = fig.add_gridspec(2, 2, height_ratios=[1.5, 0.62], hspace=0.25, wspace=0.12)
    k0 = (EX_K - 1) // K["BLOCK_K"] * K["BLOCK_K"]  # the last K step: a partial box
    bm = K["BLOCK_M"]                                # the second tile row: partly outside A
    _matrix(fig.add_subplot(gs[0, 0]), EX_M, EX_K, 108, A_BOX_M, K["BLOCK_K"],
            [(k0, bm, COL["A0"], "rank 0"), (k0, bm + A_BOX_M, COL["A1"], "rank 1"),
             (0, 0, COL["A0"], "rank 0"), (0, A_BOX_M, COL["A1"], "rank 1")],
            f"(a) map_a over A ({EX_M} × {EX_K}, lda = 108): boxes of {A_BOX_M} rows × {K['BLOCK_K']} floats;\n"
            f"K step 0 of tile row 0, and the last K step (k0 = {k0}) of tile row 1; hatched: outside A, zeros",
            f"globalDim[0] = K = {EX_K} (c0)", f"globalDim[1] = M = {EX_M} (c1)",
            f"globalDim     = {{K, M}}\nglobalStrides = {{lda·4 B}}\nboxDim        = {{{K['BLOCK_K']}, {A_BOX_M}}}\n"
            f"elementStrides= {{1, 1}}\nbox at c0 = k0, c1 = block_m + cx·{A_BOX_M}\n"
            f"each box: {A_BOX_BYTES} B, zeros included", sx=2.4, sy=0.62)
    bn = K["BLOCK_N"]                                # the second tile column
    _matrix(fig.add_subplot(gs[0, 1]), EX_K, EX_N, EX_N, K["BLOCK_K"], B_BOX_N,
            [(bn + j * B_BOX_N, k0, COL["B"], f"box {j}") for j in range(B_BOXES)] +
            [(j * B_BOX_N, 0, COL["B"], f"box {j}") for j in range(B_BOXES)],
            f"(b) map_b over B ({EX_K} × {EX_N}, ldb = {EX_N}): boxes of {K['BLOCK_K']} rows × {B_BOX_N} floats;\n"
            f"K step 0 of tile column 0, and the last K step (k0 = {k0}) of tile column 1 (columns {bn}–{bn + K['BLOCK_N'] - 1})",
            f"globalDim[0] = N = {EX_N} (c0)", f"globalDim[1] = K = {EX_K} (c1)",
            f"globalDim     = {{N, K}}\nglobalStrides = {{ldb·4 B}}\nboxDim        = {{{B_BOX_N}, {K['BLOCK_K']}}}\n"
            f"elementStrides= {{1, 1}}\nbox j at c0 = block_n + {B_BOX_N}j, c1 = k0\n"
            f"each box: {B_BOX_BYTES} B, zeros included", sx=0.95, sy=2.0)
    # (c) one stage in shared memory
    ax = fig.add_subplot(gs[1, :])
    ax.axis("off")
    ax.set(xlim=(-1500, STAGE_BYTES + 1500), ylim=(-2.2, 2.4))
    parts = [(h * A_BOX_BYTES, A_BOX_BYTES, COL[f"A{h}"], f"A's tile rows {h * A_BOX_M}–{(h + 1) * A_BOX_M - 1}\n"
              f"(rank {h}'s box, to both blocks)") for h in range(K["CLUSTER_N"])]
    parts += [(A_TILE_BYTES + j * B_BOX_BYTES, B_BOX_BYTES, COL["B"], f"B box {j}\n{K['BLOCK_K']} × {B_BOX_N}")
              for j in range(B_BOXES)]
    for x, w, colour, label in parts + [(STAGE_BYTES, 0, "white", "")]:
        _box(ax, x, 0, w, 1.4, colour, label, fs=7.5, ec="black", lw=0.8)
        ax.text(x, -0.25, f"+{x}", ha="center", va="top", fontsize=7)
    ax.text(STAGE_BYTES / 2, -1.1, f"every row of every box is {ROW_BYTES} bytes (32 floats along the box's inner "
            f"dimension) and lands swizzled: 16-byte chunk c of row r at position c XOR (r mod 8) (swizzle.png); "
            f"each box starts on a multiple of {ATOM} bytes.\nStage s starts at base + s·{STAGE_BYTES} (base: the "
            f"dynamic shared memory rounded up to {ATOM} bytes); the {K['STAGES']} stages take {K['STAGES'] * STAGE_BYTES}"
            f" bytes, the {2 * K['STAGES']} mbarriers 8 bytes each after them.", ha="center", va="center", fontsize=8)
    ax.set_title(f"(c) one stage in shared memory, byte offsets from its start: {STAGE_BYTES} bytes, what each "
                 "block's full barrier expects", fontsize=9)
    fig.suptitle("Chapter 12: the two tensor maps and where the TMA writes. Coordinates name a box by its first element, "
                 "fastest dimension first (c0 = column, c1 = row);\nthe TMA reads the box row by row with the row pitch, "
                 "fills what lies outside the matrix with zeros and counts the whole box's bytes", fontsize=11, y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def descriptor_fields(addr: int) -> list[tuple[int, int, str, int]]:
    """The fields the kernel's smem_descriptor(addr) sets: (first bit, width, name, value); the rest is 0."""
    return [(0, 14, "start address >> 4", (addr & 0x3FFFF) >> 4), (16, 14, "leading byte offset >> 4", 1),
            (32, 14, "stride byte offset >> 4", ATOM >> 4), (49, 3, "base offset", 0), (62, 2, "swizzle mode", 1)]


def descriptor(path: Path) -> None:
    fig = plt.figure(figsize=(16, 11))
    gs = fig.add_gridspec(2, 1, height_ratios=[0.4, 1], hspace=0.2)
    ax = fig.add_subplot(gs[0])
    ax.axis("off")
    ax.set(xlim=(-1, 65), ylim=(-2.6, 2.2))
    addr = 0x400 + WGMMA_K * FLOAT_BYTES  # a stage at shared offset 0x400, K slice kk = 1: 32 bytes further
    for bit in range(64):
        ax.add_patch(Rectangle((63 - bit, 0), 1, 1, fc="#f4f4f4", ec="#bbbbbb", lw=0.4))
        if bit % 8 == 0 or bit in (13, 29, 45, 51, 63):
            ax.text(63 - bit + 0.5, 1.15, str(bit), ha="center", fontsize=6.5)
    colours = ["#00798c", "#d1495b", "#edae49", "#999999", "#66a182"]
    for (lo, width, name, value), colour in zip(descriptor_fields(addr), colours):
        ax.add_patch(Rectangle((64 - lo - width, 0), width, 1, fc=colour, ec="black", lw=0.8, alpha=0.85))
        ax.text(64 - lo - width / 2, 0.5, f"{value}", ha="center", va="center", fontsize=8, fontweight="bold")
        ax.text(64 - lo - width / 2, -0.35, f"bits {lo}–{lo + width - 1}\n{name}", ha="center", va="top", fontsize=7.5)
    ax.text(32, -2.3, f"smem_descriptor({addr:#x}) = {sum(v << lo for lo, _, _, v in descriptor_fields(addr)):#018x}: start {addr:#x} >> 4 = "
            f"{(addr & 0x3FFFF) >> 4}; the leading offset is not used by a K-major operand in the 128-byte swizzle "
            f"(1 by convention); stride {ATOM} B = 8 rows × {ROW_BYTES} B; swizzle mode 1 = 128 bytes",
            ha="center", fontsize=8)
    ax.set_title("(a) the 64-bit shared-memory matrix descriptor as the kernel builds it (bit 0 on the right), for a "
                 "stage at shared offset 0x400 and the second K slice (kk = 1)", fontsize=9)
    # (b) what the descriptor points at: the first 16 rows of A's tile, kk = 1
    ax = fig.add_subplot(gs[1])
    rows, kk = 16, 1
    ax.set(xlim=(-2.2, CHUNKS + 5), ylim=(rows + 0.6, -1.2))
    ax.axis("off")
    for r in range(rows):
        ax.text(-0.1, r + 0.5, f"row {r} (m of A)  +{r * ROW_BYTES} B", ha="right", va="center", fontsize=7)
        for p in range(CHUNKS):
            c = chunk_at(r, p)
            used = c // 2 == kk
            ax.add_patch(Rectangle((p, r), 1, 1, fc=CHUNK_CMAP(c) if used else "#eeeeee", ec="white", lw=1))
            ax.text(p + 0.5, r + 0.5, f"k {4 * c}–{4 * c + 3}", ha="center", va="center", fontsize=7,
                    color="white" if used else "#888888")
    for g in range(rows // PERIOD):
        ax.add_patch(Rectangle((0, g * PERIOD), CHUNKS, PERIOD, fill=False, ec="black", lw=1.6))
    ax.annotate("", xy=(CHUNKS + 0.4, PERIOD), xytext=(CHUNKS + 0.4, 0), arrowprops=dict(arrowstyle="<->", lw=1))
    ax.text(CHUNKS + 0.7, PERIOD / 2, f"stride byte offset:\n{ATOM} bytes from one\ngroup of 8 rows to the next\n"
            f"(field value {ATOM >> 4})", va="center", fontsize=8)
    ax.text(CHUNKS + 0.7, PERIOD * 1.5, f"… {K['BLOCK_M'] // PERIOD} groups of 8 rows make the\n{K['BLOCK_M']}-row "
            f"operand: wgmma's N = {K['BLOCK_M']}", va="center", fontsize=8)
    for x in range(0, CHUNKS + 1, 2):
        ax.text(x, -0.3, f"+{x * CHUNK_BYTES}", ha="center", fontsize=6.5)
    ax.annotate("start address = tile + 32·kk", xy=(2, 0), xytext=(2.2, -0.9), fontsize=8,
                arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.set_title(f"(b) where slice kk = {kk} (k = {8 * kk}–{8 * kk + 7}) lies in A's tile: in each row the two "
                 f"16-byte chunks of k {8 * kk}–{8 * kk + 3} and {8 * kk + 4}–{8 * kk + 7}, wherever the swizzle put "
                 "them;\nthe descriptor names only the unswizzled start (row 0, byte 32·kk) and the mode: the tensor "
                 "cores apply the same XOR on the way out that the TMA applied on the way in", fontsize=9)
    fig.suptitle("Chapter 12: how wgmma finds its 8 × 256 operand in shared memory (A's tile, K-major, 128-byte "
                 "swizzle)", fontsize=11, y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def d_coord(lane: int, i: int) -> tuple[int, int]:
    """(row, col) within its warp's 16 rows of accumulator d_i of wgmma m64nNk8 (.f32): the m16n8 C layout of
    chapter 11 repeated every 8 columns, d[4j + q] in columns 8j .. 8j + 7."""
    r, c = c_coord(lane, i % 4)
    return r, 8 * (i // 4) + c


def accumulator(path: Path) -> None:
    fig = plt.figure(figsize=(17, 10.5))
    gs = fig.add_gridspec(2, 2, width_ratios=[8, 16], height_ratios=[1, 0.42], hspace=0.22, wspace=0.12)
    ch11._panel(fig.add_subplot(gs[0, 0]), "A", 16, WGMMA_K, 4, a_coord, "a", "(a) the register operand (64 × 8, "
                ".tf32): warp 0's rows 0–15\nrow = 16w + lane/4 (+8 for a1, a3), k = lane%4 (+4 for a2, a3)", "k",
                "row of the operand (m of wgmma)")
    ch11._panel(fig.add_subplot(gs[0, 1]), "D", 16, 16, 8, d_coord, "d", "(b) the accumulators (64 × 256, .f32): "
                "warp 0's rows 0–15, columns 0–15 (d0..d7 of 128)\nrow = 16w + lane/4 (+8 for d[4j+2], d[4j+3]), "
                "column = 8j + 2·(lane%4) (+1 for odd d)", "column of D (n of wgmma)", "row of D (m of wgmma)")
    ax = fig.add_subplot(gs[1, :])
    ax.set(xlim=(-12, K["BLOCK_M"] + 2), ylim=(WGMMA_M + 2, -6))
    ax.axis("off")
    for w in range(4):
        for j in range(K["BLOCK_M"] // 8):
            ax.add_patch(Rectangle((8 * j, 16 * w), 8, 16, fc=plt.get_cmap("Set2")(w), ec="white", lw=0.6,
                                   alpha=1.0 if j < 2 and w == 0 else 0.55))
            ax.text(8 * j + 4, -1.5, f"j={j}" if w == 0 and j % 4 == 0 else "", ha="center", fontsize=6.5)
        ax.text(-2, 16 * w + 8, f"warp {w}: rows {16 * w}–{16 * w + 15}", ha="right", va="center", fontsize=7.5)
    ax.text(K["BLOCK_M"] / 2, 8, "each 8 × 16 block: d[4j] .. d[4j+3] of the warp's 32 lanes", ha="center",
            va="center", fontsize=8)
    ax.set_title(f"(c) the whole 64 × {K['BLOCK_M']} accumulator of one consumer warpgroup: warp w holds rows 16w–16w+15, "
                 f"and every thread holds {WGMMA_M * K['BLOCK_M'] // WARPGROUP} floats, 4 per 8 columns (bright: "
                 "panel b)", fontsize=9)
    fig.suptitle("Chapter 12: which thread holds what in wgmma.mma_async.m64n256k8.f32.tf32.tf32 with A from registers. "
                 "Within a warp, the layouts are chapter 11's m16n8k8\n(A as there; D as C there, once per 8 columns): "
                 "colour: the lane's group (lane/4), faded: rows 8–15", fontsize=11, y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def tile_of(u: int, units_m: int, units_n: int, group_m: int) -> tuple[int, int]:
    """The kernel's work_of, one split: (unit row, unit column) of unit u (bands of group_m unit rows)."""
    per_band = group_m * units_n
    first = u // per_band * group_m
    rows = min(group_m, units_m - first)
    r = u % per_band
    return first + r % rows, r // rows


SCHED_M = SCHED_N = 4096  # the problem drawn
SCHED_CLUSTERS = 66       # clusters resident at once on the H100 (132 SMs, one block per SM, pairs)
ROUND_COLOURS = ["#08306b", "#4292c6", "#9ecae1", "#deebf7"]  # rounds 0, 1, 2, 3 of the persistent walk


def schedule(path: Path) -> None:
    units_m = SCHED_M // (K["CLUSTER_M"] * K["BLOCK_M"])
    units_n = SCHED_N // (K["CLUSTER_N"] * K["BLOCK_N"])
    fig, axes = plt.subplots(1, 2, figsize=(16, 8.8))
    for ax, group_m in zip(axes, (K["GROUP_M"], 1)):
        ax.set(xlim=(0, units_n), ylim=(units_m, 0), aspect="equal")
        ax.set_xticks([c + 0.5 for c in range(units_n)], [str(c) for c in range(units_n)], fontsize=7)
        ax.set_yticks([r + 0.5 for r in range(units_m)], [str(r) for r in range(units_m)], fontsize=7)
        ax.tick_params(length=0)
        ax.set_xlabel(f"unit column ({K['CLUSTER_N']} tiles of {K['BLOCK_N']} columns of C: a band of B)", fontsize=8)
        ax.set_ylabel(f"unit row ({K['BLOCK_M']} rows of C: a band of A)", fontsize=8)
        for u in range(units_m * units_n):
            r, c = tile_of(u, units_m, units_n, group_m)
            rnd = u // SCHED_CLUSTERS
            ax.add_patch(Rectangle((c, r), 1, 1, fc=ROUND_COLOURS[min(rnd, 3)], ec="white", lw=0.8))
            ax.text(c + 0.5, r + 0.5, str(u), ha="center", va="center", fontsize=6.5, color="wk"[rnd >= 2])
        first = [tile_of(u, units_m, units_n, group_m) for u in range(SCHED_CLUSTERS)]
        ax.plot([c + 0.5 for _, c in first], [r + 0.5 for r, _ in first], color=COL["prod"], lw=1.0)
        for band in range(0, units_m if group_m > 1 else 0, group_m):
            ax.add_patch(Rectangle((0, band), units_n, min(group_m, units_m - band), fill=False, ec="black", lw=2))
        nr, nc = len({r for r, _ in first}), len({c for _, c in first})  # bands of A and of B the first round reads
        ax.set_title(f"GROUP_M = {group_m}{' (the kernel)' if group_m == K['GROUP_M'] else ' (plain row order)'}: "
                     f"units 0–{SCHED_CLUSTERS - 1} (red path) run first;\nthey need {nr} bands of A and {nc} of B, "
                     f"{nr + nc} bands of {K['BLOCK_M']} × K floats in all", fontsize=9)
    fig.suptitle(f"Chapter 12: the persistent order of the units of work at {SCHED_M} × {SCHED_N} ({units_m} × "
                 f"{units_n} units of one cluster each). Cluster i takes units i, i + {SCHED_CLUSTERS}, i + "
                 f"{2 * SCHED_CLUSTERS}, ...;\nthe number is u, the shade the round (u / {SCHED_CLUSTERS}, darkest "
                 "first). With GROUP_M the walk goes down the columns of bands of GROUP_M unit rows", fontsize=11,
                 y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# The timeline's made-up durations (arbitrary units; a schematic, not a measurement): the TMA's latency for a
# stage, the time between two stages it can deliver, one consumer's group of BLOCK_K / 8 wgmmas on the tensor
# pipe, a consumer's issue work per K step (LDS, fence, wgmma, commit), the epilogue, K steps per tile.
T_LOAD, T_STAGE, T_GROUP, T_ISSUE, T_EPILOGUE, T_KSTEPS, T_TILES = 3.0, 1.6, 1.0, 0.35, 2.6, 6, 2


def simulate() -> list[tuple[str, float, float, str, str]]:
    """Schedules the kernel's protocol with the durations above: the producer's issues, the stages' arrivals,
    each consumer's waits and wgmma groups on one shared tensor pipe, the releases (wait_group<1> returning).
    Returns (lane, start, end, kind, label) items to draw."""
    items, released, group_end = [], {}, {}  # released: K step -> time both consumers have released its stage
    prod_free, last_full, pipe_free, free = 0.0, -1e9, 0.0, [0.0] * CONSUMERS
    for it in range(T_KSTEPS * T_TILES):
        t = max(prod_free, released.get(it - K["STAGES"], 0.0))  # the producer's wait on empty[s]
        items += [("prod", prod_free, t, "wait", "wait empty"), ("prod", t, t + 0.25, "prod", str(it))]
        prod_free, last_full = t + 0.25, max(t + T_LOAD, last_full + T_STAGE)
        items.append(("tma", t, last_full, "tma", f"it {it} → s{it % K['STAGES']}"))
        for c in range(CONSUMERS):
            lane, start = f"c{c}", max(free[c], last_full)  # the consumer's wait on full[s]
            issued = start + T_ISSUE
            items += [(lane, free[c], start, "wait", "wait full"), (lane, start, issued, lane, str(it))]
            p0 = max(issued, pipe_free)
            pipe_free = group_end[c, it] = p0 + T_GROUP
            items.append(("pipe", p0, pipe_free, lane, f"c{c}: {it}"))
            done = issued if it % T_KSTEPS == 0 else max(issued, group_end[c, it - 1])  # wait_group<1>
            if it % T_KSTEPS == T_KSTEPS - 1:  # the tile's last K step: wait_group<0>, then the epilogue
                done = max(done, group_end[c, it])
                items.append((lane, done, done + T_EPILOGUE, "epi", "epilogue: store C"))
            items.append((lane, issued, done, "group", "wait_group"))
            for step in [it - 1] * (it % T_KSTEPS > 0) + [it] * (it % T_KSTEPS == T_KSTEPS - 1):  # stages freed
                items.append((lane, done, done, "release", ""))
                released[step] = max(released.get(step, 0.0), done)
            free[c] = done + (T_EPILOGUE if it % T_KSTEPS == T_KSTEPS - 1 else 0.0)
    return [i for i in items if i[2] > i[1] or i[3] == "release"]


def timeline(path: Path) -> None:
    items = simulate()
    fig, ax = plt.subplots(figsize=(17, 7.4))
    end = max(i[2] for i in items) + 1.0
    lanes = {"prod": (5.0, "producer\n(one thread)"), "tma": (4.0, "TMA → stage\n(it % STAGES)"),
             "c0": (3.0, "consumer 0\n(warpgroup 1)"), "c1": (2.0, "consumer 1\n(warpgroup 2)"),
             "pipe": (1.0, "tensor pipe\n(the SM's)")}
    ax.set(xlim=(-3.2, end), ylim=(0.5, 6.0))
    ax.axis("off")
    for y, name in lanes.values():
        ax.text(-0.3, y + 0.3, name, ha="right", va="center", fontsize=8.5)
        ax.plot([0, end], [y - 0.08, y - 0.08], color="#dddddd", lw=0.6)
    tma_rows: dict[int, float] = {}
    for lane, t0, t1, kind, label in items:
        y, w = lanes[lane][0], t1 - t0
        if kind == "release":
            ax.plot([t0, t0], [y - 0.05, y + 0.65], color="black", lw=1.2)
        elif kind == "tma":  # overlapping copies on rows of their own
            row = next(r for r in range(8) if tma_rows.get(r, -1e9) <= t0)
            tma_rows[row] = t1
            _box(ax, t0, y + 0.16 * row, w, 0.15, COL["tma"], label, fs=5.5)
        elif kind in ("wait", "group"):
            _box(ax, t0, y, w, 0.6, COL["wait"] if kind == "wait" else "#f2f2f2", label if w > 0.9 else "", fs=6.3,
                 hatch="///" if kind == "wait" else None, ec="white" if kind == "wait" else "#bbbbbb")
        elif lane == "pipe" or kind == "epi":
            _box(ax, t0, y, w, 0.6, COL[kind], label, fs=6.8, tc="white")
        else:  # the producer's or a consumer's own work, numbered by K step
            _box(ax, t0, y, w, 0.6, COL[kind])
            ax.text(t0 + w / 2, y + 0.75, label, ha="center", fontsize=6.5, color=COL[kind])
    ax.text(end / 2, 0.55, "numbers: the K step it (it counts over the tiles: stage it % STAGES). Coloured: the "
            "consumer issues (fragment loads, wgmma.fence, 4 wgmma, commit); black tick: wait_group returned and "
            "the stage\nbefore is released on both blocks' empty barriers; hatched: waiting on an mbarrier. Two "
            "tiles of 6 K steps; the producer fills the ring for the second tile during the first one's epilogue.",
            ha="center", va="center", fontsize=8)
    ax.set_title("SCHEMATIC, not a measurement: the durations are made up to show the order of events", fontsize=9.5,
                 color="#b00000")
    fig.suptitle("Chapter 12: warp specialisation over a few K steps. One producer thread keeps the ring full; two "
                 "consumer warpgroups issue asynchronous wgmma groups\nand wait only for the group before last, so the "
                 "tensor pipe always has the other consumer's group or its own next one to run", fontsize=11, y=0.995)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"swizzle.png": swizzle, "mbarrier.png": mbarrier, "tensormap.png": tensormap, "descriptor.png": descriptor,
           "accumulator.png": accumulator, "schedule.png": schedule, "timeline.png": timeline}
