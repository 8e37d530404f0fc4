"""One summary of a library baseline over the processes that timed it.

Every row carries the time of its library baseline (baseline, baseline_time_ms) and, where the
family has one, of a second (alt_baseline, alt_baseline_time_ms). results.latest has already
replaced both by the library at its best: the lowest median among the processes that timed the same
library on the same problem (results.references), with the name that process gave, the number of
processes and the spread of their medians (<slot>_processes, <slot>_lo, <slot>_hi). A table or chart
that shows a library once per problem shows that reference. The families read the two as theirs:
conv's cuDNN fastest and precomp (TF32: cuDNN in NHWC and in NCHW), gcn's library and its second
line, a TF32 GEMM's cuBLAS TF32 and cuBLAS FP32.
"""
from __future__ import annotations

from .results import SLOTS, Row, baseline_family

# A library whose process medians differ by more than this (max / min - 1) gets its spread drawn.
WIDE_SPREAD = 0.05


def most_common(xs: list[str]) -> str:
    """The most frequent value; among equals, the first (callers pass the newest first)."""
    if not xs:
        return ""
    return max(dict.fromkeys(xs), key=xs.count)


def newest_first(rows) -> list[Row]:
    return sorted(rows, key=lambda r: r.timestamp, reverse=True)


class Baseline:
    """One library (slot 0: the baseline, 1: the second) at its best over the processes that timed
    it, as the rows carry it. row: the problem's row whose FLOPs and bytes give the library's rates."""

    def __init__(self, row: Row, rows: list[Row], slot: int):
        name_col, time_col, _ = SLOTS[slot]
        have = [r for r in rows if r.fields.get(time_col) is not None and r.fields.get(name_col)]
        self.row = row
        self.name, self.ms = "", float("nan")
        self.lo = self.hi = float("nan")
        self.processes = 0
        if have:
            best = min(have, key=lambda r: r.fields[time_col])
            self.name, self.ms = best.fields[name_col], best.fields[time_col]
            lows = [r.fields.get(name_col + "_lo") for r in have if r.fields.get(name_col + "_lo") is not None]
            highs = [r.fields.get(name_col + "_hi") for r in have if r.fields.get(name_col + "_hi") is not None]
            self.lo = min(lows) if lows else self.ms
            self.hi = max(highs) if highs else self.ms
            self.processes = max(r.fields.get(name_col + "_processes") or 1 for r in have)

    @property
    def has(self) -> bool:
        return bool(self.name) and self.ms == self.ms

    @property
    def spread(self) -> float:
        """max / min - 1 of the processes' medians (0 with one process)."""
        return self.hi / self.lo - 1 if self.has and self.lo > 0 else 0.0

    @property
    def wide(self) -> bool:
        return self.spread > WIDE_SPREAD

    @property
    def tflops(self) -> float:
        return self.row.tflops_at(self.ms) if self.has else float("nan")

    @property
    def gbps(self) -> float:
        return self.row.gbps_at(self.ms) if self.has else float("nan")

    def range_in(self, unit: str) -> tuple[float, float]:
        """The slowest and the fastest process in a chart's unit ("ms", "tflops" or "gbps"), low first."""
        if unit == "ms":
            return self.lo, self.hi
        at = getattr(self.row, f"{unit}_at")
        return at(self.hi), at(self.lo)

    @property
    def family(self) -> str:
        """The name without its parenthesis: 'cuDNN fastest FMA'."""
        return baseline_family(self.name)[0]

    @property
    def algo(self) -> str:
        """The parenthesis of the best process's name: 'WINOGRAD_NONFUSED' ('' without one)."""
        return baseline_family(self.name)[1]

    @property
    def label(self) -> str:
        return f"{self.family} ({self.algo})" if self.algo else self.family


class Baselines:
    """Both baselines of a set of rows (one problem's, of the steps that compare with the same
    libraries). row: the row for the problem's FLOPs and bytes (default: the newest of rows)."""

    def __init__(self, rows: list[Row], row: Row | None = None):
        newest = newest_first(rows)
        self.row = row or newest[0]
        self.main = Baseline(self.row, newest, 0)
        self.alt = Baseline(self.row, newest, 1)

    @property
    def processes(self) -> int:
        """How many processes timed the main baseline (the steps' own, and bench.py's repeats)."""
        return self.main.processes

    @property
    def better(self) -> Baseline:
        """The faster of the two (a TF32 convolution's reference: cuDNN in NHWC or in NCHW)."""
        if not self.alt.has or (self.main.has and self.main.ms <= self.alt.ms):
            return self.main
        return self.alt
