"""The terminal demo, as a user runs it."""

from __future__ import annotations

import subprocess
import sys


def test_python_m_dualarr_demo_prints_the_fig18_source_term() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dualarr", "demo"], capture_output=True, text=True, check=True
    )
    assert r"\x. sumOuter (build1 5 (\i. x[i] * x[4 - i]))" in result.stdout
    assert "value = 35.0" in result.stdout
    assert r"\x. dot0 x (gather [5] x (\[i]. [4 - i]))" in result.stdout
    assert "build1-index (Fig. 11)" in result.stdout
    assert "s1 = Gather [5] Input 0 (\\[i]. [4 - i])" in result.stdout  # the concrete Delta
    assert "λ" not in result.stdout and "…" not in result.stdout  # index functions in full
    assert "s2 = Add (Contract 'a,a->' Input 0 [5. 4. 3. 2. 1.]) (Contract 'a,a->' s1" in (
        result.stdout
    )
    assert "gradient = [10.0, 8.0, 6.0, 4.0, 2.0]" in result.stdout
    assert "let v1 = gather [5] x (\\[i]. [4 - i]) in" in result.stdout
    assert "def grad_fig18(xp, helpers, constants, x, dt):" in result.stdout
    assert "compiled: value = 35.0, gradient = [10.0, 8.0, 6.0, 4.0, 2.0]" in result.stdout


def test_demo_rejects_bad_arguments() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dualarr", "demo", "0"], capture_output=True, text=True
    )
    assert result.returncode != 0 and "n must be >= 1" in result.stderr
