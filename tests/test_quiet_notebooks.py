"""Quiet pages: a chapter reads as a text, not as a test file.  In every chapter
(``notebooks/NN-*.ipynb``), every page of ``notebooks/from-scratch/`` and
``notebooks/reference/`` and every assignment and its solution, no code cell that the
book shows (one without the ``remove-cell`` tag) runs an ``assert`` statement: CI checks
live in cells tagged ``remove-cell`` (hidden in the book), which are also collapsed in
JupyterLab (``metadata.jupyter.source_hidden``) and still run by nbval.

An ``assert`` inside a function or class that a cell defines is part of that code, not
a check the cell runs, and is allowed; a cell that is not Python (a magic) is skipped."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PAGES = sorted(
    [
        *NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"),
        *(NOTEBOOKS / "from-scratch").glob("*.ipynb"),
        *(NOTEBOOKS / "reference").glob("*.ipynb"),
        *(NOTEBOOKS / "assignments").glob("[0-9]*.ipynb"),
    ]
)
NAMES = [str(p.relative_to(NOTEBOOKS)) for p in PAGES]

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def code_cells(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """The code cells of a notebook, with their positions among all its cells."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return [(k, c) for k, c in enumerate(notebook["cells"]) if c["cell_type"] == "code"]


def source_of(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def is_removed(cell: dict[str, Any]) -> bool:
    return "remove-cell" in cell.get("metadata", {}).get("tags", [])


def asserts_run_by(source: str) -> list[int]:
    """Lines of the ``assert`` statements a cell runs (outside the functions and classes
    it defines); none for a cell that is not Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[int] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEFINITIONS):
                continue
            if isinstance(child, ast.Assert):
                found.append(child.lineno)
            stack.append(child)
    return sorted(found)


def test_the_pages_are_found() -> None:
    assert len([n for n in NAMES if "/" not in n]) >= 11


def test_asserts_are_found_where_they_run() -> None:
    assert asserts_run_by("assert x\nfor i in y:\n    assert i\n") == [1, 3]
    assert asserts_run_by("def f(x):\n    assert x\n") == []
    assert asserts_run_by("%timeit f(x)\nassert x") == []


@pytest.mark.parametrize("path", PAGES, ids=NAMES)
def test_no_visible_cell_asserts(path: Path) -> None:
    offenders = [
        f"cell {k}, line {line}: {source_of(cell).splitlines()[line - 1].strip()}"
        for k, cell in code_cells(path)
        if not is_removed(cell)
        for line in asserts_run_by(source_of(cell))
    ]
    assert not offenders, (
        f"{path.name}: move these checks into a hidden cell (tags: [remove-cell], "
        "jupyter: source_hidden: true):\n" + "\n".join(offenders)
    )


@pytest.mark.parametrize("path", PAGES, ids=NAMES)
def test_removed_cells_are_collapsed_in_jupyterlab(path: Path) -> None:
    open_cells = [
        f"cell {k}: {source_of(cell).strip().splitlines()[0] if source_of(cell).strip() else ''}"
        for k, cell in code_cells(path)
        if is_removed(cell)
        and cell.get("metadata", {}).get("jupyter", {}).get("source_hidden") is not True
    ]
    assert not open_cells, (
        f"{path.name}: a remove-cell code cell needs `jupyter: source_hidden: true`:\n"
        + "\n".join(open_cells)
    )
