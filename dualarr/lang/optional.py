"""Optional dependencies, imported where a feature needs them.

A bare ``pip install dualarr`` brings NumPy, numexpr, optree and array-api-compat only:
tracing, every transformation, code generation, ``dualarr.numpy`` and printing work
with those.  Drawing needs ``graphviz`` (the ``widgets`` extra), the SymPy
cross-checks need ``sympy`` (the ``symbolic`` extra); each is imported the first time
such a feature runs, and a missing one raises :class:`MissingDependencyError` naming
the extra to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """The module ``module``, imported now; :class:`MissingDependencyError` (naming
    ``pip install 'dualarr[extra]'``) when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingDependencyError(
            f"{feature} needs the Python package {module!r}, which is not installed; "
            f"install it with pip install 'dualarr[{extra}]'",
            op=feature,
            module=module,
            extra=extra,
        ) from error


__all__ = ["require"]
