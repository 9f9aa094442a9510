"""Assignment 2: a Delta rule for a new primitive (§2.3, §6.3, Fig. 14)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ad import delta as dl
from ...ad.dual import Dual, DualAlgebra
from ...ad.reverse import forward, reverse
from ...interp.evaluate import NumpyAlgebra
from ...lang.errors import UnsupportedError, format_shape
from .feedback import (
    F64,
    Feedback,
    all_close,
    delta_arithmetic_hints,
    describe_error,
    format_array,
    format_number,
    is_delta,
    misbuilt_delta_hint,
    mismatched_positions,
    not_implemented,
    not_yet,
    passed,
    require_callable,
)

# --------------------------------------------------------------------------------------
# Assignment 2: a Delta rule for a new primitive (§2.3, §6.3, Fig. 14)
# --------------------------------------------------------------------------------------


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.logaddexp(0.0, x))


def _cube(x: np.ndarray) -> np.ndarray:
    return np.asarray(x**3)


def _hypot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.hypot(a, b))


@dataclass(frozen=True)
class _DeltaOp:
    name: str
    formula: str
    function: Callable[..., np.ndarray]
    points: tuple[tuple[float, ...], ...]  # one tuple per argument

    @property
    def arity(self) -> int:
        return len(self.points)


DELTA_OPS: dict[str, _DeltaOp] = {
    "softplus": _DeltaOp(
        "softplus",
        "softplus(x) = log(1 + exp(x))",
        _softplus,
        ((-800.0, -30.0, -1.0, 0.0, 0.5, 3.0, 30.0, 800.0),),
    ),
    "cube": _DeltaOp(
        "cube", "cube(x) = x ** 3", _cube, ((-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0),)
    ),
    "hypot": _DeltaOp(
        "hypot",
        "hypot(a, b) = sqrt(a ** 2 + b ** 2)",
        _hypot,
        ((3.0, -3.0, 0.001, 0.0, 2.0, 1e200), (4.0, 4.0, 2.0, 5.0, -0.5, 1e200)),
    ),
}
"""The primitives of assignment 2, with their test points (edge cases included)."""



def _finite_differences(op: _DeltaOp, xs: Sequence[np.ndarray], k: int) -> np.ndarray:
    """Central differences of an elementwise op in its argument ``k``, point by point."""
    h = 1e-6 * np.maximum(1.0, np.abs(xs[k]))
    up = [x + h if j == k else x for j, x in enumerate(xs)]
    down = [x - h if j == k else x for j, x in enumerate(xs)]
    with np.errstate(all="ignore"):
        return np.asarray((op.function(*up) - op.function(*down)) / (2 * h))


def _point(op: _DeltaOp, xs: Sequence[np.ndarray], p: int) -> str:
    names = ("x",) if op.arity == 1 else ("a", "b")
    return ", ".join(f"{n} = {format_number(x[p])}" for n, x in zip(names, xs, strict=True))


def _delta_hints(
    op: _DeltaOp,
    xs: Sequence[np.ndarray],
    y: np.ndarray,
    expected: np.ndarray,
    got: np.ndarray,
    bad: Sequence[int],
    arg: str,
) -> list[str]:
    """What a wrong derivative (``got`` against finite differences) looks like."""

    def near(a: Any, b: Any) -> bool:
        return all_close(a, b, rtol=1e-5, atol=1e-7)

    with np.errstate(all="ignore"):
        if not np.isfinite(got[list(bad)]).all():
            p = next(p for p in bad if not np.isfinite(got[p]))
            reason = {
                "softplus": "exp(x) overflows to inf for large x, and inf / inf is nan. "
                "Rewrite the factor so that no intermediate value overflows: divide its "
                "numerator and denominator by the same large quantity, or use the output "
                "y = log(1 + exp(x)) that your rule is given.",
                "cube": "is there a division by x? At x = 0 it gives nan. Write the factor "
                "without dividing.",
                "hypot": "a * a overflows for a = 1e200 (and 0 / 0 is nan). Do not recompute "
                "sqrt(a ** 2 + b ** 2): your rule is given the output y = hypot(a, b), "
                "computed without overflow.",
            }[op.name]
            return [
                f"Hint: at {_point(op, xs, p)} your derivative is {format_number(got[p])}: "
                f"{reason}"
            ]
        huge = all(max(abs(float(x[p])) for x in xs) > 1e100 for p in bad)
        if op.name == "hypot" and huge:
            return [
                "Hint: only the point a = b = 1e200 is wrong: a * a overflows to inf there. "
                "Do not recompute sqrt(a ** 2 + b ** 2): your rule is given the output "
                "y = hypot(a, b), computed without overflow."
            ]
        if near(got, 0.0):
            return [
                f"Hint: the derivative {arg} is 0 everywhere: your Delta does not use the "
                "Delta of that argument (a primitive of several arguments adds one Scale per "
                "argument, like mul in Fig. 14)."
            ]
        if near(got, 1.0):
            delta = "dx" if op.arity == 1 else "d_" + arg[-1]
            return [
                f"Hint: the derivative {arg} is 1 everywhere: the Delta of the argument is "
                f"passed through unscaled. Scale it by the derivative: dl.Scale(factor, {delta})."
            ]
        if near(got, -expected):
            return ["Hint: every value has the wrong sign."]
        if near(got, y):
            return [
                "Hint: your factor is the output y itself: that is the rule for exp "
                "(d exp(x) = exp(x) dx), not for this function."
            ]
        sel = [p for p in bad if abs(expected[p]) > 1e-6]
        if len(sel) >= 2:
            ratios = got[sel] / expected[sel]
            if abs(ratios[0]) > 1e-6 and near(ratios, ratios[0]):
                return [f"Hint: your derivative is {format_number(ratios[0])} times the right one."]
    if op.arity == 1:
        return [
            "Hint: a one-argument primitive's Delta is Scale(f'(x), dx) (Fig. 14): work out "
            f"f'(x) for {op.formula} by hand and check it at one test point."
        ]
    return [
        "Hint: hypot's Delta is Add(Scale(∂f/∂a, da), Scale(∂f/∂b, db)), like mul's in "
        "Fig. 14: work out both partial derivatives by hand."
    ]


def _approx(value: Any) -> str:
    """A finite-difference value, with its noise below 1e-9 shown as 0."""
    return "0" if abs(float(value)) < 1e-9 else format_number(value)


def check_delta_rule(op: str, rule: Callable[..., Any]) -> Feedback:
    """Check a Delta rule for a new elementwise primitive (§6.3, Fig. 14).

    ``op`` is ``"softplus"``, ``"cube"`` (one argument: ``rule(x, y, dx)``) or
    ``"hypot"`` (``rule(a, b, y, d_a, d_b)``), where ``x``/``a``/``b`` are the primal
    inputs, ``y`` the primal output and ``dx``/``d_a``/``d_b`` the inputs' Deltas; the rule
    returns the output's Delta.  Its forward evaluation (the derivative), its reverse
    pass (Fig. 5) and a small program using it are compared with central finite
    differences at test points that include edge cases.
    """
    spec = DELTA_OPS.get(op)
    if spec is None:
        raise UnsupportedError(
            f"unknown primitive {op!r}; the assignment has {', '.join(DELTA_OPS)}",
            op="check_delta_rule",
            location="",
        )
    require_callable(rule, "rule", "check_delta_rule")
    title = f"Delta rule for {spec.formula}"
    xs = [np.array(p, dtype=np.float64) for p in spec.points]
    m = xs[0].shape[0]
    with np.errstate(all="ignore"):
        y = spec.function(*xs)
    inputs = [dl.Input(k, (m,), F64) for k in range(spec.arity)]
    try:
        with np.errstate(all="ignore"):
            d = rule(*[x.copy() for x in xs], y.copy(), *inputs)
    except NotImplementedError:
        return not_implemented(title, "your Delta rule")
    except Exception as err:
        return not_yet(
            title, f"your rule raised {describe_error(err)}", *delta_arithmetic_hints(err)
        )
    if not is_delta(d):
        return not_yet(
            title,
            f"your rule returned a {type(d).__name__}, not a Delta",
            "Hint: the rule returns the Delta of the output, built from the Deltas it is "
            "given, e.g. dl.Scale(factor, dx) (Fig. 14); the factor is a primal array.",
        )
    misbuilt = misbuilt_delta_hint(d)
    if misbuilt is not None:
        return not_yet(
            title, "your Delta holds a value that is not a Delta where a Delta belongs", misbuilt
        )
    if tuple(d.shape) != (m,):
        return not_yet(
            title,
            f"your Delta has shape {format_shape(d.shape)}, the output has shape "
            f"{format_shape((m,))}",
        )
    names = ("x",) if spec.arity == 1 else ("a", "b")
    failures: list[str] = []
    hints: list[str] = []
    alg = NumpyAlgebra()
    columns = []
    # tangents of distinct values, so a Delta mixing the points is caught too
    weights = np.linspace(1.0, 2.0, m)
    for k in range(spec.arity):
        tangents = {j: weights if j == k else np.zeros(m) for j in range(spec.arity)}
        try:
            with np.errstate(all="ignore"):
                jvp = np.asarray(forward(alg, d, tangents), dtype=np.float64)
                got = np.broadcast_to(jvp, (m,)) / weights
        except Exception as err:
            return not_yet(title, f"evaluating your Delta raised {describe_error(err)}")
        columns.append(got)
        expected = _finite_differences(spec, xs, k)
        bad = [p[0] for p in mismatched_positions(expected, got, rtol=1e-5, atol=1e-7)]
        arg = f"by {names[k]}" if spec.arity > 1 else ""
        for p in bad[:3]:
            failures.append(
                f"derivative{' ' + arg if arg else ''} at {_point(spec, xs, p)}: expected "
                f"{_approx(expected[p])} (finite differences), got {format_number(got[p])}"
            )
        if len(bad) > 3:
            failures.append(f"… and {len(bad) - 3} more of the {m} test points")
        if bad:
            hints.extend(_delta_hints(spec, xs, y, expected, got, bad, arg or "d/dx"))
    if failures:
        return not_yet(title, *failures, *list(dict.fromkeys(hints)))
    # the reverse pass (Fig. 5) must give the same derivative: the transpose of a diagonal
    try:
        with np.errstate(all="ignore"):
            grads = reverse(alg, dl.Share(10**9, d), weights)
    except Exception as err:
        return not_yet(title, f"the reverse pass over your Delta raised {describe_error(err)}")
    for k in range(spec.arity):
        vjp = np.asarray(grads.get(k, 0.0), dtype=np.float64)
        got = np.broadcast_to(vjp, (m,)) / weights
        if not all_close(got, columns[k], rtol=1e-9):
            p = mismatched_positions(columns[k], got)[0][0]
            return not_yet(
                title,
                f"the reverse pass disagrees with the forward derivative by {names[k]} at "
                f"{_point(spec, xs, p)}: {format_number(got[p])} against "
                f"{format_number(columns[k][p])}",
                "Hint: an elementwise primitive's Delta is a Scale (and Add) of its arguments' "
                "Deltas, nothing else.",
            )
    problem = _composition_check(spec, rule, title) or _shapes_check(spec, rule, title)
    if problem is not None:
        return problem
    call = "sum(op(w * x))" if spec.arity == 1 else "sum(op(w * x, x))"
    points = ", ".join(format_number(v) for v in spec.points[0])
    return passed(
        f"{title}: right at every test point",
        f"forward derivative and reverse pass match finite differences at x = {points}"
        if spec.arity == 1
        else f"both partial derivatives match finite differences at {len(spec.points[0])} "
        "points (1e200 included)",
        f"and the gradient of {call} matches finite differences",
        "and the rule keeps the shape of its input: a single number (rank 0), an empty "
        "array and a matrix",
    )


def _composition_check(spec: _DeltaOp, rule: Callable[..., Any], title: str) -> Feedback | None:
    """``sum(op(w * x, x))`` (or ``sum(op(w * x))``) on dual arrays: the rule's Delta
    must compose with the others (use the argument's Delta, not its own Input)."""
    rng = np.random.default_rng(7)
    x0 = rng.uniform(0.5, 2.0, size=4)
    w = np.array([1.5, -0.5, 2.0, 1.0])

    def primal(x: np.ndarray) -> float:
        args = (w * x,) if spec.arity == 1 else (w * x, x)
        return float(np.sum(spec.function(*args)))

    alg = DualAlgebra(NumpyAlgebra())
    x = Dual(x0, dl.Input(0, (4,), F64))
    t = alg.op("mul", [alg.const(w), x], F64)
    args = [t] if spec.arity == 1 else [t, x]
    prims = [np.asarray(a.primal) for a in args]
    y = spec.function(*prims)
    try:
        with np.errstate(all="ignore"):
            d = rule(*prims, y, *[a.delta for a in args])
            out = alg.sum_outer(alg.dual(y, d))
            g = np.asarray(reverse(NumpyAlgebra(), out.delta, np.ones(())).get(0, 0.0))
    except Exception as err:
        return not_yet(
            title,
            f"inside a program, your rule raised {describe_error(err)}",
            *delta_arithmetic_hints(err),
        )
    h = 1e-6
    expected = np.array(
        [(primal(x0 + h * e) - primal(x0 - h * e)) / (2 * h) for e in np.eye(4)]
    )
    call = "sum(op(w * x))" if spec.arity == 1 else "sum(op(w * x, x))"
    if not all_close(g, expected, rtol=1e-5, atol=1e-7):
        return not_yet(
            title,
            "your rule is right on its own, but not inside a program: the gradient of "
            f"{call} at x = {format_array(np.round(x0, 4))}, w = {format_array(w)} "
            f"is {format_array(np.round(g, 6))}; "
            f"finite differences give {format_array(np.round(expected, 6))}",
            "Hint: build the Delta from the Delta arguments you are given (they are not "
            "always Input nodes): the chain rule happens by scaling them.",
        )
    return None


_SHAPES_HINT = (
    "Hint: an elementwise primitive's Delta rule runs on arrays of every shape, since "
    "Fig. 14's Scale multiplies a Delta elementwise by a factor of the Delta's own shape: a "
    "single number (rank 0, as in da.grad of a function of one number), an empty array and "
    "a matrix included. Compute the factor with whole-array NumPy operations, which keep the "
    "shape of their arguments; a loop over the elements, an index such as x[0], a reshape "
    "or a reduction does not."
)


def _edge_inputs(spec: _DeltaOp) -> list[tuple[str, list[np.ndarray]]]:
    """The rule's arguments at the edges of the shapes it must take: a single number
    (rank 0), an empty array and a matrix, from the op's own test points."""
    flat = [np.array(p, dtype=np.float64) for p in spec.points]
    point = 4  # an ordinary test point (0.5 for softplus and cube, (2, -0.5) for hypot)
    return [
        ("a single number (rank 0)", [np.asarray(x[point]) for x in flat]),
        ("an empty array (shape [0])", [np.zeros(0) for _ in flat]),
        ("a matrix (shape [2,3])", [x[:6].reshape(2, 3) for x in flat]),
    ]


def _shapes_check(spec: _DeltaOp, rule: Callable[..., Any], title: str) -> Feedback | None:
    """The rule on a rank-0, an empty and a rank-2 input: its Delta must have the input's
    shape and, run forwards and backwards, give the derivative at every element."""
    names = ("x",) if spec.arity == 1 else ("a", "b")
    alg = NumpyAlgebra()
    for label, xs in _edge_inputs(spec):
        shape = xs[0].shape
        at = ", ".join(f"{n} = {format_array(x)}" for n, x in zip(names, xs, strict=True))
        where = f"on {label}, {at}"
        with np.errstate(all="ignore"):
            y = spec.function(*xs)
        inputs = [dl.Input(k, shape, F64) for k in range(spec.arity)]
        try:
            with np.errstate(all="ignore"):
                d = rule(*[x.copy() for x in xs], np.asarray(y).copy(), *inputs)
        except Exception as err:
            return not_yet(title, f"{where}: your rule raised {describe_error(err)}", _SHAPES_HINT)
        if not is_delta(d) or tuple(d.shape) != shape:
            what = (
                f"a Delta of shape {format_shape(d.shape)}" if is_delta(d)
                else f"a {type(d).__name__}"
            )
            return not_yet(
                title,
                f"{where}: your rule returned {what}, the output has shape {format_shape(shape)}",
                _SHAPES_HINT,
            )
        for k in range(spec.arity):
            tangents = {j: np.full(shape, float(j == k)) for j in range(spec.arity)}
            expected = _finite_differences(spec, xs, k)
            try:
                with np.errstate(all="ignore"):
                    jvp = np.asarray(forward(alg, d, tangents), dtype=np.float64)
                    grads = reverse(alg, dl.Share(10**9, d), np.ones(shape))
                    vjp = np.asarray(grads.get(k, np.zeros(shape)), dtype=np.float64)
            except Exception as err:
                return not_yet(
                    title, f"{where}: evaluating your Delta raised {describe_error(err)}",
                    _SHAPES_HINT,
                )
            for run, got in (("forward", jvp), ("reverse", vjp)):
                if got.shape != shape or not all_close(got, expected, rtol=1e-5, atol=1e-7):
                    by = f" by {names[k]}" if spec.arity > 1 else ""
                    return not_yet(
                        title,
                        f"{where}: your Delta, run {run}, gives the derivative{by} "
                        f"{format_array(got)} of shape {format_shape(got.shape)}; "
                        "finite differences "
                        f"give {format_array(expected)} of shape {format_shape(shape)}",
                        _SHAPES_HINT,
                    )
    return None


