"""The classroom: the kit's assignments and its build-it-yourself track as an nbgrader
course (release, collect, autograde, feedback, grades).

Each notebook is authored once (``notebooks/<track>/source/*.md``, solutions between
nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION``); :func:`build_course` writes
the course's nbgrader *source* notebooks from it, with the cell metadata nbgrader reads:
a cell holding a solution region is an answer cell; a cell tagged ``check`` is an
autograded test cell worth one point (partial credit is per check); every other cell is
read-only (checksummed and restored at grading); ``solution-only`` cells are left out.
nbgrader itself does the rest (``generate_assignment``, ``release_assignment``,
``collect``, ``autograde``, ``generate_feedback``, ``export``): see the README's "For
instructors" section and ``book/instructors.md``.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..scratch.notebooks import SOLUTION_ONLY_TAG, solution_notebook, solution_regions, sources

__all__ = [
    "CHECK_TAG",
    "Assignment",
    "assignments",
    "build_course",
    "course_notebook",
    "untampered",
]

CHECK_TAG = "check"
SCHEMA_VERSION = 3
TRACK_ASSIGNMENT = "build-it-yourself"
"""The build-it-yourself track is one assignment of seven notebooks (the stages load
each other from the assignment's folder)."""

_TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class Assignment:
    """One nbgrader assignment: its name and the sources of its notebooks."""

    name: str
    sources: tuple[Path, ...]


def assignments(root: Path | None = None) -> list[Assignment]:
    """The course's assignments: each of ``notebooks/assignments/source/*.md`` alone, and
    the build-it-yourself track's seven stages together."""
    found: list[Assignment] = []
    track: list[Path] = []
    for source in sources(root):
        if source.parent.parent.name == "from-scratch":
            track.append(source)
        else:
            found.append(Assignment(source.stem, (source,)))
    if track:
        found.append(Assignment(TRACK_ASSIGNMENT, tuple(track)))
    return found


def _tags(cell: Any) -> list[str]:
    tags: list[str] = cell.get("metadata", {}).get("tags", [])
    return tags


def _grade_id(cell: Any, position: int) -> str:
    task = re.search(r'check\("([\w.]+)"\)', cell.source)
    if task:
        return task.group(1).replace(".", "-")
    return f"cell-{position}"


def course_notebook(source: Path) -> Any:
    """The nbgrader source notebook of one source: nbgrader's cell metadata set,
    ``solution-only`` cells left out, and each check cell opened with a line that binds
    the checkers it calls to the kit's own (:func:`untampered`)."""
    notebook = solution_notebook(source)
    notebook.cells = [c for c in notebook.cells if SOLUTION_ONLY_TAG not in _tags(c)]
    for position, cell in enumerate(notebook.cells):
        nbgrader: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "locked": True,
                                    "solution": False, "grade": False,
                                    "grade_id": f"cell-{position}"}
        if cell.cell_type == "code" and list(solution_regions(cell.source)):
            nbgrader.update(locked=False, solution=True, grade_id=f"answer-{position}")
        elif CHECK_TAG in _tags(cell):
            nbgrader.update(grade=True, points=1, grade_id=_grade_id(cell, position))
            names = _checkers_called(cell.source)
            if names:
                quoted = ", ".join(repr(n) for n in names)
                cell.source = (f"__import__('dualarr.teach.classroom').teach.classroom"
                               f".untampered(globals(), {quoted})\n{cell.source}")
        cell.metadata["nbgrader"] = nbgrader
        cell.id = nbgrader["grade_id"]  # stable: a rebuilt course holds the same notebook
        cell.metadata["deletable"] = not nbgrader["locked"]
        cell.metadata["editable"] = not nbgrader["locked"]
    return notebook


def _checkers_called(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    called = {node.func.id for node in ast.walk(tree)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    return sorted(name for name in called if name in _checkers())


def build_course(course: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Write the course folder: ``nbgrader_config.py`` and the grading kernel (unless
    present) and ``source/<assignment>/<notebook>.ipynb`` for every assignment (or those
    ``names``); the notebooks written."""
    import nbformat

    course.mkdir(parents=True, exist_ok=True)
    for template in ("nbgrader_config.py",):
        if not (course / template).exists():
            shutil.copyfile(_TEMPLATES / template, course / template)
    kernel = course / "kernels" / "dualarr-grading"
    kernel.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "dualarr.teach.classroom.kernel", "-f",
                 "{connection_file}"],
        "display_name": "Python 3 (dualarr grading: memory-limited)",
        "language": "python",
    }  # fmt: skip
    (kernel / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
    wanted = set(names) if names is not None else None
    written: list[Path] = []
    for assignment in assignments():
        if wanted is not None and assignment.name not in wanted:
            continue
        folder = course / "source" / assignment.name
        folder.mkdir(parents=True, exist_ok=True)
        for source in assignment.sources:
            path = folder / f"{source.stem}.ipynb"
            nbformat.write(course_notebook(source), path)  # type: ignore[no-untyped-call]
            written.append(path)
    return written


# --------------------------------------------------------------------------------------
# Checkers as the kit ships them
# --------------------------------------------------------------------------------------


def _checkers() -> dict[str, tuple[Any, str, Any]]:
    """The functions a check cell may call: name -> (module, attribute, original)."""
    from .. import exercises
    from ..exercises import feedback
    from ..scratch import grading

    table: dict[str, tuple[Any, str, Any]] = {
        "check": (grading, "check", _ORIGINALS.get("check", grading.check)),
        "graded": (feedback, "graded", _ORIGINALS.get("graded", feedback.graded)),
    }
    for name in exercises.__all__:
        if name.startswith("check_"):
            table[name] = (exercises, name, _ORIGINALS.get(name, getattr(exercises, name)))
    return table


_ORIGINALS: dict[str, Any] = {}
_ORIGINALS.update({name: entry[2] for name, entry in _checkers().items()})


def untampered(scope: dict[str, Any], *names: str) -> None:
    """Bind ``names`` in ``scope`` (a notebook's globals) to the kit's checkers as they
    were when this module was first imported, and put them back in their modules: a
    submission that redefines or patches a checker grades with the real one.  (It
    defends against that, not against code that rewrites the checkers' internals; see
    the instructors' page on grading in isolation.)"""
    table = _checkers()
    for name in names:
        module, attribute, original = table[name]
        setattr(module, attribute, original)
        scope[name] = original
    from ..scratch import grading

    grading.run_task = _RUN_TASK
    grading.check = _ORIGINALS["check"]


def _snapshot_run_task() -> Any:
    from ..scratch import grading

    return grading.run_task


_RUN_TASK = _snapshot_run_task()
