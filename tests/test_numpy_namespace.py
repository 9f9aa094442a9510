"""``dualarr.numpy`` has NumPy's names and signatures (as ``jax.numpy`` does)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import dualarr.numpy as dnp

REQUIRED = """
einsum tensordot outer inner dot matmul vdot kron cross stack vstack hstack dstack
column_stack concatenate split array_split hsplit vsplit r_ c_ sum mean prod min max
amin amax argmin argmax var std cumsum cumprod diff average all any repeat tile roll
rot90 flip fliplr flipud pad tril triu diag diagonal trace diagflat moveaxis swapaxes
squeeze expand_dims ravel reshape transpose atleast_1d atleast_2d atleast_3d
broadcast_to broadcast_arrays clip select where fmax fmin maximum minimum logaddexp
logaddexp2 exp exp2 expm1 log log2 log10 log1p square sqrt sin cos tan arcsin arccos
arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh ceil floor fabs abs absolute sign
deg2rad rad2deg nan_to_num remainder mod add subtract multiply divide negative power
reciprocal sort argsort take take_along_axis linspace arange eye identity zeros ones
full zeros_like ones_like full_like asarray array astype
append gradient partition argpartition rollaxis searchsorted interp convolve correlate
polyval lexsort
copysign ldexp signbit nextafter spacing isclose divmod modf nansum nanmean nanmax nanmin nanprod
nanvar nanstd nanargmin nanargmax nancumsum nancumprod nanmedian nanpercentile nanquantile
""".split()  # noqa: SIM905  (one list, read as text)
"""Every function the NumPy front end promises (the issue's list and the reductions)."""


def test_every_promised_name_is_in_dualarr_numpy() -> None:
    missing = [name for name in REQUIRED if not hasattr(dnp, name)]
    assert not missing, f"missing from dualarr.numpy: {missing}"
    assert set(REQUIRED) <= set(dnp.__all__)


def _numpy_parameters(name: str) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(getattr(np, name)).parameters.values())
    except (TypeError, ValueError):
        return None


FUNCTIONS = [name for name in dnp.__all__ if callable(getattr(dnp, name)) and hasattr(np, name)]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_parameters_are_numpys_in_numpys_order(name: str) -> None:
    ours = list(inspect.signature(getattr(dnp, name)).parameters.values())
    theirs = _numpy_parameters(name)
    numpy_function: Any = getattr(np, name)
    if isinstance(numpy_function, np.ufunc):  # positional operands x / x1, x2
        positional = [p for p in ours if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(positional) >= numpy_function.nin, (name, ours)
        return
    assert theirs is not None, name
    names = [p.name for p in theirs]
    position = -1
    for parameter in ours:
        if parameter.kind is parameter.VAR_POSITIONAL and any(
            p.kind is p.VAR_POSITIONAL for p in theirs
        ):
            continue
        assert parameter.name in names, f"{name}: {parameter.name} is not NumPy's ({names})"
        at = names.index(parameter.name)
        assert at > position, f"{name}: {parameter.name} is out of NumPy's order ({names})"
        position = at
        numpy_default = theirs[at].default
        if parameter.default is not inspect.Parameter.empty and numpy_default not in (
            inspect.Parameter.empty,
            np._NoValue,
        ):
            same = parameter.default == numpy_default or (
                parameter.default is None and numpy_default is None
            )
            assert same, f"{name}: {parameter.name}={parameter.default!r}, NumPy {numpy_default!r}"
    required = [
        p.name
        for p in theirs
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    assert set(required) <= {p.name for p in ours}, f"{name}: needs NumPy's {required}"
