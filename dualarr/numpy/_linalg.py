"""NumPy's products: ``dot``, ``vdot``, ``inner``, ``outer``, ``matmul``, ``tensordot``,
``einsum``, ``kron`` and ``cross``, lowered to the core language.

Every product is an Einstein summation over labelled dimensions, computed two operands
at a time.  For float operands one step is one ``contract`` (a :class:`Contract` term:
a bilinear contraction, differentiated as one and transposed into contractions); a label
that only one operand has and the result drops is first summed away (``sumOuter``), so
every contraction is well formed.  Integer and bool operands (``contract`` is for floats)
are multiplied elementwise with NumPy broadcasting and summed, so ``int`` products stay
``int`` and ``bool`` ones ``bool``, as in NumPy.  The operands are first promoted to one
element type by NumPy's rules (float32 with float64, or with an int64 array, is float64:
``fromIntegral`` converts them).  A label repeated on one operand (a diagonal,
``einsum("ii->i", a)``) is a ``gather``; a dimension of extent 1 that broadcasts against
a longer one is reshaped away.
"""

from __future__ import annotations

import math
import string
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..lang import functions as F
from ..lang.errors import DtypeError, ShapeError, UnsupportedError, format_shape
from ..lang.tensor import Operand, Tensor, broadcast_shapes, lift_shape, new_var, promote
from ..lang.terms import Contract, DType, Gather, OpKind, Term
from ._core import normalize_axis, numpy_function, to_tensor

__all__ = [
    "cross",
    "dot",
    "einsum",
    "inner",
    "kron",
    "matmul",
    "outer",
    "tensordot",
    "vdot",
]

Label = Hashable
Labels = tuple[Label, ...]

# --------------------------------------------------------------------------------------
# Einstein summation over labelled operands
# --------------------------------------------------------------------------------------


def _operands(op: str, values: Sequence[Operand]) -> tuple[list[Tensor], bool]:
    """The operands as tensors of one numeric element type (Python numbers weak), and
    whether every one was bool (then the product is a bool, ``any`` of the products)."""
    terms = promote(op, OpKind.NUM_BINARY, list(values))
    all_bool = all(
        isinstance(v, bool)
        if isinstance(v, bool | int | float)
        else to_tensor(v, op).term.dtype is DType.BOOL
        for v in values
    )
    return [Tensor(t) for t in terms], all_bool


def _as_bool(result: Tensor, all_bool: bool) -> Tensor:
    return result != 0 if all_bool else result


def _sizes(op: str, operands: Sequence[tuple[Tensor, Labels]]) -> dict[Label, int]:
    """The extent of each label: equal extents, or 1 broadcasting against one other."""
    extents: dict[Label, set[int]] = {}
    for t, labels in operands:
        for label, n in zip(labels, t.shape, strict=True):
            extents.setdefault(label, set()).add(n)
    sizes: dict[Label, int] = {}
    for label, found in extents.items():
        long = found - {1}
        if len(long) > 1:
            raise ShapeError(
                "operands could not be broadcast together: one dimension has extents "
                + ", ".join(str(n) for n in sorted(found))
                + " in "
                + ", ".join(format_shape(t.shape) for t, _ in operands),
                op=op,
                shapes=[t.shape for t, _ in operands],
            )
        sizes[label] = long.pop() if long else 1
    return sizes


def _squeeze(t: Tensor, labels: Labels, sizes: dict[Label, int]) -> tuple[Tensor, Labels]:
    """Drop the dimensions of extent 1 that broadcast against a longer one (reshape)."""
    keep = [k for k, label in enumerate(labels) if t.shape[k] == sizes[label]]
    if len(keep) == len(labels):
        return t, labels
    return F.reshape(t, tuple(t.shape[k] for k in keep)), tuple(labels[k] for k in keep)


def _sum_out(t: Tensor, labels: Labels, needed: set[Label]) -> tuple[Tensor, Labels]:
    """Sum over the dimensions whose labels are not ``needed`` (sumOuter)."""
    axes = tuple(k for k, label in enumerate(labels) if label not in needed)
    if not axes:
        return t, labels
    kept = tuple(label for label in labels if label in needed)
    return F.sum(t, axis=axes), kept


def _arrange(t: Tensor, labels: Labels, order: Labels) -> Tensor:
    """``t`` with its dimensions in the order of ``labels`` within ``order`` (a transpose)
    and a dimension of extent 1 for each label of ``order`` it lacks (a reshape)."""
    present = [label for label in order if label in labels]
    t = F.transpose(t, [labels.index(label) for label in present])
    shape = tuple(t.shape[present.index(label)] if label in labels else 1 for label in order)
    return F.reshape(t, shape)


def _spec(la: Labels, lb: Labels, out: Labels) -> str:
    letters: dict[Label, str] = {}
    for label in (*la, *lb, *out):
        if label not in letters:
            if len(letters) == len(string.ascii_letters):
                raise UnsupportedError("more than 52 distinct dimensions", op="contract")
            letters[label] = string.ascii_letters[len(letters)]
    return (
        "".join(letters[c] for c in la)
        + ","
        + "".join(letters[c] for c in lb)
        + "->"
        + "".join(letters[c] for c in out)
    )


def _pair(a: Tensor, la: Labels, b: Tensor, lb: Labels, out: Labels) -> Tensor:
    """``out[out] = sum over the other labels of a[la] * b[lb]`` (labels distinct within
    each operand, equal labels of equal extent; every output label on an operand)."""
    a, la = _sum_out(a, la, set(lb) | set(out))
    b, lb = _sum_out(b, lb, set(la) | set(out))
    if a.term.dtype.is_float:
        return Tensor(Contract(_spec(la, lb, out), a.term, b.term))
    summed = tuple(label for label in la if label in lb and label not in out)
    order = (*out, *summed)
    product = _arrange(a, la, order) * _arrange(b, lb, order)
    if not summed:
        return product
    return F.sum(product, axis=tuple(range(len(out), len(order))))


def _diagonal(op: str, t: Tensor, labels: Labels) -> tuple[Tensor, Labels]:
    """A label repeated on one operand takes the diagonal: ``gather [n] a (λ[i]. [i, i])``."""
    unique = tuple(dict.fromkeys(labels))
    if len(unique) == len(labels):
        return t, labels
    extent: dict[Label, int] = {}
    for label, n in zip(labels, t.shape, strict=True):
        if extent.setdefault(label, n) != n:
            raise ShapeError(
                f"a repeated subscript has extents {extent[label]} and {n} in an operand "
                f"of shape {format_shape(t.shape)}",
                op=op,
                shapes=[t.shape],
            )
    variables = tuple(new_var(op, "i", (), DType.INT64) for _ in unique)
    index: tuple[Term, ...] = tuple(variables[unique.index(label)] for label in labels)
    outer = tuple(extent[label] for label in unique)
    return Tensor(Gather(outer, t.term, variables, index)), unique


def _summation(
    op: str,
    values: Sequence[Operand],
    labels: Sequence[Labels],
    out: Labels,
) -> Tensor:
    """The Einstein summation ``out <- labels[0], labels[1], …`` of ``values``, two
    operands at a time from the left (one ``contract`` per pair for floats)."""
    tensors, all_bool = _operands(op, values)
    operands: list[tuple[Tensor, Labels]] = []
    for t, ls in zip(tensors, labels, strict=True):
        if len(ls) != len(t.shape):
            raise ShapeError(
                f"{len(ls)} subscripts for an operand of rank {len(t.shape)} "
                f"(shape {format_shape(t.shape)})",
                op=op,
                shapes=[t.shape],
            )
        operands.append(_diagonal(op, t, ls))
    sizes = _sizes(op, operands)
    operands = [_squeeze(t, ls, sizes) for t, ls in operands]
    acc, acc_labels = operands[0]
    if len(operands) == 1:
        acc, acc_labels = _sum_out(acc, acc_labels, set(out))
        return _as_bool(_arrange(acc, acc_labels, out), all_bool)
    for k in range(1, len(operands)):
        t, ls = operands[k]
        if k == len(operands) - 1:
            step_out = out
        else:
            later = set(out).union(*(set(rest) for _, rest in operands[k + 1 :]))
            step_out = tuple(
                label for label in dict.fromkeys((*acc_labels, *ls)) if label in later
            )
        acc, acc_labels = _pair(acc, acc_labels, t, ls, step_out), step_out
    return _as_bool(acc, all_bool)


def _letters(rank: int, start: int = 0) -> Labels:
    return tuple(range(start, start + rank))


# --------------------------------------------------------------------------------------
# dot, vdot, inner, outer, matmul, tensordot, kron
# --------------------------------------------------------------------------------------


@numpy_function
def dot(a: Operand, b: Operand) -> Tensor:
    """Dot product of two arrays (NumPy's ``dot``): a product for a rank-0 operand, else a
    ``contract`` of ``a``'s last dimension with ``b``'s last (``b`` of rank 1) or
    second-to-last one."""
    op = "numpy.dot"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    ra, rb = len(ta.shape), len(tb.shape)
    if ra == 0 or rb == 0:
        la, lb = _letters(ra), _letters(rb, 100)
        return _summation(op, [a, b], [la, lb], la + lb)
    k = -1 if rb == 1 else -2
    if ta.shape[-1] != tb.shape[k]:
        raise ShapeError(
            f"shapes {format_shape(ta.shape)} and {format_shape(tb.shape)} not aligned: "
            f"{ta.shape[-1]} (dim {ra - 1}) != {tb.shape[k]} (dim {rb + k})",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    la = _letters(ra)
    lb_list = list(_letters(rb, 100))
    lb_list[k] = la[-1]
    out = la[:-1] + tuple(label for label in lb_list if label != la[-1])
    return _summation(op, [a, b], [la, tuple(lb_list)], out)


@numpy_function
def vdot(a: Operand, b: Operand) -> Tensor:
    """The dot product of the flattened arrays (NumPy's ``vdot``; real arrays, so no
    conjugation): reshapes and one ``contract`` to a scalar."""
    op = "numpy.vdot"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    if math.prod(ta.shape) != math.prod(tb.shape):
        raise ShapeError(
            f"vectors have different lengths: {format_shape(ta.shape)} and "
            f"{format_shape(tb.shape)}",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    flat_a = F.reshape(ta, (math.prod(ta.shape),))
    flat_b = F.reshape(tb, (math.prod(tb.shape),))
    return _summation(op, [flat_a, flat_b], [(0,), (0,)], ())


@numpy_function
def inner(a: Operand, b: Operand) -> Tensor:
    """Inner product over the last dimensions (NumPy's ``inner``): one ``contract``
    (a product for a rank-0 operand)."""
    op = "numpy.inner"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    ra, rb = len(ta.shape), len(tb.shape)
    la, lb = _letters(ra), _letters(rb, 100)
    if ra == 0 or rb == 0:
        return _summation(op, [a, b], [la, lb], la + lb)
    if ta.shape[-1] != tb.shape[-1]:
        raise ShapeError(
            f"last dimensions differ: {format_shape(ta.shape)} and {format_shape(tb.shape)}",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    lb = (*lb[:-1], la[-1])
    return _summation(op, [a, b], [la, lb], la[:-1] + lb[:-1])


@numpy_function
def outer(a: Operand, b: Operand) -> Tensor:
    """Outer product of the flattened arrays (NumPy's ``outer``): ``contract "i,j->ij"``."""
    op = "numpy.outer"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    flat_a = F.reshape(ta, (math.prod(ta.shape),))
    flat_b = F.reshape(tb, (math.prod(tb.shape),))
    return _summation(op, [flat_a, flat_b], [(0,), (1,)], (0, 1))


@numpy_function
def matmul(x1: Operand, x2: Operand) -> Tensor:
    """Matrix product with NumPy's rules (``numpy.matmul``): rank >= 1; a rank-1 operand is
    a row (left) or column (right) vector whose dimension is dropped from the result;
    leading dimensions are batch dimensions that broadcast.  One ``contract``."""
    op = "numpy.matmul"
    ta, tb = to_tensor(x1, op), to_tensor(x2, op)
    ra, rb = len(ta.shape), len(tb.shape)
    if ra == 0 or rb == 0:
        raise ShapeError(
            f"operand {0 if ra == 0 else 1} is rank 0 (scalars need `*`, not matmul)",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    inner_a = ta.shape[-1]
    inner_b = tb.shape[0] if rb == 1 else tb.shape[-2]
    if inner_a != inner_b:
        raise ShapeError(
            f"inner dimensions differ: {format_shape(ta.shape)} @ {format_shape(tb.shape)} "
            f"({inner_a} != {inner_b})",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    batch_a, batch_b = ta.shape[:-2], tb.shape[:-2]
    batch = len(max(batch_a, batch_b, key=len))
    summed, row, col = "k", "m", "n"
    batch_labels: Labels = tuple(range(batch))
    la: Labels = (summed,) if ra == 1 else (*batch_labels[batch - len(batch_a) :], row, summed)
    lb: Labels = (summed,) if rb == 1 else (*batch_labels[batch - len(batch_b) :], summed, col)
    out: Labels = (
        *batch_labels,
        *((row,) if ra > 1 else ()),
        *((col,) if rb > 1 else ()),
    )
    return _summation(op, [ta, tb], [la, lb], out)


@numpy_function
def tensordot(a: Operand, b: Operand, axes: int | Sequence[Any] = 2) -> Tensor:
    """Sum of products over the given axes (NumPy's ``tensordot``): ``axes=N`` pairs the
    last ``N`` dimensions of ``a`` with the first ``N`` of ``b``; ``axes=(axes_a,
    axes_b)`` names them.  One ``contract``; the free dimensions of ``a`` then ``b``."""
    op = "numpy.tensordot"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    ra, rb = len(ta.shape), len(tb.shape)
    if isinstance(axes, int | np.integer) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0 or n > ra or n > rb:
            raise ShapeError(
                f"axes={n} needs 0 <= axes <= the ranks {ra} and {rb}",
                op=op,
                shapes=[ta.shape, tb.shape],
            )
        axes_a: list[int] = list(range(ra - n, ra))
        axes_b: list[int] = list(range(n))
    else:
        try:
            first, second = axes  # type: ignore[misc]
        except (TypeError, ValueError):
            raise ShapeError(
                f"axes must be an int or a pair of axis sequences, got {axes!r}", op=op
            ) from None
        seq_a = list(first) if isinstance(first, list | tuple) else [first]
        seq_b = list(second) if isinstance(second, list | tuple) else [second]
        if len(seq_a) != len(seq_b):
            raise ShapeError(
                f"shape-mismatch for sum: {len(seq_a)} axes of a, {len(seq_b)} of b",
                op=op,
                shapes=[ta.shape, tb.shape],
            )
        axes_a = [normalize_axis(x, ra, op) for x in seq_a]
        axes_b = [normalize_axis(x, rb, op) for x in seq_b]
        if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
            raise ShapeError(f"repeated axis in {axes!r}", op=op)
    for x, y in zip(axes_a, axes_b, strict=True):
        if ta.shape[x] != tb.shape[y]:
            raise ShapeError(
                f"shape-mismatch for sum: axis {x} of {format_shape(ta.shape)} and axis {y} "
                f"of {format_shape(tb.shape)}",
                op=op,
                shapes=[ta.shape, tb.shape],
            )
    la = _letters(ra)
    lb = list(_letters(rb, 100))
    for x, y in zip(axes_a, axes_b, strict=True):
        lb[y] = la[x]
    out = tuple(la[k] for k in range(ra) if k not in axes_a) + tuple(
        lb[k] for k in range(rb) if k not in axes_b
    )
    return _summation(op, [ta, tb], [la, tuple(lb)], out)


@numpy_function
def kron(a: Operand, b: Operand) -> Tensor:
    """Kronecker product (NumPy's ``kron``): the outer product ``contract "ab,cd->acbd"``
    with the dimensions of ``a`` and ``b`` interleaved, then one reshape."""
    op = "numpy.kron"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    rank = max(len(ta.shape), len(tb.shape))
    ta = F.reshape(ta, (1,) * (rank - len(ta.shape)) + ta.shape)
    tb = F.reshape(tb, (1,) * (rank - len(tb.shape)) + tb.shape)
    la, lb = _letters(rank), _letters(rank, 100)
    out = tuple(label for pair in zip(la, lb, strict=True) for label in pair)
    product = _summation(op, [ta, tb], [la, lb], out)
    return F.reshape(product, tuple(m * n for m, n in zip(ta.shape, tb.shape, strict=True)))


# --------------------------------------------------------------------------------------
# einsum
# --------------------------------------------------------------------------------------

_ELLIPSIS = "..."


def _parse_term(op: str, text: str) -> list[str]:
    """One operand's subscripts as a list of letters, ``"..."`` standing for the ellipsis."""
    items: list[str] = []
    rest = text
    while rest:
        if rest.startswith(_ELLIPSIS):
            if _ELLIPSIS in items:
                raise ShapeError(f"more than one ellipsis in {text!r}", op=op)
            items.append(_ELLIPSIS)
            rest = rest[3:]
            continue
        char, rest = rest[0], rest[1:]
        if char not in string.ascii_letters:
            raise ShapeError(f"invalid subscript {char!r} in {text!r}", op=op)
        items.append(char)
    return items


def _sublist(op: str, sub: Any) -> str:
    """An interleaved-form subscript list (ints 0–51, ``...``) as a subscript string."""
    if not isinstance(sub, list | tuple):
        raise ShapeError(f"expected a subscript list, got {sub!r}", op=op)
    text = ""
    for item in sub:
        if item is Ellipsis:
            text += _ELLIPSIS
        elif isinstance(item, int | np.integer) and 0 <= int(item) < 52:
            text += (string.ascii_uppercase + string.ascii_lowercase)[int(item)]
        else:
            raise ShapeError(f"subscripts must be ints in [0, 52) or ..., got {item!r}", op=op)
    return text


def _einsum_arguments(op: str, operands: Sequence[Any]) -> tuple[str, list[Any]]:
    if not operands:
        raise ShapeError("needs a subscripts string and at least one operand", op=op)
    if isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    values = list(operands[0::2])
    subs = [_sublist(op, s) for s in operands[1::2]]
    if len(values) > len(subs):  # a trailing output list
        output = values.pop()
        return ",".join(subs) + "->" + _sublist(op, output), values
    return ",".join(subs), values


@numpy_function
def einsum(*operands: Any, optimize: bool | str = False) -> Tensor:
    """Einstein summation (NumPy's ``einsum``): ``einsum("ij,jk->ik", a, b)`` or the
    interleaved form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.  Explicit and implicit
    output, ``...`` broadcasting, a repeated subscript on one operand for a diagonal
    (a ``gather``); the operands are contracted two at a time from the left, one
    ``contract`` per pair (``optimize`` is accepted and the order kept)."""
    op = "numpy.einsum"
    if not isinstance(optimize, bool | str):
        raise ShapeError(f"optimize must be a bool or a string, got {optimize!r}", op=op)
    subscripts, values = _einsum_arguments(op, operands)
    text = subscripts.replace(" ", "")
    if "->" in text:
        inputs_text, output_text = text.split("->", 1)
        if "->" in output_text:
            raise ShapeError(f"malformed subscripts {subscripts!r}", op=op)
    else:
        inputs_text, output_text = text, None
    inputs = [_parse_term(op, part) for part in inputs_text.split(",")]
    if len(inputs) != len(values) or not values:
        raise ShapeError(
            f"{subscripts!r} names {len(inputs)} operands but {len(values)} were given",
            op=op,
        )
    tensors = [to_tensor(v, op) for v in values]
    # ellipsis dimensions: labels 0..E-1, right-aligned
    widths = []
    for items, t in zip(inputs, tensors, strict=True):
        named = len([c for c in items if c != _ELLIPSIS])
        width = len(t.shape) - named
        if width < 0 or (width > 0 and _ELLIPSIS not in items):
            raise ShapeError(
                f"operand of shape {format_shape(t.shape)} has {named} subscripts "
                f"{''.join(items)!r}",
                op=op,
                shapes=[t.shape],
            )
        widths.append(width)
    ellipsis_rank = max(widths)
    labels: list[Labels] = []
    for items, width in zip(inputs, widths, strict=True):
        expanded: list[Label] = []
        for c in items:
            if c == _ELLIPSIS:
                expanded.extend(range(ellipsis_rank - width, ellipsis_rank))
            else:
                expanded.append(c)
        labels.append(tuple(expanded))
    if output_text is None:
        counts: dict[str, int] = {}
        for items in inputs:
            for c in items:
                if c != _ELLIPSIS:
                    counts[c] = counts.get(c, 0) + 1
        out: Labels = (
            *range(ellipsis_rank),
            *sorted(c for c, n in counts.items() if n == 1),
        )
    else:
        items = _parse_term(op, output_text)
        if ellipsis_rank and _ELLIPSIS not in items:
            raise ShapeError(
                f"the output {output_text!r} has no '...' for the broadcast dimensions",
                op=op,
            )
        letters = [c for c in items if c != _ELLIPSIS]
        if len(set(letters)) != len(letters):
            raise ShapeError(f"repeated subscript in the output {output_text!r}", op=op)
        used = {c for ls in labels for c in ls}
        missing = [c for c in letters if c not in used]
        if missing:
            raise ShapeError(
                f"output subscript {missing[0]!r} does not occur in an input", op=op
            )
        expanded_out: list[Label] = []
        for c in items:
            if c == _ELLIPSIS:
                expanded_out.extend(range(ellipsis_rank))
            else:
                expanded_out.append(c)
        out = tuple(expanded_out)
    return _summation(op, tensors, labels, out)


# --------------------------------------------------------------------------------------
# cross
# --------------------------------------------------------------------------------------


def _components(t: Tensor, axis: int) -> list[Tensor]:
    """The vector components of ``t`` along ``axis``: ``index`` after a ``tr``."""
    moved = F.transpose(t, [axis, *[d for d in range(len(t.shape)) if d != axis]])
    return [F.index(moved, (k,)) for k in range(moved.shape[0])]


@numpy_function
def cross(
    a: Operand,
    b: Operand,
    axisa: int = -1,
    axisb: int = -1,
    axisc: int = -1,
    axis: int | None = None,
) -> Tensor:
    """Cross product of 3-vectors (or 2-vectors, as NumPy: a missing third component is
    0, and two 2-vectors give the scalar third component) along ``axisa``/``axisb``,
    the result's vectors along ``axisc`` (``axis`` sets all three); the other dimensions
    broadcast.  Components are ``index``-ed, combined elementwise and stacked."""
    op = "numpy.cross"
    ta, tb = to_tensor(a, op), to_tensor(b, op)
    if axis is not None:
        axisa = axisb = axisc = axis
    if ta.term.dtype is DType.BOOL or tb.term.dtype is DType.BOOL:
        raise DtypeError("the cross product of bool arrays is not defined", op=op)
    if not ta.shape or not tb.shape:
        raise ShapeError("needs arrays of rank >= 1", op=op, shapes=[ta.shape, tb.shape])
    xa = normalize_axis(axisa, len(ta.shape), op, "axisa")
    xb = normalize_axis(axisb, len(tb.shape), op, "axisb")
    na, nb = ta.shape[xa], tb.shape[xb]
    if na not in (2, 3) or nb not in (2, 3):
        raise ShapeError(
            f"incompatible dimensions for cross product: {na} and {nb} (must be 2 or 3)",
            op=op,
            shapes=[ta.shape, tb.shape],
        )
    pa, pb = (Tensor(t) for t in promote(op, OpKind.NUM_BINARY, [ta, tb]))
    ca, cb = _components(pa, xa), _components(pb, xb)
    if na == 2 and nb == 2:
        return ca[0] * cb[1] - ca[1] * cb[0]
    a0, a1 = ca[0], ca[1]
    b0, b1 = cb[0], cb[1]
    if na == 3 and nb == 3:
        a2, b2 = ca[2], cb[2]
        parts = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    elif na == 2:
        b2 = cb[2]
        parts = [a1 * b2, -(a0 * b2), a0 * b1 - a1 * b0]
    else:
        a2 = ca[2]
        parts = [-(a2 * b1), a2 * b0, a0 * b1 - a1 * b0]
    shape = broadcast_shapes(op, [p.shape for p in parts])
    stacked = F.stack([Tensor(lift_shape(p.term, shape)) for p in parts], axis=-1)
    xc = normalize_axis(axisc, len(stacked.shape), op, "axisc")
    rank = len(stacked.shape)
    perm = list(range(rank - 1))
    perm.insert(xc, rank - 1)
    return F.transpose(stacked, perm)

