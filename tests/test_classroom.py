"""The classroom loop with nbgrader, on a course of synthetic submissions: build the
course from the kit's sources, generate and release the assignment, students fetch and
submit through the exchange, the instructor collects, autogrades, returns feedback and
exports the grades.

The solutions get full marks; the stubs get 0 with their hints in the feedback; a partly
right submission gets exactly the points of the checks it passes; a syntax error, an
exception, an endless loop, a deleted or edited check cell, a tampered checker and an
allocation without bound are each graded (0 for that part) and the batch finishes; the
exported CSV has one row per student and assignment; no released file holds a solution.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dualarr.teach.classroom import build_course

pytest.importorskip("nbgrader")

ASSIGNMENT = "build-it-yourself"
NOTEBOOK = "a-tracing-and-evaluation.ipynb"
SECOND = "04-sharing-bug"  # a second assignment: submitted by two students only
SECOND_POINTS = {"solutions": 2.0, "stubs": 0.0}
CHECKS = ("a-read", "a-evaluate", "a-trace", "a-binders")
BIN = Path(sys.executable).parent


def nbgrader(course: Path, *args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
           "DUALARR_GRADING_TIMEOUT": "20"}
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=cwd or course, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


Cells = list[dict[str, Any]]


def cells_of(path: Path) -> Cells:
    """A notebook's cells, each source one string."""
    cells: Cells = json.loads(path.read_text())["cells"]
    for cell in cells:
        if isinstance(cell["source"], list):
            cell["source"] = "".join(cell["source"])
    return cells


def answer(cells: Cells, solved: Cells, defines: str) -> None:
    """Put the solution of the answer cell that defines ``defines`` into ``cells``."""
    for cell, solution in zip(cells, solved, strict=True):
        if cell["metadata"]["nbgrader"].get("solution") and f"def {defines}(" in solution["source"]:
            cell["source"] = solution["source"]
            return
    raise AssertionError(f"no answer cell defines {defines}")


def edit(cells: Cells, defines: str, body: str) -> None:
    """Replace the stub in the answer cell defining ``defines`` by ``body``."""
    for cell in cells:
        if f"def {defines}(" in cell["source"]:
            cell["source"] = cell["source"].replace("raise NotImplementedError()", body, 1)
            return
    raise AssertionError(defines)


def half(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    answer(cells, solved, "evaluate")


def solutions(cells: Cells, solved: Cells) -> None:
    for cell, solution in zip(cells, solved, strict=True):
        if cell["metadata"]["nbgrader"].get("solution"):
            cell["source"] = solution["source"]


def syntax_error(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    edit(cells, "evaluate", "return (")


def exception(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    edit(cells, "evaluate", 'raise ValueError("boom")')


def endless(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    edit(cells, "evaluate", "while True:\n        pass")


def deleted_check(cells: Cells, solved: Cells) -> None:
    solutions(cells, solved)
    cells[:] = [c for c in cells if 'check("a.read")' not in c["source"]]


def edited_check(cells: Cells, solved: Cells) -> None:
    for cell in cells:
        if 'check("' in cell["source"]:
            cell["source"] = 'print("✔ passed")'


def tamper(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    edit(cells, "evaluate", "raise NotImplementedError()\n\n\n"
         "def check(*args, **kwargs):\n    print('✔ passed')\n\n\n"
         "import dualarr.teach.scratch as _s\n"
         "_s.check = check\n"
         "_s.grading.check = check\n"
         "_s.grading.run_task = lambda *a, **k: None")


def memory(cells: Cells, solved: Cells) -> None:
    answer(cells, solved, "read")
    edit(cells, "evaluate", "hoard = [bytearray(2**30) for _ in range(64)]\n"
                            "    return hoard")


STUDENTS: dict[str, tuple[Callable[[Cells, Cells], None] | None, int]] = {
    "solutions": (solutions, 4),
    "stubs": (None, 0),
    "half": (half, 2),
    "syntax-error": (syntax_error, 1),
    "exception": (exception, 1),
    "endless": (endless, 1),
    "deleted-check": (deleted_check, 3),
    "edited-check": (edited_check, 0),
    "tamper": (tamper, 1),
    "memory": (memory, 1),
}
"""Each synthetic student: how the released notebook is changed, and its points."""


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("classroom")
    course = root / "course"
    build_course(course, [ASSIGNMENT, SECOND])
    for other in (course / "source" / ASSIGNMENT).glob("*.ipynb"):
        if other.name != NOTEBOOK:  # one stage: the loop, not the track, is under test
            other.unlink()
    for assignment in (ASSIGNMENT, SECOND):
        nbgrader(course, "generate_assignment", assignment, "--force")
        nbgrader(course, "release_assignment", assignment, "--force")
    solved = cells_of(course / "source" / ASSIGNMENT / NOTEBOOK)
    exchange = f"--Exchange.root={course / 'exchange'}"
    for student, (change, _) in STUDENTS.items():
        home = root / "homes" / student
        home.mkdir(parents=True)
        nbgrader(course, "fetch_assignment", ASSIGNMENT, "--course=dualarr", exchange, cwd=home)
        path = home / ASSIGNMENT / NOTEBOOK
        notebook = json.loads(path.read_text())
        notebook["cells"] = cells_of(path)
        if change is not None:
            change(notebook["cells"], solved)
        path.write_text(json.dumps(notebook))
        nbgrader(course, "submit", ASSIGNMENT, "--course=dualarr", exchange,
                 f"--student={student}", cwd=home)
        if student in SECOND_POINTS:
            nbgrader(course, "fetch_assignment", SECOND, "--course=dualarr", exchange, cwd=home)
            if student == "solutions":
                for path in (home / SECOND).glob("*.ipynb"):
                    shutil.copyfile(course / "source" / SECOND / path.name, path)
            nbgrader(course, "submit", SECOND, "--course=dualarr", exchange,
                     f"--student={student}", cwd=home)
    for assignment in (ASSIGNMENT, SECOND):
        nbgrader(course, "collect", assignment)
        nbgrader(course, "autograde", assignment, "--create", "--force")
        nbgrader(course, "generate_feedback", assignment, "--force")
    nbgrader(course, "export", "--to", str(course / "grades.csv"))
    return course


def grades(course: Path) -> dict[tuple[str, str], float]:
    with (course / "grades.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sorted((r["student_id"], r["assignment"]) for r in rows) == sorted(
        (s, a) for s in STUDENTS for a in (ASSIGNMENT, SECOND)
    )  # one row per student and per assignment
    return {(r["student_id"], r["assignment"]): float(r["raw_score"] or 0) for r in rows}


def test_each_submission_gets_the_points_of_the_checks_it_passes(course: Path) -> None:
    got = grades(course)
    assert {s: got[s, ASSIGNMENT] for s in STUDENTS} == {
        student: float(points) for student, (_, points) in STUDENTS.items()
    }
    assert {s: got[s, SECOND] for s in STUDENTS} == {s: SECOND_POINTS.get(s, 0.0) for s in STUDENTS}


def test_the_stubs_feedback_holds_each_checks_hint(course: Path) -> None:
    page = (course / "feedback" / "stubs" / ASSIGNMENT / NOTEBOOK).with_suffix(".html")
    text = page.read_text()
    for hint in ("§5.2: a read outside the array", "Fig. 7 / §3: check the construct",
                 "§3.3: a binder calls the Python function"):
        assert hint in text, hint
    wrong = (course / "feedback" / "half" / ASSIGNMENT / NOTEBOOK).with_suffix(".html")
    assert "✔ a.read" in wrong.read_text() and "✘ a.trace" in wrong.read_text()


def test_no_released_file_holds_a_solution(course: Path) -> None:
    released = list((course / "release").rglob("*.ipynb"))
    released += list((course / "exchange").rglob("outbound/**/*.ipynb"))
    assert {p.parent.name for p in released} == {ASSIGNMENT, SECOND}
    for path in released:
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, path


def test_check_cells_are_worth_a_point_each_and_locked(course: Path) -> None:
    cells = json.loads((course / "release" / ASSIGNMENT / NOTEBOOK).read_text())["cells"]
    graded = [c["metadata"]["nbgrader"] for c in cells if c["metadata"]["nbgrader"]["grade"]]
    assert [g["grade_id"] for g in graded] == list(CHECKS)
    assert all(g["points"] == 1 and g["locked"] for g in graded)


def test_the_course_is_rebuilt_from_the_sources(course: Path, tmp_path: Path) -> None:
    shutil.copytree(course / "source", tmp_path / "before")
    build_course(course, [ASSIGNMENT])
    after = json.loads((course / "source" / ASSIGNMENT / NOTEBOOK).read_text())
    before = json.loads((tmp_path / "before" / ASSIGNMENT / NOTEBOOK).read_text())
    assert after["cells"] == before["cells"]
