"""``dualarr.numpy.linalg``: NumPy's ``numpy.linalg`` over the core language.

NumPy's names and signatures, batched over leading axes as NumPy's are.  Each function
lowers to the core language where that costs a constant factor; the factorisations and
solves are structural constructs of their own (kit extensions, not from the paper:
:mod:`dualarr.constructs`), each with its derivative and transpose written once and read
by every stage.  ``numpy.linalg.f`` called on a traced value dispatches here.
"""

from __future__ import annotations

from ...lang.tensor import install_numpy_functions
from . import _solve, _spectral
from ._solve import *  # noqa: F403
from ._spectral import *  # noqa: F403

__all__: list[str] = [*_solve.__all__, *_spectral.__all__]

install_numpy_functions({f"linalg.{name}": globals()[name] for name in __all__})
