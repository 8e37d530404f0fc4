"""Chapter 19: the filter tile's shared stores, chapter 18's scalar transposed stores against this
chapter's float4 stores into rows padded from 128 to 132 floats.

Top: which part of the filter one thread copies, and where it goes in the tap-major tile (chapter 18:
1 filter x 4 taps, four scalar stores down a column; chapter 19: 4 filters x 2 taps, two float4 stores
along rows), and the padded tile cut into 16-byte bank groups with one store of warp 0. Bottom: that
store's lanes stacked on the banks (or bank groups) they hit; the deepest stack is the number of
wavefronts.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cells, lane_color  # noqa: E402

CHAPTER = "19_implicit_gemm_padding"

# The tunables of chapters/18_implicit_gemm_cheap_gather/kernel.cuh and chapters/19_implicit_gemm_padding/kernel.cuh.
BLOCK_M, BLOCK_K = 128, 16
NUM_THREADS = 256
VEC = 4
A_PAD = 4  # chapter 19: rows of BLOCK_M + A_PAD = 132 floats
A_VEC_K = BLOCK_M * BLOCK_K // (NUM_THREADS * VEC)  # 2 taps per thread in chapter 19's copy
A_BLOCKS_K = BLOCK_K // A_VEC_K  # 8 tap blocks along a filter
BANKS = 32  # 4-byte banks
GROUPS = BANKS // VEC  # 8 groups of 16 bytes: a 128-bit access is served 8 lanes at a time

SHOWN_TID = 5  # the thread whose copy is drawn in panels (1) and (2)
STORE_C = 0  # which of a thread's stores panels (3) to (6) show


def ch17_copy(tid: int) -> tuple[int, int]:
    """(a_row, a_col) of chapter 18: filter a_row, taps a_col .. a_col + 3."""
    return tid // (BLOCK_K // VEC), (tid % (BLOCK_K // VEC)) * VEC


def ch18_copy(tid: int) -> tuple[int, int]:
    """(a_row, a_col) of chapter 19: filters a_row .. a_row + 3, taps a_col .. a_col + A_VEC_K - 1."""
    a_ml, a_kb, a_mh = tid % A_VEC_K, (tid // A_VEC_K) % A_BLOCKS_K, tid // (A_VEC_K * A_BLOCKS_K)
    return (a_mh * A_VEC_K + a_ml) * VEC, a_kb * A_VEC_K


def scalar_store(lane: int, c: int) -> tuple[int, int]:
    """Chapter 18, warp 0: (word address, bank) of the scalar store Ws[a_col + c][a_row], rows of BLOCK_M floats."""
    a_row, a_col = ch17_copy(lane)
    word = (a_col + c) * BLOCK_M + a_row
    return word, word % BANKS


def vector_store(lane: int, c: int, pad: int) -> tuple[int, int]:
    """Chapter 19, warp 0: (16-byte chunk, bank group) of the float4 store at Ws[a_col + c][a_row], rows of
    BLOCK_M + pad floats."""
    a_row, a_col = ch18_copy(lane)
    chunk = ((a_col + c) * (BLOCK_M + pad) + a_row) // VEC
    return chunk, chunk % GROUPS


def wavefronts(addr_bank: list[tuple[int, int]], minimum: int) -> int:
    """The most distinct addresses any bank (or group) must serve, and at least the access's minimum."""
    per: dict[int, set[int]] = {}
    for addr, bank in addr_bank:
        per.setdefault(bank, set()).add(addr)
    return max(minimum, max(len(a) for a in per.values()))


def _copy_panel(ax, title, filters, mine, dest, note) -> None:
    """A corner of W (filters x taps, as stored) and of the tap-major tile, one thread's floats in both."""
    ax.set_xlim(-0.5, BLOCK_K + 6 + filters + 0.5)
    ax.set_ylim(BLOCK_K + 4.5, -1.5)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9.5)
    # W: `filters` rows x BLOCK_K taps, at the left.
    cells(ax, 0, 0, filters, BLOCK_K, lw=0.4, ec="#999999")
    for (f, t), colour in mine.items():
        ax.add_patch(Rectangle((t, f), 1, 1, color=colour))
    ax.annotate("W: filters ↓, taps → (as in w)", (0, -0.4), fontsize=8)
    # The tap-major tile: BLOCK_K rows x `filters` columns, at the right.
    x0 = BLOCK_K + 6
    cells(ax, x0, 0, BLOCK_K, filters, lw=0.4, ec="#999999")
    for (t, f), colour in dest.items():
        ax.add_patch(Rectangle((x0 + f, t), 1, 1, color=colour))
    ax.annotate("Ws: taps ↓, filters →", (x0, -0.4), fontsize=8)
    ax.add_patch(FancyArrowPatch((BLOCK_K + 0.6, 2.5), (x0 - 0.6, 2.5), arrowstyle="->", mutation_scale=14))
    ax.annotate(note, (0, BLOCK_K + 0.8), va="top", fontsize=8)


def _tile_panel(ax) -> None:
    """Panel (3): the padded tile in 16-byte chunks, coloured by bank group, with warp 0's store STORE_C."""
    row_chunks = (BLOCK_M + A_PAD) // VEC  # 33
    ax.set_xlim(-2.5, row_chunks + 0.5)
    ax.set_ylim(BLOCK_K + 4.2, -1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(f"(3) chapter 19's tile, rows of {BLOCK_M} + {A_PAD} floats\n= {row_chunks} chunks of 16 bytes; "
                 f"colour: bank group (chunk mod {GROUPS});\nnumbers: the lanes of warp 0's store c = {STORE_C}",
                 fontsize=9.5)
    group_cmap = plt.get_cmap("Pastel2")
    for kk in range(BLOCK_K):
        for ch in range(row_chunks):
            chunk = (kk * (BLOCK_M + A_PAD)) // VEC + ch
            pad = ch * VEC >= BLOCK_M
            ax.add_patch(Rectangle((ch, kk), 1, 1, fc="white" if pad else group_cmap(chunk % GROUPS),
                                   ec="#bbbbbb", lw=0.3, hatch="////" if pad else None))
        ax.annotate(str(kk), (-0.4, kk + 0.5), ha="right", va="center", fontsize=6.5)
    for lane in range(WARP):
        a_row, a_col = ch18_copy(lane)
        kk, ch = a_col + STORE_C, a_row // VEC
        ax.add_patch(Rectangle((ch, kk), 1, 1, fill=False, ec="black", lw=1.0))
        ax.annotate(str(lane), (ch + 0.5, kk + 0.55), ha="center", va="center", fontsize=5.5)
    ax.annotate("tap row kk", (-2.3, -0.5), fontsize=7)
    ax.annotate(f"each row starts one group further on\n({BLOCK_M + A_PAD} floats = {row_chunks} chunks); hatched: "
                f"the {A_PAD} floats of padding", (0, BLOCK_K + 0.6), va="top", fontsize=8)


def _stack_panel(ax, title, hits, columns, minimum, unit) -> None:
    """Lanes stacked on the bank (or group) they hit; distinct addresses count, lanes sharing one do not."""
    ax.set_xlim(-0.3, columns + 0.3)
    depth_max = 8
    ax.set_ylim(depth_max + 0.2, -0.2)
    ax.set_xticks([b + 0.5 for b in range(columns)] if columns <= GROUPS else
                  [b + 0.5 for b in range(0, columns, 4)])
    ax.set_xticklabels([str(b) for b in range(columns)] if columns <= GROUPS else
                       [str(b) for b in range(0, columns, 4)], fontsize=7)
    ax.set_yticks([])
    ax.set_xlabel(unit, fontsize=8)
    stacks: dict[int, list[tuple[int, int]]] = {}
    for lane, (addr, bank) in enumerate(hits):
        stacks.setdefault(bank, []).append((lane, addr))
    for bank in range(columns):
        ax.add_patch(Rectangle((bank, 0), 1, depth_max, fill=False, lw=0.2, ec="#dddddd"))
        for depth, (lane, _) in enumerate(sorted(stacks.get(bank, []))):
            ax.add_patch(Rectangle((bank, depth), 1, 1, fc=lane_color(lane), ec="white", lw=0.5))
            ax.annotate(str(lane), (bank + 0.5, depth + 0.55), ha="center", va="center", fontsize=6, color="white")
    waves = wavefronts(hits, minimum)
    ax.set_title(f"{title}\n→ {waves} wavefronts (at least {minimum}), {waves - minimum} of them conflicts", fontsize=9)


def store_banks(path: Path) -> None:
    fig = plt.figure(figsize=(17, 10))
    gs = fig.add_gridspec(2, 3, height_ratios=[1.25, 1.0], hspace=0.3, wspace=0.15)

    # (1) chapter 18: thread SHOWN_TID loads one filter x 4 taps (one LDG.128), stores 4 scalars down a column.
    a_row, a_col = ch17_copy(SHOWN_TID)
    shown_f = 8  # filters drawn
    mine = {(a_row, a_col + c): lane_color(SHOWN_TID * 4 + 4 * c) for c in range(VEC)}
    dest = {(a_col + c, a_row): lane_color(SHOWN_TID * 4 + 4 * c) for c in range(VEC)}
    _copy_panel(fig.add_subplot(gs[0, 0]),
                f"(1) chapter 18: thread {SHOWN_TID} copies filter {a_row}, taps {a_col}–{a_col + VEC - 1}:\n"
                "one 16-byte load, four scalar stores down a column", shown_f, mine, dest,
                "8 scalar stores per thread and K step (two filters);\n"
                f"in rows of {BLOCK_M} floats a column is one bank: the\n"
                "stores of a warp pile up 4 deep (panel 4)")
    # (2) chapter 19: thread SHOWN_TID loads 4 filters x 2 taps (four LDG.64), stores 2 float4 along rows.
    a_row, a_col = ch18_copy(SHOWN_TID)
    mine = {(a_row + i, a_col + c): lane_color(8 + 16 * c) for i in range(VEC) for c in range(A_VEC_K)}
    dest = {(a_col + c, a_row + i): lane_color(8 + 16 * c) for i in range(VEC) for c in range(A_VEC_K)}
    _copy_panel(fig.add_subplot(gs[0, 1]),
                f"(2) chapter 19: thread {SHOWN_TID} copies filters {a_row}–{a_row + VEC - 1}, taps "
                f"{a_col}–{a_col + A_VEC_K - 1}:\nfour 8-byte loads, two float4 stores along rows", shown_f,
                mine, dest,
                "the transpose happens in the choice of registers:\n"
                "make_float4(tap c of filter 0, 1, 2, 3); 2 STS.128\n"
                "per thread and K step instead of 8 STS")
    _tile_panel(fig.add_subplot(gs[0, 2]))

    c = STORE_C
    _stack_panel(fig.add_subplot(gs[1, 0]),
                 f"(4) chapter 18: scalar store c = {c} of warp 0\n(rows of {BLOCK_M} floats): bank = filter mod 32",
                 [scalar_store(lane, c) for lane in range(WARP)], BANKS, 1, "bank (4 bytes)")
    _stack_panel(fig.add_subplot(gs[1, 1]),
                 f"(5) chapter 19's float4 store c = {c} with A_PAD = 0\n(rows of {BLOCK_M} floats: every row "
                 "starts in group 0)",
                 [vector_store(lane, c, 0) for lane in range(WARP)], GROUPS, WARP * VEC * 4 // (BANKS * 4),
                 "bank group (16 bytes = 4 banks)")
    _stack_panel(fig.add_subplot(gs[1, 2]),
                 f"(6) chapter 19's float4 store c = {c}, A_PAD = {A_PAD}\n(rows of {BLOCK_M + A_PAD} floats, "
                 "as committed)",
                 [vector_store(lane, c, A_PAD) for lane in range(WARP)], GROUPS, WARP * VEC * 4 // (BANKS * 4),
                 "bank group (16 bytes = 4 banks)")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"filter-store-banks.png": store_banks}
