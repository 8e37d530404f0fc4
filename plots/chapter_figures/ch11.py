"""Chapter 11: which lane holds which element of one mma.sync.aligned.m16n8k8 TF32 instruction.

A warp computes D (16x8) = A (16x8) * B (8x8) + C (16x8) with one instruction; every lane passes 4
registers of A, 2 of B and 4 of C and gets 4 of D back. The layouts drawn here are the PTX ISA's
(NVIDIA, "Parallel Thread Execution ISA", section "Matrix Fragments for mma.m16n8k8", anchor
#warp-level-matrix-fragment-mma-1688: section 9.7.14.5.7 in PTX ISA 9.1; the .tf32 layouts of its
Figures 72 (A), 75 (B) and 77 (C/D)), with groupID = %laneid >> 2 and threadID_in_group = %laneid % 4:

    A  (.tf32, a0..a3): row = groupID (a0, a2) or groupID + 8 (a1, a3)
                        col = threadID_in_group (a0, a1) or threadID_in_group + 4 (a2, a3)
    B  (.tf32, b0, b1): row (k) = threadID_in_group (b0) or threadID_in_group + 4 (b1); col (n) = groupID
    C/D (.f32, c0..c3): row = groupID (c0, c1) or groupID + 8 (c2, c3)
                        col = threadID_in_group * 2 + (i & 1)

Each cell is coloured by its lane's group (the four lanes 4g..4g+3 that share groupID g) and labelled
with its lane and register. Drawn from these formulas alone: no measurement, no kernel constant.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import WARP, cell_grid  # noqa: E402

CHAPTER = "11_tensor_core_mma"

MMA_M, MMA_N, MMA_K = 16, 8, 8  # the instruction's shape: m16n8k8
GROUPS = WARP // 4              # lanes 4g..4g+3 form group g (groupID = lane >> 2)
GROUP_CMAP = plt.get_cmap("tab10")


def group_color(lane: int):
    """The colour of a lane's group (groupID = lane >> 2), the same in every panel."""
    return GROUP_CMAP((lane >> 2) % 10)


def a_coord(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of register a_i (i = 0..3) of `lane` in A (16 x 8, row-major M x K)."""
    group, tig = lane >> 2, lane % 4
    return group + (8 if i in (1, 3) else 0), tig + (4 if i in (2, 3) else 0)


def b_coord(lane: int, i: int) -> tuple[int, int]:
    """(k, n) of register b_i (i = 0, 1) of `lane` in B (8 x 8, K x N)."""
    group, tig = lane >> 2, lane % 4
    return tig + (4 if i == 1 else 0), group


def c_coord(lane: int, i: int) -> tuple[int, int]:
    """(row, col) of register c_i (i = 0..3) of `lane` in C and D (16 x 8, M x N)."""
    group, tig = lane >> 2, lane % 4
    return group + (8 if i >= 2 else 0), tig * 2 + (i & 1)


# (name, rows, cols, registers per lane, coordinate function, register letter)
FRAGMENTS = [("A", MMA_M, MMA_K, 4, a_coord, "a"), ("B", MMA_K, MMA_N, 2, b_coord, "b"),
             ("C", MMA_M, MMA_N, 4, c_coord, "c")]


def owners(rows: int, cols: int, regs: int, coord) -> dict[tuple[int, int], tuple[int, int]]:
    """(row, col) -> (lane, register) over the warp; raises if two registers claim one element or one
    element is left without a register (each layout covers its matrix exactly once)."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for lane in range(WARP):
        for i in range(regs):
            rc = coord(lane, i)
            if not (0 <= rc[0] < rows and 0 <= rc[1] < cols):
                raise ValueError(f"lane {lane} register {i} at {rc}: outside {rows}x{cols}")
            if rc in out:
                raise ValueError(f"{rc} held twice: {out[rc]} and {(lane, i)}")
            out[rc] = (lane, i)
    if len(out) != rows * cols:
        raise ValueError(f"{rows * cols - len(out)} elements of the {rows}x{cols} matrix held by no lane")
    return out


def _panel(ax, name: str, rows: int, cols: int, regs: int, coord, letter: str, title: str, xlabel: str,
           ylabel: str) -> None:
    cell_grid(ax, rows, cols, title, fontsize=9, margin=0.05)
    for (r, c), (lane, i) in owners(rows, cols, regs, coord).items():
        half = r >= rows // 2  # the rows of the +8 registers (A, C) and the ks of the +4 one (B)
        ax.add_patch(Rectangle((c, r), 1, 1, fc=group_color(lane), ec="white", lw=0.8, alpha=0.55 if half else 0.9))
        ax.annotate(f"T{lane}\n{letter}{i}", (c + 0.5, r + 0.52), ha="center", va="center", fontsize=6.5,
                    color="black" if half else "white", linespacing=0.95)
    ax.set_xticks([c + 0.5 for c in range(cols)])
    ax.set_xticklabels([str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)])
    ax.set_yticklabels([str(r) for r in range(rows)], fontsize=7)
    ax.tick_params(length=0)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)


def fragments(path: Path) -> None:
    fig = plt.figure(figsize=(16, 9.6))
    gs = fig.add_gridspec(2, 3, width_ratios=[1, 1, 1], height_ratios=[1, 0.09], hspace=0.18, wspace=0.3)
    ax_a, ax_b, ax_c = (fig.add_subplot(gs[0, i]) for i in range(3))
    _panel(ax_a, "A", MMA_M, MMA_K, 4, a_coord, "a",
           "A: 16 × 8 (M × K), row-major, .tf32 in a0..a3\n"
           "row = lane/4 (+8 for a1, a3)\ncol = lane%4 (+4 for a2, a3)", "k", "m")
    _panel(ax_b, "B", MMA_K, MMA_N, 2, b_coord, "b",
           "B: 8 × 8 (K × N), column-major, .tf32 in b0, b1\n"
           "k = lane%4 (+4 for b1)\nn = lane/4", "n", "k")
    _panel(ax_c, "C", MMA_M, MMA_N, 4, c_coord, "c",
           "C and D: 16 × 8 (M × N), .f32 in c0..c3 (d0..d3)\n"
           "row = lane/4 (+8 for c2, c3)\ncol = 2·(lane%4) + (0 for c0, c2; 1 for c1, c3)", "n", "m")
    # B is 8 rows high: centre it against the 16 rows of A and C.
    pos_a, pos_b = ax_a.get_position(), ax_b.get_position()
    ax_b.set_position([pos_b.x0, pos_a.y0 + pos_a.height / 4, pos_b.width, pos_a.height / 2])
    fig.text((pos_a.x1 + ax_b.get_position().x0) / 2, pos_a.y0 + pos_a.height / 2, "×", fontsize=26,
             ha="center", va="center")
    x_arrow = (ax_b.get_position().x1 + ax_c.get_position().x0) / 2
    fig.text(x_arrow, pos_a.y0 + pos_a.height / 2, "→", fontsize=26, ha="center", va="center")
    fig.text(x_arrow, pos_a.y0 + pos_a.height / 2 - 0.04, "+ C = D", fontsize=10, ha="center", va="center")

    ax = fig.add_subplot(gs[1, :])
    ax.axis("off")
    handles = [Rectangle((0, 0), 1, 1, fc=group_color(4 * g), alpha=0.9) for g in range(GROUPS)]
    ax.legend(handles, [f"lanes {4 * g}–{4 * g + 3} (group {g})" for g in range(GROUPS)], ncol=GROUPS, fontsize=8,
              loc="upper center", frameon=False, title="colour: the lane's group (lane/4); faded: rows 8–15 of A and C "
              "(a1, a3; c2, c3) and k 4–7 of B (b1)", title_fontsize=8)
    fig.suptitle("Chapter 11: one mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 per warp: D = A·B + C, "
                 f"{MMA_M}·{MMA_N}·{MMA_K} = {MMA_M * MMA_N * MMA_K} multiply-adds from 4 + 2 + 4 registers per lane\n"
                 "group g holds row g (and g + 8) of A and of C, and column g of B: its 4 lanes split the k of A "
                 "and B, and the n of C", fontsize=11, y=0.99)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


# B's tile in shared memory (chapters/11_tensor_core_mma/kernel.cuh): rows of B_LD = 256 floats, a
# warp's 64 columns = 16 chunks of 4 floats; chunk c of row k stored at slot c ^ swz(k).
B_CHUNKS = 16      # a warp's WARP_N = 64 columns, in 16-byte chunks
QUARTER = 8        # the lanes one 16-byte shared-memory wavefront serves (a quarter-warp)


def swz(k: int) -> int:
    return (k & 1) | ((k & 2) << 1)


def b_swizzle(path: Path) -> None:
    """B's fragments: the column permutation (tile j takes column 8g + j for fragment column g, so
    lane (g, t) needs columns 8g .. 8g + 7 of row t: chunks 2g and 2g + 1) and the swizzle that keeps
    a quarter-warp's 16-byte loads on 8 different bank groups."""
    fig, axes = plt.subplots(1, 3, figsize=(19, 4.4), gridspec_kw=dict(width_ratios=[2.9, 1, 1], wspace=0.12))
    ax = axes[0]
    cell_grid(ax, 8, 64, "(1) the warp's 64 columns of B: instruction tile j takes\ncolumn 8g + j as its fragment "
              "column g; lane (g, t) so\nneeds columns 8g .. 8g+7 of rows t and t+4 (colour: g)", fontsize=9)
    for k in range(8):
        for n in range(64):
            ax.add_patch(Rectangle((n, k), 1, 1, fc=GROUP_CMAP(n // 8), ec="white", lw=0.4, alpha=0.9 if k in (0, 4) else 0.3))
    for n in range(0, 64, 8):
        ax.annotate(f"g={n // 8}", (n + 4, -0.6), ha="center", fontsize=7)
    ax.set_xlabel("column n of the warp tile (bright: rows 0 and 4, what lanes (g, t=0) load)", fontsize=8)
    for ax, swizzled in ((axes[1], False), (axes[2], True)):
        title = ("(3) stored at slot c ^ swz(k): the same 8 lanes\nhit 8 different bank groups (one wavefront)" if swizzled
                 else "(2) chunk c of row k at slot c: lanes 0-7 (g = 0, 1;\nt = 0..3) hit bank groups 0 and 2, 4 each")
        cell_grid(ax, 8, B_CHUNKS, title, fontsize=9)
        hit = {}
        for lane in range(QUARTER):  # one LDS.128 of chunk 2g, row t
            g, t = lane >> 2, lane % 4
            slot = (2 * g) ^ (swz(t) if swizzled else 0)
            hit[(slot, t)] = lane
        for k in range(8):
            for c in range(B_CHUNKS):
                slot = c ^ (swz(k) if swizzled else 0)
                lane = hit.get((slot, k))
                ax.add_patch(Rectangle((slot, k), 1, 1, fc=GROUP_CMAP(c // 2 % 10) if lane is not None else "#eeeeee",
                                       ec="white", lw=0.6))
                ax.annotate(f"{c}" + (f"\nT{lane}" if lane is not None else ""), (slot + 0.5, k + 0.55), ha="center",
                            va="center", fontsize=6.5)
        ax.set_xlabel("slot (16 bytes; bank group = slot mod 8)", fontsize=8)
        ax.set_ylabel("row k", fontsize=8)
    fig.suptitle("Chapter 11: B's fragments without ldmatrix: permuted columns make each lane's 8 values two "
                 "consecutive 16-byte chunks;\nthe swizzle swz(k) = (k & 1) | (k & 2) << 1 spreads a quarter-warp's "
                 "chunks over all 32 banks (cell: the chunk c stored there; Tn: the lane loading it)", fontsize=10.5,
                 y=0.9)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"fragments.png": fragments, "b_swizzle.png": b_swizzle}
