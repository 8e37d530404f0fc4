"""README.md's table of where each part ends (--results): the blocks go to the results file, the
summary row of each part made goes to README.md, and a run of one part keeps the others' rows."""
from pathlib import Path

import plot
from markers import CHAPTER_BEGIN, CHAPTER_END, README_BEGIN, README_END
from tut_plots.markdown import SUMMARY_PARTS, markers, summary_table

SAMPLE = Path(__file__).parent / "data" / "sample.csv"
SUMMARY_BEGIN, SUMMARY_END = markers("summary")


def test_summary_table_keeps_the_rows_of_parts_not_made():
    old = summary_table("", {"gemm": ["10 x", "cuBLAS FP32", "97.0% at 4096×4096×4096", "95.0%"],
                             "gcn": ["32 y", "pipeline", "1.98×", "64.1%"]})
    new = summary_table(old, {"gemm": ["10 x", "cuBLAS FP32", "98.0% at 4096×4096×4096", "96.0%"],
                              "conv": ["22 z", "cuDNN", "110.0%", "120.0%"]})
    rows = [line for line in new.splitlines()[2:]]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [SUMMARY_PARTS[s] for s in ("gemm", "conv", "gcn")]
    assert "98.0%" in rows[0] and "97.0%" not in new
    assert "1.98×" in rows[2]


def test_results_file_gets_the_blocks_and_readme_the_summary(tmp_path):
    (tmp_path / "plots" / "data").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\n\n{SUMMARY_BEGIN}\n{SUMMARY_END}\n\nafter\n")
    results_md = tmp_path / "docs" / "results.md"
    results_md.write_text(f"# Results\n\n{README_BEGIN}\nold\n{README_END}\n")
    ch = tmp_path / "chapters" / "01_naive_gemm"
    ch.mkdir(parents=True)
    (ch / "README.md").write_text(f"# 01\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n")
    csv = tmp_path / "plots" / "data" / "sample-gpu.csv"
    csv.write_bytes(SAMPLE.read_bytes())
    assert plot.main(["--csv", str(csv), "--out-dir", str(tmp_path / "plots"), "--readme", str(readme),
                      "--results", str(results_md), "--chapters-dir", str(tmp_path / "chapters"),
                      "--part", "gemm"]) == 0
    block = results_md.read_text()
    assert "old" not in block and "| step |" in block
    assert "](../plots/sample-gpu-gemm-speedup.png)" in block  # image links relative to docs/
    text = readme.read_text()
    summary = text[text.index(SUMMARY_BEGIN):text.index(SUMMARY_END)]
    assert SUMMARY_PARTS["gemm"] in summary and "% at 4096×4096×4096" in summary
    assert "| step |" not in text and text.endswith("after\n")
