#!/usr/bin/env python3
"""Appends the metrics of an Nsight Compute raw-page CSV to plots/data/<gpu-slug>-metrics.csv.

    python plots/metrics.py --ncu-csv build/release/profile/01_naive_gemm.csv \
        --chapter 01_naive_gemm --out plots/data/<slug>-metrics.csv -- [the binary's flags]

Called by `make profile`. One output row per (kernel, metric): chapter, problem, kernel, metric,
value, unit, timestamp. Also prints the metrics as a table.
"""
from __future__ import annotations

import argparse
import csv
import sys
from datetime import datetime, timezone
from pathlib import Path

OUT_COLUMNS = ["chapter", "problem", "kernel", "metric", "value", "unit", "timestamp"]
ID_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
              "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"}


def problem_from_flags(flags: list[str], part: str = "gemm") -> str:
    """The problem's name as the results CSV writes it: MxNxK, the conv layer / --shape, or the GCN graph."""
    if part == "gcn":
        opts = {"--nodes": "281903", "--edges": "2312497", "--rmat-seed": "1"}  # the GCN harness's defaults
        for i, f in enumerate(flags):
            name, _, inline = f.partition("=")
            value = inline or (flags[i + 1] if i + 1 < len(flags) else "")
            if name == "--graph":
                return Path(value).name  # the loader names a file's graph after the file
            if name in opts:
                opts[name] = value
        return f"rmat_{opts['--nodes']}_{opts['--edges']}_s{opts['--rmat-seed']}"
    for i, f in enumerate(flags):
        name, _, inline = f.partition("=")
        if name in ("--layer", "--shape"):
            return inline or (flags[i + 1] if i + 1 < len(flags) else "")
    if part == "conv":
        return "seed_3x3"  # the conv harness's headline default
    size = {"--m": "4096", "--n": "4096", "--k": "4096"}  # the GEMM harness's headline defaults
    for i, f in enumerate(flags):
        name, _, inline = f.partition("=")
        if name in size:
            size[name] = inline or (flags[i + 1] if i + 1 < len(flags) else size[name])
    return f"{size['--m']}x{size['--n']}x{size['--k']}"


def read_ncu_raw(path: Path) -> list[dict]:
    """Rows of ncu's `--page raw --csv`: a header, a units row, then one row per profiled kernel."""
    with path.open(newline="") as f:
        lines = [line for line in f if not line.startswith("==")]  # drop ncu's own log lines
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        raise SystemExit(f"error: {path}: no profiled kernel in the ncu output")
    header, units, data = rows[0], rows[1], rows[2:]
    out = []
    for rec in data:
        kernel = rec[header.index("Kernel Name")] if "Kernel Name" in header else "?"
        for col, unit, value in zip(header, units, rec):
            if col not in ID_COLUMNS and "__" in col:
                out.append({"kernel": kernel, "metric": col, "value": value.replace(",", ""), "unit": unit})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ncu-csv", required=True, type=Path)
    ap.add_argument("--chapter", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--part", default="gemm", help="the step's part (from chapters.tsv): gemm or conv")
    ap.add_argument("flags", nargs="*", help="the flags the binary was profiled with (after --)")
    args = ap.parse_args(argv)
    problem = problem_from_flags(args.flags, args.part)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    metrics = read_ncu_raw(args.ncu_csv)
    new = not args.out.exists() or args.out.stat().st_size == 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(OUT_COLUMNS)
        for m in metrics:
            w.writerow([args.chapter, problem, m["kernel"], m["metric"], m["value"], m["unit"], stamp])
    width = max(len(m["metric"]) for m in metrics)
    print(f"{args.chapter} {problem}: {metrics[0]['kernel'] if metrics else ''}")
    for m in metrics:
        print(f"  {m['metric']:<{width}}  {m['value']:>16} {m['unit']}")
    print(f"appended {len(metrics)} rows to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
