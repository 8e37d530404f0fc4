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
Exits 1 if any run failed verification or crashed, 3 if there is no GPU.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import CONV_HEADLINE, PARTS, SUITE, SUITE_FROM, SWEEP, is_chapter, precision_of  # noqa: E402

HEADLINE = (4096, 4096, 4096)
NO_GPU = 3
# Convolution steps before this one run the headline layer only (unless --all-layers): the direct
# loop and im2col take seconds per layer and add nothing to the per-layer chart (17 onwards).
CONV_LAYERS_FROM = 15


class StepSkipped(Exception):
    """A step that does not run on this GPU (built for another architecture): its reason, one line."""


def read_manifest(path: Path) -> list[dict]:
    if not path.is_file():
        raise SystemExit(f"error: {path} not found: build first (cmake --build), it is written at configure time")
    with path.open(newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def device_facts(binary: str) -> dict:
    p = subprocess.run([binary, "--device-info"], capture_output=True, text=True)
    if p.returncode == NO_GPU:
        raise SystemExit(f"error: no CUDA GPU: {p.stderr.strip()}")
    if p.returncode != 0:
        raise SystemExit(f"error: {binary} --device-info failed ({p.returncode}): {p.stderr.strip()}")
    return dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)


def conv_layers(binary: str) -> list[dict]:
    """The layer table a conv binary prints with `--layer list`: a header line, then one line per
    layer, `name N C H W K R S pad stride`, whitespace-separated."""
    p = subprocess.run([binary, "--layer", "list"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"error: {binary} --layer list failed ({p.returncode}): {p.stderr.strip()}")
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    keys = ("n", "c", "h", "w", "k", "r", "s", "pad", "stride")
    layers = []
    for line in lines[1:]:
        tok = line.split()
        try:
            if len(tok) < 1 + len(keys):
                raise ValueError(line)
            layers.append({"name": tok[0], **{key: int(v) for key, v in zip(keys, tok[1:])}})
        except ValueError:
            raise SystemExit(f"error: {binary} --layer list: cannot read the line {line!r} "
                             f"(expected: name {' '.join(k.upper() for k in keys)})") from None
    if not any(layer["name"] == CONV_HEADLINE for layer in layers):
        raise SystemExit(f"error: {binary} --layer list has no headline layer {CONV_HEADLINE}")
    return layers


def conv_flops(layer: dict) -> float:
    """2*N*K*P*Q*C*R*S: what a layer costs, to predict its run time from the headline's."""
    p = (layer["h"] + 2 * layer["pad"] - layer["r"]) // layer["stride"] + 1
    q = (layer["w"] + 2 * layer["pad"] - layer["s"]) // layer["stride"] + 1
    return 2.0 * layer["n"] * layer["k"] * p * q * layer["c"] * layer["r"] * layer["s"]


def plan_tiles(binary: str) -> list[str]:
    """The tile shapes a step that plans each problem offers (its --help ends with "Its tile shapes
    (--tile): 128x128 ..."); [] for a step with one kernel for every problem."""
    p = subprocess.run([binary, "--help"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if "tile shapes (--tile):" in line:
            return line.split(":", 1)[1].split()
    return []


def runs_suite(step: dict) -> bool:
    """Chapters from SUITE_FROM on and the library baselines run the suite of small and odd problems:
    the TF32 steps (11, 12, cuBLAS TF32) too, so that their suite table compares like the FP32 one."""
    return not is_chapter(step["name"]) or int(step["name"][:2]) >= SUITE_FROM


def step_math(step: dict) -> str:
    """The math the manifest declares for a step (`math` column: fp32 or tf32; a manifest written
    before the column existed: fp32), upper-cased as the rows name it."""
    return (step.get("math") or "fp32").upper()


def row_precision(step: dict, row: dict) -> str:
    """The precision a row compares in, from its baselines' names (results.precision_of)."""
    return precision_of(row.get("baseline") or "", row.get("alt_baseline") or "", step["part"])


def vs_alt(row: dict) -> float | None:
    """alt_baseline_time_ms / time_ms_median, None without a second baseline."""
    alt = row.get("alt_baseline_time_ms") or ""
    return float(alt) / float(row["time_ms_median"]) if alt else None


def read_rows(csv_path: Path) -> list[dict]:
    if not csv_path.is_file():
        return []
    with csv_path.open(newline="") as f:
        return list(csv.DictReader(f))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    ap.add_argument("--part", choices=(*PARTS, "all"), default="all", help="which part's steps to run (default: all)")
    ap.add_argument("--steps", nargs="*", help="only these step names (default: all of the part)")
    ap.add_argument("--headline-only", action="store_true",
                    help="skip the sweep (gemm) and the other layers (conv); gcn runs its default problem only anyway")
    ap.add_argument("--all-layers", action="store_true",
                    help=f"run every layer also for the conv steps before {CONV_LAYERS_FROM} (slow)")
    ap.add_argument("--sweep-iters", type=int, default=10)
    ap.add_argument("--sweep-warmup", type=int, default=2)
    ap.add_argument("--max-run-seconds", type=float, default=5.0,
                    help="skip a sweep size whose single run is predicted (from the headline) to take longer")
    ap.add_argument("--log", type=Path, help="where the binaries' full output goes (default: next to the manifest)")
    args = ap.parse_args(argv)

    parts = PARTS if args.part == "all" else (args.part,)
    steps = [s for s in read_manifest(args.manifest) if s["part"] in parts]
    steps.sort(key=lambda s: parts.index(s["part"]))  # every gemm step, then every conv step, then gcn
    if args.steps:
        steps = [s for s in steps if s["name"] in args.steps]
    if not steps:
        raise SystemExit(f"error: no steps of part '{args.part}' in {args.manifest}")
    facts = device_facts(steps[0]["binary"])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = args.out_dir / f"{facts['slug']}.csv"
    plans_path = args.out_dir / f"{facts['slug']}-plans.csv"
    log_path = args.log or args.manifest.parent / "bench.log"
    (args.manifest.parent / "results-csv").write_text(f"{csv_path}\n")  # for `make tutorial`'s plot step
    print(f"bench: {len(steps)} steps on {facts['name']} (CUDA {facts['cuda']}) -> {csv_path}; full output in {log_path}")

    failures, skipped, mismatched = [], [], set()
    with log_path.open("a") as log:
        def run_binary(step: dict, problem: str | None, tag: str, flags: list[str],
                       extra: list[str], out: Path = csv_path) -> tuple[dict | None, float]:
            """Runs one step on one problem (None: the binary's default, named in its row); returns its
            CSV row (None when it appended none) and the seconds taken."""
            cmd = [step["binary"], *flags, "--csv", str(out), *extra]
            log.write(f"\n$ {' '.join(cmd)}\n")
            log.flush()
            before = len(read_rows(out))
            t0 = time.time()
            p = subprocess.run(cmd, stdout=log, stderr=subprocess.PIPE, text=True)
            log.write(p.stderr)
            if p.returncode == NO_GPU:
                # The GPU is still there when the step's own --device-info answers: the step refuses
                # this GPU (built for another architecture), and says why in its last error line.
                if subprocess.run([step["binary"], "--device-info"], capture_output=True).returncode == 0:
                    why = (p.stderr.strip().splitlines() or ["it does not run on this GPU"])[-1]
                    raise StepSkipped(why.removeprefix("error: "))
                raise SystemExit("error: the GPU disappeared during the benchmark")
            rows = read_rows(out) if p.returncode in (0, 1) else []
            row = rows[-1] if len(rows) > before else None  # a row this run appended, never an older one
            if row is None or row["chapter"] != step["name"] or (problem is not None and row["problem"] != problem):
                failures.append(f"{tag} exited {p.returncode} without a result (see {log_path})")
                print(f"  {tag} FAILED: exit {p.returncode}, no result (see {log_path})")
                return None, 0.0
            if p.returncode == 1:
                failures.append(f"{tag} failed verification")
            declared_tf32, row_tf32 = step_math(step) == "TF32", row_precision(step, row) == "TF32"
            if declared_tf32 != row_tf32 and step["name"] not in mismatched:  # the manifest and the row disagree
                mismatched.add(step["name"])
                print(f"  note: {step['name']} is declared MATH {step_math(step).lower()} but its row compares in "
                      f"{row_precision(step, row)} (baseline {row.get('baseline')!r})")
            return row, time.time() - t0

        def run(step: dict, mnk, extra: list[str], out: Path = csv_path) -> dict | None:
            m, n, k = mnk
            tag = f"{step['name']:<28} {m}x{n}x{k:<8}"
            row, secs = run_binary(step, f"{m}x{n}x{k}", tag, ["--m", str(m), "--n", str(n), "--k", str(k)], extra, out)
            if row is not None:
                plan = f"  plan {row['config']}" if row.get("config") else ""
                # A TF32 row: against cuBLAS TF32, and what the tensor cores buy over cuBLAS FP32.
                tf32 = row_precision(step, row) == "TF32"
                of = "cuBLAS TF32" if tf32 else "cuBLAS"
                alt = vs_alt(row)
                fp32 = f"  {alt:5.2f}x cuBLAS FP32" if tf32 and alt is not None else ""
                print(f"  {tag} {float(row['gflops']) / 1e3:7.2f} TFLOP/s  {100 * float(row['ratio_to_baseline']):6.1f}% of "
                      f"{of}{fp32}  median {float(row['time_ms_median']):.4g} ms  verified: {row['verified']}{plan}  "
                      f"({secs:.0f} s)")
            return row

        def run_conv(step: dict, layer: str, extra: list[str]) -> dict | None:
            tag = f"{step['name']:<30} {layer:<16}"
            row, secs = run_binary(step, layer, tag, ["--layer", layer], extra)
            if row is None:
                return None
            alt = vs_alt(row)
            alt_name = row.get("alt_baseline") or "precomp"
            if "IMPLICIT_PRECOMP_GEMM" in alt_name and row_precision(step, row) == "TF32":
                alt_name = "TF32 precomp"  # a tensor-core step's: cuDNN's precomp, TF32 allowed
            elif alt_name.startswith("cuDNN IMPLICIT_PRECOMP_GEMM"):
                alt_name = "precomp"  # the plain steps' second baseline; chapter 20's is the unfused pipeline
            of_alt = f"{100 * alt:6.1f}% of {alt_name}  " if alt is not None else ""
            print(f"  {tag} {float(row['gflops']) / 1e3:7.2f} TFLOP/s  {of_alt}{100 * float(row['ratio_to_baseline']):6.1f}% "
                  f"of {row['baseline']}  median {float(row['time_ms_median']):.4g} ms  verified: {row['verified']}  "
                  f"({secs:.0f} s)")
            return row

        def run_gcn(step: dict) -> dict | None:
            tag = f"{step['name']:<28} default graph"
            row, secs = run_binary(step, None, tag, [], [])
            if row is None:
                return None
            copy = float(row.get("copy_gbps") or 0)
            of_copy = f"{100 * float(row['gbps']) / copy:5.1f}% of copy" if copy > 0 else "no copy bandwidth"
            print(f"  {step['name']:<28} {row['problem']:<24} {float(row['gbps']):7.1f} GB/s  {of_copy}  "
                  f"{100 * float(row['ratio_to_baseline']):6.1f}% of {row['baseline']}  median "
                  f"{float(row['time_ms_median']):.4g} ms  verified: {row['verified']}  ({secs:.0f} s)")
            return row

        layers = None  # the conv layer table, read from the first conv binary

        def run_step(step: dict) -> None:
            nonlocal layers
            if step["part"] == "gcn":
                run_gcn(step)
                return
            if step["part"] == "conv":
                if layers is None:
                    layers = conv_layers(step["binary"])
                head = run_conv(step, CONV_HEADLINE, [])
                if args.headline_only or head is None:
                    return
                if is_chapter(step["name"]) and int(step["name"][:2]) < CONV_LAYERS_FROM and not args.all_layers:
                    return
                head_ms = float(head["time_ms_median"])
                head_flops = next(conv_flops(lay) for lay in layers if lay["name"] == CONV_HEADLINE)
                for layer in layers:
                    if layer["name"] == CONV_HEADLINE:
                        continue
                    predicted_s = head_ms * 1e-3 * conv_flops(layer) / head_flops
                    if predicted_s > args.max_run_seconds:
                        print(f"  {step['name']:<30} {layer['name']:<16} skipped: one run would take ~{predicted_s:.0f} s "
                              f"(--max-run-seconds {args.max_run_seconds:g})")
                        continue
                    run_conv(step, layer["name"], ["--iters", str(args.sweep_iters), "--warmup", str(args.sweep_warmup)])
                return
            head = run(step, HEADLINE, [])
            if args.headline_only or head is None:
                return
            head_ms = float(head["time_ms_median"])
            sizes = list(SWEEP)
            if runs_suite(step):
                sizes += [mnk for mnk in SUITE if mnk not in sizes and mnk != HEADLINE]
            sweep_flags = ["--iters", str(args.sweep_iters), "--warmup", str(args.sweep_warmup)]
            for mnk in sizes:
                predicted_s = head_ms * 1e-3 * (mnk[0] * mnk[1] * mnk[2]) / (HEADLINE[0] * HEADLINE[1] * HEADLINE[2])
                if predicted_s > args.max_run_seconds:
                    print(f"  {step['name']:<28} {'x'.join(map(str, mnk)):<17} skipped: one run would take ~{predicted_s:.0f} s "
                          f"(--max-run-seconds {args.max_run_seconds:g})")
                    continue
                run(step, mnk, sweep_flags)
            if plan_tiles(step["binary"]):
                # Every candidate plan of every suite problem, timed next to the rule's model (--explain):
                # one row per candidate in the plans file, and the step's own row last.
                print(f"  {step['name']}: every tile shape and split on the suite (--explain) -> {plans_path}")
                for mnk in SUITE:
                    run(step, mnk, ["--explain", *sweep_flags], plans_path)

        for step in steps:
            try:
                run_step(step)
            except StepSkipped as why:
                skipped.append(step["name"])
                print(f"  {step['name']:<28} skipped: {why}")

    if skipped:
        print(f"bench: skipped on this GPU (built for another architecture): {', '.join(skipped)}")
    if failures:
        print("bench: FAILURES:\n  " + "\n  ".join(failures))
        return 1
    print(f"bench: done, results in {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
