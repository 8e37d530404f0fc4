"""What bench.py does alike for every family: the manifest, the device, and one run of one step on
one problem (Runner.run), which the binary verifies, times and appends to the CSV itself.

The families choose the problems and print their own line per run (gemm.bench, conv.bench,
gcn.bench).
"""
from __future__ import annotations

import csv
import subprocess
import time
from pathlib import Path

from . import fmt
from .results import STEP_COLUMNS, CsvError, fill_steps

NO_GPU = 3
BAD_ARGS = 2  # a binary's exit code for bad arguments, and for a problem its step does not compute


class StepSkipped(Exception):
    """A step that does not run on this GPU (built for another architecture): its reason, one line."""


def read_manifest(path: Path) -> list[dict]:
    """<build>/chapters.tsv, one dict per step (kind, part, name, title, binary, source, math, op, tags)."""
    if not path.is_file():
        raise SystemExit(f"error: {path} not found: build first (cmake --build), it is written at configure time")
    with path.open(newline="") as f:
        steps = list(csv.DictReader(f, delimiter="\t"))
    missing = [c for c in ("part", "name", "binary", *STEP_COLUMNS) if steps and c not in steps[0]]
    if missing:
        raise SystemExit(f"error: {path} has no column(s) {', '.join(missing)}: the step list of an older build; "
                         f"configure again")
    return steps


def declarations(steps: list[dict]) -> dict[str, tuple[str, str, str]]:
    """Step name -> (math, op, tags), as the manifest's steps declare them (results.fill_steps)."""
    return {s["name"]: (s["math"], s["op"], s["tags"] or "") for s in steps}


def device_facts(binary: str) -> dict:
    p = subprocess.run([binary, "--device-info"], capture_output=True, text=True)
    if p.returncode == NO_GPU:
        raise SystemExit(f"error: no CUDA GPU: {p.stderr.strip()}")
    if p.returncode != 0:
        raise SystemExit(f"error: {binary} --device-info failed ({p.returncode}): {p.stderr.strip()}")
    return dict(line.split(": ", 1) for line in p.stdout.splitlines() if ": " in line)


def read_rows(csv_path: Path) -> list[dict]:
    if not csv_path.is_file():
        return []
    with csv_path.open(newline="") as f:
        return list(csv.DictReader(f))


def has_tag(step: dict, tag: str) -> bool:
    """Whether the manifest declares the step with TAGS ... tag (its `tags` column, space-separated)."""
    return tag in (step.get("tags") or "").split()


def row_precision(row: dict) -> str:
    """The precision a row's step computes in, as its `math` column declares it (FP32, TF32, FP64)."""
    return (row.get("math") or "").upper()


def fill_results(paths: list[Path], declared: dict[str, tuple[str, str, str]]) -> None:
    """Fills the math, op and tags of rows written before those columns existed (results.fill_steps),
    in each of `paths` that exists, from `declared` (declarations of a manifest, plus the steps other
    scripts write: PyTorch's); says so per file that changed."""
    for path in paths:
        if not path.is_file():
            continue
        try:
            n = fill_steps(path, declared)
        except CsvError as e:
            raise SystemExit(f"error: {e}") from None
        if n:
            print(f"{path}: math, op and tags filled from the step list in {n} rows")


def vs_alt(row: dict) -> float | None:
    """alt_baseline_time_ms / time_ms_median, None without a second baseline."""
    alt = row.get("alt_baseline_time_ms") or ""
    return float(alt) / float(row["time_ms_median"]) if alt else None


def library_group(step: dict, problem: str) -> tuple[str, str, str, str]:
    """The steps that time the same libraries on a problem: the same part, math and op (as declared)."""
    return (step["part"], step["math"], step["op"], problem)


class Runner:
    """Runs the steps' binaries, each appending its row to csv_path (a planning step's candidates to
    plans_path), their whole output to the log; gathers the failures. shared: what a family reads
    once and reuses for its later steps (conv: the layer table). run_id: the id every process of this
    run writes in its row (--run), so the plots compare each step with the best of the libraries'
    times over this run's processes (results.references)."""

    def __init__(self, csv_path: Path, plans_path: Path, log, log_path: Path, args, run_id: str):
        self.csv_path, self.plans_path, self.log, self.log_path, self.args = csv_path, plans_path, log, log_path, args
        self.run_id = run_id
        self.failures: list[str] = []
        self.shared: dict = {}
        # Every run that appended a result row, by library group: (step, problem, tag, flags, extra).
        self.done: dict[tuple, list[tuple]] = {}

    def top_up(self, processes: int) -> int:
        """Runs again the last step of each library group that fewer than `processes` processes timed
        (a step alone with its library: the fused epilogue, the TF32 convolution, most GCN pieces),
        until that many did; each repeat verifies and appends its row like the first. Returns the
        number of repeats."""
        repeats = 0
        for group, runs in self.done.items():
            step, problem, tag, flags, extra = runs[-1]
            for i in range(len(runs), processes):
                row, secs = self.run(step, problem, f"{tag} (process {i + 1} of {processes})", flags, extra, record=False)
                repeats += 1
                if row is not None:
                    t = row.get("baseline_time_ms")
                    print(f"  {tag} process {i + 1} of {processes}: {row.get('baseline', '')} "
                          f"{fmt.ms(float(t)) + ' ms' if t else ''}  ({secs:.0f} s)")
        return repeats

    def sweep_flags(self) -> list[str]:
        """The flags of every run after a step's headline one: fewer timed runs."""
        return ["--iters", str(self.args.sweep_iters), "--warmup", str(self.args.sweep_warmup)]

    def too_long(self, tag: str, predicted_s: float) -> bool:
        """Whether a run predicted to take predicted_s is skipped (--max-run-seconds), said in one
        line after tag (the step and the problem)."""
        if predicted_s <= self.args.max_run_seconds:
            return False
        print(f"  {tag} skipped: one run would take ~{predicted_s:.0f} s (--max-run-seconds {self.args.max_run_seconds:g})")
        return True

    def run(self, step: dict, problem: str | None, tag: str, flags: list[str], extra: list[str],
            out: Path | None = None, record: bool = True, refusal: str | None = None) -> tuple[dict | None, float]:
        """Runs one step on one problem (None: the binary's default, named in its row); returns its
        CSV row (None when it appended none) and the seconds taken. record: count the run in its
        library group (top_up). refusal: the start of the error line with which a step says it does
        not compute the problem (exit 2; chapter 22 computes 3x3 stride-1 layers only): said in one
        line, not a failure."""
        out = out or self.csv_path
        cmd = [step["binary"], *flags, "--csv", str(out), "--run", self.run_id, *extra]
        self.log.write(f"\n$ {' '.join(cmd)}\n")
        self.log.flush()
        before = len(read_rows(out))
        t0 = time.time()
        p = subprocess.run(cmd, stdout=self.log, stderr=subprocess.PIPE, text=True)
        self.log.write(p.stderr)
        if p.returncode == NO_GPU:
            # The GPU is still there when the step's own --device-info answers: the step refuses
            # this GPU (built for another architecture), and says why in its last error line.
            if subprocess.run([step["binary"], "--device-info"], capture_output=True).returncode == 0:
                why = (p.stderr.strip().splitlines() or ["it does not run on this GPU"])[-1]
                raise StepSkipped(why.removeprefix("error: "))
            raise SystemExit("error: the GPU disappeared during the benchmark")
        last = (p.stderr.strip().splitlines() or [""])[-1]
        if p.returncode == BAD_ARGS and refusal and last.startswith(refusal):
            print(f"  {tag} skipped: {last.removeprefix(refusal)}")
            return None, 0.0
        rows = read_rows(out) if p.returncode in (0, 1) else []
        row = rows[-1] if len(rows) > before else None  # a row this run appended, never an older one
        if row is None or row["chapter"] != step["name"] or (problem is not None and row["problem"] != problem):
            self.failures.append(f"{tag} exited {p.returncode} without a result (see {self.log_path})")
            print(f"  {tag} FAILED: exit {p.returncode}, no result (see {self.log_path})")
            return None, 0.0
        if p.returncode == 1:
            self.failures.append(f"{tag} failed verification")
        elif record and out == self.csv_path:
            self.done.setdefault(library_group(step, row["problem"]), []).append((step, problem, tag, flags, extra))
        return row, time.time() - t0
