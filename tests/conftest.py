"""Hypothesis profiles: "ci" (deterministic) when the CI env var is set, else "dev".

Every acceptance case (``tests/acceptance``) runs twice: on the compiled gradient
program (the default, §7) and on the concrete dual-arrays reverse pass
(``mode="interpret"``, §6).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

import dualarr as da

settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

MODES = ("compiled", "interpret")


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
    if mode is not None:
        for name in ("grad", "value_and_grad", "vjp", "jacobian"):
            monkeypatch.setattr(da, name, functools.partial(getattr(da, name), mode=mode))
    yield mode
