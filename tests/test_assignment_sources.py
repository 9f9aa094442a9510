"""The nine assignments, each authored once (``notebooks/assignments/source/*.md``) and
generated into a student notebook and a solution notebook (``solutions/``).

Executed, a student notebook runs to the end with every graded check (a cell tagged
``check``) failing, on standard error, with its hint, and no output of it repeats a line
of the answer; the solution notebook passes every check.  A student notebook holds no
solution region and no line of one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jupytext
import pytest
from notebook_runner import run_notebook

from dualarr.teach.scratch.notebooks import BEGIN, END, solution_regions

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENTS = ROOT / "notebooks" / "assignments"
SOURCES = sorted((ASSIGNMENTS / "source").glob("*.md"))
NAMES = [p.stem for p in SOURCES]


def test_nine_assignments_each_from_one_source() -> None:
    assert len(SOURCES) == 9
    assert sorted(p.stem for p in ASSIGNMENTS.glob("[0-9]*.ipynb")) == NAMES
    assert sorted(p.stem for p in (ASSIGNMENTS / "solutions").glob("*.ipynb")) == NAMES
    assert not list(ASSIGNMENTS.glob("*-solution.ipynb")) and not (ASSIGNMENTS / "md").exists()


def answer_lines(source: Path) -> set[str]:
    lines: set[str] = set()
    for cell in jupytext.reads(source.read_text(), fmt="md:myst").cells:
        if cell.cell_type == "code":
            for region in solution_regions(cell.source):
                lines |= {ln.strip() for ln in region.lines if len(ln.strip()) >= 24}
    return lines


def executed(path: Path) -> list[Any]:
    notebook = run_notebook(path)
    cells: list[Any] = notebook.cells
    return cells


def checks(cells: list[Any]) -> list[Any]:
    found = [c for c in cells if "check" in c.get("metadata", {}).get("tags", [])]
    assert found, "no check cell"
    return found


def stderr(cell: Any) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stderr")


def errors(cells: list[Any]) -> list[Any]:
    return [(c.source, o) for c in cells for o in c.get("outputs", [])
            if o.output_type == "error"]


@pytest.mark.parametrize("name", NAMES)
def test_a_student_notebook_holds_no_solution(name: str) -> None:
    text = (ASSIGNMENTS / f"{name}.ipynb").read_text()
    assert BEGIN not in text and END not in text
    code = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"]
                     if c["cell_type"] == "code")
    leaked = [line for line in answer_lines(ASSIGNMENTS / "source" / f"{name}.md")
              if line in code]
    assert not leaked, leaked


@pytest.mark.parametrize("name", NAMES)
def test_a_student_notebook_runs_and_every_check_fails_with_a_hint(name: str) -> None:
    cells = executed(ASSIGNMENTS / f"{name}.ipynb")
    assert not errors(cells)
    answer = answer_lines(ASSIGNMENTS / "source" / f"{name}.md")
    for cell in checks(cells):
        report = stderr(cell)
        assert report.strip(), cell.source  # failed: no points from an autograder
        assert "✘" in report, report
        assert not [line for line in answer if line in report], report


@pytest.mark.parametrize("name", NAMES)
def test_a_solution_notebook_passes_every_check(name: str) -> None:
    cells = executed(ASSIGNMENTS / "solutions" / f"{name}.ipynb")
    assert not errors(cells)
    for cell in checks(cells):
        assert not stderr(cell), (cell.source, stderr(cell))
