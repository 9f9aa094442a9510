"""The widgets in a real browser: JupyterLab on 127.0.0.1 with a token, driven by headless
Debian Chromium through Playwright (the system browser; Playwright never downloads one).

The quick-tour notebook ends in a ``PipelineExplorer``.  The test runs every cell, clicks
through every tab of the explorer and the bot stepper's buttons, and checks that each tab
shows its stage, that the drawings arrive as SVG images and that the stepper names its
rule.  Screenshots go to ``build/browser-screenshots/`` (or ``$DUALARR_SCREENSHOTS``).

Skipped, with the reason, only where Chromium or Playwright is missing (``.ci/setup.sh``
installs Debian's ``chromium`` when it runs as root).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "00-quick-tour.ipynb"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TABS = ("source", "vectorised", "forward", "delta", "shared", "gradient", "python", "check")
DRAWN = ("source", "vectorised", "forward", "delta", "shared", "gradient")  # with a graph

pytestmark = pytest.mark.browser


def _screenshots() -> Path:
    where = Path(os.environ.get("DUALARR_SCREENSHOTS", ROOT / "build" / "browser-screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


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
    port, token = _free_port(), secrets.token_hex(16)
    log = (root / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
            "jupyterlab.NeverCheckForUpdate",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        "JupyterLab did not start:\n" + (root / "jupyterlab.log").read_text()
                    )
                time.sleep(0.3)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _visible_panel(explorer: Any) -> Any:
    """The explorer's tab panel on show."""
    return explorer.locator(":scope > .widget-tab-contents > .lm-Widget:not(.lm-mod-hidden)")


def test_pipeline_explorer_in_jupyterlab(lab: tuple[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, token = lab
    shots = _screenshots()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
            page.wait_for_function(
                "() => { const w = window.jupyterapp?.shell?.currentWidget;"
                " const k = w?.sessionContext?.session?.kernel;"
                " return k && k.status === 'idle'; }",
                timeout=120_000,
            )
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
            news = page.get_by_role("button", name="No", exact=True)  # "notified about news?"
            if news.count():
                news.first.click()
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
        finally:
            browser.close()
