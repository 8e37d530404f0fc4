"""Part III (GCN inference, FP64): the copy_gbps column and the gcn rows (results.py, gcn.py), the gcn
steps of bench.py (against fake binaries), plot.py's gcn charts and tables on the committed sample (fake
numbers for the tests only), and the pieces of torch_gcn.py that need neither PyTorch nor a GPU."""
from fakes import MANIFEST_HEADER, manifest_line, recorded
import csv
import importlib.util
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import bench
import plot
import torch_gcn
from markers import (CHAPTER_BEGIN, CHAPTER_END, CONV_README_BEGIN, CONV_README_END, GCN_README_BEGIN,
                     GCN_README_END, README_BEGIN, README_END)
from tut_plots import fmt, results
from tut_plots import gcn as gcn_plots

DATA = Path(__file__).parent / "data"
GCN_SAMPLE = DATA / "sample-gcn.csv"
PARTS_SAMPLE = DATA / "sample-parts.csv"
OLD_SAMPLE = DATA / "sample.csv"
ROOT = Path(__file__).resolve().parents[2]
PLOTS = ROOT / "plots"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HEAD = gcn_plots.HEADLINE
V, NNZ, F_IN, F_OUT = 281903, 2312497 + 281903, 128, 16  # the default graph: edges + self-loops


def rewrite(src: Path, dst: Path, edit) -> None:
    """src with edit(row as dict) applied to each data row (False drops it), written to dst."""
    with src.open(newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    out = [header]
    for rec in rows[1:]:
        d = dict(zip(header, rec))
        if edit(d) is not False:
            out.append([d[c] for c in header])
    with dst.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(out)


# ---- results.py, and the kinds and the headline problem of gcn.py ------------------------------

def test_header_is_the_binaries_header():
    """results.HEADER (what torch_gcn.py writes) is the header common/src/core/csv.cpp writes."""
    src = (ROOT / "common" / "src" / "core" / "csv.cpp").read_text()
    body = src[src.index("result_columns()"):]
    body = body[: body.index("};")]
    assert tuple(re.findall(r'"(\w+)"', body)) == results.HEADER
    assert results.HEADER[-6:] == (results.COPY_COLUMN, results.CONFIG_COLUMN, *results.STEP_COLUMNS, results.RUN_COLUMN)
    assert set(results.COLUMNS) <= set(results.HEADER)


def test_gcn_sample_loads():
    rows = results.load(GCN_SAMPLE)
    assert {r.part for r in rows} == {"gemm", "conv", "gcn"}
    assert all(r.copy_gbps is None for r in rows if r.part != "gcn")  # an empty copy_gbps
    gcn = results.latest(results.of_part(rows, "gcn"))
    r = gcn[("25_skinny_gemm_coalesced", HEAD)]
    assert (r.m, r.n, r.k) == (V, F_OUT, F_IN) and r.step == "skinny GEMM, coalesced"
    assert r.copy_gbps == 3000.0 and r.copy_ratio == pytest.approx(2598.1 / 3000)
    xw_bytes = 8 * (V * F_IN + F_IN * F_OUT + V * F_OUT)  # xw_cost
    assert r.gbytes == pytest.approx(xw_bytes / 1e9, rel=1e-4)
    assert r.gbps_at(0.25) == pytest.approx(r.gbps / 2)
    layer = gcn[("29_fused_gcn_layer", HEAD)]
    assert layer.floor_ms == pytest.approx(1428.1 * 0.25 / 3000)
    assert layer.floor_ms == pytest.approx(torch_gcn.layer_cost(V, NNZ, F_IN, F_OUT)[1] / 3000e9 * 1e3, rel=1e-4)
    assert gcn[("22_skinny_gemm_naive", HEAD)].time_ms_median == pytest.approx(1.0)  # the re-run replaced 2 ms
    spmm = gcn[("27_spmm_warp_per_row", HEAD)]
    assert spmm.alt_baseline == "cuSPARSE CSR default (ALG_DEFAULT)" and spmm.alt_ratio == pytest.approx(2.5)
    assert {results.precision(r) for r in gcn.values()} == {"FP64"}
    assert {results.precision(r) for r in rows if r.part != "gcn"} == {"FP32"}


def test_files_without_copy_gbps_read_it_as_none():
    assert all(r.copy_gbps is None for r in results.load(PARTS_SAMPLE))
    assert all(r.copy_gbps is None for r in results.load(OLD_SAMPLE))


def test_copy_gbps_zero_is_not_measured(tmp_path):
    bad = tmp_path / "x.csv"
    rewrite(GCN_SAMPLE, bad, lambda d: d.update(copy_gbps="0") if d["part"] == "gcn" else None)
    assert all(r.copy_gbps is None for r in results.load(bad))
    assert all(r.copy_ratio != r.copy_ratio and r.floor_ms != r.floor_ms for r in results.load(bad))  # nan


@pytest.mark.parametrize("value, message", [
    ("fast", "column 'copy_gbps' is not a number: 'fast'"),
    ("-1", "column 'copy_gbps' must be >= 0 or empty, got '-1'"),
])
def test_malformed_copy_gbps(tmp_path, value, message):
    bad = tmp_path / "bad.csv"
    rewrite(GCN_SAMPLE, bad, lambda d: d.update(copy_gbps=value) if d["chapter"] == "28_log_softmax" else None)
    with pytest.raises(results.CsvError) as e:
        results.load(bad)
    assert message in str(e.value) and str(bad) in str(e.value)


def old_copy(src: Path, dst: Path, last: str) -> Path:
    """src with every column after `last` dropped: a file as an older harness wrote it."""
    with src.open(newline="") as f:
        recs = list(csv.reader(f))
    keep = recs[0].index(last) + 1
    with dst.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(r[:keep] for r in recs if r)
    return dst


def test_copy_gbps_without_the_part_columns_is_refused(tmp_path):
    lines = old_copy(OLD_SAMPLE, tmp_path / "old.csv", "peak_gbps").read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([lines[0] + ",copy_gbps"] + [line + "," for line in lines[1:]]) + "\n")
    with pytest.raises(results.CsvError, match="1: has column copy_gbps but not part, alt_baseline"):
        results.load(bad)


def test_gcn_kinds_come_from_the_declared_op():
    rows = {r.chapter: r for r in results.load(GCN_SAMPLE)}
    kinds = {name: gcn_plots.kind_of(r) for name, r in rows.items() if r.part == "gcn"}
    assert kinds["22_skinny_gemm_naive"] == "skinny GEMM" and kinds["26_spmm_row_per_thread"] == "SpMM"
    assert kinds["28_log_softmax"] == "LogSoftmax" and kinds["29_fused_gcn_layer"] == "layer"
    # The op decides, never the number: a renumbered SpMM step is still SpMM; an unknown op is "other".
    spmm = rows["26_spmm_row_per_thread"]
    assert gcn_plots.kind_of(results.Row({**spmm.fields, "chapter": "41_new_spmm"})) == "SpMM"
    assert gcn_plots.kind_of(results.Row({**spmm.fields, "op": "something_new"})) == "other"
    assert gcn_plots.gcn_kind_order() == ["skinny GEMM", "SpMM", "LogSoftmax", "layer", "other"]
    assert all(op == "layer" for _, op, _ in gcn_plots.TORCH_STEPS.values())


def test_gcn_headline():
    rows = results.of_part(results.load(GCN_SAMPLE), "gcn")
    assert gcn_plots.gcn_headline(rows) == HEAD  # although web-Stanford.txt's row is newer
    renamed = [results.Row({**r.fields, "problem": "a.txt"}) for r in rows if r.problem == HEAD and r.number in (22, 23, 24)]
    web = [r for r in rows if r.problem == "web-Stanford.txt"]
    assert gcn_plots.gcn_headline(renamed + web) == "a.txt"  # 3 chapters against 1, though older
    tie = [results.Row({**r.fields, "problem": p, "timestamp": t})
           for r, p, t in ((rows[1], "old.txt", "2026-01-01T00:00:00Z"), (rows[2], "new.txt", "2026-03-01T00:00:00Z"))]
    assert gcn_plots.gcn_headline(tie) == "new.txt"
    assert gcn_plots.gcn_headline([r for r in rows if gcn_plots.is_torch(r)]) == HEAD
    assert gcn_plots.gcn_headline([]) is None


# ---- results.append_row (torch_gcn.py's writer), by the binaries' rule ------------------------

def torch_fields(chapter="torch_layer", problem=HEAD, ms=(0.5, 0.49, 0.52), baseline_ms=0.5, max_abs=1e-14):
    return torch_gcn.make_row(gpu="Sample GPU (synthetic test data)", cuda="12.8", chapter=chapter,
                              step=f"PyTorch 0.0 (test): {chapter}", problem=problem,
                              shape={"v": V, "f_in": F_IN, "f_out": F_OUT, "nnz": NNZ}, times=list(ms),
                              baseline="PyTorch 0.0 (test): torch_layer", baseline_ms=baseline_ms, max_abs=max_abs,
                              rel_err=1e-15, tol=1e-9, ref_max=10.0, copy_gbps=2900.0, iters=3)


def test_make_row_counts_the_layer():
    f = torch_fields(ms=(0.5, 0.25, 1.0))
    flops, nbytes = torch_gcn.layer_cost(V, NNZ, F_IN, F_OUT)
    # gcn_layer_cost by hand for the default graph: X W + SpMM + bias/log_softmax; X, W, b, A_hat, out
    assert flops == 2 * V * 128 * 16 + 2 * NNZ * 16 + V * 97 == 1265040079
    assert nbytes == 8 * (V * 128 + 128 * 16 + 16) + 4 * (V + 1) + 12 * NNZ + 8 * V * 16 == 357029184
    assert (f["time_ms_median"], f["time_ms_min"], f["time_ms_max"]) == ("0.5", "0.25", "1")
    assert f["gbps"] == f"{nbytes / 0.5e-3 / 1e9:.1f}" and f["gflops"] == f"{flops / 0.5e-3 / 1e9:.1f}"
    assert (f["m"], f["n"], f["k"], f["part"], f["copy_gbps"], f["verified"]) == (str(V), "16", "128", "gcn", "2900.0", "yes")
    assert torch_fields(max_abs=1e-7)["verified"] == "no" and torch_fields(max_abs=float("nan"))["verified"] == "no"
    assert torch_fields(ms=(2.0,), baseline_ms=0.5)["ratio_to_baseline"] == "0.2500"


def test_append_row_new_file_and_reread(tmp_path):
    path = tmp_path / "new.csv"
    results.append_row(path, torch_fields())
    results.append_row(path, torch_fields("pyg_gcnconv", ms=(2.0,)))
    assert path.read_text().splitlines()[0] == ",".join(results.HEADER)
    rows = results.load(path)
    assert [r.chapter for r in rows] == ["torch_layer", "pyg_gcnconv"]
    assert rows[1].ratio_to_baseline == pytest.approx(0.25) and rows[1].copy_gbps == 2900.0
    with pytest.raises(ValueError, match="not a results column: speed"):
        results.append_row(path, {"speed": "1"})


@pytest.mark.parametrize("sample, last, parts", [(PARTS_SAMPLE, "alt_baseline_time_ms", {"gemm", "conv"}),
                                                 (OLD_SAMPLE, "peak_gbps", {"gemm"})])
def test_append_row_migrates_an_older_header(tmp_path, capsys, sample, last, parts):
    path = old_copy(sample, tmp_path / "old.csv", last)
    before = results.load(sample)
    results.append_row(path, torch_fields())
    assert "migrated to the current header" in capsys.readouterr().out
    # The old rows do not say what their steps are: refused until the step list fills them.
    with pytest.raises(results.CsvError, match="fill_steps.py --manifest"):
        results.load(path)
    assert results.fill_steps(path, {r.chapter: (r.math, r.op, r.tags) for r in before}) == len(before)  # as written
    rows = results.load(path)
    assert len(rows) == len(before) + 1 and {r.part for r in rows[:-1]} == parts and rows[-1].part == "gcn"
    assert [r.fields for r in rows[:-1]] == [r.fields for r in before]


def test_append_row_refuses_another_header(tmp_path):
    path = tmp_path / "other.csv"
    path.write_text("gpu,speed\nx,1\n")
    with pytest.raises(results.CsvError, match="the header differs"):
        results.append_row(path, torch_fields())
    assert path.read_text() == "gpu,speed\nx,1\n"


# ---- bench.py: the gcn steps, against fake binaries --------------------------------------------

FAKE_GCN = r'''#!{python}
# A stand-in for a Part III binary (or, given --m --n --k, a GEMM one): answers --device-info, appends
# one full CSV row per run (its default problem) unless told not to, and records its command line.
import csv, os, sys
sys.path.insert(0, {plots!r})
from tut_plots import results
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write("{name} " + " ".join(args) + "\n")
if "--device-info" in args:
    print("name: Fake GPU\nslug: fake-gpu\ncuda: 13.0")
    sys.exit(0)
if os.path.exists({silent!r}):
    sys.exit({exit_code})
opt = dict(zip(args[::2], args[1::2]))
problem = "x".join(opt[f] for f in ("--m", "--n", "--k")) if "--m" in opt else {problem!r}  # a GEMM step's, or its default
results.append_row(opt["--csv"], dict(chapter="{name}", step="t", problem=problem, m="281903", n="16", k="128",
    time_ms_median="0.2", time_ms_min="0.19", time_ms_max="0.21", gflops="1", gbps="1500.0", baseline="cuBLAS DGEMM",
    baseline_time_ms="0.1", ratio_to_baseline="0.5000", verified="{verified}", timestamp="2026-02-01T00:00:00Z",
    part="gcn", copy_gbps="3000.0", gpu="Fake GPU", cuda="13.0", pct_of_peak="0", peak_gflops="0", peak_gbps="0",
    math="fp64", op="xw"))
sys.exit({exit_code})
'''


def fake_gcn(tmp_path: Path, name: str, exit_code: int = 0, problem: str = HEAD) -> str:
    exe = tmp_path / name
    exe.write_text(FAKE_GCN.format(python=sys.executable, plots=str(PLOTS), name=name, calls=str(tmp_path / "calls.txt"),
                                   silent=str(tmp_path / f"{name}.silent"), exit_code=exit_code, problem=problem,
                                   verified="no" if exit_code == 1 else "yes"))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def gcn_manifest(tmp_path: Path, steps) -> Path:
    m = tmp_path / "chapters.tsv"
    m.write_text(MANIFEST_HEADER + "".join(manifest_line("chapter", part, name, binary) for part, name, binary in steps))
    return m


def gcn_calls(tmp_path: Path) -> list[str]:
    return [c for c in recorded(tmp_path / "calls.txt") if "--device-info" not in c]


def test_gcn_steps_run_their_default_problem_with_no_flags(tmp_path, capsys):
    m = gcn_manifest(tmp_path, [("gcn", n, fake_gcn(tmp_path, n)) for n in ("25_skinny_gemm_coalesced", "29_fused_gcn_layer")])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gcn"]) == 0
    csv_path = tmp_path / "fake-gpu.csv"
    assert gcn_calls(tmp_path) == [f"25_skinny_gemm_coalesced --csv {csv_path}", f"29_fused_gcn_layer --csv {csv_path}"]
    out = capsys.readouterr().out
    assert re.search(rf"25_skinny_gemm_coalesced +{HEAD} +1500.0 GB/s +50.0% of copy +50.0% of cuBLAS DGEMM", out)
    assert [r.chapter for r in results.load(csv_path)] == ["25_skinny_gemm_coalesced", "29_fused_gcn_layer"]


def test_all_parts_run_gcn_last(tmp_path):
    m = gcn_manifest(tmp_path, [("gcn", "22_skinny_gemm_naive", fake_gcn(tmp_path, "22_skinny_gemm_naive")),
                                ("gemm", "01_naive_gemm", fake_gcn(tmp_path, "01_naive_gemm"))])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--headline-only"]) == 0
    assert gcn_calls(tmp_path) == [f"01_naive_gemm --m 4096 --n 4096 --k 4096 --csv {tmp_path / 'fake-gpu.csv'}",
                                   f"22_skinny_gemm_naive --csv {tmp_path / 'fake-gpu.csv'}"]


def test_a_gcn_run_that_appends_no_row_fails(tmp_path, capsys):
    name = "27_spmm_warp_per_row"
    m = gcn_manifest(tmp_path, [("gcn", name, fake_gcn(tmp_path, name))])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gcn"]) == 0
    (tmp_path / f"{name}.silent").touch()  # now it exits 0 without a row: the last row is its own, older one
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gcn"]) == 1
    assert re.search(rf"{name} +default graph +FAILED: exit 0, no result", capsys.readouterr().out)


def test_a_refused_or_unverified_gcn_step_fails(tmp_path, capsys):
    m = gcn_manifest(tmp_path, [("gcn", "26_spmm_row_per_thread", fake_gcn(tmp_path, "26_spmm_row_per_thread", exit_code=1)),
                                ("gcn", "28_log_softmax", fake_gcn(tmp_path, "28_log_softmax", exit_code=2))])
    (tmp_path / "28_log_softmax.silent").touch()  # a refusal (exit 2) writes no row
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gcn"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"FAILURES:\n.*26_spmm_row_per_thread +default graph +failed verification", out, re.S)
    assert re.search(r"28_log_softmax +default graph +exited 2 without a result", out)


def test_no_gcn_steps(tmp_path):
    m = gcn_manifest(tmp_path, [("gemm", "01_naive_gemm", "/bin/true")])
    with pytest.raises(SystemExit, match="no steps of part 'gcn'"):
        bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gcn"])


# ---- plot.py ------------------------------------------------------------------------------------

GCN_CHAPTERS = ("22_skinny_gemm_naive", "27_spmm_warp_per_row", "28_log_softmax", "29_fused_gcn_layer")
MARKERS = (f"{README_BEGIN}\nold gemm\n{README_END}\n\n{CONV_README_BEGIN}\nold conv\n"
           f"{CONV_README_END}\n\n{GCN_README_BEGIN}\nold gcn\n{GCN_README_END}\n")


@pytest.fixture
def gcn_tree(tmp_path):
    (tmp_path / "plots" / "data").mkdir(parents=True)
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{MARKERS}\nend\n")
    for name in GCN_CHAPTERS + ("01_naive_gemm",):
        ch = tmp_path / "chapters" / name
        ch.mkdir(parents=True)
        (ch / "README.md").write_text(f"# {name}\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n\nexercises\n")
    csv_path = tmp_path / "plots" / "data" / "sample-gpu.csv"
    csv_path.write_bytes(GCN_SAMPLE.read_bytes())
    return tmp_path, readme, csv_path


def run_plot(root, csv_path, readme, *extra):
    return plot.main(["--csv", str(csv_path), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters"), *extra])


def gcn_block(readme: Path) -> str:
    text = readme.read_text()
    return text[text.index(GCN_README_BEGIN):text.index(GCN_README_END)]


def test_gcn_charts_and_tables(gcn_tree, capsys):
    root, readme, csv_path = gcn_tree
    assert run_plot(root, csv_path, readme) == 0
    for part, kinds in (("gemm", ("speedup", "sweep", "roofline")), ("conv", ("speedup", "layers", "roofline")),
                        ("gcn", ("speedup", "bandwidth", "layer"))):
        for kind in kinds:
            png = root / "plots" / f"sample-gpu-{part}-{kind}.png"
            assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000, png

    text = readme.read_text()
    assert "old gemm" not in text and "old conv" not in text and "old gcn" not in text and text.rstrip().endswith("end")
    gcn = gcn_block(readme)
    assert "**Sample GPU (synthetic test data)**, CUDA 13.0, 2026-02-03; one GCN layer" in gcn
    assert f"on the graph `{HEAD}` (V = 281903, F_in 128 → F_out 16)" in gcn
    assert "(median over the steps' processes: 3000 GB/s)" in gcn
    assert "memory floor, its minimum bytes at the copy bandwidth of step 29's process, is 0.1190 ms" in gcn
    assert ("| step | kind | time (ms), median [min, max] | GB/s | % of copy | DRAM bytes ÷ minimum | library baseline "
            "| library (ms) | library GB/s | × library | × first of its kind | verified |") in gcn
    # each row against the copy bandwidth of its own process (23's measured 2990 GB/s)
    assert "| 22 skinny GEMM, naive | skinny GEMM | 1.000 [0.9800, 1.050] | 325 | 10.8% | – | cuBLAS DGEMM | 0.1250 | 2598 | 0.12 | 1.00 | yes |" in gcn
    assert "| 23 skinny GEMM, registers + W in shared memory | skinny GEMM | 0.5000 [0.4900, 0.5250] | 650 | 21.7% |" in gcn
    assert "| 25 skinny GEMM, coalesced | skinny GEMM | 0.1250 [0.1225, 0.1313] | 2598 | 86.6% | – | cuBLAS DGEMM | 0.1250 | 2598 | 1.00 | 8.00 | yes |" in gcn
    assert "| 27 SpMM, warp per row | SpMM | 0.1000 [0.09800, 0.1050] | 1044 | 34.8% | – | cuSPARSE fastest CSR (ALG3) | 0.2000 | 522 | 2.00 | 4.00 | yes |" in gcn
    assert "| 28 LogSoftmax | LogSoftmax | 0.03200 [0.03136, 0.03360] | 2255 | 75.2% | – | cuDNN softmax (log) | 0.04000 | 1804 | 1.25 | 1.00 | yes |" in gcn
    assert ("| 29 fused GCN layer | layer | 0.2500 [0.2450, 0.2625] | 1428 | 47.6% | – | library pipeline (cuBLAS + cuSPARSE "
            "ALG3 + cuDNN) | 0.5000 | 714 | 2.00 | 1.00 | yes |") in gcn
    # the PyTorch rows: extra lines after the chapters; the PyTorch layer is its own baseline
    assert "| PyTorch 9.9 (sample): mm + sparse.mm (CSR) + bias + log_softmax | layer | 0.5000 [0.4900, 0.5250] | 714 | 24.6% | – | – | – | – | – | – | yes |" in gcn
    assert ("| PyTorch Geometric 9.9 (sample): GCNConv (cached normalization) + log_softmax | layer | 2.000 [1.960, 2.100] "
            "| 178 | 6.2% | – | PyTorch 9.9 (sample): mm + sparse.mm (CSR) + bias + log_softmax | 0.5000 | 714 | 0.25 | – | yes |") in gcn
    assert gcn.index("| 29 fused") < gcn.index("| PyTorch 9.9") < gcn.index("| PyTorch Geometric") < gcn.index("![")
    assert "web-Stanford.txt" not in gcn  # another graph's row: not the Part III problem
    for kind in ("speedup", "bandwidth", "layer"):
        assert f"![sample-gpu-gcn-{kind}](plots/sample-gpu-gcn-{kind}.png)" in gcn

    ch27 = (root / "chapters" / "27_spmm_warp_per_row" / "README.md").read_text()
    assert ("Baseline: cuSPARSE fastest CSR (ALG3); second baseline: cuSPARSE CSR default (ALG_DEFAULT); each the best "
            "median over the 2 processes that timed it; the device-to-device copy bandwidth measured in the same process: 3000 GB/s.") in ch27
    assert (f"| {HEAD} | V = 281903, F_in 128 → F_out 16 | 0.1000 [0.09800, 0.1050] | 1044 | 34.8% | 0.2000 | 522 "
            "| 2.00 | 0.2500 | 2.50 | yes |") in ch27
    assert "web-Stanford" not in ch27 and ch27.rstrip().endswith("exercises")
    ch29 = (root / "chapters" / "29_fused_gcn_layer" / "README.md").read_text()
    assert "The memory floor (these minimum bytes at that copy bandwidth): 0.1190 ms." in ch29
    assert f"| {HEAD} | V = 281903, F_in 128 → F_out 16 | 0.2500 [0.2450, 0.2625] | 1428 | 47.6% | 0.5000 | 714 | 2.00 | yes |" in ch29
    assert "second baseline" not in ch29
    ch22 = (root / "chapters" / "22_skinny_gemm_naive" / "README.md").read_text()
    assert "| 1.000 [0.9800, 1.050] | 325 | 10.8% |" in ch22 and "memory floor" not in ch22
    assert "| 01 naive |" in capsys.readouterr().out


def test_gcn_rerun_is_stable(gcn_tree):
    root, readme, csv_path = gcn_tree
    run_plot(root, csv_path, readme, "--part", "gcn")
    first = readme.read_text(), (root / "chapters" / "29_fused_gcn_layer" / "README.md").read_text()
    run_plot(root, csv_path, readme, "--part", "gcn")
    assert (readme.read_text(), (root / "chapters" / "29_fused_gcn_layer" / "README.md").read_text()) == first


def test_gcn_rows_change_no_gemm_or_conv_output(gcn_tree):
    """The Part I and II charts and tables from a file with gcn rows (and the copy_gbps column) are
    byte-identical to those from the same rows without them."""
    root, readme, csv_path = gcn_tree
    csv_path.write_bytes(PARTS_SAMPLE.read_bytes())
    readme.write_text(f"# Title\n\n{MARKERS.split(GCN_README_BEGIN)[0]}\nend\n")
    assert run_plot(root, csv_path, readme) == 0
    before = {p.name: p.read_bytes() for p in (root / "plots").glob("*.png")}
    readme_before = readme.read_text()
    csv_path.write_bytes(GCN_SAMPLE.read_bytes())
    for part in ("gemm", "conv"):
        assert run_plot(root, csv_path, readme, "--part", part) == 0
    assert {p.name: p.read_bytes() for p in (root / "plots").glob("*.png")} == before
    assert readme.read_text() == readme_before


def test_gcn_part_leaves_the_others_alone(gcn_tree):
    root, readme, csv_path = gcn_tree
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 0
    assert sorted(p.name for p in (root / "plots").glob("*.png")) == [
        "sample-gpu-gcn-bandwidth.png", "sample-gpu-gcn-layer.png", "sample-gpu-gcn-speedup.png"]
    text = readme.read_text()
    assert "old gemm" in text and "old conv" in text and "old gcn" not in text
    assert (root / "chapters" / "01_naive_gemm" / "README.md").read_text().count(CHAPTER_END) == 1
    assert "Measured" not in (root / "chapters" / "01_naive_gemm" / "README.md").read_text()


def test_gcn_markers_missing_is_an_error_only_with_gcn_rows(gcn_tree, capsys):
    root, readme, csv_path = gcn_tree
    no_gcn = f"# Title\n\n{MARKERS.split(GCN_README_BEGIN)[0]}\nend\n"
    readme.write_text(no_gcn)
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 1
    assert "results:gcn:begin" in capsys.readouterr().err
    assert readme.read_text() == no_gcn  # nothing half-written
    csv_path.write_bytes(PARTS_SAMPLE.read_bytes())
    assert run_plot(root, csv_path, readme) == 0


def test_gcn_without_layer_rows_draws_no_layer_chart(gcn_tree, capsys):
    root, readme, csv_path = gcn_tree
    rewrite(GCN_SAMPLE, csv_path, lambda d: d["op"] != "layer")
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 0
    assert not (root / "plots" / "sample-gpu-gcn-layer.png").exists()
    assert "no layer rows (a step with OP layer, or PyTorch)" in capsys.readouterr().out
    gcn = gcn_block(readme)
    assert "gcn-layer" not in gcn and "memory floor" not in gcn and "PyTorch" not in gcn
    assert "| 28 LogSoftmax |" in gcn and "| 29 " not in gcn


def test_gcn_layer_chart_from_pytorch_rows_alone(gcn_tree):
    """Without chapter 29 the layer chart still shows the PyTorch rows and their floor."""
    root, readme, csv_path = gcn_tree
    rewrite(GCN_SAMPLE, csv_path, lambda d: d["chapter"] != "29_fused_gcn_layer")
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 0
    assert (root / "plots" / "sample-gpu-gcn-layer.png").stat().st_size > 10_000
    assert "| PyTorch Geometric 9.9" in gcn_block(readme)


def test_gcn_pytorch_rows_alone_are_an_error(gcn_tree, capsys):
    root, readme, csv_path = gcn_tree
    rewrite(GCN_SAMPLE, csv_path, lambda d: d["part"] != "gcn" or d["op"] == "layer"
            and not results.is_chapter(d["chapter"]))
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 1
    assert "no Part III chapter rows" in capsys.readouterr().err


def test_gcn_without_copy_bandwidth(gcn_tree):
    """Rows whose processes measured no copy bandwidth: % of copy and the floor say –/nothing; the
    charts still draw."""
    root, readme, csv_path = gcn_tree
    rewrite(GCN_SAMPLE, csv_path, lambda d: d.update(copy_gbps=""))
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 0
    gcn = gcn_block(readme)
    assert "| 25 skinny GEMM, coalesced | skinny GEMM | 0.1250 [0.1225, 0.1313] | 2598 | – |" in gcn
    assert "(not measured in these rows)" in gcn and "memory floor" not in gcn
    for kind in ("speedup", "bandwidth", "layer"):
        assert (root / "plots" / f"sample-gpu-gcn-{kind}.png").stat().st_size > 10_000
    ch29 = (root / "chapters" / "29_fused_gcn_layer" / "README.md").read_text()
    assert "no copy bandwidth was measured in this process" in ch29 and "| – | 0.5000 |" in ch29


def test_gcn_baselines_are_the_median_over_the_kinds_processes():
    latest = results.latest(results.of_part(results.load(GCN_SAMPLE), "gcn"))
    _, head, torch_rows = gcn_plots.gcn_head(latest)
    assert [r.number for r in head] == [22, 23, 24, 25, 26, 27, 28, 29]
    assert [r.chapter for r in torch_rows] == ["torch_layer", "pyg_gcnconv"]
    libs = gcn_plots.gcn_libraries(head)
    assert list(libs) == ["skinny GEMM", "SpMM", "LogSoftmax", "layer"]
    assert libs["skinny GEMM"].main.ms == pytest.approx(0.125) and libs["skinny GEMM"].main.name == "cuBLAS DGEMM"
    assert libs["SpMM"].alt.has and libs["SpMM"].alt.ms == pytest.approx(0.25)
    assert libs["SpMM"].main.gbps == pytest.approx(head[5].gbps * 0.1 / 0.2, rel=1e-3)  # the same bytes, over 0.2 ms
    assert not libs["layer"].alt.has and libs["layer"].alt.gbps != libs["layer"].alt.gbps
    assert gcn_plots.gcn_copy_gbps(head) == pytest.approx(3000.0)


def test_the_ms_format_keeps_four_digits():
    assert [fmt.ms(x) for x in (0.024, 0.1234, 1.294, 30.9, 1234.0)] == ["0.02400", "0.1234", "1.294", "30.90", "1234"]
    assert fmt.ms(float("nan")) == "–"


def test_rows_written_by_torch_gcn_are_plotted(gcn_tree):
    root, readme, csv_path = gcn_tree
    rewrite(GCN_SAMPLE, csv_path, lambda d: d["part"] != "gcn" or results.is_chapter(d["chapter"]))
    results.append_row(csv_path, torch_fields())
    results.append_row(csv_path, torch_fields("pyg_gcnconv", ms=(2.0,), max_abs=1.0))
    assert run_plot(root, csv_path, readme, "--part", "gcn") == 0
    gcn = gcn_block(readme)
    assert "| PyTorch 0.0 (test): torch_layer | layer | 0.5000 [0.4900, 0.5200] | 714 | 24.6% | – |" in gcn
    assert "| PyTorch 0.0 (test): pyg_gcnconv | layer | 2.000 [2.000, 2.000] | 178 | 6.2% |" in gcn and "| no |" in gcn


# ---- torch_gcn.py without PyTorch ---------------------------------------------------------------

def run_torch_gcn(tmp_path, *args, hide_torch=True):
    """torch_gcn.py in a fresh interpreter; with hide_torch, `import torch` fails there whether or
    not PyTorch is installed."""
    argv = [str(PLOTS / "torch_gcn.py"), *args]
    code = ("import runpy, sys\n" + ("sys.modules['torch'] = None\n" if hide_torch else "")
            + f"sys.argv = {argv!r}\nrunpy.run_path(sys.argv[0], run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)


def test_torch_gcn_skips_without_pytorch(tmp_path):
    out_csv = tmp_path / "out.csv"
    p = run_torch_gcn(tmp_path, "--dump", str(tmp_path / "dump"), "--problem", HEAD, "--csv", str(out_csv))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("torch_gcn: skipped: PyTorch is not installed") and p.stdout.count("\n") == 1
    assert p.stderr == "" and not out_csv.exists()


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch is installed here")
def test_torch_gcn_skips_as_a_plain_command(tmp_path):
    p = subprocess.run([sys.executable, str(PLOTS / "torch_gcn.py"), "--dump", str(tmp_path)], capture_output=True,
                       text=True)
    assert p.returncode == 0 and "skipped" in p.stdout and p.stdout.count("\n") == 1


def test_torch_gcn_argument_errors_come_first(tmp_path):
    p = run_torch_gcn(tmp_path, "--dump", str(tmp_path), "--csv", str(tmp_path / "x.csv"))
    assert p.returncode == 2 and "--csv needs --problem" in p.stderr


def write_dump(folder: Path, np, v=5, f_in=3, f_out=2, **override):
    """A small valid Layer dump: a chain graph with self-loops, the reference computed in numpy."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    x, w, b = rng.uniform(-1, 1, (v, f_in)), rng.uniform(-1, 1, (f_in, f_out)), rng.uniform(-1, 1, f_out)
    rows = [[u for u in (r - 1, r) if u >= 0] for r in range(v)]  # u -> u + 1, plus the diagonal
    indptr = np.cumsum([0] + [len(r) for r in rows]).astype(np.int32)
    indices = np.array([u for r in rows for u in r], dtype=np.int32)
    deg = np.array([len(r) for r in rows], dtype=float)
    values = np.array([1 / np.sqrt(deg[r] * deg[u]) for r in range(v) for u in rows[r]])
    a = np.zeros((v, v))
    a[np.repeat(np.arange(v), np.diff(indptr)), indices] = values
    t = a @ (x @ w) + b
    ref = t - t.max(axis=1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(axis=1, keepdims=True))
    arrays = dict(x=x, w=w, b=b, indptr=indptr, indices=indices, values=values, ref=ref, out=ref.copy())
    arrays.update(override)
    for name, arr in arrays.items():
        if arr is not None:
            np.save(folder / f"{name}.npy", arr)
    return arrays


def test_load_dump_reads_a_layer_dump(tmp_path):
    np = pytest.importorskip("numpy")
    write_dump(tmp_path / "d", np)
    d = torch_gcn.load_dump(tmp_path / "d", np)
    assert (d["v"], d["f_in"], d["f_out"], d["nnz"]) == (5, 3, 2, 9)
    (tmp_path / "d" / "out.npy").unlink()  # optional
    assert "out" not in torch_gcn.load_dump(tmp_path / "d", np)


@pytest.mark.parametrize("override, message", [
    (dict(w=None), "w.npy: missing"),
    (dict(w="f32"), "w.npy: dtype float32, expected float64"),
    (dict(w="wide"), "w.npy: shape (4, 2), expected (3, F_out)"),
    (dict(b="long"), "b.npy: shape (3,), expected (2,)"),
    (dict(indptr="short"), "indptr.npy: shape (5,), expected (6,)"),
    (dict(indices="f64"), "indices.npy: dtype float64, expected int32 or int64"),
    (dict(indices="out of range"), "indices.npy: a column index outside [0, 5)"),
    (dict(ref="xw"), "ref.npy: is no log_softmax output"),
])
def test_load_dump_errors_name_the_file(tmp_path, override, message):
    np = pytest.importorskip("numpy")
    good = write_dump(tmp_path / "good", np)
    bad = {"f32": good["w"].astype(np.float32), "wide": np.ones((4, 2)), "long": np.ones(3),
           "short": good["indptr"][:-1], "f64": good["indices"].astype(np.float64),
           "out of range": good["indices"] + 1, "xw": good["x"] @ good["w"], None: None}
    write_dump(tmp_path / "d", np, **{k: bad[v] for k, v in override.items()})
    if any(v is None for v in override.values()):
        for k in override:
            (tmp_path / "d" / f"{k}.npy").unlink(missing_ok=True)
    with pytest.raises(torch_gcn.DumpError) as e:
        torch_gcn.load_dump(tmp_path / "d", np)
    assert message in str(e.value)


@pytest.mark.parametrize("pyg_norm", ["cached", "given"])
def test_layer_variants_match_the_reference_on_cpu(tmp_path, pyg_norm):
    """Where PyTorch is installed (never required): PyTorch's layer and, where torch_geometric
    imports, GCNConv with either normalization compute the dumped reference, on the CPU."""
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    write_dump(tmp_path / "d", np, v=40, f_in=7, f_out=3)
    d = torch_gcn.load_dump(tmp_path / "d", np)
    shape = {k: d[k] for k in ("v", "f_in", "f_out", "nnz")}
    with torch.inference_mode():
        t = torch_gcn.to_device(torch, np, d, torch.device("cpu"))
        variants = torch_gcn.layer_variants(torch, t, shape, pyg_norm)
        assert variants[0][0] == "torch_layer"
        for chapter, step, fn in variants:
            max_abs, rel = torch_gcn.check(torch, fn(), t["ref"])
            assert max_abs < 1e-12 and rel < 1e-13, (chapter, step)
