"""plot.py on the committed sample CSV: charts written, README tables rendered, clear errors."""
import subprocess
import sys
from pathlib import Path

import pytest

import plot
from markers import (CHAPTER_BEGIN, CHAPTER_END, CONV_README_BEGIN, CONV_README_END, CONV_TF32_BEGIN, CONV_TF32_END,
                     README_BEGIN, README_END)
from tut_plots import conv as conv_plots, results

SAMPLE = Path(__file__).parent / "data" / "sample.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "plots").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nintro\n\n{README_BEGIN}\nold table\n{README_END}\n\nafter\n")
    ch = tmp_path / "chapters" / "01_naive_gemm"
    ch.mkdir(parents=True)
    (ch / "README.md").write_text(f"# 01\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n")
    csv = tmp_path / "plots" / "data" / "sample-gpu.csv"
    csv.parent.mkdir()
    csv.write_bytes(SAMPLE.read_bytes())
    return tmp_path, readme, csv


def test_charts_and_tables(tree, capsys):
    root, readme, csv = tree
    assert plot.main(["--csv", str(csv), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters")]) == 0
    for kind in ("speedup", "sweep", "roofline"):
        png = root / "plots" / f"sample-gpu-gemm-{kind}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert png.stat().st_size > 10_000

    text = readme.read_text()
    assert "old table" not in text and text.startswith("# Title") and text.rstrip().endswith("after")
    assert "| 01 naive | 80.00 [78.40, 84.00] | 1.72 | 2.5% | – | 1.0 | yes |" in text
    assert "| 02 coalesced | 16.00 [15.68, 16.80] | 8.59 | 12.5% | 5.00 | 5.0 | yes |" in text
    assert "| cuBLAS FP32 (no TF32) | 2.000 [1.960, 2.100] | 68.72 | 100.0% | – | 40.0 | yes |" in text
    assert "![sample-gpu-gemm-speedup](plots/sample-gpu-gemm-speedup.png)" in text
    assert "Sample GPU (synthetic test data)" in text

    ch = (root / "chapters" / "01_naive_gemm" / "README.md").read_text()
    assert "| 1024×1024×1024 |" in ch and "| 4095×4095×4095 |" in ch and "| 4096×4096×4096 | 80.00 [78.40, 84.00] |" in ch
    assert "| 01 naive |" in capsys.readouterr().out


def test_rerun_is_stable(tree):
    root, readme, csv = tree
    args = ["--csv", str(csv), "--out-dir", str(root / "plots"), "--readme", str(readme)]
    plot.main(args)
    first = readme.read_text()
    plot.main(args)
    assert readme.read_text() == first


def test_missing_markers_is_an_error(tree, capsys):
    root, readme, csv = tree
    readme.write_text("# no markers here\n")
    assert plot.main(["--csv", str(csv), "--out-dir", str(root / "plots"), "--readme", str(readme)]) == 1
    assert "markers" in capsys.readouterr().err


def test_malformed_csv_from_the_command_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("gpu,cuda\nx,y\n")
    p = subprocess.run([sys.executable, str(Path(plot.__file__)), "--csv", str(bad), "--out-dir", str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stderr.startswith("error: ") and "missing column(s)" in p.stderr
    assert p.stderr.count("\n") == 1  # one line, no traceback


def test_no_headline_rows(tmp_path):
    lines = SAMPLE.read_text().splitlines()
    only_small = [lines[0]] + [line for line in lines[1:] if "4096x4096x4096" not in line]
    csv = tmp_path / "x.csv"
    csv.write_text("\n".join(only_small) + "\n")
    assert plot.main(["--csv", str(csv), "--out-dir", str(tmp_path)]) == 1


# ---- Part II: convolution ---------------------------------------------------------------------

PARTS_SAMPLE = Path(__file__).parent / "data" / "sample-parts.csv"
CONV_CHAPTERS = ("13_direct_conv", "17_implicit_gemm_warp_tiles", "20_fused_epilogue")


@pytest.fixture
def conv_tree(tree):
    root, readme, csv = tree
    csv.write_bytes(PARTS_SAMPLE.read_bytes())
    readme.write_text(readme.read_text() + f"\n{CONV_README_BEGIN}\nold conv table\n{CONV_README_END}\n\nend\n")
    for name in CONV_CHAPTERS:
        ch = root / "chapters" / name
        ch.mkdir(parents=True)
        (ch / "README.md").write_text(f"# {name}\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n\nexercises\n")
    return root, readme, csv


def run_plot(root, csv, readme, *extra):
    return plot.main(["--csv", str(csv), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters"), *extra])


def test_conv_charts_and_tables(conv_tree, capsys):
    root, readme, csv = conv_tree
    assert run_plot(root, csv, readme) == 0
    for name in ("gemm-speedup", "gemm-sweep", "gemm-roofline", "conv-speedup", "conv-layers", "conv-roofline"):
        png = root / "plots" / f"sample-gpu-{name}.png"
        assert png.read_bytes()[:8] == PNG_MAGIC
        assert png.stat().st_size > 10_000

    text = readme.read_text()
    assert "old table" not in text and "old conv table" not in text and text.rstrip().endswith("end")
    conv = text[text.index(CONV_README_BEGIN):]
    assert "Sample GPU (synthetic test data)**, CUDA 13.0, 2026-01-02; convolution layer `seed_3x3`" in conv
    # the headline table: each step against both libraries at their best over the processes (the
    # lowest median of any process), then the libraries' rows
    assert "| × previous step | × step 13 | verified |" in conv
    assert "| 13 direct convolution | 40.00 [39.20, 42.00] | 1.48 | 5.0% | 4.0% | – | 1.0 | yes |" in conv
    # step 16's own process timed precomp at 2.2 ms; the others' 2.0 ms is the library's best
    assert "| 16 implicit GEMM, shared-memory tiles | 8.000 [7.840, 8.400] | 7.40 | 25.0% | 20.0% | 2.00 | 5.0 | yes |" in conv
    # the fused-epilogue step against its own baselines, named in its cells
    assert ("| 20 fused epilogue (+ bias, ReLU) | 2.600 [2.548, 2.730] | 22.77 | 125.0% of 19 + separate kernel "
            "| 150.0% of cuDNN fused | 0.96 | 15.4 | yes |") in conv
    assert "| cuDNN IMPLICIT_PRECOMP_GEMM (FMA) | 2.000 | 29.60 | 100.0% | 80.0% | – | 20.0 | – |" in conv  # the best process, not step 16's 2.2 ms
    assert "| cuDNN fastest FMA (WINOGRAD_NONFUSED) | 1.600 | 36.99 | 125.0% | 100.0% | – | 25.0 | – |" in conv
    # the layer table: steps 17-20 only, TFLOP/s (20's: the convolution's FLOPs), both baselines, the best
    # convolution step against cuDNN fastest (never 20: its own ratio is against cuDNN fused)
    assert "| layer | GEMM M×N×K | step 17 | step 18 | step 19 | step 20 (+ bias, ReLU) | cuDNN precomp |" in conv
    # cuDNN fastest at its best over the 5 processes (steps 15-19) that timed it, and their spread
    assert "| r50_conv1 | 64×401408×147 | 6.04 | 7.55 | 9.67 | 9.30 | 15.11 | 15.11 (IMPLICIT_PRECOMP_GEMM) | 5: 0.5000–0.5000 | 19: 64.0% |" in conv
    assert "| r50_c2_3x3 | 64×100352×576 | 11.84 | 14.80 | 18.94 | 18.21 | 18.50 | 29.60 (WINOGRAD_NONFUSED) | 5: 0.2500–0.2500 | 19: 64.0% |" in conv
    # the fused-epilogue table: 20 against 19's own row, the unfused pipeline and cuDNN fused
    assert conv.index("Per layer, TFLOP/s") < conv.index("Fused epilogue (bias + ReLU)") < conv.index("![")
    assert ("| layer | step 20 (ms) | step 19, conv only (ms) | 19 + separate kernel (ms) | cuDNN fused (ms) "
            "| 20 over 19 | cuDNN fused / 20 |") in conv
    assert "| seed_3x3 | 2.600 | 2.500 | 3.250 | 3.900 | +4.0% | 1.50× |" in conv
    assert "| r50_c3_3x3_s2 | 0.3250 | 0.3125 | 0.3900 | 0.4000 | +4.0% | 1.23× |" in conv
    assert "cuDNN fused conv+bias+ReLU (IMPLICIT_PRECOMP_GEMM, FMA)" in conv
    assert "step 16" not in conv
    assert conv.index("| seed_3x3 |") < conv.index("| r50_conv1 |") < conv.index("| r50_c3_3x3_s2 |")
    assert "![sample-gpu-conv-layers](plots/sample-gpu-conv-layers.png)" in conv
    # the GEMM block is the one the old-format sample gives
    assert "| 01 naive | 80.00 [78.40, 84.00] | 1.72 | 2.5% | – | 1.0 | yes |" in text[:text.index(CONV_README_BEGIN)]

    ch13 = (root / "chapters" / "13_direct_conv" / "README.md").read_text()
    assert ("| seed_3x3 | 128×401408×576 | 40.00 [39.20, 42.00] | 1.48 | 2.000 | 5.0% | 1.600 (WINOGRAD_NONFUSED) | 4.0% | yes |"
            in ch13)
    assert "r50_conv1" not in ch13 and ch13.rstrip().endswith("exercises")
    ch17 = (root / "chapters" / "17_implicit_gemm_warp_tiles" / "README.md").read_text()
    assert "| r50_c3_3x3_s2 | 128×25088×1152 | 0.5000 [0.4900, 0.5250] | 14.80 | 0.2000 | 40.0% | 0.2000 (IMPLICIT_PRECOMP_GEMM) | 40.0% | yes |" in ch17
    assert [line.split(" | ")[0] for line in ch17.splitlines() if line.startswith("| r50") or line.startswith("| seed")] == \
        ["| seed_3x3", "| r50_conv1", "| r50_c2_3x3", "| r50_c3_3x3_s2"]
    ch20 = (root / "chapters" / "20_fused_epilogue" / "README.md").read_text()
    assert ("| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s (conv FLOPs) | cuDNN fused (ms) "
            "| % of cuDNN fused | unfused (ms) | % of unfused | verified |") in ch20
    assert "| seed_3x3 | 128×401408×576 | 2.600 [2.548, 2.730] | 22.77 | 3.900 | 150.0% | 3.250 | 125.0% | yes |" in ch20
    assert "| r50_conv1 | 64×401408×147 | 0.8125 [0.7963, 0.8531] | 9.30 | 1.000 | 123.1% | 0.9750 | 120.0% | yes |" in ch20
    assert ('"cuDNN fused" is cuDNN fused conv+bias+ReLU (IMPLICIT_PRECOMP_GEMM, FMA); "unfused" is '
            "19_implicit_gemm_double_buffer + bias/ReLU kernel") in ch20
    assert "precomp" not in ch20.replace("IMPLICIT_PRECOMP_GEMM", "") and "fastest" not in ch20
    assert "| 4096×4096×4096 | 80.00 [78.40, 84.00] |" in (root / "chapters" / "01_naive_gemm" / "README.md").read_text()
    out = capsys.readouterr().out
    assert "| 13 direct convolution |" in out and "| 01 naive |" in out and "| seed_3x3 | 2.600 | 2.500 |" in out


def test_gemm_outputs_do_not_change_with_conv_rows(tree, tmp_path):
    """The GEMM charts and tables from a file with both parts are byte-identical to those from the
    same GEMM rows in the old format."""
    root, readme, csv = tree
    assert run_plot(root, csv, readme) == 0
    before = {p.name: p.read_bytes() for p in (root / "plots").glob("*.png")}
    readme_before = readme.read_text()
    chapter_before = (root / "chapters" / "01_naive_gemm" / "README.md").read_text()
    csv.write_bytes(PARTS_SAMPLE.read_bytes())
    assert run_plot(root, csv, readme, "--part", "gemm") == 0
    assert {p.name: p.read_bytes() for p in (root / "plots").glob("*.png")} == before
    assert readme.read_text() == readme_before
    assert (root / "chapters" / "01_naive_gemm" / "README.md").read_text() == chapter_before


def test_conv_part_leaves_gemm_alone(conv_tree):
    root, readme, csv = conv_tree
    assert run_plot(root, csv, readme, "--part", "conv") == 0
    assert sorted(p.name for p in (root / "plots").glob("*.png")) == [
        "sample-gpu-conv-layers.png", "sample-gpu-conv-roofline.png", "sample-gpu-conv-speedup.png"]
    text = readme.read_text()
    assert "old table" in text and "old conv table" not in text
    assert (root / "chapters" / "01_naive_gemm" / "README.md").read_text() == f"# 01\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n"


def test_conv_markers_missing_is_an_error_only_with_conv_rows(conv_tree, capsys):
    root, readme, csv = conv_tree
    readme.write_text(f"# gemm markers only\n{README_BEGIN}\n{README_END}\n")
    assert run_plot(root, csv, readme) == 1
    assert "results:conv:begin" in capsys.readouterr().err
    assert readme.read_text() == f"# gemm markers only\n{README_BEGIN}\n{README_END}\n"  # nothing half-written
    csv.write_bytes(SAMPLE.read_bytes())  # GEMM rows only: the conv markers are not needed
    assert run_plot(root, csv, readme) == 0


def test_asking_for_a_part_without_rows(tree, capsys):
    root, readme, csv = tree
    assert run_plot(root, csv, readme, "--part", "conv") == 1
    assert "no rows of part 'conv'" in capsys.readouterr().err


def test_conv_without_the_headline_layer(conv_tree, capsys):
    root, readme, csv = conv_tree
    lines = PARTS_SAMPLE.read_text().splitlines()
    csv.write_text("\n".join(line for line in lines if "seed_3x3" not in line) + "\n")
    assert run_plot(root, csv, readme) == 1
    assert "no convolution rows at the headline layer seed_3x3" in capsys.readouterr().err


def test_other_precisions_are_left_out_and_named(conv_tree, capsys):
    """A TF32 convolution row goes to the TF32 section (its own markers), never to the FP32 one; a row
    in a precision without charts of its own (FP16 here) is left out, and both are named."""
    root, readme, csv = conv_tree
    readme.write_text(readme.read_text() + f"\n{CONV_TF32_BEGIN}\n{CONV_TF32_END}\n")
    lines = PARTS_SAMPLE.read_text().splitlines()
    last_plain = [line for line in lines if ",19_implicit_gemm_double_buffer," in line][-1]
    tf32 = last_plain.replace("19_implicit_gemm_double_buffer", "21_implicit_gemm_tf32").replace(
        "cuDNN fastest FMA (IMPLICIT_PRECOMP_GEMM)", "cuDNN fastest TF32 (IMPLICIT_PRECOMP_GEMM)").replace(
        ",fp32,conv,", ",tf32,conv,")
    assert "21_implicit_gemm_tf32" in tf32 and ",tf32," in tf32
    fp16 = [line for line in lines if ",02_coalesced_gemm," in line][-1].replace(
        "02_coalesced_gemm", "03_half_gemm").replace(",fp32,gemm,", ",fp64,gemm,")
    csv.write_text("\n".join(lines + [tf32, fp16]) + "\n")
    assert run_plot(root, csv, readme) == 0
    out = capsys.readouterr().out
    assert ("note: 21_implicit_gemm_tf32 compares in TF32, not in the FP32 charts and tables: its rows go to the "
            "TF32 charts and tables (README results:conv-tf32)") in out
    assert "note: 03_half_gemm compares in FP64, not in the FP32 charts and tables: left out" in out
    text = readme.read_text()
    conv = text[text.index(CONV_README_BEGIN):text.index(CONV_README_END)]
    assert "| 20 fused epilogue (+ bias, ReLU) |" in conv and "| 21 " not in conv and "TF32" not in conv
    assert "| r50_c3_3x3_s2 | 128×25088×1152 |" in text[text.index(CONV_TF32_BEGIN):]
    assert "| 03 " not in text[:text.index(README_END)]  # the FP16 row is in no table


def rewrite_sample(csv, edit) -> None:
    """The parts sample with edit(row, column index) applied to each row, written to csv."""
    import csv as csvmod
    with PARTS_SAMPLE.open(newline="") as f:
        rows = list(csvmod.reader(f))
    ix = {name: i for i, name in enumerate(rows[0])}
    rows = [rows[0]] + [r for r in rows[1:] if edit(r, ix) is not False]
    with csv.open("w", newline="") as f:
        csvmod.writer(f, lineterminator="\n").writerows(rows)


def test_conv_rows_without_the_second_baseline(conv_tree):
    """A build without cuDNN: a convolution step's row has one baseline and no alt, the fused step's
    baseline is im2col + cuBLAS + a bias/ReLU kernel. The tables say – and the charts draw."""
    root, readme, csv = conv_tree

    def no_cudnn(r, ix):
        if r[ix["part"]] != "conv":
            return
        if r[ix["chapter"]] == "20_fused_epilogue":
            r[ix["baseline"]] = "im2col + cuBLAS FP32 + bias/ReLU kernel (no cuDNN in this build)"
        else:
            r[ix["alt_baseline"]] = ""
            r[ix["alt_baseline_time_ms"]] = ""
            r[ix["baseline"]] = "im2col + cuBLAS FP32 (no cuDNN in this build)"

    rewrite_sample(csv, no_cudnn)
    assert run_plot(root, csv, readme) == 0
    conv = readme.read_text()[readme.read_text().index(CONV_README_BEGIN):]
    assert "| 13 direct convolution | 40.00 [39.20, 42.00] | 1.48 | – | 4.0% | – | 1.0 | yes |" in conv
    assert "| im2col + cuBLAS FP32 (no cuDNN in this build) | 1.600 |" in conv
    assert "| 125.0% of 19 + separate kernel | 150.0% of im2col + cuBLAS FP32 + bias/ReLU kernel |" in conv
    assert "| r50_conv1 | 64×401408×147 | 6.04 | 7.55 | 9.67 | 9.30 | – | 15.11 (no cuDNN in this build) | 5: 0.5000–0.5000 | 19: 64.0% |" in conv
    ch20 = (root / "chapters" / "20_fused_epilogue" / "README.md").read_text()
    assert "| im2col + cuBLAS FP32 + bias/ReLU kernel (ms) |" in ch20
    assert (root / "plots" / "sample-gpu-conv-layers.png").stat().st_size > 10_000


def test_layer_baselines_ignore_the_fused_epilogue_rows():
    """The layers' cuDNN baselines come from the convolution steps' rows only: with steps 19 and 20,
    from 19's alone (20's cuDNN fused and unfused times would move both medians and names)."""
    latest = {key: r for key, r in results.latest(results.of_part(results.load(PARTS_SAMPLE), "conv")).items()
              if key[0] in ("19_implicit_gemm_double_buffer", "20_fused_epilogue")}
    bases = conv_plots.conv_baselines(latest)
    assert list(bases) == ["seed_3x3", "r50_conv1", "r50_c2_3x3", "r50_c3_3x3_s2"]
    seed = bases["seed_3x3"]
    # the plain convolution steps' processes (13-19), never 20's; rows without a run id (these
    # fixtures') count only as the shown rows themselves
    assert seed.processes == 7 and seed.row.chapter == "19_implicit_gemm_double_buffer"
    assert (seed.main.ms, seed.alt.ms) == (1.6, 2.0)  # with 20's row: 2.75 and 2.625
    assert seed.main.label == "cuDNN fastest FMA (WINOGRAD_NONFUSED)"
    assert seed.alt.name == "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)"
    assert (bases["r50_conv1"].main.ms, bases["r50_conv1"].alt.ms) == (0.5, 0.5)


def test_only_the_fused_epilogue_step(conv_tree):
    """A file whose only conv rows are step 20's: no cuDNN baselines to show, the rest still works."""
    root, readme, csv = conv_tree
    rewrite_sample(csv, lambda r, ix: r[ix["part"]] == "gemm" or r[ix["chapter"]] == "20_fused_epilogue")
    assert run_plot(root, csv, readme) == 0
    conv = readme.read_text()[readme.read_text().index(CONV_README_BEGIN):]
    # No plain convolution step measured: the unfused pipeline goes by its own name.
    assert ("| 20 fused epilogue (+ bias, ReLU) | 2.600 [2.548, 2.730] | 22.77 | 125.0% of 19_implicit_gemm_double_buffer "
            "+ bias/ReLU kernel | 150.0% of cuDNN fused | – | 1.0 | yes |") in conv
    assert "| cuDNN fastest FMA" not in conv and "| cuDNN IMPLICIT" not in conv
    assert "| seed_3x3 | 128×401408×576 | 22.77 | – | – | – |" in conv  # layer table: no baselines, no best step
    assert "| seed_3x3 | 2.600 | – | 3.250 | 3.900 | – | 1.50× |" in conv  # no step 19 row to compare with
    for name in ("conv-speedup", "conv-layers", "conv-roofline"):
        assert (root / "plots" / f"sample-gpu-{name}.png").stat().st_size > 10_000


def test_no_fused_table_without_the_fused_epilogue_step(conv_tree):
    root, readme, csv = conv_tree
    rewrite_sample(csv, lambda r, ix: r[ix["chapter"]] != "20_fused_epilogue")
    assert run_plot(root, csv, readme) == 0
    conv = readme.read_text()[readme.read_text().index(CONV_README_BEGIN):]
    assert "| 19 implicit GEMM, double buffering |" in conv
    assert "Fused epilogue (bias + ReLU)" not in conv and "step 20" not in conv and "| 20 " not in conv
