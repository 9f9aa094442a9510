"""The track's notebooks: one source per stage, the student and solution notebooks
generated from it, and :func:`stage`, which loads a stage's saved definitions.

Each stage is authored once, in ``notebooks/from-scratch/source/<stem>.md`` (MyST, read
with jupytext).  A task's solution sits between ``### BEGIN SOLUTION`` and ``### END
SOLUTION`` (nbgrader's markers); :func:`student_cell` replaces each such region by
``raise NotImplementedError()``, as nbgrader does, for the student notebook
``notebooks/from-scratch/<stem>.ipynb``; the solution notebook
``notebooks/from-scratch/solutions/<stem>.ipynb`` keeps the solutions, without the
markers (only the source holds a solution region).

Code cells tagged ``export`` hold what later stages use (the stage's imports and its
functions).  ``stage("a")`` runs those cells of the learner's saved notebook (or, with
``"reference"``, of the solution notebook) as a module: the one-line switch by which a
learner starts anywhere, or goes on when stuck.  Loading a reference loads references
all the way down.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .grading import STAGES

__all__ = [
    "EXPORT_TAG",
    "REPOSITORY_ROOT",
    "StageLoadError",
    "exported_code",
    "generate",
    "learner_lines",
    "references",
    "scratch_dir",
    "solution_regions",
    "stage",
    "student_cell",
]

EXPORT_TAG = "export"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
Which = Literal["mine", "reference"]

REPOSITORY_ROOT = Path(__file__).resolve().parents[3]
"""The root of the dualarr repository (its ``notebooks/`` hold the from-scratch track)."""


def scratch_dir() -> Path:
    """Where the learner's notebooks are: ``$DUALARR_SCRATCH_DIR`` if set; else the
    working directory when it holds a notebook of the track (a kernel runs in its
    notebook's folder: a student's folder of saved work, or ``solutions/``, whose
    notebooks then load each other); else ``notebooks/from-scratch`` of this repository."""
    chosen = os.environ.get("DUALARR_SCRATCH_DIR")
    if chosen:
        return Path(chosen)
    here = Path.cwd()
    if any((here / f"{stem}.ipynb").exists() for stem in STAGES.values()):
        return here
    return REPOSITORY_ROOT / "notebooks" / "from-scratch"


def notebook_path(name: str, which: Which, folder: Path | None = None) -> Path:
    base = scratch_dir() if folder is None else folder
    if which == "reference":
        base = REPOSITORY_ROOT / "notebooks" / "from-scratch" / "solutions"
    return base / f"{STAGES[name]}.ipynb"


class StageLoadError(Exception):
    """A stage's saved notebook could not be loaded (missing, or its code fails)."""


_reference_only: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "scratch_reference_only", default=False
)
_loaded: dict[tuple[str, str, float], types.ModuleType] = {}


def stage(name: str, which: Which = "mine", *, folder: Path | None = None) -> types.ModuleType:
    """Stage ``name``'s definitions as a module: the learner's own (``"mine"``: the
    ``export`` cells of their saved notebook) or the reference solution
    (``"reference"``)."""
    if name not in STAGES:
        raise StageLoadError(f"no stage {name!r}: the stages are {', '.join(STAGES)}")
    if which not in ("mine", "reference"):
        raise StageLoadError(f"stage({name!r}, {which!r}): say 'mine' or 'reference'")
    if _reference_only.get():
        which = "reference"
    path = notebook_path(name, which, folder)
    if not path.exists():
        raise StageLoadError(f"stage {name}: no notebook {path}")
    key = (name, str(path), path.stat().st_mtime)
    if key in _loaded:
        return _loaded[key]
    module = types.ModuleType(f"scratch_{name}_{which}", f"stage {name} ({which}) from {path}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module  # dataclasses look their module up
    token = _reference_only.set(which == "reference")
    try:
        code = compile(exported_code(path), f"<stage {name} ({which})>", "exec")
        exec(code, module.__dict__)
    except Exception as error:
        raise StageLoadError(
            f"stage {name} ({which}): {type(error).__name__}: {error} (in {path.name}); "
            f"fix it, or use stage({name!r}, 'reference')"
        ) from error
    finally:
        _reference_only.reset(token)
    _loaded[key] = module
    if which == "mine":
        print(f"stage {name}: your {path.name} "
              f"(not finished? write stage({name!r}, 'reference'))")
    return module


_ABSENT = object()


@contextmanager
def references(functions: Sequence[Any], names: Sequence[str]) -> Iterator[None]:
    """Bind ``names`` (stages ``"a"``, ``"b"``, ...) to the reference stages in the globals
    of the learner's ``functions`` while a check runs, so that a task is graded on its own
    (the learner's bindings are restored afterwards)."""
    scopes = {id(g): g for f in functions
              if isinstance(g := getattr(f, "__globals__", None), dict)}
    saved: list[tuple[dict[str, Any], str, Any]] = []
    try:
        for scope in scopes.values():
            for name in names:
                saved.append((scope, name, scope.get(name, _ABSENT)))
                scope[name] = stage(name, "reference")
        yield
    finally:
        for scope, name, value in reversed(saved):
            if value is _ABSENT:
                scope.pop(name, None)
            else:
                scope[name] = value


def _cells(path: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else str(source)


def exported_code(path: Path) -> str:
    """The code of the notebook's ``export`` cells, in order (IPython magics dropped)."""
    parts = []
    for cell in _cells(path):
        if cell["cell_type"] == "code" and EXPORT_TAG in cell.get("metadata", {}).get("tags", []):
            lines = [ln for ln in _source(cell).splitlines() if not ln.lstrip().startswith("%")]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------------------
# Solution regions and the student notebook
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    """One solution region of a code cell: its indentation and lines (markers excluded)."""

    indent: str
    lines: tuple[str, ...]


def solution_regions(source: str) -> Iterator[Region]:
    """The solution regions of one cell's source."""
    inside: list[str] | None = None
    indent = ""
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside is not None:
                raise ValueError("a solution region inside another")
            inside, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if inside is None:
                raise ValueError(f"{END} without {BEGIN}")
            yield Region(indent, tuple(inside))
            inside = None
        elif inside is not None:
            inside.append(line)
    if inside is not None:
        raise ValueError(f"{BEGIN} without {END}")


def student_cell(source: str) -> str:
    """``source`` with each solution region replaced by nbgrader's stub."""
    out: list[str] = []
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + stub for stub in STUB)
        elif stripped == END:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def learner_lines(source_path: Path) -> int:
    """The lines a learner writes in a stage: non-blank, non-comment lines of its
    solution regions."""
    count = 0
    for cell in _read_source(source_path).cells:
        if cell.cell_type == "code":
            for region in solution_regions(cell.source):
                count += sum(
                    1 for ln in region.lines if ln.strip() and not ln.strip().startswith("#")
                )
    return count


def _read_source(path: Path) -> Any:
    import jupytext

    return jupytext.reads(path.read_text(encoding="utf-8"), fmt="md:myst")


def _finish(notebook: Any) -> Any:
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["kernelspec"] = {
        "display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3",
    }  # fmt: skip
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


SOLUTION_ONLY_TAG = "solution-only"
"""A cell that only the solution notebook holds (an explanation of the answer)."""

TRACKS = ("from-scratch", "assignments")
"""The folders of ``notebooks/`` authored as one source per notebook (``source/*.md``)."""


def student_notebook(solution: Any) -> Any:
    """The student version of a solution notebook: solution regions replaced by
    nbgrader's stub, ``solution-only`` cells dropped."""
    import copy

    student = copy.deepcopy(solution)
    student.cells = [
        c for c in student.cells if SOLUTION_ONLY_TAG not in c.get("metadata", {}).get("tags", [])
    ]
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.source = student_cell(cell.source)
    return student


def solution_notebook(source_path: Path) -> Any:
    """The solution notebook of one source (no outputs, no jupytext pairing)."""
    return _finish(_read_source(source_path))


def generated(source_path: Path) -> tuple[str, str]:
    """The student and the solution notebook of one source, as JSON text."""
    import nbformat

    solution = solution_notebook(source_path)
    student = student_notebook(solution)
    for cell in solution.cells:  # the markers stay in the source (nbgrader's course reads it)
        if cell.cell_type == "code":
            cell.source = without_markers(cell.source)
    write = nbformat.writes
    return (
        write(student) + "\n",  # type: ignore[no-untyped-call]
        write(solution) + "\n",  # type: ignore[no-untyped-call]
    )


def without_markers(source: str) -> str:
    """``source`` with its solution regions' marker lines removed, the code kept."""
    return "\n".join(ln for ln in source.splitlines() if ln.strip() not in (BEGIN, END))


def sources(root: Path | None = None) -> list[Path]:
    """Every source of the tracks authored once (``notebooks/<track>/source/*.md``)."""
    base = (root or REPOSITORY_ROOT) / "notebooks"
    return [p for track in TRACKS for p in sorted((base / track / "source").glob("*.md"))]


def generate(root: Path | None = None, *, check_only: bool = False) -> list[Path]:
    """Write (or, with ``check_only``, compare) the student and solution notebook of every
    source; the paths that were (or would be) rewritten."""
    changed: list[Path] = []
    for source in sources(root):
        base, stem = source.parent.parent, source.stem
        student, solution = generated(source)
        for path, text in ((base / f"{stem}.ipynb", student),
                           (base / "solutions" / f"{stem}.ipynb", solution)):
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if _normalised(current) != _normalised(text):
                changed.append(path)
                if not check_only:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(text, encoding="utf-8")
    return changed


def _normalised(text: str | None) -> Any:
    """A notebook's cells without outputs or ids (executing one must not make it stale)."""
    if text is None:
        return None
    cells = json.loads(text)["cells"]
    return [(c["cell_type"], _source(c), c.get("metadata", {}).get("tags", [])) for c in cells]


