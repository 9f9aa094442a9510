"""The book in a real browser, offline: headless Debian Chromium through Playwright (the
system browser; Playwright never downloads one) reads the built book from a local HTTP
server, and every request to another host is refused and recorded.

For three chapters (00: the ``PipelineExplorer``, 03: the ``ExplosionPlot`` and math,
05: the ``BackpropStepper`` and math), on a desktop and on a phone-sized window, the test
checks what a learner sees: nothing was fetched from the network, the math is typeset by
the bundled MathJax (no raw ``\\(``), the widget snapshot is visible with its drawing
loaded, no element is wider than the column it sits in, and the launch hint and copy
buttons are there. Screenshots go to ``build/browser-screenshots/book-*.png`` (or
``$DUALARR_SCREENSHOTS``).

Skipped, with the reason, only where Chromium or Playwright is missing (``.ci/setup.sh``
installs Debian's ``chromium`` when it runs as root).
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_book import WIDGET_PAGES, build_book

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORTS = {"desktop": (1366, 900), "phone": (412, 900)}
MATH_PAGES = {"notebooks/03-why-naive-array-ad-fails.html", "notebooks/05-dual-arrays.html"}

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OVERFLOWING = """
(article) => {
  const column = article.getBoundingClientRect();
  const found = [];
  const selector = 'img, svg, pre, table, mjx-container, .dualarr-snapshot, .cell, .admonition';
  for (const element of article.querySelectorAll(selector)) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;  // not shown (a closed tab)
    let clip = null;  // the nearest ancestor that scrolls or clips it, inside the column
    for (let a = element.parentElement; a && a !== article; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { clip = a; break; }
    }
    const seen = clip ? clip.getBoundingClientRect() : box;
    const name = element.tagName.toLowerCase() + '.' + [...element.classList].join('.');
    if (seen.left < column.left - 1 || seen.right > column.right + 1) {
      found.push(`${name}: ${Math.round(seen.left)}..${Math.round(seen.right)} outside the`
                 + ` column ${Math.round(column.left)}..${Math.round(column.right)}`);
    }
    const parent = element.parentElement.getBoundingClientRect();
    if (!clip && box.width > parent.width + 1) {
      found.push(`${name}: ${Math.round(box.width)} px wide in a`
                 + ` ${Math.round(parent.width)} px parent`);
    }
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1) {
    found.push(`the page scrolls sideways: ${page.scrollWidth} > ${page.clientWidth}`);
  }
  return found;
}
"""

MATH_STATE = """
() => ({
  math: document.querySelectorAll('article .math').length,
  typeset: document.querySelectorAll('article .math mjx-container').length,
  raw: [...document.querySelectorAll('article .math')]
         .filter(m => !m.querySelector('mjx-container')).map(m => m.textContent).slice(0, 5),
})
"""


def _screenshots() -> Path:
    where = Path(os.environ.get("DUALARR_SCREENSHOTS", ROOT / "build" / "browser-screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


def _scroll_to(page: Any, element: Any) -> None:
    """Scroll so that ``element`` starts just below the book's sticky header."""
    element.evaluate(
        "e => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 80)"
    )


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""


@pytest.fixture(scope="module")
def served_book(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The built book on a local HTTP server: its base URL."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium fonts-liberation; "
            ".ci/setup.sh does it when run as root)"
        )
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    html = build_book(tmp_path_factory.mktemp("book"))
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_book_page_offline_in_chromium(served_book: str, name: str, viewport: str) -> None:
    from playwright.sync_api import Route, expect, sync_playwright

    shots = _screenshots()
    stem = f"book-{Path(name).stem[:2]}-{viewport}"
    refused: list[str] = []

    def only_local(route: Route) -> None:
        url = route.request.url
        if url.startswith(served_book + "/"):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    width, height = VIEWPORTS[viewport]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            context.route("**/*", only_local)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{served_book}/{name}", wait_until="load")
            article = page.locator("article.bd-article").first
            expect(article).to_be_visible()

            if name in MATH_PAGES:
                page.wait_for_function(
                    "() => window.MathJax?.startup?.promise"
                    " && document.querySelector('article .math mjx-container')",
                    timeout=60_000,
                )
                page.evaluate("() => MathJax.startup.promise")
                state = page.evaluate(MATH_STATE)
                assert state["math"] > 0 and state["typeset"] == state["math"], state
                assert not state["raw"], f"math left untypeset: {state['raw']}"
                _scroll_to(page, page.locator("article .math").first)
                page.screenshot(path=str(shots / f"{stem}-math.png"))
            page.evaluate("() => document.fonts.ready")

            hint = page.locator(".dualarr-launch").first
            expect(hint).to_be_visible()
            expect(hint).to_contain_text("bash .ci/lab")
            expect(page.locator(".cell_input button.copybtn").first).to_be_attached()
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(shots / f"{stem}-top.png"))

            snapshot = page.locator(f".dualarr-snapshot[data-widget='{WIDGET_PAGES[name]}']")
            expect(snapshot).to_have_count(1)
            _scroll_to(page, snapshot)
            expect(snapshot).to_be_visible()
            box = snapshot.bounding_box()
            assert box is not None and box["height"] > 50 and box["width"] > 0, box
            image = snapshot.locator("img").first
            expect(image).to_be_visible()
            loaded = image.evaluate("i => i.complete && i.naturalWidth > 0 && i.width > 0")
            assert loaded, "the snapshot's drawing did not load"
            page.screenshot(path=str(shots / f"{stem}-snapshot.png"))

            overflowing = article.evaluate(OVERFLOWING)
            assert not overflowing, "\n".join(overflowing[:20])
            assert not errors, errors
        finally:
            browser.close()
    assert not refused, f"the page asked the network for: {refused}"
