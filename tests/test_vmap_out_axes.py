"""``da.vmap(f, in_axes, out_axes)``: ``out_axes`` as ``jax.vmap``'s (issue #39).

Each case of the table is compared with ``np.moveaxis`` of a stacked Python loop (the
definition), eagerly, under ``da.jit``, and through ``da.grad``; with JAX itself where
it is installed.  An int (negative too), None for an output that does not depend on the
mapped arguments, and a tuple/list/dict prefix of the result's structure; the misuses
are named :class:`ShapeError`s as JAX's are ``ValueError``s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import optree
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualarr as da
import dualarr.numpy as dnp
from dualarr.lang.errors import ShapeError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 2, 3))  # mapped over axis 0: 4 examples of shape (2, 3)
C = RNG.standard_normal(3)  # unmapped


def pair(x: Any, c: Any) -> Any:
    return (x * c, dnp.sum(x, axis=0))


def tree(x: Any, c: Any) -> Any:
    return {"scaled": x * c, "total": dnp.sum(x), "fixed": c * 2.0}


def nested(x: Any, c: Any) -> Any:
    return (x + c, [dnp.tanh(x), c + 1.0])


Case = tuple[str, Callable[..., Any], Any, Any]
CASES: list[Case] = [
    ("int 1", lambda x, c: x * c, (0, None), 1),
    ("int 2", lambda x, c: x * c, (0, None), 2),
    ("int -1", lambda x, c: x * c, (0, None), -1),
    ("int -3", lambda x, c: x * c, (0, None), -3),
    ("in_axes 1, out 1", lambda x, c: dnp.exp(x) + c, (1, None), 1),
    ("scalar output, -1", lambda x, c: dnp.sum(x * c), (0, None), -1),
    ("tuple prefix", pair, (0, None), (1, 0)),
    ("tuple prefix, negative", pair, (0, None), (-1, -1)),
    ("None for an unbatched output", lambda x, c: (x * c, c * 3.0), (0, None), (0, None)),
    ("dict prefix", tree, (0, None), {"scaled": 2, "total": 0, "fixed": None}),
    ("nested prefix", nested, (0, None), (1, [0, None])),
    ("prefix broadcast over a subtree", nested, (0, None), (-1, 0)),
    ("None, everything unbatched", lambda x, c: c * 2.0, (0, None), None),
]


def loop(f: Callable[..., Any], in_axes: Any, out_axes: Any, x: np.ndarray, c: np.ndarray) -> Any:
    """The definition: ``f`` on each slice, stacked on axis 0, the axis moved to its
    ``out_axes``; an out_axes None output is the (common) value of every slice."""
    mapped = np.moveaxis(x, in_axes[0], 0)
    outputs = [
        optree.tree_map(np.asarray, f(mapped[k], c), is_leaf=lambda v: v is None)
        for k in range(len(mapped))
    ]
    axes = optree.tree_broadcast_prefix(out_axes, outputs[0], none_is_leaf=True)
    leaves = [optree.tree_leaves(o) for o in outputs]
    placed = []
    for j, axis in enumerate(optree.tree_leaves(axes, none_is_leaf=True)):
        column = [np.asarray(leaf[j]) for leaf in leaves]
        if axis is None:
            for value in column:
                np.testing.assert_array_equal(value, column[0])
            placed.append(column[0])
        else:
            placed.append(np.moveaxis(np.stack(column), 0, axis))
    return optree.tree_unflatten(optree.tree_structure(outputs[0]), placed)


def same(got: Any, expected: Any) -> None:
    assert optree.tree_structure(got) == optree.tree_structure(expected)
    for g, e in zip(optree.tree_leaves(got), optree.tree_leaves(expected), strict=True):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(np.asarray(g), e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("label", "f", "in_axes", "out_axes"), CASES, ids=[c[0] for c in CASES])
def test_out_axes_is_moveaxis_of_the_stacked_loop(
    label: str, f: Callable[..., Any], in_axes: Any, out_axes: Any
) -> None:
    x = np.moveaxis(X, 0, in_axes[0])
    expected = loop(f, in_axes, out_axes, x, C)
    mapped = da.vmap(f, in_axes=in_axes, out_axes=out_axes)
    same(mapped(x, C), expected)
    flat = da.jit(lambda v, c: tuple(optree.tree_leaves(mapped(v, c))))(x, C)
    for g, e in zip(flat, optree.tree_leaves(expected), strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("label", "f", "in_axes", "out_axes"), CASES, ids=[c[0] for c in CASES])
def test_gradients_through_out_axes(
    label: str, f: Callable[..., Any], in_axes: Any, out_axes: Any
) -> None:
    """The gradient of a weighted sum of every output equals the gradient of the same
    loss over the stacked loop, which moves no axis (the weights moved instead)."""
    x = np.moveaxis(X, 0, in_axes[0])
    weights = optree.tree_map(
        lambda a: np.random.default_rng(np.ndim(a)).uniform(0.5, 1.5, np.shape(a)),
        loop(f, in_axes, out_axes, x, C),
    )

    def loss(v: Any, c: Any) -> Any:
        out = da.vmap(f, in_axes=in_axes, out_axes=out_axes)(v, c)
        parts = [
            dnp.sum(o * w)
            for o, w in zip(optree.tree_leaves(out), optree.tree_leaves(weights), strict=True)
        ]
        return sum(parts[1:], parts[0])

    def plain(v: Any, c: Any) -> Any:  # the same loss with out_axes=0 and moved weights
        out = da.vmap(f, in_axes=in_axes)(v, c)
        axes = optree.tree_broadcast_prefix(
            out_axes, optree.tree_map(lambda _: 0, out), none_is_leaf=True
        )
        total: Any = 0.0
        for o, w, a in zip(
            optree.tree_leaves(out),
            optree.tree_leaves(weights),
            optree.tree_leaves(axes, none_is_leaf=True),
            strict=True,
        ):
            if a is None:  # the unbatched output is counted once, not per example
                total = total + dnp.sum(o[0] * w)
            else:
                total = total + dnp.sum(o * np.moveaxis(w, a, 0))
        return total

    for mode in ("compiled", "interpret"):
        got = da.grad(loss, argnums=(0, 1), mode=mode)(x, C)
        want = da.grad(plain, argnums=(0, 1), mode=mode)(x, C)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_matches_jax_where_installed() -> None:
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def single(np_: Any) -> Callable[[Any, Any], Any]:
        return lambda x, c: np_.tanh(x) * c

    def two(np_: Any) -> Callable[[Any, Any], Any]:
        return lambda x, c: (np_.tanh(x) * c, np_.sum(np_.tanh(x) * c, axis=-1))

    def named(np_: Any) -> Callable[[Any, Any], Any]:
        return lambda x, c: {"a": np_.tanh(x) * c, "b": c + 1.0}

    for make, out_axes in [
        (single, 1),
        (single, -1),
        (two, (1, 0)),
        (two, (-1, 1)),
        (named, {"a": -1, "b": None}),
    ]:
        got = da.vmap(make(dnp), in_axes=(0, None), out_axes=out_axes)(X, C)
        want = jax.vmap(make(jnp), in_axes=(0, None), out_axes=out_axes)(X, C)
        same(got, optree.tree_map(np.asarray, want))
    # JAX rejects a mapped output with out_axes None, as dualarr does
    with pytest.raises(ValueError):
        jax.vmap(single(jnp), in_axes=(0, None), out_axes=None)(X, C)
    with pytest.raises(ShapeError):
        da.vmap(single(dnp), in_axes=(0, None), out_axes=None)(X, C)


def test_misuse_is_a_named_error() -> None:
    f = lambda x, c: x * c  # noqa: E731
    with pytest.raises(ShapeError, match="out_axes is None"):
        da.vmap(f, in_axes=(0, None), out_axes=None)(X, C)
    with pytest.raises(ShapeError, match="out of range"):
        da.vmap(f, in_axes=(0, None), out_axes=3)(X, C)
    with pytest.raises(ShapeError, match="out of range"):
        da.vmap(f, in_axes=(0, None), out_axes=-4)(X, C)
    with pytest.raises(ShapeError, match="tree prefix"):
        da.vmap(f, in_axes=(0, None), out_axes=(0, 1))(X, C)
    with pytest.raises(ShapeError, match="tree prefix"):
        da.vmap(pair, in_axes=(0, None), out_axes=[0, 1])(X, C)  # a list for a tuple
    with pytest.raises(ShapeError, match="out_axes must be"):
        da.vmap(f, out_axes=1.0)
    with pytest.raises(ShapeError, match="out_axes must be"):
        da.vmap(f, out_axes=(0, "1"))


def test_nests_and_works_inside_a_trace() -> None:
    """vmap of vmap, the inner one placing its axis last: ``y[j, k, i]`` is ``x[i, j] * k``."""
    x = np.arange(6.0).reshape(2, 3)
    ks = np.arange(4.0)

    def inner(row: Any) -> Any:
        return da.vmap(lambda k: row * k, out_axes=-1)(ks)  # (3, 4)

    got = da.vmap(inner, out_axes=2)(x)  # (3, 4, 2)
    expected = np.einsum("ij,k->jki", x, ks)
    np.testing.assert_allclose(got, expected)
    np.testing.assert_allclose(da.jit(da.vmap(inner, out_axes=2))(x), expected)


@settings(max_examples=20)
@given(
    rank=st.integers(0, 3),
    size=st.integers(0, 3),
    data=st.data(),
)
def test_drawn_ranks_and_axes(rank: int, size: int, data: Any) -> None:
    shape = tuple(data.draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank)))
    out_axis = data.draw(st.integers(-(rank + 1), rank))
    x = np.random.default_rng(rank).standard_normal((size, *shape))
    got = da.vmap(lambda v: dnp.sin(v) * 2.0, out_axes=out_axis)(x)
    np.testing.assert_allclose(got, np.moveaxis(np.sin(x) * 2.0, 0, out_axis))
