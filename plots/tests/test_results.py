"""results.py: loading and validating the results CSV."""
from pathlib import Path

import pytest

from tut_plots import conv as conv_plots, results

SAMPLE = Path(__file__).parent / "data" / "sample.csv"


def test_sample_loads_with_types():
    rows = results.load(SAMPLE)
    assert len(rows) == 10
    r = rows[1]
    assert r.chapter == "01_naive_gemm" and r.m == 1024 and isinstance(r.time_ms_median, float)


def test_latest_keeps_the_newest_row():
    latest = results.latest(results.load(SAMPLE))
    assert len(latest) == 9
    assert latest[("01_naive_gemm", "4096x4096x4096")].time_ms_median == pytest.approx(80.0)


def test_step_order_chapters_then_baselines():
    assert results.step_order(results.load(SAMPLE)) == ["01_naive_gemm", "02_coalesced_gemm", "cublas_sgemm"]


def test_intensity_is_flops_per_minimum_byte():
    r = results.latest(results.load(SAMPLE))[("cublas_sgemm", "4096x4096x4096")]
    assert r.intensity == pytest.approx(2 * 4096 / 12, rel=1e-6)


def set_field(line: str, index: int, value: str) -> str:
    fields = line.split(",")
    fields[index] = value
    return ",".join(fields)


@pytest.mark.parametrize("mutate, message", [
    (lambda lines: [lines[0].replace("gflops,", "")] + lines[1:], "1: missing column(s) gflops"),
    (lambda lines: lines[:2] + [set_field(lines[2], 8, "fast")] + lines[3:], ":3: column 'time_ms_median' is not a number: 'fast'"),
    (lambda lines: lines[:2] + [set_field(lines[2], 5, "1.5")] + lines[3:], ":3: column 'm' is not an integer: '1.5'"),
    (lambda lines: lines[:2] + [set_field(lines[2], 8, "0")] + lines[3:], ":3: column 'time_ms_median' must be > 0"),
    (lambda lines: lines[:2] + [lines[2] + ",extra"] + lines[3:], ":3: 35 fields, the header has 34"),
    (lambda lines: lines[:1], "no result rows"),
    (lambda lines: [], "empty file"),
])
def test_malformed_csv_gives_a_clear_error(tmp_path, mutate, message):
    lines = SAMPLE.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(mutate(lines)) + ("\n" if lines else ""))
    with pytest.raises(results.CsvError) as e:
        results.load(bad)
    assert message in str(e.value)
    assert str(bad) in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(results.CsvError, match="no such file"):
        results.load(tmp_path / "nope.csv")


# ---- The part columns (Part II) --------------------------------------------------------------

PARTS_SAMPLE = Path(__file__).parent / "data" / "sample-parts.csv"


def test_old_header_reads_as_part_gemm():
    rows = results.load(SAMPLE)
    assert {r.part for r in rows} == {"gemm"}
    assert all(r.alt_baseline == "" and r.alt_baseline_time_ms is None for r in rows)


def test_parts_sample_loads_both_parts():
    rows = results.load(PARTS_SAMPLE)
    assert {r.part for r in rows} == {"gemm", "conv"}
    gemm = results.of_part(rows, "gemm")
    assert [r.fields for r in gemm] == [{**r.fields, "part": "gemm", "alt_baseline": "", "alt_baseline_time_ms": None}
                                        for r in results.load(SAMPLE)]
    conv = results.latest(results.of_part(rows, "conv"))
    r = conv[("15_implicit_gemm_naive", "seed_3x3")]
    assert r.step == "implicit GEMM, naive"  # a quoted field with a comma
    assert (r.m, r.n, r.k) == (128, 128 * 56 * 56, 64 * 3 * 3)
    assert r.alt_baseline == "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)" and r.alt_baseline_time_ms == pytest.approx(2.0)
    assert r.alt_ratio == pytest.approx(2.0 / 16.0)
    assert r.number == 15
    # the direct-convolution FLOPs, back from the rate and the time; and at a baseline's time
    assert r.gflop == pytest.approx(2 * 128 * 128 * 56 * 56 * 64 * 9 / 1e9)
    assert r.tflops_at(1.6) == pytest.approx(r.gflop / 1.6)
    assert conv[("13_direct_conv", "seed_3x3")].time_ms_median == pytest.approx(40.0)  # the re-run replaced 99 ms


def test_problem_order_is_first_appearance():
    conv = results.of_part(results.load(PARTS_SAMPLE), "conv")
    assert results.problem_order(conv) == ["seed_3x3", "r50_conv1", "r50_c2_3x3", "r50_c3_3x3_s2"]


def test_baseline_family_and_precision():
    assert results.baseline_family("cuDNN fastest FMA (WINOGRAD_NONFUSED)") == ("cuDNN fastest FMA", "WINOGRAD_NONFUSED")
    assert results.baseline_family("im2col + cuBLAS") == ("im2col + cuBLAS", "")
    rows = results.load(PARTS_SAMPLE)
    assert {results.precision(r) for r in rows} == {"FP32"}  # every step declared MATH fp32
    tf32 = results.Row({**rows[-1].fields, "math": "tf32"})
    assert results.precision(tf32) == "TF32"
    # The declaration decides, never a baseline's name.
    named = results.Row({**rows[-1].fields, "baseline": "cuDNN fastest (TF32 allowed)"})
    assert results.precision(named) == "FP32"


def test_median():
    assert results.median([3.0, 1.0, 2.0]) == 2.0
    assert results.median([4.0, 1.0, 2.0, 3.0]) == 2.5
    assert results.median([None, float("nan")]) != results.median([None, float("nan")])  # nan


def replace_field(line: str, column: str, value: str, header: str) -> str:
    import csv
    import io
    names = next(csv.reader([header]))
    fields = next(csv.reader([line]))
    fields[names.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(fields)
    return out.getvalue()


@pytest.mark.parametrize("mutate, message", [
    (lambda h, lines: [h.replace(",alt_baseline_time_ms", "")] + [line.rsplit(",", 1)[0] for line in lines],
     "1: has column(s) part, alt_baseline but not alt_baseline_time_ms"),
    (lambda h, lines: [h] + [replace_field(lines[-1], "part", "graph", h)],
     ":2: column 'part' must be one of gemm, conv, gcn, got 'graph'"),
    (lambda h, lines: [h] + [replace_field(lines[-1], "alt_baseline_time_ms", "quick", h)],
     ":2: column 'alt_baseline_time_ms' is not a number: 'quick'"),
    (lambda h, lines: [h] + [replace_field(lines[-1], "alt_baseline_time_ms", "-1", h)],
     ":2: column 'alt_baseline_time_ms' must be > 0 or empty"),
    (lambda h, lines: [h] + [replace_field(lines[-1], "alt_baseline_time_ms", "", h)],
     ":2: columns 'alt_baseline' and 'alt_baseline_time_ms' must be both empty or both set"),
])
def test_malformed_part_columns(tmp_path, mutate, message):
    header, *lines = PARTS_SAMPLE.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(mutate(header, lines)) + "\n")
    with pytest.raises(results.CsvError) as e:
        results.load(bad)
    assert message in str(e.value) and str(bad) in str(e.value)


# ---- Chapter 20, the fused epilogue: its rows carry other baselines --------------------------------

def test_fused_epilogue_rows_are_told_by_their_op():
    conv = results.latest(results.of_part(results.load(PARTS_SAMPLE), "conv"))
    fused = {key for key, r in conv.items() if conv_plots.is_fused_epilogue(r)}
    assert fused == {("20_fused_epilogue", layer) for layer in ("seed_3x3", "r50_conv1", "r50_c2_3x3", "r50_c3_3x3_s2")}
    r = conv[("20_fused_epilogue", "seed_3x3")]
    assert r.baseline == "cuDNN fused conv+bias+ReLU (IMPLICIT_PRECOMP_GEMM, FMA)"  # quoted in the CSV: it has a comma
    assert conv_plots.extended_step(r, conv.values()) == "19_implicit_gemm_double_buffer"
    assert r.ratio_to_baseline == pytest.approx(3.9 / 2.6) and r.alt_ratio == pytest.approx(3.25 / 2.6)
    assert r.gflop == pytest.approx(conv[("19_implicit_gemm_double_buffer", "seed_3x3")].gflop)  # the conv's FLOPs
    assert results.precision(r) == "FP32"
    no_cudnn = results.Row({**r.fields, "baseline": "im2col + cuBLAS FP32 + bias/ReLU kernel (no cuDNN in this build)"})
    assert conv_plots.is_fused_epilogue(no_cudnn)
    plain = results.Row({**r.fields, "op": "conv"})  # whatever its baseline says, OP conv is a plain convolution
    assert not conv_plots.is_fused_epilogue(plain)
    gemm = results.Row({**r.fields, "part": "gemm"})
    assert not conv_plots.is_fused_epilogue(gemm)


def test_conv_baseline_rows_skip_the_fused_epilogue():
    conv = [r for r in results.latest(results.of_part(results.load(PARTS_SAMPLE), "conv")).values()
            if r.problem == "seed_3x3"]
    assert sorted(r.number for r in conv_plots.conv_baseline_rows(conv)) == [13, 14, 15, 16, 17, 18, 19]
    # a build without cuDNN: no "cuDNN fastest FMA" rows; the convolution steps' rows, still not 20's
    no_cudnn = [results.Row({**r.fields, "baseline": r.baseline.replace("cuDNN fastest FMA", "im2col + cuBLAS FP32")})
                for r in conv]
    assert sorted(r.number for r in conv_plots.conv_baseline_rows(no_cudnn)) == [13, 14, 15, 16, 17, 18, 19]
    assert conv_plots.conv_baseline_rows([r for r in conv if r.number == 20]) == []


def _row(chapter, time_ms, base, base_ms, run, stamp, *, alt="", alt_ms="", math="fp32", op="conv", problem="seed_3x3"):
    return {"gpu": "g", "cuda": "13.0", "chapter": chapter, "step": chapter, "problem": problem, "m": "1", "n": "1",
            "k": "1", "time_ms_median": str(time_ms), "time_ms_min": str(time_ms), "time_ms_max": str(time_ms),
            "gflops": "1000", "gbps": "1", "baseline": base, "baseline_time_ms": str(base_ms),
            "ratio_to_baseline": str(base_ms / time_ms), "pct_of_peak": "1", "verified": "yes", "timestamp": stamp,
            "peak_gflops": "1", "peak_gbps": "1", "part": "conv", "alt_baseline": alt, "alt_baseline_time_ms": str(alt_ms),
            "math": math, "op": op, "tags": "", "run": run}


def test_references_are_the_best_process_in_the_file(tmp_path):
    """Every shown row is compared with the library's lowest median over every process in the file
    that timed it on the problem (a step's repeats and older runs included), named as that process
    named it; the row keeps its own process's figures as own_*. Another library, GPU or CUDA version
    is not a candidate."""
    path = tmp_path / "r.csv"
    fastest, precomp = "cuDNN fastest FMA ({})", "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)"
    for r in [
        _row("17_x", 4.0, fastest.format("FFT_TILING"), 0.9, "A", "2026-01-01T00:00:00Z", alt=precomp, alt_ms=1.6),  # older run
        _row("17_x", 4.0, fastest.format("FFT_TILING"), 1.2, "B", "2026-01-02T00:00:00Z", alt=precomp, alt_ms=1.5),
        _row("19_x", 2.0, fastest.format("WINOGRAD_NONFUSED"), 0.8, "B", "2026-01-02T00:01:00Z", alt=precomp, alt_ms=1.4),
        _row("19_x", 2.0, fastest.format("FFT_TILING"), 1.1, "B", "2026-01-02T00:02:00Z", alt=precomp, alt_ms=1.3),  # repeat
        _row("21_x", 1.0, "cuDNN fastest TF32 allowed, NHWC (IMPLICIT_PRECOMP_GEMM)", 0.2, "B", "2026-01-02T00:03:00Z",
             math="tf32"),  # another library: its own reference
        {**_row("19_x", 2.0, fastest.format("GEMM"), 0.1, "C", "2026-01-01T00:00:00Z"), "cuda": "12.0"},  # other CUDA
    ]:
        results.append_row(path, r)
    latest = results.latest(results.load(path))
    s17, s19, s21 = (latest[(c, "seed_3x3")] for c in ("17_x", "19_x", "21_x"))
    for r in (s17, s19):
        assert r.baseline == fastest.format("WINOGRAD_NONFUSED") and r.baseline_time_ms == 0.8
        assert (r.baseline_processes, r.baseline_lo, r.baseline_hi) == (4, 0.8, 1.2)
        assert r.alt_baseline_time_ms == 1.3 and r.alt_baseline_processes == 4
    assert s17.ratio_to_baseline == pytest.approx(0.8 / 4.0) and s17.alt_ratio == pytest.approx(1.3 / 4.0)
    assert (s17.own_baseline_time_ms, s17.own_ratio_to_baseline) == (1.2, pytest.approx(0.3))
    assert s19.own_baseline == fastest.format("FFT_TILING")  # the newest of 19's processes is the shown row
    assert (s21.baseline_time_ms, s21.baseline_processes) == (0.2, 1)
    assert s21.alt_baseline_processes == 0 and s21.alt_baseline_time_ms is None


def test_dram_bytes_sums_the_newest_profile_of_a_chapter():
    m = lambda k, metric, v, unit, t: {"chapter": "25_x", "problem": "g", "kernel": k, "metric": metric, "value": v,
                                       "unit": unit, "timestamp": t}
    rows = [m("a", "dram__bytes_read.sum", "1", "Gbyte", "2026-01-01T00:00:00Z"),  # an older profile: left out
            m("a", "dram__bytes_read.sum", "288.7", "Mbyte", "2026-01-02T00:00:00Z"),
            m("a", "dram__bytes_write.sum", "15.1", "Mbyte", "2026-01-02T00:00:00Z"),
            m("b", "dram__bytes_read.sum", "1,000", "Kbyte", "2026-01-02T00:00:00Z"),
            m("a", "gpu__time_duration.sum", "107", "us", "2026-01-02T00:00:00Z")]
    assert results.dram_bytes(rows, "25_x", "g") == pytest.approx(288.7e6 + 15.1e6 + 1e6)
    assert results.dram_bytes(rows, "25_x", "other") is None
