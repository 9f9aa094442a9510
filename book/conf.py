"""Sphinx configuration of the dualarr book (myst-nb + sphinx-book-theme, builds offline).

The chapters are the teaching notebooks of ``notebooks/``, copied into ``book/notebooks/``
(not tracked) at every build and rendered with the outputs stored in them: CI
re-executes every notebook with nbval, so those outputs are current. Build:
``bash .ci/book`` (warnings are errors).

The built book needs no network: MathJax is served from ``_static/mathjax``
(``sphinx-mathjax-offline``), and a widget's output is its static snapshot (the
``text/html`` that ``dualarr_widgets.snapshot`` puts beside the widget view), so no widget
manager script and no widget state is loaded. Each chapter opens with a hint on running it
in JupyterLab; code cells have copy buttons (``sphinx-copybutton``).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent
sys.path[:0] = [str(ROOT), str(ROOT / "widgets")]

CHAPTERS = BOOK / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _copy_notebook(source: str, target: str) -> None:
    """Copy a notebook without its saved widget state: the book shows each widget's
    static snapshot, so the state (and the scripts that would render it) is not needed."""
    notebook = json.loads(Path(source).read_text(encoding="utf-8"))
    notebook.get("metadata", {}).pop("widgets", None)
    Path(target).write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")


def _copy(source: str, target: str) -> None:
    if source.endswith(".ipynb"):
        _copy_notebook(source, target)
    else:
        shutil.copy2(source, target)


shutil.rmtree(CHAPTERS, ignore_errors=True)
shutil.copytree(
    ROOT / "notebooks",
    CHAPTERS,
    ignore=shutil.ignore_patterns(
        "md", "*.md", "*-solution.ipynb", "solutions", "source", ".ipynb_checkpoints"
    ),
    copy_function=_copy,
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
    "sphinx-mathjax-offline",  # MathJax 3 in _static/mathjax (the module's name has dashes)
    "sphinx_copybutton",
]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

mathjax_path = "mathjax/tex-chtml.js"  # under _static: copied there by sphinx-mathjax-offline

exclude_patterns = [
    "_build",
    "README.md",
]
nb_execution_mode = "off"
nb_execution_raise_on_error = True
nb_merge_streams = True
# A widget output is shown by its static snapshot (text/html), never by the widget view,
# which would need a widget manager and its scripts from a CDN.
nb_mime_priority_overrides = [
    (builder, WIDGET_VIEW, None) for builder in ("html", "dirhtml", "singlehtml")
]
nb_ipywidgets_js: dict[str, dict[str, str]] = {}

# Copy buttons on code: code cells and code blocks, not the outputs of cells.
copybutton_selector = "div:not(.output) > div.highlight > pre"

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"members": True, "undoc-members": False}

html_theme = "sphinx_book_theme"
html_title = "dualarr"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": True,
}


def _launch_hint(notebook: str) -> nodes.admonition:
    """How to open ``notebook`` (a path under ``notebooks/``) in JupyterLab."""
    text = nodes.paragraph()
    text += [
        nodes.Text("From a clone of the repository, "),
        nodes.literal(text="bash .ci/lab"),
        nodes.Text(" installs what is needed and starts JupyterLab on "),
        nodes.literal(text="notebooks/"),
        nodes.Text("; open "),
        nodes.literal(text=notebook),
        nodes.Text(
            " in its file browser and run the cells: the widgets, shown here as static "
            "copies, are live there, and every value can be changed."
        ),
    ]
    hint = nodes.admonition(classes=["tip", "dualarr-launch"])
    hint += nodes.title(text="Run this chapter in JupyterLab")
    hint += text
    return hint


def add_launch_hint(app: Sphinx, doctree: nodes.document) -> None:
    """Put the launch hint under the title of every page made from a notebook."""
    docname: str = app.env.docname
    if not docname.startswith("notebooks/"):
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        return
    notebook = docname.removeprefix("notebooks/") + ".ipynb"
    title_at = next(k for k, child in enumerate(section) if isinstance(child, nodes.title))
    section.insert(title_at + 1, _launch_hint(notebook))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", add_launch_hint)
    return {"parallel_read_safe": True}
