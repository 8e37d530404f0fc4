#!/usr/bin/env python3
"""Optional baseline: one GCN layer in PyTorch, and in PyTorch Geometric where it imports, timed on
the tensors a Part III binary dumped and appended to the results CSV next to the chapters' rows.

    <build>/chapters/32_fused_gcn_layer --dump DIR          (the layer's inputs, reference, output)
    python plots/torch_gcn.py --dump DIR --problem rmat_281903_2312497_s1 --csv plots/data/<gpu-slug>.csv

Never a dependency of `make test` or `make tutorial`: without PyTorch, or without a GPU that
PyTorch can use, it prints one line saying it skipped and exits 0.

The dump (a Layer step's: chapter 32): x.npy (V x F_in, float64), w.npy (F_in x F_out), b.npy
(F_out), A_hat in CSR with one row per target node as indptr.npy, indices.npy (int32 or int64) and
values.npy (float64), ref.npy (V x F_out, the reference output) and out.npy (the binary's output,
compared with ref.npy too when present).

Timed like the C++ harness: CUDA events around each run, --warmup untimed runs first, then --iters
runs each timed alone, the median reported with min and max; before every timed run a reduction
reads a buffer twice the L2 size, so no run starts with its inputs in L2. The device-to-device copy
bandwidth (bytes read + written per second of a tensor copy, the same way) goes into copy_gbps.
  torch_layer: log_softmax(torch.sparse.mm(A_hat, torch.mm(X, W)) + b, dim=1), A_hat a sparse CSR
               tensor (cuSPARSE underneath);
  pyg_gcnconv: torch_geometric.nn.GCNConv holding W and b, then log_softmax. --pyg-norm cached (the
               default, how GCNConv is usually run for inference): normalize=True, cached=True,
               add_self_loops=True on the graph's edges (A_hat's off-diagonal entries, source ->
               target), so the first, untimed run computes D^-1/2 (A + I) D^-1/2 (the same A_hat:
               PyG normalizes by in-degree + 1, as graph.hpp does) and every timed run reuses it;
               --pyg-norm given: normalize=False, add_self_loops=False, A_hat's values as edge
               weights. Either way GCNConv aggregates the edges with a scatter-add (atomics: the
               order of the sums varies run to run).
Each result is checked against ref.npy: verified when max |out - ref| <= --tol * max(1, max |ref|).

CSV rows (results.HEADER, the binaries' header): part gcn; chapter torch_layer / pyg_gcnconv; the
--problem name, which must be the dumped run's so that the plots put the rows next to its chapters;
m = V, n = F_out, k = F_in; gflops and gbps from the layer's FLOPs and minimum bytes (gcn_layer_cost
of common/include/tut/gcn/reference.hpp, recomputed here from the shapes); baseline: the PyTorch
layer (its own row names itself, ratio 1). Exit codes: 0 done or skipped, 1 a result failed its
check (its row says verified no) or a variant could not run (no row), 2 bad arguments or a bad dump.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tut_plots import results  # noqa: E402
from tut_plots.gcn import TORCH_STEPS  # noqa: E402

REQUIRED = ("x", "w", "b", "indptr", "indices", "values", "ref")
COPY_BYTES = 256 << 20  # the copy-bandwidth buffer: far larger than any L2


class DumpError(Exception):
    """A dump folder that cannot be used; the message names the file."""


def layer_cost(v: int, nnz: int, f_in: int, f_out: int) -> tuple[float, float]:
    """(FLOPs, minimum bytes) of out = log_softmax(A_hat (X W) + b): gcn_layer_cost in
    common/include/tut/gcn/reference.hpp. FLOPs: X W (2 V F_in F_out), the SpMM (2 nnz F_out), bias +
    log_softmax (V (6 F_out + 1), exp and log counted as one each). Bytes: X, W, b and A_hat (int32
    indptr and indices, float64 values) read once, the output written once."""
    flops = 2.0 * v * f_in * f_out + 2.0 * nnz * f_out + float(v) * (f_out * 6 + 1)
    nbytes = 8.0 * (v * f_in + f_in * f_out + f_out) + 4.0 * (v + 1) + 12.0 * nnz + 8.0 * v * f_out
    return flops, nbytes


def load_dump(folder: Path, np) -> dict:
    """The dumped arrays, checked against each other; DumpError names the first file that is wrong."""
    if not folder.is_dir():
        raise DumpError(f"{folder}: no such folder (write one with a Part III binary's --dump {folder})")
    d = {}
    for name in REQUIRED + ("out",):
        path = folder / f"{name}.npy"
        if not path.is_file():
            if name == "out":
                continue
            raise DumpError(f"{path}: missing (the dump of a Layer step, chapter 32, has "
                            f"{', '.join(n + '.npy' for n in REQUIRED)})")
        try:
            d[name] = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as e:
            raise DumpError(f"{path}: not a .npy array ({e})") from None

    def fail(name: str, what: str):
        raise DumpError(f"{folder / (name + '.npy')}: {what}")

    for name in ("x", "w", "b", "values", "ref") + (("out",) if "out" in d else ()):
        if d[name].dtype != np.float64:
            fail(name, f"dtype {d[name].dtype}, expected float64")
    for name in ("indptr", "indices"):
        if d[name].dtype not in (np.int32, np.int64):
            fail(name, f"dtype {d[name].dtype}, expected int32 or int64")
    if d["x"].ndim != 2:
        fail("x", f"shape {d['x'].shape}, expected (V, F_in)")
    v, f_in = d["x"].shape
    if d["w"].ndim != 2 or d["w"].shape[0] != f_in:
        fail("w", f"shape {d['w'].shape}, expected ({f_in}, F_out) (x.npy has F_in = {f_in})")
    f_out = d["w"].shape[1]
    if d["b"].shape != (f_out,):
        fail("b", f"shape {d['b'].shape}, expected ({f_out},)")
    indptr = d["indptr"]
    if indptr.shape != (v + 1,):
        fail("indptr", f"shape {indptr.shape}, expected ({v + 1},) (V + 1 with V = {v})")
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        fail("indptr", "does not start at 0 and rise")
    nnz = int(indptr[-1])
    for name in ("indices", "values"):
        if d[name].shape != (nnz,):
            fail(name, f"shape {d[name].shape}, expected ({nnz},) (indptr ends at {nnz})")
    if nnz and (d["indices"].min() < 0 or d["indices"].max() >= v):
        fail("indices", f"a column index outside [0, {v})")
    for name in ("ref",) + (("out",) if "out" in d else ()):
        if d[name].shape != (v, f_out):
            fail(name, f"shape {d[name].shape}, expected ({v}, {f_out})")
    if v and not np.allclose(np.exp(d["ref"]).sum(axis=1), 1.0, rtol=0, atol=1e-9):
        fail("ref", "is no log_softmax output (the exp of a row does not sum to 1): dump a Layer step (chapter 32)")
    d.update(v=v, f_in=f_in, f_out=f_out, nnz=nnz)
    return d


def to_device(torch, np, d: dict, dev) -> dict:
    """The dumped arrays as tensors on dev (int64 CSR indices: what torch's CSR tensor wants)."""
    t = {k: torch.from_numpy(d[k]).to(dev) for k in ("x", "w", "b", "values", "ref") + (("out",) if "out" in d else ())}
    t["indptr"] = torch.from_numpy(d["indptr"].astype(np.int64)).to(dev)
    t["indices"] = torch.from_numpy(d["indices"].astype(np.int64)).to(dev)
    return t


def check(torch, out, ref) -> tuple[float, float]:
    """(max |out - ref|, ||out - ref|| / ||ref||)."""
    diff = out - ref
    max_abs = float(diff.abs().max().item()) if diff.numel() else 0.0
    norm = float(torch.linalg.vector_norm(ref).item())
    return max_abs, (float(torch.linalg.vector_norm(diff).item()) / norm if norm else max_abs)


def layer_variants(torch, t: dict, shape: dict, pyg_norm: str | None) -> list[tuple]:
    """[(chapter, step, fn)]: PyTorch's layer, and GCNConv's (pyg_norm "cached" or "given"; None: not
    tried) where torch_geometric imports. Each fn computes the layer's output from t's tensors; build
    and call them under torch.inference_mode()."""
    v = shape["v"]
    with warnings.catch_warnings():  # "sparse CSR tensor support is in beta": said once here, not on every run
        warnings.simplefilter("ignore", UserWarning)
        a_hat = torch.sparse_csr_tensor(t["indptr"], t["indices"], t["values"], size=(v, v))
    x, w, b = t["x"], t["w"], t["b"]
    torch_step = f"PyTorch {torch.__version__}: mm + sparse.mm (CSR) + bias + log_softmax"
    variants = [("torch_layer", torch_step, lambda: torch.log_softmax(torch.sparse.mm(a_hat, torch.mm(x, w)) + b, dim=1))]
    if pyg_norm is None:
        return variants
    try:
        import torch_geometric
        from torch_geometric.nn import GCNConv
    except Exception as e:  # absent, or present but broken (a mismatched extension, say)
        print(f"torch_gcn: PyTorch Geometric skipped: it does not import ({type(e).__name__}: {e})")
        return variants
    # Edge u -> v for each entry (row v = target, column u = source): PyG's source_to_target flow.
    targets = torch.repeat_interleave(torch.arange(v, device=x.device), t["indptr"].diff())
    sources = t["indices"]
    if pyg_norm == "cached":
        conv = GCNConv(shape["f_in"], shape["f_out"], cached=True, normalize=True, add_self_loops=True)
        off = sources != targets  # A's edges; GCNConv adds the self-loops and normalizes, once
        edge_index, edge_weight = torch.stack([sources[off], targets[off]]), None
        how = "cached normalization"
    else:
        conv = GCNConv(shape["f_in"], shape["f_out"], normalize=False, add_self_loops=False)
        edge_index, edge_weight = torch.stack([sources, targets]), t["values"]
        how = "A_hat as edge weights"
    conv = conv.to(device=x.device, dtype=torch.float64)
    conv.lin.weight.copy_(w.t())  # a Linear's weight is F_out x F_in
    conv.bias.copy_(b)
    variants.append(("pyg_gcnconv", f"PyTorch Geometric {torch_geometric.__version__}: GCNConv ({how}) + log_softmax",
                     lambda: torch.log_softmax(conv(x, edge_index, edge_weight), dim=1)))
    return variants


def copy_bandwidth(torch, dev, time_runs) -> float:
    """GB/s of a device-to-device tensor copy of COPY_BYTES (bytes read + written over the median time
    of time_runs); the buffers are freed on return."""
    src = torch.ones(COPY_BYTES // 8, dtype=torch.float64, device=dev)
    dst = torch.empty_like(src)
    return 2.0 * COPY_BYTES / (statistics.median(time_runs(lambda: dst.copy_(src))) * 1e-3) / 1e9


def make_row(*, gpu: str, cuda: str, chapter: str, step: str, problem: str, shape: dict, times: list[float],
             baseline: str, baseline_ms: float, max_abs: float, rel_err: float, tol: float, ref_max: float,
             copy_gbps: float, iters: int, run: str = "") -> dict:
    """The CSV fields of one timed variant (column -> text), formatted as the binaries format them."""
    med, lo, hi = statistics.median(times), min(times), max(times)
    flops, nbytes = layer_cost(shape["v"], shape["nnz"], shape["f_in"], shape["f_out"])
    ok = max_abs == max_abs and max_abs <= tol * max(1.0, ref_max)
    return {
        "gpu": gpu, "cuda": cuda, "chapter": chapter, "step": step, "problem": problem,
        "m": str(shape["v"]), "n": str(shape["f_out"]), "k": str(shape["f_in"]),
        "time_ms_median": f"{med:.6g}", "time_ms_min": f"{lo:.6g}", "time_ms_max": f"{hi:.6g}",
        "gflops": f"{flops / (med * 1e-3) / 1e9:.1f}", "gbps": f"{nbytes / (med * 1e-3) / 1e9:.1f}",
        "baseline": baseline, "baseline_time_ms": f"{baseline_ms:.6g}", "ratio_to_baseline": f"{baseline_ms / med:.4f}",
        "pct_of_peak": "0.00", "rel_err": f"{rel_err:.3e}", "verified": "yes" if ok else "no",
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "alpha": "1", "beta": "0",
        "iters": str(iters), "clock_mhz": "0", "peak_gflops": "0.0", "peak_gbps": "0.0", "part": "gcn",
        "alt_baseline": "", "alt_baseline_time_ms": "", "copy_gbps": f"{copy_gbps:.1f}" if copy_gbps > 0 else "",
        **dict(zip(results.STEP_COLUMNS, TORCH_STEPS[chapter])),  # what it is: FP64, the whole layer
        results.RUN_COLUMN: run,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dump", required=True, type=Path, help="folder a Part III binary wrote with --dump")
    ap.add_argument("--problem", help="the dumped run's problem name (its CSV row's `problem`); needed with --csv")
    ap.add_argument("--csv", type=Path, help="results CSV to append the rows to (default: print only)")
    ap.add_argument("--run", default="", help="the run id to write in the rows (as the binaries' --run; "
                                              "the plots take PyTorch's best time over a run's processes)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--tol", type=float, default=1e-9,
                    help="verified when max |out - ref| <= tol * max(1, max |ref|) (default 1e-9)")
    ap.add_argument("--pyg-norm", choices=("cached", "given"), default="cached",
                    help="GCNConv's normalization: cached (normalize=True, cached=True) or given (A_hat's values)")
    ap.add_argument("--no-pyg", action="store_true", help="time PyTorch's layer only")
    args = ap.parse_args(argv)
    if args.csv and not args.problem:
        ap.error("--csv needs --problem (the dumped run's problem name, as its CSV row has it)")
    if args.warmup < 0 or args.iters < 1:
        ap.error("--warmup must be >= 0 and --iters >= 1")
    if args.run and not re.fullmatch(r"[A-Za-z0-9:._-]{1,64}", args.run):
        ap.error(f"--run: {args.run!r} is not a run id (valid: 1 to 64 of the characters A-Z a-z 0-9 : . _ -)")

    try:
        import torch
    except ImportError:
        print("torch_gcn: skipped: PyTorch is not installed (optional; `pip install torch` for the PyTorch rows)")
        return 0
    if not torch.cuda.is_available():
        print("torch_gcn: skipped: PyTorch finds no CUDA GPU")
        return 0
    import numpy as np

    try:
        d = load_dump(args.dump, np)
    except DumpError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    shape = {k: d[k] for k in ("v", "f_in", "f_out", "nnz")}
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
    flush_buf = torch.zeros(2 * l2 // 4, dtype=torch.float32, device=dev)
    sink = torch.empty((), dtype=torch.float32, device=dev)

    def time_runs(fn) -> list[float]:
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(args.iters):
            torch.sum(flush_buf, 0, out=sink)  # read 2x L2 before the start event: not timed
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return times

    with torch.inference_mode():
        copy_gbps = copy_bandwidth(torch, dev, time_runs)

        t = to_device(torch, np, d, dev)
        ref_max = float(t["ref"].abs().max().item()) if t["ref"].numel() else 0.0
        if "out" in t:
            max_abs, _ = check(torch, t["out"], t["ref"])
            print(f"the binary's out.npy against ref.npy: max |out - ref| = {max_abs:.3e}")
        variants = layer_variants(torch, t, shape, None if args.no_pyg else args.pyg_norm)

        rows, failed = [], False
        for chapter, step, fn in variants:
            try:
                max_abs, rel = check(torch, fn(), t["ref"])  # the first run: PyG's cached normalization is computed here
                times = time_runs(fn)
            except RuntimeError as e:  # an operation this PyTorch build lacks, out of memory, ...
                print(f"torch_gcn: {chapter} failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
                failed = True
                continue
            # The baseline: PyTorch's layer (timed first); a row without it is its own.
            base = rows[0]["fields"] if rows and rows[0]["fields"]["chapter"] == "torch_layer" else None
            row = make_row(gpu=torch.cuda.get_device_name(dev), cuda=torch.version.cuda or "", chapter=chapter,
                           step=step, problem=args.problem or "", shape=shape, times=times,
                           baseline=base["step"] if base else step,
                           baseline_ms=float(base["time_ms_median"]) if base else statistics.median(times),
                           max_abs=max_abs, rel_err=rel, tol=args.tol, ref_max=ref_max,
                           copy_gbps=copy_gbps, iters=args.iters, run=args.run)
            rows.append({"times": times, "fields": row})
            failed |= row["verified"] != "yes"
            print(f"{chapter:<12} {row['time_ms_median']:>9} ms [{row['time_ms_min']}, {row['time_ms_max']}]  "
                  f"{row['gbps']} GB/s ({100 * float(row['gbps']) / copy_gbps:.1f}% of copy {copy_gbps:.0f} GB/s)  "
                  f"max |out - ref| = {max_abs:.3e}  verified: {row['verified']}  {step}")
    if args.csv:
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        try:
            for r in rows:
                results.append_row(args.csv, r["fields"])
        except results.CsvError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"appended {len(rows)} rows to {args.csv}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
