"""NumPy's interface over the core language: ``import dualarr.numpy as dnp`` (paper §3,
Fig. 7; DESIGN §2).

The names and signatures are NumPy's (as ``jax.numpy``'s are); every function lowers at
trace time to the core language (gather, scatter, replicate, transpose, reshape,
sumOuter, contraction, build), so the bot, differentiation, code generation, printing
and drawing see only Fig. 7 constructs and the registry's primitives.  Outside a trace a
``dnp`` function runs now on NumPy arrays.
"""

from __future__ import annotations

from ..lang.tensor import install_numpy_functions
from . import _creation, _linalg, _reductions, _shape, _sorting, _ufuncs
from ._creation import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._reductions import *  # noqa: F403
from ._shape import *  # noqa: F403
from ._sorting import *  # noqa: F403
from ._ufuncs import *  # noqa: F403

__all__: list[str] = [
    *_creation.__all__,
    *_linalg.__all__,
    *_reductions.__all__,
    *_shape.__all__,
    *_sorting.__all__,
    *_ufuncs.__all__,
]

install_numpy_functions({name: globals()[name] for name in __all__})
