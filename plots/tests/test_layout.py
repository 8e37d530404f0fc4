"""The layout of plots/: small files, and a benchmark command line that needs no plotting library."""
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parents[1]
MAX_LINES = 600


def test_no_python_file_is_over_600_lines():
    lengths = {p.relative_to(PLOTS).as_posix(): len(p.read_text().splitlines()) for p in PLOTS.rglob("*.py")}
    assert len(lengths) > 10 and "tut_plots/gemm.py" in lengths
    assert {p: n for p, n in lengths.items() if n > MAX_LINES} == {}


def test_bench_imports_without_matplotlib():
    """bench.py imports the family modules for their benchmark runs; matplotlib loads only when a chart is drawn."""
    code = (f"import sys; sys.modules['matplotlib'] = None; sys.path.insert(0, {str(PLOTS)!r}); "
            "import bench, tut_plots.gemm, tut_plots.conv, tut_plots.gcn")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
