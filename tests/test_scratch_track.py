"""The build-it-yourself track (``notebooks/from-scratch/``): one source per stage, the
student and solution notebooks generated from it, graded task by task.

- the generated notebooks are those the sources give (none edited by hand);
- no student notebook holds solution code, and no hint (a check's, or a stub's
  docstring) holds a line of the answer;
- each stage asks for at most about 150 lines, and the README says how many;
- executed, a student notebook runs to the end with every check failing with its hint
  (no exception), and a solution notebook passes every check;
- the command line grades saved work the same way;
- ``stage`` swaps in the reference, all the way down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_runner import run_notebook

from dualarr.teach.scratch import STAGES, stage, tasks_of
from dualarr.teach.scratch.notebooks import (
    BEGIN,
    END,
    generate,
    learner_lines,
    solution_regions,
)

ROOT = Path(__file__).resolve().parent.parent
TRACK = ROOT / "notebooks" / "from-scratch"
SOURCES = {name: TRACK / "source" / f"{stem}.md" for name, stem in STAGES.items()}
MAX_LINES = 160  # "at most about 150" per stage


def _source_cells(name: str) -> list[Any]:
    import jupytext

    return list(jupytext.reads(SOURCES[name].read_text(), fmt="md:myst").cells)


def _solution_lines(name: str) -> set[str]:
    """The answer's substantive lines (stripped, long enough to be code, not a keyword)."""
    lines: set[str] = set()
    for cell in _source_cells(name):
        if cell.cell_type == "code":
            for region in solution_regions(cell.source):
                lines |= {ln.strip() for ln in region.lines if len(ln.strip()) >= 24}
    return lines


def test_every_stage_has_a_source_and_its_generated_notebooks_are_current() -> None:
    assert all(path.exists() for path in SOURCES.values()), sorted(SOURCES)
    assert generate(check_only=True) == []


def test_only_the_sources_hold_solution_regions() -> None:
    """Generated notebooks, student or solution, hold no marker: a solution region is in
    the sources alone (nbgrader's course is built from them)."""
    generated = [*ROOT.glob("notebooks/*/*.ipynb"), *ROOT.glob("notebooks/*/solutions/*.ipynb")]
    assert len(generated) >= 2 * (len(STAGES) + 9)
    for path in generated:
        text = path.read_text()
        assert BEGIN not in text and END not in text, path


@pytest.mark.parametrize("name", list(STAGES))
def test_a_student_notebook_holds_no_solution(name: str) -> None:
    student = (TRACK / f"{STAGES[name]}.ipynb").read_text()
    assert BEGIN not in student and END not in student
    code = "\n".join(
        "".join(c["source"]) for c in json.loads(student)["cells"] if c["cell_type"] == "code"
    )
    leaked = [line for line in _solution_lines(name) if line in code]
    assert not leaked, leaked
    assert code.count("raise NotImplementedError()") >= len(tasks_of(name))


@pytest.mark.parametrize("name", list(STAGES))
def test_no_hint_gives_the_answer(name: str) -> None:
    answer = _solution_lines(name)
    hints = [t.hint for t in tasks_of(name)]
    for cell in _source_cells(name):
        if cell.cell_type == "code":
            hints += re.findall(r"Hint:(.*?)(?:\"\"\"|\n\s*\n)", cell.source, re.S)
    assert hints
    for hint in hints:
        flat = " ".join(hint.split())
        assert not [line for line in answer if " ".join(line.split()) in flat], hint


def test_each_stage_asks_for_about_150_lines_and_readme_and_notebook_say_how_many() -> None:
    readme = (ROOT / "README.md").read_text()
    for name, stem in STAGES.items():
        lines = learner_lines(SOURCES[name])
        assert 0 < lines <= MAX_LINES, (name, lines)
        row = re.search(rf"\]\(notebooks/from-scratch/{stem}\.ipynb\)[^\n]*?(\d+) lines", readme)
        assert row is not None, f"README: no line count for {stem}"
        assert int(row.group(1)) == lines, (stem, row.group(1), lines)
        intro = SOURCES[name].read_text().split("```{code-cell}")[0]
        assert f" {lines} lines" in intro, f"{stem}: the introduction does not say {lines} lines"


def _executed(path: Path) -> list[str]:
    """Run a notebook in a fresh kernel (from its own folder); the text of each code
    cell's outputs.  A cell that raises fails the test."""
    notebook = run_notebook(path)
    texts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for output in cell.outputs:
            assert output.output_type != "error", (path.name, cell.source, output)
            plain = str(output.get("data", {}).get("text/plain", ""))
            parts.append(output.get("text", "") or plain)
        texts.append("".join(parts))
    return texts


def _check_reports(name: str, texts: list[str], sources: list[str]) -> list[str]:
    ids = [t.id for t in tasks_of(name)]
    reports = []
    for source, text in zip(sources, texts, strict=True):
        for task_id in re.findall(r'check\("([\w.]+)"\)', source):
            assert task_id in ids, task_id
            found = re.search(rf"^[✔✘] {re.escape(task_id)}:.*?(?=^[✔✘] |\Z)", text, re.S | re.M)
            assert found is not None, (task_id, text)
            reports.append(found.group(0))
    assert sorted({r.split(":")[0][2:] for r in reports}) == sorted(ids)
    return reports


def _code_sources(path: Path) -> list[str]:
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    return [c.source for c in notebook.cells if c.cell_type == "code"]


@pytest.mark.parametrize("name", list(STAGES))
def test_a_student_notebook_runs_and_every_check_fails_with_its_hint(name: str) -> None:
    path = TRACK / f"{STAGES[name]}.ipynb"
    texts = _executed(path)
    for report in _check_reports(name, texts, _code_sources(path)):
        assert report.startswith("✘"), report
        assert "hint:" in report and "Traceback" not in report, report
    assert f"0/{len(tasks_of(name))} tasks pass" in texts[-1]


@pytest.mark.parametrize("name", list(STAGES))
def test_a_solution_notebook_passes_every_check(name: str) -> None:
    path = TRACK / "solutions" / f"{STAGES[name]}.ipynb"
    texts = _executed(path)
    for report in _check_reports(name, texts, _code_sources(path)):
        assert report.startswith("✔"), report
    count = len(tasks_of(name))
    assert f"{count}/{count} tasks pass" in texts[-1]


def test_the_command_line_grades_saved_work() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "dualarr.teach.scratch", "check", *args],
                              capture_output=True, text=True, cwd=ROOT, timeout=900)

    total = sum(len(tasks_of(name)) for name in STAGES)
    solutions = run("--solutions")
    assert solutions.returncode == 0, solutions.stdout + solutions.stderr
    assert f"{total}/{total} tasks pass" in solutions.stdout
    students = run("a", "b")
    assert students.returncode == 1 and "Traceback" not in students.stderr + students.stdout
    failed = students.stdout.count("✘ ")
    assert failed == len(tasks_of("a")) + len(tasks_of("b")), students.stdout
    assert students.stdout.count("hint:") == failed


def test_stage_loads_the_learners_work_or_the_reference_all_the_way_down() -> None:
    mine = stage("a")
    with pytest.raises(NotImplementedError):
        mine.evaluate(mine.fig18(2), {})
    reference = stage("a", "reference")
    import numpy as np

    assert reference.evaluate(reference.fig18(2), {"x": np.array([1.0, 2.0])}) == 4.0
    b = stage("b", "reference")
    assert b.a is reference  # a reference stage loads reference stages beneath it
