"""Renaming or renumbering chapters changes nothing in the tables and charts but the names: no code
in plots/ decides what a step is from its number or its name (docs/architecture.md). Each fixture
is plotted as it is and again with its chapters renamed (same numbers, other folder names: every
table and chart is the same, byte for byte, once the new names are mapped back) and renumbered (the
renumbering of Part II's plan: a step inserted after 17, 21 moved to 23, Part III moved by three:
every table is the same once the numbers are mapped back)."""
from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

import plot
from markers import CHAPTER_BEGIN, CHAPTER_END
from tut_plots.markdown import markers

DATA = Path(__file__).parent / "data"
FIXTURES = ("sample-gcn.csv", "sample-tf32.csv", "sample-suite.csv")
SECTIONS = ("gemm", "gemm-tf32", "conv", "conv-tf32", "gcn")


def renumbered(n: int) -> int:
    """17 stays; 18-20 move up by one, 21 to 23, Part III (22-29) up by three."""
    if 18 <= n <= 20:
        return n + 1
    if n == 21:
        return 23
    if 22 <= n <= 29:
        return n + 3
    return n


def chapter_map(names, how: str) -> dict[str, str]:
    out = {}
    for name in names:
        m = re.match(r"^(\d\d)_(.*)$", name)
        if not m:
            continue
        n = int(m.group(1))
        out[name] = f"{n:02d}_renamed_{n}" if how == "renamed" else f"{renumbered(n):02d}_{m.group(2)}"
    return out


def write_copy(src: Path, dst: Path, names: dict[str, str]) -> None:
    """src with every chapter name replaced, where the binaries write it: the chapter column, and a
    fused step's unfused pipeline named after the step it runs."""
    with src.open(newline="") as f:
        rows = list(csv.reader(f))
    ix = {c: i for i, c in enumerate(rows[0])}
    for r in rows[1:]:
        r[ix["chapter"]] = names.get(r[ix["chapter"]], r[ix["chapter"]])
        for old, new in names.items():
            r[ix["alt_baseline"]] = r[ix["alt_baseline"]].replace(old, new)
    with dst.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def plot_tree(root: Path, src: Path, names: dict[str, str]) -> Path:
    """A README with every results section, a chapter folder per chapter, the fixture (renamed by
    `names`), plotted."""
    root.mkdir()
    readme = root / "README.md"
    readme.write_text("".join(f"{markers(s)[0]}\nold\n{markers(s)[1]}\n\n" for s in SECTIONS))
    with src.open(newline="") as f:
        chapters = {r["chapter"] for r in csv.DictReader(f)}
    for name in chapters:
        folder = root / "chapters" / names.get(name, name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "README.md").write_text(f"# {name}\n\n{CHAPTER_BEGIN}\n{CHAPTER_END}\n")
    write_copy(src, root / "results.csv", names)
    assert plot.main(["--csv", str(root / "results.csv"), "--out-dir", str(root / "plots"), "--readme", str(readme),
                      "--chapters-dir", str(root / "chapters")]) == 0
    return root


def texts(root: Path, names: dict[str, str]) -> dict[str, str]:
    """The README and every chapter README, keyed by the chapter's original name."""
    back = {new: old for old, new in names.items()}
    out = {"README.md": (root / "README.md").read_text()}
    for folder in sorted((root / "chapters").iterdir()):
        out[back.get(folder.name, folder.name)] = (folder / "README.md").read_text()
    return out


def unrename(text: str, names: dict[str, str]) -> str:
    for old, new in sorted(names.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(new, old)
    return text


# A chapter number as the tables print it: two digits standing alone (a label "18 implicit ...",
# "step 18", "18: % of", "18 + separate kernel"), never a digit of a measured number or a date.
NUMBER = re.compile(r"(?<![\w.:/\-×])(\d\d)(?![\w.%\-×])")


def plot_both(tmp_path: Path, fixture: str, how: str):
    """The fixture plotted as it is (a) and with its chapters renamed or renumbered (b): both trees,
    the name map, and both sets of texts keyed by the original names."""
    src = DATA / fixture
    with src.open(newline="") as f:
        names = chapter_map({r["chapter"] for r in csv.DictReader(f)}, how)
    a = plot_tree(tmp_path / "a", src, {})
    b = plot_tree(tmp_path / "b", src, names)
    ta, tb = texts(a, {}), texts(b, names)
    assert ta.keys() == tb.keys()
    charts = sorted(p.name for p in (a / "plots").iterdir())
    assert charts and charts == sorted(p.name for p in (b / "plots").iterdir())
    return a, b, names, ta, tb, charts


@pytest.mark.parametrize("fixture", FIXTURES)
def test_renamed_chapters_give_the_same_tables_and_charts(tmp_path, fixture):
    a, b, names, ta, tb, charts = plot_both(tmp_path, fixture, "renamed")
    for key in ta:
        assert unrename(tb[key], names) == ta[key], key
    for name in charts:  # the charts print numbers and titles, never folder names: the same bytes
        assert (a / "plots" / name).read_bytes() == (b / "plots" / name).read_bytes(), name


@pytest.mark.parametrize("fixture", FIXTURES)
def test_renumbered_chapters_give_the_same_tables(tmp_path, fixture):
    _, _, names, ta, tb, _ = plot_both(tmp_path, fixture, "renumbered")
    old_of = {int(new[:2]): int(old[:2]) for old, new in names.items()}
    for key in ta:
        mapped = NUMBER.sub(lambda m: f"{old_of.get(int(m.group(1)), int(m.group(1))):02d}", unrename(tb[key], names))
        assert mapped == ta[key], key
