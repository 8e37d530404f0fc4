#!/usr/bin/env python3
"""Runs every step of the build's chapter list at its part's headline problem and over its sweep.

    python plots/bench.py --manifest build/release/chapters.tsv [--out-dir plots/data] [--part gemm|conv|gcn|all]

The list of steps is <build>/chapters.tsv, written by CMake from the tut_add_chapter lines. Each
binary appends its own row to <out-dir>/<gpu-slug>.csv (it verifies and times itself against the
vendor library in the same process); this script only chooses the problems:
  gemm: 4096^3, then the size sweep (sizes predicted to run longer than --max-run-seconds skipped);
        chapters from 09 on and the library baselines also run chapter 10's suite of small and odd
        problems (3 problems more than the sweep), and a step that plans each problem (its --help
        lists tile shapes) runs --explain on every suite problem, one row per candidate plan into
        <out-dir>/<gpu-slug>-plans.csv. The TF32 steps (chapters 11 and 12, the cuBLAS TF32
        baseline; `math` tf32 in the manifest) run the same problems as any step from 09 on: their
        rows compare against cuBLAS TF32, with cuBLAS FP32 timed beside it, and go to the TF32
        charts and tables;
  conv: the headline layer, then every other layer of the table the binary prints with
        `--layer list`, for the steps from 15 on, the fused epilogue (20) and the TF32 step (21)
        included (13 and 14 are slow: only the headline, unless --all-layers);
  gcn:  each step once at its default problem (the default graph and features: no problem flags);
        the binary names the graph in its row.
A step built for one GPU architecture only (chapter 12: sm_90a) refuses any other GPU (exit 3 with
the GPU still there); it is skipped in one line, not counted as a failure.
Every process gets the run's id (--run; its row's `run` column). A library's time moves between
processes (cuDNN's by up to 2x, its choice of algorithm too), the steps' do not: the tables compare
each step with the library's best median over the processes of the run that timed it on the same
problem. Where fewer than --processes (default 3) did (a step alone with its library: the fused
epilogue, the TF32 convolution, most GCN pieces), the last such step runs again until enough did.
Exits 1 if any run failed verification or crashed, 3 if there is no GPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tut_plots import FAMILIES, gcn  # noqa: E402
from tut_plots.results import PARTS  # noqa: E402
from tut_plots.runner import Runner, StepSkipped, declarations, device_facts, fill_results, read_manifest  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    ap.add_argument("--part", choices=(*PARTS, "all"), default="all", help="which part's steps to run (default: all)")
    ap.add_argument("--steps", nargs="*", help="only these step names (default: all of the part)")
    ap.add_argument("--headline-only", action="store_true",
                    help="skip the sweep (gemm) and the other layers (conv); gcn runs its default problem only anyway")
    ap.add_argument("--all-layers", action="store_true",
                    help="run every layer also for the conv steps not tagged all_layers (slow)")
    ap.add_argument("--sweep-iters", type=int, default=10)
    ap.add_argument("--sweep-warmup", type=int, default=2)
    ap.add_argument("--max-run-seconds", type=float, default=5.0,
                    help="skip a sweep size whose single run is predicted (from the headline) to take longer")
    ap.add_argument("--log", type=Path, help="where the binaries' full output goes (default: next to the manifest)")
    ap.add_argument("--processes", type=int, default=3,
                    help="run a step again until at least this many processes timed each library on each problem "
                         "(default 3; the tables compare with the best of them)")
    args = ap.parse_args(argv)

    parts = PARTS if args.part == "all" else (args.part,)
    manifest = read_manifest(args.manifest)
    steps = [s for s in manifest if s["part"] in parts]
    steps.sort(key=lambda s: parts.index(s["part"]))  # every gemm step, then every conv step, then gcn
    if args.steps:
        steps = [s for s in steps if s["name"] in args.steps]
    if not steps:
        raise SystemExit(f"error: no steps of part '{args.part}' in {args.manifest}")
    facts = device_facts(steps[0]["binary"])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = args.out_dir / f"{facts['slug']}.csv"
    log_path = args.log or args.manifest.parent / "bench.log"
    (args.manifest.parent / "results-csv").write_text(f"{csv_path}\n")  # for `make tutorial`'s plot step
    print(f"bench: {len(steps)} steps on {facts['name']} (CUDA {facts['cuda']}) -> {csv_path}; full output in {log_path}")

    plans_path = args.out_dir / f"{facts['slug']}-plans.csv"
    # Rows written before the CSV said what each step is get it from this build's step list (the whole
    # list, every part: a file holds them all), before any binary appends to the file.
    fill_results([csv_path, plans_path], {**declarations(manifest), **gcn.TORCH_STEPS})

    if args.processes < 1:
        raise SystemExit(f"error: --processes: {args.processes} is out of range (valid: an integer >= 1)")
    run_id = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"bench: run {run_id}; each library timed in at least {args.processes} processes per problem")
    skipped = []
    with log_path.open("a") as log:
        runner = Runner(csv_path, plans_path, log, log_path, args, run_id)
        for step in steps:
            try:
                FAMILIES[step["part"]].bench(runner, step)
            except StepSkipped as why:
                skipped.append(step["name"])
                print(f"  {step['name']:<28} skipped: {why}")
        n = runner.top_up(args.processes)
        if n:
            print(f"bench: {n} repeated runs, so that every library was timed in at least {args.processes} processes")

    if skipped:
        print(f"bench: skipped on this GPU (built for another architecture): {', '.join(skipped)}")
    if runner.failures:
        print("bench: FAILURES:\n  " + "\n  ".join(runner.failures))
        return 1
    print(f"bench: done, results in {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
