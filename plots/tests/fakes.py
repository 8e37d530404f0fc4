"""The start of every fake chapter binary the bench tests run: it records its command line in a
calls file and answers --device-info and --help as the harness does (format with python, name, calls)."""

PREAMBLE = r'''#!{python}
import csv, os, sys
args = sys.argv[1:]
with open({calls!r}, "a") as f:
    f.write("{name} " + " ".join(args) + "\n")
if "--device-info" in args:
    print("name: Fake GPU\nslug: fake-gpu\ncuda: 13.0")
    sys.exit(0)
if "--help" in args:
    print("usage: {name} [flags]")
'''

# What each real step is, read from its tut_add_chapter / tut_add_baseline line (the fake manifests
# declare the same), so that tests that name real chapters see their real declarations.
import re as _re
from pathlib import Path as _Path

_ROOT = _Path(__file__).resolve().parents[2]
_DEFAULTS = {"gemm": ("fp32", "gemm"), "conv": ("fp32", "conv"), "gcn": ("fp64", "")}


def _declared() -> dict:
    out = {}
    for f in (_ROOT / "chapters" / "CMakeLists.txt", _ROOT / "baselines" / "CMakeLists.txt"):
        for m in _re.finditer(r'^tut_add_\w+\((\S+) TITLE "[^"]*"(.*)\)$', f.read_text(), _re.M):
            words = m.group(2).split()
            keys = [i for i, w in enumerate(words) if w in ("PART", "MATH", "OP", "TAGS", "ARCH", "ALLOW_SPILLS")]
            kv = {words[i]: words[i + 1:(keys[j + 1] if j + 1 < len(keys) else len(words))] for j, i in enumerate(keys)}
            part = kv["PART"][0]
            math, op = _DEFAULTS[part]
            out[m.group(1)] = (part, (kv.get("MATH") or [math])[0], (kv.get("OP") or [op])[0], " ".join(kv.get("TAGS", [])))
    return out


def _with_fixture_names(declared: dict) -> dict:
    """The fixtures (plots/tests/data) name Part II and III's steps as they were numbered when the
    fixtures were written (17_implicit_gemm_warp_tiles for the cheap gather, 22-29 for Part III):
    each such name is declared as the real step with the same name after its number. A fixture name
    the step list lacks gets the declaration of the step after the number."""
    by_suffix = {name[3:]: decl for name, decl in declared.items()}
    out = dict(declared)
    for old in range(13, 30):
        for suffix, decl in by_suffix.items():
            out.setdefault(f"{old:02d}_{suffix}", decl)
    return out


DECLARED = _with_fixture_names(_declared())
MANIFEST_HEADER = "kind\tpart\tname\ttitle\tbinary\tsource\tmath\top\ttags\n"


def manifest_line(kind: str, part: str, name: str, binary: str, math: str | None = None, drop_tags=()) -> str:
    """One line of a fake <build>/chapters.tsv: the step's real declaration (DECLARED), or the part's
    defaults for a name that is no real step; `math` overrides its math, drop_tags removes tags."""
    _, m, op, tags = DECLARED.get(name, (part, *_DEFAULTS[part], ""))
    tags = " ".join(t for t in tags.split() if t not in drop_tags)
    return f"{kind}\t{part}\t{name}\tt\t{binary}\t/src\t{math or m}\t{op}\t{tags}\n"


def recorded(path) -> list[str]:
    """The command lines a fake recorded, without bench.py's `--run ID` (the run's id differs per run)."""
    return [_re.sub(r" --run \S+", "", c) for c in _Path(path).read_text().splitlines()]
