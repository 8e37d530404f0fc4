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

    from chapter_figures import ch10
    from tut_plots import results

    assert ch10.C["BLOCK_K"] == 16 and 0 < ch10.C["WARP_ISSUE"] < 1 and ch10.C["SPLITS_PER_TRIP"] >= 1
    csv = Path(__file__).resolve().parents[1] / "data" / "nvidia-h100-80gb-hbm3.csv"
    latest = results.latest(results.load(csv))
    for m, n, k in ch10.SUITE:
        ran = latest[("10_small_problems", f"{m}x{n}x{k}")].config
        p = ch10.choose(m, n, k)
        bm, bn, _, _ = ch10.SHAPES[p["tile"]]
        assert ran == f"{bm}x{bn} split {p['splits']}", (m, n, k)


def test_the_tensor_core_figures_are_registered_and_render(tmp_path):
    ch11 = ["fragments.png", "b_swizzle.png"]
    ch12 = ["swizzle.png", "mbarrier.png", "tensormap.png", "descriptor.png", "accumulator.png", "schedule.png",
            "timeline.png"]
    assert list(figures.FIGURES["11_tensor_core_mma"]) == ch11
    assert list(figures.FIGURES["12_tma_wgmma"]) == ch12
    assert figures.main(["--chapters-dir", str(tmp_path), "--only", "11_tensor_core_mma", "12_tma_wgmma"]) == 0
    for png in [tmp_path / "11_tensor_core_mma" / f for f in ch11] + [tmp_path / "12_tma_wgmma" / f for f in ch12]:
        assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size > 10_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["11_tensor_core_mma", "12_tma_wgmma"]


def test_chapter_11s_fragments_are_the_ptx_layouts():
    """The m16n8k8 .tf32 layouts (PTX ISA, "Matrix Fragments for mma.m16n8k8"): each covers its matrix
    exactly once, and lane 5 (groupID 1, threadID_in_group 1) and lane 30 (7, 2) hold what the ISA's
    formulas say."""
    from chapter_figures import ch11

    for name, rows, cols, regs, coord, _ in ch11.FRAGMENTS:
        assert len(ch11.owners(rows, cols, regs, coord)) == rows * cols, name
    assert [ch11.a_coord(5, i) for i in range(4)] == [(1, 1), (9, 1), (1, 5), (9, 5)]
    assert [ch11.b_coord(5, i) for i in range(2)] == [(1, 1), (5, 1)]
    assert [ch11.c_coord(5, i) for i in range(4)] == [(1, 2), (1, 3), (9, 2), (9, 3)]
    assert [ch11.a_coord(30, i) for i in range(4)] == [(7, 2), (15, 2), (7, 6), (15, 6)]
    assert [ch11.b_coord(30, i) for i in range(2)] == [(2, 7), (6, 7)]
    assert [ch11.c_coord(30, i) for i in range(4)] == [(7, 4), (7, 5), (15, 4), (15, 5)]
    # the four lanes of a group share a row of A and C and a column of B
    assert {ch11.a_coord(lane, 0)[0] for lane in range(8, 12)} == {2}
    assert {ch11.b_coord(lane, 1)[1] for lane in range(8, 12)} == {2}


def test_chapter_12s_swizzle_is_the_ptx_table():
    """The 128-byte swizzle with 16-byte atomicity (PTX ISA, "Swizzling Modes"): row r of the table holds,
    at each position, the chunk that lands there; read in 8-row columns it is conflict-free, while the
    same read of unswizzled 128-byte rows hits 4 banks 8 times."""
    from chapter_figures import ch12

    ptx = ["0 1 2 3 4 5 6 7", "1 0 3 2 5 4 7 6", "2 3 0 1 6 7 4 5", "3 2 1 0 7 6 5 4",
           "4 5 6 7 0 1 2 3", "5 4 7 6 1 0 3 2", "6 7 4 5 2 3 0 1", "7 6 5 4 3 2 1 0"]
    assert [" ".join(str(ch12.chunk_at(r, p)) for p in range(8)) for r in range(8)] == ptx
    assert all(ch12.position(r + 8, c) == ch12.position(r, c) for r in range(8) for c in range(8))  # repeats
    assert all(ch12.chunk_at(r, ch12.position(r, c)) == c for r in range(8) for c in range(8))
    for c in range(8):
        assert ch12.bank_hits(c, swizzled=True) == [1] * 32
        assert ch12.wavefronts(c, swizzled=False) == 8 and sum(h > 0 for h in ch12.bank_hits(c, swizzled=False)) == 4
    assert ch12.banks_of(7) == [28, 29, 30, 31]


def test_chapter_22s_transforms_are_the_direct_convolution():
    """The figure's F(2x2,3x3) and F(4x4,3x3) matrices (the kernel's) give, in exact arithmetic, the direct
    3 x 3 correlation of any patch; and the point GEMMs are shared evenly over the consumer warps."""
    import random

    from chapter_figures import ch22

    rng = random.Random(22)
    for m in (2, 4):
        for _ in range(20):
            d = [[rng.randint(-9, 9) for _ in range(m + 2)] for _ in range(m + 2)]
            g = [[rng.randint(-9, 9) for _ in range(3)] for _ in range(3)]
            assert ch22.winograd_tile(d, g, m)[3] == ch22.direct(d, g, m)
        owners = ch22.point_owners(m)
        assert len(owners) == (m + 2) ** 2
        warps = ch22.consumer_warps(m)
        share = {w: sum(1 / len(ws) for ws in owners if w in ws) for w in range(warps)}
        assert set(share.values()) == {(m + 2) ** 2 / warps}
    assert list(figures.FIGURES["22_winograd"]) == ["winograd-tile.png", "block-roles.png"]


def test_chapter_24s_im2col_walk_is_the_readmes():
    """The figure's walk gives the README's worked example: rows 0-4 read row 55 of image n from w = 51,
    row 5 is padding (w = 56), row 6 reads (n + 1, 0, 1); the K steps run channel spans innermost."""
    from chapter_figures import ch24

    assert [ch24.source(ch24.output_pixel(i)) for i in range(7)] == [
        (0, 55, 51), (0, 55, 52), (0, 55, 53), (0, 55, 54), (0, 55, 55), None, (1, 0, 1)]
    assert ch24.k_steps()[:3] == [(0, 0, 0), (0, 0, 1), (0, 1, 0)] and len(ch24.k_steps()) == 18
    assert sorted(ch24.swizzled(r, c) for c in range(8) for r in [3]) == list(range(8))
    assert list(figures.FIGURES["24_tma_im2col_wgmma"]) == ["im2col-copy.png"]
