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
from tut_plots import results  # noqa: E402
from tut_plots.gcn import TORCH_STEPS  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", required=True, type=Path, help="<build>/chapters.tsv")
    ap.add_argument("csv", nargs="+", type=Path, help="results files (the binaries' schema)")
    args = ap.parse_args(argv)
    try:
        steps = {**results.read_manifest_steps(args.manifest), **TORCH_STEPS}
    except results.CsvError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    status = 0
    for path in args.csv:
        try:
            n = results.fill_steps(path, steps)
            print(f"{path}: {n} rows filled" if n else f"{path}: nothing to fill")
        except (results.CsvError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
