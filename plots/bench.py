#!/usr/bin/env python3
"""Runs every step of the build's chapter list at the headline size and over a size sweep.

    python plots/bench.py --manifest build/release/chapters.tsv [--out-dir plots/data] [--part gemm]

The list of steps is <build>/chapters.tsv, written by CMake from the tut_add_chapter lines. Each
binary appends its own row to <out-dir>/<gpu-slug>.csv (it verifies and times itself against
cuBLAS in the same process); this script only chooses the problems. Exits 1 if any run failed
verification or crashed, 3 if there is no GPU.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

HEADLINE = (4096, 4096, 4096)
# 256 to 8192, with odd sizes next to the headline (not multiples of any tile).
SWEEP = [(256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4095, 4095, 4095),
         (4097, 4093, 4099), (6144, 6144, 6144), (8192, 8192, 8192)]
NO_GPU = 3


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


def last_row(csv_path: Path) -> dict | None:
    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[-1] if rows else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, type=Path)
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    ap.add_argument("--part", default="gemm")
    ap.add_argument("--steps", nargs="*", help="only these step names (default: all of the part)")
    ap.add_argument("--headline-only", action="store_true", help="skip the sweep")
    ap.add_argument("--sweep-iters", type=int, default=10)
    ap.add_argument("--sweep-warmup", type=int, default=2)
    ap.add_argument("--max-run-seconds", type=float, default=5.0,
                    help="skip a sweep size whose single run is predicted (from the headline) to take longer")
    ap.add_argument("--log", type=Path, help="where the binaries' full output goes (default: next to the manifest)")
    args = ap.parse_args(argv)

    steps = [s for s in read_manifest(args.manifest) if s["part"] == args.part]
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

    failures = []
    with log_path.open("a") as log:
        def run(step: dict, mnk, extra: list[str]) -> dict | None:
            m, n, k = mnk
            cmd = [step["binary"], "--m", str(m), "--n", str(n), "--k", str(k), "--csv", str(csv_path), *extra]
            log.write(f"\n$ {' '.join(cmd)}\n")
            log.flush()
            t0 = time.time()
            p = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
            if p.returncode == NO_GPU:
                raise SystemExit("error: the GPU disappeared during the benchmark")
            row = last_row(csv_path) if p.returncode in (0, 1) else None
            tag = f"{step['name']:<28} {m}x{n}x{k:<8}"
            if row is None or row["chapter"] != step["name"] or row["problem"] != f"{m}x{n}x{k}":
                failures.append(f"{tag} exited {p.returncode} without a result (see {log_path})")
                print(f"  {tag} FAILED: exit {p.returncode}, no result (see {log_path})")
                return None
            if p.returncode == 1:
                failures.append(f"{tag} failed verification")
            print(f"  {tag} {float(row['gflops']) / 1e3:7.2f} TFLOP/s  {100 * float(row['ratio_to_baseline']):6.1f}% of "
                  f"cuBLAS  median {float(row['time_ms_median']):.4g} ms  verified: {row['verified']}  "
                  f"({time.time() - t0:.0f} s)")
            return row

        for step in steps:
            head = run(step, HEADLINE, [])
            if args.headline_only or head is None:
                continue
            head_ms = float(head["time_ms_median"])
            for mnk in SWEEP:
                predicted_s = head_ms * 1e-3 * (mnk[0] * mnk[1] * mnk[2]) / (HEADLINE[0] * HEADLINE[1] * HEADLINE[2])
                if predicted_s > args.max_run_seconds:
                    print(f"  {step['name']:<28} {'x'.join(map(str, mnk)):<17} skipped: one run would take ~{predicted_s:.0f} s "
                          f"(--max-run-seconds {args.max_run_seconds:g})")
                    continue
                run(step, mnk, ["--iters", str(args.sweep_iters), "--warmup", str(args.sweep_warmup)])

    if failures:
        print("bench: FAILURES:\n  " + "\n  ".join(failures))
        return 1
    print(f"bench: done, results in {csv_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
