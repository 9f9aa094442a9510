"""The notebooks as files: each ``.ipynb`` is paired with its MyST ``.md`` in the ``md/``
folder beside it (jupytext, ``formats = "ipynb,md//md:myst"``) and holds the same cells,
every code cell was executed (nbval compares the stored outputs), each has one title,
assignments have solutions, and the README lists them in order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jupytext
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
# generated from one source each: tests/test_scratch_track.py, tests/test_assignment_sources.py
GENERATED = (NOTEBOOKS / "from-scratch", NOTEBOOKS / "assignments")
IPYNB = sorted(
    p
    for p in NOTEBOOKS.rglob("*.ipynb")
    if ".ipynb_checkpoints" not in p.parts and not any(p.is_relative_to(g) for g in GENERATED)
)
NAMES = [str(p.relative_to(NOTEBOOKS)) for p in IPYNB]


def _cells(notebook: Any) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in notebook.cells]


def test_the_teaching_notebooks_are_all_there() -> None:
    chapters = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    assert [name[:2] for name in chapters] == [f"{k:02d}" for k in range(14)]
    assignments = NOTEBOOKS / "assignments"
    students = sorted(p.name for p in assignments.glob("[0-9]*.ipynb"))
    assert len(students) == 9
    assert students == sorted(p.name for p in (assignments / "solutions").glob("*.ipynb"))


@pytest.mark.parametrize("path", IPYNB, ids=NAMES)
def test_paired_with_myst_and_the_same_cells(path: Path) -> None:
    markdown = path.parent / "md" / path.with_suffix(".md").name
    assert markdown.exists(), f"{path.name} has no paired md/{markdown.name} (jupytext --sync)"
    stored = jupytext.read(path)
    source = jupytext.read(markdown)
    assert _cells(stored) == _cells(source), (
        f"{path.name} and {markdown.name} differ: run `jupytext --sync` and re-execute"
    )


@pytest.mark.parametrize("path", IPYNB, ids=NAMES)
def test_executed_in_order_with_one_title(path: Path) -> None:
    notebook = json.loads(path.read_text())
    counts = [c.get("execution_count") for c in notebook["cells"] if c["cell_type"] == "code"]
    assert counts and all(isinstance(n, int) for n in counts), "a code cell was never run"
    assert counts == list(range(1, len(counts) + 1)), "not executed top to bottom in one go"
    titles = [
        line
        for c in notebook["cells"]
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if re.match(r"# \S", line)
    ]
    assert len(titles) == 1, titles


def test_the_readme_lists_the_notebooks_in_teaching_order() -> None:
    readme = (ROOT / "README.md").read_text()
    linked = re.findall(r"\]\(notebooks/(\d\d-[\w-]+\.ipynb)\)", readme)
    assert linked == sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]-*.ipynb"))
    assert "notebooks/assignments/README.md" in readme
    # the from-scratch track, in its own order, and every page of it and of the reference
    track = re.findall(r"\]\(notebooks/from-scratch/([a-g]-[\w-]+\.ipynb)\)", readme)
    assert track == sorted(p.name for p in (NOTEBOOKS / "from-scratch").glob("[a-g]-*.ipynb"))
    assert len(track) == 7
    for page in (NOTEBOOKS / "reference").glob("*.ipynb"):
        assert f"](notebooks/reference/{page.name})" in readme


def test_the_book_lists_every_page() -> None:
    """Every chapter, from-scratch page and reference page is in the book's contents."""
    index = (ROOT / "book" / "index.md").read_text()
    for folder in ("", "from-scratch/", "reference/"):
        for page in (NOTEBOOKS / folder).glob("*.ipynb"):
            if folder or re.match(r"\d\d-", page.name):
                assert f"notebooks/{folder}{page.stem}\n" in index, page
