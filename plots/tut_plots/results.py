"""Reading the results CSV that the chapter binaries write (schema: docs/measuring.md).

Shared by every module of the package and by torch_gcn.py. Everything here works from the CSV
alone and knows no family: what a family's problems and steps are lives in its module (gemm.py,
conv.py, gcn.py); which precision a row compares in (precision) is here, the plots dispatch on it.

The file holds every part of the tutorial; the `part` column says which one a row belongs to
("gemm", "conv" or "gcn"). A file written before that column existed (its header ends at
`peak_gbps`) is read as Part I: every row is part "gemm" with no second baseline. A header with
some of the part columns but not all is refused. The last column, `copy_gbps` (the device-to-device
copy bandwidth a binary measured in its own process), came with Part III: a file without it reads
as if it were empty in every row; a header with it but without the part columns is refused. After
it, `config` (the plan a step chose for the problem, chapter 10's "128x64 split 4"; empty for steps
without one) came with chapter 10: a file without it reads as if it were empty in every row; a
header with it but without copy_gbps is refused.

The last three columns say what the step is, as its line in chapters/CMakeLists.txt declares it:
`math` (fp32, tf32, fp64), `op` (what it computes: gemm; conv, conv_bias_relu; xw, spmm,
log_softmax, layer) and `tags` (space-separated: suite, planned, all_layers, layer_chart). Every
classification of a row reads them, never its chapter's number or a baseline's name
(docs/architecture.md). A file written before they existed, or a row with them empty, is refused
with the command that fills them from the build's step list (fill_steps, plots/fill_steps.py).
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

PARTS = ("gemm", "conv", "gcn")

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
# Appended when Part III arrived: GB/s of a device-to-device copy (bytes read + written / time),
# measured in the row's process; empty (or 0) where a binary did not measure it. Read as None then.
COPY_COLUMN = "copy_gbps"
# Appended with chapter 10: the plan (tile shape and split) the step ran, empty for steps without one.
CONFIG_COLUMN = "config"
# Appended when a step's declaration reached its rows: what the step is (core/step.hpp).
STEP_COLUMNS = ("math", "op", "tags")
MATHS = ("fp32", "tf32", "fp64")
# Appended last: the run a row's process belonged to (--run; bench.py gives every process it starts
# one id). Empty for a process started by hand, and in a file written before it (read as empty).
RUN_COLUMN = "run"

# The whole header as the binaries write it today, in order (common/src/core/csv.cpp,
# result_columns(); a test checks the two agree). torch_gcn.py writes its rows with it.
HEADER = ("gpu", "cuda", "chapter", "step", "problem", "m", "n", "k", "time_ms_median", "time_ms_min",
          "time_ms_max", "gflops", "gbps", "baseline", "baseline_time_ms", "ratio_to_baseline", "pct_of_peak",
          "rel_err", "verified", "timestamp", "alpha", "beta", "iters", "clock_mhz", "peak_gflops", "peak_gbps",
          *PART_COLUMNS, COPY_COLUMN, CONFIG_COLUMN, *STEP_COLUMNS, RUN_COLUMN)


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

    def has_tag(self, tag: str) -> bool:
        """Whether the step was declared with TAGS ... tag (the `tags` column, space-separated)."""
        return tag in self.tags.split()

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
    def gbytes(self) -> float:
        """The problem's minimum traffic in units of 10^9 bytes (from the rate and the time)."""
        return self.gbps * self.time_ms_median * 1e-3

    def gbps_at(self, time_ms: float) -> float:
        """The bandwidth of this row's minimum bytes moved in time_ms (a baseline's time, say)."""
        return self.gbytes / (time_ms * 1e-3) if time_ms and time_ms > 0 else float("nan")

    @property
    def copy_ratio(self) -> float:
        """gbps / copy_gbps: the share of the copy bandwidth measured in the same process (nan without one)."""
        return self.gbps / self.copy_gbps if self.copy_gbps else float("nan")

    @property
    def floor_ms(self) -> float:
        """The memory floor: the minimum bytes moved at the copy bandwidth, gbps * time / copy_gbps."""
        return self.gbps * self.time_ms_median / self.copy_gbps if self.copy_gbps else float("nan")

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


def fill_command(path) -> str:
    return f"python plots/fill_steps.py --manifest <build>/chapters.tsv {path}"


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
        if COPY_COLUMN in header and not present:
            raise CsvError(f"{path}:1: has column {COPY_COLUMN} but not {', '.join(PART_COLUMNS)}: a header "
                           f"with {COPY_COLUMN} has the part columns before it")
        if CONFIG_COLUMN in header and COPY_COLUMN not in header:
            raise CsvError(f"{path}:1: has column {CONFIG_COLUMN} but not {COPY_COLUMN}: a header with "
                           f"{CONFIG_COLUMN} has {COPY_COLUMN} before it")
        old_header = not present  # written before Part II: every row is Part I
        has_copy = COPY_COLUMN in header
        has_config = CONFIG_COLUMN in header
        if not all(c in header for c in STEP_COLUMNS):
            raise CsvError(f"{path}:1: no columns {', '.join(STEP_COLUMNS)} (written before the rows said what "
                           f"their step is): fill them from the build's step list with `{fill_command(path)}`")
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
            fields[COPY_COLUMN] = None
            if has_copy:
                try:
                    copy = _optional_float(raw[COPY_COLUMN])
                except ValueError:
                    raise CsvError(f"{path}:{line}: column '{COPY_COLUMN}' is not a number: "
                                   f"{raw[COPY_COLUMN]!r}") from None
                if copy is not None and not copy >= 0:
                    raise CsvError(f"{path}:{line}: column '{COPY_COLUMN}' must be >= 0 or empty, "
                                   f"got {raw[COPY_COLUMN]!r}")
                fields[COPY_COLUMN] = copy or None  # 0: not measured
            fields[CONFIG_COLUMN] = raw[CONFIG_COLUMN] if has_config else ""
            for col in STEP_COLUMNS:
                fields[col] = raw[col].strip()
            fields[RUN_COLUMN] = raw.get(RUN_COLUMN, "").strip()
            if not fields["op"] or fields["math"] not in MATHS:
                raise CsvError(f"{path}:{line}: the row of {fields['chapter']!r} has no valid math and op (math "
                               f"{raw['math']!r}, op {raw['op']!r}; math is one of {', '.join(MATHS)}): fill them "
                               f"from the build's step list with `{fill_command(path)}`")
            rows.append(Row(fields))
    if not rows:
        raise CsvError(f"{path}: no result rows")
    return rows


UNITS = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}


def load_metrics(path: str | Path) -> list[dict]:
    """make profile's file (<slug>-metrics.csv: chapter, problem, kernel, metric, value, unit,
    timestamp; plots/metrics.py writes it), one dict per row."""
    with Path(path).open(newline="") as f:
        return list(csv.DictReader(f))


def dram_bytes(metrics: list[dict], chapter: str, problem: str) -> float | None:
    """The bytes the chapter's kernels read and wrote at DRAM on the problem, as its newest profile
    counted them (dram__bytes_read.sum + dram__bytes_write.sum over its kernels); None without one."""
    mine = [m for m in metrics if m["chapter"] == chapter and m["problem"] == problem
            and m["metric"] in ("dram__bytes_read.sum", "dram__bytes_write.sum") and m["unit"] in UNITS]
    if not mine:
        return None
    newest = max(m["timestamp"] for m in mine)
    return sum(float(m["value"].replace(",", "")) * UNITS[m["unit"]] for m in mine if m["timestamp"] == newest)


def append_row(path: str | Path, values: dict) -> None:
    """Appends one row (column -> text; the columns it does not name are left empty) by the rule the
    binaries follow (common/src/core/csv.cpp, append_csv_row): a new or empty file gets HEADER first;
    a file whose header is the first columns of HEADER is migrated first (rewritten with HEADER, its
    rows extended: part = gemm where it had no part column, every other new column empty); a file
    with any other header is refused with CsvError and left as it was."""
    unknown = [c for c in values if c not in HEADER]
    if unknown:
        raise ValueError(f"not a results column: {', '.join(unknown)}")
    path = Path(path)
    header: list[str] = []
    if path.is_file():
        with path.open(newline="") as f:
            header = next(csv.reader(f), [])
    if header and header != list(HEADER):
        if len(header) >= len(HEADER) or header != list(HEADER[: len(header)]):
            raise CsvError(f"{path}:1: the header differs from the current one ({','.join(HEADER)}); "
                           f"write to a new file")
        with path.open(newline="") as f:
            old = [rec for rec in list(csv.reader(f))[1:] if rec]
        _rewrite(path, [_current(header, rec) for rec in old], ".migrating")
        print(f"csv: {path} migrated to the current header ({len(old)} rows, {len(HEADER) - len(header)} column(s) added)")
    new = not header
    with path.open("a", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        if new:
            w.writerow(HEADER)
        w.writerow([values.get(c, "") for c in HEADER])


def _current(header: list[str], rec: list[str]) -> list[str]:
    """A row written under an older `header`, in the columns of HEADER: the columns it lacks get what
    the binaries' migration gives them (part = gemm where it had no part column, else empty)."""
    d = {c: "gemm" if c == "part" else "" for c in HEADER}
    d.update(zip(header, rec))
    return [d[c] for c in HEADER]


def _rewrite(path: Path, rows: list[list[str]], suffix: str) -> None:
    """Writes HEADER and rows to path through a temporary file (path + suffix), renamed over it: a
    failure leaves the old file as it was."""
    tmp = path.with_name(path.name + suffix)
    with tmp.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(rows)
    tmp.replace(path)


def fill_steps(path: str | Path, steps: dict[str, tuple[str, str, str]]) -> int:
    """Brings a results file written before the step columns existed (or with rows where they are
    empty) to the current HEADER, filling each such row's math, op and tags from `steps` (step name
    -> (math, op, tags): the build's step list, runner.declarations, plus any steps written by other
    scripts). Every other field is kept as it was written; columns the file lacks get what the
    binaries' migration gives them (_current). Returns
    the number of rows filled (0: the file was left untouched). A row whose step `steps` does not
    know raises CsvError naming its line, and the file is left as it was."""
    path = Path(path)
    with path.open(newline="") as f:
        records = list(csv.reader(f))
    if not records or not records[0]:
        raise CsvError(f"{path}: empty file (expected a header line)")
    header = records[0]
    unknown = [c for c in header if c not in HEADER]
    if unknown:
        raise CsvError(f"{path}:1: column(s) {', '.join(unknown)} are not results columns")
    out, filled = [], 0
    for line, rec in enumerate(records[1:], start=2):
        if not rec:
            continue
        if len(rec) != len(header):
            raise CsvError(f"{path}:{line}: {len(rec)} fields, the header has {len(header)}")
        d = dict(zip(HEADER, _current(header, rec)))
        if not d["op"] or d["math"] not in MATHS:
            if d["chapter"] not in steps:
                raise CsvError(f"{path}:{line}: step {d['chapter']!r} is not in the step list: its math, op and tags "
                               f"cannot be filled (rename the rows of a renamed step first)")
            d["math"], d["op"], d["tags"] = steps[d["chapter"]]
            filled += 1
        out.append([d[c] for c in HEADER])
    if filled == 0:  # nothing to fill: the file is left as it is (bringing its header up is the binaries' job)
        return 0
    _rewrite(path, out, ".filling")
    return filled


def of_part(rows, part: str) -> list[Row]:
    return [r for r in rows if r.part == part]


def newest(rows: list[Row]) -> dict[tuple[str, str], Row]:
    """The newest row for each (chapter, problem), as it was written."""
    out: dict[tuple[str, str], Row] = {}
    for r in rows:
        key = (r.chapter, r.problem)
        if key not in out or r.timestamp >= out[key].timestamp:
            out[key] = r
    return out


def latest(rows: list[Row]) -> dict[tuple[str, str], Row]:
    """The newest row for each (chapter, problem) (re-running a step replaces its numbers), with its
    library baselines replaced by the libraries at their best (references): what every table and
    chart shows."""
    shown = newest(rows)
    same_run: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        if r.run:
            same_run.setdefault((r.chapter, r.problem, r.run), []).append(r)
    for key, r in shown.items():
        procs = same_run.get((r.chapter, r.problem, r.run), [r]) if r.run else [r]
        shown[key] = Row({**r.fields, "processes": tuple(procs)})
    # The candidates: every process of a benchmark run (a row with a run id), and the shown rows'
    # own processes (a row run by hand is its own only process).
    shown_procs = [p for r in shown.values() for p in r.fields["processes"]]
    return references(shown, [r for r in rows if r.run] + [p for p in shown_procs if not p.run])


# The library's time a shown row is compared with is not the one measured in its own process: a
# library's time moves between processes (up to 2x for cuDNN, whose search may even pick another
# algorithm), the steps' do not. Every process in the results file that timed the same library on
# the same problem, on the same GPU with the same CUDA version, in any benchmark run (bench.py's
# runs: the steps' own processes, the repeats it adds until a run has at least three, and every
# earlier run's; a row run by hand counts only as its own), is one candidate;
# the reference is the best (lowest) median among them, with the name that process gave (cuDNN's
# algorithm). More runs can only lower it. The binary's own output keeps its in-process ratio; the
# row keeps it as own_baseline, own_baseline_time_ms and own_ratio_to_baseline (own_alt_... likewise).
SLOTS = (("baseline", "baseline_time_ms", "ratio_to_baseline"),
         ("alt_baseline", "alt_baseline_time_ms", "alt_ratio_to_baseline"))


def library_key(r: Row, slot: int) -> tuple:
    """What makes two rows' baselines the same library on the same problem: the step's part, math and
    op (the steps that compare with the same libraries), the problem, the slot, and the baseline's
    name less its parenthesis (the algorithm cuDNN picked may differ between processes)."""
    name = r.fields[SLOTS[slot][0]]
    return (r.part, r.math, r.op, r.problem, slot, baseline_family(name)[0])


def fastest_process(r: Row) -> Row:
    """Of a shown row's processes (latest), the one with the lowest median, carrying the same
    processes: a library's own row at its best (PyTorch's layer, say)."""
    procs = r.fields.get("processes", (r,))
    best = min(procs, key=lambda p: p.time_ms_median)
    if best is r:
        return r
    own = ("time_ms_median", "time_ms_min", "time_ms_max", "gflops", "gbps", "copy_gbps", "rel_err", "verified",
           "timestamp")  # the process's own measurement; the library references stay the shown row's
    f = {**r.fields, **{k: best.fields[k] for k in own if k in best.fields}}
    f["ratio_to_baseline"] = r.baseline_time_ms / best.time_ms_median
    return Row(f)


def references(shown: dict[tuple[str, str], Row], rows: list[Row] | None = None) -> dict[tuple[str, str], Row]:
    """shown with every row's baselines replaced by the best over the processes (see SLOTS): every row
    of `rows` (default: the shown rows and their processes) that timed the same library on the same
    problem with the same GPU and CUDA version. Each slot also gets <slot>_processes (how many),
    <slot>_lo and <slot>_hi (the spread of their medians)."""
    if rows is None:
        rows = [p for r in shown.values() for p in r.fields.get("processes", (r,))]
    candidates: dict[tuple, list[tuple[float, str, str]]] = {}
    for p in rows:
        for slot, (name_col, time_col, _) in enumerate(SLOTS):
            t = p.fields[time_col]
            if t is not None and p.fields[name_col]:
                candidates.setdefault((p.gpu, p.cuda, *library_key(p, slot)), []).append((t, p.timestamp, p.fields[name_col]))
    out = {}
    for key, r in shown.items():
        f = dict(r.fields)
        for slot, (name_col, time_col, ratio_col) in enumerate(SLOTS):
            own = r.fields[time_col]
            f["own_" + name_col], f["own_" + time_col] = r.fields[name_col], own
            f["own_" + ratio_col] = own / r.time_ms_median if own else float("nan")
            c = candidates.get((r.gpu, r.cuda, *library_key(r, slot))) if r.fields[name_col] else None
            if not c:
                f[name_col + "_processes"], f[name_col + "_lo"], f[name_col + "_hi"] = 0, None, None
                continue
            times = sorted(c, key=lambda x: (x[0], x[1]))  # one candidate per process
            best_t, _, best_name = times[0]
            f[name_col], f[time_col] = best_name, best_t
            if slot == 0:
                f["ratio_to_baseline"] = best_t / r.time_ms_median
            f[name_col + "_processes"] = len(times)
            f[name_col + "_lo"], f[name_col + "_hi"] = times[0][0], times[-1][0]
        out[key] = Row(f)
    return out


def step_order(rows) -> list[str]:
    """Chapters in reading order (by number), then the baselines."""
    names = sorted({r.chapter for r in rows})
    return [n for n in names if is_chapter(n)] + [n for n in names if not is_chapter(n)]


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


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def baseline_family(name: str) -> tuple[str, str]:
    """'cuDNN fastest FMA (WINOGRAD_NONFUSED)' -> ('cuDNN fastest FMA', 'WINOGRAD_NONFUSED'); a name
    without a trailing parenthesis -> (name, '')."""
    m = re.match(r"^(.*?)\s*\(([^()]*)\)$", name)
    return (m.group(1), m.group(2)) if m else (name, "")


def part_precision(part: str) -> str:
    """The arithmetic a part compares in: FP32 FMA for Parts I and II, FP64 for Part III."""
    return "FP64" if part == "gcn" else "FP32"


def precision(r: Row) -> str:
    """The arithmetic the row's step computes in, as declared (`math`, upper-cased: FP32, TF32,
    FP64); its baselines are the library in the same math. Part I and Part II compare FP32 FMA
    against FP32 FMA in their main charts and tables; TF32 rows (the tensor-core steps) have charts
    and tables of their own (plot.py), and a row in any other precision is left out and named."""
    return r.math.upper()


def by_precision(rows) -> dict[str, list[Row]]:
    """Rows grouped by precision(), each group in the rows' order."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(precision(r), []).append(r)
    return out


