"""pyproject.toml and environment.yml declare the same dependencies.

environment.yml is read with a small line-based parser (it is a flat list we write
ourselves), so this test needs no YAML library.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("gpu", "widgets", "symbolic", "book", "dev", "vml")

# pip name -> conda-forge name, where they differ.
PIP_TO_CONDA = {"graphviz": "python-graphviz"}
# conda entries with no pip counterpart: the interpreter and graphviz's C tools (`dot`).
CONDA_ONLY = {"python", "graphviz"}

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)")


def normalize(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def split_requirement(req: str) -> tuple[str, str]:
    """``"numpy>=2.0"`` -> ``("numpy", ">=2.0")``; extras and markers are dropped."""
    m = _REQ.match(req)
    assert m is not None, f"cannot parse requirement {req!r}"
    return normalize(m.group(1)), m.group(2).replace(" ", "")


def load_pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def pyproject_requirements(include_gpu: bool = False) -> dict[str, str]:
    project = load_pyproject()["project"]
    reqs: list[str] = list(project["dependencies"])
    for extra, items in project["optional-dependencies"].items():
        if extra != "gpu" or include_gpu:
            reqs.extend(items)
    out: dict[str, str] = {}
    for req in reqs:
        name, spec = split_requirement(req)
        name = PIP_TO_CONDA.get(name, name)
        # The same package may appear in two extras (jupytext): specs must agree.
        assert out.setdefault(name, spec) == spec, f"{name}: {out[name]!r} vs {spec!r}"
    return out


def environment_dependencies(text: str) -> list[str]:
    """Entries of the top-level ``dependencies:`` list of a simple environment.yml."""
    deps: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line[0].isspace():
            inside = line == "dependencies:"
            continue
        if inside:
            item = line.strip()
            assert item.startswith("- "), f"unexpected line in dependencies: {raw!r}"
            deps.append(item[2:].strip())
    return deps


def environment_requirements() -> dict[str, str]:
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for dep in environment_dependencies(text):
        name, spec = split_requirement(dep)
        if name in CONDA_ONLY:
            continue
        assert name not in out, f"{name} listed twice in environment.yml"
        out[name] = spec
    return out


def test_environment_parser() -> None:
    text = "name: x\nchannels:\n  - conda-forge\ndependencies:\n  - a>=1  # c\n  # - b\n  - c\n"
    assert environment_dependencies(text) == ["a>=1", "c"]


def test_extras_exist_and_gpu_is_only_cupy() -> None:
    extras = load_pyproject()["project"]["optional-dependencies"]
    assert set(EXTRAS) <= set(extras)
    assert extras["gpu"] == ["cupy-cuda12x"]
    others = [split_requirement(r)[0] for e in EXTRAS if e != "gpu" for r in extras[e]]
    assert not [name for name in others if name.startswith("cupy")]


def test_core_dependencies() -> None:
    project = load_pyproject()["project"]
    assert project["requires-python"] == ">=3.11"
    core = dict(split_requirement(r) for r in project["dependencies"])
    assert core == {
        "numpy": ">=2.0", "array-api-compat": ">=1.11", "optree": ">=0.13", "numexpr": ">=2.10"
    }


def test_environment_matches_pyproject_names() -> None:
    assert sorted(environment_requirements()) == sorted(pyproject_requirements())


def test_environment_matches_pyproject_versions() -> None:
    assert environment_requirements() == pyproject_requirements()


def test_environment_has_python_dot_and_gpu_note() -> None:
    text = (ROOT / "environment.yml").read_text(encoding="utf-8")
    names = [split_requirement(d)[0] for d in environment_dependencies(text)]
    assert "python" in names
    assert "graphviz" in names  # the C tools providing `dot`
    assert "conda-forge" in text
    assert re.search(r"#.*for GPU: cupy", text)
    assert "cupy" not in names


# -- a bare install, and a set-up that waits for apt ------------------------------------

OPTIONAL_MODULES = (
    "graphviz",
    "sympy",
    "ipywidgets",
    "matplotlib",
    "sklearn",
    "scipy",
    "tqdm",
    "mkl_umath",
    "IPython",
    "jupytext",
    "dask",
    "distributed",
)


def test_dualarr_imports_and_runs_without_any_optional_package() -> None:
    """``import dualarr`` needs no extra (a bare ``pip install``); a drawing without
    ``graphviz`` raises a named error that says which extra to install."""
    blocked = ", ".join(repr(m) for m in OPTIONAL_MODULES)
    script = f"""
import sys
for name in ({blocked},):
    sys.modules[name] = None  # importing it raises ImportError
import numpy as np
import dualarr as da
import dualarr.numpy as dnp
x = np.array([0.5, 1.0, 2.0])
f = lambda x: dnp.sum(dnp.tanh(x) ** 2)
for mode in ("compiled", "interpret"):
    np.testing.assert_allclose(da.grad(f, mode=mode)(x), 2 * np.tanh(x) / np.cosh(x) ** 2)
print(da.pipeline(f, x).python)
try:
    da.trace(f, x).graph()
except da.MissingDependencyError as error:
    assert isinstance(error, ImportError) and "dualarr[widgets]" in str(error), error
    assert (error.module, error.extra) == ("graphviz", "widgets")
    print("named:", error)
else:
    raise SystemExit("a drawing without graphviz did not raise")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "named: drawing: drawing needs the Python package 'graphviz'" in done.stdout


def test_apt_update_waits_while_another_apt_holds_the_lock(tmp_path: Path) -> None:
    """``.ci/setup.sh`` retries ``apt-get update`` while the lists' lock is held, and
    ``apt-get install`` waits for the dpkg lock (``DPkg::Lock::Timeout``)."""
    fake = tmp_path / "apt-get"
    calls = tmp_path / "calls"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {calls}\n'
        f'if [ "$(wc -l < {calls})" -lt 3 ]; then\n'
        '  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1"\n'
        "  exit 100\n"
        "fi\n"
    )
    fake.chmod(0o755)
    setup = (ROOT / ".ci" / "setup.sh").read_text()
    start = setup.index("_dualarr_apt_update() {")
    function = setup[start : setup.index("\n}\n", start) + 3]
    done = subprocess.run(
        ["bash", "-c", f"{function}\n_dualarr_apt_update"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}",
             "DUALARR_APT_RETRY_SECONDS": "0"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert calls.read_text().splitlines() == ["update -q"] * 3
    assert "DPkg::Lock::Timeout=600 install" in setup
