"""Every acceptance case runs twice: on the compiled gradient program (the default,
§7) and on the concrete dual-arrays reverse pass (``mode="interpret"``, §6)."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

import dualarr as da


@pytest.fixture(autouse=True, params=["compiled", "interpret"])
def differentiation_mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    mode: str = request.param
    for name in ("grad", "value_and_grad", "vjp", "jacobian"):
        monkeypatch.setattr(da, name, functools.partial(getattr(da, name), mode=mode))
    yield mode
