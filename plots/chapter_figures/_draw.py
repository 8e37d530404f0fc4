"""Drawing helpers shared by figures.py and the chapter modules (not a chapter: no CHAPTER)."""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

WARP = 32
LANE_CMAP = plt.get_cmap("viridis")


def kernel_constants(kernel: Path, names, text: str | None = None, real: bool = False) -> dict:
    """The `constexpr int NAME = value;` lines of a chapter's kernel.cuh: name -> value (real: also
    `constexpr double`, values as floats). A missing name is an error naming the file."""
    text = kernel.read_text() if text is None else text
    kind, number = ("(?:int|double)", "[0-9.]+") if real else ("int", "[0-9]+")
    out = {}
    for name in names:
        m = re.search(rf"constexpr {kind} {name} = ({number});", text)
        if m is None:
            raise ValueError(f"{kernel}: no constexpr {'' if real else 'int '}{name}")
        out[name] = float(m.group(1)) if real else int(m.group(1))
    return out


def lane_color(lane: int):
    """The colour of lane 0..31, the same in every figure."""
    return LANE_CMAP(lane / (WARP - 1))


def cells(ax, x0: float, y0: float, rows: int, cols: int, lw: float = 0.2, ec: str = "#bbbbbb") -> None:
    """Outlines of a rows x cols grid of unit cells whose top-left corner is (x0, y0)."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c, y0 + r), 1, 1, fill=False, lw=lw, ec=ec))


def cell_grid(ax, rows: int, cols: int, title: str, fontsize: int = 9, margin: float = 0.0) -> None:
    """Axes showing a rows x cols grid of unit cells, row 0 at the top, no ticks."""
    ax.set_xlim(-margin, cols + margin)
    ax.set_ylim(rows + margin, -margin)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=fontsize)
    cells(ax, 0, 0, rows, cols)


def summary_table(ax, head: list[str], rows: list[list[str]], title: str) -> None:
    """A table of one row per problem filling the axes (the chapter figures' summary panels)."""
    ax.axis("off")
    table = ax.table(cellText=rows, colLabels=head, cellLoc="center", bbox=[0.0, 0.0, 1.0, 0.88])
    table.auto_set_font_size(False)
    table.set_fontsize(8.5)
    ax.set_title(title, fontsize=10)
