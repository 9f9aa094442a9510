"""dualarr: dual-numbers reverse AD for functional array languages, end to end.

Write an array program as a Python function over traced values; dualarr traces it to
the core language of the paper (stage ``source``) and, in later stages, vectorises,
differentiates, transposes and compiles it.  ``import dualarr as da``.
"""

from typing import Any

from . import numpy  # noqa: F401  (NumPy's functions on traced values dispatch to it)
from .api import clear_caches, grad, jacobian, jit, jvp, value_and_grad, vjp, vmap
from .check import GradCheckReport, check_grad
from .constructs import rev
from .lang import functions
from .lang.config import config
from .lang.errors import (
    DtypeError,
    DualarrError,
    IndexOutOfRangeError,
    MissingDependencyError,
    PartialDerivativeError,
    PrimitiveDefinitionError,
    PrimitiveError,
    PrimitiveRedefinedError,
    PrimitiveResultError,
    ShapeError,
    TracingError,
    UnsupportedDtypeError,
    UnsupportedError,
)
from .lang.functions import *  # noqa: F403  (every array function: ``functions.__all__``)
from .lang.loops import fori_loop, scan
from .lang.program import Program, ShapeSpec, trace
from .lang.terms import DType, Term
from .numpy import linalg as _dnp_linalg  # noqa: F401  (dnp.linalg stands on the constructs)
from .pipeline import Pipeline, pipeline
from .show import drawing, numpy_source, printer  # noqa: F401  (they install how terms print and draw)
from .sympy_reference import SympyGradient, sympy_gradient
from .vectorise.bot import NotBotNormal, is_bot_normal

__version__ = "0.1.0"

__all__ = [
    "DType",
    "DtypeError",
    "DualarrError",
    "GradCheckReport",
    "IndexOutOfRangeError",
    "MissingDependencyError",
    "NotBotNormal",
    "PartialDerivativeError",
    "Pipeline",
    "PrimitiveDefinitionError",
    "PrimitiveError",
    "PrimitiveRedefinedError",
    "PrimitiveResultError",
    "Program",
    "ShapeError",
    "ShapeSpec",
    "SympyGradient",
    "Term",
    "TracingError",
    "UnsupportedDtypeError",
    "UnsupportedError",
    "__version__",
    "check_grad",
    "clear_caches",
    "config",
    "fori_loop",
    "grad",
    "is_bot_normal",
    "jacobian",
    "jit",
    "jvp",
    "pipeline",
    "rev",
    "scan",
    "sympy_gradient",
    "trace",
    "value_and_grad",
    "vjp",
    "vmap",
]
__all__ += functions.__all__


def __getattr__(name: str) -> Any:
    """``da.<name>`` for a primitive registered after import (``da.primitive``)."""
    from .lang import functions as lang

    return getattr(lang, name)
