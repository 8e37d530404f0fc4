"""Every number the tables, charts and console lines print, one rule each.

Milliseconds have one rule everywhere (ms): four significant digits, so that a GCN step's
hundredths of a millisecond, a small convolution layer's tenths and a naive GEMM's 80 ms all keep
the same precision. A value that is missing (None, nan) prints as a dash.
"""
from __future__ import annotations

import math

DASH = "–"


def missing(x) -> bool:
    return x is None or x != x


def ms(x: float | None) -> str:
    """A time in milliseconds, four significant digits: 0.02400, 0.1234, 1.294, 30.90, 1234."""
    if missing(x):
        return DASH
    digits = max(0, 3 - math.floor(math.log10(x))) if x > 0 else 3
    return f"{x:.{digits}f}"


def timing(r) -> str:
    """A row's median with its spread, as every table prints it: '1.294 [1.268, 1.359]'."""
    return f"{ms(r.time_ms_median)} [{ms(r.time_ms_min)}, {ms(r.time_ms_max)}]"


def pct(x: float | None) -> str:
    """A ratio as a percentage, one decimal: 0.8 -> '80.0%'."""
    return DASH if missing(x) else f"{100 * x:.1f}%"


def num(x: float | None) -> str:
    """A rate (TFLOP/s) or a ratio (× a baseline), two decimals."""
    return DASH if missing(x) else f"{x:.2f}"


def gbs(x: float | None) -> str:
    """A bandwidth in GB/s, whole numbers."""
    return DASH if missing(x) else f"{x:.0f}"


def problem(name: str) -> str:
    """A GEMM problem's name as the tables print it: '4096x4096x4096' -> '4096×4096×4096'."""
    return name.replace("x", "×")


def dims(r) -> str:
    """A row's GEMM shape M×N×K (a convolution's: its implicit GEMM's)."""
    return f"{r.m}×{r.n}×{r.k}"


def label(r) -> str:
    """How a row is named in the tables and charts: '01 naive' for a chapter, a baseline by its step."""
    return f"{r.chapter[:2]} {r.step}" if r.is_chapter else r.step
