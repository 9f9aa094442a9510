"""The documentation resolves inside the repository.

The rules the code implements live in the book's chapter ``book/rules.md``; docstrings
cite its numbered sections as ``book/rules.md §N``.  No file of the library, the widgets,
the notebooks, the book or the README may cite documents that are not in the repository
(a ``RULES.md``, a ``DESIGN.md``, anything under ``shared/`` or ``seeds/``), and every
section cited must exist.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "book" / "rules.md"

OUTSIDE = re.compile(r"RULES\.md|RULES §|DESIGN\.md|\bshared/|\bseeds/")
"""A citation of a document that lives outside the repository."""

CITATION = re.compile(r"book/rules\.md`*\s*§\s*(\d+(?:\.\d+)*)")
"""``book/rules.md §5.3`` (the form docstrings use); group 1 is the section number."""

BOOK_CITATION = re.compile(r"\{doc\}`rules`\s*§\s*(\d+(?:\.\d+)*)")
"""``{doc}`rules` §5.3`` (the form the book's own pages use)."""

HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\.?\s", re.M)
"""A numbered heading of the rules chapter: ``## 5. …`` or ``### 5.3 …``."""


def _documented_files() -> list[Path]:
    files: list[Path] = []
    files += sorted((ROOT / "dualarr").rglob("*.py"))
    files += sorted((ROOT / "widgets").rglob("*.py"))
    files += sorted((ROOT / "notebooks").rglob("*.md"))
    files += sorted(
        p for p in (ROOT / "book").rglob("*.md") if "_build" not in p.relative_to(ROOT).parts
    )
    files.append(ROOT / "README.md")
    return [p for p in files if ".ipynb_checkpoints" not in p.parts]


def _sections() -> set[str]:
    return set(HEADING.findall(RULES.read_text(encoding="utf-8")))


def test_the_rules_chapter_exists_and_is_in_the_book() -> None:
    assert RULES.is_file()
    index = (ROOT / "book" / "index.md").read_text(encoding="utf-8")
    toctree = re.findall(r"^rules$", index, flags=re.M)
    assert toctree, "book/index.md lists the rules chapter in a toctree"
    assert index.index("\nrules\n") < index.index("\napi\n"), "rules come before the API"
    assert {"1", "2", "3", "4", "5", "6"} <= _sections()


def test_no_citation_of_a_document_outside_the_repository() -> None:
    offenders = []
    for path in _documented_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "cite book/rules.md (or the README) instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "line",
    [
        "(``shared/RULES.md`` §1)",
        "(RULES §3)",
        "(``DESIGN.md`` §3)",
        "seeds ``transpose-issue.txt`` in shared/seeds/",
    ],
)
def test_the_check_recognises_outside_citations(line: str) -> None:
    assert OUTSIDE.search(line)


def test_every_cited_section_of_the_rules_exists() -> None:
    sections = _sections()
    cited: dict[str, list[str]] = {}
    for path in _documented_files():
        text = path.read_text(encoding="utf-8")
        for pattern in (CITATION, BOOK_CITATION):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                cited.setdefault(match.group(1), []).append(f"{path.relative_to(ROOT)}:{line}")
    library = [w for where in cited.values() for w in where if w.startswith("dualarr/")]
    assert library, "the library cites the rules chapter"
    missing = {section: where for section, where in cited.items() if section not in sections}
    assert not missing, f"sections cited but not in book/rules.md: {missing}"


MODULE_PATH = re.compile(r"`(dualarr/[\w/]+\.py)`")
"""A module cited by its path, as the book and the README cite them: ``dualarr/ad/reverse.py``."""


def test_every_cited_module_path_exists() -> None:
    stale = []
    for path in _documented_files():
        text = path.read_text(encoding="utf-8")
        for match in MODULE_PATH.finditer(text):
            if not (ROOT / match.group(1)).is_file():
                line = text.count("\n", 0, match.start()) + 1
                stale.append(f"{path.relative_to(ROOT)}:{line}: {match.group(1)}")
    assert not stale, "modules cited that do not exist:\n" + "\n".join(stale)


DOTTED_NAME = re.compile(r"`~?(dualarr(?:\.\w+)+)`")
"""A module or object cited by its dotted name: ``dualarr.ad.reverse.reverse``."""


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for known in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:known]))
        except ImportError:
            continue
        for attribute in parts[known:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_cited_dotted_name_resolves() -> None:
    stale = []
    for path in _documented_files():
        text = path.read_text(encoding="utf-8")
        for match in DOTTED_NAME.finditer(text):
            if not _resolves(match.group(1)):
                line = text.count("\n", 0, match.start()) + 1
                stale.append(f"{path.relative_to(ROOT)}:{line}: {match.group(1)}")
    assert not stale, "names cited that do not exist:\n" + "\n".join(stale)
