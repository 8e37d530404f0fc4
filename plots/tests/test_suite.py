"""Chapter 10's suite of small and odd problems in the plots (plot.py) and in the benchmark's choice of
problems (bench.py): synthetic rows of chapters 09 and 10 and cuBLAS (sample-suite.csv: 09 at 50% of
cuBLAS everywhere, 10 at 80% with the plan "128x128 split 2"), and chapter 10's candidate plans
(sample-suite-plans.csv: the rule's plan at 80%, 64x64 split 4 at 100%, the others slower)."""
import math
import re
import shutil
from pathlib import Path

import pytest

import bench
from fakes import MANIFEST_HEADER, PREAMBLE, manifest_line, recorded
import plot
from markers import CHAPTER_BEGIN, CHAPTER_END, README_BEGIN, README_END
from tut_plots import gemm, results, runner

DATA = Path(__file__).parent / "data"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def suite_tree(tmp_path):
    (tmp_path / "plots" / "data").mkdir(parents=True)
    csv = tmp_path / "plots" / "data" / "sample-gpu.csv"
    shutil.copy(DATA / "sample-suite.csv", csv)
    shutil.copy(DATA / "sample-suite-plans.csv", tmp_path / "plots" / "data" / "sample-gpu-plans.csv")
    readme = tmp_path / "README.md"
    readme.write_text(f"# T\n\n{README_BEGIN}\n{README_END}\n")
    for name in ("09_double_buffering", "10_small_problems"):
        ch = tmp_path / "chapters" / name
        ch.mkdir(parents=True)
        (ch / "README.md").write_text(f"# {name}\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n")
    return tmp_path, readme, csv


def run_plot(root, readme, csv):
    return plot.main(["--csv", str(csv), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters")])


def test_suite_chart_and_table(suite_tree, capsys):
    root, readme, csv = suite_tree
    assert run_plot(root, readme, csv) == 0
    png = root / "plots" / "sample-gpu-gemm-suite.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
    text = readme.read_text()
    assert "![sample-gpu-gemm-suite](plots/sample-gpu-gemm-suite.png)" in text
    assert "| problem (M×N×K) | cuBLAS (ms) | 09: % of cuBLAS | 10: % of cuBLAS | 10: plan |" in text
    assert "| 127×8191×2049 |" in text and "| 1024×1024×16384 |" in text and "| 16384×128×4096 |" in text
    assert re.search(r"\| 127×8191×2049 \| [0-9.]+ \| 50\.0% \| 80\.0% \| 128x128 split 2 \|", text)
    assert "| geometric mean | | **50.0%** | **80.0%** | |" in text
    assert "geometric mean" in capsys.readouterr().out


def test_plan_column_and_candidate_table_in_the_planning_chapter(suite_tree):
    root, readme, csv = suite_tree
    assert run_plot(root, readme, csv) == 0
    ch10 = (root / "chapters" / "10_small_problems" / "README.md").read_text()
    assert "| plan | verified |" in ch10 and "| 128x128 split 2 | yes |" in ch10
    assert "Every candidate plan on the suite (`--explain`, from `plots/data/sample-gpu-plans.csv`" in ch10
    assert ("| the rule's plan | its time (µs) | fastest plan | its time (µs) | rule / fastest | best 128x128 (µs, split) "
            "| best 128x64 (µs, split) | best 64x64 (µs, split) |") in ch10
    # 1024^3 at 50 TFLOP/s: cuBLAS 42.9 us; the rule's plan at 80% (53.7 us), 64x64 split 4 at 100%.
    assert re.search(r"\| 1024×1024×1024 \| 128x128 split 2 \| 53\.7 \| 64x64 split 4 \| 42\.9 \| 1\.250 \| 53\.7 \(2\) "
                     r"\| 107\.4 \(1\) \| 42\.9 \(4\) \|", ch10)
    ch09 = (root / "chapters" / "09_double_buffering" / "README.md").read_text()
    assert "plan" not in ch09 and "candidate" not in ch09  # a step with one kernel: no plan column


def test_without_a_plans_file_the_chapter_has_no_candidate_table(suite_tree):
    root, readme, csv = suite_tree
    (root / "plots" / "data" / "sample-gpu-plans.csv").unlink()
    assert run_plot(root, readme, csv) == 0
    ch10 = (root / "chapters" / "10_small_problems" / "README.md").read_text()
    assert "| plan | verified |" in ch10 and "candidate" not in ch10


def test_no_suite_chart_without_a_chapter_that_ran_all_of_it(suite_tree):
    root, readme, csv = suite_tree
    rows = csv.read_text().splitlines()
    csv.write_text("\n".join(r for r in rows if "127x8191x2049" not in r) + "\n")
    assert run_plot(root, readme, csv) == 0
    assert not (root / "plots" / "sample-gpu-gemm-suite.png").exists()
    assert "geometric mean" not in readme.read_text()


def test_the_sweep_chart_leaves_out_the_suites_other_shapes():
    latest = results.latest(results.load(DATA / "sample-suite.csv"))
    sweep = {gemm.mnk_name(x) for x in gemm.SWEEP} | {gemm.HEADLINE}
    suite_only = {gemm.mnk_name(x) for x in gemm.SUITE} - sweep
    assert suite_only == {"1024x1024x16384", "16384x128x4096", "127x8191x2049"}
    assert any(r.problem in suite_only for r in latest.values())


def test_geomean():
    assert results.geomean([0.5, 2.0]) == pytest.approx(1.0)
    assert results.geomean([0.8] * 8) == pytest.approx(0.8)
    assert math.isclose(results.geomean([1.0, 4.0]), 2.0)


# ---- bench.py: who runs the suite, and --explain into the plans file -------------------------------

FAKE = PREAMBLE + r'''if "--help" in args:
    if {plans}:
        print("This step plans each problem. Its tile shapes (--tile): 128x128 64x64")
    sys.exit(0)
opt = dict(zip([a for a in args if a != "--explain"][::2], [a for a in args if a != "--explain"][1::2]))
problem = "x".join(opt[f] for f in ("--m", "--n", "--k"))
path = opt["--csv"]
new = not os.path.exists(path)
with open(path, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(["chapter", "problem", "gflops", "ratio_to_baseline", "time_ms_median", "verified", "config",
                    "math", "op"])
    if "--explain" in args:
        w.writerow(["{name}", problem, "1000", "0.9", "2.0", "yes", "64x64 split 4", "fp32", "gemm"])
    w.writerow(["{name}", problem, "1000", "1.0", "1.0", "yes", "128x128 split 2" if {plans} else "", "fp32", "gemm"])
'''


def fake(tmp_path: Path, name: str, plans: bool = False) -> str:
    exe = tmp_path / name
    exe.write_text(FAKE.format(python=__import__("sys").executable, name=name, calls=str(tmp_path / "calls.txt"),
                               plans=plans))
    exe.chmod(0o755)
    return str(exe)


def made(tmp_path: Path) -> list[str]:
    return [c for c in recorded(tmp_path / "calls.txt")
            if "--device-info" not in c and "--help" not in c]


def test_suite_runs_from_chapter_09_and_the_baseline_and_explain_into_the_plans_file(tmp_path, capsys):
    m = tmp_path / "chapters.tsv"
    steps = [("baseline", "cublas_sgemm", False), ("chapter", "08_warp_tiling", False),
             ("chapter", "09_double_buffering", False), ("chapter", "10_small_problems", True)]
    m.write_text(MANIFEST_HEADER + "".join(manifest_line(kind, "gemm", name, fake(tmp_path, name, plans))
                                           for kind, name, plans in steps))
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gemm"]) == 0
    calls = made(tmp_path)
    extra = [gemm.mnk_name(x) for x in gemm.SUITE if x not in gemm.SWEEP and gemm.mnk_name(x) != gemm.HEADLINE]
    assert len(extra) == 3

    def problems(name, explain=False):
        out = []
        for c in calls:
            tok = c.split()
            if tok[0] != name or ("--explain" in tok) != explain:
                continue
            opt = dict(zip(tok[1::2], tok[2::2]))
            out.append(f"{opt['--m']}x{opt['--n']}x{opt['--k']}")
        return out

    sweep = [gemm.HEADLINE] + [gemm.mnk_name(x) for x in gemm.SWEEP]
    assert problems("08_warp_tiling") == sweep  # before chapter 09: the sweep only
    for name in ("cublas_sgemm", "09_double_buffering", "10_small_problems"):
        assert problems(name) == sweep + extra
    assert problems("10_small_problems", explain=True) == [gemm.mnk_name(x) for x in gemm.SUITE]
    assert problems("09_double_buffering", explain=True) == []
    plans_csv = tmp_path / "fake-gpu-plans.csv"
    explain_calls = [c for c in calls if "--explain" in c]
    assert all(f"--csv {plans_csv}" in c and "--iters 10 --warmup 2" in c for c in explain_calls)
    assert len(results_rows(plans_csv)) == 2 * len(gemm.SUITE)  # a candidate and the step's own row each
    assert "plan 128x128 split 2" in capsys.readouterr().out


def results_rows(path: Path) -> list[dict]:
    return runner.read_rows(path)
