"""The tensor-core steps in TF32 (chapters 11, 12 and 21, the cuBLAS TF32 baseline): what bench.py runs
for them, and that plot.py puts their rows in TF32 charts and tables of their own, never in the FP32
ones. Synthetic rows (sample-tf32.csv): cuBLAS TF32 at 250 TFLOP/s at every GEMM size and cuBLAS FP32
(their second baseline) at a fifth of it; chapter 11 at 50% of cuBLAS TF32, chapter 12 at 80%, on a
TF32 peak of 500 TFLOP/s; chapter 21 on the four layers of sample-parts.csv at 80% of cuDNN's fastest
TF32 algorithm and 120% of its TF32 precomp, except r50_conv1 (50% and 100%)."""
import csv
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest

import bench
import plot
from fakes import MANIFEST_HEADER, PREAMBLE, manifest_line, recorded
from markers import (CHAPTER_BEGIN, CHAPTER_END, CONV_README_BEGIN, CONV_README_END, CONV_TF32_BEGIN, CONV_TF32_END,
                     GEMM_TF32_BEGIN, GEMM_TF32_END, README_BEGIN, README_END)
from tut_plots import gemm, results

DATA = Path(__file__).parent / "data"
TF32_SAMPLE = DATA / "sample-tf32.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TF32_GEMM_STEPS = ("11_tensor_core_mma", "12_tma_wgmma", "cublas_tf32")
FP32_PNGS = ("gemm-speedup", "gemm-suite", "gemm-sweep", "gemm-roofline")
TF32_PNGS = ("gemm-tf32-speedup", "gemm-tf32-suite", "gemm-tf32-sweep", "gemm-tf32-roofline")
ALL_MARKERS = (README_BEGIN, README_END, GEMM_TF32_BEGIN, GEMM_TF32_END,
               CONV_README_BEGIN, CONV_README_END, CONV_TF32_BEGIN, CONV_TF32_END)


def read(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write(path: Path, rows: list[dict]) -> None:
    """Rows (any subset of the columns) in the current header, as the binaries write them."""
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=results.HEADER, lineterminator="\n", restval="")
        w.writeheader()
        w.writerows({k: v for k, v in r.items() if k in results.HEADER} for r in rows)


def section(text: str, begin: str, end: str) -> str:
    return text[text.index(begin):text.index(end)]


@pytest.fixture
def tree(tmp_path):
    """A README with every results marker, chapter READMEs for 10, 11, 12 and 21, and a CSV of the suite
    sample (FP32: 09, 10, cuBLAS FP32) with the TF32 rows appended."""
    (tmp_path / "plots" / "data").mkdir(parents=True)
    readme = tmp_path / "README.md"
    readme.write_text("# T\n\n" + "\n".join(f"{b}\n{e}\n" for b, e in zip(ALL_MARKERS[::2], ALL_MARKERS[1::2])))
    for name in ("10_small_problems", "11_tensor_core_mma", "12_tma_wgmma", "21_implicit_gemm_tf32"):
        ch = tmp_path / "chapters" / name
        ch.mkdir(parents=True)
        (ch / "README.md").write_text(f"# {name}\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n\nexercises\n")
    csv_path = tmp_path / "plots" / "data" / "sample-gpu.csv"
    write(csv_path, read(DATA / "sample-suite.csv") + read(TF32_SAMPLE))
    return tmp_path, readme, csv_path


def run_plot(root, readme, csv_path, *extra):
    return plot.main(["--csv", str(csv_path), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters"), *extra])


# ---- results.py: which rows are TF32 --------------------------------------------------------------

def test_precision_is_the_declared_math():
    row = results.load(TF32_SAMPLE)[0]
    for math, want in (("fp32", "FP32"), ("tf32", "TF32"), ("fp64", "FP64")):
        assert results.precision(results.Row({**row.fields, "math": math})) == want



def test_the_sample_is_all_tf32():
    rows = results.load(TF32_SAMPLE)
    assert {results.precision(r) for r in rows} == {"TF32"}
    assert {r.chapter for r in rows} == {*TF32_GEMM_STEPS, "21_implicit_gemm_tf32"}


# ---- plot.py: Part I in TF32 ------------------------------------------------------------------------

def test_tf32_gemm_charts_and_table(tree, capsys):
    root, readme, csv_path = tree
    assert run_plot(root, readme, csv_path) == 0
    for name in FP32_PNGS + TF32_PNGS + ("conv-tf32-layers",):
        png = root / "plots" / f"sample-gpu-{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000, name
    text = readme.read_text()
    tf32 = section(text, GEMM_TF32_BEGIN, GEMM_TF32_END)
    # the precision named in the text and in every column that compares
    assert "GEMM 4096×4096×4096 in **TF32** on the tensor cores" in tf32
    assert ("| step | time (ms), median [min, max] | TFLOP/s | % of cuBLAS TF32 | % of TF32 peak | × cuBLAS FP32 "
            "| × previous step | verified |") in tf32
    # 4096^3 at 250 TFLOP/s: 0.5498 ms for cuBLAS TF32, 50% and 80% of it for 11 and 12, 2.749 ms in FP32
    assert "| 11 tensor cores (mma.sync TF32) | 1.100 [1.078, 1.154] | 125.00 | 50.0% | 25.0% | 2.50 | – | yes |" in tf32
    assert "| 12 TMA + wgmma | 0.6872 [0.6735, 0.7216] | 200.00 | 80.0% | 40.0% | 4.00 | 1.60 | yes |" in tf32
    assert "| cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) | 0.5498 [0.5388, 0.5772] | 250.00 | 100.0% | 50.0% | 5.00 |" in tf32
    assert ("| cuBLAS FP32 (no TF32): FP32 reference (CUDA cores, not TF32) | 2.749 | 50.00 | 20.0% | – | 1.00 | – | – |"
            in tf32)
    assert "dense TF32 tensor-core peak (500 TFLOP/s here), not the FP32 one" in tf32
    # the sweep (chapter 12's target: 256-8192 with the odd sizes, verified) and the suite, against cuBLAS TF32
    assert "Over the sweep (256 to 8192, with the odd sizes 4095³ and 4097×4093×4099)" in tf32
    assert "| 4097×4093×4099 | 125.00 (50.0%) | 200.00 (80.0%) | 250.00 | 50.00 | yes |" in tf32
    assert "| 256×256×256 | 125.00 (50.0%) | 200.00 (80.0%) | 250.00 | 50.00 | yes |" in tf32
    assert "| problem (M×N×K) | cuBLAS TF32 (ms) | 11: % of cuBLAS TF32 | 12: % of cuBLAS TF32 |" in tf32
    assert "| geometric mean | | **50.0%** | **80.0%** |" in tf32
    for name in TF32_PNGS:
        assert f"![sample-gpu-{name}](plots/sample-gpu-{name}.png)" in tf32
    assert "gemm-speedup.png" not in tf32.replace("gemm-tf32-speedup.png", "")
    out = capsys.readouterr().out
    assert "note: 12_tma_wgmma compares in TF32, not in the FP32 charts and tables: its rows go to the TF32 charts" in out
    assert "TF32 (tensor cores):" in out


def test_tf32_rows_never_reach_the_fp32_outputs(tree, tmp_path):
    """The FP32 block, charts and chapter blocks from the file with TF32 rows are those from the same
    file without them, byte for byte; no TF32 step or library is named in the FP32 block."""
    root, readme, csv_path = tree
    assert run_plot(root, readme, csv_path) == 0
    with_tf32 = {n: (root / "plots" / f"sample-gpu-{n}.png").read_bytes() for n in FP32_PNGS}
    fp32_block = section(readme.read_text(), README_BEGIN, README_END)
    ch10 = (root / "chapters" / "10_small_problems" / "README.md").read_text()
    for step in TF32_GEMM_STEPS:
        assert step not in fp32_block
    assert "TF32" not in fp32_block.replace("cuBLAS FP32 (no TF32)", "")
    assert "tensor cores" not in fp32_block and "| 11 " not in fp32_block and "| 12 " not in fp32_block

    other = tmp_path / "fp32-only"
    shutil.copytree(root, other)
    shutil.rmtree(other / "plots")
    (other / "plots" / "data").mkdir(parents=True)
    only = other / "plots" / "data" / "sample-gpu.csv"
    shutil.copy(DATA / "sample-suite.csv", only)
    (other / "README.md").write_text(readme.read_text())
    assert run_plot(other, other / "README.md", only) == 0
    assert {n: (other / "plots" / f"sample-gpu-{n}.png").read_bytes() for n in FP32_PNGS} == with_tf32
    assert section((other / "README.md").read_text(), README_BEGIN, README_END) == fp32_block
    assert (other / "chapters" / "10_small_problems" / "README.md").read_text() == ch10
    assert not list((other / "plots").glob("*tf32*"))


def test_tf32_chapter_blocks(tree):
    root, readme, csv_path = tree
    assert run_plot(root, readme, csv_path) == 0
    ch12 = (root / "chapters" / "12_tma_wgmma" / "README.md").read_text()
    assert ("| problem (M×N×K) | time (ms), median [min, max] | TFLOP/s | cuBLAS TF32 (ms) | % of cuBLAS TF32 "
            "| % of TF32 peak | cuBLAS FP32 (ms) | × cuBLAS FP32 | verified |") in ch12
    assert "| 4096×4096×4096 | 0.6872 [0.6735, 0.7216] | 200.00 | 0.5498 | 80.0% | 40.0% | 2.749 | 4.00 | yes |" in ch12
    assert "| 127×8191×2049 |" in ch12 and "| 4095×4095×4095 |" in ch12 and "| 256×256×256 |" in ch12
    assert '"cuBLAS TF32" is cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32); "cuBLAS FP32" is cuBLAS FP32 (no TF32)' in ch12
    assert ch12.rstrip().endswith("exercises")
    ch11 = (root / "chapters" / "11_tensor_core_mma" / "README.md").read_text()
    assert "| 4096×4096×4096 | 1.100 [1.078, 1.154] | 125.00 | 0.5498 | 50.0% | 25.0% | 2.749 | 2.50 | yes |" in ch11
    ch10 = (root / "chapters" / "10_small_problems" / "README.md").read_text()
    assert "| cuBLAS (ms) | % of cuBLAS | % of FP32 peak |" in ch10 and "TF32" not in ch10


def test_tf32_sweep_says_which_step_was_not_verified(tree):
    root, readme, csv_path = tree
    rows = read(csv_path)
    for r in rows:
        if r["chapter"] == "12_tma_wgmma" and r["problem"] == "4097x4093x4099":
            r["verified"] = "no"
    write(csv_path, rows)
    assert run_plot(root, readme, csv_path) == 0
    tf32 = section(readme.read_text(), GEMM_TF32_BEGIN, GEMM_TF32_END)
    assert "| 4097×4093×4099 | 125.00 (50.0%) | 200.00 (80.0%) | 250.00 | 50.00 | no: 12 TMA + wgmma |" in tf32
    assert "| 4095×4095×4095 | 125.00 (50.0%) | 200.00 (80.0%) | 250.00 | 50.00 | yes |" in tf32


def test_only_the_cublas_tf32_baseline(tree):
    """Before the tensor-core chapters are built: the TF32 section shows cuBLAS TF32 and the FP32
    reference, and no suite (no chapter ran it)."""
    root, readme, csv_path = tree
    write(csv_path, read(DATA / "sample-suite.csv") + [r for r in read(TF32_SAMPLE) if r["chapter"] == "cublas_tf32"])
    assert run_plot(root, readme, csv_path) == 0
    tf32 = section(readme.read_text(), GEMM_TF32_BEGIN, GEMM_TF32_END)
    assert "| cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) | 0.5498 [0.5388, 0.5772] | 250.00 |" in tf32
    assert "| cuBLAS FP32 (no TF32): FP32 reference (CUDA cores, not TF32) | 2.749 | 50.00 | 20.0% |" in tf32
    assert "geometric mean" not in tf32 and not (root / "plots" / "sample-gpu-gemm-tf32-suite.png").exists()
    assert (root / "plots" / "sample-gpu-gemm-tf32-sweep.png").stat().st_size > 10_000


def test_tf32_markers_are_needed_only_with_tf32_rows(tree, capsys):
    root, readme, csv_path = tree
    readme.write_text(f"# gemm only\n{README_BEGIN}\n{README_END}\n")
    assert run_plot(root, readme, csv_path, "--part", "gemm") == 1
    assert "results:gemm-tf32:begin" in capsys.readouterr().err
    assert readme.read_text() == f"# gemm only\n{README_BEGIN}\n{README_END}\n"  # nothing half-written
    shutil.copy(DATA / "sample-suite.csv", csv_path)
    assert run_plot(root, readme, csv_path) == 0


def test_part_gemm_leaves_the_conv_tf32_section_alone(tree):
    root, readme, csv_path = tree
    assert run_plot(root, readme, csv_path, "--part", "gemm") == 0
    assert section(readme.read_text(), CONV_TF32_BEGIN, CONV_TF32_END) == CONV_TF32_BEGIN + "\n"
    assert not (root / "plots" / "sample-gpu-conv-tf32-layers.png").exists()
    assert (root / "plots" / "sample-gpu-gemm-tf32-sweep.png").exists()


# ---- plot.py: Part II in TF32 -----------------------------------------------------------------------

@pytest.fixture
def conv_tree(tree):
    """The parts sample (FP32 GEMM and convolution, 13-20) with chapter 21's TF32 rows appended, its
    baselines named as the conv harness names them (common/src/conv/harness.cu, baseline_name): cuDNN
    in NHWC first, in NCHW second. On r50_c3_3x3_s2 NCHW is the faster layout (0.06 ms against 0.064)."""
    root, readme, csv_path = tree
    tf32 = [r for r in read(TF32_SAMPLE) if r["part"] == "conv"]
    for r in tf32:
        r["baseline"] = r["baseline"].replace("cuDNN fastest TF32", "cuDNN fastest TF32 allowed, NHWC")
        r["alt_baseline"] = "cuDNN fastest TF32 allowed, NCHW (IMPLICIT_PRECOMP_GEMM)"
        if r["problem"] == "r50_c3_3x3_s2":
            r["alt_baseline_time_ms"] = "0.06"
    write(csv_path, read(DATA / "sample-parts.csv") + tf32)
    return root, readme, csv_path


def test_tf32_conv_chart_and_table(conv_tree, capsys):
    root, readme, csv_path = conv_tree
    assert run_plot(root, readme, csv_path) == 0
    png = root / "plots" / "sample-gpu-conv-tf32-layers.png"
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 10_000
    text = readme.read_text()
    tf32 = section(text, CONV_TF32_BEGIN, CONV_TF32_END)
    assert "the convolution layers in **TF32** on the tensor cores" in tf32
    assert "in two layouts: NCHW, and NHWC" in tf32 and "each step in the layout it declares" in tf32
    assert "the better of the two layouts is the reference" in tf32
    assert ("| layer | GEMM M×N×K | step 21 | cuDNN TF32 NCHW (algorithm) | cuDNN TF32 NHWC (algorithm) | 21: % of NCHW "
            "| 21: % of the better layout | verified |") in tf32
    assert ("| seed_3x3 | 128×401408×576 | 118.38 | 98.65 (IMPLICIT_PRECOMP_GEMM) | 147.98 (IMPLICIT_PRECOMP_GEMM) "
            "| 120.0% | 80.0% | yes |") in tf32
    assert "| r50_conv1 | 64×401408×147 | 37.76 | 37.76 (IMPLICIT_PRECOMP_GEMM) | 75.53 (IMPLICIT_GEMM) | 100.0% | 50.0% | yes |" in tf32
    assert re.search(r"\| r50_c3_3x3_s2 \|.*\| 75\.0% \| 75\.0% \| yes \|", tf32)  # NCHW is the better layout here
    # geometric means: (1.2 * 1.0 * 1.2 * 0.75)^(1/4) = 101.9% of NCHW, (0.8 * 0.5 * 0.8 * 0.75)^(1/4) = 70.0% of the better
    assert re.search(r"\| geometric mean \|.*\| \*\*101\.9%\*\* \| \*\*70\.0%\*\* \| \|", tf32)
    assert "![sample-gpu-conv-tf32-layers](plots/sample-gpu-conv-tf32-layers.png)" in tf32
    # the FP32 convolution block never shows chapter 21 or a TF32 baseline
    conv = section(text, CONV_README_BEGIN, CONV_README_END)
    assert "| 21 " not in conv and "step 21" not in conv and "TF32" not in conv
    ch21 = (root / "chapters" / "21_implicit_gemm_tf32" / "README.md").read_text()
    assert ("| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s | cuDNN TF32 NCHW (ms) | % of NCHW "
            "| cuDNN TF32 NHWC (ms, algorithm) | % of NHWC | verified |") in ch21
    assert "| seed_3x3 | 128×401408×576 | 0.5000 [0.4900, 0.5250] | 118.38 | 0.6000 | 120.0% | 0.4000 (IMPLICIT_PRECOMP_GEMM) | 80.0% | yes |" in ch21
    assert ('TF32 on the tensor cores, against cuDNN with TF32 allowed: "NCHW" is cuDNN fastest TF32 allowed, NCHW; '
            '"NHWC" is cuDNN fastest TF32 allowed, NHWC, on channels-last copies') in ch21
    assert "note: 21_implicit_gemm_tf32 compares in TF32" in capsys.readouterr().out


def test_fp32_conv_outputs_do_not_change_with_tf32_rows(conv_tree, tmp_path):
    root, readme, csv_path = conv_tree
    assert run_plot(root, readme, csv_path) == 0
    names = ("conv-speedup", "conv-layers", "conv-roofline")
    with_tf32 = {n: (root / "plots" / f"sample-gpu-{n}.png").read_bytes() for n in names}
    conv = section(readme.read_text(), CONV_README_BEGIN, CONV_README_END)
    write(csv_path, read(DATA / "sample-parts.csv"))
    assert run_plot(root, readme, csv_path) == 0
    assert {n: (root / "plots" / f"sample-gpu-{n}.png").read_bytes() for n in names} == with_tf32
    assert section(readme.read_text(), CONV_README_BEGIN, CONV_README_END) == conv


# ---- bench.py: what the TF32 steps run --------------------------------------------------------------

FAKE = PREAMBLE + r'''if "--help" in args:
    sys.exit(0)
if {refuse}:
    sys.stderr.write("error: {name} runs only on compute capability 9.0 (built for sm_90a); Fake GPU is 8.0\n")
    sys.exit(3)
opt = dict(zip(args[::2], args[1::2]))
if opt.get("--layer") == "list":
    sys.stdout.write("name N C H W K R S pad stride\nseed_3x3 128 64 56 56 128 3 3 1 1\nr50_conv1 32 3 224 224 64 7 7 3 2\n")
    sys.exit(0)
problem = opt.get("--layer") or "x".join(opt[f] for f in ("--m", "--n", "--k"))
tf32 = {tf32}
if "--layer" in opt:
    names = ("cuDNN fastest TF32 allowed (IMPLICIT_GEMM)", "cuDNN IMPLICIT_PRECOMP_GEMM (TF32 allowed)", "0.6") if tf32 else \
            ("cuDNN fastest FMA (WINOGRAD_NONFUSED)", "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)", "3.0")
else:
    names = ("cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32)", "cuBLAS FP32 (no TF32)", "2.5") if tf32 else \
            ("cuBLAS FP32 (no TF32)", "", "")
path = opt["--csv"]
new = not os.path.exists(path)
with open(path, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(["chapter", "problem", "gflops", "ratio_to_baseline", "time_ms_median", "verified", "baseline",
                    "alt_baseline", "alt_baseline_time_ms", "math", "op"])
    w.writerow(["{name}", problem, "200000", "0.8", "0.5", "yes", *names, "tf32" if tf32 else "fp32",
                "conv" if "--layer" in opt else "gemm"])
'''


def fake(tmp_path: Path, name: str, tf32: bool, refuse: bool = False) -> str:
    exe = tmp_path / name
    exe.write_text(FAKE.format(python=sys.executable, name=name, calls=str(tmp_path / "calls.txt"), tf32=tf32,
                               refuse=refuse))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def manifest(tmp_path: Path, steps) -> Path:
    """steps: (kind, part, name, math, refuses this GPU), each with its real declaration but `math`
    and without the tag `planned` (these fakes plan nothing; test_suite.py runs a planning step)."""
    m = tmp_path / "chapters.tsv"
    m.write_text(MANIFEST_HEADER + "".join(
        manifest_line(kind, part, name, fake(tmp_path, name, math == 'tf32', refuse), math, drop_tags=("planned",))
        for kind, part, name, math, refuse in steps))
    return m


def problems(tmp_path: Path, name: str) -> list[str]:
    out = []
    for c in recorded(tmp_path / "calls.txt"):
        tok = c.split()
        if tok[0] != name or "--device-info" in tok or tok[1:] == ["--help"] or tok[1:3] == ["--layer", "list"]:
            continue
        opt = dict(zip(tok[1::2], tok[2::2]))
        out.append(opt["--layer"] if "--layer" in opt else f"{opt['--m']}x{opt['--n']}x{opt['--k']}")
    return out


GEMM_STEPS = [("baseline", "gemm", "cublas_sgemm", "fp32", False), ("baseline", "gemm", "cublas_tf32", "tf32", False),
              ("chapter", "gemm", "10_small_problems", "fp32", False),
              ("chapter", "gemm", "11_tensor_core_mma", "tf32", False), ("chapter", "gemm", "12_tma_wgmma", "tf32", False)]


def test_tf32_gemm_steps_run_the_headline_the_sweep_and_the_suite(tmp_path, capsys):
    m = manifest(tmp_path, GEMM_STEPS)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gemm"]) == 0
    sweep = [gemm.HEADLINE] + [gemm.mnk_name(x) for x in gemm.SWEEP]
    extra = [gemm.mnk_name(x) for x in gemm.SUITE if x not in gemm.SWEEP and gemm.mnk_name(x) != gemm.HEADLINE]
    for name in ("cublas_sgemm", "cublas_tf32", "10_small_problems", "11_tensor_core_mma", "12_tma_wgmma"):
        assert problems(tmp_path, name) == sweep + extra, name  # 12 runs each: 1 + 8 + 3
    out = capsys.readouterr().out.splitlines()
    tf32 = [line for line in out if line.lstrip().startswith(("11_", "12_", "cublas_tf32"))]
    fp32 = [line for line in out if line.lstrip().startswith(("10_", "cublas_sgemm"))]
    assert len(tf32) == 3 * 12 and len(fp32) == 2 * 12
    assert all("80.0% of cuBLAS TF32   5.00x cuBLAS FP32  median 0.5000 ms" in line for line in tf32)
    assert all("80.0% of cuBLAS  median 0.5000 ms" in line and "TF32" not in line for line in fp32)  # as before
    assert not any("note:" in line for line in out)


def test_the_tf32_conv_step_runs_every_layer(tmp_path, capsys):
    m = manifest(tmp_path, [("chapter", "conv", "19_implicit_gemm_double_buffer", "fp32", False),
                            ("chapter", "conv", "21_implicit_gemm_tf32", "tf32", False)])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv"]) == 0
    assert problems(tmp_path, "21_implicit_gemm_tf32") == ["seed_3x3", "r50_conv1"]
    out = [line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("21_")]
    assert all("120.0% of TF32 precomp" in line and "80.0% of cuDNN fastest TF32 allowed (IMPLICIT_GEMM)" in line
               for line in out) and len(out) == 2


def test_a_step_for_another_architecture_is_skipped_in_one_line(tmp_path, capsys):
    """Chapter 12 is built for sm_90a only: on another GPU it exits 3 while its --device-info answers.
    The benchmark goes on with the other steps and does not count it as a failure."""
    m = manifest(tmp_path, [("chapter", "gemm", "11_tensor_core_mma", "tf32", False),
                            ("chapter", "gemm", "12_tma_wgmma", "tf32", True),
                            ("baseline", "gemm", "cublas_tf32", "tf32", False)])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gemm"]) == 0
    assert problems(tmp_path, "12_tma_wgmma") == [gemm.HEADLINE]  # tried once, then skipped
    assert len(problems(tmp_path, "cublas_tf32")) == 12
    out = capsys.readouterr().out
    assert re.search(r"12_tma_wgmma +skipped: 12_tma_wgmma runs only on compute capability 9\.0 \(built for sm_90a\)",
                     out)
    assert "bench: skipped on this GPU (built for another architecture): 12_tma_wgmma" in out
    assert "FAILURES" not in out
    assert "runs only on compute capability" in (tmp_path / "bench.log").read_text()

