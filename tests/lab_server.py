"""A JupyterLab server for the real-browser tests: on 127.0.0.1 with a token, as on a
first start (user settings and workspaces of its own), with the kit's configuration
(``.ci/jupyter``, as ``.ci/lab`` uses it); and where their screenshots go."""

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
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAB_CONFIG = ROOT / ".ci" / "jupyter"  # the kit's Jupyter configuration (no news pop-up)
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


def screenshots() -> Path:
    """``build/browser-screenshots/`` (or ``$DUALARR_SCREENSHOTS``), kept as CI artefacts."""
    where = Path(os.environ.get("DUALARR_SCREENSHOTS", ROOT / "build" / "browser-screenshots"))
    where.mkdir(parents=True, exist_ok=True)
    return where


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def jupyter_lab(
    root: Path, state: Path, env: dict[str, str] | None = None
) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on ``root`` (its working directory too), with settings and
    workspaces of its own under ``state``: ``(base url, token)``."""
    env = dict(os.environ) if env is None else env
    port, token = free_port(), secrets.token_hex(16)
    state.mkdir(parents=True, exist_ok=True)
    log_path = state / "jupyterlab.log"
    config = os.pathsep.join(filter(None, [str(LAB_CONFIG), env.get("JUPYTER_CONFIG_PATH")]))
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
                "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
                f"--LabApp.user_settings_dir={state / 'user-settings'}",
                f"--LabApp.workspaces_dir={state / 'workspaces'}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=root,
            env={**env, "JUPYTER_CONFIG_PATH": config},
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
                        pytest.fail("JupyterLab did not start:\n" + log_path.read_text())
                    time.sleep(0.3)
            yield base, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
