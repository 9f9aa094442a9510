# ruff: noqa: E501 - one malformed call per line: the error must point at that line
"""Every public entry point, driven with malformed calls: each raises a named
``DualarrError`` subclass whose message names the operation and whose location is the
user's line (here, the line of the table entry), never a bare TypeError, KeyError or
ValueError from inside the library, and never a silent wrong answer."""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da

X = np.array([1.0, 2.0, 3.0, 4.0])
M = np.arange(6.0).reshape(2, 3)
dx: Any = da  # the calls below are malformed on purpose: no static types for them
total = lambda x: da.sum(x)  # noqa: E731
leaked: list[Any] = []


def _leak(x: Any) -> Any:
    leaked.append(x)  # a tracer escapes its trace
    return x


dx.trace(_leak, X)


def traced(body: Callable[[Any], Any], x: Any = X) -> Callable[[], Any]:
    """A call that traces ``body`` (the error comes from inside the trace)."""
    return lambda: da.trace(body, x)


# (name, expected error class, a word the message contains, the malformed call)
CASES: list[tuple[str, type[da.DualarrError], str, Callable[[], Any]]] = [
    # binders given a lambda of the wrong arity
    ("build1 arity", da.DualarrError, "build1", traced(lambda x: dx.build1(3, lambda i, j: x[i]))),
    ("build arity", da.DualarrError, "build", traced(lambda x: dx.build((2, 2), lambda i: x[i]))),
    ("gather arity", da.DualarrError, "gather", traced(lambda x: dx.gather((2,), x, lambda i, j: (i,)))),
    ("scatter arity", da.DualarrError, "scatter", traced(lambda x: dx.scatter((2,), x, lambda: (0,)))),
    ("let arity", da.DualarrError, "let", traced(lambda x: dx.let(x, lambda: 1.0))),
    # argnums
    ("argnums float", da.DualarrError, "argnums", lambda: dx.grad(total, argnums=0.0)(X)),
    ("argnums empty", da.DualarrError, "argnums", lambda: dx.grad(total, argnums=())(X)),
    ("argnums bool", da.DualarrError, "argnums", lambda: dx.value_and_grad(total, argnums=True)(X)),
    ("argnums range", da.DualarrError, "argnums", lambda: dx.grad(total, argnums=3)(X)),
    ("jacobian argnums", da.DualarrError, "argnums", lambda: dx.jacobian(dx.sin, argnums="0")(X)),
    # arity of the call
    ("too few arguments", da.DualarrError, "grad", lambda: dx.grad(lambda a, b: dx.sum(a * b))(X)),
    ("too many arguments", da.DualarrError, "grad", lambda: dx.grad(total)(X, X)),
    ("no arguments", da.DualarrError, "grad", lambda: dx.grad(total)()),
    ("vjp arity", da.DualarrError, "vjp", lambda: dx.vjp(lambda a, b: a * b, X)),
    ("unknown keyword", da.DualarrError, "grad", lambda: dx.grad(total)(X, scale=2.0)),
    # jvp's tuples
    ("jvp primals not a tuple", da.DualarrError, "tuple", lambda: dx.jvp(dx.sin, X, X)),
    ("jvp lengths", da.DualarrError, "tangents", lambda: dx.jvp(dx.sin, (X,), (X, X))),
    ("jvp tangent shape", da.ShapeError, "tangent", lambda: dx.jvp(dx.sin, (X,), (M,))),
    # vmap's in_axes
    ("in_axes float", da.DualarrError, "in_axes", lambda: dx.vmap(dx.sin, in_axes=0.0)(M)),
    ("in_axes string", da.DualarrError, "in_axes", lambda: dx.vmap(dx.sin, in_axes="0")(M)),
    ("in_axes nested", da.DualarrError, "in_axes", lambda: dx.vmap(dx.sin, in_axes=((0,),))(M)),
    ("in_axes dict", da.DualarrError, "in_axes", lambda: dx.vmap(dx.sin, in_axes={"x": 0})(M)),
    ("in_axes length", da.DualarrError, "in_axes", lambda: dx.vmap(dx.sin, in_axes=(0, 0))(M)),
    ("in_axes range", da.ShapeError, "in_axes", lambda: dx.vmap(dx.sin, in_axes=2)(M)),
    # shapes and axes
    ("reshape None", da.DualarrError, "reshape", traced(lambda x: dx.reshape(x, None))),
    ("reshape floats", da.DualarrError, "reshape", traced(lambda x: dx.reshape(x, (2.0, 2.0)))),
    ("reshape size", da.ShapeError, "reshape", traced(lambda x: dx.reshape(x, (3, 3)))),
    ("sum float axis", da.DualarrError, "sum", traced(lambda x: dx.sum(x, axis=1.0))),
    ("max axis range", da.ShapeError, "max", traced(lambda x: dx.max(x, axis=(0, 1)))),
    ("elementwise shapes", da.ShapeError, "add", traced(lambda x: x + dx.constant(np.ones(3)))),
    # inputs
    ("ragged list", da.DualarrError, "argument", lambda: dx.grad(total)([[1.0, 2.0], [3.0]])),
    ("string input", da.DualarrError, "str", lambda: dx.grad(total)("abc")),
    ("int32 input", da.DtypeError, "int32", lambda: dx.grad(total)(np.ones(3, np.int32))),
    ("uint8 input", da.DtypeError, "uint8", lambda: dx.grad(total)(np.ones(3, np.uint8))),
    ("int input to grad", da.DtypeError, "float", lambda: dx.grad(total)(np.arange(3))),
    ("non-scalar output", da.ShapeError, "rank-0", lambda: dx.grad(dx.sin)(X)),
    ("tuple output to grad", da.ShapeError, "rank-0", lambda: dx.grad(lambda a: (dx.sum(a), a))(X)),
    ("has_aux without a pair", da.DualarrError, "pair", lambda: dx.grad(total, has_aux=True)(X)),
    # traced values misused
    ("format a traced value", da.TracingError, "format", traced(lambda x: f"{x:.2f}" and x)),
    ("hash a traced value", da.TracingError, "hash", traced(lambda x: {x: 1} and x)),
    ("bool of a traced value", da.TracingError, "where", traced(lambda x: x if x[0] > 0 else -x)),
    ("leaked tracer", da.TracingError, "trace", lambda: leaked[0] + 1.0),
    # cotangents
    ("complex cotangent", da.DtypeError, "complex", lambda: dx.vjp(dx.sin, X)[1](X * 1j)),
    ("cotangent shape", da.ShapeError, "cotangent", lambda: dx.vjp(dx.sin, X)[1](M)),
    ("cotangent count", da.DualarrError, "cotangent", lambda: dx.vjp(dx.sin, X)[1](X, X)),
    # options
    ("unknown mode", da.DualarrError, "mode", lambda: dx.grad(total, mode="fast")),
    ("unknown backend", da.DualarrError, "backend", lambda: dx.grad(total, backend="tpu")),
    ("jit static keyword", da.DualarrError, "hashable", lambda: dx.jit(lambda a, s: a * s)(X, s=X)),
    ("vmap of a non-function", da.DualarrError, "function", lambda: dx.vmap(3)),
]


@pytest.mark.parametrize(("name", "kind", "word", "call"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_call_raises_a_named_error_at_the_users_line(
    name: str, kind: type[da.DualarrError], word: str, call: Callable[[], Any]
) -> None:
    with pytest.raises(da.DualarrError) as info:
        call()
    err = info.value
    assert isinstance(err, kind), f"{name}: {type(err).__name__}: {err}"
    assert word.lower() in str(err).lower(), f"{name}: {err}"
    assert err.op, f"{name}: no operation named"
    location = err.location or ""
    assert f"{__file__}:" in location, f"{name}: location {location!r}"
    line = int(location.split(f"{__file__}:")[1].split(":")[0])
    source = linecache.getline(__file__, line)
    assert f'("{name}"' in source, f"{name}: the location points at {source.strip()!r}"


def test_the_table_covers_every_public_transformation() -> None:
    names = " ".join(c[0] for c in CASES)
    assert len(CASES) >= 25
    for word in ("argnums", "jvp", "vjp", "in_axes", "reshape", "build1", "let", "jit"):
        assert word in names
