#!/usr/bin/env python3
"""Fills the math, op and tags columns of results rows written before the rows said what their step
is, from a build's step list:

    python plots/fill_steps.py --manifest build/release/chapters.tsv plots/data/<gpu>.csv [...]

Each file is brought to the current header; a row whose step the list does not know (a renamed or
removed chapter) is refused with its line, and that file is left as it was. `make tutorial` does the
same before it runs anything (bench.py), so this is for files kept elsewhere.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tut_plots.gcn import TORCH_STEPS  # noqa: E402
from tut_plots.runner import declarations, fill_results, read_manifest  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, type=Path, help="<build>/chapters.tsv")
    ap.add_argument("csv", nargs="+", type=Path, help="results files (the binaries' schema)")
    args = ap.parse_args(argv)
    missing = [p for p in args.csv if not p.is_file()]
    if missing:
        raise SystemExit(f"error: no such file: {', '.join(map(str, missing))}")
    fill_results(args.csv, {**declarations(read_manifest(args.manifest)), **TORCH_STEPS})
    return 0


if __name__ == "__main__":
    sys.exit(main())
