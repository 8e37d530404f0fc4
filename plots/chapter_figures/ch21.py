"""Chapter 21: where the epilogue runs. On seed_3x3, chapter 20 + a separate bias/ReLU kernel (left)
against chapter 21's fused kernel (right), drawn as data flow between global memory and the SMs, each
arrow that crosses over as wide as the bytes it moves; below, the DRAM traffic of the four pipelines.

The byte counts are computed here from the layer's shape, as the chapter's README computes them
(each tensor counted once, MB = 10^6 bytes, FP32). No measurement.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch  # noqa: E402

CHAPTER = "21_fused_epilogue"

# seed_3x3, the headline layer: N, C, H = W, K, R = S, pad 1, stride 1.
N, C, H, K, R = 128, 64, 56, 128, 3
PAD, STRIDE = 1, 1
P = (H + 2 * PAD - R) // STRIDE + 1  # 56
FLOAT_BYTES = 4
MB = 1e6


def _mb(floats: int) -> float:
    return floats * FLOAT_BYTES / MB


X_MB = _mb(N * C * H * H)  # 102.8
W_MB = _mb(K * C * R * R)  # 0.3
Y_MB = _mb(N * K * P * P)  # 205.5 (the residual is laid out like y: the same)
BIAS_MB = _mb(K)  # 0.0005
CONV_MB = X_MB + W_MB + Y_MB  # 308.6: the convolution alone, and the fused step (+ the bias)
SECOND_PASS_MB = 2 * Y_MB + BIAS_MB  # 411.0: the separate kernel reads y and writes it again

# Colours: one per tensor, the same in the diagrams and in the bars.
X_COLOUR = "#6baed6"
W_COLOUR = "#fd8d3c"
Y_COLOUR = "#cb181d"
BIAS_COLOUR = "#31a354"
RESIDUAL_COLOUR = "#756bb1"
KERNEL_FC = "#f0f0f0"
REGISTER_FC = "#fff5d6"
MEMORY_FC = "#ffffff"

# Diagram coordinates: memory on the left (x < BOUNDARY), the SMs on the right; y grows downwards. Both
# panels put the functors, and the tensors they read, on the same rows, so that they can be compared.
MEM_X0, MEM_X1 = 0.0, 3.0
BOUNDARY = 4.05
SM_X0, SM_X1 = 5.2, 9.9
IN_X0, IN_X1 = SM_X0 + 0.3, SM_X1 - 0.3  # the steps inside a kernel
ROWS = {  # (top, bottom) of each step
    "main loop": (0.85, 1.7),
    "bias": (5.2, 5.8),
    "residual": (6.15, 6.75),
    "relu": (7.1, 7.7),
    "store": (8.4, 9.2),
}
WIDEST_ARROW = 16.0  # points of arrow width for y's 205.5 MB; the others in proportion
THINNEST_ARROW = 1.2
POINTS_PER_UNIT = 50.0  # about, vertically, at the figure's size: to keep labels clear of wide arrows
DASHED = (0, (4, 2))


def _mid(row: str) -> float:
    return sum(ROWS[row]) / 2


def _box(ax, x0, y0, x1, y1, text, fc, ec="#555555", ls="-", fontsize=9, weight="normal", lw=1.0):
    ax.add_patch(FancyBboxPatch((x0, y0), x1 - x0, y1 - y0, boxstyle="round,pad=0.02,rounding_size=0.12",
                                fc=fc, ec=ec, ls=ls, lw=lw))
    if text:
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, text, ha="center", va="center", fontsize=fontsize, fontweight=weight)


def _flow(ax, start, end, mb, colour, label, dashed=False):
    """A DRAM transfer: an arrow whose width is proportional to its bytes, labelled above its middle."""
    width = max(THINNEST_ARROW, WIDEST_ARROW * mb / Y_MB)
    head = width + 8
    style = f"simple,tail_width={width},head_width={head},head_length={7 + width * 0.35}"
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=1, shrinkA=0, shrinkB=0,
                                 fc="none" if dashed else colour, ec=colour, lw=1.3 if dashed else 0,
                                 ls=DASHED if dashed else "-", alpha=1.0 if dashed else 0.85))
    x = (start[0] + end[0]) / 2
    y = (start[1] + end[1]) / 2 - head / 2 / POINTS_PER_UNIT - 0.06
    ax.text(x, y, label, ha="center", va="bottom", fontsize=8.5, color=colour, fontweight="bold",
            bbox=dict(fc="white", ec="none", pad=0.6))


def _step(ax, x, y0, y1):
    """An arrow inside the SM: registers to registers, no memory traffic."""
    ax.add_patch(FancyArrowPatch((x, y0), (x, y1), arrowstyle="-|>", mutation_scale=11, lw=1.1, color="#444444",
                                 shrinkA=0, shrinkB=0))


def _frame(ax, title):
    ax.set_xlim(-0.15, 10.05)
    ax.set_ylim(9.75, -0.9)
    ax.axis("off")
    ax.set_title(title, fontsize=10.5, loc="left")
    ax.plot([BOUNDARY, BOUNDARY], [-0.45, 9.6], color="#999999", lw=1.0, ls=(0, (5, 3)), zorder=0)
    ax.text((MEM_X0 + MEM_X1) / 2, -0.55, "global memory (DRAM)", ha="center", va="center", fontsize=9.5,
            color="#555555", fontweight="bold")
    ax.text((SM_X0 + SM_X1) / 2, -0.55, "the SMs (registers)", ha="center", va="center", fontsize=9.5,
            color="#555555", fontweight="bold")


def _kernel(ax, top, bottom, name, detail):
    _box(ax, SM_X0, top, SM_X1, bottom, "", KERNEL_FC)
    ax.text(SM_X0 + 0.15, top + 0.1, name, fontsize=9.5, fontweight="bold", va="top")
    ax.text(SM_X0 + 0.15, top + 0.42, detail, fontsize=8, va="top", color="#555555")


def _inputs(ax):
    """x and w, and their reads by the main loop: the same in both pipelines."""
    _box(ax, MEM_X0, 0.25, MEM_X1, 1.15, f"x   N·C·H·W\n{X_MB:.1f} MB", MEMORY_FC, ec=X_COLOUR, lw=2)
    _box(ax, MEM_X0, 1.45, MEM_X1, 2.0, f"w   {W_MB:.1f} MB", MEMORY_FC, ec=W_COLOUR, lw=2)
    _flow(ax, (MEM_X1 + 0.05, 0.7), (SM_X0 - 0.05, 1.0), X_MB, X_COLOUR, f"x read {X_MB:.1f}")
    _flow(ax, (MEM_X1 + 0.05, 1.72), (SM_X0 - 0.05, 1.45), W_MB, W_COLOUR, f"w read {W_MB:.1f}")


def _step_box(ax, row, text, ec="#555555", ls="-", fontsize=9):
    _box(ax, IN_X0, ROWS[row][0], IN_X1, ROWS[row][1], text, REGISTER_FC, ec=ec, ls=ls, lw=1.5, fontsize=fontsize)


def _chain(ax, store_text):
    """Bias -> Residual -> Relu -> the store, on the rows of ROWS, with the tensors they read."""
    cx = (IN_X0 + IN_X1) / 2
    _step_box(ax, "bias", "Bias:  v + bias[k]", ec=BIAS_COLOUR)
    _step(ax, cx, ROWS["bias"][1], ROWS["residual"][0])
    _step_box(ax, "residual", "Residual:  v + residual[offset]", ec=RESIDUAL_COLOUR, ls=DASHED)
    _step(ax, cx, ROWS["residual"][1], ROWS["relu"][0])
    _step_box(ax, "relu", "Relu:  v < 0 ? 0 : v")
    _step(ax, cx, ROWS["relu"][1], ROWS["store"][0])
    _step_box(ax, "store", store_text, fontsize=8.5)
    _box(ax, MEM_X0, ROWS["bias"][0], MEM_X1, ROWS["bias"][1], f"bias   K floats, {BIAS_MB:.4f} MB", MEMORY_FC,
         ec=BIAS_COLOUR, lw=2, fontsize=8.5)
    _box(ax, MEM_X0, ROWS["residual"][0] - 0.1, MEM_X1, ROWS["residual"][1] + 0.1,
         f"residual (--residual only)\n{Y_MB:.1f} MB, laid out like y", MEMORY_FC, ec=RESIDUAL_COLOUR, ls=DASHED,
         lw=1.6, fontsize=8.5)
    _flow(ax, (MEM_X1 + 0.05, _mid("bias")), (IN_X0 - 0.03, _mid("bias")), BIAS_MB, BIAS_COLOUR,
          f"bias read {BIAS_MB:.4f}")
    _flow(ax, (MEM_X1 + 0.05, _mid("residual")), (IN_X0 - 0.03, _mid("residual")), Y_MB, RESIDUAL_COLOUR,
          f"residual read {Y_MB:.1f}", dashed=True)


def _y_box(ax, top, bottom, text):
    _box(ax, MEM_X0, top, MEM_X1, bottom, text, MEMORY_FC, ec=Y_COLOUR, lw=2.4)


def _unfused(ax):
    _frame(ax, f"chapter 20 + a separate bias/ReLU kernel: y makes a round trip\n"
               f"DRAM traffic {CONV_MB:.1f} + {SECOND_PASS_MB:.1f} = {CONV_MB + SECOND_PASS_MB:.1f} MB "
               f"(with the residual {CONV_MB + SECOND_PASS_MB + Y_MB:.1f} MB)")
    # Kernel 1: chapter 20, no epilogue; y goes to memory.
    _kernel(ax, 0.1, 3.2, "chapter 20's kernel", "double_buffered_implicit_gemm_kernel")
    _step_box(ax, "main loop", "main loop: acc[8][8] += w · x\n(64 results per thread)", fontsize=8.5)
    _step(ax, (IN_X0 + IN_X1) / 2, ROWS["main loop"][1], 2.25)
    _box(ax, IN_X0, 2.25, IN_X1, 2.95, "store acc to y (STG.E.128)", REGISTER_FC, lw=1.5, fontsize=8.5)
    _inputs(ax)
    _y_box(ax, 2.45, 4.55, f"y   N·K·P·Q\n= {N}·{K}·{P}·{P} floats\n{Y_MB:.1f} MB\nwritten, then read back")
    _flow(ax, (SM_X0 - 0.05, 2.6), (MEM_X1 + 0.05, 2.95), Y_MB, Y_COLOUR, f"y written {Y_MB:.1f}")

    # Kernel 2: the same functors, applied to y in place.
    _kernel(ax, 3.45, 9.55, "epilogue_kernel", "a second launch: the same functors, on y")
    _box(ax, IN_X0, 4.25, IN_X1, 4.8, "load y (float4)", REGISTER_FC, lw=1.5, fontsize=8.5)
    _flow(ax, (MEM_X1 + 0.05, 4.15), (IN_X0 - 0.03, 4.5), Y_MB, Y_COLOUR, f"y read {Y_MB:.1f}")
    _step(ax, (IN_X0 + IN_X1) / 2, 4.8, ROWS["bias"][0])
    _chain(ax, "store y (float4)")
    _y_box(ax, 7.95, 9.55, f"y again (same buffer)\n{Y_MB:.1f} MB\noverwritten in place")
    _flow(ax, (IN_X0 - 0.03, _mid("store")), (MEM_X1 + 0.05, _mid("store")), Y_MB, Y_COLOUR,
          f"y written {Y_MB:.1f}")


def _fused(ax):
    _frame(ax, f"chapter 21: the epilogue runs on the accumulators, before the one store of y\n"
               f"DRAM traffic {CONV_MB:.1f} MB (with the residual {CONV_MB + Y_MB:.1f} MB): "
               f"{SECOND_PASS_MB:.1f} MB = 2 × y less")
    _kernel(ax, 0.1, 9.55, "chapter 21's kernel", "fused_implicit_gemm_kernel<…, Epilogue>")
    _step_box(ax, "main loop", "main loop, unchanged:\nacc[8][8] += w · x (64 per thread)", fontsize=8.5)
    _inputs(ax)
    cx = (IN_X0 + IN_X1) / 2
    _step(ax, cx, ROWS["main loop"][1], 2.1)
    ax.text(cx, 2.2, "still in registers, each result v\nof filter k, bound for y[offset],\ngoes through "
            "epi(v, k, offset) =", ha="center", va="top", fontsize=8.5, color="#333333")
    ax.text(cx, 3.2, "Chain<Chain<Bias, Residual>, Relu>\nor, without --residual,\nChain<Bias, Relu>",
            ha="center", va="top", fontsize=8, color="#333333", family="monospace")
    _step(ax, cx, 4.0, ROWS["bias"][0])
    _chain(ax, "store y (STG.E.128):\nthe one store, as in chapter 20")
    _y_box(ax, 7.95, 9.55, f"y   N·K·P·Q\n= {N}·{K}·{P}·{P} floats\n{Y_MB:.1f} MB, written once")
    _flow(ax, (IN_X0 - 0.03, _mid("store")), (MEM_X1 + 0.05, _mid("store")), Y_MB, Y_COLOUR,
          f"y written {Y_MB:.1f}")


def _traffic(ax):
    """The DRAM traffic of the four pipelines as stacked bars (the bias's 512 bytes are too small to see)."""
    pieces = {
        "x + w read": (X_MB + W_MB, X_COLOUR, None),
        "y written by the convolution": (Y_MB, Y_COLOUR, None),
        "residual read": (Y_MB, RESIDUAL_COLOUR, None),
        "second pass: y read back": (Y_MB, "#fc9272", "//"),
        "second pass: y written again": (Y_MB, "#fcbba1", "\\\\"),
    }
    bars = [
        ("chapter 20 + bias/ReLU kernel", ["x + w read", "y written by the convolution", "second pass: y read back",
                                           "second pass: y written again"]),
        ("chapter 21, fused", ["x + w read", "y written by the convolution"]),
        ("with --residual: chapter 20 + kernel", ["x + w read", "y written by the convolution", "residual read",
                                                  "second pass: y read back", "second pass: y written again"]),
        ("with --residual: chapter 21, fused", ["x + w read", "residual read", "y written by the convolution"]),
    ]
    unfused_total = 0.0
    for row, (name, parts) in enumerate(bars):
        left = 0.0
        for part in parts:
            mb, colour, hatch = pieces[part]
            ax.barh(row, mb, left=left, color=colour, hatch=hatch, edgecolor="white", lw=0.8, height=0.62)
            left += mb
        total = left + BIAS_MB  # every pipeline reads the bias once
        if "fused" in name:  # the bar above it is the same pipeline unfused
            note = f"  (= {unfused_total:.1f} − {unfused_total - total:.1f}: no second pass)"
        else:
            note, unfused_total = "", total
        ax.text(left + 8, row, f"{total:.1f} MB{note}", va="center", fontsize=9, fontweight="bold")
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars], fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, (CONV_MB + SECOND_PASS_MB + Y_MB) * 1.1)
    ax.set_xlabel("MB moved to or from DRAM on seed_3x3 (each tensor counted once; MB = 10⁶ bytes)", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    handles = [Patch(fc=c, hatch=h, ec="white", label=n) for n, (_, c, h) in pieces.items()]
    ax.legend(handles=handles, fontsize=8.5, ncol=5, frameon=False, loc="upper center",
              bbox_to_anchor=(0.5, -0.32))


def data_flow(path: Path) -> None:
    fig = plt.figure(figsize=(15, 11.5))
    gs = fig.add_gridspec(2, 2, height_ratios=[3.4, 1], hspace=0.16, wspace=0.08, top=0.88)
    _unfused(fig.add_subplot(gs[0, 0]))
    _fused(fig.add_subplot(gs[0, 1]))
    _traffic(fig.add_subplot(gs[1, :]))
    fig.suptitle(f"y = max(conv(x, w) + bias[k] (+ residual), 0) on seed_3x3 (N = {N}, C = {C}, {H}×{H}, "
                 f"K = {K}, {R}×{R}), unfused and fused\nevery arrow that crosses the dashed line is DRAM traffic, "
                 "as wide as the bytes it moves (MB)", fontsize=12, y=0.965)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


FIGURES = {"fused-epilogue-flow.png": data_flow}
