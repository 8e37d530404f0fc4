#!/usr/bin/env python3
"""Charts and tables from a results CSV (plots/data/<gpu-slug>.csv), nothing else.

    python plots/plot.py --csv plots/data/nvidia-h100-80gb-hbm3.csv [--part gemm|conv|gcn|all] \
        [--out-dir plots] [--readme README.md [--results docs/results.md]] [--chapters-dir chapters]

For each part with rows in the CSV (or the one --part names):
  gemm: <out-dir>/<slug>-gemm-{speedup,sweep,roofline}.png, and -gemm-suite.png (chapter 10's suite of
        small and odd problems, when measured), README.md's results:gemm block; a chapter that
        plans each problem also gets the table of its candidate plans from <slug>-plans.csv (next to
        the CSV, written by bench.py with --explain);
        in TF32 (the tensor-core chapters 11 and 12 and cuBLAS TF32): <slug>-gemm-tf32-{speedup,sweep,
        roofline}.png and -gemm-tf32-suite.png, README.md's results:gemm-tf32 block (the headline
        table against cuBLAS TF32 with cuBLAS FP32 as the reference, the sweep, the suite);
  conv: <out-dir>/<slug>-conv-{speedup,layers,roofline}.png, README.md's results:conv block;
        in TF32 (chapters 23-24): <slug>-conv-tf32-layers.png, README.md's results:conv-tf32 block (per
        layer against cuDNN with TF32 allowed, with the geometric mean);
  gcn:  <out-dir>/<slug>-gcn-{speedup,bandwidth,layer}.png (layer: when a step with OP layer or a PyTorch row
        of plots/torch_gcn.py was measured), README.md's results:gcn block.
With --results, the README.md blocks above go to that file instead, and README.md's results:summary
block gets one row per part made: its last step against the library at its best.
Prints the results tables and rewrites the text between the results markers of each measured
chapter's README.md (a sweep table for a GEMM chapter, a per-layer table for a convolution one,
the default graph's row for a GCN one). Parts I and II chart FP32 comparisons, Part III FP64 ones;
the TF32 rows (results.precision: their baselines' names say TF32) go to the TF32 charts and tables
and never to those, and a row in any other precision is left out; every such row is named.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tut_plots import FAMILIES, results  # noqa: E402
from tut_plots.markdown import MarkerError, Outputs  # noqa: E402
from tut_plots.results import CsvError, Row  # noqa: E402


def split_precision(rows: list[Row], part: str) -> tuple[list[Row], dict[str, list[Row]]]:
    """(the rows in their part's precision (FP32; FP64 for gcn), {precision: rows} of those with charts
    of their own (the family's SECTIONS: TF32 in Parts I and II)). Every row in another precision is
    named on stdout: where it goes instead, or that it is left out."""
    want = results.part_precision(part)
    groups = results.by_precision(rows)
    own = {}
    for prec in sorted(groups):
        if prec == want:
            continue
        section = FAMILIES[part].SECTIONS.get(prec)
        for chapter in sorted({r.chapter for r in groups[prec]}):
            where = f"its rows go to the {prec} charts and tables (README results:{section})" if section else "left out"
            print(f"note: {chapter} compares in {prec}, not in the {want} charts and tables: {where}")
        if section:
            own[prec] = groups[prec]
    return groups.get(want, []), own


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="results CSV written by the chapter binaries")
    ap.add_argument("--part", choices=(*results.PARTS, "all"), default="all",
                    help="which part's charts and tables to make (default: every part with rows)")
    ap.add_argument("--out-dir", default=str(Path(__file__).resolve().parent), help="where the PNGs go")
    ap.add_argument("--readme", help="README.md whose results blocks are rewritten (with --results: its summary table)")
    ap.add_argument("--results", help="the file the results blocks go to instead (docs/results.md); README.md then "
                                      "gets the short table of where each part ends")
    ap.add_argument("--chapters-dir", help="folder of chapter folders whose README results blocks are rewritten")
    args = ap.parse_args(argv)
    try:
        all_rows = results.load(args.csv)
        parts = results.PARTS if args.part == "all" else (args.part,)
        slug = Path(args.csv).stem  # the binaries name the file after the GPU (its slug)
        plans_csv = Path(args.csv).with_name(f"{slug}-plans.csv")
        metrics_csv = Path(args.csv).with_name(f"{slug}-metrics.csv")
        out = Outputs(Path(args.out_dir), slug, Path(args.csv).name, Path(args.readme) if args.readme else None,
                      results.load(plans_csv) if plans_csv.is_file() else [],
                      results.load_metrics(metrics_csv) if metrics_csv.is_file() else [],
                      Path(args.results) if args.results else None)
        for part in parts:
            rows, own = split_precision(results.of_part(all_rows, part), part)
            if not rows and not own:
                if args.part != "all":
                    raise CsvError(f"{args.csv}: no rows of part '{part}'")
                continue
            family, want = FAMILIES[part], results.part_precision(part)
            images = []
            if rows:
                images += family.outputs(rows, want, out)
            else:
                print(f"note: no {want} rows of part '{part}': its {want} charts and tables are left as they were")
            for prec, group in own.items():
                print()
                images += family.outputs(group, prec, out)
            for p in images:
                print(f"wrote {p}")
        out.write(Path(args.chapters_dir) if args.chapters_dir else None)
    except (CsvError, MarkerError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
