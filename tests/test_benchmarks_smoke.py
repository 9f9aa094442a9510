"""The gradient and sharing benchmarks run end to end (small sizes: a smoke run).

Peers that are not installed are reported as such, never as an error; installed ones
run too (each in its own process), and every gradient is checked against NumPy's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline_programs import PROGRAMS

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )


def test_bench_gradients_quick() -> None:
    result = run("bench_gradients.py", "--quick")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.startswith("# bench_gradients.py --quick  (")
    assert "cores," in out.splitlines()[0]
    assert "## median ms per gradient" in out
    assert "## ratio to the NumPy gradient" in out
    assert "## time to first gradient" in out
    for workload in ("W1", "W2", "W3", "W4", "W5", "W6", "C", "S"):
        assert f"\n{workload} " in out
    assert "# numpy    ok" in out and "# dualarr  ok" in out
    for peer in ("autograd", "jax", "jax.jit", "torch"):
        line = next(s for s in out.splitlines() if s.startswith(f"# {peer} "))
        assert "ok:" in line or "not installed" in line, line
    lines = out.splitlines()
    head = lines.index(next(s for s in lines if s.startswith("## S against the unrolled")))
    table = lines[head + 2:lines.index("", head)]
    scan_rows = [s.split() for s in table if s.startswith("dualarr")]
    assert [r[0] for r in scan_rows[:3]] == ["dualarr.jit", "dualarr", "dualarr.unfused"]
    assert all(float(r[3]) > 0 for r in scan_rows)  # S/C per call, both measured
    median_rows = [s.split() for s in lines if s.startswith("S ")]
    if "# autograd ok" in out:  # a peer without scan: its S cells say so
        assert all("no scan" in " ".join(r) for r in median_rows), median_rows


def test_bench_sharing_small() -> None:
    result = run("bench_sharing.py", "--sizes", "200", "400", "800", "--repeat", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# bench_sharing.py  (")
    head = next(i for i, s in enumerate(lines) if s.split()[:3] == ["N", "Delta", "Share"])
    rows = [s.split() for s in lines[head + 1:] if not s.startswith("#")]
    assert [r[0] for r in rows] == ["200", "400", "800"]
    nodes = [int(r[1]) for r in rows]
    assert nodes[2] - nodes[1] == 2 * (nodes[1] - nodes[0])  # Delta nodes linear in N
    assert "4.00x steps" in lines[-1] and "3.99x Delta nodes" in lines[-1]
    assert "x compiled time" in lines[-1]


def test_bench_pipeline_small() -> None:
    result = run("bench_pipeline.py", "--blocks", "1", "3", "--repeat", "1", "--sizes", "10", "20")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# bench_pipeline.py  (")
    assert lines[2].split()[:3] == ["blocks", "nodes", "trace"]
    assert [line.split()[0] for line in lines[3:5]] == ["1", "3"]
    baseline = [line for line in lines if line.startswith("compile() / DAG walk")]
    assert len(baseline) == 2 and baseline[1].count(" x ") == 2  # both sizes, with ratios
    rows = [line for line in lines if line.startswith(tuple(PROGRAMS))]
    assert len(rows) == 2 * len(PROGRAMS)  # every program at both sizes
    assert all(line.count("|") == 8 for line in rows)  # 6 stages, grad, interpret


def test_bench_gpu_runs_or_says_why_not() -> None:
    result = run("bench_gpu.py", "--repeat", "1", "--number", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("# bench_gpu.py")


def test_bench_overhead_quick() -> None:
    result = run("bench_overhead.py", "--quick")
    assert result.returncode == 0, result.stdout + result.stderr
    for row in ("da.grad(f)(x, y)", "captured w changed", "da.jit(da.grad(f))", "NumPy by hand"):
        assert row in result.stdout


def test_bench_numpy_quick() -> None:
    result = run("bench_numpy.py", "--quick", "--repeat", "3")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# bench_numpy.py --quick  (")
    rows = [s.split() for s in lines[2:4]]
    assert [r[0] for r in rows] == ["attention", "conv1d"]
    assert all(float(r[6]) > 0 for r in rows)  # the ratio of da.jit to NumPy by hand
    assert lines[-1] == "# every gradient agreed with the hand-written one (rtol 1e-8)"


def test_bench_dask_quick_or_says_why_not() -> None:
    result = run("bench_dask.py", "--quick", "--repeat", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# bench_dask.py --quick")
    if "Dask is not installed" in lines[0]:
        return
    head = lines.index(next(s for s in lines if s.startswith("program ")))
    rows = [s.split() for s in lines[head + 1 : head + 11]]
    assert [(r[0], r[1]) for r in rows] == [
        (p, n) for p in ("fig18", "w5", "chain", "softmax", "scatter") for n in ("1e3", "1e4")
    ]
    assert all(int(r[4]) >= int(r[5]) >= 1 for r in rows)  # tasks, then after dask.optimize
    assert all(float(r[10]) > 0 for r in rows)  # threads / numpy, both measured
    assert sum(s.startswith("# crossover") for s in lines) == 2
    assert lines[-1].startswith("# every gradient agreed with the one written by hand")
