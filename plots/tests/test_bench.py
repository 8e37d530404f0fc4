"""bench.py's pieces that need no GPU: the manifest and the no-GPU path."""
import os
import stat
from pathlib import Path

import pytest

import bench


def fake_binary(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "fake_step"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def write_manifest(tmp_path: Path, binary: str) -> Path:
    m = tmp_path / "chapters.tsv"
    m.write_text("kind\tpart\tname\ttitle\tbinary\tsource\n"
                 f"chapter\tgemm\t01_naive_gemm\tnaive\t{binary}\t/src/01\n")
    return m


def test_manifest_is_read(tmp_path):
    m = write_manifest(tmp_path, "/bin/true")
    assert bench.read_manifest(m) == [{"kind": "chapter", "part": "gemm", "name": "01_naive_gemm", "title": "naive",
                                       "binary": "/bin/true", "source": "/src/01"}]


def test_missing_manifest_says_build_first(tmp_path):
    with pytest.raises(SystemExit, match="build first"):
        bench.read_manifest(tmp_path / "chapters.tsv")


def test_no_gpu_stops_with_one_sentence(tmp_path):
    exe = fake_binary(tmp_path, 'echo "error: no CUDA GPU available: no driver" >&2; exit 3')
    with pytest.raises(SystemExit, match="no CUDA GPU"):
        bench.main(["--manifest", str(write_manifest(tmp_path, exe)), "--out-dir", str(tmp_path)])


def test_device_facts_are_parsed(tmp_path):
    exe = fake_binary(tmp_path, 'printf "name: NVIDIA H100 80GB HBM3\\nslug: nvidia-h100-80gb-hbm3\\ncuda: 13.0\\n"')
    facts = bench.device_facts(exe)
    assert facts["slug"] == "nvidia-h100-80gb-hbm3" and facts["cuda"] == "13.0"


def test_sweep_spans_256_to_8192_with_odd_sizes():
    sides = [m for m, _, _ in bench.SWEEP]
    assert min(sides) == 256 and max(sides) == 8192
    assert any(m % 2 for m, _, _ in bench.SWEEP)


def test_metrics_problem_from_flags():
    import metrics
    assert metrics.problem_from_flags([]) == "4096x4096x4096"
    assert metrics.problem_from_flags(["--m", "127", "--k=63"]) == "127x4096x63"


def test_metrics_reads_ncu_raw_csv(tmp_path):
    import metrics
    raw = tmp_path / "raw.csv"
    raw.write_text('==PROF== Connected to process\n'
                   '"ID","Kernel Name","gpu__time_duration.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"\n'
                   '"","","us",""\n'
                   '"0","naive_gemm_kernel","1,234.5","0"\n')
    rows = metrics.read_ncu_raw(raw)
    assert rows == [
        {"kernel": "naive_gemm_kernel", "metric": "gpu__time_duration.sum", "value": "1234.5", "unit": "us"},
        {"kernel": "naive_gemm_kernel", "metric": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
         "value": "0", "unit": ""},
    ]
