"""The plots' package, laid out as the C++ harness in common/ is: a core that knows no problem family,
and one module per family.

Core:
  results   the results CSV: its schema, reading and appending rows, the precision a row compares in
  fmt       every number format (one for milliseconds), a row's label
  markdown  the README blocks: markers, the opening sentence, image links, rewriting the files
  charts    matplotlib: the figure and its file, bar labels, plain log axes, the roofline's roofs
  baselines one summary of the library baselines over the processes that timed them
  runner    bench.py's manifest, device and one run of one step
Families, each with its problems, which steps do what, its tables, charts and README blocks
(outputs, for each precision it has outputs in) and its benchmark runs (bench):
  gemm      Part I, FP32 and TF32
  conv      Part II, FP32 and TF32
  gcn       Part III, FP64

plots/plot.py and plots/bench.py are the command lines over it.
"""
from . import conv, gcn, gemm

FAMILIES = {"gemm": gemm, "conv": conv, "gcn": gcn}  # part -> its module, in results.PARTS' order
