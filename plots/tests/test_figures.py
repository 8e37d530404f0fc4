"""figures.py draws every registered chapter figure."""
import figures


def test_every_figure_is_written(tmp_path):
    assert figures.main(["--chapters-dir", str(tmp_path)]) == 0
    for chapter, figs in figures.FIGURES.items():
        for name in figs:
            png = tmp_path / chapter / name
            assert png.read_bytes()[:4] == b"\x89PNG"
            assert png.stat().st_size > 10_000
