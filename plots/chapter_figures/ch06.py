"""Chapter 06: the float4 tile copy, the k-major (transposed) A tile, and the aligned vs guarded edges."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Rectangle  # noqa: E402
from chapter_figures._draw import WARP, cell_grid, lane_color  # noqa: E402

CHAPTER = "06_vectorized_loads"

# The tunables of chapters/06_vectorized_loads/kernel.cuh.
BLOCK_M = 128  # BLOCK_M
BLOCK_N = 128  # BLOCK_N
BLOCK_K = 16  # BLOCK_K
SUB_M = 4  # SUB_M
SUB_N = 4  # SUB_N
THREADS_N = 16  # THREADS_N = BLOCK_N / THREAD_N
NUM_THREADS = 256  # NUM_THREADS
VEC = 4  # VEC: floats per 128-bit access
SUB_STRIDE_M = 64  # SUB_STRIDE_M = THREADS_M * SUB_M
A_VECS_PER_ROW = BLOCK_K // VEC  # 4 float4s per row of A's tile
B_VECS_PER_ROW = BLOCK_N // VEC  # 32 float4s per row of B's tile
A_ROW_STEP = NUM_THREADS // A_VECS_PER_ROW  # A_ROW_STEP = 64
B_ROW_STEP = NUM_THREADS // B_VECS_PER_ROW  # B_ROW_STEP = 8

WARP_COLORS = plt.get_cmap("tab10")
HIGHLIGHT = "#d62728"


def a_copy(tid: int, l: int = 0) -> tuple[int, int]:
    """(row, first k) of the float4 of A's tile that thread tid copies in pass l (kernel: a_row, a_col)."""
    return tid // A_VECS_PER_ROW + l * A_ROW_STEP, (tid % A_VECS_PER_ROW) * VEC


def b_copy(tid: int, l: int = 0) -> tuple[int, int]:
    """(k, first column) of the float4 of B's tile that thread tid copies in pass l (kernel: b_row, b_col)."""
    return tid // B_VECS_PER_ROW + l * B_ROW_STEP, (tid % B_VECS_PER_ROW) * VEC


def _frame(ax, rows, cols, title):
    cell_grid(ax, rows, cols, title, fontsize=9, margin=0.5)


def _lane_color(tid: int):
    return lane_color(tid % WARP)


def float4_copy(path: Path) -> None:
    """Which thread copies which float4 of A's and B's tiles, and where A's lands in the k-major tile."""
    fig = plt.figure(figsize=(16, 8.8))
    gs = fig.add_gridspec(2, 2, width_ratios=[1, 2.1], height_ratios=[1.25, 1], hspace=0.12, wspace=0.08)

    # (1) A's tile in global memory, rows 0..15 of 128: warp 0 (threads 0..31) takes rows 0..7, 4 float4s each.
    ax = fig.add_subplot(gs[0, 0])
    rows_shown = 16
    _frame(ax, rows_shown, BLOCK_K, f"(1) A's {BLOCK_M}×{BLOCK_K} tile in global memory (rows 0–{rows_shown - 1} shown):\n"
           f"thread t copies ONE float4: row t / {A_VECS_PER_ROW}, k = {VEC}·(t % {A_VECS_PER_ROW}) … +3")
    ax.set_xlim(-0.5, BLOCK_K + 7.5)
    for tid in range(2 * WARP):
        r, k = a_copy(tid)
        if r >= rows_shown:
            continue
        alpha = 1.0 if tid < WARP else 0.3
        ax.add_patch(Rectangle((k, r), VEC, 1, fc=_lane_color(tid), alpha=alpha, ec="black", lw=0.8))
        ax.annotate(f"t{tid}", (k + VEC / 2, r + 0.55), ha="center", va="center", fontsize=7,
                    color="white" if tid % WARP < 20 else "black")
    ax.annotate("warp 0:\nrows 0–7,\n8 × 64 B", (BLOCK_K + 0.5, 4), fontsize=8, va="center")
    ax.annotate("warp 1\n(faded):\nrows 8–15", (BLOCK_K + 0.5, 12), fontsize=8, va="center")
    ax.set_xlabel(f"k → ({BLOCK_K} floats = 64 bytes of a row of A)\n"
                  f"rows 64–127: second pass (l = 1), same threads, row + {A_ROW_STEP}", fontsize=8)
    ax.set_ylabel("row of A's tile (m)", fontsize=8)

    # (2) The same floats in the k-major tile As[k][m]: each thread's float4 becomes a column of 4.
    ax = fig.add_subplot(gs[0, 1])
    cols_shown = 32
    _frame(ax, BLOCK_K, cols_shown, f"(2) As[{BLOCK_K}][{BLOCK_M}] in shared memory, k-major (columns m = 0–{cols_shown - 1} shown):\n"
           "thread t's float4 A[m][k…k+3] is stored DOWN column m as four scalar stores (the transpose)")
    for tid in range(2 * WARP):
        m, k = a_copy(tid)
        if m >= cols_shown:
            continue
        alpha = 1.0 if tid < WARP else 0.3
        ax.add_patch(Rectangle((m, k), 1, VEC, fc=_lane_color(tid), alpha=alpha, ec="black", lw=0.6))
        ax.annotate(f"t{tid}", (m + 0.5, k + 2), ha="center", va="center", fontsize=5.5, rotation=90,
                    color="white" if tid % WARP < 20 else "black")
    # The compute reads: thread row ty reads As[k][4·ty … 4·ty+3] (and + SUB_STRIDE_M): one float4 along m.
    k_read = 5
    for ty, color in ((0, HIGHLIGHT), (1, "#ff7f0e")):
        ax.add_patch(Rectangle((ty * SUB_M, k_read), SUB_M, 1, fill=False, ec=color, lw=2.6))
    ax.annotate(f"inner loop, k = {k_read}: a thread of row ty = 0\nreads As[{k_read}][0…3] (red), of row ty = 1\n"
                f"As[{k_read}][4…7] (orange): its {SUB_M} values of A's\ncolumn k are ADJACENT: one LDS.128\n"
                f"(and one more at m + {SUB_STRIDE_M})",
                xy=(SUB_M + 4, k_read + 0.5), xytext=(17, 9.2), fontsize=8, color=HIGHLIGHT, va="center",
                arrowprops=dict(arrowstyle="->", color=HIGHLIGHT, lw=1))
    ax.annotate("store c (= 0…3) of warp 0 writes rows\nk = c, 4 + c, 8 + c, 12 + c of columns 0–7:\n"
                "lanes 0–3 in column 0, lanes 4–7 in column 1, …\n32 floats in only 8 banks (chapter 07)",
                (17, 3.0), fontsize=8, va="center")
    ax.set_xlabel(f"m → (a row of As is {BLOCK_M} floats; m = 32–127 continue the same way)", fontsize=8)
    ax.set_ylabel("k", fontsize=8)

    # (3) B's tile: one row of 128 floats is 32 float4s = one warp (512 contiguous bytes).
    ax = fig.add_subplot(gs[1, :])
    _frame(ax, BLOCK_K, BLOCK_N, f"(3) B's {BLOCK_K}×{BLOCK_N} tile, copied row for row into Bs[k][n] (same layout in shared memory):\n"
           f"thread t copies the float4 at k = t / {B_VECS_PER_ROW} (+ {B_ROW_STEP} in pass 2), n = {VEC}·(t % {B_VECS_PER_ROW}): "
           "warp w takes all of row w, 512 contiguous bytes, with ONE LDG.128 and one STS.128")
    ax.set_xlim(-0.5, BLOCK_N + 12)
    for r in range(BLOCK_K):
        for v in range(B_VECS_PER_ROW):
            tid = (r % B_ROW_STEP) * B_VECS_PER_ROW + v
            warp = tid // WARP
            ax.add_patch(Rectangle((v * VEC, r), VEC, 1, fc=WARP_COLORS(warp), alpha=0.75 if r < B_ROW_STEP else 0.35,
                                   ec="black", lw=0.4))
            if r == 0:
                ax.annotate(f"{tid}", (v * VEC + VEC / 2, r + 0.55), ha="center", va="center", fontsize=6)
        label = f"warp {r % B_ROW_STEP}" + (" (pass 2)" if r >= B_ROW_STEP else "")
        ax.annotate(label, (BLOCK_N + 0.8, r + 0.6), fontsize=7, va="center")
    # Compute reads: thread tx reads Bs[k][4·tx … 4·tx+3] and the float4 SUB_STRIDE_N = 64 columns further.
    k_read = 11
    for x0 in (0, 64):
        ax.add_patch(Rectangle((x0 + 4 * 2, k_read), SUB_N, 1, fill=False, ec=HIGHLIGHT, lw=2.4))
    ax.set_xlabel("n → (numbers in row 0: the thread that copies that float4)     "
                  f"red: in the inner loop at k = {k_read}, thread tx = 2 reads Bs[{k_read}][8…11] and "
                  f"Bs[{k_read}][72…75], two LDS.128", fontsize=8)
    ax.set_ylabel("k", fontsize=8)

    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _strip(ax, y, first_col, kinds, label_cols=(), boundaries=()):
    """One row of floats at height y: kinds[i] in {'real', 'zeroed', 'off'} for column first_col + i."""
    colors = {"real": "#9ecae1", "zeroed": "#fdae6b", "off": "#ffffff"}
    for i, kind in enumerate(kinds):
        ax.add_patch(Rectangle((i, y), 1, 1, fc=colors[kind], ec="#888888", lw=0.5,
                               hatch="//" if kind == "off" else None))
        if first_col + i in label_cols:
            ax.annotate(f"{first_col + i}", (i + 0.5, y - 0.15), ha="center", va="bottom", fontsize=6.5, color="#555555")
    for bnd in boundaries:
        ax.plot([bnd, bnd], [y - 0.1, y + 1.1], color="black", lw=1.8)


def edge_handling(path: Path) -> None:
    """The fast path (aligned rows, float4 even at the ragged edge) against the guarded scalar path."""
    fig, axes = plt.subplots(3, 1, figsize=(13, 8.8), gridspec_kw=dict(height_ratios=[1.0, 1.35, 0.95]))

    # (1) Aligned, ragged edge: N = 4090 with ldb = 4096 (the self-test's padded variant): the last
    # float4 of the tile row is read whole, its two floats past N zeroed; the one after is not loaded.
    ax = axes[0]
    n, ld, first = 4090, 4096, 4080  # the last block tile of B ends at column 4095
    kinds = ["real" if c < n else "zeroed" if c < -(-n // VEC) * VEC else "off" for c in range(first, ld)]
    _strip(ax, 0, first, kinds, label_cols=range(first, ld), boundaries=range(0, ld - first + 1, VEC))
    for v, text in ((0, "valid ≥ 4:\none LDG.128"), (4, "valid ≥ 4:\none LDG.128"),
                    (8, "valid = 2: one LDG.128,\nthen .z, .w set to 0"),
                    (12, "valid ≤ 0: the load is\npredicated off; float4 = 0")):
        ax.annotate(text, (v + 2, 1.25), ha="center", va="top", fontsize=8)
    legend = [("#9ecae1", None, f"columns < N = {n}: the matrix"),
              ("#fdae6b", None, "row padding inside the last vector:\nread (in bounds: ld ≥ 4·⌈N/4⌉), then zeroed"),
              ("#ffffff", "//", f"rest of the padding up to ld = {ld}:\nnever touched")]
    for i, (fc, hatch, text) in enumerate(legend):
        ax.add_patch(Rectangle((18, -0.6 + i * 1.2), 0.8, 0.8, fc=fc, ec="#888888", hatch=hatch))
        ax.annotate(text, (19.1, -0.2 + i * 1.2), fontsize=8, va="center")
    ax.set_title(f"(1) ALIGNED instance at a ragged edge: the end of a row of B with N = {n} and ldb = {ld}. Every row starts\n"
                 "on a 16-byte boundary (thick lines), so every float4 of the tile row is one 128-bit load, even the last one",
                 fontsize=9, loc="left")
    ax.set_xlim(-0.5, 30)
    ax.set_ylim(3.0, -1.0)
    ax.set_aspect("equal")
    ax.axis("off")

    # (2) Unaligned: ld = 4095 (packed 4095^3). Row r starts 4095·r floats in, so its column 0 sits
    # (4095·r) mod 4 floats past a 16-byte boundary; a float4 there would straddle two: 4 scalar loads.
    ax = axes[1]
    ld = 4095
    for r in range(4):
        y = r * 1.6
        offset = (ld * r) % VEC
        boundaries = [c for c in range(0, 13) if (offset + c) % VEC == 0]
        _strip(ax, y, 0, ["real"] * 12, label_cols=(0, 4, 8) if r == 0 else (), boundaries=boundaries)
        ax.annotate(f"row {r} starts at float {ld * r} ≡ {offset} (mod 4)", (12.5, y + 0.55), fontsize=8, va="center")
        ax.add_patch(Rectangle((0, y), VEC, 1, fill=False, ec=HIGHLIGHT if offset else "#2a7a2a", lw=2.4))
    ax.annotate("The float4 at columns 0–3 (box) starts on a 16-byte\n"
                "boundary only in row 0 (green). In the other rows it\n"
                "straddles one (red): a 128-bit load there is illegal.\n\n"
                "UNALIGNED instance: four predicated 32-bit loads\n"
                "per float4 (v.x = valid > 0 ? p[0] : 0, …), still\n"
                "coalesced across the warp, and no branch.",
                (21.5, 2.9), fontsize=8.5, va="center")
    ax.set_title(f"(2) UNALIGNED instance: packed rows, K = lda = {ld} (the 4095³ problem); thick lines: 16-byte boundaries",
                 fontsize=9, loc="left")
    ax.set_xlim(-0.5, 38)
    ax.set_ylim(6.0, -0.8)
    ax.set_aspect("equal")
    ax.axis("off")

    # (3) The host's choice and the device's two paths.
    ax = axes[2]
    ax.axis("off")
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 3)
    ax.set_title("(3) one decision per launch, on the host; inside the kernel the tile loads are predicated, never branched", fontsize=9,
                 loc="left")
    box = dict(boxstyle="round,pad=0.4", fc="#f4f4f4", ec="#888888")
    ax.text(0.05, 1.5, "host (vectorized_gemm):\nlda, ldb, ldc all % 4 == 0\nand A, B, C 16-byte aligned?",
            fontsize=9, va="center", bbox=box)
    ax.text(2.9, 2.55, "yes → kernel<true>: every tile float4 is ONE LDG.128, predicated on valid > 0;\n"
            "floats past the edge (valid < 4) zeroed after the load; C stored as float4 where valid ≥ 4",
            fontsize=8.5, va="center", bbox=dict(boxstyle="round,pad=0.4", fc="#e5f5e0", ec="#2a7a2a"))
    ax.text(2.9, 0.45, "no → kernel<false>: four predicated 32-bit LDG per float4, zero where invalid;\n"
            "C stored float by float; the tiles land in shared memory exactly as in kernel<true>",
            fontsize=8.5, va="center", bbox=dict(boxstyle="round,pad=0.4", fc="#fee6ce", ec="#d94801"))
    for y in (2.55, 0.45):
        ax.add_patch(FancyArrowPatch((2.3, 1.5), (2.85, y), arrowstyle="->", mutation_scale=14, lw=1.2))
    ax.text(2.9, 1.5, "either way the tile loads have no branch: a warp at the border runs the same\n"
            "load instructions as one in the interior, with the lanes past the edge masked off",
            fontsize=8.5, va="center", style="italic")

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


FIGURES = {
    "float4-copy.png": float4_copy,
    "edge-handling.png": edge_handling,
}
