"""Hypothesis profiles: "ci" (deterministic) when the CI env var is set, else "dev".

Every acceptance case (``tests/acceptance``) runs three times: on the compiled gradient
program (the default, §7), on the concrete dual-arrays reverse pass
(``mode="interpret"``, §6), and under ``"explorer"``: every program given to ``da.grad``
and friends is first shown in a ``PipelineExplorer``, which must fill every tab without an
error (or show the error the call itself then raises), then differentiated as compiled.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import settings

import dualarr as da

settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
da.config.update("check_stages", True)  # every stage checks its output's invariant
da.config.update("fuse_min_size", 1)  # small test programs run through the fused kernels

MODES = ("compiled", "interpret", "explorer")


@pytest.fixture(scope="module")
def fused_small_arrays() -> Iterator[None]:
    """Fusion on, for arrays of any size, for a whole module (its programs are small);
    the settings as they were afterwards, and no compiled program kept across."""
    fuse, min_size = da.config.fuse, da.config.fuse_min_size
    da.config.update("fuse", True)
    da.config.update("fuse_min_size", 1)
    da.clear_caches()
    yield
    da.config.update("fuse", fuse)
    da.config.update("fuse_min_size", min_size)
    da.clear_caches()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    in_acceptance = "acceptance" in metafunc.definition.path.parts
    if in_acceptance and "differentiation_mode" in metafunc.fixturenames:
        metafunc.parametrize("differentiation_mode", MODES, indirect=True)


@pytest.fixture(autouse=True)
def differentiation_mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str | None]:
    """In acceptance tests, ``da.grad`` and friends with the mode of the parameter."""
    mode: str | None = getattr(request, "param", None)
    if mode == "explorer":
        for name in ("grad", "value_and_grad", "jacobian"):
            monkeypatch.setattr(da, name, _explored(getattr(da, name)))
        monkeypatch.setattr(da, "vjp", _explored_vjp(da.vjp))
        monkeypatch.setattr(da, "trace", _explored_trace(da.trace))
    elif mode is not None:
        for name in ("grad", "value_and_grad", "vjp", "jacobian"):
            monkeypatch.setattr(da, name, functools.partial(getattr(da, name), mode=mode))
    yield mode


def explore(f: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """Show ``f`` on ``args`` in a ``PipelineExplorer``; every tab must be non-empty.
    Returns the widget's error ("" when the program went through every stage)."""
    from dualarr_widgets import PipelineExplorer
    from dualarr_widgets.explorer import TABS

    explorer = PipelineExplorer(f, *args)
    if explorer.error:
        assert "color:#b00" in explorer.message.value
        return explorer.error
    for tab in TABS:
        assert explorer.outputs[tab].outputs, f"the {tab} tab is empty"
    check = explorer.outputs["check"].outputs[0]
    if "data" in check:  # a report (text only when check_grad itself refused the program)
        assert "FAIL" not in check["data"]["text/plain"], check["data"]["text/plain"]
    return ""


def _explored(transform: Callable[..., Any]) -> Callable[..., Any]:
    def explored(f: Callable[..., Any], *t_args: Any, **t_kwargs: Any) -> Callable[..., Any]:
        transformed = transform(f, *t_args, **t_kwargs)

        def run(*args: Any, **kwargs: Any) -> Any:
            error = explore(f, args)
            result = transformed(*args, **kwargs)  # raises when the explorer showed an error
            assert not error, f"the explorer showed {error!r} but the call went through"
            return result

        return run

    return explored


def _explored_trace(trace: Callable[..., Any]) -> Callable[..., Any]:
    """Programs that are only evaluated: explored as ``sum(f(x))`` (horde-ad's ``rev'``)
    when their one output is a float array, as they are when the output is rank 0."""

    def explored(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        program = trace(f, *args, **kwargs)
        out = program.outputs[0]
        if len(program.outputs) == 1 and out.dtype.is_float and out.shape != ():

            def summed(*xs: Any) -> Any:
                return da.sum(f(*xs))

            assert not explore(summed, args)
        elif not kwargs:
            assert not explore(f, args)
        return program

    return explored


def _explored_vjp(vjp: Callable[..., Any]) -> Callable[..., Any]:
    def explored(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        assert not explore(f, args)
        return vjp(f, *args, **kwargs)

    return explored
