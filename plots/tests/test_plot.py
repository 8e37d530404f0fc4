"""plot.py on the committed sample CSV: charts written, README tables rendered, clear errors."""
import subprocess
import sys
from pathlib import Path

import pytest

import plot

SAMPLE = Path(__file__).parent / "data" / "sample.csv"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "plots").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\nintro\n\n{plot.README_BEGIN}\nold table\n{plot.README_END}\n\nafter\n")
    ch = tmp_path / "chapters" / "01_naive_gemm"
    ch.mkdir(parents=True)
    (ch / "README.md").write_text(f"# 01\n\n{plot.CHAPTER_BEGIN}\n{plot.CHAPTER_END}\n")
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
    assert "| 01 naive | 80.0 [78.4, 84.0] | 1.72 | 2.5% | – | 1.0 | yes |" in text
    assert "| 02 coalesced | 16.0 [15.7, 16.8] | 8.59 | 12.5% | 5.00 | 5.0 | yes |" in text
    assert "| cuBLAS FP32 (no TF32) | 2.000 [1.960, 2.100] | 68.72 | 100.0% | – | 40.0 | yes |" in text
    assert "![sample-gpu-gemm-speedup](plots/sample-gpu-gemm-speedup.png)" in text
    assert "Sample GPU (synthetic test data)" in text

    ch = (root / "chapters" / "01_naive_gemm" / "README.md").read_text()
    assert "| 1024×1024×1024 |" in ch and "| 4095×4095×4095 |" in ch and "| 4096×4096×4096 | 80.0" in ch
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
