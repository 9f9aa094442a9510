"""Fusion of elementwise float64 work into kernels (:mod:`dualarr.codegen.kernels`).

The fused program is checked against its oracles: the unfused program (``fuse`` off)
and the interpreted reverse pass (``mode="interpret"``) on random programs; the kernel
renderers against the registry's meaning (:func:`evaluate_kernel`), numexpr's text by
running it and the CuPy C source by parsing and evaluating it here (no CUDA needed);
and fusion's purpose by counting the array passes of generated programs (no timing).
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs
from test_ad_properties import float_positions, jittered

import dualarr as da
from dualarr.codegen.generate import _Generator, compile_program, generate
from dualarr.codegen.kernels import (
    FUSABLE,
    VECTOR_MATH_MODULE,
    Apply,
    Arg,
    CompiledKernel,
    Kernel,
    KernelExpr,
    Literal,
    combine_like_terms,
    cupy_source,
    evaluate_kernel,
    kernel_parameter_name,
    numexpr_text,
    numpy_ufunc,
    vector_math_ufunc,
)
from dualarr.lang.terms import Const, DType, Gather, IdSupply, Let, Op, fresh_var
from dualarr.pipeline import vectorise_program

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
F64, BOOL = DType.FLOAT64, DType.BOOL
MAX_OPERATIONS = _Generator._MAX_KERNEL_OPERATIONS
MAX_ARGUMENTS = _Generator._MAX_KERNEL_ARGUMENTS


pytestmark = pytest.mark.usefixtures("fused_small_arrays")  # fusion on for any size


def assert_same(got: Any, want: Any) -> None:
    """Same type, shape and values (floats to rounding; NaN and inf where the other has
    them)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def assert_fresh(result: Any, inputs: Sequence[Any]) -> None:
    """A writeable NumPy array sharing no memory with any input."""
    assert isinstance(result, np.ndarray), type(result)
    assert result.flags.writeable
    for x in inputs:
        assert not np.shares_memory(result, x)


def well_formed(kernels: Sequence[Kernel]) -> None:
    """Every kernel: distinct parameters, float64 or bool types, within the size caps."""
    for kernel in kernels:
        assert len(set(kernel.params)) == len(kernel.params), str(kernel)
        assert set(kernel.param_dtypes) <= {F64, BOOL}, str(kernel)
        assert kernel.dtype in (F64, BOOL), str(kernel)
        assert kernel.operations <= MAX_OPERATIONS, (kernel.operations, str(kernel))
        assert len(kernel.params) <= MAX_ARGUMENTS, (len(kernel.params), str(kernel))


# -- random programs: fused == unfused == interpreted -----------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1))
def test_fused_unfused_and_interpreted_gradients_agree(gp: GeneratedProgram, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = jittered(gp, rng)
    f = gp.function()
    fused = da.pipeline(f, *arrays, fuse=True)
    unfused = da.pipeline(f, *arrays, fuse=False)
    assert unfused.kernels.kernels == ()
    well_formed(fused.kernels.kernels)
    event(f"fused kernels: {min(len(fused.kernels.kernels), 3)}")
    with np.errstate(all="ignore"):
        value = np.asarray(unfused.source(*arrays))
    assume(np.all(np.isfinite(value)) and np.max(np.abs(value), initial=0.0) < 1e6)
    c = rng.normal(size=value.shape)

    fused_value, fused_grads = fused(*arrays, cotangent=c)
    unfused_value, unfused_grads = unfused(*arrays, cotangent=c)
    _, pullback = da.vjp(f, *arrays, mode="interpret")
    interpreted = pullback(c)
    assert_same(fused_value, unfused_value)
    positions = float_positions(gp)
    assert len(fused_grads) == len(positions)
    for k, fg, ug in zip(positions, fused_grads, unfused_grads, strict=True):
        assert fg.shape == arrays[k].shape and fg.dtype == np.float64
        assert_fresh(fg, arrays)
        assert_same(fg, ug)
        np.testing.assert_allclose(fg, interpreted[k], rtol=1e-8, atol=1e-10, equal_nan=True)


@settings(max_examples=150, deadline=None, suppress_health_check=SLOW_OK)
@given(programs())
def test_jit_forward_values_fused_and_unfused_agree(gp: GeneratedProgram) -> None:
    f = gp.function()
    with np.errstate(all="ignore"):
        with da.config.fusing(True):
            fused = da.jit(f)(*gp.arrays)
        with da.config.fusing(False):
            unfused = da.jit(f)(*gp.arrays)
    assert_same(fused, unfused)
    assert fused.dtype == gp.term.dtype.numpy() and fused.shape == gp.term.shape
    assert_fresh(fused, gp.arrays)

    program, _ = vectorise_program(gp.program())
    code = generate(program.inputs, program.outputs, fuse=True)
    well_formed(code.kernels)
    event(f"fused kernels: {min(len(code.kernels), 3)}")


# -- the renderers --------------------------------------------------------------------

a, b, c, d = Arg(0), Arg(1), Arg(2), Arg(3)
NAMES = ("a", "b", "c", "d")


def op(name: str, *args: KernelExpr) -> Apply:
    return Apply(name, args)


RENDERINGS: list[tuple[KernelExpr, str, str]] = [
    # expression, numexpr (compared as Python syntax trees), C operation (parsed here)
    (op("sub", a, op("sub", b, c)), "a - (b - c)", "a - (b - c)"),
    (op("sub", op("sub", a, b), c), "a - b - c", "a - b - c"),
    (op("div", a, op("mul", b, c)), "a / (b * c)", "a / (b * c)"),
    (op("mul", op("add", a, b), c), "(a + b) * c", "(a + b) * c"),
    (op("neg", op("mul", a, b)), "-(a * b)", "-(a * b)"),
    (op("pow", a, Literal(-1.0)), "a ** -1.0", "pow(a, -1.0)"),
    (op("pow", op("neg", a), b), "(-a) ** b", "pow(-a, b)"),
    (op("pow", op("pow", a, b), c), "(a ** b) ** c", "pow(pow(a, b), c)"),
    (op("neg", op("pow", a, b)), "-(a ** b)", "-pow(a, b)"),
    (op("and", op("lt", a, b), op("lt", c, d)), "(a < b) & (c < d)", "(a < b) && (c < d)"),
    (op("or", op("and", op("lt", a, b), op("le", c, d)), op("not", op("ge", a, d))),
     "((a < b) & (c <= d)) | ~(a >= d)", "((a < b) && (c <= d)) || !(a >= d)"),
    (op("eq", op("gt", a, b), Literal(False)), "(a > b) == False", "(a > b) == false"),
    (op("ne", op("lt", a, b), Literal(True)), "(a < b) != True", "(a < b) != true"),
    (op("select", op("lt", a, b), c, op("add", c, d)), "where(a < b, c, c + d)",
     "(a < b) ? c : c + d"),
    (op("mul", op("select", op("lt", a, b), c, d), a), "where(a < b, c, d) * a",
     "((a < b) ? c : d) * a"),
    (op("pow", a, b), "a ** b", "pow(a, b)"),
    (op("asin", a), "arcsin(a)", "asin(a)"),
    (op("acos", a), "arccos(a)", "acos(a)"),
    (op("atan2", a, b), "arctan2(a, b)", "atan2(a, b)"),
    (op("abs", op("sub", a, b)), "abs(a - b)", "fabs(a - b)"),
    (op("recip", op("add", a, b)), "1.0 / (a + b)", "1.0 / (a + b)"),
    (op("sigmoid", a), "1.0 / (1.0 + exp(-a))", "1.0 / (1.0 + exp(-a))"),
    (op("stop_gradient", op("mul", a, b)), "a * b", "a * b"),
    (op("mul", op("stop_gradient", op("add", a, b)), c), "(a + b) * c", "(a + b) * c"),
    (op("add", a, Literal(1e-05)), "a + 1e-05", "a + 1e-05"),
    (op("mul", a, Literal(-2.5)), "a * -2.5", "a * -2.5"),
    (op("sub", a, Literal(-2.5)), "a - -2.5", "a - -2.5"),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "numexpr_form", "c_form"), RENDERINGS)
def test_renderers_spell_each_expression(expr: KernelExpr, numexpr_form: str, c_form: str) -> None:
    text = numexpr_text(expr, NAMES)
    assert ast.dump(ast.parse(text, mode="eval")) == ast.dump(
        ast.parse(numexpr_form, mode="eval")
    ), text
    used = sorted(used_args(expr))
    kernel = Kernel("k", tuple(NAMES[k] for k in used), (F64,) * len(used), renumbered(expr),
                    F64, (3,))  # fmt: skip
    _, _, operation = cupy_source(kernel)
    assert operation.startswith("out = ")
    assert parse_c(operation.removeprefix("out = ")) == parse_c(c_form), operation


def test_c_never_writes_a_decrement_for_a_double_negation() -> None:
    """``--a`` is C's pre-decrement (and ``- -a`` or ``-(-a)`` the negation twice)."""
    kernel = Kernel("k", ("a",), (F64,), op("neg", op("neg", a)), F64, (3,))
    _, _, operation = cupy_source(kernel)
    assert "--" not in operation, operation
    assert parse_c(operation.removeprefix("out = ")) == parse_c("-(-a)")


def test_reserved_parameter_names_are_replaced() -> None:
    for reserved in ("i", "n", "out", "exp", "where", "true", "int", "_ind", "arcsin"):
        assert kernel_parameter_name(reserved, 3) == "a3"
    assert kernel_parameter_name("x", 0) == "x"
    assert kernel_parameter_name("v12", 1) == "v12"
    params = ("i", "n", "out", "exp")
    expr = op("add", op("mul", Arg(0), Arg(1)), op("mul", Arg(2), op("exp", Arg(3))))
    kernel = Kernel("k", params, (F64,) * 4, expr, F64, (5,))
    in_params, out_params, operation = cupy_source(kernel)
    assert in_params == "float64 a0, float64 a1, float64 a2, float64 a3"
    assert out_params == "float64 out"
    assert parse_c(operation.removeprefix("out = ")) == parse_c("a0 * a1 + a2 * exp(a3)")


def test_generated_kernels_never_use_reserved_names() -> None:
    def f(i: Any, n: Any, out: Any, exp: Any) -> Any:
        return da.sum(da.sin(i * n + out * exp) * exp)

    arrays = [np.linspace(0.1, 0.9, 6) + k for k in range(4)]
    fused = da.pipeline(f, *arrays, fuse=True)
    assert fused.kernels.kernels
    well_formed(fused.kernels.kernels)
    reserved = {"i", "n", "out", "exp"}
    for kernel in fused.kernels.kernels:
        assert not reserved & set(kernel.params), str(kernel)
    unfused = da.pipeline(f, *arrays, fuse=False)
    for got, want in zip(fused(*arrays)[1], unfused(*arrays)[1], strict=True):
        assert_same(got, want)


def test_an_input_named_like_a_replacement_name_keeps_its_own_parameter() -> None:
    """An input named ``a1`` next to one renamed to ``a1`` (``i``, reserved in C)."""

    def f(a1: Any, i: Any) -> Any:
        return da.sum(da.sin(a1 * i + a1 * a1))

    x, y = np.linspace(0.1, 0.9, 5), np.linspace(0.2, 0.7, 5)
    fused = da.pipeline(f, x, y, fuse=True)
    well_formed(fused.kernels.kernels)
    unfused = da.pipeline(f, x, y, fuse=False)
    for got, want in zip(fused(x, y)[1], unfused(x, y)[1], strict=True):
        assert_same(got, want)


# -- a small C expression parser: the CuPy operation checked without CUDA ----------------

CTree = tuple[Any, ...]
_C_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+|\d+)|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>--|\+\+|&&|\|\||==|!=|<=|>=|[-+*/<>!?:(),]))"
)
_C_BINARY = {"||": 4, "&&": 5, "==": 8, "!=": 8, "<": 9, "<=": 9, ">": 9, ">=": 9,
             "+": 11, "-": 11, "*": 12, "/": 12}  # fmt: skip
_C_FUNCTIONS: dict[str, Callable[..., float]] = {
    "exp": math.exp, "log": math.log, "log1p": math.log1p, "expm1": math.expm1,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "sinh": math.sinh, "cosh": math.cosh,
    "tanh": math.tanh, "sqrt": math.sqrt, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "fabs": math.fabs, "pow": math.pow,
}  # fmt: skip


def _c_tokens(text: str) -> list[str]:
    tokens, position = [], 0
    text = text.rstrip()
    while position < len(text):
        match = _C_TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"not C: {text[position:]!r}")
        tokens.append(match.group(match.lastgroup or ""))
        position = match.end()
    return tokens


def parse_c(text: str) -> CTree:
    """The C expression ``text`` as a tree, by C's precedences (``?:`` lowest, then
    ``||``, ``&&``, equality, relations, ``+ -``, ``* /``, prefix ``- !``); parentheses
    leave no trace, so equal trees mean the same parse."""
    tokens = _c_tokens(text)
    position = 0

    def peek() -> str:
        return tokens[position] if position < len(tokens) else ""

    def take(expected: str | None = None) -> str:
        nonlocal position
        token = peek()
        if not token or (expected is not None and token != expected):
            raise ValueError(f"expected {expected or 'more'}, got {token!r} in {text!r}")
        position += 1
        return token

    def primary() -> CTree:
        token = take()
        if token in ("--", "++"):
            raise ValueError(f"{token} (an increment or decrement) in {text!r}")
        if token == "(":
            inner = conditional()
            take(")")
            return inner
        if token in ("-", "!"):
            return ("prefix", token, primary())
        if token[0].isdigit():
            return ("number", float(token))
        if peek() == "(":
            take("(")
            args = [conditional()]
            while peek() == ",":
                take(",")
                args.append(conditional())
            take(")")
            return ("call", token, *args)
        return ("name", token)

    def binary(least: int) -> CTree:
        left = primary()
        while peek() in _C_BINARY and _C_BINARY[peek()] >= least:
            symbol = take()
            left = ("infix", symbol, left, binary(_C_BINARY[symbol] + 1))
        return left

    def conditional() -> CTree:
        cond = binary(0)
        if peek() != "?":
            return cond
        take("?")
        if_true = conditional()
        take(":")
        return ("select", cond, if_true, conditional())

    tree = conditional()
    if position != len(tokens):
        raise ValueError(f"trailing {tokens[position:]} in {text!r}")
    return tree


def identifiers(tree: CTree) -> set[str]:
    """The variable and function names a parsed C expression reads."""
    if tree[0] == "number":
        return set()
    if tree[0] == "name":
        return {tree[1]}
    found = {tree[1]} if tree[0] == "call" else set()
    for part in tree[1:]:
        if isinstance(part, tuple):
            found |= identifiers(part)
    return found


def evaluate_c(tree: CTree, env: dict[str, float | bool]) -> float | bool:
    """The value of a parsed C expression on scalars (C's meaning of each operator)."""
    kind = tree[0]
    if kind == "number":
        return float(tree[1])
    if kind == "name":
        return {"true": True, "false": False}.get(tree[1], env.get(tree[1], math.nan))
    if kind == "call":
        return float(_C_FUNCTIONS[tree[1]](*(evaluate_c(t, env) for t in tree[2:])))
    if kind == "select":
        return evaluate_c(tree[2] if evaluate_c(tree[1], env) else tree[3], env)
    if kind == "prefix":
        value = evaluate_c(tree[2], env)
        return (not value) if tree[1] == "!" else -value
    symbol, left, right = tree[1], evaluate_c(tree[2], env), evaluate_c(tree[3], env)
    if symbol == "&&":
        return bool(left) and bool(right)
    if symbol == "||":
        return bool(left) or bool(right)
    operations: dict[str, Callable[[Any, Any], Any]] = {
        "+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q,
        "/": lambda p, q: p / q, "<": lambda p, q: p < q, "<=": lambda p, q: p <= q,
        ">": lambda p, q: p > q, ">=": lambda p, q: p >= q, "==": lambda p, q: p == q,
        "!=": lambda p, q: p != q,
    }  # fmt: skip
    result: float | bool = operations[symbol](left, right)
    return result


def test_the_c_parser_follows_c_precedence() -> None:
    assert parse_c("a - b - c") == parse_c("(a - b) - c") != parse_c("a - (b - c)")
    assert parse_c("a < b == c < d") == parse_c("(a < b) == (c < d)")
    assert parse_c("a || b && c") == parse_c("a || (b && c)")
    assert parse_c("a ? b : c ? d : e") == parse_c("a ? b : (c ? d : e)")
    assert parse_c("-a * b") == parse_c("(-a) * b")
    assert identifiers(parse_c("pow(a, -1.0) + (c ? b : true)")) == {"pow", "a", "b", "c", "true"}
    for not_c in ("--a", "(a + b", "a + b)", "a $ b"):
        with pytest.raises(ValueError):
            parse_c(not_c)


# -- random kernel expressions -------------------------------------------------------

UNIT_DOMAIN = ("log", "sqrt", "asin", "acos", "log1p", "exp", "expm1", "sinh", "cosh", "tan",
               "recip")  # fmt: skip
"""Defined and moderate on (0, 1)."""
BOUNDED = ("sin", "cos", "tanh", "atan", "sigmoid")
"""Defined everywhere, values within [-pi/2, pi/2]."""
ANYWHERE = (*BOUNDED, "neg", "abs", "stop_gradient")
LITERALS = (0.5, -1.0, 2.0, 1e-05, -0.75, 3.0)
ARGUMENTS = 3


def _args() -> st.SearchStrategy[KernelExpr]:
    return st.integers(0, ARGUMENTS - 1).map(Arg)


def unit_exprs(depth: int) -> st.SearchStrategy[KernelExpr]:
    """Values in (0, 1) for arguments in (0.1, 0.9)."""
    if depth <= 0:
        return _args()
    smaller = unit_exprs(depth - 1)
    return st.one_of(
        _args(),
        st.tuples(smaller, smaller).map(lambda p: op("mul", *p)),
        smaller.map(lambda e: op("sqrt", e)),
        smaller.map(lambda e: op("sigmoid", e)),
        st.tuples(smaller, smaller).map(
            lambda p: op("div", p[0], op("add", p[1], Literal(1.0)))
        ),
    )


def exact_exprs() -> st.SearchStrategy[KernelExpr]:
    """Rounded the same way by every back end (comparisons of them never flip)."""
    leaf = st.one_of(_args(), st.sampled_from(LITERALS).map(Literal))
    return st.one_of(
        _args(),
        st.tuples(st.sampled_from(("add", "sub", "mul")), _args(), leaf).map(
            lambda t: op(t[0], t[1], t[2])
        ),
        _args().map(lambda e: op("neg", e)),
    )


def bool_exprs(depth: int) -> st.SearchStrategy[KernelExpr]:
    compare = st.tuples(
        st.sampled_from(("lt", "le", "gt", "ge", "eq", "ne")), exact_exprs(), exact_exprs()
    ).map(lambda t: op(t[0], t[1], t[2]))
    if depth <= 0:
        return compare
    smaller = bool_exprs(depth - 1)
    return st.one_of(
        compare,
        smaller.map(lambda e: op("not", e)),
        st.tuples(st.sampled_from(("and", "or", "eq", "ne")), smaller,
                  st.one_of(smaller, st.booleans().map(Literal))).map(
            lambda t: op(t[0], t[1], t[2])
        ),
        st.tuples(smaller, smaller, smaller).map(lambda t: op("select", *t)),
    )  # fmt: skip


def float_exprs(depth: int) -> st.SearchStrategy[KernelExpr]:
    """Finite values of moderate size for arguments in (0.1, 0.9)."""
    unit = unit_exprs(max(0, depth - 1))
    if depth <= 0:
        return unit
    smaller = float_exprs(depth - 1)
    bounded = st.one_of(
        st.tuples(st.sampled_from(BOUNDED), smaller).map(lambda t: op(t[0], t[1])),
        st.sampled_from(LITERALS).map(Literal),
    )
    return st.one_of(
        unit,
        st.tuples(st.sampled_from(UNIT_DOMAIN), unit).map(lambda t: op(t[0], t[1])),
        st.tuples(st.sampled_from(ANYWHERE), smaller).map(lambda t: op(t[0], t[1])),
        st.tuples(st.sampled_from(("add", "sub", "mul")), smaller,
                  st.one_of(smaller, st.sampled_from(LITERALS).map(Literal))).map(
            lambda t: op(t[0], t[1], t[2])
        ),
        st.tuples(smaller, unit).map(lambda p: op("div", *p)),
        st.tuples(unit, bounded).map(lambda p: op("pow", *p)),
        st.tuples(smaller, smaller).map(lambda p: op("atan2", *p)),
        st.tuples(bool_exprs(depth - 1), smaller, smaller).map(lambda t: op("select", *t)),
    )  # fmt: skip


def kernel_exprs() -> st.SearchStrategy[tuple[KernelExpr, DType]]:
    return st.one_of(
        float_exprs(3).map(lambda e: (e, F64)), bool_exprs(2).map(lambda e: (e, BOOL))
    )


def used_args(expr: KernelExpr) -> set[int]:
    match expr:
        case Arg(index=k):
            return {k}
        case Apply(args=args):
            return set().union(*(used_args(e) for e in args))
        case _:
            return set()


def renumbered(expr: KernelExpr) -> KernelExpr:
    """``expr`` over its used arguments only, numbered in increasing order."""
    order = {k: j for j, k in enumerate(sorted(used_args(expr)))}

    def go(e: KernelExpr) -> KernelExpr:
        match e:
            case Arg(index=k):
                return Arg(order[k])
            case Apply(op=name, args=args):
                return Apply(name, tuple(go(x) for x in args))
            case _:
                return e

    return go(expr)


def kernel_of(expr: KernelExpr, dtype: DType, inputs: Sequence[np.ndarray]) -> tuple[
    Kernel, list[np.ndarray]
]:
    """A kernel of ``expr`` (over ``x``, ``y``, ``z``) and the arrays it reads."""
    used = sorted(used_args(expr))
    names = tuple(("x", "y", "z")[k] for k in used)
    kernel = Kernel("k", names, (F64,) * len(used), renumbered(expr), dtype, inputs[0].shape)
    return kernel, [inputs[k] for k in used]


def unit_arrays(size: int = 7) -> st.SearchStrategy[list[np.ndarray]]:
    element = st.floats(0.1, 0.9)
    return st.lists(
        st.lists(element, min_size=size, max_size=size).map(np.array),
        min_size=ARGUMENTS, max_size=ARGUMENTS,
    )  # fmt: skip


def test_the_kernel_strategy_names_every_fusable_primitive() -> None:
    drawn = {
        "float": UNIT_DOMAIN + ANYWHERE + ("add", "sub", "mul", "div", "pow", "atan2"),
        "bool": ("lt", "le", "gt", "ge", "eq", "ne", "not", "and", "or", "select"),
    }
    assert set(drawn["float"]) | set(drawn["bool"]) == set(FUSABLE)


@settings(max_examples=300, deadline=None)
@given(kernel_exprs(), unit_arrays())
def test_numexpr_kernels_agree_with_the_registry_under_array_api_strict(
    drawn: tuple[KernelExpr, DType], inputs: list[np.ndarray]
) -> None:
    xps = pytest.importorskip("array_api_strict")
    expr, dtype = drawn
    kernel, arrays = kernel_of(expr, dtype, inputs)
    got = np.asarray(CompiledKernel(kernel)(np, *arrays))
    strict = evaluate_kernel(kernel.expression, xps, [xps.asarray(x) for x in arrays])
    assert isinstance(strict, type(xps.asarray(0.0)))
    want = np.from_dlpack(strict)
    assert got.dtype == dtype.numpy() and want.dtype == dtype.numpy()
    assert np.all(np.isfinite(want)), (str(kernel), want)
    if dtype is F64:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(kernel_exprs(), unit_arrays(3))
def test_cupy_source_is_well_formed_c_that_means_the_expression(
    drawn: tuple[KernelExpr, DType], inputs: list[np.ndarray]
) -> None:
    expr, dtype = drawn
    kernel, arrays = kernel_of(expr, dtype, inputs)
    in_params, out_params, operation = cupy_source(kernel)
    declared = [p.split() for p in in_params.split(", ")]
    assert [t for t, _ in declared] == ["float64"] * len(kernel.params)
    names = [n for _, n in declared]
    assert len(set(names)) == len(names)
    assert out_params == ("float64 out" if dtype is F64 else "bool out")
    assert operation.startswith("out = ")
    body = operation.removeprefix("out = ")
    depth = 0
    for char in body:
        depth += {"(": 1, ")": -1}.get(char, 0)
        assert depth >= 0, operation
    assert depth == 0, operation
    tree = parse_c(body)
    read = identifiers(tree)
    assert read <= set(names) | set(_C_FUNCTIONS) | {"true", "false"}, read
    want = evaluate_kernel(kernel.expression, np, arrays)
    for point in range(len(inputs[0])):
        env: dict[str, float | bool] = {
            n: float(x[point]) for n, x in zip(names, arrays, strict=True)
        }
        got = evaluate_c(tree, env)
        if dtype is F64:
            assert math.isclose(float(got), float(want[point]), rel_tol=1e-9, abs_tol=1e-12), (
                operation, got, want[point])  # fmt: skip
        else:
            assert bool(got) == bool(want[point]), (operation, got, want[point])


# -- counting array passes (what fusion saves) ----------------------------------------

_UFUNCS = frozenset(name for name in dir(np) if isinstance(getattr(np, name), np.ufunc))


def array_passes(source: str) -> tuple[int, int]:
    """``(elementwise, other)`` array passes of a generated program: each kernel call,
    operator and ``xp`` ufunc is one elementwise pass, each other ``xp``/``helpers`` call
    (reduction, gather, scatter) one other pass; slices are views and cost none."""
    elementwise = other = 0
    tree = ast.parse(source)
    in_slices = {id(n) for s in ast.walk(tree) if isinstance(s, ast.Slice) for n in ast.walk(s)}
    for node in ast.walk(tree):
        if id(node) in in_slices:
            continue
        if isinstance(node, ast.BinOp | ast.UnaryOp | ast.Compare | ast.BoolOp):
            elementwise += 1
        elif isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id.startswith("kernel"):
                elementwise += 1
            elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
                if function.value.id == "xp" and function.attr in _UFUNCS:
                    elementwise += 1
                elif function.value.id in ("xp", "helpers"):
                    other += 1
    return elementwise, other


def w5(x: Any) -> Any:
    return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))


def chain(y: Any, idx: Any) -> Any:
    for _ in range(3):
        y = da.tanh(y * y[::-1] + 0.5 * y[idx])
    return da.sum(y)


N = 1000
X = np.linspace(-1.0, 1.0, N)
IDX = np.random.default_rng(0).integers(0, N, N)


@pytest.mark.parametrize(("f", "args"), [(w5, (X,)), (chain, (X, IDX))], ids=["w5", "chain"])
def test_fusion_halves_the_elementwise_passes_of_a_gradient(
    f: Callable[..., Any], args: tuple[np.ndarray, ...]
) -> None:
    fused = da.pipeline(f, *args, fuse=True)
    unfused = da.pipeline(f, *args, fuse=False)
    fused_elementwise, fused_other = array_passes(fused.python)
    unfused_elementwise, unfused_other = array_passes(unfused.python)
    assert fused.kernels.kernels
    well_formed(fused.kernels.kernels)
    assert 2 * fused_elementwise <= unfused_elementwise, (fused_elementwise, unfused_elementwise)
    assert fused_other <= unfused_other
    value, grads = fused(*args)
    want_value, want_grads = unfused(*args)
    assert_same(value, want_value)
    for got, want in zip(grads, want_grads, strict=True):
        assert_same(got, want)
        assert_fresh(got, args)


def test_array_passes_counts_operators_calls_and_kernels() -> None:
    source = (
        "def p(xp, helpers, x, i):\n"
        "    t = kernel1(xp, x)[9::-1]\n"
        "    return xp.sum(xp.exp(-t) * 2.0 + helpers.gather(t, [i], (3,)), axis=0)\n"
    )
    # kernel1, exp, -, *, + elementwise; sum and gather; the reversing slice is a view
    assert array_passes(source) == (5, 2)


# -- types, aliasing and what fusion leaves alone -------------------------------------


def test_results_never_alias_inputs() -> None:
    x, y = np.linspace(0.1, 0.9, 6), np.linspace(-1.0, 1.0, 6)

    def plain(x: Any, y: Any) -> Any:
        return da.sum(x * y)

    def stopped(x: Any, y: Any) -> Any:
        return da.sum(da.stop_gradient(da.stop_gradient(y)) * x + da.sin(x))

    for f in (plain, stopped):
        _, grads = da.pipeline(f, x, y, fuse=True)(x, y)
        value, (gx, gy) = da.value_and_grad(f, (0, 1))(x, y)
        for g, like in [*zip(grads, (x, y), strict=True), (gx, x), (gy, y)]:
            assert g.shape == like.shape and g.dtype == np.float64
            assert_fresh(g, (x, y))
        assert np.asarray(value).dtype == np.float64

    for g in (lambda x: da.stop_gradient(da.stop_gradient(x)), lambda x: +x, lambda x: x * 1.0):
        out = da.jit(g)(x)
        assert out.shape == x.shape and out.dtype == np.float64
        assert_fresh(out, (x,))
        np.testing.assert_array_equal(out, x)


def test_float32_programs_are_left_unfused() -> None:
    x = np.linspace(-1.0, 1.0, 50, dtype=np.float32)
    fused = da.pipeline(w5, x, fuse=True)
    unfused = da.pipeline(w5, x, fuse=False)
    assert fused.kernels.kernels == ()
    assert fused.python == unfused.python
    value, (grad,) = fused(x)
    assert grad.dtype == np.float32 and grad.shape == x.shape
    assert np.asarray(value).dtype == np.float32
    np.testing.assert_array_equal(grad, unfused(x)[1][0])
    assert_fresh(grad, (x,))


def test_integer_programs_are_left_unfused() -> None:
    def f(p: Any, q: Any) -> Any:
        return p * q + p - (q > 2) * 3

    p, q = np.arange(8), np.arange(8)[::-1].copy()
    program, _ = vectorise_program(da.trace(f, p, q))
    fused = compile_program(program.inputs, program.outputs, fuse=True)
    unfused = compile_program(program.inputs, program.outputs, fuse=False)
    assert fused.kernels == () and fused.source == unfused.source
    with da.config.fusing(True):
        got = da.jit(f)(p, q)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, unfused(p, q)[0])
    np.testing.assert_array_equal(got, p * q + p - (q > 2) * 3)


def test_boolean_results_come_from_kernels() -> None:
    def f(x: Any, y: Any) -> Any:
        return ((x > 0.25) & (y < 0.5)) | ~(x < y)

    x, y = np.linspace(0.0, 1.0, 9), np.linspace(1.0, 0.0, 9)
    program, _ = vectorise_program(da.trace(f, x, y))
    code = generate(program.inputs, program.outputs, fuse=True)
    assert len(code.kernels) == 1 and code.kernels[0].dtype is BOOL
    with da.config.fusing(True):
        got = da.jit(f)(x, y)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ((x > 0.25) & (y < 0.5)) | ~(x < y))


def test_a_let_bound_operation_read_through_a_view_keeps_its_parentheses() -> None:
    """``let v = exp x in v + y`` gathered as the view ``[1, 0:2]``: the view applies to
    the whole sum, ``(v + y)[1, 0:2]``, fused or not."""
    supply = IdSupply()
    x = fresh_var(supply, "x", (2, 3), F64)
    y = fresh_var(supply, "y", (2, 3), F64)
    v = fresh_var(supply, "v", (2, 3), F64)
    i = fresh_var(supply, "i", (), DType.INT64)
    body = Let(v, Op("exp", (x,)), Op("add", (v, y)))
    term = Gather((2,), body, (i,), (Const(np.asarray(1)), i))
    xs, ys = np.zeros((2, 3)), np.arange(6.0).reshape(2, 3)
    unfused = compile_program([x, y], [term], fuse=False)(xs, ys)[0]
    np.testing.assert_array_equal(unfused, [4.0, 5.0])
    fused = compile_program([x, y], [term], fuse=True)(xs, ys)[0]
    assert_same(fused, unfused)


# -- the size caps -------------------------------------------------------------------


def long_chain(x: Any) -> Any:
    """200 elementwise operations on one array."""
    for _ in range(100):
        x = da.cos(x) * 0.5
    return x


def test_a_long_chain_is_split_into_kernels_within_the_caps() -> None:
    x = np.linspace(0.0, 1.0, 8)
    program, _ = vectorise_program(da.trace(long_chain, x))
    fused = compile_program(program.inputs, program.outputs, fuse=True)
    unfused = compile_program(program.inputs, program.outputs, fuse=False)
    assert_same(fused(x)[0], unfused(x)[0])
    summed = da.pipeline(lambda x: da.sum(long_chain(x)), x, fuse=True)
    reference = da.pipeline(lambda x: da.sum(long_chain(x)), x, fuse=False)
    assert_same(summed(x)[1][0], reference(x)[1][0])

    assert len(fused.kernels) >= 200 // MAX_OPERATIONS
    well_formed(fused.kernels)
    well_formed(summed.kernels.kernels)


def test_two_pending_chains_joined_stay_within_the_operation_cap() -> None:
    """Each operand just under the cap, their sum over it: one kernel must not hold both."""

    def joined(x: Any) -> Any:
        a, b = x, x * 2.0
        for _ in range(MAX_OPERATIONS // 2):
            a = da.cos(a) * 0.5
        for _ in range(MAX_OPERATIONS // 2 - 1):
            b = da.cos(b) * 0.5
        return a + b

    x = np.linspace(0.0, 1.0, 5)
    program, _ = vectorise_program(da.trace(joined, x))
    fused = compile_program(program.inputs, program.outputs, fuse=True)
    assert_same(fused(x)[0], compile_program(program.inputs, program.outputs, fuse=False)(x)[0])
    well_formed(fused.kernels)


def product(x: Any, rows: range) -> Any:
    y = x[rows[0]]
    for k in rows[1:]:
        y = y * x[k]
    return y


def test_a_select_of_three_wide_operands_stays_within_the_argument_cap() -> None:
    """Condition and branches each read 24 rows: 72 arguments are more than numexpr
    takes, so the kernel must be split."""

    def wide(x: Any) -> Any:
        return da.where(
            product(x, range(0, 24)) > 1.0, product(x, range(24, 48)), product(x, range(48, 72))
        )

    x = np.random.default_rng(1).uniform(0.9, 1.1, (72, 5))
    program, _ = vectorise_program(da.trace(wide, x))
    fused = compile_program(program.inputs, program.outputs, fuse=True)
    unfused = compile_program(program.inputs, program.outputs, fuse=False)
    assert_same(fused(x)[0], unfused(x)[0])
    well_formed(fused.kernels)


def test_many_arguments_are_split_across_kernels() -> None:
    def many(x: Any) -> Any:
        return da.sum(product(x, range(30)))

    x = np.random.default_rng(2).uniform(0.9, 1.1, (30, 5))
    fused = da.pipeline(many, x, fuse=True)
    unfused = da.pipeline(many, x, fuse=False)
    assert_same(fused(x)[1][0], unfused(x)[1][0])
    assert max(len(k.params) for k in fused.kernels.kernels) > 1
    well_formed(fused.kernels.kernels)


@pytest.mark.parametrize("name", ["cupy", "array_api_compat.cupy"])
def test_a_cupy_namespace_runs_the_elementwise_kernel(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """On CuPy (bare or through array-api-compat) a kernel is one ``ElementwiseKernel``
    built from :func:`cupy_source`, never the operation-by-operation reference."""
    import types

    import dualarr.codegen.kernels as kernels

    built: list[tuple[tuple[str, str, str], str]] = []

    def fake_kernel(source: tuple[str, str, str], kernel_name: str) -> Any:
        built.append((source, kernel_name))
        return lambda *arrays: ("ran", arrays)

    monkeypatch.setattr(kernels, "_cupy_kernel", fake_kernel)
    kernel = Kernel(
        "kernel1", ("x",), (DType.FLOAT64,), Apply("sin", (Arg(0),)), DType.FLOAT64, (3,)
    )
    compiled = kernels.CompiledKernel(kernel)
    assert compiled(types.SimpleNamespace(__name__=name), "x-array") == ("ran", ("x-array",))
    assert built == [(cupy_source(kernel), "kernel1")]


# -- a view of pending work: the slice moves onto the kernel's arguments --------------

UNARY = {"sin": (da.sin, np.sin), "neg": (lambda a: -a, np.negative),
         "square": (lambda a: a * a, np.square)}
BINARY = {"add": (np.add, np.add), "mul": (np.multiply, np.multiply),
          "sub": (np.subtract, np.subtract)}


@st.composite
def sliced_elementwise(draw: st.DrawFn) -> tuple[list[tuple[str, str]], slice, float]:
    """A chain of elementwise steps on ``x`` and ``y``, then a slice of it (a reversal or
    a window), then one more step that reads the slice and ``x``."""
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted({*UNARY, *BINARY})),
                                     st.sampled_from(["x", "y", "c"])), min_size=1, max_size=4))
    start = draw(st.integers(0, 4))
    stop = draw(st.integers(start + 1, 9))
    cut = draw(st.sampled_from([slice(None, None, -1), slice(start, stop), slice(stop, start, -1)]))
    scale = draw(st.sampled_from([0.5, -2.0, 3.0]))
    return steps, cut, scale


def run_steps(steps: list[tuple[str, str]], x: Any, y: Any, c: float, numpy: bool) -> Any:
    z = x
    for name, other in steps:
        operand = {"x": x, "y": y, "c": c}[other]
        if name in UNARY:
            z = UNARY[name][1 if numpy else 0](z)
        else:
            z = BINARY[name][1 if numpy else 0](z, operand)
    return z


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(sliced_elementwise())
def test_a_slice_of_pending_elementwise_work_joins_the_kernel_that_reads_it(
    case: tuple[list[tuple[str, str]], slice, float],
) -> None:
    steps, cut, scale = case
    x, y = np.linspace(-1.0, 1.0, 10), np.linspace(0.5, 2.0, 10)

    def f(x: Any, y: Any) -> Any:
        z = run_steps(steps, x, y, 1.5, numpy=False)[cut]
        return da.sum(da.sin(z * scale + x[cut]))

    def want(x: np.ndarray, y: np.ndarray) -> float:
        z = run_steps(steps, x, y, 1.5, numpy=True)[cut]
        return float(np.sum(np.sin(z * scale + x[cut])))

    fused = da.pipeline(f, x, y, fuse=True)
    unfused = da.pipeline(f, x, y, fuse=False)
    well_formed(fused.kernels.kernels)
    assert fused.python.count("[") - fused.python.count("helpers") >= 1  # a view remains
    value, grads = fused(x, y)
    want_value, want_grads = unfused(x, y)
    np.testing.assert_allclose(value, want(x, y), rtol=1e-12)
    assert_same(value, want_value)
    for got, expected in zip(grads, want_grads, strict=True):
        assert_same(got, expected)
        assert_fresh(got, (x, y))


def test_fig18_gradient_is_one_kernel_over_reversed_views() -> None:
    def fig18(x: Any) -> Any:
        n = x.shape[0]
        return da.sum(da.build1(n, lambda i: x[i] * x[n - 1 - i]))

    x = np.linspace(-1.0, 1.0, 9)
    fused = da.pipeline(fig18, x, fuse=True)
    unfused = da.pipeline(fig18, x, fuse=False)
    assert len(fused.kernels.kernels) == 1  # (dt * x)[::-1] is not written out first
    elementwise, _ = array_passes(fused.python)
    assert elementwise == 1, fused.python
    assert array_passes(unfused.python)[0] >= 2
    _, (grad,) = fused(x)
    np.testing.assert_allclose(grad, 2.0 * x[::-1], rtol=1e-15)


def test_negative_zero_keeps_its_sign_in_a_kernel() -> None:
    """numexpr reads the literal ``-0.0`` as ``0.0``: a kernel passes it as an argument,
    so ``atan2(0, where(x > 0, -1, -0.0))`` is π, as NumPy computes it."""

    def f(x: Any) -> Any:
        return da.atan2(x * 0.0, da.where(x > 0.0, -1.0, -0.0))

    x = np.zeros(4)
    fused = da.pipeline(f, x, fuse=True)
    assert fused.kernels.kernels
    for kernel in fused.kernels.kernels:
        assert "-0.0" not in kernel.numexpr(), str(kernel)
    with da.config.fusing(True):
        got = da.jit(f)(x)
    np.testing.assert_array_equal(got, np.arctan2(np.zeros(4), np.full(4, -0.0)))
    assert np.all(got == np.pi)


# -- algebraic cleanup: exact rewrites only (tests/test_fusion_ieee.py: the bits) ------


def signed_sum(terms: Sequence[tuple[bool, KernelExpr]]) -> KernelExpr:
    """``±t1 ± t2 ...`` folded left, the first term negated as ``neg`` when negative."""
    (first_positive, first), *rest = terms
    total: KernelExpr = first if first_positive else op("neg", first)
    for positive, term in rest:
        total = op("add" if positive else "sub", total, term)
    return total


def operations(expr: KernelExpr) -> int:
    return Kernel("k", (), (), expr, F64, ()).operations


def assert_no_term_added_to_itself(expr: KernelExpr) -> None:
    """No ``t + t`` left in ``expr`` (it is ``2.0 * t``)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Apply):
            assert not (e.op == "add" and e.args[0] == e.args[1]), numexpr_text(
                expr, ("x", "y", "z")
            )
            stack.extend(e.args)


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit patterns, any NaN matching any NaN."""
    nan = np.isnan(want)
    return bool(
        np.array_equal(np.isnan(got), nan)
        and np.array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))
    )


@settings(max_examples=300, deadline=None, suppress_health_check=SLOW_OK)
@given(
    st.lists(float_exprs(2), min_size=1, max_size=3),
    st.lists(st.tuples(st.booleans(), st.integers(0, 2)), min_size=1, max_size=7),
    unit_arrays(),
)
def test_combining_like_terms_keeps_the_bits_and_never_adds_work(
    pool: list[KernelExpr], picks: list[tuple[bool, int]], inputs: list[np.ndarray]
) -> None:
    """A sum drawn from a few terms, each used several times with either sign (as a
    reverse pass adds one contribution per use): combined, it computes the same bits
    (only ``t + t = 2.0 * t``, exact, is rewritten) and costs no more operations."""
    expr = signed_sum([(positive, pool[k % len(pool)]) for positive, k in picks])
    collected = combine_like_terms(expr, [True] * ARGUMENTS)
    assert operations(collected) <= operations(expr)
    assert_no_term_added_to_itself(collected)
    with np.errstate(all="ignore"):
        want = evaluate_kernel(expr, np, inputs)
        got = evaluate_kernel(collected, np, inputs)
    assert same_bits(got, want)
    kernel, arrays = kernel_of(collected, F64, inputs)
    with np.errstate(all="ignore"):  # numexpr's C library functions: to rounding
        np.testing.assert_allclose(
            CompiledKernel(kernel)(np, *arrays), want, rtol=1e-9, atol=1e-12, equal_nan=True
        )


def test_a_term_added_to_itself_is_its_double_and_nothing_else_regroups() -> None:
    x, y, z = Arg(0), Arg(1), Arg(2)
    t = op("mul", x, op("mul", y, z))
    names = ("x", "y", "z")
    floats = [True, True, True]

    def collected(expr: KernelExpr) -> str:
        return numexpr_text(combine_like_terms(expr, floats), names)

    assert collected(op("add", t, t)) == "2.0 * (x * (y * z))"
    assert collected(op("sin", op("add", x, x))) == "sin(2.0 * x)"  # inside a call too
    # inexact regroupings are left alone: two roundings are not one
    assert collected(op("add", op("sub", op("sub", x, t), t), y)) == (
        "x - x * (y * z) - x * (y * z) + y"
    )
    assert collected(op("sub", op("neg", t), t)) == "-(x * (y * z)) - x * (y * z)"
    assert collected(op("sub", t, t)) == "x * (y * z) - x * (y * z)"  # inf - inf is NaN
    assert collected(op("add", Literal(2.0), op("sub", x, x))) == "2.0 + (x - x)"
    assert collected(op("sub", op("add", x, x), x)) == "2.0 * x - x"
    assert collected(op("add", x, y)) == "x + y"  # nothing alike: as written
    # booleans add as logical or: a sum over them is left alone
    assert combine_like_terms(op("add", x, x), [False, True, True]) == op("add", x, x)


def test_a_value_used_twice_contributes_once_to_its_kernel() -> None:
    """``x * x`` sends the cotangent back through both factors: the gradient's kernel
    adds ``2.0 * (x * c)``, not ``x * c`` twice (W5 of the benchmarks)."""

    def f(x: Any) -> Any:
        return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))

    x = np.linspace(-2.0, 2.0, 11)
    fused = da.pipeline(f, x, fuse=True)
    well_formed(fused.kernels.kernels)
    for kernel in fused.kernels.kernels:
        assert_no_term_added_to_itself(kernel.expression)
    assert any("2.0 * " in kernel.numexpr() for kernel in fused.kernels.kernels)
    _, (grad,) = fused(x)
    e = np.exp(-x * x)
    want = np.cos(x) * e - 2.0 * x * np.sin(x) * e + 2.0 * x / (1.0 + x * x)
    np.testing.assert_allclose(grad, want, rtol=1e-12, atol=1e-15)


def test_one_view_under_two_names_is_one_kernel_argument() -> None:
    """Fig. 18's gradient reads ``x[::-1]`` through two names (a let-bound view and the
    view of a pending slice): the kernel reads it once, as ``2.0 * (dt * v)``."""

    def fig18(x: Any) -> Any:
        n = x.shape[0]
        return da.sum(da.build1(n, lambda i: x[i] * x[n - 1 - i]))

    fused = da.pipeline(fig18, np.linspace(-1.0, 1.0, 9), fuse=True)
    (kernel,) = fused.kernels.kernels
    assert len(kernel.params) == 2, str(kernel)  # dt and the reversed view
    assert operations(kernel.expression) == 2 and kernel.numexpr().startswith("2.0 * ")


# -- one operation alone: NumPy's ufunc ------------------------------------------------


def test_a_kernel_of_one_operation_runs_numpys_ufunc() -> None:
    """One operation gains nothing from numexpr's virtual machine: it is NumPy's loop
    (``sin`` and ``cos`` aside: NumPy's float64 loops for them are scalar, so they are
    the vector math library's, or numexpr's without one)."""
    x, y = Arg(0), Arg(1)
    assert numpy_ufunc(op("mul", x, y)) == (np.multiply, (0, 1))
    assert numpy_ufunc(op("sub", Literal(1.0), x)) == (np.subtract, (1.0, 0))
    assert numpy_ufunc(op("lt", x, y)) == (np.less, (0, 1))
    assert numpy_ufunc(op("exp", x)) == (np.exp, (0,))
    for name in ("sin", "cos"):
        assert numpy_ufunc(op(name, x)) == (
            None if vector_math_ufunc(name) is None else (vector_math_ufunc(name), (0,))
        )
        assert getattr(np, name) not in (numpy_ufunc(op(name, x)) or (None,))
    assert numpy_ufunc(op("mul", x, op("add", x, y))) is None  # two operations
    assert numpy_ufunc(op("recip", x)) is None  # spelled as another expression
    a, b = np.linspace(0.5, 1.5, 5), np.linspace(-1.0, 1.0, 5)
    for expr, dtype, want in [
        (op("mul", x, y), F64, a * b),
        (op("sub", Literal(1.0), x), F64, 1.0 - a),
        (op("lt", x, y), BOOL, a < b),
    ]:
        kernel = Kernel("k", ("a", "b"), (F64, F64), expr, dtype, (5,))
        got = CompiledKernel(kernel)(np, a, b)
        assert got.dtype == dtype.numpy()
        np.testing.assert_array_equal(got, want)


# -- sin and cos: a vector math library's loops, or numexpr's -------------------------

SPECIAL = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e300, -1e22, 5e-324, np.pi, 1e-310]


@settings(max_examples=60, deadline=None, suppress_health_check=SLOW_OK)
@given(
    st.sampled_from(["sin", "cos"]),
    st.booleans(),
    st.lists(st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(SPECIAL),
             min_size=1, max_size=40),
    st.sampled_from(["contiguous", "reversed", "strided", "transposed"]),
)
def test_sin_and_cos_kernels_agree_with_numpy_on_any_layout(
    name: str, library: bool, values: list[float], layout: str
) -> None:
    """With the vector math library or without (numexpr), a kernel of ``sin``/``cos``
    is NumPy's function to 2 ulp, NaN for NaN, on views of any strides, and its result
    is fresh memory."""
    base = np.array(values * 2, dtype=np.float64)
    match layout:
        case "contiguous":
            x = base
        case "reversed":
            x = base[::-1]
        case "strided":
            x = base[::2]
        case "transposed":
            x = base.reshape(2, -1).T
    before = da.config.vector_math
    da.config.update("vector_math", library)
    try:
        kernel = CompiledKernel(Kernel("k", ("x",), (F64,), op(name, Arg(0)), F64, x.shape))
    finally:
        da.config.update("vector_math", before)
    with np.errstate(invalid="ignore"):
        got, want = kernel(np, x), getattr(np, name)(x)
    assert got.shape == want.shape and got.dtype == np.float64
    assert_fresh(got, [x, base])
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    np.testing.assert_array_max_ulp(got[finite], want[finite], maxulp=2)


def test_the_vector_math_setting_chooses_the_library_or_numexpr(monkeypatch: Any) -> None:
    """``config.vector_math`` off: no library ufunc, the kernel is numexpr's; on, it is
    the library's ufunc when that is installed (never NumPy's scalar loop)."""
    monkeypatch.setattr(da.config, "vector_math", False)
    assert vector_math_ufunc("sin") is None and numpy_ufunc(op("sin", Arg(0))) is None
    monkeypatch.setattr(da.config, "vector_math", True)
    assert vector_math_ufunc("exp") is None  # NumPy's own loop is the SIMD one
    ufunc = vector_math_ufunc("cos")
    try:
        import mkl_umath
    except (ImportError, OSError):
        assert ufunc is None
    else:
        assert ufunc is mkl_umath.cos and numpy_ufunc(op("cos", Arg(0))) == (ufunc, (0,))


def test_without_the_library_sin_and_cos_fall_back_to_numexpr(monkeypatch: Any) -> None:
    """A machine without the ``vml`` extra (the module cannot be imported): no library
    ufunc, and the kernel of ``sin`` is numexpr's, with NumPy's values."""
    from dualarr.codegen import kernels

    monkeypatch.setattr(kernels, "VECTOR_MATH_MODULE", "dualarr_no_such_vector_math_module")
    kernels._library_ufunc.cache_clear()
    try:
        assert vector_math_ufunc("sin") is None and numpy_ufunc(op("sin", Arg(0))) is None
        x = np.linspace(-4.0, 4.0, 33)
        kernel = CompiledKernel(Kernel("k", ("x",), (F64,), op("sin", Arg(0)), F64, x.shape))
        assert kernel._ufunc is None and kernel._numexpr is not None
        np.testing.assert_array_max_ulp(kernel(np, x), np.sin(x), maxulp=2)
    finally:
        kernels._library_ufunc.cache_clear()


@pytest.mark.skipif(
    importlib.util.find_spec(VECTOR_MATH_MODULE) is None, reason="the vml extra is not installed"
)
def test_w5_gradient_runs_the_vector_math_library_and_matches_the_formula() -> None:
    """W5's fused gradient calls the library's ``sin`` and ``cos`` kernels (the ``vml``
    extra, which the test command installs) and agrees with the closed form."""
    def w5(x: da.Tensor) -> da.Tensor:
        return da.sum(da.sin(x) * da.exp(-x * x) + da.log1p(x * x))

    x = np.linspace(-3.0, 3.0, 1001)
    p = da.pipeline(w5, x)
    ops = {k.expression.op for k in p.kernels.kernels if isinstance(k.expression, Apply)}
    assert {"sin", "cos"} <= ops
    compiled = [CompiledKernel(k) for k in p.kernels.kernels]
    library = {vector_math_ufunc("sin"), vector_math_ufunc("cos")}
    assert sum(c._ufunc is not None and c._ufunc[0] in library for c in compiled) == 2
    _, (grad,) = p(x)
    e = np.exp(-x * x)
    want = np.cos(x) * e - 2 * x * np.sin(x) * e + 2 * x / (1 + x * x)
    np.testing.assert_allclose(grad, want, rtol=1e-13, atol=1e-15)


@pytest.mark.skipif(
    importlib.util.find_spec(VECTOR_MATH_MODULE) is None, reason="the vml extra is not installed"
)
def test_a_large_sin_kernel_runs_in_chunks_with_the_bits_of_one_call() -> None:
    """Above the parallel size the library's loop runs in chunks on dualarr's threads
    (one MKL thread each): the same bits as one call over the whole array."""
    ufunc = vector_math_ufunc("sin")
    assert ufunc is not None
    x = np.random.default_rng(3).uniform(-50.0, 50.0, 3 * (1 << 18) + 5)
    kernel = CompiledKernel(Kernel("k", ("x",), (F64,), op("sin", Arg(0)), F64, x.shape))
    assert kernel._chunked
    np.testing.assert_array_equal(kernel(np, x), ufunc(x))
    np.testing.assert_array_equal(kernel(np, x[::-1]), ufunc(x[::-1]))


def test_a_program_without_sin_or_cos_never_loads_the_vector_math_library() -> None:
    """The library (about 15 ms to import) is loaded by the first kernel of ``sin`` or
    ``cos``, never on the way to another program's first gradient."""
    script = (
        "import sys, numpy as np, dualarr as da\n"
        "x = np.linspace(0.0, 1.0, 200_000)\n"
        "da.jit(da.grad(lambda x: da.sum(da.exp(x) * x)))(x)\n"
        f"assert {VECTOR_MATH_MODULE!r} not in sys.modules\n"
        "da.jit(da.grad(lambda x: da.sum(da.sin(x) * x)))(x)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == "
        f"{VECTOR_MATH_MODULE!r}))\n"
        "import os; print('MKL_NUM_THREADS', os.environ.get('MKL_NUM_THREADS'))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "MKL_NUM_THREADS"}
    environment.update(DUALARR_FUSE="1", DUALARR_FUSE_MIN_SIZE="65536", DUALARR_VECTOR_MATH="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, env=environment)
    assert done.returncode == 0, done.stderr
    loaded = importlib.util.find_spec(VECTOR_MATH_MODULE) is not None
    assert (VECTOR_MATH_MODULE in done.stdout) == loaded, done.stdout
    if loaded:  # one MKL thread per call: dualarr's threads spread a large array
        assert "MKL_NUM_THREADS 1" in done.stdout, done.stdout
