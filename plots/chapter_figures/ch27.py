"""Chapter 27: K tiling. Where ptxas puts the loads of X (cuobjdump -sass of the sm_90 builds): chapter 26
one at a time, the write-up's K-tile loop written plainly (each load moved down to about three values of k
before its first use), and
this chapter's form (the 16 loads of a tile issued together); and the DRAM bytes of X each can have in
flight per SM, against what Little's law asks for.

The schedules are schematic (latencies assumed: L1 hit about 40 cycles, DRAM about 1000). Registers and
blocks per SM are ptxas's (-Xptxas -v); bytes in flight are arithmetic, not measurements.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

CHAPTER = "27_skinny_gemm_k_tiling"

WARP = 32
SECTOR = 32
K_TILE = 16
DOUBLES_PER_SECTOR = 4
# Assumed latencies (cycles) and the cost of one k of products (16 DFMAs + 8 LDS.128 of W).
L1_HIT = 40
DRAM = 1000
PER_K = 40
# Little's law: copy bandwidth x DRAM latency, shared by the SMs.
COPY_TBPS = 3.0
LATENCY_NS = 700
SMS = 132

# Warps per SM from ptxas's registers (256 threads per block, 64 K registers per SM).
KERNELS = {
    # name: (registers, blocks per SM, sectors per lane in flight while the warp waits)
    "chapter 26\n(one load at a time)": (62, 4, 1),
    "the write-up's K tile as written\n(PREFETCH = 0)": (76, 3, 1),
    "chapter 27\n(16 loads together)": (84, 2, K_TILE // DOUBLES_PER_SECTOR),
}

LOAD_COLOUR = "#6baed6"
MISS_COLOUR = "#de2d26"
FMA_COLOUR = "#31a354"


def in_flight_kb() -> dict[str, float]:
    """Upper bound of DRAM bytes of X in flight per SM: every warp waiting on its loads at once."""
    return {name: blocks * 256 // WARP * WARP * sectors * SECTOR / 1024
            for name, (_, blocks, sectors) in KERNELS.items()}


def littles_law_kb() -> float:
    return COPY_TBPS * 1e12 * LATENCY_NS * 1e-9 / SMS / 1024


def _bar(ax, y, t, length, colour, text="", fg="black"):
    ax.add_patch(Rectangle((t, y), length, 0.7, color=colour))
    if text:
        ax.text(t + length / 2, y + 0.35, text, ha="center", va="center", fontsize=6.5, color=fg)


def _schedules(ax):
    ax.set_title("(1) one warp over k = 0 .. 15 (schematic; red: a load that goes to DRAM, blue: one that finds "
                 "its sector in L1 or on the way, green: the products of one k)", fontsize=9.5, loc="left")
    rows = {"chapter 26": 2.0, "PREFETCH = 0": 1.0, "chapter 27": 0.0}
    # chapter 26: load, wait, 16 DFMAs, next load
    t = 0
    for k in range(16):
        miss = k % 4 == 0
        lat = DRAM if miss else L1_HIT
        _bar(ax, rows["chapter 26"], t, lat, MISS_COLOUR if miss else LOAD_COLOUR)
        t += lat
        _bar(ax, rows["chapter 26"], t, PER_K, FMA_COLOUR)
        t += PER_K
    end23 = t
    # PREFETCH = 0: loads 0-2 at the top, then each load about three values of k ahead of its use: a
    # DRAM wait per sector (shortened by those few steps)
    t = 0
    for k in range(16):
        if k % 4 == 0:
            wait = DRAM if k == 0 else DRAM - 3 * PER_K  # issued three values of k early
            _bar(ax, rows["PREFETCH = 0"], t, wait, MISS_COLOUR, f"wait for sector {k // 4}", "white")
            t += wait
        _bar(ax, rows["PREFETCH = 0"], t, PER_K, FMA_COLOUR)
        t += PER_K
    end0 = t
    # chapter 27: 16 loads issued together, one DRAM wait, then 16 k of products
    _bar(ax, rows["chapter 27"], 0, DRAM, MISS_COLOUR, "16 loads in flight: 4 sectors per lane, one wait", "white")
    t = DRAM
    for k in range(16):
        _bar(ax, rows["chapter 27"], t, PER_K, FMA_COLOUR)
        t += PER_K
    end24 = t
    ax.set_xlim(0, max(end23, end0) * 1.02)
    ax.set_ylim(-0.3, 3.0)
    ax.set_yticks([0.35, 1.35, 2.35])
    ax.set_yticklabels(["chapter 27 (PREFETCH = 1)", "K tile, PREFETCH = 0", "chapter 26"], fontsize=8.5)
    ax.set_xlabel("cycles (schematic)", fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    for y, end in ((2.0, end23), (1.0, end0), (0.0, end24)):
        ax.text(end + 40, y + 0.35, f"{end:,} cycles", va="center", fontsize=7.5)


def _in_flight(ax):
    kb = in_flight_kb()
    names = list(kb)
    ax.barh(range(len(names)), [kb[n] for n in names], color=["#969696", "#9ecae1", "#3182bd"], height=0.6)
    for i, n in enumerate(names):
        regs, blocks, sectors = KERNELS[n]
        ax.text(kb[n] + 1, i, f"{kb[n]:.0f} KB: {blocks * 8} warps × 32 lanes × {sectors} sector"
                f"{'s' if sectors > 1 else ''} ({regs} registers)", va="center", fontsize=8)
    need = littles_law_kb()
    ax.axvline(need, color="#de2d26", ls="--", lw=1.2)
    ax.text(need + 0.8, -0.42, f"Little's law: {COPY_TBPS} TB/s × {LATENCY_NS} ns / {SMS} SMs = "
            f"{need:.0f} KB per SM", color="#de2d26", fontsize=8, va="center")
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8.5)
    ax.set_ylim(len(names) - 0.5, -0.65)
    ax.set_xlim(0, 110)
    ax.set_xlabel("DRAM bytes of X in flight per SM, KB, at most (every warp waiting at once)", fontsize=8.5)
    ax.set_title("(2) bytes in flight: chapter 26 reaches Little's law only if every warp waits on DRAM at "
                 "the same time;\nchapter 24 holds four times it", fontsize=9.5, loc="left")
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def loads_in_flight(path: Path) -> None:
    fig = plt.figure(figsize=(14, 8.5))
    gs = fig.add_gridspec(2, 1, height_ratios=[1, 1], hspace=0.45)
    _schedules(fig.add_subplot(gs[0]))
    _in_flight(fig.add_subplot(gs[1]))
    fig.suptitle("Chapter 27: K_TILE = 16 loads of X in flight per thread", fontsize=12, y=0.97)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"loads-in-flight.png": loads_in_flight}
