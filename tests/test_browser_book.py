"""The book in a real browser, offline: headless Debian Chromium through Playwright (the
system browser; Playwright never downloads one) reads the built book from a local HTTP
server, and every request to another host is refused and recorded.

For three chapters (00: the ``PipelineExplorer``, 03: the ``ExplosionPlot`` and math,
05: the ``BackpropStepper`` and math), on a desktop and on a phone-sized window, the test
checks what a learner sees: nothing was fetched from the network, the math is typeset by
the bundled MathJax (no raw ``\\(``), the widget snapshot is visible with its drawing
loaded, no element is wider than the column it sits in, and the launch hint and copy
buttons are there. Every stepper in the book (chapters 00, 01, 04, 05) holds all of its
steps, one frame each (read from the HTML), and in Chromium its links walk through every
frame with no kernel and no script. Screenshots go to
``build/browser-screenshots/book-*.png`` (or ``$DUALARR_SCREENSHOTS``).

Skipped, with the reason, only where Chromium or Playwright is missing (``.ci/setup.sh``
installs Debian's ``chromium`` when it runs as root).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
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
STEPPER_PAGES = {  # chapters that display a stepper (00: in its explorer's vectorised tab)
    "notebooks/00-quick-tour.html": "BotStepper",
    "notebooks/01-dual-numbers-and-sharing.html": "BackpropStepper",
    "notebooks/04-bulk-operation-transform.html": "BotStepper",
    "notebooks/05-dual-arrays.html": "BackpropStepper",
}
STEPPERS = ("BackpropStepper", "BotStepper")
SNAPSHOT = re.compile(r"<div class='dualarr-snapshot' data-widget='(\w+)'")
FILMSTRIP = re.compile(r"<div class='dualarr-filmstrip' data-frames='(\d+)'")
FRAME = re.compile(r"<section class='dualarr-frame' id='([\w-]+)' data-step='(\d+)'")

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
def book_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The book, built once for this module: the folder of its HTML."""
    return build_book(tmp_path_factory.mktemp("book"))


@pytest.fixture(scope="module")
def served_book(book_html: Path) -> Iterator[str]:
    """The built book on a local HTTP server: its base URL."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium fonts-liberation; "
            ".ci/setup.sh does it when run as root)"
        )
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    handler = functools.partial(_QuietHandler, directory=str(book_html))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextlib.contextmanager
def _offline_page(served_book: str, name: str, viewport: str) -> Iterator[Any]:
    """The book page ``name`` open in headless Chromium at ``viewport``, every request
    outside the served book refused; on leaving, no page error happened and nothing was
    asked of the network."""
    from playwright.sync_api import Route, sync_playwright

    refused: list[str] = []
    errors: list[str] = []

    def only_local(route: Route) -> None:
        if route.request.url.startswith(served_book + "/"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    width, height = VIEWPORTS[viewport]
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            context.route("**/*", only_local)
            page = context.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{served_book}/{name}", wait_until="load")
            yield page
            assert not errors, errors
        finally:
            browser.close()
    assert not refused, f"the page asked the network for: {refused}"


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
@pytest.mark.parametrize("name", sorted(WIDGET_PAGES))
def test_book_page_offline_in_chromium(served_book: str, name: str, viewport: str) -> None:
    from playwright.sync_api import expect

    shots = _screenshots()
    stem = f"book-{Path(name).stem[:2]}-{viewport}"
    with _offline_page(served_book, name, viewport) as page:
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


def _filmstrips(text: str) -> list[tuple[str, int, list[tuple[str, int]], str]]:
    """The steppers' filmstrips of a page: (the widget whose snapshot holds it, its
    ``data-frames``, its frames' (id, step), its HTML)."""
    starts = [(m.start(), m.group(1)) for m in SNAPSHOT.finditer(text)]
    found = []
    strips = list(FILMSTRIP.finditer(text))
    for strip in strips:
        close = "</section></div></div>"  # the last frame, the strip, the filmstrip
        end = text.find(close, strip.start())
        end = len(text) if end < 0 else end + len(close)
        owner = next((w for at, w in reversed(starts) if at < strip.start()), "")
        body = text[strip.start():end]
        frames = [(m.group(1), int(m.group(2))) for m in FRAME.finditer(body)]
        found.append((owner, int(strip.group(1)), frames, body))
    return found


def test_every_stepper_in_the_book_holds_all_its_frames(book_html: Path) -> None:
    """Issue 34 item 5: offline, a stepper shows every step, not only "step 1 of n"."""
    pages = {
        str(p.relative_to(book_html)): p.read_text(encoding="utf-8")
        for p in sorted((book_html / "notebooks").glob("*.html"))
    }
    for name in STEPPER_PAGES:
        assert name in pages, name
    for name, text in pages.items():
        shown = [w for w in SNAPSHOT.findall(text) if w in STEPPERS]
        strips = _filmstrips(text)
        assert len(strips) >= len(shown), f"{name}: a stepper without its frames: re-execute"
        if name in STEPPER_PAGES:
            assert strips, f"{name} shows no stepper's frames: re-execute the notebook"
        for owner, n, frames, body in strips:
            what = f"{name} ({owner})"
            assert n > 1, f"{what}: one frame"
            assert [step for _, step in frames] == list(range(1, n + 1)), what
            parts = re.split(r"<section class='dualarr-frame' ", body)[1:]
            for k, part in enumerate(parts, start=1):
                words = re.sub(r"<[^>]+>", "", part)
                assert f"step {k} of {n}: " in words, f"{what}: frame {k} has no heading"
                assert re.search(r"<img [^>]*src='data:image/svg\+xml;base64,", part), (
                    f"{what}: frame {k} has no drawing"
                )
                if k < n:  # a link to the next frame, on the page
                    assert f"href='#{frames[k][0]}'" in part, f"{what}: frame {k}"
            assert "<script" not in body and "onload=" not in body, what
            ids = [frame_id for frame_id, _ in frames]
            assert len(set(ids)) == len(ids), what


@pytest.mark.parametrize("name", sorted(STEPPER_PAGES))
def test_book_stepper_walks_through_its_frames_in_chromium(served_book: str, name: str) -> None:
    """Each frame of the page's first filmstrip, reached by its links, is the one in view
    in the strip, with its drawing loaded; nothing comes from the network."""
    from playwright.sync_api import expect

    shots = _screenshots()
    with _offline_page(served_book, name, "desktop") as page:
        if name.startswith("notebooks/00-"):  # the stepper is in a closed tab
            page.locator(".dualarr-snapshot summary", has_text="vectorised").first.click()
        strip = page.locator(".dualarr-filmstrip").first
        expect(strip).to_be_visible()
        n = int(strip.get_attribute("data-frames") or 0)
        frames = strip.locator("section.dualarr-frame")
        expect(frames).to_have_count(n)
        row = frames.first.locator("xpath=..")
        for k in range(1, n + 1):
            frame = frames.nth(k - 1)
            if k > 1:
                frames.nth(k - 2).get_by_role("link", name=f"step {k} ▶").click()
            page.wait_for_function(  # the strip has scrolled to frame k
                "([row, frame]) => Math.abs(frame.getBoundingClientRect().left"
                " - row.getBoundingClientRect().left) < 2",
                arg=[row.element_handle(), frame.element_handle()],
                timeout=10_000,
            )
            expect(frame).to_contain_text(f"step {k} of {n}")
            image = frame.locator("img").first
            expect(image).to_be_visible()
            assert image.evaluate("i => i.complete && i.naturalWidth > 0 && i.width > 0")
            page.screenshot(path=str(shots / f"book-{Path(name).stem[:2]}-frame-{k}.png"))
