"""figures.py draws every registered chapter figure and every docs figure."""
import figures


def test_every_figure_is_written(tmp_path):
    assert figures.main(["--chapters-dir", str(tmp_path), "--docs-dir", str(tmp_path / "docs")]) == 0
    for chapter, figs in figures.FIGURES.items():
        for name in figs:
            png = tmp_path / chapter / name
            assert png.read_bytes()[:4] == b"\x89PNG"
            assert png.stat().st_size > 10_000
    assert "conv-as-gemm.png" in figures.DOC_FIGURES
    for name in figures.DOC_FIGURES:
        png = tmp_path / "docs" / name
        assert png.read_bytes()[:4] == b"\x89PNG"
        assert png.stat().st_size > 10_000


def test_only_docs(tmp_path):
    assert figures.main(["--chapters-dir", str(tmp_path / "chapters"), "--docs-dir", str(tmp_path / "docs"),
                         "--only", "docs"]) == 0
    assert not (tmp_path / "chapters").exists()
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == sorted(figures.DOC_FIGURES)


def test_conv_maps_agree_with_the_formulas():
    """The traced element of the docs figure, by the three maps, is the pixel the direct loop reads."""
    from chapter_figures import conv_maps as cm
    n, c, ih, iw = cm._tap_pixel(cm.J, cm.KK)
    assert (n, c) == (cm.TRACE_N, cm.TRACE_C)
    assert (ih, iw) == (cm.TRACE_P * cm.STRIDE - cm.PAD + cm.TRACE_R, cm.TRACE_Q * cm.STRIDE - cm.PAD + cm.TRACE_S)
    assert (cm.GEMM_M, cm.GEMM_N, cm.GEMM_K) == (cm.K, cm.N * cm.P * cm.Q, cm.C * cm.R * cm.S)
    # every column's padding taps: exactly the window taps outside the image
    zeros = sum(not cm._in_image(*cm._tap_pixel(j, kk)[2:]) for j in range(cm.GEMM_N) for kk in range(cm.GEMM_K))
    direct = sum(not cm._in_image(p * cm.STRIDE - cm.PAD + r, q * cm.STRIDE - cm.PAD + s)
                 for _ in range(cm.N) for _c in range(cm.C) for p in range(cm.P) for q in range(cm.Q)
                 for r in range(cm.R) for s in range(cm.S))
    assert zeros == direct


def test_chapter_10s_figure_runs_the_kernels_rule():
    """The figure reads the rule's constants from the kernel, and its replica of the rule picks, on the
    suite, the plans the binary ran on the H100 (the committed results, same SM count and occupancy)."""
    from pathlib import Path

    import results
    from chapter_figures import ch10

    assert ch10.C["BLOCK_K"] == 16 and 0 < ch10.C["WARP_ISSUE"] < 1 and ch10.C["SPLITS_PER_TRIP"] >= 1
    csv = Path(__file__).resolve().parents[1] / "data" / "nvidia-h100-80gb-hbm3.csv"
    latest = results.latest(results.load(csv))
    for m, n, k in ch10.SUITE:
        ran = latest[("10_small_problems", f"{m}x{n}x{k}")].config
        p = ch10.choose(m, n, k)
        bm, bn, _, _ = ch10.SHAPES[p["tile"]]
        assert ran == f"{bm}x{bn} split {p['splits']}", (m, n, k)
