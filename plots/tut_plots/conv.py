"""Part II, convolution: the layers its steps run, its tables, charts and README blocks, in FP32 and
in TF32.

Every conv row carries two baselines, timed in the step's process; the tables and charts show each
at its best over the processes that timed it (results.references). A convolution step's (13-19):
baseline = the fastest of the FMA algorithms cuDNN's search returns (NCHW, where cuDNN's FMA path is
fastest), each timed by the harness (named in parentheses), alt_baseline = IMPLICIT_PRECOMP_GEMM,
the same method as the steps. The fused-epilogue step's (20, conv + bias + ReLU): baseline = cuDNN's
fused conv+bias+ReLU, alt_baseline = the unfused pipeline (step 20, then a separate bias/ReLU
kernel). A TF32 step's (21): baseline = cuDNN's fastest with TF32 allowed on channels-last (NHWC)
copies of the tensors, alt_baseline = the same in NCHW; the better of the two is the reference. A
build without cuDNN names "im2col + cuBLAS FP32 (...)" and "im2col + cuBLAS FP32 + bias/ReLU kernel
(...)". gflops counts the convolution's FLOPs in every kind. The layers' cuDNN baselines come from
the convolution steps' rows only (conv_baseline_rows).

Outputs (outputs): FP32: <slug>-conv-{speedup,layers,roofline}.png and README.md's results:conv
block; TF32: <slug>-conv-tf32-layers.png and results:conv-tf32 (per layer, with the geometric
mean); each chapter's table, one row per layer.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

from . import charts, fmt, results
from .baselines import Baselines, most_common, newest_first
from .markdown import Outputs, preamble
from .results import CsvError, Row, geomean, is_chapter
from .runner import Runner, has_tag, row_precision, vs_alt

HEADLINE = "seed_3x3"  # the headline layer
FP32, TF32 = "FP32", "TF32"
SECTIONS = {FP32: "conv", TF32: "conv-tf32"}  # the precisions with outputs of their own
PRECOMP_COLOUR, FASTEST_COLOUR = "#7f7f7f", "#3a3a3a"
# A convolution step's bar; the fused-epilogue step's, hatched: it does more work than the others.
FUSED_COLOUR, FUSED_HATCH = "#8172B3", "//"
EPILOGUE_NOTE = "(+ bias, ReLU)"


# ----------------------------------------------------------------------------------------------
# Which rows and steps are which

def is_fused_epilogue(r: Row) -> bool:
    """A convolution row whose step also applies bias and ReLU (OP conv_bias_relu), compared against
    fused and unfused conv + bias + ReLU."""
    return r.part == "conv" and r.op == "conv_bias_relu"


def conv_baseline_rows(rows) -> list[Row]:
    """The plain convolution steps' rows (OP conv), whose baselines are cuDNN's fastest algorithm and its
    IMPLICIT_PRECOMP_GEMM (or im2col + cuBLAS); never a fused-epilogue row (conv + bias + ReLU)."""
    return [r for r in rows if r.op == "conv"]


def extended_step(r: Row, rows) -> str | None:
    """The step a fused-epilogue row's step extends (its unfused pipeline runs that kernel): the nearest
    plain convolution step (OP conv, same part and math) before it among `rows`, or None."""
    plain = sorted({x.chapter for x in rows if x.is_chapter and x.part == r.part and x.math == r.math
                    and x.op == "conv" and x.chapter < r.chapter})
    return plain[-1] if plain else None


def fused_steps(latest: dict, steps: list[str]) -> set[str]:
    """Those of steps whose rows are the fused epilogue's (conv + bias + ReLU, not ranked with the rest)."""
    return {s for s in steps if any(is_fused_epilogue(r) for (c, _), r in latest.items() if c == s)}


def layer_steps(latest: dict, prec: str = FP32) -> list[str]:
    """The steps the per-layer chart and table show: FP32, the chapters tagged layer_chart (the slow
    first steps would flatten the chart); TF32, every chapter (no slow early step to leave out)."""
    order = results.step_order(latest.values())
    charted = {r.chapter for r in latest.values() if r.has_tag("layer_chart")}
    return [c for c in order if is_chapter(c) and (prec != FP32 or c in charted)]


def first_number(steps: list[str]) -> str:
    """'17' for ['18_implicit_gemm_cheap_gather', ...]: the first charted step's number, for titles."""
    return steps[0][:2] if steps else "–"


def runs_every_layer(step: dict) -> bool:
    """Whether bench.py runs a manifest step on every layer (tag all_layers; else the headline only)."""
    return has_tag(step, "all_layers")


# ----------------------------------------------------------------------------------------------

def conv_label(r: Row) -> str:
    """fmt.label(r), and for the fused-epilogue step a note that it does more than the convolution."""
    return f"{fmt.label(r)} {EPILOGUE_NOTE}" if is_fused_epilogue(r) else fmt.label(r)


def fused_short(r: Row) -> str:
    """A fused-epilogue row's baseline, short: 'cuDNN fused' (else its name without the parenthesis)."""
    return "cuDNN fused" if r.baseline.startswith("cuDNN fused") else results.baseline_family(r.baseline)[0]


def unfused_short(r: Row, rows) -> str:
    """A fused-epilogue row's unfused pipeline, short: '19 + separate kernel' (19: the step it extends,
    extended_step; else the pipeline's own name)."""
    ch = extended_step(r, rows)
    return f"{ch[:2]} + separate kernel" if ch else r.alt_baseline


def library(prec: str) -> str:
    return "cuDNN" if prec == FP32 else f"cuDNN {prec}"


def layer_baselines(rows: list[Row]) -> Baselines:
    """One layer's cuDNN baselines over the processes that timed them: main the fastest algorithm, alt
    IMPLICIT_PRECOMP_GEMM; fused-epilogue rows left out (a layer only they ran: main.has is False)."""
    base_rows = conv_baseline_rows(rows)
    return Baselines(base_rows, row=(newest_first(base_rows) or newest_first(rows))[0])


def conv_baselines(latest: dict) -> dict[str, Baselines]:
    """Layer -> its baselines, in the layers' order."""
    rows = list(latest.values())
    return {layer: layer_baselines([r for r in rows if r.problem == layer]) for layer in results.problem_order(rows)}


def headline_rows(latest: dict) -> list[Row]:
    rows = [r for (_, p), r in latest.items() if p == HEADLINE]
    order = results.step_order(rows)
    return sorted(rows, key=lambda r: order.index(r.chapter))


# ----------------------------------------------------------------------------------------------
# Tables

def headline_table(rows: list[Row], base: Baselines) -> str:
    """At the headline layer: every step, then the two cuDNN baselines. The fused-epilogue step's two
    % cells compare it with its own baselines, and say which."""
    lines = ["| step | time (ms), median [min, max] | TFLOP/s | % of cuDNN precomp | % of cuDNN fastest "
             f"| × previous step | × step {rows[0].chapter[:2]} | verified |",
             "|---|---|---:|---:|---:|---:|---:|:-:|"]
    first = rows[0]
    prev = None
    for r in rows:
        vs_prev = fmt.num(prev.time_ms_median / r.time_ms_median) if prev else "–"
        prev = r
        if is_fused_epilogue(r):
            vs_alt = f"{fmt.pct(r.alt_ratio)} of {unfused_short(r, rows)}" if r.alt_baseline else "–"
            vs_base = f"{fmt.pct(r.ratio_to_baseline)} of {fused_short(r)}"
        else:
            vs_alt, vs_base = fmt.pct(r.alt_ratio), fmt.pct(r.ratio_to_baseline)
        lines.append(f"| {conv_label(r)} | {fmt.timing(r)} | {r.tflops:.2f} | {vs_alt} | {vs_base} | {vs_prev} "
                     f"| {first.time_ms_median / r.time_ms_median:.1f} | {r.verified} |")
    precomp, fastest = base.alt, base.main
    if not fastest.has:
        return "\n".join(lines)
    if precomp.has:
        lines.append(f"| {precomp.name} | {fmt.ms(precomp.ms)} | {precomp.tflops:.2f} | 100.0% "
                     f"| {fmt.pct(fastest.ms / precomp.ms)} | – | {first.time_ms_median / precomp.ms:.1f} | – |")
    lines.append(f"| {fastest.label} | {fmt.ms(fastest.ms)} | {fastest.tflops:.2f} "
                 f"| {fmt.pct(precomp.ms / fastest.ms) if precomp.has else '–'} | 100.0% | – "
                 f"| {first.time_ms_median / fastest.ms:.1f} | – |")
    return "\n".join(lines)


def layer_table(latest: dict, bases: dict[str, Baselines], prec: str) -> str:
    """Layer × step, TFLOP/s, with both cuDNN baselines at their best over the processes. FP32: the
    best convolution step's share of the fastest (the fused-epilogue step is shown, its TFLOP/s the
    convolution's, but not ranked) and the fastest's spread. TF32: cuDNN in NCHW and in NHWC, each
    step's % of NCHW and of the better layout, whether the layer's results were all verified, and the
    geometric means last."""
    tf32 = prec == TF32
    steps = layer_steps(latest, prec)
    fused = fused_steps(latest, steps)
    lib = library(prec)
    head = "| layer | GEMM M×N×K | " + " | ".join(f"step {s[:2]}" + (f" {EPILOGUE_NOTE}" if s in fused else "")
                                                 for s in steps)
    if tf32:
        lines = [head + f" | {lib} NCHW (algorithm) | {lib} NHWC (algorithm) | "
                 + " | ".join(f"{s[:2]}: % of NCHW | {s[:2]}: % of the better layout" for s in steps) + " | verified |",
                 "|---|---|" + "---:|" * len(steps) + "---|---|" + "---:|---:|" * len(steps) + ":-:|"]
    else:
        lines = [head + f" | {lib} precomp | {lib} fastest (algorithm) | cuDNN fastest: processes, medians (ms) "
                 "| best step, % of cuDNN fastest |", "|---|---|" + "---:|" * len(steps) + "---:|---|---|---:|"]
    for layer, base in bases.items():
        mine = [latest.get((s, layer)) for s in steps]
        line = f"| {layer} | {fmt.dims(base.row)} | " + " | ".join(fmt.num(r.tflops) if r else "–" for r in mine)
        if tf32:
            nchw, nhwc, ref = base.alt, base.main, base.better
            shares = [f"{fmt.pct(nchw.ms / r.time_ms_median)} | {fmt.pct(ref.ms / r.time_ms_median)}" if r else "– | –"
                      for r in mine]
            bad = [s[:2] for s, r in zip(steps, mine) if r and r.verified != "yes"]
            lines.append(line + f" | {algo_cell(nchw)} | {algo_cell(nhwc)} | " + " | ".join(shares)
                         + f" | {'no: ' + ', '.join(bad) if bad else 'yes'} |")
        else:
            ranked = [r for r in mine if r and not is_fused_epilogue(r)]
            best = min(ranked, key=lambda r: r.time_ms_median) if ranked else None
            spread = f"{base.main.processes}: {fmt.ms(base.main.lo)}–{fmt.ms(base.main.hi)}" if base.main.has else "–"
            lines.append(line + f" | {fmt.num(base.alt.tflops)} | {algo_cell(base.main)} | {spread} | "
                         + (f"{best.chapter[:2]}: {fmt.pct(best.ratio_to_baseline)}" if best else "–") + " |")
    if tf32:
        means = []
        for s in steps:
            mine = [(r, bases[r.problem]) for (c, _), r in latest.items() if c == s and r.problem in bases]
            nchw = [b.alt.ms / r.time_ms_median for r, b in mine if b.alt.has]
            means.append((f"**{fmt.pct(geomean(nchw))}** | " if nchw else "– | ")
                         + f"**{fmt.pct(geomean([b.better.ms / r.time_ms_median for r, b in mine]))}**")
        lines.append("| geometric mean | | " + " | ".join("" for _ in steps) + " | | | " + " | ".join(means) + " | |")
    return "\n".join(lines)


def summary(latest: dict, bases: dict[str, Baselines], prec: str) -> list[str] | None:
    """README's summary row: per layer, TF32: the last step against the better cuDNN layout; FP32: the
    fastest plain convolution step (the last applies only where its method does: Winograd, 3x3
    stride 1) against cuDNN's fastest FMA algorithm."""
    every = layer_steps(latest, prec)
    steps = [c for c in every if c not in fused_steps(latest, every)]
    if not steps:
        return None
    last, pairs = steps[-1], {}
    for layer, b in bases.items():
        mine = [latest[(c, layer)] for c in (steps if prec == FP32 else [last]) if (c, layer) in latest]
        if mine and b.main.has:
            pairs[layer] = ((b.better if prec == TF32 else b.main).ms, min(mine, key=lambda r: r.time_ms_median))
    step = fmt.label(next(r for (c, _), r in latest.items() if c == last))
    if prec == FP32 and sum(1 for c, _ in latest if c == last) < len(bases):
        step += "; on the other layers the fastest earlier step"
    lib = "cuDNN TF32 allowed, the better of NCHW and NHWC" if prec == TF32 else "cuDNN's fastest FMA algorithm (NCHW)"
    ratios = {layer: ms / r.time_ms_median for layer, (ms, r) in pairs.items()}
    if HEADLINE not in ratios:
        return [step, lib, "–", "–"]
    low = min(ratios, key=ratios.get)
    return [step, lib, f"{fmt.pct(ratios[HEADLINE])} at {HEADLINE} (step {pairs[HEADLINE][1].chapter[:2]})",
            f"{fmt.pct(geomean(list(ratios.values())))} in geometric mean over {len(ratios)} layers "
            f"(lowest {fmt.pct(ratios[low])}, {low})"]


def algo_cell(b) -> str:
    """A library's TFLOP/s at its best, with its algorithm: '70.46 (WINOGRAD_NONFUSED)'."""
    return f"{b.tflops:.2f} ({b.algo or b.family})" if b.has else "–"


def chapter_table(rows: list[Row], order: list[str], prec: str = FP32) -> str:
    """One convolution chapter's rows, one per layer, each against the libraries at their best over
    the processes. A TF32 chapter's (prec "TF32") against cuDNN's TF32 baselines in NCHW and NHWC,
    named above the table."""
    if any(is_fused_epilogue(r) for r in rows):
        return fused_chapter_table(rows, order)
    lib = library(prec)
    alt, main = ("NCHW", "NHWC") if prec == TF32 else ("precomp", "fastest")
    lines = [f"| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s | {lib} {alt} (ms) | % of {alt} "
             f"| {lib} {main} (ms, algorithm) | % of {main} | verified |",
             "|---|---|---|---:|---:|---:|---|---:|:-:|"]
    for r in sorted(rows, key=lambda r: order.index(r.problem)):
        algo = results.baseline_family(r.baseline)[1] or r.baseline
        lines.append(f"| {r.problem} | {fmt.dims(r)} | {fmt.timing(r)} | {r.tflops:.2f} | {fmt.ms(r.alt_baseline_time_ms)} "
                     f"| {fmt.pct(r.alt_ratio)} | {fmt.ms(r.baseline_time_ms)} ({algo}) | {fmt.pct(r.ratio_to_baseline)} "
                     f"| {r.verified} |")
    if prec == FP32:
        return "\n".join(lines)
    base = Baselines(rows)
    names = (f"\"NCHW\" is {base.alt.family}; " if base.alt.name else "") + \
        f"\"NHWC\" is {base.main.family}, on channels-last copies of the same tensors (the algorithm per layer)"
    return (f"{prec} on the tensor cores, against cuDNN with {prec} allowed: {names}; each the best median over "
            f"{base.processes} or more processes. The better of the two layouts is the reference.\n\n" + "\n".join(lines))


def fused_chapter_table(rows: list[Row], order: list[str]) -> str:
    """The fused-epilogue chapter's rows, one per layer, against its two baselines at their best over
    the processes: the library's fused conv + bias + ReLU and the unfused pipeline."""
    base = Baselines(rows)
    short = fused_short(newest_first(rows)[0])
    lines = [f"| layer | GEMM M×N×K | time (ms), median [min, max] | TFLOP/s (conv FLOPs) | {short} (ms) "
             f"| % of {short} | unfused (ms) | % of unfused | verified |",
             "|---|---|---|---:|---:|---:|---:|---:|:-:|"]
    for r in sorted(rows, key=lambda r: order.index(r.problem)):
        lines.append(f"| {r.problem} | {fmt.dims(r)} | {fmt.timing(r)} | {r.tflops:.2f} | {fmt.ms(r.baseline_time_ms)} "
                     f"| {fmt.pct(r.ratio_to_baseline)} | {fmt.ms(r.alt_baseline_time_ms)} | {fmt.pct(r.alt_ratio)} "
                     f"| {r.verified} |")
    names = f"\"{short}\" is {base.main.name}" + (f"; \"unfused\" is {base.alt.name}" if base.alt.name else "")
    return (f"y = max(conv + bias[k], 0). {names}; each the best median over the {base.processes} processes "
            f"that timed it. "
            f"TFLOP/s counts the convolution's FLOPs only.\n\n" + "\n".join(lines))


def fused_table(latest: dict) -> str:
    """Per layer, the fused-epilogue step against the convolution step it extends (its own row, the
    convolution alone), the unfused pipeline and the library's fused conv + bias + ReLU. Empty when
    no fused-epilogue step was measured."""
    fused = [r for r in latest.values() if is_fused_epilogue(r)]
    order = results.problem_order(latest.values())
    tables = []
    for name in results.step_order(fused):
        mine = sorted((r for r in fused if r.chapter == name), key=lambda r: order.index(r.problem))
        prev = extended_step(mine[0], latest.values()) or ""
        nn, pp = name[:2], prev[:2] or "previous"
        short = fused_short(mine[0])
        lines = [f"| layer | step {nn} (ms) | step {pp}, conv only (ms) | {pp} + separate kernel (ms) | {short} (ms) "
                 f"| {nn} over {pp} | {short} / {nn} |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        for r in mine:
            plain = latest.get((prev, r.problem))
            over = f"{100 * (r.time_ms_median / plain.time_ms_median - 1):+.1f}%" if plain else "–"
            lines.append(f"| {r.problem} | {fmt.ms(r.time_ms_median)} | {fmt.ms(plain.time_ms_median) if plain else '–'} "
                         f"| {fmt.ms(r.alt_baseline_time_ms)} | {fmt.ms(r.baseline_time_ms)} | {over} "
                         f"| {r.ratio_to_baseline:.2f}× |")
        tables.append("\n".join(lines))
    return "\n\n".join(tables)


# ----------------------------------------------------------------------------------------------
# Charts

def speedup_chart(rows: list[Row], base: Baselines, path: Path) -> None:
    """Bars: TFLOP/s of each step at the headline layer, then the two cuDNN baselines; labels give
    × the first step and % of both baselines (each at its best over the processes; the fused-epilogue
    step against its own: the library's fused conv + bias + ReLU and the unfused pipeline)."""
    first = rows[0]
    names = [conv_label(r) for r in rows]
    values = [r.tflops for r in rows]
    colours = [FUSED_COLOUR if is_fused_epilogue(r) else charts.STEP_COLOUR for r in rows]

    def note(r: Row) -> str:
        speedup = f"{first.time_ms_median / r.time_ms_median:.1f}× step {first.chapter[:2]}"
        if is_fused_epilogue(r):
            alt = f"\n{fmt.pct(r.alt_ratio)} of\n{unfused_short(r, rows)}" if r.alt_baseline else ""  # two lines: narrow
            return f"{speedup}\n{fmt.pct(r.ratio_to_baseline)} of {fused_short(r)}{alt}"
        return f"{speedup}\n{fmt.pct(r.alt_ratio)} of precomp\n{fmt.pct(r.ratio_to_baseline)} of fastest"

    notes = [note(r) for r in rows]
    for b, name, colour in ((base.alt, base.alt.name, PRECOMP_COLOUR), (base.main, base.main.label, FASTEST_COLOUR)):
        if b.has:
            names.append(name)
            values.append(b.tflops)
            colours.append(colour)
            notes.append(f"{first.time_ms_median / b.ms:.1f}× step {first.chapter[:2]}")
    fig, ax = charts.figure((max(6.0, 1.0 + 1.2 * len(names)), 5.0))
    bars = ax.bar(names, values, color=colours)
    for b, r in zip(bars, rows):
        if is_fused_epilogue(r):
            b.set_hatch(FUSED_HATCH)
    libs = [b for b in (base.alt, base.main) if b.has]
    charts.spread(ax, range(len(rows), len(names)), libs)
    charts.label_bars(ax, bars, notes, 7)
    ax.set_ylabel("TFLOP/s (median; direct-convolution FLOPs)")
    ax.set_ylim(0, max(values) * 1.3)
    ax.set_title(f"Convolution {HEADLINE} (implicit GEMM {fmt.dims(first)}), FP32 FMA: speedup over step "
                 f"{first.chapter[:2]} and % of cuDNN\n(cuDNN: its best median over {base.processes} processes; "
                 f"{charts.SPREAD_NOTE})\n{charts.suffix(first)}", fontsize=9)
    charts.tilt(ax)
    charts.save(fig, path)


def layers_chart(latest: dict, bases: dict[str, Baselines], path: Path, prec: str) -> None:
    """Grouped bars: TFLOP/s per layer of the steps (layer_steps) and of both cuDNN baselines. In TF32
    each step's legend gives its geometric mean over the layers against the fastest."""
    steps = layer_steps(latest, prec)
    layers = list(bases)

    def step_label(s: str) -> str:
        mine = [r for (c, _), r in latest.items() if c == s]
        if prec == FP32:
            return conv_label(mine[0])
        ratios = [bases[r.problem].better.ms / r.time_ms_median for r in mine if r.problem in bases]
        return (f"{fmt.label(mine[0])}: geometric mean over its layers {fmt.pct(geomean(ratios))} of cuDNN in the "
                f"better layout (NCHW or NHWC), at its best over the processes")

    # one series per step: (legend label, its row for each layer or None where it did not run)
    series = [(step_label(s), [latest.get((s, l)) for l in layers]) for s in steps]
    width = 0.8 / (len(series) + 2)
    xs = list(range(len(layers)))

    def offsets(i: int) -> list[float]:  # bar i of each group, the group centred on its layer
        return [x + (i - (len(series) + 1) / 2) * width for x in xs]

    fig, ax = charts.figure((max(10.0, 1.3 * len(layers) + 1), 6.5))
    for i, (name, rows) in enumerate(series):
        fused = any(r and is_fused_epilogue(r) for r in rows)
        ax.bar(offsets(i), [r.tflops if r else 0.0 for r in rows], width, label=name,
               **({"color": FUSED_COLOUR, "hatch": FUSED_HATCH} if fused else {}))
    precomp = [bases[l].alt.tflops for l in layers]
    if any(v == v for v in precomp):
        name = most_common([b.alt.name for b in bases.values() if b.alt.name])
        ax.bar(offsets(len(series)), [v if v == v else 0.0 for v in precomp], width, color=PRECOMP_COLOUR, label=name)
    fastest = [bases[l].main.tflops for l in layers]
    offs = offsets(len(series) + 1)
    if any(v == v for v in fastest):
        family = most_common([b.main.family for b in bases.values() if b.main.has])
        ax.bar(offs, [v if v == v else 0.0 for v in fastest], width, color=FASTEST_COLOUR,
               label=f"{family} (algorithm above its bar)")
    charts.spread(ax, offsets(len(series)), [bases[l].alt for l in layers])
    charts.spread(ax, offs, [bases[l].main for l in layers])
    top = max([v for v in fastest + precomp if v == v] + [r.tflops for _, rows in series for r in rows if r])
    for x, v, l in zip(offs, fastest, layers):
        if v == v:
            ax.annotate(bases[l].main.algo, (x, v + 0.01 * top), ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{l}\n{fmt.dims(bases[l].row)}" for l in layers], fontsize=7)
    ax.set_ylim(0, top * 1.5)  # room for the algorithm names
    ax.set_ylabel("TFLOP/s (median; direct-convolution FLOPs)")
    ax.set_xlabel("layer, and its implicit GEMM M×N×K = K × N·P·Q × C·R·S", fontsize=8)
    title = (f"Convolution per layer, FP32 FMA: steps {first_number(steps)} on and both cuDNN baselines, NCHW\n"
             f"(each at its best median over the processes; {charts.SPREAD_NOTE})" if prec == FP32 else
             "Convolution per layer in TF32 on the tensor cores: the TF32 steps and cuDNN with TF32 allowed\n"
             f"in NCHW and NHWC (each at its best median over the processes; {charts.SPREAD_NOTE})")
    ax.set_title(f"{title}\n{charts.suffix(bases[layers[0]].row)}", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3 if prec == FP32 else 1,
              frameon=False)
    charts.save(fig, path)


def roofline_chart(latest: dict, bases: dict[str, Baselines], path: Path) -> None:
    """Each step at each measured layer, and both cuDNN baselines, at the layer's minimum-traffic intensity."""
    rows = list(latest.values())
    fig, ax = charts.figure((8, 5))
    lo, hi = charts.roofs(ax, rows)
    markers = "os^vD<>ph*"
    for i, name in enumerate(results.step_order(rows)):
        mine = sorted((r for r in rows if r.chapter == name), key=lambda r: r.intensity)
        ax.plot([r.intensity for r in mine], [r.tflops for r in mine], ls="none", marker=markers[i % len(markers)],
                ms=5, label=conv_label(mine[0]))
    base = [b for b in bases.values() if b.main.has]
    with_precomp = [b for b in base if b.alt.has]
    if with_precomp:
        ax.plot([b.row.intensity for b in with_precomp], [b.alt.tflops for b in with_precomp], ls="none",
                marker="_", ms=12, mew=2, color=PRECOMP_COLOUR, label=with_precomp[0].alt.name)
    if base:
        ax.plot([b.row.intensity for b in base], [b.main.tflops for b in base], ls="none", marker="_", ms=12, mew=2,
                color=FASTEST_COLOUR, label=most_common([b.main.family for b in base]))
    charts.finish_roofline(ax, lo, hi, f"Convolution roofline, FP32 FMA: every step at every measured layer\n"
                                       f"{charts.suffix(rows[0])}")
    # The conv points may span less than a decade, where log axes label their minor ticks: plainly too.
    charts.minor_labels(ax.yaxis, (1, 0.5))
    charts.save(fig, path)


# ----------------------------------------------------------------------------------------------
# README blocks and the outputs of one precision

def readme_block(latest: dict, bases: dict[str, Baselines], prec: str, images: list[Path], out: Outputs) -> str:
    if prec == TF32:
        n = min(b.processes for b in bases.values() if b.main.has) if any(b.main.has for b in bases.values()) else 0
        return "\n".join([
            preamble(newest_first(latest.values())[0], latest.values(),
                     f"the convolution layers in **TF32** on the tensor cores (FP32 tensors, the implicit GEMM's "
                     f"factors rounded to TF32, sums in FP32), each step in the layout it declares: NCHW input, KCRS "
                     f"filter, NKPQ output, or channels last where its title says NHWC. The library is cuDNN with TF32 "
                     f"allowed (its default math), the fastest algorithm of its search in two layouts: NCHW, and NHWC "
                     f"(channels last: x NHWC, w KRSC, y NPQK), the layout its tensor-core kernels prefer, on copies of "
                     f"the same tensors made once outside the timed runs (a layer's NHWC result is checked against the FP32 reference "
                     f"too). Each is the best median over the {n} or more processes that timed it (a library's time "
                     f"moves between processes; docs/measuring.md); the better of the two layouts is the reference. "
                     f"TFLOP/s counts the direct convolution's 2·N·K·P·Q·C·R·S FLOPs. These rows are in no FP32 table "
                     f"or chart above. {out.generated()}"),
            "",
            layer_table(latest, bases, TF32),
            "",
            *out.image_links(images),
        ])
    head = headline_rows(latest)
    fused = fused_table(latest)
    fused_rows = [r for r in latest.values() if is_fused_epilogue(r)]
    fused_block = [
        "**Fused epilogue (bias + ReLU).** y = max(conv + bias[k], 0) in the store of step "
        f"{', '.join(sorted({r.chapter[:2] for r in fused_rows}))}, against the step it extends run as a plain "
        f"convolution (that step's own row), the unfused pipeline (the convolution, then a separate bias/ReLU kernel) and "
        f"{most_common([r.baseline for r in fused_rows])} (its best median over the {Baselines(fused_rows).processes} "
        "or more processes that timed it); the last columns: "
        "the time the epilogue adds, and the library's fused time over the step's:",
        "",
        fused,
        "",
    ] if fused else []
    return "\n".join([
        preamble(head[0], latest.values(),
                 f"convolution layer `{HEADLINE}` (implicit GEMM {fmt.dims(head[0])}), FP32, NCHW input, KCRS filter, "
                 f"NKPQ output. Each time is the median of event-timed runs with L2 flushed before each run. Both cuDNN "
                 f"baselines use FMA math (no tensor cores) on NCHW tensors (cuDNN's FMA path is fastest there: "
                 f"Winograd and FFT exist only in NCHW): IMPLICIT_PRECOMP_GEMM (\"precomp\", the same method as the "
                 f"steps) and the fastest of the algorithms cuDNN's search returns for the layer, each timed the same "
                 f"way (\"fastest\", named in parentheses). Every step's process times them too, and cuDNN's time "
                 f"moves between processes far more than a step's (its choice of algorithm too): each step is "
                 f"compared with the library's best median over the {bases[HEADLINE].processes} processes that timed "
                 f"it on the layer, named as that process named it (docs/measuring.md). TFLOP/s counts the direct "
                 f"convolution's 2·N·K·P·Q·C·R·S FLOPs for every algorithm. The fused-epilogue step "
                 f"{EPILOGUE_NOTE} also adds a bias and applies ReLU; it is compared with cuDNN's fused conv+bias+ReLU "
                 f"and with the unfused pipeline instead, and its TFLOP/s counts the convolution's FLOPs only. "
                 f"{out.generated()}"),
        "",
        headline_table(head, bases[HEADLINE]),
        "",
        f"Per layer, TFLOP/s (steps {first_number(layer_steps(latest, FP32))} on; cuDNN at its best over the processes, "
        f"their number and the range of their medians beside it; the last column: the best convolution step's time "
        f"against cuDNN fastest):",
        "",
        layer_table(latest, bases, FP32),
        "",
        *fused_block,
        *out.image_links(images),
    ])


def outputs(rows: list[Row], prec: str, out: Outputs) -> list[Path]:
    """The charts and tables of the convolution rows in one precision (FP32 or TF32); their README
    block and their chapters' blocks go to out. Returns the charts written."""
    latest = results.latest(rows)
    head = headline_rows(latest)
    if prec == FP32 and not head:
        raise CsvError(f"{out.csv_name}: no convolution rows at the headline layer {HEADLINE}")
    bases = conv_baselines(latest)
    if prec == FP32:
        images = out.pngs(SECTIONS[prec], "speedup", "layers", "roofline")
        speedup_chart(head, bases[HEADLINE], images[0])
        layers_chart(latest, bases, images[1], prec)
        roofline_chart(latest, bases, images[2])
        print(headline_table(head, bases[HEADLINE]))
        print()
    else:
        images = out.pngs(SECTIONS[prec], "layers")
        layers_chart(latest, bases, images[0], prec)
        print("TF32 (tensor cores):")
    print(layer_table(latest, bases, prec))
    if prec == FP32 and fused_table(latest):
        print()
        print(fused_table(latest))
    if out.readme:
        out.block(SECTIONS[prec], readme_block(latest, bases, prec, images, out))
        if row := summary(latest, bases, prec):
            out.end(SECTIONS[prec], *row)
    order = results.problem_order(latest.values())
    for name in results.step_order(latest.values()) if prec == FP32 else layer_steps(latest, prec):
        mine = [r for r in latest.values() if r.chapter == name]
        out.chapter(mine, chapter_table(mine, order, prec))
    return images


# ----------------------------------------------------------------------------------------------
# bench.py: the headline layer, then every other layer of the binary's table (runs_every_layer)

def conv_layers(binary: str) -> list[dict]:
    """The layer table a conv binary prints with `--layer list`: a header line, then one line per
    layer, `name N C H W K R S pad stride`, whitespace-separated."""
    p = subprocess.run([binary, "--layer", "list"], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"error: {binary} --layer list failed ({p.returncode}): {p.stderr.strip()}")
    lines = [line for line in p.stdout.splitlines() if line.strip()]
    keys = ("n", "c", "h", "w", "k", "r", "s", "pad", "stride")
    layers = []
    for line in lines[1:]:
        tok = line.split()
        try:
            if len(tok) < 1 + len(keys):
                raise ValueError(line)
            layers.append({"name": tok[0], **{key: int(v) for key, v in zip(keys, tok[1:])}})
        except ValueError:
            raise SystemExit(f"error: {binary} --layer list: cannot read the line {line!r} "
                             f"(expected: name {' '.join(k.upper() for k in keys)})") from None
    if not any(layer["name"] == HEADLINE for layer in layers):
        raise SystemExit(f"error: {binary} --layer list has no headline layer {HEADLINE}")
    return layers


def conv_flops(layer: dict) -> float:
    """2*N*K*P*Q*C*R*S: what a layer costs, to predict its run time from the headline's."""
    p = (layer["h"] + 2 * layer["pad"] - layer["r"]) // layer["stride"] + 1
    q = (layer["w"] + 2 * layer["pad"] - layer["s"]) // layer["stride"] + 1
    return 2.0 * layer["n"] * layer["k"] * p * q * layer["c"] * layer["r"] * layer["s"]


def run(runner: Runner, step: dict, layer: str, extra: list[str]) -> dict | None:
    tag = f"{step['name']:<30} {layer:<16}"
    row, secs = runner.run(step, layer, tag, ["--layer", layer], extra, refusal="error: --layer/--shape: ")
    if row is None:
        return None
    alt = vs_alt(row)
    alt_name = row.get("alt_baseline") or "precomp"
    if "IMPLICIT_PRECOMP_GEMM" in alt_name and row_precision(row) == TF32:
        alt_name = "TF32 precomp"  # a tensor-core step's: cuDNN's precomp, TF32 allowed
    elif alt_name.startswith("cuDNN IMPLICIT_PRECOMP_GEMM"):
        alt_name = "precomp"  # the plain steps' second baseline; chapter 21's is the unfused pipeline
    of_alt = f"{100 * alt:6.1f}% of {alt_name}  " if alt is not None else ""
    print(f"  {tag} {float(row['gflops']) / 1e3:7.2f} TFLOP/s  {of_alt}{100 * float(row['ratio_to_baseline']):6.1f}% "
          f"of {row['baseline']}  median {fmt.ms(float(row['time_ms_median']))} ms  verified: {row['verified']}  "
          f"({secs:.0f} s)")
    return row


def bench(runner: Runner, step: dict) -> None:
    if "layers" not in runner.shared:  # the layer table, read from the first conv binary
        runner.shared["layers"] = conv_layers(step["binary"])
    layers = runner.shared["layers"]
    head = run(runner, step, HEADLINE, [])
    if runner.args.headline_only or head is None:
        return
    if not runs_every_layer(step) and not runner.args.all_layers:
        return
    head_ms = float(head["time_ms_median"])
    head_flops = next(conv_flops(lay) for lay in layers if lay["name"] == HEADLINE)
    for layer in layers:
        if layer["name"] == HEADLINE:
            continue
        predicted_s = head_ms * 1e-3 * conv_flops(layer) / head_flops
        if not runner.too_long(f"{step['name']:<30} {layer['name']:<16}", predicted_s):
            run(runner, step, layer["name"], runner.sweep_flags())
