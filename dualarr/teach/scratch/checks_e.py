"""Checks of stage (e): code generation to NumPy (§7.5) — the bulk runtime with the total
semantics of §5.2, one term to one NumPy expression, a gradient program to a Python
function, and ``exec``.

Each task is graded on its own: the generated code of ``e.expression`` and ``e.generate``
runs against this module's reference runtime (``read``, ``gather``, ``scatter``), not the
learner's; ``e.compile_gradient`` runs the learner's whole stage.  Gradient programs come
from stage d's reference once its solution notebook exists, and from Fig. 18's gradient
program written out by hand.
"""

from __future__ import annotations

import ast
import keyword
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

import numpy as np

from .grading import Mismatch, count_lines, expect_close, task
from .notebooks import notebook_path, stage
from .oracle import Case, cases
from .terms import (
    Gather,
    GradientProgram,
    Index,
    Let,
    Op,
    Replicate,
    Scatter,
    SumOuter,
    Term,
    Var,
    constructs_in,
    float_const,
    int_const,
    map_children,
    show,
)

Array = np.ndarray

WITHOUT_BUILD1 = frozenset(
    {"op", "cond", "let", "index", "gather", "scatter", "sumOuter", "replicate", "tr",
     "fromList", "iota"}
)  # fmt: skip
"""The constructs of a gradient program's terms: Fig. 7 less build1 (the bot removed it);
``let`` is drawn too, and lifted out into the program's bindings."""

INDEX_FUNCTION_HINT = (
    "§3.3: call the index function once, on the whole grid of its variables (np.indices, "
    "sparse or not), and give every component the grid's shape, constants included; §5.2: "
    "a point is in range when every component j satisfies 0 <= j < n, and an index that "
    "is used to read must itself be in range everywhere"
)
BULK_HINT = (
    "§5.2 in bulk: read every point at once with NumPy's fancy indexing at indices made "
    "safe, then zero what the mask rejects (whole subarrays, in the array's dtype); a "
    "gather reads at its index function's grid; a scatter adds with an unbuffered add "
    "(np.add.at), so that equal targets all count, and drops the writes outside"
)
EXPRESSION_HINT = (
    "Fig. 7 construct by construct: one NumPy expression per construct, its arguments the "
    "expressions of its subterms; names through ident(); an index function becomes a "
    "Python lambda for gather/scatter"
)
GENERATE_HINT = (
    "§7.5 / Fig. 21: def gradient(<inputs>, <cotangent>), one assignment per binding in "
    "order, then return the primal and a tuple of one gradient per input; names through "
    "ident()"
)
COMPILE_HINT = (
    "§7.5: exec the generated source in a namespace that holds np and the runtime "
    "(read, gather, scatter, total_quot, total_rem), and return its function gradient"
)
LOOPS_HINT = (
    "§7.5: the generated program works in bulk; no Python loop (for, while, a "
    "comprehension) over the elements of an array, in the generated code or the runtime"
)


# --------------------------------------------------------------------------------------
# The reference runtime: what the generated code of e.expression / e.generate runs on
# --------------------------------------------------------------------------------------


def _total_quot(a: Any, b: Any) -> Any:
    return np.where(b == 0, a, np.floor_divide(a, np.where(b == 0, 1, b)))


def _total_rem(a: Any, b: Any) -> Any:
    return np.where(b == 0, a, np.remainder(a, np.where(b == 0, 1, b)))


def _in_bounds(ix: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[tuple[Array, ...], Array]:
    grids = np.broadcast_arrays(*ix)
    ok = np.ones(grids[0].shape if grids else (), dtype=bool)
    for j, n in zip(grids, shape, strict=False):
        ok &= (j >= 0) & (j < n)
    return tuple(np.where(ok, j, 0) for j in grids), ok


def _grid(shape: tuple[int, ...], f: Callable[..., tuple[Any, ...]]) -> tuple[Array, ...]:
    return tuple(np.broadcast_to(j, shape) for j in f(*np.indices(shape, sparse=True)))


def _read(array: Any, ix: tuple[Any, ...]) -> Array:
    data: Array = np.asarray(array)
    if not ix:
        return data
    safe, ok = _in_bounds(ix, data.shape)
    picked: Array = data[safe]
    return np.where(ok.reshape(ok.shape + (1,) * (picked.ndim - ok.ndim)), picked,
                    np.zeros((), data.dtype))


def _gather(shape: tuple[int, ...], array: Any, f: Callable[..., tuple[Any, ...]]) -> Array:
    return _read(array, _grid(tuple(shape), f))


def _scatter(shape: tuple[int, ...], array: Any, f: Callable[..., tuple[Any, ...]],
             rank: int) -> Array:
    array = np.asarray(array)
    safe, ok = _in_bounds(_grid(array.shape[:rank], f), tuple(shape))
    out = np.zeros(tuple(shape) + array.shape[rank:], array.dtype)
    np.add.at(out, tuple(j[ok] for j in safe), array[ok])
    return out


REFERENCE_RUNTIME: dict[str, Any] = {
    "np": np, "read": _read, "gather": _gather, "scatter": _scatter,
    "total_quot": _total_quot, "total_rem": _total_rem,
}  # fmt: skip
"""The names generated code may use, with the reference's meaning."""


def _ident(ns: Mapping[str, Any], name: str) -> str:
    ident = ns.get("ident")
    if callable(ident):
        return str(ident(name))
    py = name.replace("'", "_")
    return py + "_" if keyword.iskeyword(py) or py in REFERENCE_RUNTIME else py


# --------------------------------------------------------------------------------------
# Counted work: Python lines run in the learner's code (and in generated code)
# --------------------------------------------------------------------------------------


def _constant_work(run: Callable[[int], Any], sizes: tuple[int, int], what: str) -> None:
    small, large = (count_lines(partial(run, n))[1] for n in sizes)
    if large > small:
        raise Mismatch(
            f"{what}: your code ran {small} Python lines at n = {sizes[0]} and {large} at "
            f"n = {sizes[1]}: a Python loop over the elements",
            hint=LOOPS_HINT,
        )


# --------------------------------------------------------------------------------------
# Programs: random index functions, random terms, gradient programs
# --------------------------------------------------------------------------------------


def _affine(rng: np.random.Generator, names: tuple[str, ...], extent: int
            ) -> tuple[Term, Callable[..., Any], str]:
    """A random index component over ``names`` for a dimension of ``extent`` (sometimes
    out of range): as a term, as a Python function of the variables, and as text."""
    coefficients = [int(c) for c in rng.integers(-1, 3, size=len(names))]
    if rng.random() < 0.2:
        coefficients = [0] * len(names)  # a constant component: broadcast to the grid
    offset = int(rng.integers(-1, extent + 1))
    term: Term = int_const(offset)
    text = str(offset)
    for name, c in zip(names, coefficients, strict=True):
        if c:
            term = Op("add", (term, Op("mul", (Var(name), int_const(c)))))
            text += f" {'+' if c > 0 else '-'} {abs(c)}*{name}"
    wrap = bool(rng.random() < 0.3)
    if wrap:
        term = Op("rem", (term, int_const(extent)))
        text = f"({text}) % {extent}"

    def value(*js: Any) -> Any:
        total = offset + sum((c * j for c, j in zip(coefficients, js, strict=True) if c), 0)
        return np.remainder(total, extent) if wrap else total

    return term, value, text


def _shape(rng: np.random.Generator, low: int, high: int) -> tuple[int, ...]:
    return tuple(int(n) for n in rng.integers(1, 4, size=int(rng.integers(low, high + 1))))


def _data(rng: np.random.Generator, shape: tuple[int, ...], integer: bool) -> Array:
    if integer:
        return np.asarray(rng.integers(-5, 6, size=shape))
    return np.asarray(rng.integers(-16, 17, size=shape) / 8.0)


def _hoist(t: Term, bindings: list[tuple[str, Term]]) -> Term:
    """``t`` with every ``let`` lifted into ``bindings`` (names are bound once, and the
    random programs bind no let inside an index function)."""
    if isinstance(t, Let):
        bindings.append((t.name, _hoist(t.bound, bindings)))
        return _hoist(t.body, bindings)
    return map_children(t, lambda c: _hoist(c, bindings))


def _random_terms(seed: int, count: int, *, lets: bool) -> list[Case]:
    constructs = WITHOUT_BUILD1 if lets else WITHOUT_BUILD1 - {"let"}
    return sorted(cases(seed, count, constructs=constructs), key=lambda c: len(show(c.term)))


def _as_program(case: Case) -> GradientProgram:
    """The case's term as a gradient program: its lets as bindings, the term as the
    primal, and stand-in gradients ``(k+1) * input_k`` (checks the order)."""
    bindings: list[tuple[str, Term]] = []
    primal = _hoist(case.term, bindings)
    gradients = tuple(Op("mul", (Var(name), float_const(k + 1.0)))
                      for k, name in enumerate(case.inputs))
    return GradientProgram(case.inputs, "dt", tuple(bindings), primal, gradients)


def fig18_program(n: int) -> GradientProgram:
    """Fig. 18's gradient program (§7.1–7.5), written out: ``sumOuter (build1 n (λi. x[i] *
    x[n-1-i]))`` after the bot, differentiated, with the shared cotangent let-bound."""
    reverse = Op("sub", (int_const(n - 1), Var("i")))
    v1 = Gather((n,), Var("x"), ("i",), (Var("i"),))
    v2 = Gather((n,), Var("x"), ("i",), (reverse,))
    c1 = Replicate(n, Var("dt"))
    gradient = Op("add", (
        Scatter((n,), Op("mul", (Var("c1"), Var("v2"))), ("i",), (Var("i"),)),
        Scatter((n,), Op("mul", (Var("c1"), Var("v1"))), ("i",), (reverse,)),
    ))  # fmt: skip
    return GradientProgram(("x",), "dt", (("v1", v1), ("v2", v2), ("c1", c1)),
                           SumOuter(Op("mul", (Var("v1"), Var("v2")))), (gradient,))


def _fig18_expected(x: Array, dt: float) -> tuple[Array, Array]:
    import dualarr as da
    from dualarr.teach.examples import fig18

    value, grad = da.value_and_grad(fig18)(x)
    return np.asarray(value), dt * np.asarray(grad)


def _gradient_cases(seed: int, count: int) -> Iterator[tuple[Case, GradientProgram]]:
    """Random programs of every Fig. 7 construct and stage d's reference gradient program
    of each, after stage b's reference bot (none until stage d's solution notebook
    exists)."""
    if not notebook_path("d", "reference").exists():
        return
    b, d = stage("b", "reference"), stage("d", "reference")
    for case in sorted(cases(seed, count), key=lambda c: len(show(c.term))):
        shapes = {name: case.env[name].shape for name in case.inputs}
        yield case, d.gradient_program(b.bot(case.term), shapes)


def _hint_for(term_text: str, t: Term, hint: str) -> str:
    kinds = ", ".join(sorted(constructs_in(t) - {"Const", "Var"}))
    return f"{hint} (this program uses {kinds})" if kinds else hint


# --------------------------------------------------------------------------------------
# e.index_function
# --------------------------------------------------------------------------------------


@task("e.index_function", names=("in_bounds", "index_grid"),
      title="an index function over its whole grid, and the mask of §5.2",
      hint=INDEX_FUNCTION_HINT)
def check_index_function(ns: Mapping[str, Any]) -> str:
    in_bounds, index_grid = ns["in_bounds"], ns["index_grid"]
    rng = np.random.default_rng(51)
    for _ in range(60):
        shape = _shape(rng, 0, 3)
        names = tuple(f"i{k}" for k in range(len(shape)))
        extents = _shape(rng, 1, 3)
        parts = [_affine(rng, names, n) for n in extents]
        f_text = f"lambda {', '.join(names)}: ({''.join(p[2] + ', ' for p in parts)})"

        def f(*js: Any, parts: Any = parts) -> tuple[Any, ...]:
            return tuple(p[1](*js) for p in parts)

        shown = f"index_grid({shape}, {f_text})"
        got = index_grid(shape, f)
        if not isinstance(got, tuple | list) or len(got) != len(extents):
            raise Mismatch(f"{shown}: expected a tuple of {len(extents)} index arrays",
                           hint=INDEX_FUNCTION_HINT, program=shown, obtained=got)
        points = list(np.ndindex(*shape))
        for k, (component, part) in enumerate(zip(got, parts, strict=True)):
            want = np.array([part[1](*at) for at in points], dtype=np.int64).reshape(shape)
            expect_close(want, component, what=f"{shown}: component {k}",
                         hint=INDEX_FUNCTION_HINT, program=shown)
        grids = tuple(np.asarray(c) for c in got)
        safe, ok = in_bounds(grids, extents)
        shown = f"in_bounds(index_grid({shape}, {f_text}), {extents})"
        want_ok = np.ones(shape, dtype=bool)
        for j, n in zip(grids, extents, strict=True):
            want_ok &= (j >= 0) & (j < n)
        expect_close(want_ok, ok, what=f"{shown}: the mask", hint=INDEX_FUNCTION_HINT,
                     program=shown)
        for k, (j, s, n) in enumerate(zip(grids, safe, extents, strict=True)):
            s = np.asarray(s)
            expect_close(np.where(want_ok, j, s), s,
                         what=f"{shown}: safe component {k} differs where the mask holds",
                         hint=INDEX_FUNCTION_HINT, program=shown)
            outside = (s < 0) | (s >= n)
            if outside.any():
                at = tuple(int(q) for q in np.argwhere(outside)[0])
                raise Mismatch(f"{shown}: safe component {k} is out of range", program=shown,
                               hint=INDEX_FUNCTION_HINT, element=str(list(at)),
                               expected=f"0 <= j < {n}", obtained=s[at])
    return ("60 random index functions (some out of range, some of no variable) evaluated "
            "over their grids, and their masks and safe indices, agree pointwise")


# --------------------------------------------------------------------------------------
# e.bulk
# --------------------------------------------------------------------------------------


@task("e.bulk", names=("read", "gather", "scatter"),
      title="index, gather and scatter in bulk, total (§5.2)", hint=BULK_HINT)
def check_bulk(ns: Mapping[str, Any]) -> str:
    read, gather, scatter = ns["read"], ns["gather"], ns["scatter"]
    evaluate = stage("a", "reference").evaluate
    rng = np.random.default_rng(52)
    for k in range(100):
        integer = k % 4 == 0
        # read with one index per dimension of a prefix, then on a whole grid of them
        array = _data(rng, _shape(rng, 1, 3), integer)
        m = int(rng.integers(0, array.ndim + 1))
        ix = tuple(int(j) for j in rng.integers(-1, 4, size=m))
        shown = f"read(array of shape {list(array.shape)}, {ix})"
        want = evaluate(Index(Var("a"), tuple(int_const(j) for j in ix)), {"a": array})
        _expect_array(want, read(array, ix), shown)
        grid = _shape(rng, 1, 2)
        m = max(m, 1)
        ixs = tuple(rng.integers(-1, 4, size=grid) for _ in range(m))
        shown = f"read(array of shape {list(array.shape)}, {m} index arrays of shape {grid})"
        rows = [evaluate(Index(Var("a"), tuple(int_const(int(j[at])) for j in ixs)),
                         {"a": array}) for at in np.ndindex(*grid)]
        _expect_array(np.stack(rows).reshape(grid + array.shape[m:]), read(array, ixs), shown)
        # gather and scatter against the evaluator of stage a's reference
        for kind in ("gather", "scatter"):
            outer = _shape(rng, 0 if kind == "gather" else 1, 2)
            source = _shape(rng, 1, 2)
            tail = _shape(rng, 0, 1)
            domain, target = (outer, source) if kind == "gather" else (source, outer)
            names = tuple(f"i{q}" for q in range(len(domain)))
            parts = [_affine(rng, names, n) for n in target]
            data = _data(rng, (*domain, *tail) if kind == "scatter" else (*source, *tail),
                         integer)

            def f(*js: Any, parts: Any = parts) -> tuple[Any, ...]:
                return tuple(p[1](*js) for p in parts)

            f_text = f"lambda {', '.join(names)}: ({''.join(p[2] + ', ' for p in parts)})"
            index = tuple(p[0] for p in parts)
            if kind == "gather":
                term: Term = Gather(outer, Var("a"), names, index)
                shown = f"gather({outer}, array of shape {list(data.shape)}, {f_text})"
                got = gather(outer, data, f)
            else:
                term = Scatter(outer, Var("a"), names, index)
                shown = (f"scatter({outer}, array of shape {list(data.shape)}, {f_text}, "
                         f"{len(names)})")
                got = scatter(outer, data, f, len(names))
            _expect_array(evaluate(term, {"a": data}), got, shown)

    def fig18_like(n: int) -> Any:
        x = np.arange(n, dtype=np.float64)
        return (gather((n,), x, lambda i: (n - 1 - i,)),
                scatter((n,), x, lambda i: (i // 2,), 1),
                read(x, (np.arange(n) - 1,)))

    _constant_work(fig18_like, (8, 512), "a gather, a scatter and a read")
    return ("100 rounds of random reads (one point and a grid of points), gathers and "
            "scatters agree with the evaluator, element by element, dtypes kept; the same "
            "Python lines run at n = 8 and n = 512")


def _expect_array(want: Array, got: Any, shown: str) -> None:
    expect_close(want, got, what=shown, hint=BULK_HINT, program=shown)
    if np.asarray(got).dtype.kind != want.dtype.kind:
        raise Mismatch(f"{shown}: dtype {np.asarray(got).dtype}, expected {want.dtype}",
                       hint=BULK_HINT, program=shown)


# --------------------------------------------------------------------------------------
# e.expression
# --------------------------------------------------------------------------------------


def _no_loops(source: str, what: str) -> None:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.While | ast.comprehension | ast.AsyncFor):
            line = ast.get_source_segment(source, node) or type(node).__name__
            raise Mismatch(f"{what} has a Python loop: {line.splitlines()[0]}",
                           hint=LOOPS_HINT)


@task("e.expression", names=("expression",),
      title="one term as one NumPy expression (Fig. 7)", hint=EXPRESSION_HINT)
def check_expression(ns: Mapping[str, Any]) -> str:
    expression = ns["expression"]
    programs = _random_terms(53, 60, lets=False)
    for case in programs:
        code = expression(case.term)
        if not isinstance(code, str):
            raise Mismatch(f"expression returned a {type(code).__name__}, expected a str",
                           hint=EXPRESSION_HINT, program=case.text)
        shown = f"{case.text}\n          your expression: {code}"
        try:
            ast.parse(code, mode="eval")
        except SyntaxError as error:
            raise Mismatch(f"not a Python expression: {error.msg}", program=shown,
                           hint=_hint_for(case.text, case.term, EXPRESSION_HINT)) from None
        _no_loops(code, "your expression")
        params = {_ident(ns, name): value for name, value in case.env.items()}
        source = f"def _value({', '.join(params)}):\n    return {code}\n"
        scope = {**ns, **REFERENCE_RUNTIME}
        exec(compile(source, "<generated expression>", "exec"), scope)
        expect_close(case.value(), scope["_value"](**params),
                     what="the expression's value differs from dualarr's",
                     hint=_hint_for(case.text, case.term, EXPRESSION_HINT),
                     program=shown, inputs=case.env)
    return (f"{len(programs)} random build1-free programs, each as one expression, evaluate "
            "(on the reference runtime) to dualarr's values, element by element")


# --------------------------------------------------------------------------------------
# e.generate and e.compile_gradient
# --------------------------------------------------------------------------------------


def _generated(ns: Mapping[str, Any], program: GradientProgram, shown: str
               ) -> tuple[str, Callable[..., Any]]:
    """The learner's source for ``program``, checked for its form and exec'd on the
    reference runtime."""
    source = ns["generate"](program)
    if not isinstance(source, str):
        raise Mismatch(f"generate returned a {type(source).__name__}, expected a str",
                       hint=GENERATE_HINT, program=shown)
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise Mismatch(f"the generated source is not Python: {error.msg} (line "
                       f"{error.lineno}: {error.text!r})", hint=GENERATE_HINT,
                       program=shown) from None
    functions = [s for s in tree.body if isinstance(s, ast.FunctionDef)]
    params = [_ident(ns, n) for n in (*program.inputs, program.cotangent)]
    if len(functions) != 1 or functions[0].name != "gradient":
        raise Mismatch("the generated source must define one function, gradient",
                       hint=GENERATE_HINT, program=shown, obtained=source)
    got_params = [a.arg for a in functions[0].args.args]
    if got_params != params:
        raise Mismatch("the generated function's parameters", hint=GENERATE_HINT,
                       program=shown, expected=params, obtained=got_params)
    _no_loops(source, "the generated source")
    scope = {**ns, **REFERENCE_RUNTIME}
    exec(compile(source, "<generated gradient>", "exec"), scope)
    return source, scope["gradient"]


def _expect_result(result: Any, value: Array, gradients: list[Array], program: GradientProgram,
                   *, shown: str, env: Mapping[str, Array], hint: str) -> None:
    if not isinstance(result, tuple) or len(result) != 2:
        raise Mismatch("the gradient function must return (primal, (g1, ...))", hint=hint,
                       program=shown, obtained=result)
    primal, grads = result
    expect_close(value, primal, what="the primal differs from dualarr's", hint=hint,
                 program=shown, inputs=env)
    if not isinstance(grads, tuple) or len(grads) != len(gradients):
        raise Mismatch(f"the gradients: expected a tuple of {len(gradients)} (one per input)",
                       hint=hint, program=shown, obtained=grads)
    for name, want, got in zip(program.inputs, gradients, grads, strict=True):
        expect_close(want, got, what=f"the gradient for {name} differs from dualarr's",
                     hint=hint, program=shown, inputs=env)


def _run_all(ns: Mapping[str, Any], make: Callable[[GradientProgram, str], Callable[..., Any]],
             hint: str) -> tuple[int, int]:
    """Random programs as gradient programs, Fig. 18's, and stage d's: run through
    ``make`` (generate + exec on the reference runtime, or compile_gradient); the counts
    of programs and of stage d's gradient programs checked."""
    programs = _random_terms(54, 40, lets=True)
    for case in programs:
        program = _as_program(case)
        shown = _show_program(program, case.text)
        function = make(program, shown)
        env = dict(case.env)
        args = [env[n] for n in case.inputs]
        _expect_result(function(*args, case.cotangent()), case.value(),
                       [(k + 1.0) * env[n] for k, n in enumerate(case.inputs)], program,
                       shown=shown, env=env, hint=_hint_for(case.text, case.term, hint))
    for n in (1, 4, 7):
        program = fig18_program(n)
        x = np.random.default_rng(n).integers(-16, 17, size=n) / 8.0
        shown = _show_program(program, f"Fig. 18 at n = {n}")
        value, grad = _fig18_expected(x, 0.5)
        _expect_result(make(program, shown)(x, 0.5), value, [grad], program, shown=shown,
                       env={"x": x, "dt": np.asarray(0.5)}, hint=hint)
    from_d = 0
    for case, program in _gradient_cases(55, 40):
        shown = _show_program(program, case.text)
        ct = case.cotangent()
        vjp = case.vjp(ct)
        env = dict(case.env)
        _expect_result(make(program, shown)(*(env[n] for n in case.inputs), ct),
                       case.value(), [vjp[n] for n in case.inputs], program, shown=shown,
                       env=env, hint=_hint_for(case.text, case.term, hint))
        from_d += 1
    return len(programs) + 3 + from_d, from_d


def _show_program(p: GradientProgram, origin: str) -> str:
    lines = [origin, f"          λ {' '.join((*p.inputs, p.cotangent))}."]
    lines += [f"          let {name} = {show(t)} in" for name, t in p.bindings]
    grads = ", ".join(show(g) for g in p.gradients)
    lines.append(f"          ({show(p.primal)}, ({grads}))")
    return "\n".join(lines)


@task("e.generate", names=("generate",),
      title="a gradient program as the source of one Python function (§7.5)",
      hint=GENERATE_HINT)
def check_generate(ns: Mapping[str, Any]) -> str:
    count, from_d = _run_all(ns, lambda p, shown: _generated(ns, p, shown)[1], GENERATE_HINT)
    return (f"{count} generated functions (random programs with their lets as bindings, "
            f"Fig. 18's gradient{_d_note(from_d)}) have no Python loop and return dualarr's "
            "value and gradients on the reference runtime")


def _d_note(from_d: int) -> str:
    return f", {from_d} of stage d's against dualarr's vjp" if from_d else ""


@task("e.compile_gradient", names=("compile_gradient",),
      title="exec: a gradient program becomes a Python function", hint=COMPILE_HINT)
def check_compile_gradient(ns: Mapping[str, Any]) -> str:
    compile_gradient = ns["compile_gradient"]

    def make(program: GradientProgram, shown: str) -> Callable[..., Any]:
        function = compile_gradient(program)
        if not callable(function):
            raise Mismatch(f"compile_gradient returned a {type(function).__name__}, "
                           "expected a function", hint=COMPILE_HINT, program=shown)
        return function  # type: ignore[no-any-return]

    count, from_d = _run_all(ns, make, COMPILE_HINT)

    def fig18_gradient(n: int) -> Any:
        x = np.linspace(-1.0, 1.0, n)
        return compiled[n](x, 1.0)

    compiled = {n: compile_gradient(fig18_program(n)) for n in (8, 1024)}
    _constant_work(fig18_gradient, (8, 1024), "Fig. 18's compiled gradient")
    return (f"{count} gradient programs (random ones, Fig. 18's{_d_note(from_d)}) compiled "
            "by your code return dualarr's value and gradients on your runtime; Fig. 18's "
            "gradient runs the same Python lines at n = 8 and n = 1024")
