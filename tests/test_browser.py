"""The widgets in a real browser: JupyterLab on 127.0.0.1 with a token, driven by headless
Debian Chromium through Playwright (the system browser; Playwright never downloads one).

The quick-tour notebook ends in a ``PipelineExplorer``.  The first test runs every cell,
clicks through every tab of the explorer and the bot stepper's buttons, and checks that
each tab shows its stage, that the drawings arrive as SVG images and that the stepper
names its rule.  The second runs a notebook written for the test that displays each
widget (``PipelineExplorer``, ``BotStepper``, ``BackpropStepper``, ``ExplosionPlot``) and
checks what a learner sees: no element wider than its container (a drawing is scaled to
fit, at a wide and at a narrow window), each widget's controls and drawing within one
screen, the explorer's error text for a bad program, and the *run* and *measure* buttons
disabled while they work (with a progress bar).  A failed edit of either explorer must
leave the last good program's tabs (text, drawings, the bot stepper, the SymPy check)
visible, greyed under a "stale" banner beside the error, until an edit runs again.
JupyterLab starts as on a first start (its own user settings and workspaces) with the
kit's configuration (``.ci/jupyter``, as ``.ci/lab`` uses it): a test checks that no news
pop-up covers the notebook.  Screenshots go to
``build/browser-screenshots/`` (or ``$DUALARR_SCREENSHOTS``), kept as CI artefacts.

Skipped, with the reason, only where Chromium or Playwright is missing (``.ci/setup.sh``
installs Debian's ``chromium`` when it runs as root).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lab_server import CHROMIUM, CHROMIUM_ARGS, jupyter_lab, screenshots

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "00-quick-tour.ipynb"
WIDGETS = "widgets.ipynb"  # written by the fixture: one widget per cell
WIDGET_CELLS = [
    """import time
import numpy as np
import dualarr as da
from dualarr.teach.examples import fig18
from dualarr_widgets import BackpropStepper, BotStepper, ExplosionPlot, PipelineExplorer

x = np.arange(1.0, 6.0)
w, b = np.linspace(-0.5, 0.5, 15).reshape(5, 3), np.linspace(0.0, 0.3, 3)
batch = np.linspace(-1.0, 1.0, 20).reshape(4, 5)


def mlp(w, b, x):  # a program whose drawings are wide
    hidden = da.tanh(da.matmul(x, w) + da.replicate(4, b))
    return da.mean(da.logsumexp(hidden, axis=1))


def slow(n):  # the plot's arguments, slow enough to see the busy state
    time.sleep(0.5)
    return (np.arange(1.0, n + 1.0),)""",
    "PipelineExplorer(mlp, w, b, batch)",
    "BotStepper(fig18, x)",
    "BackpropStepper(mlp, w, b, batch)",
    "ExplosionPlot(fig18, sizes=(4, 8), arguments=slow)",
]
BAD_PROGRAM = "def bad(w, b, x):\n    return da.sum(w + x)\n"
GOOD_PROGRAM = "def good(w, b, x):\n    return da.sum(da.tanh(da.matmul(x, w)))\n"
BROKEN_TOUR = "def broken(x):\n    return da.sum(x *\n"  # a syntax error, in notebook 00
STALE = "showing the last program that worked"  # the explorer's banner after a failed edit
NEWS = "official Jupyter news"  # JupyterLab's question on a first start, unless configured
SCREEN = 900  # px: a widget's controls and drawing fit on one screen
OVERFLOWING = """(root) => {
  // Elements wider than their parent (clipped or spilling), outside scrolling boxes.
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const name = (el) => el.tagName.toLowerCase()
    + (typeof el.className === 'string' && el.className
      ? '.' + el.className.trim().split(/\\s+/).slice(0, 3).join('.') : '');
  const bad = [];
  for (const el of [root, ...root.querySelectorAll('*')]) {
    const parent = el.parentElement;
    const r = el.getBoundingClientRect();
    if (!parent || r.width === 0 || r.height === 0) continue;
    let panned = false;
    for (let a = parent; a && a !== root.parentElement; a = a.parentElement) {
      if (scrolls(a)) { panned = true; break; }
    }
    if (panned && el !== root) continue;
    const p = parent.getBoundingClientRect();
    if (r.right > p.right + 1 || r.left < p.left - 1) {
      const px = (box) => `${Math.round(box.width)} px`;
      bad.push(`${name(el)} (${px(r)}) in ${name(parent)} (${px(p)})`);
    }
  }
  return bad;
}"""
DRAWINGS_FIT = """(root) => [...root.querySelectorAll('.dualarr-drawing img')]
  .filter((img) => img.getBoundingClientRect().width > 0)
  .map((img) => [img.getBoundingClientRect().width, img.parentElement.clientWidth,
                 img.naturalWidth])"""
WATCH_DISABLED = """(button) => {
  window.__sawDisabled = false;
  new MutationObserver(() => { if (button.disabled) window.__sawDisabled = true; })
    .observe(button, {attributes: true});
}"""
TABS = ("source", "vectorised", "forward", "delta", "shared", "gradient", "python", "check")
DRAWN = ("source", "vectorised", "forward", "delta", "shared", "gradient")  # with a graph

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on a copy of the notebook: ``(base url, token)``."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(
            "Chromium is not installed (Debian: apt-get install chromium fonts-liberation; "
            ".ci/setup.sh does it when run as root)"
        )
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / NOTEBOOK, root / NOTEBOOK)
    cells: list[dict[str, Any]] = [
        {"cell_type": "code", "metadata": {}, "source": cell, "outputs": [],
         "execution_count": None}
        for cell in WIDGET_CELLS
    ]
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    notebook = {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4,
                "nbformat_minor": 5}
    (root / WIDGETS).write_text(json.dumps(notebook), encoding="utf-8")
    # A first start: user settings and workspaces of its own (answers given to an earlier
    # JupyterLab do not count), and the kit's configuration first, as .ci/lab uses it.
    with jupyter_lab(root, tmp_path_factory.mktemp("lab-home")) as (base, token):
        yield base, token


def _visible_panel(explorer: Any) -> Any:
    """The explorer's tab panel on show."""
    return explorer.locator(":scope > .widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")


GREYED = """(root) => {
  const box = root.querySelector(':scope > .widget-tab > .widget-tab-contents');
  const style = getComputedStyle(box);
  return [parseFloat(style.opacity), style.filter];
}"""


def _readout(panel: Any) -> str:
    """The bot stepper's slider value, as shown."""
    return str(panel.locator(".dualarr-bot-stepper .widget-readout").first.inner_text()).strip()


def _stale_tabs(page: Any, root: Any, kind: str, name: str) -> None:
    """After a failed edit of the explorer ``root``: the error (``kind``) beside a stale
    banner; every tab still shows the last good program (its text, its drawing, the bot
    stepper that still steps, the SymPy check), greyed; screenshots ``{name}-stale-*``."""
    from playwright.sync_api import expect

    shots = screenshots()
    error = root.locator(".widget-html", has_text=kind).first
    banner = root.locator(".dualarr-stale-banner")
    expect(error).to_be_visible(timeout=60_000)
    expect(banner).to_be_visible(timeout=60_000)
    expect(banner).to_contain_text(STALE)
    expect(root).to_have_class(re.compile(r"\bdualarr-stale\b"))
    said, marked = error.bounding_box(), banner.bounding_box()
    gap = marked["y"] - (said["y"] + said["height"])
    assert -1 <= gap <= 60, f"{name}: the stale banner is {gap:.0f} px from the error"
    opacity, grey = root.evaluate(GREYED)
    assert opacity < 0.8 and "grayscale" in grey, f"{name}: tabs not greyed ({opacity}, {grey})"
    tab = root.locator(".widget-tab").first
    for k, title in enumerate(TABS):
        tab.locator(".lm-TabBar-tab", has_text=title).first.click()
        panel = _visible_panel(tab)
        expect(panel.locator(".jp-OutputArea-output").first).to_be_visible(timeout=30_000)
        text = panel.inner_text()
        assert text.strip() and "no program to show" not in text, f"{name}: {title} is empty"
        assert kind not in text, f"{name}: the {title} tab shows the error, not its stage"
        if title in DRAWN:
            svg = panel.locator('img[src^="data:image/svg+xml"]').first
            expect(svg).to_be_visible(timeout=30_000)
            assert svg.evaluate("(img) => img.naturalWidth > 0"), f"{name}: {title} drawing"
        if title == "vectorised":  # the bot stepper still steps through its rules
            before = int(_readout(panel))
            forward = panel.get_by_role("button", name="next ▶")
            back = panel.get_by_role("button", name="◀ prev")
            if forward.is_enabled() or back.is_enabled():
                ahead = forward.is_enabled()
                (forward if ahead else back).click()
                after = before + 1 if ahead else before - 1
                readout = panel.locator(".dualarr-bot-stepper .widget-readout").first
                expect(readout).to_have_text(str(after), timeout=30_000)
            else:  # a program with one rule: the stepper shows it
                expect(panel.locator(".dualarr-bot-stepper")).to_contain_text("1. ")
        if title == "python":
            expect(panel).to_contain_text("def grad_")
        if title == "check":
            expect(panel).to_contain_text("SymPy")
        expect(banner).to_be_visible()
        root.screenshot(path=str(shots / f"{name}-stale-{k + 1:02d}-{title}.png"))


def _fresh_again(root: Any, program: str, name: str) -> None:
    """A good edit of the explorer ``root`` clears the stale mark and the error."""
    from playwright.sync_api import expect

    root.locator("textarea").first.fill(program)
    root.get_by_role("button", name="run").click()
    expect(root.locator(".dualarr-stale-banner")).to_be_hidden(timeout=60_000)
    expect(root).not_to_have_class(re.compile(r"\bdualarr-stale\b"))
    opacity, _ = root.evaluate(GREYED)
    assert opacity == 1.0, f"{name}: still greyed after a good edit"
    root.screenshot(path=str(screenshots() / f"{name}-fixed.png"))


@contextmanager
def _notebook_page(lab: tuple[str, str], notebook: str) -> Iterator[Any]:
    """A 1400 x 1000 Chromium page on ``notebook`` in JupyterLab, all its cells run."""
    from playwright.sync_api import sync_playwright

    base, token = lab
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            _open(page, base, token, notebook)
            yield page
        finally:
            browser.close()


def test_pipeline_explorer_in_jupyterlab(lab: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    shots = screenshots()
    with _notebook_page(lab, NOTEBOOK) as page:
        explorer = page.locator(".widget-tab").first
        explorer.wait_for(state="attached", timeout=120_000)
        explorer.scroll_into_view_if_needed()
        tab_titles = explorer.locator(".lm-TabBar-tab")
        expect(tab_titles).to_have_count(len(TABS), timeout=60_000)
        page.screenshot(path=str(shots / "00-explorer.png"))

        for k, name in enumerate(TABS):
            explorer.locator(".lm-TabBar-tab", has_text=name).first.click()
            panel = _visible_panel(explorer)
            expect(panel).to_have_count(1)
            outputs = panel.locator(".jp-OutputArea-output")
            expect(outputs.first).to_be_visible(timeout=30_000)
            assert panel.inner_text().strip(), f"the {name} tab is empty"
            if name in DRAWN:
                svg = panel.locator('img[src^="data:image/svg+xml"]').first
                expect(svg).to_be_visible(timeout=30_000)
            if name == "source":
                expect(panel).to_contain_text("build1 5")
            if name == "vectorised":
                expect(panel).to_contain_text("gather")
            if name == "python":
                expect(panel).to_contain_text("def grad_")
            if name == "check":
                expect(panel).to_contain_text("SymPy", timeout=30_000)
                assert "FAIL" not in panel.inner_text()
            panel.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / f"{k + 1:02d}-{name}.png"))

        # The bot stepper, in the vectorised tab: its rule name, then the next rule.
        explorer.locator(".lm-TabBar-tab", has_text="vectorised").first.click()
        panel = _visible_panel(explorer)
        expect(panel).to_contain_text("1. build1-op")
        expect(panel).to_contain_text("Fig. 9")
        panel.get_by_role("button", name="next ▶").click()
        expect(panel).to_contain_text("2. build1-index", timeout=30_000)
        expect(panel).to_contain_text("Fig. 11")
        expect(panel.locator('img[src^="data:image/svg+xml"]').first).to_be_visible()
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "10-bot-stepper-step-2.png"))

        # A broken edit (a syntax error): the error, and the tabs of fig18 marked stale.
        root = page.locator(".dualarr-pipeline-explorer").first
        root.locator("textarea").first.fill(BROKEN_TOUR)
        root.get_by_role("button", name="run").click()
        _stale_tabs(page, root, "SyntaxError", "00-explorer")
        expect(root.locator(".widget-tab").first).to_contain_text("SymPy")
        page.screenshot(path=str(shots / "11-explorer-stale.png"))
        _fresh_again(root, "def double(x):\n    return da.sum(x * 2.0)\n", "00-explorer")


def _open(page: Any, base: str, token: str, notebook: str) -> None:
    """Open ``notebook`` in JupyterLab and run all its cells."""
    page.goto(f"{base}/lab/tree/{notebook}?token={token}")
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp?.shell?.currentWidget;"
        " const k = w?.sessionContext?.session?.kernel;"
        " return w?.context?.path === path && k && k.status === 'idle'; }",
        arg=notebook,
        timeout=120_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")


def _fits(widget: Any, what: str, height: bool = True, zoomed: bool = False) -> None:
    """Nothing in ``widget`` is wider than its container, every drawing fits its box
    (unless ``zoomed``: then it pans inside the box), and (``height``) the widget fits on
    one screen."""
    overflowing = widget.evaluate(OVERFLOWING)
    assert not overflowing, f"{what}: wider than their container: {overflowing}"
    for shown, box, natural in widget.evaluate(DRAWINGS_FIT):
        if zoomed:
            assert shown > natural, f"{what}: zoomed, the drawing is {shown} px wide"
            continue
        assert shown <= box + 1, f"{what}: a drawing {shown} px wide in a {box} px box"
        assert shown <= natural + 1, f"{what}: a drawing scaled up ({shown} > {natural} px)"
    if height:
        tall = widget.bounding_box()["height"]
        assert tall <= SCREEN, f"{what}: {tall:.0f} px tall, more than one screen ({SCREEN})"


def test_each_widget_as_a_learner_sees_it(lab: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    shots = screenshots()
    with _notebook_page(lab, WIDGETS) as page:
        page.evaluate("window.jupyterapp.shell.collapseLeft()")  # the notebook's full width
        shown = page.evaluate("window.jupyterapp.shell.currentWidget.id")
        notebook = page.locator(f"[id='{shown}']")  # the notebook shown (not the tour)
        cells = notebook.locator(".jp-Cell")
        roots = {
            "explorer": cells.nth(1).locator(".dualarr-pipeline-explorer"),
            "bot-stepper": cells.nth(2).locator(".dualarr-bot-stepper"),
            "backprop-stepper": cells.nth(3).locator(".dualarr-backprop-stepper"),
            "explosion-plot": cells.nth(4).locator(".dualarr-explosion-plot"),
        }
        for root in roots.values():
            root.wait_for(state="visible", timeout=180_000)
        plot = roots["explosion-plot"]
        measure = plot.get_by_role("button", name="measure")
        expect(measure).to_be_enabled(timeout=120_000)
        expect(plot.locator("img").first).to_be_visible(timeout=60_000)

        for width in (1400, 820):  # a wide window, then a narrow one
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_timeout(500)
            for name, root in roots.items():
                root.scroll_into_view_if_needed()
                _fits(root, f"{name} at {width} px", height=name != "explosion-plot")
                root.screenshot(path=str(shots / f"widget-{name}-{width}px.png"))
            explorer = roots["explorer"]
            for tab in TABS:
                explorer.locator(".lm-TabBar-tab", has_text=tab).first.click()
                panel = _visible_panel(explorer.locator(".widget-tab").first)
                expect(panel.locator(".jp-OutputArea-output").first).to_be_visible()
                _fits(explorer, f"explorer tab {tab} at {width} px")
                if tab in ("source", "forward", "gradient"):
                    explorer.screenshot(
                        path=str(shots / f"widget-explorer-{tab}-{width}px.png")
                    )
        page.set_viewport_size({"width": 1400, "height": 1000})

        # The explorer: a bad program shows its error; run is disabled while it runs.
        explorer = roots["explorer"]
        explorer.locator("textarea").first.fill(BAD_PROGRAM)
        run = explorer.get_by_role("button", name="run")
        run.evaluate(WATCH_DISABLED)
        run.click()
        message = explorer.locator(".widget-html", has_text="ShapeError").first
        expect(message).to_be_visible(timeout=60_000)
        expect(message).to_contain_text("line 2")
        expect(message).to_contain_text("return da.sum(w + x)")
        expect(run).to_be_enabled(timeout=60_000)
        assert page.evaluate("window.__sawDisabled"), "run was not disabled while running"
        _fits(explorer, "explorer showing an error")
        explorer.screenshot(path=str(shots / "widget-explorer-error.png"))
        _stale_tabs(page, explorer, "ShapeError", "widget-explorer")  # the mlp's tabs stay
        _fits(explorer, "explorer showing stale tabs")
        _fresh_again(explorer, GOOD_PROGRAM, "widget-explorer")

        # The steppers: the next step shows, said once.
        stepper = roots["bot-stepper"]
        stepper.get_by_role("button", name="next ▶").click()
        expect(stepper).to_contain_text("2. build1-index")
        expect(stepper).to_contain_text("Fig. 11")
        stepper.locator(".widget-toggle-button", has_text="200%").click()
        expect(stepper.locator(".dualarr-drawing img")).to_have_attribute(
            "style", re.compile(r"max-width:\s*none"), timeout=30_000
        )
        _fits(stepper, "bot stepper at 200 %", zoomed=True)  # the drawing pans in its box
        stepper.screenshot(path=str(shots / "widget-bot-stepper-zoomed.png"))
        backprop = roots["backprop-stepper"]
        backprop.get_by_role("button", name="next ▶").click()
        expect(backprop).to_contain_text("step 2 of")
        assert backprop.inner_text().count("step 2 of") == 1
        expect(backprop).to_contain_text("evaluate Share")
        backprop.screenshot(path=str(shots / "widget-backprop-stepper-step-2.png"))

        # The plot: measure is disabled while measuring, with a progress bar.
        plot.scroll_into_view_if_needed()
        measure.evaluate(WATCH_DISABLED)
        measure.click()
        expect(measure).to_be_disabled(timeout=10_000)
        expect(plot.locator(".widget-hprogress").first).to_be_visible(timeout=10_000)
        expect(plot).to_contain_text("n = ", timeout=10_000)
        plot.screenshot(path=str(shots / "widget-explosion-plot-measuring.png"))
        expect(measure).to_be_enabled(timeout=120_000)
        expect(plot.locator(".widget-hprogress")).to_have_count(0)
        assert page.evaluate("window.__sawDisabled")
        sizes = plot.locator("input[type=text]").first
        sizes.fill("4, x")
        sizes.press("Enter")
        expect(plot).to_contain_text("not a size", timeout=30_000)
        plot.screenshot(path=str(shots / "widget-explosion-plot-bad-sizes.png"))
        page.screenshot(path=str(shots / "widgets-page.png"), full_page=True)


def test_no_news_pop_up_on_a_first_start(lab: tuple[str, str]) -> None:
    """JupyterLab's "get notified about official Jupyter news?" question, which covers
    the widgets on a first start, is off: ``fetchNews`` is ``"false"`` by the kit's
    configuration (``.ci/jupyter/labconfig/default_setting_overrides.json``)."""
    base, token = lab
    url = f"{base}/lab/api/settings/@jupyterlab/apputils-extension:notification?token={token}"
    with urllib.request.urlopen(url, timeout=10) as answer:
        plugin = json.load(answer)
    assert "fetchNews" not in plugin["settings"]  # no answer of the user's: a first start
    assert plugin["schema"]["properties"]["fetchNews"]["default"] == "false"  # the kit's
    with _notebook_page(lab, NOTEBOOK) as page:
        page.wait_for_selector(".dualarr-pipeline-explorer", timeout=120_000)
        page.wait_for_timeout(3000)  # the question comes after the app is restored
        assert page.get_by_text(NEWS).count() == 0, "JupyterLab asks about its news"
        assert page.locator(".Toastify__toast").count() == 0, "a notification covers the page"
        page.screenshot(path=str(screenshots() / "lab-first-start-no-news.png"))
