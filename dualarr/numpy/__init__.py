"""NumPy's interface over the core language: ``import dualarr.numpy as dnp`` (paper §3,
Fig. 7; DESIGN §2).

The names and signatures are NumPy's (as ``jax.numpy``'s are); every function lowers at
trace time to the core language (gather, scatter, replicate, transpose, reshape,
sumOuter, contraction, build), so the bot, differentiation, code generation, printing
and drawing see only Fig. 7 constructs and the registry's primitives.  Outside a trace a
``dnp`` function runs now on NumPy arrays.

Indexing follows NumPy under every transformation (``grad`` in both modes, ``vjp``,
``jvp``, ``vmap``, ``jit``), computed indices included: ``x[idx]``, ``take`` and
``take_along_axis`` wrap an index ``i`` in ``[-n, 0)`` to ``i + n``, as NumPy and
``jax.numpy`` do, and the gradient flows to the wrapped element.  An index still out of
range cannot raise while tracing (it is data): the read gives 0 and its gradient 0, as
``jnp.take(mode="fill", fill_value=0)`` (NumPy raises ``IndexError``; ``jax.numpy``'s
``x[i]`` clamps).  Side by side, the core language keeps the paper's total semantics
(§5.2; DESIGN §2 "Totality"): ``da.index``, ``da.gather``, ``da.scatter`` and ``x[...]``
inside the index function of ``build``/``build1``/``map``/``gather``/``scatter`` do not
wrap: a negative index reads 0 and an out-of-range write is dropped.

Wherever NumPy takes an array-like, a ``dnp`` function takes a (nested) list or tuple,
which may hold traced values mixed with numbers and arrays (``dnp.mean([x, x + 2])``):
it is ``dnp.asarray`` of it (``fromList`` of the parts, NumPy's promotion); a ragged one
is a :class:`~dualarr.ShapeError`.
"""

from __future__ import annotations

from ..lang.tensor import install_numpy_functions
from . import _creation, _linalg, _more, _nan, _reductions, _shape, _sorting, _ufuncs
from ._creation import *  # noqa: F403
from ._linalg import *  # noqa: F403
from ._more import *  # noqa: F403
from ._nan import *  # noqa: F403
from ._reductions import *  # noqa: F403
from ._shape import *  # noqa: F403
from ._sorting import *  # noqa: F403
from ._ufuncs import *  # noqa: F403

__all__: list[str] = [
    *_creation.__all__,
    *_linalg.__all__,
    *_more.__all__,
    *_nan.__all__,
    *_reductions.__all__,
    *_shape.__all__,
    *_sorting.__all__,
    *_ufuncs.__all__,
]

install_numpy_functions({name: globals()[name] for name in __all__})
