"""Reading the results CSV that the chapter binaries write (schema: docs/measuring.md).

Shared by bench.py and plot.py. Everything here works from the CSV alone.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

HEADLINE = "4096x4096x4096"

# Columns the plots need, with their types. The CSV may have more (it is appended to over time).
COLUMNS = {
    "gpu": str, "cuda": str, "chapter": str, "step": str, "problem": str,
    "m": int, "n": int, "k": int,
    "time_ms_median": float, "time_ms_min": float, "time_ms_max": float,
    "gflops": float, "gbps": float, "baseline": str, "baseline_time_ms": float,
    "ratio_to_baseline": float, "pct_of_peak": float, "verified": str, "timestamp": str,
    "peak_gflops": float, "peak_gbps": float,
}


class CsvError(Exception):
    """A results CSV that cannot be used; the message names the file, line and column."""


@dataclass(frozen=True)
class Row:
    fields: dict

    def __getattr__(self, name):
        try:
            return self.fields[name]
        except KeyError as e:
            raise AttributeError(name) from e

    @property
    def is_chapter(self) -> bool:
        return is_chapter(self.chapter)

    @property
    def tflops(self) -> float:
        return self.gflops / 1e3

    @property
    def intensity(self) -> float:
        """FLOPs per byte of the minimum traffic: 2MNK / (4 (MK + KN + MN [+ MN if beta != 0]))."""
        return self.gflops / self.gbps if self.gbps > 0 else float("nan")


def is_chapter(name: str) -> bool:
    """Chapters are named NN_something; anything else (cublas_sgemm) is a library baseline."""
    return re.match(r"^\d\d_", name) is not None


def load(path: str | Path) -> list[Row]:
    path = Path(path)
    if not path.is_file():
        raise CsvError(f"{path}: no such file")
    with path.open(newline="") as f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            header = []
        if not header:
            raise CsvError(f"{path}: empty file (expected a header line)")
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise CsvError(f"{path}:1: missing column(s) {', '.join(missing)}")
        rows = []
        for record in reader:
            line = reader.line_num
            if not record:
                continue
            if len(record) != len(header):
                raise CsvError(f"{path}:{line}: {len(record)} fields, the header has {len(header)}")
            raw = dict(zip(header, record))
            fields = {}
            for col, typ in COLUMNS.items():
                try:
                    fields[col] = typ(raw[col])
                except ValueError:
                    raise CsvError(f"{path}:{line}: column '{col}' is not a{'n integer' if typ is int else ' number'}: "
                                   f"{raw[col]!r}") from None
            for col in ("time_ms_median", "baseline_time_ms"):
                if not fields[col] > 0:
                    raise CsvError(f"{path}:{line}: column '{col}' must be > 0, got {raw[col]!r}")
            rows.append(Row(fields))
    if not rows:
        raise CsvError(f"{path}: no result rows")
    return rows


def latest(rows: list[Row]) -> dict[tuple[str, str], Row]:
    """The newest row for each (chapter, problem): re-running a step replaces its numbers."""
    out: dict[tuple[str, str], Row] = {}
    for r in rows:
        key = (r.chapter, r.problem)
        if key not in out or r.timestamp >= out[key].timestamp:
            out[key] = r
    return out


def step_order(rows) -> list[str]:
    """Chapters in reading order (by number), then the baselines."""
    names = sorted({r.chapter for r in rows})
    return [n for n in names if is_chapter(n)] + [n for n in names if not is_chapter(n)]


def problem_sort_key(problem: str):
    m, n, k = (int(x) for x in problem.split("x"))
    return (m * n * k, m, n, k)
