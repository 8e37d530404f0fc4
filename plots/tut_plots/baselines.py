"""One summary of the library baselines that every step times in its own process.

Every row carries the time of its library baseline (baseline, baseline_time_ms) and, where the
family has one, of a second (alt_baseline, alt_baseline_time_ms), each measured in the step's own
process. A table or chart that shows a library once per problem shows the summary over those
processes: the median of their times and the name most of them gave (the newest among equals).
The families read the two as theirs: conv's cuDNN fastest and precomp, gcn's library and second
library of a kind, a TF32 GEMM's cuBLAS TF32 and cuBLAS FP32.
"""
from __future__ import annotations

from .results import Row, baseline_family, median


def most_common(xs: list[str]) -> str:
    """The most frequent value; among equals, the first (callers pass the newest first)."""
    if not xs:
        return ""
    return max(dict.fromkeys(xs), key=xs.count)


def newest_first(rows) -> list[Row]:
    return sorted(rows, key=lambda r: r.timestamp, reverse=True)


class Baseline:
    """One library over the processes that timed it: the name most of them gave, the median time.
    row: the problem's row whose FLOPs and bytes give the library's rates."""

    def __init__(self, row: Row, names: list[str], times: list[float]):
        self.row = row
        self.names = names  # newest first
        self.name = most_common(names)
        self.ms = median(times)

    @property
    def has(self) -> bool:
        return bool(self.name) and self.ms == self.ms

    @property
    def tflops(self) -> float:
        return self.row.tflops_at(self.ms) if self.has else float("nan")

    @property
    def gbps(self) -> float:
        return self.row.gbps_at(self.ms) if self.has else float("nan")

    @property
    def family(self) -> str:
        """The name without its parenthesis, by the same vote: 'cuDNN fastest FMA'."""
        return most_common([baseline_family(n)[0] for n in self.names])

    @property
    def algo(self) -> str:
        """The parenthesis most names end with: 'WINOGRAD_NONFUSED' ('' without one)."""
        return most_common([baseline_family(n)[1] for n in self.names])

    @property
    def label(self) -> str:
        return f"{self.family} ({self.algo})" if self.algo else self.family


class Baselines:
    """Both baselines of a set of rows (one problem's, of the steps that compare with the same
    libraries): main from each row's baseline, alt from its alt_baseline where it has one.
    row: the row for the problem's FLOPs and bytes (default: the newest of rows)."""

    def __init__(self, rows: list[Row], row: Row | None = None):
        newest = newest_first(rows)
        self.row = row or newest[0]
        self.processes = len(rows)
        self.main = Baseline(self.row, [r.baseline for r in newest], [r.baseline_time_ms for r in rows])
        with_alt = [r for r in newest if r.alt_baseline_time_ms is not None]
        self.alt = Baseline(self.row, [r.alt_baseline for r in with_alt], [r.alt_baseline_time_ms for r in with_alt])
