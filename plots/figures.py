#!/usr/bin/env python3
"""The explanatory pictures of the chapters (thread mappings, tiles, bank layouts) and of the
background pages in docs/.

    python plots/figures.py [--chapters-dir chapters] [--docs-dir docs] [--only 01_naive_gemm docs]

Each chapter figure is drawn from the chapter's tunables as written here, into
chapters/<name>/<file>.png; each docs figure into docs/<file>.png. They depend on no measurement;
`make figures` redraws them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # chapter_figures
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from chapter_figures._draw import WARP, cell_grid, lane_color  # noqa: E402


def ch01_thread_mapping(path: Path) -> None:
    """Chapter 01: threadIdx.x walks the rows of C, so a warp is a column of C and reads 32 rows of A."""
    block = 32  # BLOCK_X = BLOCK_Y = 32 in chapters/01_naive_gemm/kernel.cuh
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.6), gridspec_kw=dict(width_ratios=[1, 1, 1.6]))

    # (1) The C tile of one block: warp w = threadIdx.y holds lanes x = 0..31, i.e. column w of the tile.
    ax = axes[0]
    cell_grid(ax, block, block, "(1) C tile of one 32×32 block:\nwarp w (threadIdx.y = w) is COLUMN w,\nits lane = threadIdx.x is the row")
    for w in range(3):
        for lane in range(WARP):
            ax.add_patch(Rectangle((w, lane), 1, 1, color=lane_color(lane), alpha=1.0 if w == 0 else 0.35))
    ax.annotate("← warp 0 (bright); warps 1, 2 (faded)", (3.3, 16), fontsize=8, va="center")
    ax.set_xlabel("col (threadIdx.y)", fontsize=8)
    ax.set_ylabel("row (threadIdx.x)", fontsize=8)

    # (2) A: at step k, warp 0 reads A[row0 + lane][k]: one element in each of 32 rows.
    ax = axes[1]
    rows_a, cols_a, k = 32, 32, 5
    cell_grid(ax, rows_a, cols_a, f"(2) A (row-major) at loop step k = {k}:\nwarp 0 reads A[lane][k],\none element in each of 32 rows")
    for lane in range(WARP):
        ax.add_patch(Rectangle((k, lane), 1, 1, color=lane_color(lane)))
    ax.add_patch(Rectangle((0, 0), cols_a, 1, fill=False, ec="red", lw=1.2))
    ax.set_xlabel("k →   (red: row 0 of A, K consecutive floats in memory)", fontsize=8)

    # (3) The addresses of that one load instruction, laid out in memory: 32 sectors for 128 useful bytes.
    ax = axes[2]
    K = 4096
    ax.set_title(f"(3) the addresses of that one load instruction (K = {K}):\n"
                 "lane i reads byte 4·(i·K + k), so the warp touches\n32 separate 32-byte sectors and uses 4 bytes of each", fontsize=9)
    for lane in range(8):
        x = lane * 1.0
        ax.add_patch(Rectangle((x, 0), 0.8, 1, fc="#eeeeee", ec="#999999", lw=0.5))
        ax.add_patch(Rectangle((x + 0.1 * (k % 8), 0), 0.1, 1, color=lane_color(lane)))
        ax.annotate(f"row {lane}", (x + 0.4, 1.1), ha="center", fontsize=7)
        if lane < 7:
            ax.annotate("", xy=(x + 1.0, 0.5), xytext=(x + 0.8, 0.5), arrowprops=dict(arrowstyle="-", ls=":", lw=0.8))
    ax.annotate(f"… 24 more sectors;\neach {4 * K} bytes\nafter the previous", (8.1, 0.5), va="center", fontsize=8)
    ax.annotate("coalesced (chapter 02): 32 consecutive floats = 4 sectors, every byte used", (0, -0.6),
                fontsize=8, color="#2a7a2a")
    ax.annotate("B[k][col]: the same address for all 32 lanes, one broadcast", (0, -1.2), fontsize=8)
    ax.set_xlim(-0.2, 11.0)
    ax.set_ylim(-1.6, 2.0)
    ax.axis("off")

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# chapter folder -> {file name: drawing function}: chapter 01's here, the others' from the modules
# of plots/chapter_figures/ (one per chapter, each with CHAPTER and FIGURES).
FIGURES = {
    "01_naive_gemm": {"thread-mapping.png": ch01_thread_mapping},
}


def _collect_chapter_modules() -> None:
    import importlib
    import pkgutil

    import chapter_figures

    for info in sorted(pkgutil.iter_modules(chapter_figures.__path__), key=lambda m: m.name):
        if not info.name.startswith("ch"):
            continue  # helpers shared by the chapter modules
        module = importlib.import_module(f"chapter_figures.{info.name}")
        FIGURES.setdefault(module.CHAPTER, {}).update(module.FIGURES)


_collect_chapter_modules()
FIGURES = dict(sorted(FIGURES.items()))


def _collect_docs_figures() -> dict:
    from chapter_figures import conv_maps

    return {**conv_maps.FIGURES}


# docs/<file name> -> drawing function (`--only docs` draws just these)
DOC_FIGURES = _collect_docs_figures()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chapters-dir", type=Path, default=Path(__file__).resolve().parent.parent / "chapters")
    ap.add_argument("--docs-dir", type=Path, default=Path(__file__).resolve().parent.parent / "docs")
    ap.add_argument("--only", nargs="*", help="chapter folders to draw, or docs (default: all)")
    args = ap.parse_args(argv)
    for chapter, figs in FIGURES.items():
        if args.only and chapter not in args.only:
            continue
        folder = args.chapters_dir / chapter
        folder.mkdir(parents=True, exist_ok=True)
        for name, draw in figs.items():
            draw(folder / name)
            print(f"wrote {folder / name}")
    if not args.only or "docs" in args.only:
        args.docs_dir.mkdir(parents=True, exist_ok=True)
        for name, draw in DOC_FIGURES.items():
            draw(args.docs_dir / name)
            print(f"wrote {args.docs_dir / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
