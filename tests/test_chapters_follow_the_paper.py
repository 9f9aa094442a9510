"""The chapters teach the paper first and mark what the kit adds (issue 34, items 1–2).

(a) The first Delta of Fig. 18 that chapters 00, 05 and 06 show is the paper's: the
    chapter's own code cells are run in order (from ``notebooks/md/*.md``), every Delta a
    cell prints is recorded (all Delta printing goes through ``dl.format_delta``), and the
    first one that is Fig. 18's, with or without the kit's contraction, is built from the
    paper's Delta constructors only (Fig. 12, §6.1): ``SumOuter (Add (Scale …) (Scale …
    (Gather …)))``.
(b) Every chapter cell that shows a kit-only construct lies in a section marked as an
    extension.  A *section* runs from a markdown heading to the next heading of the same
    or a higher level; it is *marked* when the text right under its heading (up to the
    next heading or the end of that markdown cell) holds the bold label
    ``**Not in the paper:**``, or when a section around it is marked.  A code cell *shows*
    a kit-only construct when its source calls one or its stored output prints one.  The
    kit-only term and Delta constructors are the classes of the ADTs
    (``dualarr.lang.terms.TERM_TYPES``, ``dualarr.ad.delta.Delta``) that the paper's lists
    below lack; the other constructs are the kit's transformations and options.

Outputs are read from the paired ``.ipynb`` for each code cell whose source it holds
unchanged (``tests/test_notebooks.py`` checks that every cell does, once the lead syncs
and re-executes); sections, marks and sources are read from the ``.md``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jupytext
import numpy as np
import pytest

import dualarr as da
import dualarr.numpy as dnp
from dualarr.ad import delta as dl
from dualarr.lang import terms
from dualarr.teach.examples import fig18

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted((NOTEBOOKS / "md").glob("[0-9][0-9]-*.md"))
MARK = "**Not in the paper:**"

# The paper's core language (Fig. 7) and `share` (§7.3, Fig. 19): dualarr's class names.
PAPER_TERMS = {
    "Const", "Var", "Op", "Cond", "Let", "Build1", "Index", "Gather", "Scatter",
    "SumOuter", "Replicate", "Transpose", "Reshape", "FromList", "Iota", "FromIntegral",
    "Floor", "Share",
}  # fmt: skip
# The paper's Delta (Fig. 12 and §6.1): the scalar base of §2 (Zero, Input, Add, Scale,
# Share) and one constructor per linear array operation of Fig. 7, its own forward
# derivative (§6.1, footnote 25).
PAPER_DELTAS = {
    "Zero", "Input", "Add", "Scale", "Share", "Index", "Gather", "Scatter", "SumOuter",
    "Replicate", "Transpose", "Reshape", "FromList",
}  # fmt: skip
KIT_TERMS = {c.__name__ for c in terms.term_constructors()} - PAPER_TERMS
KIT_DELTAS = {c.__name__ for c in typing.get_args(dl.Delta)} - PAPER_DELTAS

# How each kit-only constructor appears in a cell: printed terms (`show.printer`), printed
# and drawn Deltas, generated code, and the calls that make one.
TERM_SPELLINGS = {
    "Contract": r"\bdot0\b|\bmatmul2\b|\bcontract \"|\bhelpers\.contract\b|\bterms\.Contract\b",
    "ArgMin": r"\bargmin \S|\b(?:da|dnp)\.argmin\(|\bArgMin\(",
    "ArgMax": r"\bargmax \S|\b(?:da|dnp)\.argmax\(|\bArgMax\(",
    "ArgSort": r"\bargsort \S|\b(?:da|dnp)\.argsort\(|\bArgSort\(",
    "Rev": r"\brev \d|\bda\.rev\(|\bRev\(",
    "MapAccum": r"\bmapAccum[LR]\b|\bda\.(?:scan|fori_loop)\(|\bMapAccum\(",
    "LoopOutput": r"\bmapAccum[LR]\b|\bLoopOutput\(",
    "Eigh": r"\beigh \S|\b(?:dnp|np)\.linalg\.(?:eigh|eigvalsh)\(|\bEigh\(",
    "Svd": r"\bsvd (?:True|False)\b|\b(?:dnp|np)\.linalg\.(?:svd|svdvals|pinv|lstsq)\(|\bSvd\(",
    "Qr": r"\bqr (?:reduced|complete)\b|\b(?:dnp|np)\.linalg\.qr\(|\bQr\(",
    "Solve": r"\bsolve \S|\b(?:dnp|np)\.linalg\.(?:solve|tensorsolve|lstsq)\(|\bSolve\(",
    "Inv": r"\binv \S|\b(?:dnp|np)\.linalg\.(?:inv|tensorinv|matrix_power)\(|\bInv\(",
    "LogAbsDet": r"\blogabsdet \S|\b(?:dnp|np)\.linalg\.(?:slogdet|det)\(|\bLogAbsDet\(",
    "SignDet": r"\bsigndet \S|\b(?:dnp|np)\.linalg\.(?:slogdet|det)\(|\bSignDet\(",
    "Cholesky": r"\bcholesky \S|\b(?:dnp|np)\.linalg\.cholesky\(|\bCholesky\(",
}
DELTA_SPELLINGS = {
    "Contract": r"\bContract\b",
    "Convert": r"\bConvert\b",
    "Structural": r"\bRev \d",
    "MapAccum": r"\bMapAccum[LR]\b|\bRunLoop\(|\bT\[MapAccum\]",
    "LoopOutput": r"\bT\[LoopOutput \d",
}
# The kit's transformations and options that the paper does not have.
CONSTRUCT_SPELLINGS = {
    "vmap": r"\bvmap\(",
    "stop_gradient": r"\bstop_gradient\(",
    "a user's primitive": r"\bda\.primitive\b|\bcustom_jvp\b|\bcustom_vjp\b",
    "fused kernels": r"\.kernels\b|\bfuse=True\b|\bkernel\d+\(",
    "transposition as a linear language": r"\btranspose_delta\(|\bto_let_form\(|\brun_linear\(",
    "loops": r"\bda\.(?:scan|fori_loop)\(",
}


@dataclass(frozen=True)
class Cell:
    chapter: str
    number: int  # 0-based, code and markdown cells, as in the .ipynb
    kind: str
    source: str
    output: str  # the stored outputs' text ("" when none, or not stored for this source)
    section: str  # the heading of the innermost section around it
    marked: bool
    hidden: bool  # a "remove-cell" check: it asserts what the cells above show


def _output_text(cell: dict[str, Any]) -> str:
    texts = []
    for out in cell.get("outputs", []):
        texts.append("".join(out.get("text", "")))
        for mime in ("text/plain", "text/html", "text/markdown", "image/svg+xml"):
            texts.append("".join(out.get("data", {}).get(mime, "")))
    return "\n".join(texts)


def _stored_outputs(md: Path) -> dict[str, list[str]]:
    """Each stored code cell's output text, by its source (several cells may share one)."""
    path = NOTEBOOKS / md.with_suffix(".ipynb").name
    found: dict[str, list[str]] = {}
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code":
            found.setdefault("".join(cell["source"]).strip(), []).append(_output_text(cell))
    return found


def _heading_marks(text: str) -> Iterator[tuple[int, str, bool]]:
    """Each heading of a markdown cell: its level, its text, and whether the lines under
    it, up to the next heading or the end of the cell, hold the mark."""
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if re.match(r"#{1,6} ", line)]
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        level = len(lines[start]) - len(lines[start].lstrip("#"))
        yield level, lines[start].lstrip("# "), MARK in "\n".join(lines[start:end])


def chapter_cells(md: Path) -> list[Cell]:
    """The chapter's cells, each with its section and whether that section is marked."""
    stored = _stored_outputs(md)
    open_sections: list[tuple[int, str, bool]] = []  # (level, heading, marked), outermost first
    cells = []
    for number, cell in enumerate(jupytext.read(md).cells):
        source = cell.source
        if cell.cell_type == "markdown":
            for level, heading, marked in _heading_marks(source):
                while open_sections and open_sections[-1][0] >= level:
                    open_sections.pop()
                open_sections.append((level, heading, marked))
        outputs = stored.get(source.strip(), [])
        output = outputs.pop(0) if outputs else ""
        heading = open_sections[-1][1] if open_sections else ""
        marked = any(m for _, _, m in open_sections)
        hidden = "remove-cell" in cell.metadata.get("tags", [])
        cells.append(Cell(md.stem, number, cell.cell_type, source, output, heading, marked, hidden))
    return cells


def kit_constructs_shown(cell: Cell) -> list[str]:
    """The kit-only constructs a code cell calls or prints."""
    if cell.kind != "code" or cell.hidden:
        return []
    code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("#"))
    shown = []
    for name, pattern in TERM_SPELLINGS.items():
        if re.search(pattern, code) or re.search(pattern, cell.output):
            shown.append(f"term {name}")
    for name, pattern in DELTA_SPELLINGS.items():
        if re.search(rf"\bdl\.{name}\b", code) or re.search(pattern, cell.output):
            shown.append(f"Delta {name}")
    for name, pattern in CONSTRUCT_SPELLINGS.items():
        if re.search(pattern, code) or re.search(pattern, cell.output):
            shown.append(name)
    return shown


# --------------------------------------------------------------------------------------
# The lists themselves
# --------------------------------------------------------------------------------------


def test_the_kit_only_constructors_are_the_ones_spelled_here() -> None:
    assert set(TERM_SPELLINGS) == KIT_TERMS, "a new term class: is it the paper's?"
    assert set(DELTA_SPELLINGS) == KIT_DELTAS, "a new Delta class: is it the paper's?"
    assert {c.__name__ for c in terms.term_constructors()} >= PAPER_TERMS
    assert {c.__name__ for c in typing.get_args(dl.Delta)} >= PAPER_DELTAS


def test_the_spellings_match_what_the_printer_prints() -> None:
    def dot(a: Any) -> Any:
        return da.sum(da.build1(5, lambda i: a[i] * a[4 - i]))

    kit = da.pipeline(dot, np.arange(1.0, 6.0))
    assert re.search(TERM_SPELLINGS["Contract"], str(kit.vectorised))
    assert re.search(TERM_SPELLINGS["Contract"], kit.python)
    assert re.search(DELTA_SPELLINGS["Contract"], str(kit.delta))
    paper = da.pipeline(dot, np.arange(1.0, 6.0), contractions=False)
    for text in (str(paper.vectorised), str(paper.delta)):
        assert not re.search(TERM_SPELLINGS["Contract"], text)
        assert not re.search(DELTA_SPELLINGS["Contract"], text)
    x = np.arange(1.0, 6.0)
    for name, picks in (("ArgMin", dnp.argmin), ("ArgMax", dnp.argmax), ("ArgSort", dnp.argsort)):
        assert re.search(TERM_SPELLINGS[name], str(da.trace(picks, x))), name

    def looped(a: Any) -> Any:
        return da.sum(da.scan(lambda c, r: (c * r, c), a[0], a)[1])

    loop = da.pipeline(looped, x)
    for name in ("MapAccum", "LoopOutput"):
        assert re.search(TERM_SPELLINGS[name], str(loop.source)), name
    assert re.search(DELTA_SPELLINGS["MapAccum"], str(loop.forward))


def test_the_mark_is_found_under_a_heading_and_inherited() -> None:
    text = f"# T\n\nintro\n\n## A\n\n{MARK} why.\n\n### A.1\n\ntext\n\n## B\n\nplain"
    assert [(lvl, h, m) for lvl, h, m in _heading_marks(text)] == [
        (1, "T", False), (2, "A", True), (3, "A.1", False), (2, "B", False),
    ]  # fmt: skip


# --------------------------------------------------------------------------------------
# (a) The first Delta of Fig. 18 a chapter shows is the paper's
# --------------------------------------------------------------------------------------


def skeleton(d: dl.Delta) -> str:
    """The Delta's constructors as a nested expression, without Share nodes (their
    placement is the same on every path) and without factors and index functions."""
    while isinstance(d, dl.Share):
        d = d.delta
    kids = ", ".join(skeleton(k) for k in dl.delta_children(d))
    return f"{type(d).__name__}({kids})"


X = np.arange(1.0, 6.0)
PAPER_FIG18 = skeleton(da.pipeline(fig18, X, contractions=False).delta.delta)
KIT_FIG18 = skeleton(da.pipeline(fig18, X).delta.delta)


def test_the_papers_fig18_skeleton_is_sumouter_add_scale_gather() -> None:
    assert PAPER_FIG18 == ("SumOuter(Add(Scale(Input()), Scale(Gather(Input()))))"), PAPER_FIG18
    assert KIT_FIG18 != PAPER_FIG18 and "Contract" in KIT_FIG18


def first_fig18_delta_shown(md: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dl.Delta]:
    """Run the chapter's code cells in order, as the notebook does, until one prints a
    Delta of Fig. 18 (the paper's or the kit's); that cell's number and that Delta."""
    printed: list[dl.Delta] = []
    format_delta = dl.format_delta

    def recording(root: dl.Delta, *args: Any, **kwargs: Any) -> str:
        printed.append(root)
        return format_delta(root, *args, **kwargs)

    monkeypatch.setattr(dl, "format_delta", recording)
    monkeypatch.chdir(NOTEBOOKS)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with np.printoptions(), contextlib.redirect_stdout(io.StringIO()):
        for number, cell in enumerate(jupytext.read(md).cells):
            if cell.cell_type != "code":
                continue
            exec(compile(cell.source, f"{md.name} cell {number}", "exec"), namespace)
            for root in printed:
                if skeleton(root) in (PAPER_FIG18, KIT_FIG18):
                    return number, root
            printed.clear()
    raise AssertionError(f"{md.name} never prints a Delta of Fig. 18")


@pytest.mark.parametrize(
    "name",
    ["00-quick-tour", "05-dual-arrays", "06-compile-time-differentiation"],
)
def test_the_first_fig18_delta_shown_is_the_papers(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    number, delta = first_fig18_delta_shown(NOTEBOOKS / "md" / f"{name}.md", monkeypatch)
    used = {type(d).__name__ for d in dl.delta_postorder([delta])}
    assert used <= PAPER_DELTAS, f"{name} cell {number} shows {sorted(used - PAPER_DELTAS)}"
    assert skeleton(delta) == PAPER_FIG18


# --------------------------------------------------------------------------------------
# (b) Every kit-only construct shown is in a section marked as an extension
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_kit_construct_shown_is_in_a_marked_section(md: Path) -> None:
    unmarked = [
        f"cell {c.number} (section {c.section!r}): {', '.join(shown)}"
        for c in chapter_cells(md)
        if (shown := kit_constructs_shown(c)) and not c.marked
    ]
    assert not unmarked, f"{md.stem} shows kit-only constructs outside a marked section:\n" + (
        "\n".join(unmarked)
    )


@pytest.mark.parametrize("md", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_every_mark_says_why(md: Path) -> None:
    """A mark is a label followed by one line on why, in the same paragraph."""
    text = md.read_text()
    for match in re.finditer(re.escape(MARK), text):
        after = text[match.end() :].split("\n\n")[0].strip()
        assert len(after.split()) >= 5, f"{md.stem}: a mark without its reason: {after!r}"
