"""Chapter 29: the SpMM with one thread per row, on the default graph. The in-degree distribution of the
R-MAT graph, the rows of the warp that holds the longest row (each lane busy for its own row's length,
then idle), and how many of the 8810 warps are still running after t iterations: the tail.

Nothing here is measured. The graph is computed here from the generator's definition, as
tut::rmat_graph (common/src/gcn/graph.cpp) draws it: SplitMix64 draws, kRmatParams, rejection of
out-of-range ids, self-loops and repeats, then the seeded relabelling. The binary prints the same
histogram (tut::describe(DegreeStats)); the unit tests of graph.cpp pin the generator. Row lengths of
A_hat are in-degree + 1 (the diagonal).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CHAPTER = "29_spmm_row_per_thread"

# The default graph (tut/gcn/graph.hpp): kWebStanfordNodes, kWebStanfordEdges, kDefaultRmatSeed,
# kRmatParams.
NODES = 281903
EDGES = 2312497
SEED = 1
RMAT_A, RMAT_B, RMAT_C = 0.57, 0.19, 0.19
WARP = 32
THREADS_PER_BLOCK = 256  # NUM_THREADS in chapters/29_spmm_row_per_thread/kernel.cuh

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix(z):
    """SplitMix64's output function on uint64 numpy arrays (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _derive_seed(seed: int, stream: int) -> int:
    """tut::derive_seed: the first draw of SplitMix64(seed ^ (0xD1B54A32D192ED03 * (stream + 1)))."""
    state = (seed ^ ((0xD1B54A32D192ED03 * (stream + 1)) & _M64)) & _M64
    with np.errstate(over="ignore"):
        return int(_mix(np.array([(state + _GOLDEN) & _M64], dtype=np.uint64))[0])


def _draws(seed: int, first: int, count: int) -> np.ndarray:
    """Draws first .. first + count - 1 of SplitMix64(seed): draw n is mix(seed + (n + 1) * golden)."""
    n = np.arange(first + 1, first + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return _mix(np.uint64(seed) + n * np.uint64(_GOLDEN))


def rmat_edges(nodes: int = NODES, edges: int = EDGES, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The accepted edges (src, dst) of tut::rmat_graph before relabelling, in the order accepted."""
    scale = max(0, (nodes - 1).bit_length())
    s0 = _derive_seed(seed, 0)
    ab, abc = RMAT_A + RMAT_B, RMAT_A + RMAT_B + RMAT_C
    batch = 1 << 20  # candidates per round; each takes `scale` consecutive draws
    keys, first = [], 0
    while True:
        draws = _draws(s0, first * scale, batch * scale).reshape(batch, scale)
        u = (draws >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        q = (u >= RMAT_A).astype(np.uint64) + (u >= ab) + (u >= abc)  # the quarter at each level
        weights = np.uint64(1) << np.arange(scale - 1, -1, -1, dtype=np.uint64)
        src = ((q >> np.uint64(1)) * weights).sum(axis=1, dtype=np.uint64)
        dst = ((q & np.uint64(1)) * weights).sum(axis=1, dtype=np.uint64)
        ok = (src < nodes) & (dst < nodes) & (src != dst)
        keys.append((src[ok] << np.uint64(32)) | dst[ok])
        first += batch
        every = np.concatenate(keys)
        _, at = np.unique(every, return_index=True)  # the first time each distinct edge was drawn
        if len(at) >= edges:
            accepted = every[np.sort(at)[:edges]]
            return (accepted >> np.uint64(32)).astype(np.int64), (accepted & np.uint64(0xFFFFFFFF)).astype(np.int64)


def relabelling(nodes: int = NODES, seed: int = SEED) -> np.ndarray:
    """label[i]: node i's id after tut::rmat_graph's Fisher-Yates shuffle (stream derive_seed(seed, 1))."""
    count = nodes - 1
    draws = _draws(_derive_seed(seed, 1), 0, count)  # draw t is used at i = nodes - 1 - t
    picks = (draws % np.arange(nodes, 1, -1, dtype=np.uint64)).astype(np.int64).tolist()
    label = list(range(nodes))
    for t, r in enumerate(picks):
        i = nodes - 1 - t
        label[i], label[r] = label[r], label[i]
    return np.array(label, dtype=np.int64)


@lru_cache(maxsize=1)
def row_lengths() -> np.ndarray:
    """The length of each row of A_hat for the default graph, by final node id: in-degree + 1."""
    _, dst = rmat_edges()
    return np.bincount(relabelling()[dst], minlength=NODES) + 1


def degree_histogram(in_degree: np.ndarray) -> np.ndarray:
    """tut::DegreeStats::histogram: [0] degree 0, [k] degrees 2^(k-1) .. 2^k - 1."""
    widths = np.zeros_like(in_degree)
    nonzero = in_degree > 0
    widths[nonzero] = np.floor(np.log2(in_degree[nonzero])).astype(np.int64) + 1
    return np.bincount(widths)


def warp_iterations(lengths: np.ndarray) -> np.ndarray:
    """Iterations of each warp of chapter 29's kernel: the longest of its 32 rows (a missing row: 0)."""
    padded = np.zeros(-(-len(lengths) // WARP) * WARP, dtype=np.int64)
    padded[:len(lengths)] = lengths
    return padded.reshape(-1, WARP).max(axis=1)


def _bucket_label(k: int) -> str:
    if k == 0:
        return "0"
    lo, hi = 1 << (k - 1), (1 << k) - 1
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _degrees(ax, lengths: np.ndarray) -> None:
    in_degree = lengths - 1
    hist = degree_histogram(in_degree)
    xs = np.arange(len(hist))
    ax.bar(xs, np.where(hist > 0, hist, np.nan), color="#4a78b5", width=0.8)
    for x, n in zip(xs, hist):
        if n > 0:
            ax.text(x, n * 1.15, f"{n:,}", ha="center", va="bottom", fontsize=6.5, rotation=90)
    ax.set_yscale("log")
    ax.set_ylim(0.5, hist.max() * 30)
    ax.set_xticks(xs)
    ax.set_xticklabels([_bucket_label(k) for k in xs], rotation=60, fontsize=7)
    ax.set_xlabel("in-degree (row length − 1), power-of-two buckets", fontsize=8.5)
    ax.set_ylabel("nodes (log scale)", fontsize=8.5)
    only_diag = np.mean(lengths == 1)
    ax.set_title(f"(1) the default graph's in-degrees: {NODES:,} nodes, {EDGES:,} edges\n"
                 f"max {in_degree.max():,}, mean {in_degree.mean():.2f}, median {int(np.median(in_degree))}; "
                 f"{only_diag:.0%} of the rows hold only their diagonal", fontsize=9)
    ax.tick_params(axis="y", labelsize=7.5)


def _hub_warp(ax, lengths: np.ndarray) -> None:
    hub = int(np.argmax(lengths))
    warp = hub // WARP
    rows = lengths[warp * WARP:(warp + 1) * WARP]
    span = rows.max()
    for lane, n in enumerate(rows):
        ax.barh(lane, n, left=0, color="#d6604d", height=0.8)
        ax.barh(lane, span - n, left=n, color="#e8e8e8", height=0.8)
    ax.set_xscale("log")
    ax.set_xlim(0.8, span * 1.6)
    ax.set_ylim(WARP - 0.5, -0.5)
    ax.set_yticks(range(0, WARP, 4))
    ax.tick_params(labelsize=7.5)
    ax.set_ylabel(f"lane (row {warp * WARP} + lane)", fontsize=8.5)
    ax.set_xlabel("loop iteration of the warp (log scale)", fontsize=8.5)
    busy = rows.sum() / (WARP * span)
    ax.set_title(f"(2) thread r owns row r: the warp holding the longest row (row {hub})\n"
                 f"red: the lane has an entry to gather; grey: it waits. {rows.sum():,} entries in\n"
                 f"{span:,} iterations of 32 lanes: {busy:.1%} of the lanes busy", fontsize=9)
    ax.text(span ** 0.75, 3.5, "at each iteration the 32 lanes read indices,\nvalues and a row of Z for 32 different\n"
            "rows: 32 unrelated addresses per load", fontsize=7.5, ha="center", va="center",
            bbox=dict(fc="white", ec="#999999", lw=0.6))


def _tail(ax, lengths: np.ndarray) -> None:
    iters = np.sort(warp_iterations(lengths))
    warps = len(iters)
    t = np.unique(np.concatenate([[0], iters]))
    alive = warps - np.searchsorted(iters, t, side="right")  # warps with more than t iterations
    ax.step(t, np.maximum(alive, 0.8), where="post", color="#2166ac", lw=1.6)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("log")
    ax.set_xlim(0, iters.max() * 1.5)
    ax.set_ylim(0.7, warps * 1.6)
    ax.set_xlabel("iterations t (symmetric log scale)", fontsize=8.5)
    ax.set_ylabel("warps still running after t iterations", fontsize=8.5)
    second = iters[-2]
    ax.axvspan(second, iters.max(), color="#fdae61", alpha=0.35, lw=0)
    ax.annotate(f"one warp alone,\niterations {second:,}\nto {iters.max():,}", xy=((second * iters.max()) ** 0.5, 1.3),
                xytext=(second / 12, warps ** 0.5), ha="center", va="center", fontsize=8,
                arrowprops=dict(arrowstyle="->", color="#555555", lw=0.8))
    ax.axvline(np.median(iters), color="#777777", lw=0.8, ls="--")
    ax.text(np.median(iters) * 1.1, 2.0, f"median warp:\n{int(np.median(iters))} iterations", fontsize=7.5)
    util = lengths.sum() / (WARP * iters.sum())
    ax.set_title(f"(3) the tail: {warps:,} warps ({-(-NODES // THREADS_PER_BLOCK):,} blocks of 256) if all start "
                 f"together;\n{iters.sum():,} warp iterations for {lengths.sum():,} entries: {util:.1%} of the lanes "
                 "busy.\nThe kernel ends when the last warp does", fontsize=9)
    ax.tick_params(labelsize=7.5)


def row_per_thread(path: Path) -> None:
    lengths = row_lengths()
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.4), gridspec_kw=dict(width_ratios=[1.1, 1, 1]))
    _degrees(axes[0], lengths)
    _hub_warp(axes[1], lengths)
    _tail(axes[2], lengths)
    fig.suptitle("Chapter 29: one thread per row of A_hat (CSR, rows = targets) on the default R-MAT graph; "
                 "computed from the generator, nothing measured", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


FIGURES = {"row-per-thread.png": row_per_thread}
