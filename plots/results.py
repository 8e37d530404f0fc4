"""Reading the results CSV that the chapter binaries write (schema: docs/measuring.md).

Shared by bench.py and plot.py. Everything here works from the CSV alone.

The file holds every part of the tutorial; the `part` column says which one a row belongs to
("gemm" or "conv"). A file written before that column existed (its header ends at `peak_gbps`) is
read as Part I: every row is part "gemm" with no second baseline. A header with some of the new
columns but not all is refused.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

HEADLINE = "4096x4096x4096"  # Part I's headline problem (the `problem` column)
CONV_HEADLINE = "seed_3x3"   # Part II's headline layer

PARTS = ("gemm", "conv")

# Columns the plots need, with their types. The CSV may have more (it is appended to over time).
COLUMNS = {
    "gpu": str, "cuda": str, "chapter": str, "step": str, "problem": str,
    "m": int, "n": int, "k": int,
    "time_ms_median": float, "time_ms_min": float, "time_ms_max": float,
    "gflops": float, "gbps": float, "baseline": str, "baseline_time_ms": float,
    "ratio_to_baseline": float, "pct_of_peak": float, "verified": str, "timestamp": str,
    "peak_gflops": float, "peak_gbps": float,
}

# Appended to the header when Part II arrived, in this order. alt_baseline_time_ms is empty where a
# row has no second baseline (every GEMM row); it is read as None.
PART_COLUMNS = ("part", "alt_baseline", "alt_baseline_time_ms")


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
    def number(self) -> int | None:
        """The chapter number (13 for 13_direct_conv), None for a library baseline."""
        return int(self.chapter[:2]) if self.is_chapter else None

    @property
    def tflops(self) -> float:
        return self.gflops / 1e3

    @property
    def intensity(self) -> float:
        """FLOPs per byte of the minimum traffic: 2MNK / (4 (MK + KN + MN [+ MN if beta != 0])) for
        GEMM; for a convolution 2NKPQCRS / (4 (x + w + y elements))."""
        return self.gflops / self.gbps if self.gbps > 0 else float("nan")

    @property
    def gflop(self) -> float:
        """The problem's FLOPs in units of 10^9 (from the rate and the time, as the binary counted them)."""
        return self.gflops * self.time_ms_median * 1e-3

    def tflops_at(self, time_ms: float) -> float:
        """The rate of this row's problem done in time_ms (a baseline's time, say)."""
        return self.gflop / time_ms if time_ms and time_ms > 0 else float("nan")

    @property
    def alt_ratio(self) -> float:
        """alt_baseline_time_ms / time_ms_median: like ratio_to_baseline, for the second baseline."""
        if self.alt_baseline_time_ms is None:
            return float("nan")
        return self.alt_baseline_time_ms / self.time_ms_median


def is_chapter(name: str) -> bool:
    """Chapters are named NN_something; anything else (cublas_sgemm) is a library baseline."""
    return re.match(r"^\d\d_", name) is not None


def _optional_float(text: str) -> float | None:
    return None if text.strip() == "" else float(text)


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
        present = [c for c in PART_COLUMNS if c in header]
        if present and len(present) != len(PART_COLUMNS):
            absent = [c for c in PART_COLUMNS if c not in header]
            raise CsvError(f"{path}:1: has column(s) {', '.join(present)} but not {', '.join(absent)}: a header "
                           f"either ends at peak_gbps (rows read as part gemm) or has all of {', '.join(PART_COLUMNS)}")
        old_header = not present  # written before Part II: every row is Part I
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
            if old_header:
                fields.update(part="gemm", alt_baseline="", alt_baseline_time_ms=None)
            else:
                fields["part"] = raw["part"]
                if fields["part"] not in PARTS:
                    raise CsvError(f"{path}:{line}: column 'part' must be one of {', '.join(PARTS)}, got {raw['part']!r}")
                fields["alt_baseline"] = raw["alt_baseline"]
                try:
                    alt = _optional_float(raw["alt_baseline_time_ms"])
                except ValueError:
                    raise CsvError(f"{path}:{line}: column 'alt_baseline_time_ms' is not a number: "
                                   f"{raw['alt_baseline_time_ms']!r}") from None
                if alt is not None and not alt > 0:
                    raise CsvError(f"{path}:{line}: column 'alt_baseline_time_ms' must be > 0 or empty, "
                                   f"got {raw['alt_baseline_time_ms']!r}")
                if (alt is None) != (fields["alt_baseline"] == ""):
                    raise CsvError(f"{path}:{line}: columns 'alt_baseline' and 'alt_baseline_time_ms' must be both "
                                   f"empty or both set, got {raw['alt_baseline']!r} and {raw['alt_baseline_time_ms']!r}")
                fields["alt_baseline_time_ms"] = alt
            rows.append(Row(fields))
    if not rows:
        raise CsvError(f"{path}: no result rows")
    return rows


def of_part(rows, part: str) -> list[Row]:
    return [r for r in rows if r.part == part]


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


def problem_order(rows) -> list[str]:
    """The problems (conv layers) in the order they first appear in the file: bench.py runs the
    headline first and then the layer table in its own order, so this is the table's order without
    a second copy of the table here."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.setdefault(r.problem, None)
    return list(seen)


def median(xs: list[float]) -> float:
    xs = sorted(x for x in xs if x is not None and not math.isnan(x))
    if not xs:
        return float("nan")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def baseline_family(name: str) -> tuple[str, str]:
    """'cuDNN fastest FMA (WINOGRAD_NONFUSED)' -> ('cuDNN fastest FMA', 'WINOGRAD_NONFUSED'); a name
    without a trailing parenthesis -> (name, '')."""
    m = re.match(r"^(.*?)\s*\(([^()]*)\)$", name)
    return (m.group(1), m.group(2)) if m else (name, "")


# Part II's rows come in two kinds, told apart by their baselines (the harness names them):
#   a convolution step (13-19): baseline "cuDNN fastest FMA (ALGO)", alt "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)";
#   a fused-epilogue step (20, y = max(conv + bias[k], 0)): baseline "cuDNN fused conv+bias+ReLU (...)"
#     (cudnnConvolutionBiasActivationForward), alt "<NN_step> + bias/ReLU kernel" (the unfused pipeline).
# A build without cuDNN names "im2col + cuBLAS FP32 (...)" and "im2col + cuBLAS FP32 + bias/ReLU kernel (...)".
# gflops counts the convolution's FLOPs in both kinds.
CONV_FASTEST = "cuDNN fastest FMA"


def is_fused_epilogue(r: Row) -> bool:
    """A convolution row whose step also applies bias and ReLU, compared against fused and unfused
    conv + bias + ReLU: its baseline names the ReLU, a plain convolution's never does."""
    return r.part == "conv" and "relu" in r.baseline.lower()


def conv_baseline_rows(rows) -> list[Row]:
    """The rows whose baselines are the plain convolution's cuDNN baselines: those whose baseline is
    "cuDNN fastest FMA (...)"; where there is none (a build without cuDNN), the rows of the plain
    convolution steps. Never a fused-epilogue row: its baselines compute conv + bias + ReLU."""
    rows = list(rows)
    fastest = [r for r in rows if r.baseline.startswith(CONV_FASTEST)]
    return fastest or [r for r in rows if not is_fused_epilogue(r)]


def unfused_chapter(r: Row) -> str | None:
    """The chapter a fused-epilogue row's unfused pipeline runs ("19_implicit_gemm_double_buffer +
    bias/ReLU kernel" -> "19_implicit_gemm_double_buffer"), None when its alt names none."""
    m = re.match(r"^(\d\d_\w+)", r.alt_baseline)
    return m.group(1) if m else None


def precision(r: Row) -> str:
    """The arithmetic a row's comparison is in, from its baselines' names: 'FP32' unless a name
    mentions a lower precision or tensor-core math (TF32, FP16, BF16, FP8) other than to exclude it
    ('no TF32'). Part I and Part II compare FP32 FMA against FP32 FMA; a row that does not is kept
    out of the FP32 charts and tables, and the plots say so."""
    text = f"{r.baseline} {r.alt_baseline}".upper().replace("NO TF32", "")
    for p in ("TF32", "FP16", "BF16", "FP8"):
        if p in text:
            return p
    return "FP32"
