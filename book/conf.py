"""Sphinx configuration of the dualarr book (myst-nb + sphinx-book-theme, builds offline).

The chapters are the teaching notebooks of ``notebooks/``, copied into ``book/notebooks/``
(not tracked) at every build and rendered with the outputs stored in them: CI
re-executes every notebook with nbval, so those outputs are current. Build:
``bash .ci/book`` (warnings are errors).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "widgets")]

CHAPTERS = Path(__file__).resolve().parent / "notebooks"
shutil.rmtree(CHAPTERS, ignore_errors=True)
shutil.copytree(
    ROOT / "notebooks",
    CHAPTERS,
    ignore=shutil.ignore_patterns("*.md", "*-solution.ipynb", ".ipynb_checkpoints"),
)

project = "dualarr"
author = "the dualarr developers"
copyright = "2026, the dualarr developers"
release = "0.1.0"

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

exclude_patterns = [
    "_build",
    "README.md",
]
nb_execution_mode = "off"
nb_execution_raise_on_error = True
nb_merge_streams = True

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "sphinx_book_theme"
html_title = "dualarr"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
}
