"""Chapter 10: waves. How the blocks of a problem fill the GPU's SMs with chapter 09's one plan
(128x128 tiles, the whole K in each block) and with the plan the rule picks, drawn as the rule models
them: each row an SM, time in microseconds at the modelled rate.

The model is the kernel's (chapters/10_small_problems/kernel.cuh, Planner::waves()); its constants
are read from that file, so the picture cannot drift from the rule. The SM count, the FP32 lanes and
clock, and the blocks per SM are an H100 SXM's (132 SMs, 128 lanes at 1980 MHz; 2, 3 and 8 blocks of
the three shapes: the CUDA runtime's occupancy for their 128, 149 and 128 registers). No measurement.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import kernel_constants, summary_table  # noqa: E402

CHAPTER = "10_small_problems"
KERNEL = Path(__file__).resolve().parents[2] / "chapters" / CHAPTER / "kernel.cuh"

# The device the picture assumes: an H100 SXM (the launcher asks the CUDA runtime).
SMS = 132
FMA_PER_US_PER_SM = 128 * 1980.0
SHAPES = [(128, 128, 8, 2), (128, 64, 4, 3), (64, 64, 2, 8)]  # BLOCK_M, BLOCK_N, warps, blocks per SM


def constants(text: str | None = None) -> dict:
    """The model's constexprs from kernel.cuh: name -> value."""
    names = ("BLOCK_K", "MAX_SPLITS", "SCHEDULERS", "WARP_ISSUE", "COPY_COST", "ROUND_OVERHEAD_STEPS", "SPLIT_STEPS",
             "L2_ROUND_TRIP_US", "REDUCE_CHUNKS", "SPLITS_PER_TRIP", "SPLIT_LOOP_SLOWDOWN")
    return kernel_constants(KERNEL, names, text, real=True)

C = constants()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def issuing(warps: int) -> float:
    """u: the share of cycles the SM's schedulers issue with `warps` warps resident."""
    return 1.0 - (1.0 - C["WARP_ISSUE"]) ** (warps / C["SCHEDULERS"])


def plan_of(m: int, n: int, k: int, tile: int, splits: int) -> dict:
    """Planner::waves(): the wave arithmetic and the modelled time of one plan."""
    bm, bn, warps, occ = SHAPES[tile]
    tiles = cdiv(m, bm) * cdiv(n, bn)
    blocks = tiles * splits
    k_steps = cdiv(cdiv(k, int(C["BLOCK_K"])), splits)
    steps = k_steps + C["ROUND_OVERHEAD_STEPS"] + (C["SPLIT_STEPS"] if splits > 1 else 0.0)
    fmas = bm * bn * C["BLOCK_K"] * (1 + C["COPY_COST"] * (1 / bm + 1 / bn))
    fmas *= 1 + C["SPLIT_LOOP_SLOWDOWN"] if splits > 1 else 1.0

    def round_us(nb: int) -> float:
        return nb * steps * fmas / (FMA_PER_US_PER_SM * issuing(nb * warps))

    b = cdiv(blocks, SMS)
    us = (b // occ) * round_us(occ) + (round_us(b % occ) if b % occ else 0.0)
    tail = C["REDUCE_CHUNKS"] * cdiv(splits, int(C["SPLITS_PER_TRIP"])) * C["L2_ROUND_TRIP_US"] if splits > 1 else 0.0
    per_wave = SMS * occ
    rest = blocks % per_wave
    return dict(tile=tile, splits=splits, tiles=tiles, blocks=blocks, occ=occ, warps=warps, k_steps=k_steps,
                us=us + tail, tail=tail, round_us=round_us, per_wave=per_wave, waves=blocks / per_wave,
                last_fill=1.0 if rest == 0 else rest / per_wave)


def choose(m: int, n: int, k: int) -> dict:
    """Planner::choose(): the least modelled time; larger tiles and fewer splits win ties."""
    best = None
    for tile in range(len(SHAPES)):
        for splits in range(1, min(int(C["MAX_SPLITS"]), cdiv(k, int(C["BLOCK_K"]))) + 1):
            p = plan_of(m, n, k, tile, splits)
            if best is None or p["us"] < best["us"]:
                best = p
    return best


def name(p: dict) -> str:
    bm, bn, _, _ = SHAPES[p["tile"]]
    return f"{bm}×{bn}, {p['splits']} split{'s' if p['splits'] > 1 else ''}"


def _timeline(ax, p: dict, t_max: float, title: str) -> None:
    """Each row an SM; its blocks in rounds of `occ`, coloured by how busy the round keeps the SM (u)."""
    ax.set_xlim(0, t_max * 1.03)
    ax.set_ylim(SMS, 0)
    ax.set_yticks([0, SMS // 2, SMS - 1])
    ax.set_yticklabels(["SM 0", f"SM {SMS // 2}", f"SM {SMS - 1}"], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_facecolor("#f2f2f2")
    cmap = plt.get_cmap("Blues")
    occ = p["occ"]
    end = 0.0
    for sm in range(SMS):
        blocks = p["blocks"] // SMS + (1 if sm < p["blocks"] % SMS else 0)  # blocks go round the SMs
        t = 0.0
        for nb in [occ] * (blocks // occ) + ([blocks % occ] if blocks % occ else []):
            length = p["round_us"](nb)
            ax.add_patch(Rectangle((t, sm), length, 1, fc=cmap(0.25 + 0.7 * issuing(nb * p["warps"])), lw=0))
            ax.add_patch(Rectangle((t, sm), length, 1, fill=False, ec="white", lw=0.15))
            t += length
        end = max(end, t)
    if p["tail"]:
        ax.add_patch(Rectangle((end, 0), p["tail"], SMS, fc="#dd8452", lw=0))
    ax.set_title(f"{title}: {name(p)}\n{p['blocks']} blocks, {p['per_wave']} per wave ({SMS} SMs × {occ}), "
                 f"{p['waves']:.2f} waves; modelled {p['us']:.1f} µs", fontsize=8.5, loc="left")


PROBLEMS = [(1024, 1024, 1024), (1024, 1024, 16384), (512, 512, 512)]
SUITE = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
         (1024, 1024, 16384), (16384, 128, 4096), (127, 8191, 2049)]


def waves(path: Path) -> None:
    fig = plt.figure(figsize=(16, 15))
    gs = fig.add_gridspec(len(PROBLEMS) + 1, 2, height_ratios=[1] * len(PROBLEMS) + [1.2], hspace=0.55, wspace=0.08)
    for i, (m, n, k) in enumerate(PROBLEMS):
        before = plan_of(m, n, k, 0, 1)  # chapter 09: 128 x 128, no split
        after = choose(m, n, k)
        t_max = max(before["us"], after["us"])
        ax0, ax1 = fig.add_subplot(gs[i, 0]), fig.add_subplot(gs[i, 1])
        _timeline(ax0, before, t_max, f"{m}×{n}×{k}, chapter 09's plan")
        _timeline(ax1, after, t_max, "the rule's plan")
        ax1.set_yticklabels([])
        for ax in (ax0, ax1):
            ax.set_xlabel("µs (modelled)", fontsize=7)
    cmap = plt.get_cmap("Blues")
    handles = [Rectangle((0, 0), 1, 1, fc=cmap(0.25 + 0.7 * issuing(w))) for w in (2, 4, 8, 16)]
    handles += [Rectangle((0, 0), 1, 1, fc="#dd8452"), Rectangle((0, 0), 1, 1, fc="#f2f2f2")]
    labels = [f"a round with {w} warps on the SM: it issues {issuing(w):.0%} of its cycles" for w in (2, 4, 8, 16)]
    labels += ["split-K: the last block of each tile reads the partial tiles", "idle SM"]
    fig.legend(handles, labels, loc="upper center", ncol=3, fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.95))

    ax = fig.add_subplot(gs[len(PROBLEMS), :])
    head = ["problem", "128×128 tiles", "09: waves (last full)", "09: modelled",
            "the rule's plan", "blocks", "waves (last full)", "modelled"]
    rows = []
    for m, n, k in SUITE:
        before, after = plan_of(m, n, k, 0, 1), choose(m, n, k)
        rows.append([f"{m}×{n}×{k}", str(before["tiles"]), f"{before['waves']:.2f} ({before['last_fill']:.0%})",
                     f"{before['us']:.1f} µs", name(after), str(after["blocks"]),
                     f"{after['waves']:.2f} ({after['last_fill']:.0%})", f"{after['us']:.1f} µs"])
    summary_table(ax, head, rows, f"The rule on chapter 10's suite, for {SMS} SMs (the model's times: at the FMA rate, launch and "
                 "first-load latency not counted)")
    fig.suptitle("Chapter 10: fill the SMs. Each row of a timeline is one SM, as the rule models it",
                 fontsize=12, y=0.975)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"waves.png": waves}


def _check() -> None:  # pragma: no cover - a quick look from the command line
    for mnk in SUITE:
        p = choose(*mnk)
        print(mnk, name(p), f"{p['us']:.1f}", math.isfinite(p["us"]))


if __name__ == "__main__":  # pragma: no cover
    _check()
