"""Chapter 09: the double-buffered K loop as a timeline, against chapter 08's."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

CHAPTER = "09_double_buffering"

K_STEPS = 5  # K steps drawn in the timeline (any small number)

STAGE_COLOURS = {"load": "#f4a259", "math": "#5b8e7d", "store": "#8cb8d8", "bar": "#444444"}


def _timeline(ax, double: bool) -> None:
    """One lane of time per resource: the global loads, the math, and the two shared buffers."""
    ax.set_xlim(-0.2, K_STEPS * 4.2 + 0.4)
    ax.set_ylim(-0.3, 4.2)
    ax.axis("off")
    lanes = {"global loads\n(registers)": 3.3, "math (FFMA)": 2.3, "shared buffer 0": 1.3, "shared buffer 1": 0.3}
    for name, y in lanes.items():
        ax.text(-0.3, y + 0.3, name, ha="right", va="center", fontsize=8)
        ax.plot([0, K_STEPS * 4.2], [y - 0.05, y - 0.05], color="#dddddd", lw=0.6)

    def box(x, w, lane, colour, text):
        y = lanes[lane]
        ax.add_patch(Rectangle((x, y), w, 0.6, fc=colour, ec="white", lw=1))
        if text:
            ax.text(x + w / 2, y + 0.3, text, ha="center", va="center", fontsize=7, color="white")

    def barrier(x):
        ax.plot([x, x], [0.1, 4.0], color=STAGE_COLOURS["bar"], lw=1.4, ls=(0, (3, 2)))

    x = 0.0
    if not double:
        # Chapter 08: load, barrier, math, barrier, for every K step; the math waits for the load.
        for k in range(K_STEPS):
            box(x, 1.2, "global loads\n(registers)", STAGE_COLOURS["load"], f"load k{k}")
            box(x + 1.2, 0.4, "shared buffer 0", STAGE_COLOURS["store"], "st")
            barrier(x + 1.65)
            box(x + 1.7, 2.0, "math (FFMA)", STAGE_COLOURS["math"], f"math k{k}")
            box(x + 1.7, 2.0, "shared buffer 0", "#b9cfdd", f"read k{k}")
            barrier(x + 3.75)
            x += 3.8
        ax.set_title("chapter 08: one buffer, two barriers per K step; the math waits for every load",
                     fontsize=9, loc="left")
    else:
        # Chapter 09: the loads of step k+1 are issued before the math of step k, stored after it.
        box(x, 1.2, "global loads\n(registers)", STAGE_COLOURS["load"], "load k0")
        box(x + 1.2, 0.4, "shared buffer 0", STAGE_COLOURS["store"], "st")
        barrier(x + 1.65)
        x += 1.7
        for k in range(K_STEPS):
            buf = "shared buffer 0" if k % 2 == 0 else "shared buffer 1"
            other = "shared buffer 1" if k % 2 == 0 else "shared buffer 0"
            if k + 1 < K_STEPS:
                box(x, 2.0, "global loads\n(registers)", STAGE_COLOURS["load"], f"load k{k + 1} (in flight)")
            box(x + 0.05, 2.0, "math (FFMA)", STAGE_COLOURS["math"], f"math k{k}")
            box(x + 0.05, 2.0, buf, "#b9cfdd", f"read k{k}")
            if k + 1 < K_STEPS:
                box(x + 2.1, 0.4, other, STAGE_COLOURS["store"], "st")
                barrier(x + 2.55)
                x += 2.6
            else:
                x += 2.1
        ax.set_title("chapter 09: two buffers, one barrier per K step; the loads of step k+1 fly during "
                     "the math of step k", fontsize=9, loc="left")
    ax.text(K_STEPS * 4.2 + 0.3, 2.6, "time \u2192", fontsize=8, ha="right", va="bottom", color="#666666")


def timeline(path: Path) -> None:
    fig, axes = plt.subplots(2, 1, figsize=(13, 6.2))
    _timeline(axes[0], double=False)
    _timeline(axes[1], double=True)
    handles = [Rectangle((0, 0), 1, 1, fc=c) for c in STAGE_COLOURS.values()]
    fig.legend(handles, ["global-load stage (LDG into registers)", "math on a shared buffer",
                         "shared-store stage (STS)", "__syncthreads()"],
               loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0.08, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {"double-buffer-timeline.png": timeline}
