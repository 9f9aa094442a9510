"""The steppers in a real browser: JupyterLab driven by headless Chromium (the server and
helpers of ``test_browser``), issue 34 items 3 and 5.

At every step of a ``BackpropStepper`` (the chapter's, and a tall one whose drawing is
twice its box) and of a ``BotStepper``, the highlighted (gold) node lies inside the
drawing's visible box and its label is at least 10 px high: the drawing is decoded from
the ``<img>`` and laid over it, so the node and its label are measured where the browser
draws them.  A stepper displayed by Run All in chapters 01 and 05 shows its first step.
Screenshots go to ``build/browser-screenshots/`` (or ``$DUALARR_SCREENSHOTS``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import test_browser
from lab_server import screenshots
from test_browser import _notebook_page

ROOT = Path(__file__).resolve().parent.parent
lab = test_browser.lab  # the JupyterLab server fixture (module-scoped, one per module)

STEPPERS = "steppers.ipynb"  # uploaded by the test: one stepper per cell
STEPPER_CELLS = [
    """import numpy as np
import dualarr as da
from dualarr.teach.examples import fig18
from dualarr_widgets import BackpropStepper, BotStepper

x = np.arange(1.0, 6.0)
w, b = np.linspace(-0.5, 0.5, 15).reshape(5, 3), np.linspace(0.0, 0.3, 3)
batch = np.linspace(-1.0, 1.0, 20).reshape(4, 5)


def twice(x):  # chapter 05's stepper
    y = da.sin(x)
    z = y * y
    return da.sum(z + z)


def mlp(w, b, x):  # a Delta about three times as tall as its box
    hidden = da.tanh(da.matmul(x, w) + da.replicate(4, b))
    return da.mean(da.logsumexp(hidden, axis=1))""",
    "BackpropStepper(twice, x)",
    "BackpropStepper(mlp, w, b, batch)",
    "BotStepper(fig18, x)",
]
RUN_ALL = {  # chapters whose Run All displays a stepper
    "01-dual-numbers-and-sharing.ipynb": ".dualarr-backprop-stepper",
    "05-dual-arrays.ipynb": ".dualarr-backprop-stepper",
}
MIN_LABEL_PX = 10.0

# The gold nodes of the drawing as the browser draws them: the SVG of the <img> is laid
# over the image, same box, so its elements' client rects are where the image shows them.
FOCUS = """(root) => {
  const img = root.querySelector('.dualarr-drawing img');
  if (!img || !img.complete || img.naturalWidth === 0) return null;
  const box = img.parentElement;
  const svgText = atob(img.src.split(',')[1]);
  const svg = new DOMParser().parseFromString(svgText, 'image/svg+xml').documentElement;
  const r = img.getBoundingClientRect();
  const layer = document.createElement('div');
  layer.style.cssText = `position:fixed;left:${r.left}px;top:${r.top}px;width:${r.width}px;`
    + `height:${r.height}px;visibility:hidden;pointer-events:none`;
  svg.setAttribute('width', r.width);
  svg.setAttribute('height', r.height);
  layer.appendChild(document.importNode(svg, true));
  document.body.appendChild(layer);
  try {
    const drawn = layer.querySelector('svg');
    const scale = r.width / drawn.viewBox.baseVal.width;
    const gold = [...drawn.querySelectorAll('g.node')]
      .filter((g) => g.querySelector('[fill="gold"]'));
    const nodes = gold.map((g) => {
      const n = g.getBoundingClientRect();
      const texts = [...g.querySelectorAll('text')];
      return {
        left: n.left, top: n.top, right: n.right, bottom: n.bottom,
        label: g.querySelector('title')?.textContent,
        fontPx: Math.min(...texts.map((t) => parseFloat(t.getAttribute('font-size')) * scale)),
        textPx: Math.min(...texts.map((t) => t.getBoundingClientRect().height)),
      };
    });
    const b = box.getBoundingClientRect();
    return {
      nodes,
      box: {left: b.left + box.clientLeft, top: b.top + box.clientTop,
            right: b.left + box.clientLeft + box.clientWidth,
            bottom: b.top + box.clientTop + box.clientHeight},
      viewport: {width: window.innerWidth, height: window.innerHeight},
      scrolled: [box.scrollLeft, box.scrollTop],
      scale,
    };
  } finally {
    layer.remove();
  }
}"""
IN_VIEW = f"""(root) => {{
  const f = ({FOCUS})(root);
  if (!f || !f.nodes.length) return false;
  return f.nodes.every((n) => n.left >= f.box.left - 1 && n.right <= f.box.right + 1
    && n.top >= f.box.top - 1 && n.bottom <= f.box.bottom + 1);
}}"""

pytestmark = pytest.mark.browser


def _upload(lab: tuple[str, str], name: str, notebook: dict[str, Any]) -> None:
    """Put ``notebook`` into the lab's root folder through JupyterLab's contents API."""
    base, token = lab
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook})
    request = urllib.request.Request(
        f"{base}/api/contents/{name}", data=body.encode("utf-8"), method="PUT",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status in (200, 201), answer.status
    except urllib.error.HTTPError as error:
        pytest.fail(f"could not upload {name}: {error}: {error.read()[:2000]!r}")


def _cells_notebook(cells: list[str]) -> dict[str, Any]:
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return {
        "cells": [
            {"cell_type": "code", "metadata": {}, "source": c, "outputs": [],
             "execution_count": None}
            for c in cells
        ],
        "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5,
    }


def _check_focus(page: Any, root: Any, what: str) -> dict[str, Any]:
    """The gold nodes of ``root``'s drawing lie in its visible box (and on the screen),
    their labels at least MIN_LABEL_PX high; returns the measures."""
    page.wait_for_timeout(300)  # the drawing follows the heading: let it arrive
    root.evaluate(
        "r => r.querySelector('.dualarr-drawing').scrollIntoView({block: 'nearest'})"
    )
    with contextlib.suppress(Exception):  # if it never is, the measures below say why
        page.wait_for_function(IN_VIEW, arg=root.element_handle(), timeout=15_000)
    focus = root.evaluate(FOCUS)
    assert focus is not None, f"{what}: the drawing did not load"
    assert focus["nodes"], f"{what}: no highlighted node in the drawing"
    box, view = focus["box"], focus["viewport"]
    for node in focus["nodes"]:
        inside = (node["left"] >= box["left"] - 1 and node["right"] <= box["right"] + 1
                  and node["top"] >= box["top"] - 1 and node["bottom"] <= box["bottom"] + 1)
        assert inside, f"{what}: node {node['label']} {node} outside its box {box}"
        assert node["top"] >= -1 and node["bottom"] <= view["height"] + 1, (what, node, view)
        assert node["fontPx"] >= MIN_LABEL_PX, f"{what}: labels {node['fontPx']:.1f} px"
        assert node["textPx"] >= MIN_LABEL_PX, f"{what}: label text {node['textPx']:.1f} px"
    return dict(focus)


def test_the_current_step_is_always_in_view_and_legible(lab: tuple[str, str]) -> None:
    from playwright.sync_api import expect

    shots = screenshots()
    _upload(lab, STEPPERS, _cells_notebook(STEPPER_CELLS))
    with _notebook_page(lab, STEPPERS) as page:
        page.evaluate("window.jupyterapp.shell.collapseLeft()")
        shown = page.evaluate("window.jupyterapp.shell.currentWidget.id")
        cells = page.locator(f"[id='{shown}'] .jp-Cell")
        roots = {
            "backprop-twice": cells.nth(1).locator(".dualarr-backprop-stepper"),
            "backprop-mlp": cells.nth(2).locator(".dualarr-backprop-stepper"),
            "bot-fig18": cells.nth(3).locator(".dualarr-bot-stepper"),
        }
        for root in roots.values():
            root.wait_for(state="visible", timeout=180_000)
        measured = []
        for name, root in roots.items():
            heading = root.locator(".widget-html").first  # the step's heading, or rule
            backprop = "backprop" in name
            expect(heading).to_contain_text("step 1 of" if backprop else "1. ")
            total = int(heading.inner_text().split(" of ", 1)[1].split(":", 1)[0]) \
                if backprop else 0
            step = 1
            while True:
                focus = _check_focus(page, root, f"{name} step {step}")
                measured.append((name, step, round(min(n["fontPx"] for n in focus["nodes"]), 1),
                                 focus["scrolled"]))
                root.screenshot(path=str(shots / f"stepper-{name}-step-{step}.png"))
                following = root.get_by_role("button", name="next ▶")
                if following.is_disabled():
                    break
                step += 1
                following.click()
                expect(heading).to_contain_text(
                    f"step {step} of" if backprop else f"{step}. ", timeout=30_000
                )
            if backprop:
                assert step == total, f"{name}: stepped {step} of {total} steps"
            assert step > 1, name
        print("\n".join(map(str, measured)))


@pytest.mark.parametrize("notebook", sorted(RUN_ALL))
def test_a_stepper_displayed_by_run_all_shows_its_first_step(
    lab: tuple[str, str], notebook: str
) -> None:
    from playwright.sync_api import expect

    content = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))
    content["metadata"].pop("jupytext", None)  # no paired text file in the lab's copy
    _upload(lab, notebook, content)
    with _notebook_page(lab, notebook) as page:
        shown = page.evaluate("window.jupyterapp.shell.currentWidget.id")
        steppers = page.locator(f"[id='{shown}'] {RUN_ALL[notebook]}")
        expect(steppers.first).to_be_attached(timeout=300_000)
        page.wait_for_function(  # every code cell has run
            "() => { const nb = window.jupyterapp.shell.currentWidget;"
            " const k = nb.sessionContext.session.kernel;"
            " return k.status === 'idle' && nb.content.widgets.every("
            "  c => c.model.type !== 'code' || c.model.executionCount !== null); }",
            timeout=300_000,
        )
        page.wait_for_timeout(1000)
        assert steppers.count() >= 1
        for k in range(steppers.count()):
            stepper = steppers.nth(k)
            stepper.scroll_into_view_if_needed()
            expect(stepper).to_contain_text("step 1 of")
            assert stepper.get_by_role("button", name="◀ prev").is_disabled()
            _check_focus(page, stepper, f"{notebook} stepper {k + 1}")
            stepper.screenshot(path=str(screenshots() / f"run-all-{notebook[:2]}-stepper.png"))


def test_focus_measure_sees_the_svg_of_the_image() -> None:
    """The drawing the browser test decodes is the stepper's own (a check on the test)."""
    pytest.importorskip("ipywidgets")
    import numpy as np

    import dualarr as da
    from dualarr_widgets import BackpropStepper

    stepper = BackpropStepper(lambda x: da.sum(da.sin(x) * da.sin(x)), np.arange(3.0))
    src = stepper.view.image.value.split("src='", 1)[1].split("'", 1)[0]
    svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
    assert svg == stepper.view.svg and 'fill="gold"' in svg
