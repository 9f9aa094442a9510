"""``rev_a e``: ``e`` reversed along dimension ``a`` — a structural construct of its own.

Not from the paper: a kit extension, and the worked example of adding a construct
(``book/constructs.md``).  Element ``i`` of ``rev_a e`` along ``a`` is element
``n - 1 - i`` of ``e`` (``n`` the extent of ``a``); every other dimension is kept.  It
could be written as a ``gather``; as a construct it has rules of its own, each stated
once below and registered in its stage's table:

- shape: ``rev_a e : τ[sh]`` for ``e : τ[sh]`` and ``0 <= a < rank sh``
- meaning on arrays: ``xp.flip(e, axis=a)``
- D (Fig. 14): linear, so ``D[rev_a e] = Rev_a D[e]``; T (§6.2): ``T[Rev_a u] = let c =
  Rev_a c in T[u]`` (a reversal is its own transpose)
- smart constructor: ``rev_a (rev_a e) = e``; a small constant folds
- bot, Fig. 9: ``build1 k (λi. rev_a e) = rev_(a+1) (build1 k (λi. e))``
- bot, Fig. 10: ``index (rev_a e) ix = index e ix'`` where ``ix'`` reads ``n-1-ix[a]``
  at ``a`` (out of range stays out of range, so the total semantics is kept), or
  ``rev_(a-|ix|) (index e ix)`` when ``a`` is past the index
- printed ``rev a e``; drawn as a node ``rev a``
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ad import delta as dl
from ..ad.dual import DERIVATIVES, linear_derivative
from ..ad.reverse import TRANSPOSE_RULES, CotangentAlgebra
from ..interp.algebra import ARRAY_MEANINGS
from ..lang.errors import ShapeError, format_shape
from ..lang.functions import ensure_tensor
from ..lang.tensor import Operand, Tensor
from ..lang.terms import Const, DType, Index, Op, Shape, Structural, Term, int_const
from ..vectorise.bot import (
    BUILD1_INDEX_RULES,
    BUILD1_RULES,
    INDEX_RULES,
    IndexPusher,
    Push,
    Rewrite,
    Vec,
    Vectoriser,
)
from ..vectorise.simplify import REWRITE_NAMES, SMART_CONSTRUCTORS, Simplifier, is_small_constant

__all__ = ["Rev", "rev"]


@dataclass(frozen=True, eq=False, repr=False)
class Rev(Structural):
    """``rev_a e``: ``e`` reversed along dimension ``axis`` (a kit construct)."""

    name = "rev"
    axis: int
    array: Term

    @classmethod
    def result_type(
        cls, params: Mapping[str, Any], shapes: Sequence[Shape], dtypes: Sequence[DType]
    ) -> tuple[Shape, DType]:
        (shape,), axis = shapes, params["axis"]
        if not isinstance(axis, int) or not 0 <= axis < len(shape):
            raise ShapeError(
                f"axis {axis!r} is not a dimension of an array of shape {format_shape(shape)}",
                op="rev",
                shapes=[shape],
            )
        return shape, dtypes[0]


def rev(x: Operand, axis: int = 0) -> Tensor:
    """``rev_axis x``: ``x`` reversed along ``axis`` (negative counts from the end), as
    one construct of the core language (``np.flip(x, axis)``)."""
    t = ensure_tensor(x, "rev")
    rank = len(t.shape)
    return Tensor(Rev(axis + rank if -rank <= axis < 0 else axis, t.term))


@ARRAY_MEANINGS.register(Rev)
def _flip(xp: Any, array: Any, *, axis: int) -> Any:
    return xp.flip(array, axis=axis)


DERIVATIVES.register(Rev)(linear_derivative)


@TRANSPOSE_RULES.register(Rev)
def _transpose_rev(alg: CotangentAlgebra[Any], d: dl.Structural, c: Any) -> Any:
    return alg.structural(Rev, [c], d.arguments)


# -- the simplifier (the cleanup of §5.1 and §7.1) --------------------------------------

@SMART_CONSTRUCTORS.register(Rev)
def _mk_rev(s: Simplifier, t: Rev) -> Term:
    """``rev_a (rev_a e) = e``; a reversal of a small constant is folded."""
    a = t.array
    if isinstance(a, Rev) and a.axis == t.axis:
        return a.array
    if is_small_constant(a):
        return Const(_flip(np, a.value, axis=t.axis))
    return t


@REWRITE_NAMES.register(Rev)
def _named_rev(before: Rev, after: Term) -> tuple[str, str]:
    if isinstance(after, Const):
        return "constant-fold", "a reversal of a constant, folded"
    return "rev-rev", "a reversal reversed is its array (rev, a kit construct)"


# -- the bot (§5): Fig. 9 and Fig. 10 ------------------------------------------------------

_KIT = "rev, a construct of its own module (dualarr.constructs.rev), not in the paper"


@BUILD1_RULES.register(Rev)
def _build1_rev(v: Vectoriser, e: Rev) -> Rewrite:
    """``build1 k (λi. rev_a e) = rev_(a+1) (build1 k (λi. e))``."""
    axis = e.axis
    return Rewrite(
        "build1-rev", "Fig. 9", (Vec(e.array),), lambda rs: Rev(axis + 1, rs[0]), _KIT
    )


def _index_through(a: Rev, ix: tuple[Term, ...]) -> Index | None:
    """``index (rev_a e) ix`` as an index of ``e`` when ``ix`` reaches dimension ``a``:
    component ``a`` becomes ``n - 1 - ix[a]`` (out of range stays out of range)."""
    if a.axis >= len(ix):
        return None
    flipped = Op("sub", (int_const(a.shape[a.axis] - 1), ix[a.axis]))
    return Index(a.array, (*ix[: a.axis], flipped, *ix[a.axis + 1 :]))


@BUILD1_INDEX_RULES.register(Rev)
def _vindex_rev(v: Vectoriser, a: Rev, ix: tuple[Term, ...]) -> Rewrite:
    """``B[index (rev_a e) ix]``: the index pushed through the reversal, then vectorised."""
    through = _index_through(a, ix)
    axis = a.axis - len(ix)
    if through is not None:
        return Rewrite("index-rev", "Fig. 10", (Vec(through),), lambda rs: rs[0], _KIT)
    return Rewrite(
        "index-rev", "Fig. 10", (Vec(Index(a.array, ix)),), lambda rs: Rev(axis + 1, rs[0]), _KIT
    )


@INDEX_RULES.register(Rev)
def _push_rev(p: IndexPusher, a: Rev, ix: tuple[Term, ...]) -> Rewrite:
    """``I[rev_a e, ix]``: pushed through the reversal (Fig. 10's rule for ``tr``)."""
    through = _index_through(a, ix)
    axis = a.axis - len(ix)
    if through is not None:  # an index of e: pushed on
        pushed = (Push(through.array, through.index),)
        return Rewrite("index-rev", "Fig. 10", pushed, lambda rs: rs[0], _KIT)
    return Rewrite(
        "index-rev", "Fig. 10", (Push(a.array, ix),), lambda rs: Rev(axis, rs[0]), _KIT
    )
