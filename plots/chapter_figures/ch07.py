"""Chapter 07: the shared-memory banks of the k-major A tile, without and with the 128 -> 132 padding."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP  # noqa: E402

CHAPTER = "07_bank_conflict_padding"

# The tunables of chapters/07_bank_conflict_padding/kernel.cuh.
BLOCK_M = 128  # BLOCK_M: floats per row of the k-major A tile before padding
BLOCK_K = 16  # BLOCK_K: rows of the k-major A tile
A_PAD = 4  # A_PAD: rows of BLOCK_M + A_PAD = 132 floats
VEC = 4  # VEC: each thread copies one float4 of A per pass and stores it as 4 scalars
BANKS = 32  # shared-memory banks of 4 bytes

GROUP_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]  # by a_col = 0, 4, 8, 12


def store_lanes(block_k: int, row_floats: int, c: int = 0, warp: int = 0):
    """(lane, k, m, address, bank) of one scalar store As[a_col + c][r] of a warp, as the kernel computes
    a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC, with rows of row_floats floats."""
    vecs = block_k // VEC
    out = []
    for lane in range(WARP):
        tid = warp * WARP + lane
        r, a_col = tid // vecs, (tid % vecs) * VEC
        k = a_col + c
        addr = k * row_floats + r
        out.append((lane, k, r, addr, addr % BANKS))
    return out


def wavefronts(lanes) -> int:
    """Passes one 32-bit store needs: the most distinct addresses that fall into one bank."""
    per_bank: dict[int, set[int]] = {}
    for _, _, _, addr, bank in lanes:
        per_bank.setdefault(bank, set()).add(addr)
    return max(len(a) for a in per_bank.values())


def _bank_axes(ax, rows, title, ylabel):
    ax.set_xlim(-0.3, BANKS + 0.3)
    ax.set_ylim(rows + 0.2, -0.2)
    ax.set_xticks([b + 0.5 for b in range(0, BANKS, 4)])
    ax.set_xticklabels([str(b) for b in range(0, BANKS, 4)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)])
    ax.set_yticklabels([str(r) for r in range(rows)] if rows > 4 else [str(r + 1) for r in range(rows)], fontsize=7)
    ax.set_xlabel("bank (4-byte word address mod 32)", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    for r in range(rows):
        for b in range(BANKS):
            ax.add_patch(Rectangle((b, r), 1, 1, fill=False, lw=0.2, ec="#cccccc"))


def _case(ax_map, ax_waves, label, block_k, row_floats):
    vecs = block_k // VEC
    lanes = store_lanes(block_k, row_floats)
    rows_of_warp = WARP // vecs  # tile rows m that warp 0 copies in this pass
    # Left: where As[k][m], m < rows_of_warp, lands for every k; the k of the store c = 0 in colour.
    _bank_axes(ax_map, block_k,
               f"{label}: rows of {row_floats} floats, BLOCK_K = {block_k}\n"
               f"As[k][m] for m = 0–{rows_of_warp - 1} (warp 0's rows) sits in bank (k·{row_floats} + m) mod 32",
               "k (row of the k-major tile)")
    stored = {k: i for i, k in enumerate(sorted({k for _, k, _, _, _ in lanes}))}
    for k in range(block_k):
        for m in range(rows_of_warp):
            bank = (k * row_floats + m) % BANKS
            if k in stored:
                lane = m * vecs + stored[k]
                ax_map.add_patch(Rectangle((bank, k), 1, 1, fc=GROUP_COLORS[stored[k]], ec="black", lw=0.4))
                ax_map.annotate(f"{lane}", (bank + 0.5, k + 0.55), ha="center", va="center", fontsize=6, color="white")
            else:
                ax_map.add_patch(Rectangle((bank, k), 1, 1, fc="#dddddd", ec="#bbbbbb", lw=0.3))
    # Right: the same store, lanes stacked per bank: the height of the tallest stack is the wavefront count.
    n_waves = wavefronts(lanes)
    per_bank: dict[int, list[tuple[int, int]]] = {}
    for lane, k, _, _, bank in lanes:
        per_bank.setdefault(bank, []).append((lane, stored[k]))
    conflict = "no conflict" if n_waves == 1 else f"{n_waves}-way conflict: {n_waves - 1} extra wavefront{'s' if n_waves > 2 else ''}"
    _bank_axes(ax_waves, 4,
               f"one scalar store of warp 0 (c = 0): {WARP} lanes in {len(per_bank)} banks\n"
               f"→ {n_waves} wavefront{'s' if n_waves > 1 else ''} ({conflict})", "wavefront (pass)")
    for bank, items in per_bank.items():
        for depth, (lane, group) in enumerate(sorted(items)):
            ax_waves.add_patch(Rectangle((bank, depth), 1, 1, fc=GROUP_COLORS[group], ec="black", lw=0.4))
            ax_waves.annotate(f"{lane}", (bank + 0.5, depth + 0.55), ha="center", va="center", fontsize=6.5,
                              color="white")
    ax_waves.set_aspect("equal")
    ax_map.set_aspect("equal")


def bank_layout(path: Path) -> None:
    """Banks of warp 0's transposed store into As, for 128 and 132 floats per row (and the BLOCK_K = 8 tile)."""
    fig, axes = plt.subplots(2, 3, figsize=(18, 6.4), gridspec_kw=dict(height_ratios=[16, 4.6]))
    _case(axes[0][0], axes[1][0], "(1) chapter 06", BLOCK_K, BLOCK_M)
    _case(axes[0][1], axes[1][1], "(2) chapter 07", BLOCK_K, BLOCK_M + A_PAD)
    _case(axes[0][2], axes[1][2], "(3) for comparison only", 8, BLOCK_M + A_PAD)
    fig.text(0.5, 0.005,
             "Colour = the lane's a_col (blue 0, orange 4, green 8, red 12); number = lane. Lane L of warp 0 copies row "
             "m = L / (BLOCK_K / 4) of A's tile and stores its float4 down rows k = a_col … a_col + 3 of column m.\n"
             "128 ≡ 0 (mod 32): every row of As starts in bank 0. 132 ≡ 4 (mod 32): row k starts in bank 4k mod 32, "
             "so rows 0 and 4 are 16 banks apart, but rows 0 and 8 are 32 ≡ 0 apart.",
             ha="center", va="bottom", fontsize=9)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {
    "bank-layout.png": bank_layout,
}
