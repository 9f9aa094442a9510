"""Generated code names a bulk index component computed from the function's arrays alone
once (``jN = ...``), for every gather and scatter that reads it, which then share its
range check: the wrap of negative indices of a data index (``dualarr.numpy``'s
indexing) costs one pass however many times the index is read, in ``da.grad`` and in
``da.jit`` of a gradient alike."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.numpy as dnp


def chain(x: Any, idx: Any, steps: int = 3) -> Any:
    y = x
    for _ in range(steps):
        y = dnp.tanh(y * y[::-1] + 0.5 * y[idx])
    return dnp.sum(y)


def _source(jitted: Any) -> str:
    for cell in jitted.__closure__ or ():
        table = cell.cell_contents
        if isinstance(table, dict) and table:
            code, _ = next(iter(table.values()))
            return str(code.source)
    raise AssertionError("no compiled program")


@pytest.mark.parametrize("path", ["grad", "jit of grad"])
def test_a_data_index_read_many_times_is_wrapped_and_checked_once(path: str) -> None:
    x = np.linspace(-1.0, 1.0, 6)
    idx = np.array([5, -1, 0, 3, -6, 2], dtype=np.int64)
    g = da.grad(chain)
    if path == "grad":
        source = da.pipeline(chain, x, idx).python
        got = g(x, idx)
    else:
        jitted = da.jit(g)
        got = jitted(x, idx)
        source = _source(jitted)
    assert source.count("helpers.wrap(") == 1, source
    assert source.count("helpers.in_range(") == 1, source
    h = 1e-6
    want = [
        (chain(x + h * e, idx) - chain(x - h * e, idx)) / (2 * h) for e in np.eye(len(x))
    ]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
