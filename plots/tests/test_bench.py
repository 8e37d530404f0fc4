"""bench.py's pieces that need no GPU: the manifest, the no-GPU path, and which problems each part's
steps run (against fake binaries)."""
import csv
import re
import stat
import sys
from pathlib import Path

import pytest

import bench
from fakes import MANIFEST_HEADER, PREAMBLE, manifest_line, recorded
from tut_plots import conv as conv_plots, gemm, runner


def fake_binary(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "fake_step"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def write_manifest(tmp_path: Path, binary: str) -> Path:
    m = tmp_path / "chapters.tsv"
    m.write_text("kind\tpart\tname\ttitle\tbinary\tsource\tmath\top\ttags\n"
                 f"chapter\tgemm\t01_naive_gemm\tnaive\t{binary}\t/src/01\tfp32\tgemm\t\n")
    return m


def test_manifest_is_read(tmp_path):
    m = write_manifest(tmp_path, "/bin/true")
    assert runner.read_manifest(m) == [{"kind": "chapter", "part": "gemm", "name": "01_naive_gemm", "title": "naive",
                                       "binary": "/bin/true", "source": "/src/01", "math": "fp32", "op": "gemm",
                                       "tags": ""}]


def test_missing_manifest_says_build_first(tmp_path):
    with pytest.raises(SystemExit, match="build first"):
        runner.read_manifest(tmp_path / "chapters.tsv")


def test_no_gpu_stops_with_one_sentence(tmp_path):
    exe = fake_binary(tmp_path, 'echo "error: no CUDA GPU available: no driver" >&2; exit 3')
    with pytest.raises(SystemExit, match="no CUDA GPU"):
        bench.main(["--processes", "1", "--manifest", str(write_manifest(tmp_path, exe)), "--out-dir", str(tmp_path)])


def test_device_facts_are_parsed(tmp_path):
    exe = fake_binary(tmp_path, 'printf "name: NVIDIA H100 80GB HBM3\\nslug: nvidia-h100-80gb-hbm3\\ncuda: 13.0\\n"')
    facts = runner.device_facts(exe)
    assert facts["slug"] == "nvidia-h100-80gb-hbm3" and facts["cuda"] == "13.0"


def test_sweep_spans_256_to_8192_with_odd_sizes():
    sides = [m for m, _, _ in gemm.SWEEP]
    assert min(sides) == 256 and max(sides) == 8192
    assert any(m % 2 for m, _, _ in gemm.SWEEP)


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


# ---- Part II: the conv steps, against fake binaries that behave like the harness ------------------

LAYER_TABLE = """name N C H W K R S pad stride
seed_3x3 128 64 56 56 128 3 3 1 1
r50_conv1 32 3 224 224 64 7 7 3 2
r50_c2_1x1_up 32 64 56 56 256 1 1 0 1
"""

# A stand-in for a chapter binary: answers --device-info, --help and --layer list, appends one CSV row
# per run (chapter {name}), and records its command line.
FAKE_STEP = PREAMBLE + r'''if "--help" in args:
    sys.exit(0)
opt = dict(zip(args[::2], args[1::2]))
if opt.get("--layer") == "list":
    sys.stdout.write({table!r})
    sys.exit(0)
if opt.get("--layer") in {refuse!r}:  # a problem the step does not compute: one line, exit 2
    sys.stderr.write("error: --layer/--shape: {name} computes 3x3 filters only (valid: R = S = 3)\n")
    sys.exit(2)
problem = opt.get("--layer") or "x".join(opt[f] for f in ("--m", "--n", "--k"))
problem = {{"r50_conv1": {wrong_problem!r} or problem}}.get(problem, problem)
header = ["chapter", "problem", "gflops", "ratio_to_baseline", "time_ms_median", "verified", "baseline",
          "alt_baseline", "alt_baseline_time_ms", "math", "op"]
if "--layer" not in opt:
    names = ("cuBLAS FP32 (no TF32)", "")
elif "{name}".startswith("20_"):  # the fused epilogue: other baselines, as the harness names them
    names = ("cuDNN fused conv+bias+ReLU (IMPLICIT_PRECOMP_GEMM, FMA)", "19_implicit_gemm_double_buffer + bias/ReLU kernel")
else:
    names = ("cuDNN fastest FMA (WINOGRAD_NONFUSED)", "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)")
path = opt["--csv"]
new = not os.path.exists(path)
with open(path, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(header)
    conv = "--layer" in opt
    op = ("conv_bias_relu" if "{name}".startswith("20_") else "conv") if conv else "gemm"
    w.writerow(["{name}", problem, "1000", "0.5", "2.0", "{verified}", names[0], names[1], "3.0" if conv else "", "fp32", op])
sys.exit({exit_code})
'''


def fake_step(tmp_path: Path, name: str, exit_code: int = 0, wrong_problem: str = "", refuse: tuple = ()) -> str:
    exe = tmp_path / name
    exe.write_text(FAKE_STEP.format(python=sys.executable, name=name, calls=str(tmp_path / "calls.txt"),
                                    table=LAYER_TABLE, exit_code=exit_code, wrong_problem=wrong_problem, refuse=refuse,
                                    verified="no" if exit_code == 1 else "yes"))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return str(exe)


def parts_manifest(tmp_path: Path, steps: list[tuple], drop_tags: dict | None = None) -> Path:
    """steps: (part, name, binary); the manifest lists them in this order. drop_tags: step name ->
    tags its line leaves out of its real declaration."""
    m = tmp_path / "chapters.tsv"
    m.write_text(MANIFEST_HEADER + "".join(manifest_line("chapter", part, name, binary, drop_tags=(drop_tags or {}).get(name, ()))
                                           for part, name, binary in steps))
    return m


def calls(tmp_path: Path) -> list[str]:
    return [c for c in recorded(tmp_path / "calls.txt") if "--device-info" not in c
            and "--layer list" not in c and not c.endswith(" --help")]


def conv_manifest(tmp_path: Path, **kwargs) -> Path:
    return parts_manifest(tmp_path, [
        ("gemm", "01_naive_gemm", fake_step(tmp_path, "01_naive_gemm")),
        ("conv", "13_direct_conv", fake_step(tmp_path, "13_direct_conv")),
        ("conv", "15_implicit_gemm_naive", fake_step(tmp_path, "15_implicit_gemm_naive")),
        ("conv", "17_implicit_gemm_warp_tiles", fake_step(tmp_path, "17_implicit_gemm_warp_tiles", **kwargs)),
    ], drop_tags={"13_direct_conv": ("all_layers",)})  # a step without the tag: the headline only


def test_conv_layer_table_is_read(tmp_path):
    layers = conv_plots.conv_layers(fake_step(tmp_path, "13_direct_conv"))
    assert [x["name"] for x in layers] == ["seed_3x3", "r50_conv1", "r50_c2_1x1_up"]
    assert layers[1] == {"name": "r50_conv1", "n": 32, "c": 3, "h": 224, "w": 224, "k": 64, "r": 7, "s": 7,
                         "pad": 3, "stride": 2}
    # 2*N*K*P*Q*C*R*S with P = Q = (224 + 6 - 7) / 2 + 1 = 112
    assert conv_plots.conv_flops(layers[1]) == 2.0 * 32 * 64 * 112 * 112 * 3 * 7 * 7


@pytest.mark.parametrize("table, message", [
    ("name N C H W K R S pad stride\nr50_conv1 32 3 224 224 64 7 7 3 2\n", "no headline layer seed_3x3"),
    ("name N C H W K R S pad stride\nseed_3x3 128 64 56 56 128 3 3 1\n", "cannot read the line"),
    ("name N C H W K R S pad stride\nseed_3x3 128 64 56 56 128 3 x 1 1\n", "cannot read the line"),
])
def test_conv_layer_table_errors(tmp_path, table, message):
    exe = fake_binary(tmp_path, f"printf '{table}'")
    with pytest.raises(SystemExit, match=message):
        conv_plots.conv_layers(exe)


def test_conv_part_runs_the_headline_everywhere_and_the_table_from_15_on(tmp_path, capsys):
    m = conv_manifest(tmp_path)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path / "data"), "--part", "conv"]) == 0
    csv_path = tmp_path / "data" / "fake-gpu.csv"
    assert calls(tmp_path) == [
        f"13_direct_conv --layer seed_3x3 --csv {csv_path}",
        f"15_implicit_gemm_naive --layer seed_3x3 --csv {csv_path}",
        f"15_implicit_gemm_naive --layer r50_conv1 --csv {csv_path} --iters 10 --warmup 2",
        f"15_implicit_gemm_naive --layer r50_c2_1x1_up --csv {csv_path} --iters 10 --warmup 2",
        f"17_implicit_gemm_warp_tiles --layer seed_3x3 --csv {csv_path}",
        f"17_implicit_gemm_warp_tiles --layer r50_conv1 --csv {csv_path} --iters 10 --warmup 2",
        f"17_implicit_gemm_warp_tiles --layer r50_c2_1x1_up --csv {csv_path} --iters 10 --warmup 2",
    ]
    out = capsys.readouterr().out
    assert "150.0% of precomp" in out and "50.0% of cuDNN fastest FMA (WINOGRAD_NONFUSED)" in out
    assert (tmp_path / "results-csv").read_text() == f"{csv_path}\n"


def test_each_library_is_timed_in_three_processes(tmp_path, capsys):
    """Where fewer than three processes timed a library on a problem (step 15 and 17 alone run the
    other layers), the last of them runs again, with the same flags; every process writes the run's id."""
    m = conv_manifest(tmp_path)
    assert bench.main(["--manifest", str(m), "--out-dir", str(tmp_path / "data"), "--part", "conv"]) == 0
    csv_path = tmp_path / "data" / "fake-gpu.csv"
    made = calls(tmp_path)
    assert made[:7] == [c.split(" --run ")[0] for c in made[:7]]  # the first pass as with --processes 1
    assert made[7:] == [f"17_implicit_gemm_warp_tiles --layer r50_conv1 --csv {csv_path} --iters 10 --warmup 2",
                        f"17_implicit_gemm_warp_tiles --layer r50_c2_1x1_up --csv {csv_path} --iters 10 --warmup 2"]
    ids = {re.search(r"--run (\S+)", c).group(1) for c in (tmp_path / "calls.txt").read_text().splitlines()
           if "--csv" in c}
    assert len(ids) == 1
    out = capsys.readouterr().out
    assert "process 3 of 3" in out and "bench: 2 repeated runs" in out
    with pytest.raises(SystemExit, match="--processes: 0 is out of range"):
        bench.main(["--manifest", str(m), "--out-dir", str(tmp_path / "data"), "--processes", "0"])


def test_all_layers_includes_the_slow_steps(tmp_path):
    m = conv_manifest(tmp_path)
    bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv", "--all-layers",
                "--steps", "13_direct_conv"])
    assert [c.split()[2] for c in calls(tmp_path)] == ["seed_3x3", "r50_conv1", "r50_c2_1x1_up"]


def test_headline_only_and_max_run_seconds(tmp_path, capsys):
    m = conv_manifest(tmp_path)
    bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv", "--headline-only"])
    assert [c.split()[2] for c in calls(tmp_path)] == ["seed_3x3"] * 3
    (tmp_path / "calls.txt").unlink()
    # The fake's headline takes 2 ms: r50_conv1 has 0.128 of its FLOPs (0.26 ms), r50_c2_1x1_up 0.056 (0.11 ms).
    bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv", "--steps", "17_implicit_gemm_warp_tiles",
                "--max-run-seconds", "0.0002"])
    assert [c.split()[2] for c in calls(tmp_path)] == ["seed_3x3", "r50_c2_1x1_up"]
    assert re.search(r"17_implicit_gemm_warp_tiles +r50_conv1 +skipped: one run would take", capsys.readouterr().out)


def test_all_parts_run_gemm_first_with_unchanged_commands(tmp_path):
    m = conv_manifest(tmp_path)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--headline-only"]) == 0
    assert calls(tmp_path) == [
        f"01_naive_gemm --m 4096 --n 4096 --k 4096 --csv {tmp_path / 'fake-gpu.csv'}",
        *[f"{name} --layer seed_3x3 --csv {tmp_path / 'fake-gpu.csv'}"
          for name in ("13_direct_conv", "15_implicit_gemm_naive", "17_implicit_gemm_warp_tiles")],
    ]


def test_gemm_part_runs_no_conv_step(tmp_path):
    m = conv_manifest(tmp_path)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "gemm"]) == 0
    made = calls(tmp_path)
    assert all(c.startswith("01_naive_gemm --m ") for c in made)
    assert len(made) == 1 + len(gemm.SWEEP)


def test_conv_row_for_another_layer_is_a_failure(tmp_path, capsys):
    m = conv_manifest(tmp_path, wrong_problem="seed_3x3")  # step 17 writes a seed_3x3 row for r50_conv1
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"17_implicit_gemm_warp_tiles +r50_conv1 +FAILED: exit 0, no result", out)
    assert "FAILURES" in out


def test_a_layer_the_step_refuses_is_skipped_not_failed(tmp_path, capsys):
    m = conv_manifest(tmp_path, refuse=("r50_conv1",))  # step 17 computes no 7x7 layer (as chapter 22)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"17_implicit_gemm_warp_tiles +r50_conv1 +skipped: 17_implicit_gemm_warp_tiles computes 3x3 "
                     r"filters only \(valid: R = S = 3\)", out)
    assert "FAILURES" not in out
    written = [r for f in tmp_path.glob("*.csv") for r in csv.DictReader(open(f))]
    assert any(r["chapter"] == "17_implicit_gemm_warp_tiles" and r["problem"] == "seed_3x3" for r in written)
    assert not any(r["chapter"] == "17_implicit_gemm_warp_tiles" and r["problem"] == "r50_conv1" for r in written)


def test_conv_verification_failure_is_reported(tmp_path, capsys):
    m = conv_manifest(tmp_path, exit_code=1)
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv", "--headline-only"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"FAILURES:\n.*17_implicit_gemm_warp_tiles +seed_3x3 +failed verification", out, re.S)
    assert "verified: no" in out


def test_no_steps_of_the_part(tmp_path):
    m = parts_manifest(tmp_path, [("gemm", "01_naive_gemm", "/bin/true")])
    with pytest.raises(SystemExit, match="no steps of part 'conv'"):
        bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv"])


def test_the_fused_epilogue_runs_every_layer_and_reports_its_own_baselines(tmp_path, capsys):
    """Chapter 20 runs like the steps from 15 on: the headline, then every layer of the table."""
    m = parts_manifest(tmp_path, [
        ("conv", "19_implicit_gemm_double_buffer", fake_step(tmp_path, "19_implicit_gemm_double_buffer")),
        ("conv", "20_fused_epilogue", fake_step(tmp_path, "20_fused_epilogue")),
    ])
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(tmp_path), "--part", "conv"]) == 0
    csv_path = tmp_path / "fake-gpu.csv"
    made = calls(tmp_path)
    assert made[3:] == [
        f"20_fused_epilogue --layer seed_3x3 --csv {csv_path}",
        f"20_fused_epilogue --layer r50_conv1 --csv {csv_path} --iters 10 --warmup 2",
        f"20_fused_epilogue --layer r50_c2_1x1_up --csv {csv_path} --iters 10 --warmup 2",
    ]
    assert [c.split()[2] for c in made[:3]] == ["seed_3x3", "r50_conv1", "r50_c2_1x1_up"]
    out = capsys.readouterr().out.splitlines()
    step19 = [line for line in out if line.lstrip().startswith("19_")]
    step20 = [line for line in out if line.lstrip().startswith("20_")]
    assert len(step19) == len(step20) == 3
    assert all("150.0% of precomp" in line and "50.0% of cuDNN fastest FMA" in line for line in step19)
    assert all("150.0% of 19_implicit_gemm_double_buffer + bias/ReLU kernel" in line
               and "50.0% of cuDNN fused conv+bias+ReLU (IMPLICIT_PRECOMP_GEMM, FMA)" in line
               and "precomp " not in line for line in step20)


def test_a_manifest_of_an_older_build_is_refused(tmp_path):
    m = tmp_path / "chapters.tsv"
    m.write_text("kind\tpart\tname\ttitle\tbinary\tsource\tmath\nchapter\tgemm\t01_naive_gemm\tnaive\t/bin/true\t/src\tfp32\n")
    with pytest.raises(SystemExit, match="no column.*op, tags.*configure again"):
        runner.read_manifest(m)


def test_bench_fills_older_rows_before_it_runs(tmp_path, capsys):
    """A results file from before the step columns: bench.py fills them from the manifest first."""
    import fill_steps
    from tut_plots import results
    data = tmp_path / "data"
    data.mkdir()
    old = data / "fake-gpu.csv"
    keep = list(results.HEADER).index("config") + 1
    with (Path(__file__).parent / "data" / "sample-parts.csv").open(newline="") as f:
        recs = [r[:keep] for r in csv.reader(f) if r]
    with old.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(recs)
    m = conv_manifest(tmp_path)
    with pytest.raises(results.CsvError, match="fill_steps.py --manifest"):
        results.load(old)
    before = old.read_text()
    # A step the manifest does not know: refused, the file left as it was.
    with pytest.raises(SystemExit, match=r"fake-gpu.csv:4: step '02_coalesced_gemm' is not in the step list"):
        fill_steps.main(["--manifest", str(m), str(old)])
    assert old.read_text() == before
    m.write_text(m.read_text() + "".join(manifest_line("chapter", "conv", n, "/bin/true") for n in (
        "14_im2col_gemm", "16_implicit_gemm_smem", "18_implicit_gemm_padding", "19_implicit_gemm_double_buffer",
        "20_fused_epilogue", "02_coalesced_gemm")) + manifest_line("baseline", "gemm", "cublas_sgemm", "/bin/true"))
    from test_gcn import fake_gcn  # a fake that appends rows of the current header, as the binaries do
    m.write_text(m.read_text() + manifest_line("chapter", "gcn", "22_skinny_gemm_naive",
                                               fake_gcn(tmp_path, "22_skinny_gemm_naive")))
    assert bench.main(["--processes", "1", "--manifest", str(m), "--out-dir", str(data), "--part", "gcn"]) == 0
    assert f"{old}: math, op and tags filled from the step list in {len(recs) - 1} rows" in capsys.readouterr().out
    rows = results.load(old)
    fused = [r for r in rows if r.chapter == "20_fused_epilogue"]
    assert fused and all(r.op == "conv_bias_relu" and r.has_tag("layer_chart") for r in fused)
    assert {r.math for r in rows[:-1]} == {"fp32"} and rows[-1].chapter == "22_skinny_gemm_naive"
