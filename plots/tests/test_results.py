"""results.py: loading and validating the results CSV."""
from pathlib import Path

import pytest

import results

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
    (lambda lines: lines[:2] + [lines[2] + ",extra"] + lines[3:], ":3: 27 fields, the header has 26"),
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
