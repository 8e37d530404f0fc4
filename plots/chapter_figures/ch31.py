"""Chapter 31: log_softmax by lane groups. Which doubles of Z one warp load touches (one thread per row
against 16 lanes per row), the butterfly reduction inside a group of 16 lanes, the log computed once per
group for its four rows, and the predicted time of each limit.

The predicted times are arithmetic from the chapter's counts (bytes; instructions per warp from
cuobjdump -sass of the sm_90 build, the README's table), not measurements.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cells, lane_color  # noqa: E402

CHAPTER = "31_log_softmax"

# chapters/31_log_softmax/kernel.cuh at F = 16.
F = 16  # F_out: doubles per row, 128 bytes
GROUP = 16  # lanes per row
NUM_THREADS = 256  # NUM_THREADS
ROWS_PER_LANE = 4  # ROWS_PER_LANE
GROUPS_PER_BLOCK = NUM_THREADS // GROUP  # 16: a block's rows at one load, and the stride between loads

# The default graph (docs/gcn-layer.md) and the H100 of the README.
V = 281903
COPY_TBPS = 3.0  # about the device-to-device copy rate
SUB_PARTITIONS = 132 * 4
CLOCK_GHZ = 1.98  # H100 SXM boost clock
# Per warp of 8 rows (2 per load, 4 loads), executed on the fast path (cuobjdump -sass, sm_90; the
# README's table): all instructions and those on the FP64 pipe (2 cycles per warp instruction).
INSTR_SHARED_LOG, FP64_SHARED_LOG = 478, 130
INSTR_LOG_PER_LANE, FP64_LOG_PER_LANE = 695, 220

SECTOR_COLOUR = "#d62728"


def _us(cycles: float) -> float:
    return cycles / (CLOCK_GHZ * 1e3)


def predicted_times() -> dict[str, float]:
    """Microseconds per limit on the default graph (the README's prediction)."""
    warps = V / (2 * ROWS_PER_LANE) / SUB_PARTITIONS  # warps of 8 rows per sub-partition: 66.7
    return {
        "memory: 72.2 MB at 3.0 TB/s": 2 * V * F * 8 / (COPY_TBPS * 1e12) * 1e6,
        "issue, log shared (this step)": _us(warps * INSTR_SHARED_LOG),
        "issue, a log per lane and row": _us(warps * INSTR_LOG_PER_LANE),
        "FP64 pipe, log shared": _us(warps * FP64_SHARED_LOG * 2),
        "FP64 pipe, a log per lane and row": _us(warps * FP64_LOG_PER_LANE * 2),
    }


def _rows_panel(ax, title, naive: bool):
    rows = 32
    ax.set_xlim(-0.5, F + 9)
    ax.set_ylim(rows + 0.5, -0.8)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([0, 8, 16, 24, 31])
    ax.tick_params(labelsize=7)
    ax.set_ylabel("row of Z (node)", fontsize=8)
    ax.set_title(title, fontsize=9.5)
    cells(ax, 0, 0, rows, F)
    if naive:
        # one thread per row: load c of warp 0 reads column c of rows 0..31 (drawn: c = 0, then c = 1 faded)
        for lane in range(WARP):
            ax.add_patch(Rectangle((0, lane), 1, 1, color=lane_color(lane)))
            ax.add_patch(Rectangle((1, lane), 1, 1, color=lane_color(lane), alpha=0.3))
            ax.add_patch(Rectangle((0, lane), 4, 1, fill=False, ec=SECTOR_COLOUR, lw=0.9))
        ax.text(F + 0.6, 4, "warp 0, its first load:\nlane l reads z[l][0]\n\n32 rows, 32 lines of\n128 B, "
                "8 B used of\neach 32-B sector\n(red): 32 sectors\nper request", fontsize=7.5, va="top")
        ax.text(F + 0.6, 20, "its next 15 loads\n(faded: the second)\nfind the same lines\nin L1, if they\n"
                "are still there", fontsize=7.5, va="top")
    else:
        for i in range(2):  # loads i = 0, 1 of the block (rows 16 i .. 16 i + 15); 2 and 3 are below
            for w in range(NUM_THREADS // WARP):
                for g in range(WARP // GROUP):
                    row = i * GROUPS_PER_BLOCK + w * (WARP // GROUP) + g
                    for c in range(F):
                        lane = g * GROUP + c
                        if w == 0:
                            ax.add_patch(Rectangle((c, row), 1, 1, color=lane_color(lane)))
                        else:
                            ax.add_patch(Rectangle((c, row), 1, 1, color=plt.get_cmap("Greys")(0.15 + 0.08 * w)))
            ax.add_patch(Rectangle((0, i * GROUPS_PER_BLOCK), F, 2, fill=False, ec=SECTOR_COLOUR, lw=1.4))
            for w in range(1, NUM_THREADS // WARP):
                ax.text(F / 2, i * GROUPS_PER_BLOCK + 2 * w + 1, f"warp {w}", fontsize=6, ha="center",
                        va="center", color="#333333")
        ax.text(F + 0.6, 0.2, "warp 0, load i = 0:\nlanes 0–15 row 0,\nlanes 16–31 row 1:\n256 contiguous B,\n"
                "8 sectors per\nrequest", fontsize=7.5, va="top")
        ax.text(F + 0.6, 16.2, "load i = 1: rows\n16–17, 16 rows\n(one block's\ngroups) further;\ni = 2, 3: rows\n"
                "32–33, 48–49", fontsize=7.5, va="top")
    ax.set_xlabel(f"column (feature) → {F} doubles = 128 B per row", fontsize=8)


def _butterfly(ax):
    steps = [GROUP // 2 >> s for s in range(4)]  # 8, 4, 2, 1
    ax.set_xlim(-1.2, 4.9)
    ax.set_ylim(GROUP - 0.3, -1.6)
    ax.axis("off")
    ax.set_title("(3) max and sum inside a group: __shfl_xor_sync,\noffsets 8, 4, 2, 1; lane l pairs with l ^ offset",
                 fontsize=9.5)
    for col in range(5):
        for lane in range(GROUP):
            ax.plot(col, lane, "o", ms=6.5, color=lane_color(lane), zorder=3)
    for s, off in enumerate(steps):
        for lane in range(GROUP):
            partner = lane ^ off
            ax.plot([s, s + 1], [partner, lane], color="#888888", lw=0.6, zorder=1)
        ax.text(s + 0.5, -0.9, f"xor {off}", ha="center", fontsize=8)
    for lane in range(GROUP):
        ax.text(-0.45, lane, f"{lane}", ha="right", va="center", fontsize=6.5)
    ax.text(4.25, GROUP / 2 - 0.5, "every lane\nholds the\nsame bits:\nm, then s", fontsize=7.5, va="center")


def _log_sharing(ax):
    ax.set_xlim(-2.2, GROUP + 0.5)
    ax.set_ylim(10.3, -1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("(4) the log, once per group: after the sums every lane of a\ngroup holds s_0..s_3 of its 4 rows; "
                 "lane c takes log(s_{c % 4})", fontsize=9.5)
    for i in range(ROWS_PER_LANE):
        ax.text(-0.3, i + 0.5, f"s_{i}", ha="right", va="center", fontsize=8)
        for c in range(GROUP):
            mine = c % ROWS_PER_LANE == i
            ax.add_patch(Rectangle((c, i), 1, 1, fc=lane_color(c) if mine else "#eeeeee", ec="#bbbbbb", lw=0.4))
    for c in range(GROUP):
        ax.text(c + 0.5, -0.4, f"{c}", ha="center", fontsize=6.5)
    ax.text(GROUP / 2, 4.7, "one log sequence (30 FP64 instructions) for 4 rows:\nlanes 0–3 compute log(s_0)…log(s_3); "
            "lanes 4–15 repeat it,\nat no extra cost (a warp instruction is issued once)", ha="center", va="top",
            fontsize=7.5)
    for i in range(ROWS_PER_LANE):
        y = 7.2 + i * 0.75
        ax.text(0, y, f"every lane:  log_sum[{i}] = __shfl_sync(FULL_MASK, l, {i}, GROUP)   (lane {i} of its group)",
                fontsize=8, va="center", color="#333333", family="monospace")


def _bars(ax):
    times = predicted_times()
    names = list(times)
    colours = ["#3182bd", "#31a354", "#a1d99b", "#e6550d", "#fdae6b"]
    ax.barh(range(len(names)), [times[n] for n in names], color=colours, height=0.6)
    for k, n in enumerate(names):
        ax.text(times[n] + 0.3, k, f"{times[n]:.1f} µs", va="center", fontsize=8)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(times.values()) * 1.25)
    ax.set_xlabel(f"predicted µs on the default graph (V = {V}, F = {F}), {CLOCK_GHZ} GHz, {SUB_PARTITIONS} "
                  "sub-partitions", fontsize=8)
    ax.set_title("(5) which limit: memory, issue slots or the FP64 pipe\n(counts from cuobjdump, not measured)",
                 fontsize=9.5)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def lane_groups(path: Path) -> None:
    fig = plt.figure(figsize=(15, 11))
    gs = fig.add_gridspec(2, 3, height_ratios=[1.45, 1], hspace=0.18, wspace=0.18)
    _rows_panel(fig.add_subplot(gs[0, 0]), "(1) naive: one thread per row", naive=True)
    _rows_panel(fig.add_subplot(gs[0, 1]), "(2) this step: 16 lanes per row, 2 rows per warp", naive=False)
    _butterfly(fig.add_subplot(gs[0, 2]))
    _log_sharing(fig.add_subplot(gs[1, 0:2]))
    _bars(fig.add_subplot(gs[1, 2]))
    fig.suptitle("log_softmax of 16 doubles per row: lane groups, butterfly reductions, one log per group",
                 fontsize=12, y=0.95)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"lane-groups.png": lane_groups}
