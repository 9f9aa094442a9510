"""Random loop programs, written once for dualarr, an unrolled Python loop and JAX.

A :class:`LoopCase` is a ``scan`` whose body updates vector carries (and one scalar
carry) by small expression trees over the carries, the rows of the xs and a vector the
body reads from outside (a loop invariant), and emits ys (a dict, so ys are a tree).
:func:`program` turns a case into a scalar-valued function over a namespace (``dnp`` or
``jax.numpy``) and a ``scan`` (``da.scan``, :func:`python_scan` or ``jax.lax.scan``), so
the same case runs as a dualarr loop, as the unrolled program and under JAX.
:func:`draw_case` draws a case through a ``choose`` callback: Hypothesis's ``draw`` in the
property tests, a seeded ``random.Random`` in ``make_scan_oracles.py``, which stores JAX's
values and gradients in ``data/scan_oracles.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Expr = tuple[Any, ...]
"""``("c", j)``, ``("x", j)``, ``("w",)``, ``("s",)``, ``("add", a, b)``, ``("mul", a, b)``,
``("tanh", a)``, ``("sin", a)``, ``("rev", a)``, ``("scale", k, a)``, ``("msum", a, b)``."""

Choose = Callable[[Sequence[Any]], Any]


@dataclass(frozen=True)
class LoopCase:
    """A scan: ``carries`` vector carries of size ``n`` and one scalar carry, ``xs``
    vector xs (none: ``length`` steps), one expression per vector carry, the scalar
    carry's expression, and one per y."""

    n: int
    length: int
    carries: int
    xs: int
    reverse: bool
    carry_exprs: tuple[Expr, ...]
    scalar_expr: Expr
    y_exprs: tuple[Expr, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n, "length": self.length, "carries": self.carries, "xs": self.xs,
            "reverse": self.reverse, "carry_exprs": self.carry_exprs,
            "scalar_expr": self.scalar_expr, "y_exprs": self.y_exprs,
        }  # fmt: skip

    @staticmethod
    def from_json(data: dict[str, Any]) -> LoopCase:
        def expr(e: Any) -> Expr:
            return tuple(expr(a) if isinstance(a, list) else a for a in e)

        return LoopCase(
            data["n"], data["length"], data["carries"], data["xs"], data["reverse"],
            tuple(expr(e) for e in data["carry_exprs"]), expr(data["scalar_expr"]),
            tuple(expr(e) for e in data["y_exprs"]),
        )  # fmt: skip


def draw_expr(choose: Choose, carries: int, xs: int, depth: int) -> Expr:
    """A random vector expression over the carries, the rows of the xs, ``w``, ``s``."""
    leaves: list[Expr] = [
        *(("c", j) for j in range(carries)),
        *(("x", j) for j in range(xs)),
        ("w",),
        ("s",),
    ]
    if depth == 0 or choose([True, False, False]):
        leaf: Expr = choose(leaves)
        return leaf
    kind = choose(["add", "mul", "tanh", "sin", "rev", "scale", "msum"])
    if kind in ("add", "mul", "msum"):
        return (kind, draw_expr(choose, carries, xs, depth - 1),
                draw_expr(choose, carries, xs, depth - 1))  # fmt: skip
    if kind == "scale":
        return (kind, choose([-0.5, 0.25, 1.5]), draw_expr(choose, carries, xs, depth - 1))
    return (kind, draw_expr(choose, carries, xs, depth - 1))


def draw_case(choose: Choose) -> LoopCase:
    carries = choose([1, 2])
    xs = choose([0, 1, 2])
    ys = choose([0, 1, 2])

    def expr() -> Expr:
        return draw_expr(choose, carries, xs, 3)

    return LoopCase(
        n=choose([1, 3]),
        length=choose([1, 2, 5]),
        carries=carries,
        xs=xs,
        reverse=choose([False, True]),
        carry_exprs=tuple(expr() for _ in range(carries)),
        scalar_expr=expr(),
        y_exprs=tuple(expr() for _ in range(ys)),
    )


def evaluate(e: Expr, env: dict[str, Any], xp: Any) -> Any:
    """The value of ``e`` (recursive: the trees are shallow)."""
    match e[0]:
        case "c":
            return env["c"][e[1]]
        case "x":
            return env["x"][e[1]]
        case "w":
            return env["w"]
        case "s":
            return env["s"] * env["ones"]
        case "add":
            return evaluate(e[1], env, xp) + evaluate(e[2], env, xp)
        case "mul":
            return evaluate(e[1], env, xp) * evaluate(e[2], env, xp)
        case "tanh":
            return xp.tanh(evaluate(e[1], env, xp))
        case "sin":
            return xp.sin(evaluate(e[1], env, xp))
        case "rev":
            return evaluate(e[1], env, xp)[::-1]
        case "scale":
            return e[1] * evaluate(e[2], env, xp)
        case "msum":
            return evaluate(e[1], env, xp) * (xp.sum(evaluate(e[2], env, xp)) * 0.1)
    raise AssertionError(e)


def inputs(case: LoopCase, seed: int) -> list[np.ndarray]:
    """The program's arguments: the initial vector carries, the scalar carry, the xs,
    then ``w``."""
    rng = np.random.default_rng(seed)
    carries = [rng.uniform(-1, 1, case.n) for _ in range(case.carries)]
    xs = [rng.uniform(-1, 1, (case.length, case.n)) for _ in range(case.xs)]
    return [*carries, np.asarray(rng.uniform(-1, 1)), *xs, rng.uniform(-1, 1, case.n)]


def program(case: LoopCase, xp: Any, scan: Callable[..., Any]) -> Callable[..., Any]:
    """The case as ``f(*inputs(case))`` returning a scalar, over namespace ``xp`` with
    ``scan`` called as ``jax.lax.scan``."""
    n_c = case.carries

    def f(*args: Any) -> Any:
        carries, s0 = tuple(args[:n_c]), args[n_c]
        xs, w = tuple(args[n_c + 1 : n_c + 1 + case.xs]), args[-1]
        ones = xp.ones(case.n)

        def body(carry: Any, x: Any) -> Any:
            cs, s = carry
            env = {"c": cs, "x": x if x is not None else (), "w": w, "s": s, "ones": ones}
            new_cs = tuple(xp.tanh(evaluate(e, env, xp)) for e in case.carry_exprs)
            new_s = s * 0.5 + xp.sum(evaluate(case.scalar_expr, env, xp)) * 0.1
            ys = {f"y{k}": evaluate(e, env, xp) for k, e in enumerate(case.y_exprs)}
            return (new_cs, new_s), ys

        (cs, s), ys = scan(
            body, (carries, s0), xs if case.xs else None, length=case.length,
            reverse=case.reverse,
        )  # fmt: skip
        loss = s
        for j, c in enumerate(cs):
            loss = loss + xp.sum(c * (j + 1.0))
        for y in ys.values():
            loss = loss + xp.sum(xp.sin(y))
        return loss

    return f


def python_scan(
    f: Callable[[Any, Any], Any],
    init: Any,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
) -> tuple[Any, Any]:
    """``scan`` unrolled: a Python loop that stacks the ys (the program tracing unrolls)."""
    import optree

    import dualarr.numpy as dnp

    leaves, tree = optree.tree_flatten(xs)
    steps = leaves[0].shape[0] if leaves else length
    assert steps is not None
    carry, rows = init, []
    for t in reversed(range(steps)) if reverse else range(steps):
        x = optree.tree_unflatten(tree, [leaf[t] for leaf in leaves]) if leaves else None
        carry, y = f(carry, x)
        rows.append(y)
    if reverse:
        rows.reverse()
    flat = [optree.tree_flatten(y) for y in rows]
    if not flat or not flat[0][0]:
        return carry, rows[0] if rows else {}
    stacked = [dnp.stack([leaves_t[k] for leaves_t, _ in flat]) for k in range(len(flat[0][0]))]
    return carry, optree.tree_unflatten(flat[0][1], stacked)
