"""``da.check_grad``: the compiled gradient cross-checked four ways (README, "Writing programs").

The gradient of the compiled program (§7: ``da.pipeline(f, *arrays)``) is compared with

* **SymPy**: the exact gradient of :mod:`dualarr.sympy_reference`, lambdified and evaluated
  at the arrays (skipped, with the reason, above ``sympy_limit`` input scalars, without
  SymPy, or for a program with no closed form such as ``argmax`` of an input);
* **finite differences**: central differences of the reference evaluator (§3), in float64
  where the function traces in float64; per-dtype steps and tolerances in the manner of
  JAX's ``check_grads``; at a kink (``relu`` at 0) the one-sided differences disagree
  and any value between them is accepted;
* **the interpreted reverse pass**: D with concrete primals and the reverse evaluator of
  Fig. 17 over the Delta (§6, ``da.vjp(..., mode="interpret")``), cotangent 1;
* **the adjoint identity** ``<c, jvp(t)> = <vjp(c), t>`` for a random ``c`` and random
  tangents ``t``, one float input at a time: forward evaluation of the Delta ("evalFwd")
  against the compiled vector-Jacobian product.

A failing check names the input (position and parameter name) and its worst element.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from .api import jvp, vjp
from .interp.sympy_algebra import SYMPY_INPUT_LIMIT, sympy_available
from .lang.errors import DualarrError, ShapeError, UnsupportedError
from .lang.program import Program, ShapeSpec, scalar_float_output, trace
from .lang.terms import DType
from .pipeline import pipeline
from .show.printer import input_names
from .sympy_reference import sympy_gradient

__all__ = [
    "ADJOINT",
    "FINITE_DIFFERENCES",
    "INTERPRETED",
    "SYMPY",
    "CheckResult",
    "GradCheckReport",
    "Tolerance",
    "check_grad",
]

SYMPY = "compiled vs SymPy"
FINITE_DIFFERENCES = "compiled vs finite differences"
INTERPRETED = "compiled vs interpreted reverse pass"
ADJOINT = "jvp/vjp adjoint identity"


@dataclass(frozen=True)
class Tolerance:
    """An element passes when ``|got - want| <= atol + rtol * |want|``."""

    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol {self.rtol:g}, atol {self.atol:g}"


FD_TOLERANCE = {DType.FLOAT64: Tolerance(1e-5, 1e-5), DType.FLOAT32: Tolerance(1e-2, 1e-2)}
"""Finite differences against AD, per dtype: JAX's ``check_grads`` default for float64;
for float32 looser than JAX's 2e-3, as a program that only traces in float32 is
differenced in float32 with a step of 1e-3."""

EXACT_TOLERANCE = {DType.FLOAT64: Tolerance(1e-8, 1e-8), DType.FLOAT32: Tolerance(1e-4, 1e-4)}
"""Two exact derivatives (SymPy, the two reverse passes) differing by rounding only."""

FD_STEP = {DType.FLOAT64: 1e-6, DType.FLOAT32: 1e-3}
"""The finite-difference step, relative to ``max(1, |x|)``, per evaluation dtype."""

FD_ELEMENT_LIMIT = 1000
"""Up to this many float input scalars, finite differences are taken element by element
(naming the worst element); above, along two random directions per input."""

ADJOINT_LOCALISE_LIMIT = 256
"""A failing adjoint identity is localised by one jvp per element up to this size."""

_ROUNDING_FACTOR = 8.0  # rounding error of one evaluation, in ulps of its value


# --------------------------------------------------------------------------------------
# Rows and the report
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """One cross-check: whether it passed, its largest absolute and relative errors
    over every element of every float input, and what it found.  A skipped check
    (``skipped``) passes and says why in ``detail``."""

    name: str
    passed: bool
    max_abs_error: float
    max_rel_error: float
    detail: str
    skipped: bool = False

    @property
    def status(self) -> str:
        if self.skipped:
            return "skipped"
        return "pass" if self.passed else "FAIL"


def _skipped(name: str, reason: str) -> CheckResult:
    return CheckResult(name, True, math.nan, math.nan, reason, skipped=True)


def _format_error(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1e}"


@dataclass(frozen=True)
class GradCheckReport:
    """The cross-checks of one function's compiled gradient at one point."""

    function: str
    signature: str
    checks: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """Every check passed or was skipped."""
        return all(check.passed for check in self.checks)

    def check(self, name: str) -> CheckResult:
        """The check called ``name`` (e.g. :data:`SYMPY`)."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def _rows(self) -> list[tuple[str, str, str, str, str]]:
        return [
            (
                c.name,
                c.status,
                _format_error(c.max_abs_error),
                _format_error(c.max_rel_error),
                c.detail,
            )
            for c in self.checks
        ]

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        header = ("check", "result", "max abs err", "max rel err", "detail")
        rows = [header, *self._rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = [f"check_grad {self.function}{self.signature}: {verdict}"]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
            lines.append("  " + "  ".join([*cells, row[4]]).rstrip())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        colours = {"pass": "#1a7f37", "FAIL": "#cf222e", "skipped": "#6e7781"}
        verdict = "PASSED" if self.passed else "FAILED"
        title = html.escape(f"check_grad {self.function}{self.signature}: {verdict}")
        head = "".join(
            f"<th style='text-align:left'>{h}</th>"
            for h in ("check", "result", "max abs err", "max rel err", "detail")
        )
        body = []
        for name, status, abs_error, rel_error, detail in self._rows():
            body.append(
                "<tr>"
                f"<td>{html.escape(name)}</td>"
                f"<td style='color:{colours[status]};font-weight:bold'>{status}</td>"
                f"<td>{abs_error}</td><td>{rel_error}</td>"
                f"<td style='text-align:left'>{html.escape(detail)}</td>"
                "</tr>"
            )
        return (
            "<table class='dualarr-check-grad'>"
            f"<caption style='text-align:left'><b>{title}</b></caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )


# --------------------------------------------------------------------------------------
# Comparing gradients element by element
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Inputs:
    """The arguments being checked, with their printed names."""

    arrays: tuple[np.ndarray, ...]
    names: tuple[str, ...]
    floats: tuple[int, ...]

    def describe(self, position: int) -> str:
        return f"input {position} ({self.names[position]})"


@dataclass(frozen=True)
class _Errors:
    """Per-element errors of one input: absolute, relative, and the error as a
    multiple of what the tolerance allows (> 1 fails)."""

    absolute: np.ndarray
    relative: np.ndarray
    excess: np.ndarray


def _errors(got: npt.ArrayLike, want: npt.ArrayLike, allowed: npt.ArrayLike) -> _Errors:
    """Element errors, a non-finite value matching only the same non-finite value."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    allowed = np.asarray(allowed, dtype=np.float64)
    with np.errstate(all="ignore"):
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        absolute = np.where(same, 0.0, np.abs(got - want))
        absolute = np.where(np.isnan(absolute), np.inf, absolute)
        scale = np.maximum(np.abs(got), np.abs(want))
        relative = np.where(absolute == 0, 0.0, absolute / scale)
        relative = np.where(np.isnan(relative), np.inf, relative)
        excess = np.where(absolute == 0, 0.0, absolute / allowed)
        excess = np.where(np.isnan(excess), np.inf, excess)
    return _Errors(absolute, relative, excess)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _agree(count: int) -> str:
    return f"{_plural(count, 'float input')} agree{'s' if count == 1 else ''}"


def _singular_hint(*values: float) -> str:
    """A note for a mismatch involving ``nan`` or ``inf``."""
    if all(math.isfinite(v) for v in values):
        return ""
    return "; a non-finite value: is the point singular (0/0, atan2(0, 0), sqrt at 0)?"


def _position(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def _summarise(
    name: str,
    reference: str,
    inputs: _Inputs,
    compared: Sequence[tuple[int, np.ndarray, np.ndarray, _Errors]],
    tolerance: Tolerance,
    notes: Sequence[str] = (),
) -> CheckResult:
    """One row from per-input comparisons ``(position, got, want, errors)``."""
    sized = [errors for _, _, _, errors in compared if errors.absolute.size]
    max_abs = max((float(e.absolute.max()) for e in sized), default=0.0)
    max_rel = max((float(e.relative.max()) for e in sized), default=0.0)
    failures = []
    for k, got, want, errors in compared:
        bad = errors.excess > 1
        if not bad.any():
            continue
        worst = np.unravel_index(int(np.argmax(errors.excess)), errors.excess.shape)
        index = tuple(int(i) for i in worst)
        failures.append(
            f"{inputs.describe(k)} element {_position(index)}: compiled {got[index]:.6g} vs "
            f"{reference} {want[index]:.6g} (|error| {errors.absolute[index]:.2e}; "
            f"{int(bad.sum())} of {bad.size} elements differ)"
            + _singular_hint(got[index], want[index])
        )
    if failures:
        return CheckResult(name, False, max_abs, max_rel, "; ".join([*failures, *notes]))
    summary = f"{_agree(len(compared))} ({tolerance})"
    return CheckResult(name, True, max_abs, max_rel, "; ".join([summary, *notes]))


def _compare(
    name: str,
    reference: str,
    inputs: _Inputs,
    got: Sequence[np.ndarray],
    want: Sequence[np.ndarray],
    tolerance: Tolerance,
    notes: Sequence[str] = (),
) -> CheckResult:
    """Compiled gradients ``got`` against reference gradients ``want`` (float inputs in
    order), elementwise ``|got - want| <= atol + rtol * |want|``."""
    compared = []
    for k, g, w in zip(inputs.floats, got, want, strict=True):
        g64, w64 = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        if g64.shape != w64.shape:
            raise ShapeError(
                f"the compiled gradient of {inputs.describe(k)} has shape {list(g64.shape)}, "
                f"the {reference} one {list(w64.shape)}",
                op="check_grad",
                shapes=[g64.shape, w64.shape],
            )
        allowed = tolerance.atol + tolerance.rtol * np.abs(w64)
        compared.append((k, g64, w64, _errors(g64, w64, allowed)))
    return _summarise(name, reference, inputs, compared, tolerance, notes)


# --------------------------------------------------------------------------------------
# The four checks
# --------------------------------------------------------------------------------------


def _sympy_check(
    f: Callable[..., Any],
    inputs: _Inputs,
    value: float,
    grads: Sequence[np.ndarray],
    tolerance: Tolerance,
    limit: int,
) -> CheckResult:
    if not sympy_available():
        return _skipped(SYMPY, "SymPy is not installed (pip install 'dualarr[symbolic]')")
    count = sum(inputs.arrays[k].size for k in inputs.floats)
    if count > limit:
        return _skipped(
            SYMPY, f"{count} float input scalars exceed the SymPy limit of {limit} (sympy_limit)"
        )
    try:
        symbolic = sympy_gradient(f, *inputs.arrays, max_scalars=limit)
    except (UnsupportedError, RecursionError) as error:
        reason = error.detail if isinstance(error, DualarrError) else "expression too deep"
        lead = "" if "SymPy cannot evaluate" in reason else "SymPy cannot evaluate this program: "
        return _skipped(SYMPY, f"{lead}{reason}")
    exact_value, exact_grads = symbolic(*inputs.arrays)
    result = _compare(SYMPY, "SymPy", inputs, grads, exact_grads, tolerance)
    allowed = np.float64(tolerance.atol + tolerance.rtol * abs(exact_value))
    value_errors = _errors(np.float64(value), np.float64(exact_value), allowed)
    if float(value_errors.excess) <= 1:
        return result
    detail = f"value: compiled {value:.6g} vs SymPy {exact_value:.6g}"
    return CheckResult(
        SYMPY,
        False,
        max(result.max_abs_error, float(value_errors.absolute)),
        max(result.max_rel_error, float(value_errors.relative)),
        detail if result.passed else f"{detail}; {result.detail}",
    )


def _reference_program(
    f: Callable[..., Any], arrays: Sequence[np.ndarray], program: Program
) -> tuple[Program, DType]:
    """The program for finite differences: traced in float64 where ``f`` allows it."""
    out = program.outputs[0]
    if out.dtype is DType.FLOAT64 and all(a.dtype != np.float32 for a in arrays):
        return program, DType.FLOAT64
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays]
    try:
        wide_program = trace(f, *wide)
    except DualarrError:
        return program, out.dtype
    wide_out = wide_program.outputs
    if wide_program.tuple_output or wide_out[0].shape != ():
        return program, out.dtype
    if wide_out[0].dtype is not DType.FLOAT64:
        return program, out.dtype
    return wide_program, DType.FLOAT64


def _nudged_element(
    values: list[np.ndarray], by: float, position: int, index: tuple[int, ...]
) -> list[np.ndarray]:
    """``values`` with one element of input ``position`` moved by ``by``."""
    moved = list(values)
    moved[position] = values[position].copy()
    moved[position][index] += by
    return moved


def _nudged_along(
    values: list[np.ndarray], by: float, position: int, direction: np.ndarray
) -> list[np.ndarray]:
    """``values`` with input ``position`` moved by ``by * direction``."""
    moved = list(values)
    moved[position] = (values[position] + by * direction).astype(values[position].dtype)
    return moved


def _differences(
    evaluate: Callable[[list[np.ndarray]], float],
    at_base: float,
    move: Callable[[float], list[np.ndarray]],
    step: float,
    eps: float,
) -> tuple[float, float, float, float]:
    """``(central, low, high, rounding)`` along one direction: the central quotient,
    the least and greatest of it and the two one-sided quotients, and a bound on the
    rounding error of the quotients."""
    plus, minus = evaluate(move(step)), evaluate(move(-step))
    central = (plus - minus) / (2 * step)
    forward, backward = (plus - at_base) / step, (at_base - minus) / step
    rounding = _ROUNDING_FACTOR * eps * max(abs(plus), abs(minus), abs(at_base)) / step
    return central, min(central, forward, backward), max(central, forward, backward), rounding


def _finite_difference_check(
    f: Callable[..., Any],
    inputs: _Inputs,
    program: Program,
    grads: Sequence[np.ndarray],
    tolerance: Tolerance,
    seed: int,
) -> CheckResult:
    reference, dtype = _reference_program(f, inputs.arrays, program)
    wide = dtype.numpy()
    base = [
        np.array(a, dtype=wide) if k in inputs.floats else np.asarray(a)
        for k, a in enumerate(inputs.arrays)
    ]
    eps = float(np.finfo(np.float32 if dtype is DType.FLOAT32 else np.float64).eps)

    def evaluate(values: list[np.ndarray]) -> float:
        return float(np.asarray(reference(*values)))

    at_base = evaluate(base)
    notes = [f"evaluated in {dtype}"]
    if sum(inputs.arrays[k].size for k in inputs.floats) > FD_ELEMENT_LIMIT:
        return _directional_differences(
            inputs, base, at_base, evaluate, grads, tolerance, FD_STEP[dtype], eps, seed, notes
        )
    compared = []
    kinks = unchecked = 0
    for k, grad in zip(inputs.floats, grads, strict=True):
        g = np.asarray(grad, dtype=np.float64)
        central, low, high, rounding = (np.zeros(g.shape) for _ in range(4))
        for index in np.ndindex(*g.shape):
            x = base[k][index]
            step = float((x + FD_STEP[dtype] * max(1.0, abs(float(x)))) - x)  # representable
            move = partial(_nudged_element, base, position=k, index=index)
            quotients = _differences(evaluate, at_base, move, step, eps)
            central[index], low[index], high[index], rounding[index] = quotients
        finite = np.isfinite(central)
        unchecked += int((~finite).sum())
        spread = high - low > tolerance.atol + tolerance.rtol * np.abs(central)
        kinks += int((finite & spread).sum())
        # an element's error is its distance from [low, high]: at a kink either one-sided
        # derivative (or anything between them) is a correct choice
        nearest = np.where(np.isfinite(g), np.clip(g, low, high), central)
        allowed = tolerance.atol + tolerance.rtol * np.abs(central) + np.where(finite, rounding, 0)
        errors = _errors(g, nearest, allowed)
        errors = _Errors(
            np.where(finite, errors.absolute, 0.0),
            np.where(finite, errors.relative, 0.0),
            np.where(finite, errors.excess, 0.0),
        )
        compared.append((k, g, central, errors))
    if kinks:
        notes.append(f"{_plural(kinks, 'element')} at kinks (one-sided differences disagree)")
    if unchecked:
        notes.append(f"{_plural(unchecked, 'element')} not checked (non-finite differences)")
    return _summarise(FINITE_DIFFERENCES, "finite differences", inputs, compared, tolerance, notes)


def _directional_differences(
    inputs: _Inputs,
    base: list[np.ndarray],
    at_base: float,
    evaluate: Callable[[list[np.ndarray]], float],
    grads: Sequence[np.ndarray],
    tolerance: Tolerance,
    relative_step: float,
    eps: float,
    seed: int,
    notes: list[str],
) -> CheckResult:
    """Finite differences along two random directions per input (large inputs)."""
    rng = np.random.default_rng(seed)
    max_abs = max_rel = 0.0
    failures = []
    for k, grad in zip(inputs.floats, grads, strict=True):
        g = np.asarray(grad, dtype=np.float64)
        if not g.size:
            continue
        for _ in range(2):
            direction = rng.standard_normal(g.shape)
            step = relative_step * max(1.0, float(np.max(np.abs(base[k]))))
            move = partial(_nudged_along, base, position=k, direction=direction)
            central, low, high, rounding = _differences(evaluate, at_base, move, step, eps)
            along = float(np.sum(g * direction))
            scale = float(np.sum(np.abs(g * direction)))
            allowed = tolerance.atol + tolerance.rtol * max(scale, abs(central)) + rounding
            nearest = min(max(along, low), high)
            errors = _errors(np.float64(along), np.float64(nearest), np.float64(allowed))
            max_abs = max(max_abs, float(errors.absolute))
            max_rel = max(max_rel, float(errors.relative))
            if float(errors.excess) > 1:
                failures.append(
                    f"{inputs.describe(k)} along a random direction: compiled {along:.6g} vs "
                    f"finite differences {central:.6g} (elements not localised: "
                    f"{inputs.arrays[k].size} of them)"
                )
                break
    notes = [*notes, "checked along 2 random directions per input (large inputs)"]
    if failures:
        detail = "; ".join([*failures, *notes])
        return CheckResult(FINITE_DIFFERENCES, False, max_abs, max_rel, detail)
    summary = f"{_agree(len(inputs.floats))} ({tolerance})"
    return CheckResult(FINITE_DIFFERENCES, True, max_abs, max_rel, "; ".join([summary, *notes]))


def _interpreted_check(
    f: Callable[..., Any],
    inputs: _Inputs,
    out_dtype: DType,
    grads: Sequence[np.ndarray],
    tolerance: Tolerance,
) -> CheckResult:
    _, pullback = vjp(f, *inputs.arrays, mode="interpret")
    cotangents = pullback(np.ones((), dtype=out_dtype.numpy()))
    reference = [cotangents[k] for k in inputs.floats]
    return _compare(INTERPRETED, "interpreted", inputs, grads, reference, tolerance)


def _adjoint_check(
    f: Callable[..., Any], inputs: _Inputs, out_dtype: DType, tolerance: Tolerance, seed: int
) -> CheckResult:
    rng = np.random.default_rng(seed)
    c = float(np.asarray(rng.standard_normal(), dtype=out_dtype.numpy()))
    _, pullback = vjp(f, *inputs.arrays)
    cotangents = pullback(np.asarray(c, dtype=out_dtype.numpy()))
    zeros = [np.zeros_like(a) for a in inputs.arrays]

    def directional(k: int, tangent: np.ndarray) -> float:
        tangents = list(zeros)
        tangents[k] = tangent
        return float(np.asarray(jvp(f, inputs.arrays, tangents)[1]))

    max_abs = max_rel = 0.0
    failures = []
    for k in inputs.floats:
        array = inputs.arrays[k]
        reverse = np.asarray(cotangents[k], dtype=np.float64)
        tangent = rng.standard_normal(array.shape).astype(array.dtype)
        lhs = c * directional(k, tangent)
        rhs = float(np.sum(reverse * tangent))
        scale = float(np.sum(np.abs(reverse * tangent)))
        allowed = tolerance.atol + tolerance.rtol * max(scale, abs(lhs))
        errors = _errors(np.float64(lhs), np.float64(rhs), np.float64(allowed))
        max_abs = max(max_abs, float(errors.absolute))
        max_rel = max(max_rel, float(errors.relative))
        if float(errors.excess) <= 1:
            continue
        detail = (
            f"{inputs.describe(k)}: <c, jvp(t)> = {lhs:.6g} but <vjp(c), t> = {rhs:.6g}"
            + _singular_hint(lhs, rhs)
        )
        if array.size <= ADJOINT_LOCALISE_LIMIT:
            forward = np.zeros(array.shape)
            for index in np.ndindex(*array.shape):
                one_hot = np.zeros_like(array)
                one_hot[index] = 1
                forward[index] = c * directional(k, one_hot)
            allowed_elements = tolerance.atol + tolerance.rtol * np.abs(reverse)
            element_errors = _errors(forward, reverse, allowed_elements)
            worst = np.unravel_index(int(np.argmax(element_errors.excess)), array.shape)
            index = tuple(int(i) for i in worst)
            detail += (
                f"; worst element {_position(index)}: c*jvp(e) {forward[index]:.6g} vs "
                f"vjp(c) {reverse[index]:.6g}"
            )
        failures.append(detail)
    if failures:
        return CheckResult(ADJOINT, False, max_abs, max_rel, "; ".join(failures))
    summary = f"{_agree(len(inputs.floats))} ({tolerance}; random c, t)"
    return CheckResult(ADJOINT, True, max_abs, max_rel, summary)


# --------------------------------------------------------------------------------------
# check_grad
# --------------------------------------------------------------------------------------


def _working_dtype(program: Program) -> DType:
    """float32 when the output or a float input is float32: its tolerances apply."""
    dtypes = [v.dtype for v in program.inputs if v.dtype.is_float] + [program.outputs[0].dtype]
    return DType.FLOAT32 if DType.FLOAT32 in dtypes else DType.FLOAT64


def check_grad(
    f: Callable[..., Any],
    *arrays: Any,
    rtol: float | None = None,
    atol: float | None = None,
    sympy_limit: int = SYMPY_INPUT_LIMIT,
    seed: int = 0,
) -> GradCheckReport:
    """Cross-check the compiled gradient of ``f`` at ``arrays`` (see the module doc):
    against SymPy, finite differences, the interpreted reverse pass and the jvp/vjp
    adjoint identity.  ``f`` returns one rank-0 float.  ``rtol``/``atol`` replace the
    per-dtype tolerances of every check; ``sympy_limit`` bounds the float input scalars
    given to SymPy; ``seed`` fixes the random cotangent and tangents.
    """
    if any(isinstance(a, ShapeSpec) for a in arrays):
        raise DualarrError("check_grad needs arrays, not ShapeSpecs", op="check_grad")
    values = tuple(np.asarray(a) for a in arrays)
    program = trace(f, *values)
    out = scalar_float_output(program, "check_grad")
    floats = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    if not floats:
        raise DualarrError(f"{program.name} has no float input to differentiate", op="check_grad")
    inputs = _Inputs(values, tuple(input_names(program.inputs)), floats)
    dtype = _working_dtype(program)

    def tolerance(defaults: dict[DType, Tolerance]) -> Tolerance:
        chosen = defaults[dtype]
        return Tolerance(
            chosen.rtol if rtol is None else rtol, chosen.atol if atol is None else atol
        )

    value, grads = pipeline(f, *values)(*values)
    exact = tolerance(EXACT_TOLERANCE)
    checks = (
        _sympy_check(f, inputs, float(value), grads, exact, sympy_limit),
        _finite_difference_check(f, inputs, program, grads, tolerance(FD_TOLERANCE), seed),
        _interpreted_check(f, inputs, out.dtype, grads, exact),
        _adjoint_check(f, inputs, out.dtype, exact, seed),
    )
    return GradCheckReport(program.name, program.signature(), checks)
