"""Chapter 20: the tile rule. How the blocks of a layer fill the GPU's SMs, with chapter 19's grid (128x128
tiles, the whole reduction in each block) and with the shape and split that plan() picks, drawn as the
rule models them: each row an SM, time in K steps of a full SM.

The model and its constants are the kernel's (chapters/20_implicit_gemm_double_buffer/kernel.cuh,
plan()): the busiest SM runs b = ceil(units / SMs) blocks, occ at a time; a round of occ blocks costs
steps + BLOCK_OVERHEAD_STEPS, a partial round (b % occ blocks) that fraction / PARTIAL_EFFICIENCY of a
full one; split-K adds SPLIT_STEPS per unit and slot and SPLIT_LAUNCH_STEPS. The SM count and the blocks
per SM are the H100's (132, and 2 for both shapes: 126 and 128 registers x 256 threads). No measurement.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import summary_table  # noqa: E402

CHAPTER = "20_implicit_gemm_double_buffer"

# The tile rule of chapters/20_implicit_gemm_double_buffer/kernel.cuh.
BLOCK_K = 16
SHAPES = [(128, 128), (64, 256)]
BLOCK_OVERHEAD_STEPS = 2.0
PARTIAL_EFFICIENCY = 0.8
SPLIT_STEPS = 5.0
SPLIT_LAUNCH_STEPS = 1.0
MAX_SPLITS = 32
# The device the picture assumes: an H100 SXM (the launcher asks the CUDA runtime for both).
SMS = 132
OCC = [2, 2]

# The layer table's problems (N, C, H = W, K, R = S, pad, stride), as in docs/conv-as-gemm.md.
LAYERS = {
    "seed_3x3": (128, 64, 56, 128, 3, 1, 1),
    "r50_conv1": (32, 3, 224, 64, 7, 3, 2),
    "r50_c2_3x3": (32, 64, 56, 64, 3, 1, 1),
    "r50_c2_1x1_up": (32, 64, 56, 256, 1, 0, 1),
    "r50_c3_3x3_s2": (32, 128, 56, 128, 3, 1, 2),
    "r50_c3_3x3": (32, 128, 28, 128, 3, 1, 1),
    "r50_c3_1x1": (32, 512, 28, 128, 1, 0, 1),
    "r50_c4_3x3": (32, 256, 14, 256, 3, 1, 1),
    "r50_c4_1x1_down": (32, 1024, 14, 256, 1, 0, 1),
    "r50_c5_3x3": (32, 512, 7, 512, 3, 1, 1),
}
# The layers drawn as SM timelines, one row each.
DRAWN = ["r50_c5_3x3", "r50_c4_3x3", "r50_c2_3x3"]

FULL = "#4c72b0"  # a round with occ blocks on the SM
FULL_ALT = "#3a5a8c"  # every other full round, so that rounds stay apart
PARTIAL = "#a6bddb"  # a round with fewer
SPLIT = "#dd8452"  # the partial outputs written, read back and summed
IDLE_ROWS = "#f2f2f2"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def gemm(layer: str) -> tuple[int, int, int]:
    """(M, N, K) of the implicit GEMM: K filters, N*P*Q output pixels, C*R*S taps."""
    n, c, h, k, r, pad, stride = LAYERS[layer]
    p = (h + 2 * pad - r) // stride + 1
    return k, n * p * p, c * r * r


def option(m: int, n: int, k: int, shape: int, splits: int) -> dict:
    """One (shape, splits) as plan() models it, in K steps of a full SM (both shapes do the same FMAs per
    K step and occ is the same, so no weighting is needed between them here)."""
    bm, bn = SHAPES[shape]
    occ = OCC[shape]
    k_steps = cdiv(k, BLOCK_K)
    steps = cdiv(k_steps, splits)
    tiles = cdiv(m, bm) * cdiv(n, bn)
    units = tiles * splits
    b = cdiv(units, SMS)
    rounds = b // occ + min(1.0, (b % occ) / (occ * PARTIAL_EFFICIENCY))
    time = rounds * (steps + BLOCK_OVERHEAD_STEPS)
    split = SPLIT_STEPS * units / (SMS * occ) + SPLIT_LAUNCH_STEPS if splits > 1 else 0.0
    weight = occ * bm * bn / (OCC[0] * SHAPES[0][0] * SHAPES[0][1])
    return dict(shape=shape, splits=splits, steps=steps, tiles=tiles, units=units, b=b, occ=occ,
                time=(time + split) * weight, split=split * weight, rows_used=min(bm, m) / bm)


def plan(layer: str) -> dict:
    """plan(): the (shape, splits) of least modelled time; ties to the first shape and fewer splits."""
    m, n, k = gemm(layer)
    k_steps = cdiv(k, BLOCK_K)
    best = None
    for shape in range(len(SHAPES)):
        for splits in range(1, min(MAX_SPLITS, k_steps) + 1):
            steps = cdiv(k_steps, splits)
            if cdiv(k_steps, steps) != splits:
                continue
            o = option(m, n, k, shape, splits)
            if best is None or o["time"] < best["time"]:
                best = o
    return best


def _timeline(ax, o: dict, t_max: float, title: str) -> None:
    """Each row an SM; its blocks in rounds of occ, dark when the round is full, light when not."""
    ax.set_xlim(0, t_max * 1.02)
    ax.set_ylim(SMS, 0)
    ax.set_yticks([0, SMS // 2, SMS - 1])
    ax.set_yticklabels(["SM 0", f"SM {SMS // 2}", f"SM {SMS - 1}"], fontsize=7)
    ax.tick_params(axis="x", labelsize=7)
    ax.set_facecolor(IDLE_ROWS)
    occ = o["occ"]
    round_len = o["steps"] + BLOCK_OVERHEAD_STEPS
    end_all = 0.0
    for sm in range(SMS):
        blocks = o["units"] // SMS + (1 if sm < o["units"] % SMS else 0)  # one block per SM first
        t = 0.0
        for r in range(blocks // occ):
            ax.add_patch(Rectangle((t, sm), round_len, 1, fc=FULL if r % 2 == 0 else FULL_ALT, lw=0))
            t += round_len
        if blocks % occ:
            length = round_len * min(1.0, (blocks % occ) / (occ * PARTIAL_EFFICIENCY))
            ax.add_patch(Rectangle((t, sm), length, 1, fc=PARTIAL, lw=0))
            t += length
        end_all = max(end_all, t)
    if o["split"]:
        ax.add_patch(Rectangle((end_all, 0), o["split"], SMS, fc=SPLIT, lw=0))
    bm, bn = SHAPES[o["shape"]]
    idle_rows = "" if o["rows_used"] == 1 else f" ({o['rows_used']:.0%} of each tile's rows are filters)"
    ax.set_title(f"{title}: {bm}×{bn} tiles, {o['splits']} split{'s' if o['splits'] > 1 else ''} of "
                 f"{o['steps']} K steps → {o['units']} blocks\nmodelled time {o['time']:.1f} K steps{idle_rows}",
                 fontsize=8.5, loc="left")


def tile_rule(path: Path) -> None:
    fig = plt.figure(figsize=(16, 13))
    gs = fig.add_gridspec(len(DRAWN) + 1, 2, height_ratios=[1] * len(DRAWN) + [1.15], hspace=0.55, wspace=0.08)
    for i, layer in enumerate(DRAWN):
        m, n, k = gemm(layer)
        before = option(m, n, k, 0, 1)  # chapter 19: 128 x 128, no split
        after = plan(layer)
        t_max = max(before["time"], after["time"])
        ax0, ax1 = fig.add_subplot(gs[i, 0]), fig.add_subplot(gs[i, 1])
        _timeline(ax0, before, t_max, f"{layer} ({m}×{n}×{k}), chapter 19's grid")
        _timeline(ax1, after, t_max, "the rule's choice")
        ax1.set_yticklabels([])
        ax0.set_xlabel("K steps of a full SM", fontsize=7)
        ax1.set_xlabel("K steps of a full SM", fontsize=7)
    handles = [Rectangle((0, 0), 1, 1, fc=c) for c in (FULL, PARTIAL, SPLIT, IDLE_ROWS)]
    fig.legend(handles, ["a round: 2 blocks on the SM at once", "a partial round: 1 block (at 80% of a full "
                         "round's rate, the rule assumes)", "split-K: partial outputs written, read back, summed",
                         "idle"], loc="upper center", ncol=4, fontsize=9, frameon=False, bbox_to_anchor=(0.5, 0.94))

    # The whole layer table: what the rule picks on this GPU, and what that does to the blocks.
    ax = fig.add_subplot(gs[len(DRAWN), :])
    head = ["layer", "GEMM M×N×K", "K steps", "128×128 tiles", "shape", "splits", "blocks",
            "busiest SM", "time, ch. 18's grid", "time, chosen"]
    rows = []
    for layer in LAYERS:
        m, n, k = gemm(layer)
        before, after = option(m, n, k, 0, 1), plan(layer)
        bm, bn = SHAPES[after["shape"]]
        rows.append([layer, f"{m}×{n}×{k}", str(cdiv(k, BLOCK_K)), str(before["tiles"]), f"{bm}×{bn}",
                     str(after["splits"]), str(after["units"]), str(after["b"]), f"{before['time']:.1f}",
                     f"{after['time']:.1f}"])
    summary_table(ax, head, rows, f"plan() on every layer, for {SMS} SMs and 2 blocks per SM ({SMS * 2} slots): blocks launched, "
                 "blocks on the busiest SM, modelled times in K steps of a full SM")
    fig.suptitle("Chapter 20's tile rule: fill the SMs. Each row of a timeline is one SM, as the rule models it",
                 fontsize=12, y=0.965)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"tile-rule.png": tile_rule}
