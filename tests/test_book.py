"""The book works offline: built with warnings as errors, it loads nothing from the network.

The book is built once (a copy of ``book/`` and ``notebooks/`` in a temporary folder, so
the build never touches the working tree), then every page is parsed: no script, style
sheet, image or font comes from a network URL, the math is delimited for the MathJax
served from ``_static/mathjax``, the widgets of chapters 00, 03 and 05 appear as static
snapshots, and every chapter has its JupyterLab launch hint and copy buttons. The widget
snapshots themselves are checked without a build, on live widgets.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent

NETWORK = re.compile(r"^\s*(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//")
"""A URL that names a host: ``https://…``, ``http://…``, ``//…`` (protocol-relative)."""

CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
"""A URL in CSS: ``url(…)`` or ``@import "…"`` (group 1 or 2)."""

FONT_URL = re.compile(r"""(?:https?:)?//[^\s"'`)]+\.(?:woff2?|ttf|otf|eot)\b""")
"""A font file on the network, as a script or a style sheet would name it."""

LOADING_ATTRIBUTES = {"src", "srcset", "poster", "data", "href", "xlink:href", "action"}
"""Attributes whose URL a browser fetches (``href`` on any tag but ``<a>``)."""

WIDGET_PAGES = {
    "notebooks/00-quick-tour.html": "PipelineExplorer",
    "notebooks/03-why-naive-array-ad-fails.html": "ExplosionPlot",
    "notebooks/05-dual-arrays.html": "BackpropStepper",
}
"""Chapters that display a widget, and the widget each one shows."""


def build_book(where: Path) -> Path:
    """Build the book from copies of ``book/`` and ``notebooks/`` under ``where``, as CI
    does (warnings are errors); returns the folder of the HTML."""
    shutil.copytree(
        ROOT / "book",
        where / "book",
        ignore=shutil.ignore_patterns("_build", "notebooks", "__pycache__"),
    )
    shutil.copytree(
        ROOT / "notebooks", where / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints")
    )
    html = where / "html"
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(where / "book"), str(html)],
        capture_output=True,
        text=True,
        cwd=where,
        timeout=900,
    )
    assert done.returncode == 0, f"the book did not build:\n{done.stdout}\n{done.stderr}"
    return html


class Page(HTMLParser):
    """The URLs a page makes the browser fetch, and its inline scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.fetched: list[tuple[str, str, str]] = []  # (tag, attribute, URL)
        self.inline: list[tuple[str, str]] = []  # (script or style, its text)
        self._open: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in LOADING_ATTRIBUTES and not (tag == "a" and name == "href"):
                srcset = [part.split()[0] for part in value.split(",") if part.split()]
                urls = srcset if name == "srcset" else [value]
                self.fetched += [(tag, name, url) for url in urls]
            if name == "style":
                self.fetched += [(tag, "style", url) for url in _css_urls(value)]
        self._open = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag: str) -> None:
        self._open = None

    def handle_data(self, data: str) -> None:
        if self._open and data.strip():
            self.inline.append((self._open, data))


def _css_urls(text: str) -> list[str]:
    return [a or b for a, b in CSS_URL.findall(text)]


def _parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_book(tmp_path_factory.mktemp("book"))


@pytest.fixture(scope="module")
def pages(book: Path) -> dict[str, Page]:
    return {str(p.relative_to(book)): _parse(p) for p in sorted(book.rglob("*.html"))}


# -- the built book ------------------------------------------------------------------


@pytest.mark.slow
def test_no_page_fetches_anything_from_the_network(pages: dict[str, Page]) -> None:
    assert "index.html" in pages and len(pages) > 10
    offenders = []
    for name, page in pages.items():
        offenders += [f"{name}: <{t} {a}={u}>" for t, a, u in page.fetched if NETWORK.match(u)]
        for kind, text in page.inline:
            urls = _css_urls(text) if kind == "style" else re.findall(r"https?://\S+", text)
            offenders += [f"{name}: inline <{kind}> names {u}" for u in urls if NETWORK.match(u)]
    assert not offenders, "the book must work offline:\n" + "\n".join(offenders[:40])


@pytest.mark.slow
def test_no_style_sheet_or_script_fetches_a_font_or_style_from_the_network(book: Path) -> None:
    offenders = []
    for path in sorted((book / "_static").rglob("*")):
        if path.suffix == ".css":
            text = path.read_text(encoding="utf-8", errors="replace")
            urls = [u for u in _css_urls(text) if NETWORK.match(u)]
        elif path.suffix == ".js":
            text = path.read_text(encoding="utf-8", errors="replace")
            urls = FONT_URL.findall(text)
        else:
            continue
        offenders += [f"{path.relative_to(book)}: {u}" for u in urls]
    assert not offenders, "\n".join(offenders)


@pytest.mark.slow
def test_math_is_typeset_by_the_bundled_mathjax(book: Path, pages: dict[str, Page]) -> None:
    with_math = [n for n in pages if 'class="math notranslate nohighlight"' in _text(book, n)]
    assert "notebooks/03-why-naive-array-ad-fails.html" in with_math
    assert "notebooks/05-dual-arrays.html" in with_math
    for name in with_math:
        text = _text(book, name)
        inline = r'<span class="math notranslate nohighlight">\\\(.+?\\\)</span>'
        display = r'<div class="math notranslate nohighlight">\s*\\\[.+?\\\]</div>'
        assert re.search(inline, text) or re.search(display, text, re.DOTALL), name
        scripts = [u for t, a, u in pages[name].fetched if t == "script" and "mathjax" in u]
        assert scripts, f"{name} has math but loads no MathJax"
        for url in scripts:
            assert (book / name).parent.joinpath(urlsplit(url).path).is_file(), (name, url)
    fonts = book / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2"
    assert len(list(fonts.glob("MathJax_*.woff"))) > 10


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_widgets_appear_as_static_snapshots(book: Path, name: str) -> None:
    text = _text(book, name)
    widget = WIDGET_PAGES[name]
    assert f"class='dualarr-snapshot' data-widget='{widget}'" in text, (
        f"{name} shows no snapshot of its {widget}: re-execute the notebook"
    )
    assert re.search(r"<img [^>]*src='data:image/", text)  # its drawing or plot, inline
    assert "widget-state+json" not in text and "require.min.js" not in text


@pytest.mark.slow
def test_every_chapter_has_a_launch_hint_and_copy_buttons(
    book: Path, pages: dict[str, Page]
) -> None:
    chapters = [n for n in pages if n.startswith("notebooks/")]
    assert len(chapters) >= 11 + 4
    for name in chapters:
        text = _text(book, name)
        notebook = name.removeprefix("notebooks/").removesuffix(".html") + ".ipynb"
        hint = re.search(r'<div class="tip dualarr-launch admonition">(.*?)</div>', text, re.S)
        assert hint, f"{name} has no launch hint"
        hint_text = re.sub(r"<[^>]+>", "", hint.group(1))
        assert "bash .ci/lab" in hint_text and notebook in hint_text
        scripts = [urlsplit(u).path for t, _, u in pages[name].fetched if t == "script"]
        assert any(path.endswith("/copybutton.js") for path in scripts), name


def _text(book: Path, name: str) -> str:
    return (book / name).read_text(encoding="utf-8")


# -- the snapshots, on live widgets ----------------------------------------------------


def _snapshot(widget: Any) -> tuple[Page, str]:
    """``widget``'s snapshot, parsed; checks that it is self-contained and that the live
    view is still in the bundle (JupyterLab shows that one)."""
    bundle: dict[str, Any] = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    snapshot = bundle["text/html"]
    assert isinstance(snapshot, str)
    page = Page()
    page.feed(snapshot)
    assert not page.inline, "a snapshot has no script and no style element"
    assert "<script" not in snapshot and "<link" not in snapshot
    assert all(url.startswith("data:image/") for _, _, url in page.fetched), page.fetched
    assert "max-width:100%" in snapshot
    return page, snapshot


def _shown_text(widget: Any) -> list[str]:
    """The text every ``Output`` inside ``widget`` shows."""
    import ipywidgets

    if isinstance(widget, ipywidgets.Output):
        return [str(o["text"]) for o in widget.outputs if o.get("output_type") == "stream"]
    return [t for child in getattr(widget, "children", ()) for t in _shown_text(child)]


def _assert_shows_its_text(widget: Any, snapshot: str) -> None:
    texts = _shown_text(widget)
    assert texts
    for text in texts:
        assert html.escape(text) in snapshot, text


def test_explorer_snapshot_shows_every_tab() -> None:
    pytest.importorskip("ipywidgets")
    from dualarr.teach.examples import fig18
    from dualarr_widgets import PipelineExplorer
    from dualarr_widgets.explorer import TABS

    explorer = PipelineExplorer(fig18, np.arange(1.0, 6.0))
    page, snapshot = _snapshot(explorer)
    titles = re.findall(r"<summary[^>]*><b>([^<]+)</b></summary>", snapshot)
    assert titles == list(TABS)
    assert snapshot.count("<details open") == 1  # the selected tab
    _assert_shows_its_text(explorer, snapshot)
    assert html.escape(explorer.editor.value) in snapshot
    drawings = [u for _, _, u in page.fetched if u.startswith("data:image/svg+xml;base64,")]
    assert len(drawings) >= 6
    assert "dualarr-check-grad" in snapshot  # check_grad's table


def test_stepper_and_plot_snapshots_show_their_current_state() -> None:
    pytest.importorskip("ipywidgets")
    import dualarr as da
    from dualarr.teach.examples import fig18
    from dualarr_widgets import BackpropStepper, BotStepper, ExplosionPlot

    backprop = BackpropStepper(lambda x: da.sum(x * x), np.arange(3.0))
    backprop.next()
    page, snapshot = _snapshot(backprop)
    _assert_shows_its_text(backprop, snapshot)
    assert any(u.startswith("data:image/svg+xml;base64,") for _, _, u in page.fetched)

    bot = BotStepper(fig18, np.arange(1.0, 6.0))
    bot.next()
    _, snapshot = _snapshot(bot)
    _assert_shows_its_text(bot, snapshot)
    assert bot.rule.value in snapshot
    # every rule, not just the current one: a frame per step (the book has no kernel)
    assert f"data-frames='{bot.total}'" in snapshot
    assert all(f"step {k} of {bot.total}: " in snapshot for k in range(1, bot.total + 1))

    plot = ExplosionPlot(sizes=(4, 8))
    page, snapshot = _snapshot(plot)
    _assert_shows_its_text(plot, snapshot)
    assert any(u.startswith("data:image/png;base64,") for _, _, u in page.fetched)
