"""The differentiation API: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``.

Like JAX's, over the pipeline of the paper: the function is traced, vectorised by the bot
and simplified (cached per function and input types).  Then, by default
(``mode="compiled"``), differentiated at compile time (§7): the gradient program is
generated as Python once per (function, shapes, dtypes, backend) and run on every call.
``mode="interpret"`` selects the concrete dual-arrays path instead: D with NumPy primals
(§6) and the reverse pass of Fig. 17 over the Delta, on every call.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import optree

from .ad import delta as dl
from .ad.dual import Dual, DualAlgebra
from .ad.reverse import ReverseStats, forward, reverse_seeds
from .ad.share_to_let import LetProgram
from .codegen.buffers import SpareBuffer, copy_into_spare
from .codegen.generate import HELPERS, CompiledProgram, compile_program
from .interp.arrays import Backend
from .interp.backends import backend_of, get_backend, to_backend
from .interp.evaluate import Evaluator, Interpreter, algebra_for
from .interp.term_algebra import TermAlgebra
from .lang import primitives
from .lang.closure import ClosedProgram, close_program
from .lang.config import config
from .lang.errors import DtypeError, DualarrError, ShapeError, TracingError, UnsupportedError
from .lang.functions import transpose
from .lang.program import Program, ShapeSpec, fresh_results, input_type, trace
from .lang.tensor import Tensor, current_context, current_trace, ensure_tensor
from .lang.terms import (
    Build1,
    Const,
    FromIntegral,
    IdSupply,
    Term,
    TermBase,
    Var,
    free_vars,
    type_name,
)
from .lang.trampoline import collector_paused
from .pipeline import CompiledGradient, compile_gradient, gradient_stages, vectorise_program
from .vectorise.vmap import mapped_term

MODES = ("compiled", "interpret")
CACHE_SIZE = 128
"""How many compiled programs (of any kind) are kept, least recently used first out."""

_compiled: OrderedDict[Hashable, Any] = OrderedDict()


def _cached(key: Hashable, build: Callable[[], Any]) -> Any:
    """The compiled artefact stored under ``key`` (a program's structure, not the
    function's identity) and the ``fuse`` setting, built on a miss; at most
    :data:`CACHE_SIZE` are kept."""
    key = (key, config.fuse, config.fuse_min_size)
    hit = _compiled.get(key)
    if hit is not None:
        _compiled.move_to_end(key)
        return hit
    with collector_paused():
        value = build()
    _compiled[key] = value
    if len(_compiled) > CACHE_SIZE:
        _compiled.popitem(last=False)
    return value


def clear_caches() -> None:
    """Forget every vectorised and compiled program."""
    _compiled.clear()


def cache_size() -> int:
    """How many compiled programs are cached now (bounded by :data:`CACHE_SIZE`)."""
    return len(_compiled)


def _function_name(f: Callable[..., Any]) -> str:
    return str(getattr(f, "__name__", None) or type(f).__name__)


def _bound(f: Callable[..., Any], kwargs: dict[str, Any]) -> Callable[..., Any]:
    """``f`` with the keyword arguments given (they are not differentiated)."""
    if not kwargs:
        return f
    bound = functools.partial(f, **kwargs)
    functools.update_wrapper(bound, f)
    return bound


def _check_call(
    f: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], op: str
) -> None:
    """A :class:`DualarrError` when ``f`` cannot take these arguments."""
    try:
        signature = inspect.signature(f)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as error:
        raise DualarrError(
            f"{_function_name(f)}{signature} cannot be called with {len(args)} positional "
            f"argument{'s' if len(args) != 1 else ''}"
            + (f" and keywords {sorted(kwargs)}" if kwargs else "")
            + f": {error}",
            op=op,
        ) from None


def _trace_now(
    f: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], op: str
) -> Program:
    """``f`` traced on ``args``' types, reading everything else as it is now (the
    collector paused while the DAG grows, as in every pass that builds one)."""
    try:
        with collector_paused():
            return trace(_bound(f, kwargs), *args, captures=True)
    except TypeError:
        _check_call(f, args, kwargs, op)  # a named error when f cannot take the arguments
        raise


def _closed(
    f: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    op: str,
    *,
    has_aux: bool = False,
    lift_constants: bool = True,
) -> tuple[ClosedProgram, Any]:
    """``f`` traced now and closed over what it reads (:mod:`dualarr.lang.closure`); with
    ``has_aux`` the program's outputs are the output then the auxiliary leaves, and the
    second result is the auxiliary data's tree structure."""
    if not has_aux:
        return close_program(_trace_now(f, args, kwargs, op), lift_constants=lift_constants), None
    structure: list[Any] = []

    def split(*xs: Any) -> tuple[Any, ...]:
        result = f(*xs, **kwargs)
        if not isinstance(result, tuple | list) or len(result) != 2:
            raise DualarrError(
                f"has_aux=True needs {_function_name(f)} to return a pair (output, aux), got "
                f"{type(result).__name__}",
                op=op,
            )
        out, aux = result
        leaves, tree = optree.tree_flatten(aux)
        structure.append(tree)
        return (out, *leaves)

    functools.update_wrapper(split, f)
    try:
        program = trace(split, *args, captures=True)
    except TypeError:
        _check_call(f, args, kwargs, op)
        raise
    return close_program(program, lift_constants=lift_constants), structure[0]


def _with_outputs(program: Program, outputs: Sequence[Term]) -> Program:
    return Program(program.name, program.inputs, tuple(outputs), len(outputs) != 1, program.supply)


def _vectorised(closed: ClosedProgram) -> Program:
    """The closed program after the bot and the simplifier, cached by structure."""
    return _cached(("vectorised", closed.key), lambda: vectorise_program(closed.program)[0])  # type: ignore[no-any-return]


def _gradient(
    closed: ClosedProgram,
    positions: Sequence[int],
    *,
    unit_cotangent: bool = False,
    value: bool = True,
    backend: str = "numpy",
) -> CompiledGradient:
    """The compiled gradient program of the closed program's first output, with respect
    to the arguments at ``positions``, cached by structure."""
    key = ("gradient", closed.key, tuple(positions), unit_cotangent, value, backend)

    def build() -> CompiledGradient:
        vectorised = _vectorised(closed)
        return compile_gradient(
            _with_outputs(vectorised, vectorised.outputs[:1]),
            positions,
            unit_cotangent=unit_cotangent,
            value=value,
        )

    return _cached(key, build)  # type: ignore[no-any-return]


def _forward(closed: ClosedProgram, first: int = 0) -> CompiledProgram:
    """The closed program's outputs from ``first`` on, compiled (codegen), cached."""

    def build() -> CompiledProgram:
        vectorised = _vectorised(closed)
        return compile_program(vectorised.inputs, vectorised.outputs[first:], "forward")

    return _cached(("forward", closed.key, first), build)  # type: ignore[no-any-return]


def _inputs(closed: ClosedProgram, args: Sequence[Any], run_on: Backend) -> list[Any]:
    """The arguments and the captured arrays, checked and converted to the program's
    input types, on ``run_on``."""
    env = closed.traced.bind(*args)
    captured = [to_backend(run_on, c) if run_on.name != "numpy" else c for c in closed.captured]
    return [*(env[v] for v in closed.traced.inputs), *captured]


def evaluate_now(
    f: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any], op: str
) -> Any:
    """``f`` on arrays by its bulk program: traced now (call-time values), vectorised
    once per structure, run by the reference evaluator; results alias no input.  ``f``
    may return a tree (tuples, lists, dicts) of arrays."""
    trees: list[Any] = []

    def flat(*xs: Any) -> tuple[Any, ...]:
        leaves, tree = optree.tree_flatten(f(*xs, **kwargs))
        trees.append(tree)
        return tuple(leaves)

    functools.update_wrapper(flat, f)
    closed, _ = _closed(flat, args, {}, op)
    program = _vectorised(closed)
    inputs = _inputs(closed, args, backend_of(args))
    env = dict(zip(program.inputs, inputs, strict=True))
    values = fresh_results(Evaluator().run(list(program.outputs), env), inputs)
    return optree.tree_unflatten(trees[-1], values)


def vectorised_program(
    f: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None = None
) -> Program:
    """``f`` traced now on ``args``' types (what it captured baked in as constants),
    vectorised and simplified; reused by the traced term's structure."""
    closed, _ = _closed(f, args, kwargs or {}, "trace", lift_constants=False)
    if closed.captured:
        raise TracingError(
            f"{_function_name(f)} reads a traced value of an enclosing trace; use da.grad "
            "or da.vjp inside the traced function",
            op="trace",
        )
    return _vectorised(closed)


def compiled_gradient(
    f: Callable[..., Any],
    args: Sequence[Any],
    positions: Sequence[int] | None = None,
    *,
    unit_cotangent: bool = False,
    backend: str = "numpy",
    value: bool = True,
) -> CompiledGradient:
    """The compiled gradient program of ``f`` traced now on ``args``' types (its captured
    values baked in), with respect to ``positions`` (default: every float input);
    ``unit_cotangent`` specialises it to the cotangent 1 of ``grad``.  Reused by the
    traced term's structure (captured values are part of it here)."""
    closed, _ = _closed(f, args, {}, "grad", lift_constants=False)
    if closed.captured:
        raise TracingError(
            f"{_function_name(f)} reads a traced value of an enclosing trace", op="grad"
        )
    chosen = (
        tuple(k for k, v in enumerate(closed.traced.inputs) if v.dtype.is_float)
        if positions is None
        else tuple(positions)
    )
    return _gradient(closed, chosen, unit_cotangent=unit_cotangent, value=value, backend=backend)


@dataclass
class DualRun:
    """The dual-arrays forward pass of one program on concrete inputs."""

    program: Program
    values: list[Any]
    deltas: list[dl.Delta]
    algebra: DualAlgebra
    differentiated: tuple[int, ...]
    backend: Backend


def dual_run(
    program: Program,
    args: Sequence[Any],
    positions: Sequence[int],
    backend: Backend | None = None,
) -> DualRun:
    """Run D (Figs. 12–15) with concrete primals on ``backend`` (default: the arrays'
    own); argument ``k`` in ``positions`` gets ``Input k`` as its Delta."""
    env_values = program.bind(*args)
    backend = backend if backend is not None else backend_of(list(env_values.values()))
    alg = DualAlgebra(algebra_for(backend), IdSupply())
    env: dict[Var, Any] = {}
    for k, var in enumerate(program.inputs):
        value = env_values[var]
        if k in positions:
            env[var] = Dual(value, dl.Input(k, var.shape, var.dtype))
        elif var.dtype.is_float:
            env[var] = Dual(value, dl.Zero(var.shape, var.dtype))
        else:
            env[var] = value
    with collector_paused():
        outputs = Interpreter(alg).run(list(program.outputs), env)
    values, deltas = [], []
    for term, out in zip(program.outputs, outputs, strict=True):
        primal = alg.prim(out)
        values.append(np.asarray(primal) if backend.name == "numpy" else backend.xp.asarray(primal))
        deltas.append(out.delta if isinstance(out, Dual) else dl.Zero(term.shape, term.dtype))
    return DualRun(program, values, deltas, alg, tuple(positions), backend)


def _check_mode(mode: str, op: str) -> None:
    if mode not in MODES:
        raise DualarrError(f"unknown mode {mode!r}; available: {', '.join(MODES)}", op=op)


def _check_argnums(argnums: Any, op: str) -> None:
    """``argnums`` is an int or a non-empty tuple/list of ints (as in JAX)."""
    ok = isinstance(argnums, int | np.integer) and not isinstance(argnums, bool)
    if isinstance(argnums, tuple | list):
        ok = bool(argnums) and all(
            isinstance(a, int | np.integer) and not isinstance(a, bool) for a in argnums
        )
    if not ok:
        raise DualarrError(
            f"argnums must be an int or a non-empty tuple of ints, got {argnums!r}", op=op
        )


def _positions(argnums: int | Sequence[int], count: int, op: str) -> tuple[int, ...]:
    raw = (argnums,) if isinstance(argnums, int | np.integer) else tuple(argnums)
    positions = []
    for a in raw:
        if not -count <= a < count:
            raise DualarrError(
                f"argnums {a} is out of range for a call with {count} positional arguments",
                op=op,
            )
        positions.append(int(a) % count)
    return tuple(positions)


def _check_differentiable(
    program: Program, positions: Sequence[int], op: str, args: Sequence[Any] = ()
) -> None:
    """Every differentiated argument is a float array; the error names the dtype the
    user passed (``args``), not the traced one."""
    for k in positions:
        var = program.inputs[k]
        if not var.dtype.is_float:
            given = getattr(args[k], "dtype", None) if k < len(args) else None
            shown = str(given) if given is not None else type_name(var.shape, var.dtype)
            if k < len(args) and given is None:
                shown = type(args[k]).__name__
            raise DtypeError(
                f"argument {k} ({var.hint}: {shown}, shape {list(var.shape)}) is not a float "
                "array; differentiate with respect to float inputs only",
                op=op,
                shapes=[var.shape],
            )


def _result(array: Any, like: Term, backend: Backend | None = None) -> Any:
    """A fresh array of ``like``'s type (a gradient never aliases anything)."""
    if backend is None or backend.name == "numpy":
        return np.array(np.broadcast_to(array, like.shape), dtype=like.dtype.numpy())
    xp = backend.xp
    array = xp.broadcast_to(xp.asarray(array, dtype=backend.dtype(like.dtype)), like.shape)
    return xp.asarray(array, copy=True)


def _unaliased(value: Any, inputs: Sequence[Any]) -> Any:
    """``value`` (an array, or a tree of them: the results of one call) with no array
    sharing memory with ``inputs`` or with another array of ``value``; copies where
    needed (DESIGN §3)."""
    leaves, tree = optree.tree_flatten(value)
    return optree.tree_unflatten(tree, fresh_results(leaves, inputs))


def _home(home: Backend, value: Any) -> Any:
    """Results back on the input arrays' backend (a tuple stays a tuple)."""
    if isinstance(value, tuple):
        return tuple(_home(home, v) for v in value)
    if home.name == "numpy" and not isinstance(value, np.ndarray | np.generic):
        return to_backend(home, value)
    return value


def _dtype(xp: Any, term: Term) -> Any:
    return getattr(xp, term.dtype.value)


def _select(
    by_position: dict[int, Any], positions: Sequence[int], argnums: int | Sequence[int]
) -> Any:
    results = tuple(by_position[k] for k in positions)
    return results[0] if isinstance(argnums, int | np.integer) else results


def _concrete_gradients(
    run: DualRun, seeds: Sequence[tuple[dl.Delta, Any]], stats: ReverseStats | None = None
) -> dict[int, Any]:
    with np.errstate(all="ignore"), collector_paused():
        return reverse_seeds(algebra_for(run.backend), seeds, stats)


def _traced(args: Sequence[Any]) -> bool:
    return any(isinstance(a, Tensor) for a in args)


def _as_outer(args: Sequence[Any], op: str) -> list[Tensor]:
    """The arguments as values of the running trace (constants for arrays)."""
    return [ensure_tensor(a, op) for a in args]


def _aux_values(closed: ClosedProgram, tree: Any, inputs: Sequence[Any], run_on: Backend) -> Any:
    """The auxiliary data of ``has_aux``: the outputs after the first, by the compiled
    forward program, in ``tree``'s structure."""
    leaves = _forward(closed, 1)(*inputs, backend=run_on) if len(closed.traced.outputs) > 1 else ()
    return optree.tree_unflatten(tree, fresh_results(leaves, inputs))


def value_and_grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    mode: str = "compiled",
    backend: str | None = None,
) -> Callable[..., Any]:
    """``f``'s value and gradient with respect to ``argnums`` (``f`` returns a rank-0
    float); a tuple of gradients when ``argnums`` is a tuple.  As ``jax.value_and_grad``:
    keyword arguments pass through to ``f`` undifferentiated, and with ``has_aux``
    ``f`` returns ``(output, aux)`` and the result is ``((value, aux), grad)``.

    Every call computes with the values ``f`` reads at call time: ``f`` is traced on
    each call and its captured arrays become inputs of the program
    (:mod:`dualarr.lang.closure`), which is compiled once per structure.
    ``mode="compiled"`` runs the generated gradient program, ``mode="interpret"`` the
    concrete reverse pass.  ``backend`` ("numpy", "cupy", "dask") runs on that backend; by
    default the arrays' own.  Results come back on the backend of the input arrays."""
    return _value_and_grad(f, argnums, mode, backend, with_value=True, has_aux=has_aux)


def _value_and_grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int],
    mode: str,
    backend: str | None,
    *,
    with_value: bool,
    has_aux: bool,
) -> Callable[..., Any]:
    """``value_and_grad``; without ``with_value`` (for ``grad``) the compiled program
    skips the primal value (its first result is then 0)."""
    op = "value_and_grad" if with_value else "grad"
    _check_mode(mode, op)
    _check_argnums(argnums, op)
    if backend is not None:
        get_backend(backend)  # a clear error now for an unknown or unavailable backend
    unit = np.ones((), dtype=np.float64)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        positions = _positions(argnums, len(args), op) if args else _no_arguments(op)
        if _traced(args):  # inside a trace: vmap(grad(f)), grad(grad(f)), …
            closed, tree = _closed(
                f, _specs(args, op), kwargs, op, has_aux=has_aux, lift_constants=False
            )
            return _traced_value_and_grad(closed, tree, _as_outer(args, op), positions, argnums, op)
        home, run_on = backend_of(args), get_backend(backend, args)
        if run_on is not home:  # an explicit transfer, requested by ``backend=``
            args = tuple(to_backend(run_on, a) for a in args)
        closed, tree = _closed(f, args, kwargs, op, has_aux=has_aux)
        if closed.outer_terms:  # f reads values of an enclosing trace: build terms there
            closed, tree = _closed(f, args, kwargs, op, has_aux=has_aux, lift_constants=False)
            return _traced_value_and_grad(closed, tree, _as_outer(args, op), positions, argnums, op)
        out = _check_gradient_program(closed.traced, positions, op, has_aux=has_aux, args=args)
        inputs = _inputs(closed, args, run_on)
        aux = _aux_values(closed, tree, inputs, run_on) if has_aux else None
        if mode == "compiled":
            compiled = _gradient(
                closed,
                sorted(set(positions)),
                unit_cotangent=True,
                value=with_value,
                backend=run_on.name,
            )
            if run_on.name == "numpy" and out.dtype.numpy() == unit.dtype:
                value_array, all_grads = compiled.run(inputs, unit)
            else:
                value_array, all_grads = compiled(*inputs, backend=run_on)
            by_position = dict(zip(compiled.positions, all_grads, strict=True))
            value, chosen = value_array[()], _select(by_position, positions, argnums)
        else:
            run = dual_run(_vectorised(closed), inputs, positions, run_on)
            seed = algebra_for(run_on).full((), 1.0, out.dtype)
            grads = _concrete_gradients(run, [(run.deltas[0], seed)])
            results = tuple(
                _result(grads.get(k, 0.0), closed.traced.inputs[k], run_on) for k in positions
            )
            value = run.values[0][()]
            chosen = results[0] if isinstance(argnums, int | np.integer) else results
        value, aux, chosen = _unaliased((value, aux, chosen), inputs)
        value, chosen = _home(home, value), _home(home, chosen)
        return ((value, aux), chosen) if has_aux else (value, chosen)

    wrapped.__name__ = f"{op}({_function_name(f)})"
    return wrapped


def _no_arguments(op: str) -> tuple[int, ...]:
    raise DualarrError(
        "called with no positional arguments; pass the arrays to differentiate", op=op
    )


def _specs(args: Sequence[Any], op: str) -> list[ShapeSpec]:
    """Shape specs of arguments given to a transformation inside a trace."""
    terms = [ensure_tensor(a, op).term for a in args]
    return [ShapeSpec(t.shape, t.dtype.numpy()) for t in terms]


def _check_gradient_program(
    program: Program,
    positions: Sequence[int],
    op: str = "grad",
    *,
    has_aux: bool = False,
    args: Sequence[Any] = (),
) -> Term:
    """The one rank-0 float output of a program given to ``grad`` (the first, with
    ``has_aux``), or a clear error."""
    _check_differentiable(program, positions, op, args)
    if program.outputs[0].shape != () or (program.tuple_output and not has_aux):
        shapes = [type_name(t.shape, t.dtype) for t in program.outputs]
        raise ShapeError(
            f"{op} needs a function returning one rank-0 float, got {', '.join(shapes)}; "
            "use da.vjp or da.jacobian for other outputs",
            op=op,
            shapes=[t.shape for t in program.outputs],
        )
    out = program.outputs[0]
    if not out.dtype.is_float:
        raise DtypeError(f"{op} needs a float output, got {out.dtype}", op=op)
    return out


def _traced_value(program: Program, terms: Sequence[Term], op: str) -> list[Term]:
    """``program``'s outputs on ``terms``, as terms of the enclosing trace."""
    interpreter = Interpreter(TermAlgebra(current_context(op).supply))
    return interpreter.run(program.outputs, dict(zip(program.inputs, terms, strict=True)))


def _outer_terms(closed: ClosedProgram, args: Sequence[Tensor]) -> list[Term]:
    """The terms of the enclosing trace for every input of ``closed``: the arguments,
    then what the program captured (variables of the enclosing trace, constants)."""
    captured = [c if isinstance(c, TermBase) else Const(c) for c in closed.captured]
    return [*(a.term for a in args), *captured]  # type: ignore[list-item]


def _instantiate(
    gradient: LetProgram, terms: Sequence[Term], cotangent: Term, op: str
) -> list[Term]:
    """The let-program ``gradient`` (Fig. 21) on ``terms`` and ``cotangent`` as terms
    of the enclosing trace (``(value, *gradients)``)."""
    *inputs, dt = gradient.inputs
    env: dict[Var, Term] = dict(zip(inputs, terms, strict=True))
    env[dt] = cotangent
    interpreter = Interpreter(TermAlgebra(current_context(op).supply))
    return interpreter.run(list(gradient.outputs), env, gradient.bindings)


def _traced_value_and_grad(
    closed: ClosedProgram,
    tree: Any,
    args: Sequence[Tensor],
    positions: Sequence[int],
    argnums: int | Sequence[int],
    op: str,
) -> Any:
    """``value_and_grad`` on traced arguments (inside ``da.trace``, ``da.vmap``, another
    ``da.grad``): the gradient program of §7 (Fig. 21), built for the arguments' types,
    is instantiated as terms of the enclosing trace, so the bot then vectorises it like
    any other code (``vmap(grad(f))`` gives per-example gradients in bulk).  Values of
    the enclosing trace that ``f`` reads are inputs of the program, not differentiated
    here: the enclosing transformation differentiates through them (no perturbation
    confusion)."""
    vectorised, _ = vectorise_program(closed.program)
    _check_gradient_program(vectorised, positions, op, has_aux=tree is not None)
    terms = _outer_terms(closed, args)
    first = _with_outputs(vectorised, vectorised.outputs[:1])
    gradient = gradient_stages(first, sorted(set(positions)), unit_cotangent=True).gradient
    dt = gradient.inputs[-1]
    one = Const(np.ones((), dtype=dt.dtype.numpy()))
    value, *grads = _instantiate(gradient, terms, one, op)
    by_position = dict(zip(gradient.positions, (Tensor(g) for g in grads), strict=True))
    chosen = _select(by_position, positions, argnums)
    if tree is None:
        return Tensor(value), chosen
    aux_terms = (
        _traced_value(_with_outputs(vectorised, vectorised.outputs[1:]), terms, op)
        if len(vectorised.outputs) > 1
        else []
    )
    aux = optree.tree_unflatten(tree, [Tensor(t) for t in aux_terms])
    return (Tensor(value), aux), chosen


def _traced_vjp(
    closed: ClosedProgram, args: Sequence[Tensor]
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    """``vjp`` on traced arguments: the value, and a pullback that instantiates the
    gradient program of §7 with its cotangent (itself a traced value or an array), so
    ``vmap`` of a pullback, or ``jacobian`` inside a trace, are bulk programs too."""
    program, _ = vectorise_program(closed.program)
    out = program.outputs[0]
    if program.tuple_output or not out.dtype.is_float:
        raise UnsupportedError(
            "vjp of traced values needs a function with one float output", op="vjp"
        )
    terms = _outer_terms(closed, args)
    positions = tuple(k for k in range(closed.arity) if program.inputs[k].dtype.is_float)
    gradient = gradient_stages(program, positions).gradient if positions else None
    (value,) = _traced_value(program, terms, "vjp")

    def pullback(*cotangents: Any) -> tuple[Any, ...]:
        if len(cotangents) != 1:
            raise DualarrError(f"expected 1 cotangent, got {len(cotangents)}", op="vjp")
        ct = ensure_tensor(cotangents[0], "vjp").term
        if ct.shape != out.shape:
            raise ShapeError(
                f"cotangent of type {type_name(ct.shape, ct.dtype)} for an output of type "
                f"{type_name(out.shape, out.dtype)}",
                op="vjp",
                shapes=[ct.shape, out.shape],
            )
        if gradient is None:
            return tuple(None for _ in args)
        if not ct.dtype.is_float:
            ct = FromIntegral(ct, out.dtype)
        if ct.dtype is not out.dtype:
            raise DtypeError(f"cotangent of {ct.dtype} for an output of {out.dtype}", op="vjp")
        _, *grads = _instantiate(gradient, terms, ct, "vjp")
        by_position = dict(zip(gradient.positions, grads, strict=True))
        return tuple(Tensor(by_position[k]) if k in by_position else None for k in range(len(args)))

    return Tensor(value), pullback


def _traced_jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """``jvp`` on traced values, by transposing the pullback (it is linear in its
    cotangent): ``J v`` is the gradient in ``ct`` of ``<pullback(ct), v>``, so two
    reverse passes, both built as terms of the enclosing trace."""
    from .lang.functions import sum as total

    closed, _ = _closed(f, _specs(primals, "jvp"), {}, "jvp", lift_constants=False)
    primal_tensors = _as_outer(primals, "jvp")
    value, _ = _traced_vjp(closed, primal_tensors)
    out = value.term
    n = len(primals)

    def pairing(ct: Any, *rest: Any) -> Any:
        xs, vs = rest[:n], rest[n:]
        cotangents = vjp(f, *xs)[1](ct)
        terms = [total(c * v) for c, v in zip(cotangents, vs, strict=True) if c is not None]
        result = terms[0] if terms else total(ct) * 0.0
        for term in terms[1:]:
            result = result + term
        return result

    zero = Const(np.zeros(out.shape, dtype=out.dtype.numpy()))
    tangent = grad(pairing)(Tensor(zero), *primal_tensors, *tangents)
    return value, tangent


def _traced_jacobian(
    closed: ClosedProgram,
    args: Sequence[Tensor],
    positions: Sequence[int],
    argnums: int | Sequence[int],
) -> Any:
    """``jacobian`` on traced arguments: the pullback mapped (``vmap``, so in bulk) over
    the one-hot cotangents, one row per output element."""
    from .lang.functions import constant, reshape

    value, pullback = _traced_vjp(closed, args)
    out = value.term
    size = math.prod(out.shape)
    basis = constant(np.eye(size, dtype=out.dtype.numpy()).reshape((size, *out.shape)))
    results = []
    for k in positions:
        arg = args[k].term
        if not arg.dtype.is_float:
            raise DtypeError(f"jacobian of input {k}: not a float input", op="jacobian")
        shape = (*out.shape, *arg.shape)
        rows = vmap(lambda c, k=k: pullback(c)[k])(basis)
        results.append(reshape(rows, shape))
    return results[0] if isinstance(argnums, int | np.integer) else tuple(results)


def grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    mode: str = "compiled",
    backend: str | None = None,
) -> Callable[..., Any]:
    """The gradient of ``f`` (rank-0 float output) with respect to ``argnums``, like
    ``jax.grad`` (keywords, ``has_aux``, ``mode`` and ``backend`` as for
    :func:`value_and_grad`; with ``has_aux`` the result is ``(grad, aux)``).  Every call
    sees the values ``f`` reads at call time.  It also works on traced values, so
    ``da.vmap(da.grad(f))`` gives per-example gradients and ``da.grad`` of a function
    that calls ``da.grad`` gives second derivatives (the inner function may close over
    the outer one's variables)."""
    inner = _value_and_grad(f, argnums, mode, backend, with_value=False, has_aux=has_aux)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = inner(*args, **kwargs)
        if has_aux:
            (_, aux), gradient = result
            return gradient, aux
        return result[1]

    wrapped.__name__ = f"grad({_function_name(f)})"
    return wrapped


def vjp(f: Callable[..., Any], *args: Any, has_aux: bool = False, mode: str = "compiled") -> Any:
    """``(f(*args), pullback)``; ``pullback(cotangent)`` gives one cotangent per argument
    (``None`` for integer and bool arguments); with ``has_aux`` (``f`` returns
    ``(output, aux)``), ``(output, pullback, aux)`` as in JAX.  A function with one
    float output uses the compiled gradient program (``mode="compiled"``); tuple
    outputs and ``mode="interpret"`` use the concrete reverse pass.  On traced values
    (inside ``da.vmap``, ``da.trace``, …) the pullback builds the gradient program as
    terms.  The values ``f`` reads are those at the time of the ``vjp`` call."""
    _check_mode(mode, "vjp")
    if _traced(args):
        closed, tree = _closed(
            f, _specs(args, "vjp"), {}, "vjp", has_aux=has_aux, lift_constants=False
        )
        if tree is not None:
            raise UnsupportedError("vjp with has_aux=True on traced values", op="vjp")
        return _traced_vjp(closed, _as_outer(args, "vjp"))
    if not args:
        _no_arguments("vjp")
    backend = backend_of(args)
    closed, tree = _closed(f, args, {}, "vjp", has_aux=has_aux)
    if closed.outer_terms:
        closed, _ = _closed(f, args, {}, "vjp", lift_constants=False)
        return _traced_vjp(closed, _as_outer(args, "vjp"))
    inputs = _inputs(closed, args, backend)
    aux = _aux_values(closed, tree, inputs, backend) if has_aux else None
    vectorised = _vectorised(closed)
    if has_aux:
        vectorised = _with_outputs(vectorised, vectorised.outputs[:1])
    outputs = vectorised.outputs
    positions = tuple(k for k in range(closed.arity) if vectorised.inputs[k].dtype.is_float)
    single = not vectorised.tuple_output and outputs[0].dtype.is_float
    if mode == "compiled" and single:
        value, pullback = _compiled_vjp(closed, inputs, positions, backend)
    else:
        value, pullback = _concrete_vjp(vectorised, closed.arity, inputs, positions, backend)
    if has_aux:
        value, aux = _unaliased((value, aux), inputs)
        return value, pullback, aux
    return value, pullback


def _concrete_vjp(
    program: Program,
    arity: int,
    inputs: Sequence[Any],
    positions: Sequence[int],
    backend: Backend,
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    run = dual_run(program, inputs, positions, backend)
    values = _unaliased(tuple(run.values), inputs)
    value = values if program.tuple_output else values[0]

    def pullback(*cotangents: Any) -> tuple[Any, ...]:
        cts = cotangents[0] if len(cotangents) == 1 else cotangents
        items = list(cts) if program.tuple_output else [cts]
        if len(items) != len(program.outputs):
            raise DualarrError(
                f"expected {len(program.outputs)} cotangents, got {len(items)}", op="vjp"
            )
        seeds = []
        for term, delta, ct in zip(program.outputs, run.deltas, items, strict=True):
            seeds.append((delta, _cotangent(backend, ct, term, "vjp")))
        grads = _concrete_gradients(run, seeds)
        return tuple(
            _result(grads.get(k, 0.0), program.inputs[k], backend) if k in positions else None
            for k in range(arity)
        )

    return value, pullback


def _cotangent(backend: Backend, value: Any, term: Term, op: str) -> Any:
    """A cotangent (or tangent) for ``term``'s type, as an array of ``backend``."""
    what = "tangent" if op == "jvp" else "cotangent"
    if isinstance(value, Tensor):
        raise TracingError(f"a traced {what} given outside a trace", op=op)
    dtype = getattr(value, "dtype", None)
    kind = np.dtype(str(dtype).rsplit(".", 1)[-1]).kind if dtype is not None else None
    if kind == "c" or isinstance(value, complex) or (kind is None and np.iscomplexobj(value)):
        raise DtypeError(
            f"a complex {what} ({dtype or type(value).__name__}) for "
            f"{'an argument' if op == 'jvp' else 'an output'} of type "
            f"{type_name(term.shape, term.dtype)}: dualarr differentiates real arrays only",
            op=op,
        )
    if backend.name == "numpy":
        array = np.asarray(value, dtype=term.dtype.numpy() if term.dtype.is_float else None)
    else:
        array = backend.xp.asarray(value, dtype=backend.dtype(term.dtype))
    if tuple(array.shape) != term.shape:
        raise ShapeError(
            f"{what} of shape {list(array.shape)} for "
            f"{'an argument' if op == 'jvp' else 'an output'} of type "
            f"{type_name(term.shape, term.dtype)}",
            op=op,
            shapes=[tuple(array.shape), term.shape],
        )
    return array


def _compiled_vjp(
    closed: ClosedProgram,
    inputs: Sequence[Any],
    positions: Sequence[int],
    backend: Backend,
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    compiled = _gradient(closed, positions, backend=backend.name)
    term = compiled.program.outputs[0]
    (value,) = _forward(closed)(*inputs, backend=backend)[:1]
    value = _unaliased(value, inputs)

    def pullback(*cotangents: Any) -> tuple[Any, ...]:
        if len(cotangents) != 1:
            raise DualarrError(f"expected 1 cotangent, got {len(cotangents)}", op="vjp")
        array = _cotangent(backend, cotangents[0], term, "vjp")
        _, grads = compiled(*inputs, cotangent=array, backend=backend)
        grads = _unaliased(tuple(grads), [*inputs, array])
        by_position = dict(zip(compiled.positions, grads, strict=True))
        return tuple(by_position[k] if k in positions else None for k in range(closed.arity))

    return value, pullback


def jvp(f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``(f(*primals), tangent of f's output)`` along ``tangents`` (forward evaluation of
    the Delta, "evalFwd"); ``primals`` and ``tangents`` are tuples (or lists) of equal
    length, as in JAX.  ``f`` reads its captured values at call time."""
    for what, given in (("primals", primals), ("tangents", tangents)):
        if not isinstance(given, tuple | list):
            raise DualarrError(
                f"{what} must be a tuple (or list) of arguments, got {type(given).__name__}: "
                f"write da.jvp(f, (x,), (v,))",
                op="jvp",
            )
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DualarrError(f"{len(primals)} primals but {len(tangents)} tangents", op="jvp")
    if _traced((*primals, *tangents)):  # inside a trace
        return _traced_jvp(f, primals, tangents)
    if not primals:
        _no_arguments("jvp")
    backend = backend_of(primals)
    closed, _ = _closed(f, primals, {}, "jvp")
    if closed.outer_terms:
        return _traced_jvp(f, _as_outer(primals, "jvp"), _as_outer(tangents, "jvp"))
    program = _vectorised(closed)
    inputs = _inputs(closed, primals, backend)
    positions = tuple(k for k in range(closed.arity) if program.inputs[k].dtype.is_float)
    run = dual_run(program, inputs, positions, backend)
    seeds: dict[int, Any] = {
        k: _cotangent(backend, tangents[k], program.inputs[k], "jvp") for k in positions
    }
    alg = algebra_for(backend)
    with np.errstate(all="ignore"):
        outs = [
            _result(forward(alg, d, seeds) if term.dtype.is_float else 0.0, term, backend)
            for d, term in zip(run.deltas, program.outputs, strict=True)
        ]
    values, outs = _unaliased((tuple(run.values), outs), inputs)
    if program.tuple_output:
        return values, tuple(outs)
    return values[0], outs[0]


def jacobian(
    f: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    has_aux: bool = False,
    mode: str = "compiled",
) -> Callable[..., Any]:
    """The Jacobian, shape ``output.shape + input.shape``: one reverse pass per output
    element over one forward pass (paper App. A); on traced values, the pullback mapped
    over the one-hot cotangents (in bulk, by the bot).  Keywords pass through to ``f``;
    with ``has_aux`` the result is ``(jacobian, aux)``."""
    _check_mode(mode, "jacobian")
    _check_argnums(argnums, "jacobian")

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        positions = (
            _positions(argnums, len(args), "jacobian") if args else _no_arguments("jacobian")
        )
        if _traced(args):  # inside a trace
            if has_aux:
                raise UnsupportedError("jacobian with has_aux=True on traced values", op="jacobian")
            closed, _ = _closed(
                f, _specs(args, "jacobian"), kwargs, "jacobian", lift_constants=False
            )
            return _traced_jacobian(closed, _as_outer(args, "jacobian"), positions, argnums)
        closed, tree = _closed(f, args, kwargs, "jacobian", has_aux=has_aux)
        if closed.outer_terms and not has_aux:
            closed, _ = _closed(f, args, kwargs, "jacobian", lift_constants=False)
            return _traced_jacobian(closed, _as_outer(args, "jacobian"), positions, argnums)
        program = _vectorised(closed)
        _check_differentiable(program, positions, "jacobian", args)
        if len(program.outputs) > 1 and not has_aux:
            raise DualarrError("jacobian needs a function with one output", op="jacobian")
        out = program.outputs[0]
        if not out.dtype.is_float:
            raise DtypeError(f"jacobian needs a float output, got {out.dtype}", op="jacobian")
        backend = backend_of(args)
        inputs = _inputs(closed, args, backend)
        aux = _aux_values(closed, tree, inputs, backend) if has_aux else None
        xp = np if backend.name == "numpy" else backend.xp
        size = math.prod(out.shape)
        rows: dict[int, list[Any]] = {k: [] for k in positions}
        first = _with_outputs(program, program.outputs[:1])
        run = dual_run(first, inputs, positions, backend) if mode == "interpret" else None
        compiled = (
            _gradient(closed, sorted(set(positions)), backend=backend.name)
            if mode == "compiled"
            else None
        )
        slots = xp.arange(size)
        for element in range(size):  # one-hot cotangents, built on the arrays' backend
            seed = xp.reshape(xp.astype(slots == element, _dtype(xp, out)), out.shape)
            if compiled is not None:
                _, all_grads = compiled(*inputs, cotangent=seed, backend=backend)
                grads = dict(zip(compiled.positions, all_grads, strict=True))
            else:
                assert run is not None
                grads = _concrete_gradients(run, [(run.deltas[0], seed)])
            for k in positions:
                rows[k].append(_result(grads.get(k, 0.0), program.inputs[k], backend))
        results = tuple(
            xp.reshape(xp.stack(rows[k]), out.shape + program.inputs[k].shape)
            if rows[k]
            else xp.zeros(out.shape + program.inputs[k].shape, dtype=_dtype(xp, out))
            for k in positions
        )
        result = results[0] if isinstance(argnums, int | np.integer) else results
        return _unaliased((result, aux), inputs) if has_aux else result

    wrapped.__name__ = f"jacobian({_function_name(f)})"
    return wrapped


def vmap(
    f: Callable[..., Any],
    in_axes: int | Sequence[int | None] | None = 0,
    out_axes: Any = 0,
) -> Callable[..., Any]:
    """Map ``f`` over axis ``in_axes`` of its arguments (None: not mapped), like
    ``jax.vmap``; ``f`` may return a tree of arrays, and keyword arguments pass through
    to it unmapped.  Inside a trace it builds ``build1 n (λi. f(xs[i]))`` (so vmaps
    nest, and the enclosing pipeline's bot vectorises them); called on arrays it reads
    what ``f`` captured at call time, and runs the bulk program the bot makes of it
    (vectorised once per structure), which has no loop over the mapped dimension.

    ``out_axes`` places the mapped axis in each result, as ``jax.vmap``'s: an int (a
    ``tr`` of the ``build1``, negative counting from the end of the result), None for a
    result that does not depend on the mapped arguments (it is returned once, not
    stacked; a result that does is a :class:`ShapeError`, as in JAX), or a tree prefix
    of ``f``'s result (a tuple, list or dict of those, broadcast over the subtrees)."""
    _check_out_axes(out_axes)
    mapped = mapped_term(f, in_axes)

    def placed(*args: Any, **kwargs: Any) -> Any:
        result = mapped(*args, **kwargs)
        return result if out_axes == 0 and type(out_axes) is int else _place(result, out_axes)

    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if current_trace() is not None:
            return placed(*args, **kwargs)
        return evaluate_now(placed, args, kwargs, "vmap")

    vmapped.__name__ = f"vmap({_function_name(f)})"
    return vmapped


def _out_axis(value: Any) -> bool:
    return value is None or (isinstance(value, int | np.integer) and not isinstance(value, bool))


def _check_out_axes(out_axes: Any) -> None:
    """``out_axes`` is an int, None, or a tuple/list/dict tree of those (a
    :class:`ShapeError` naming it otherwise)."""
    leaves = optree.tree_leaves(out_axes, none_is_leaf=True)
    if not all(_out_axis(a) for a in leaves):
        raise ShapeError(
            f"out_axes must be an int, None, or a tuple/list/dict of those matching the "
            f"result's structure, got {out_axes!r}",
            op="vmap",
        )


def _place(result: Any, out_axes: Any) -> Any:
    """Each leaf of ``result`` (``build1`` over the mapped axis, in front) with that axis
    moved to its ``out_axes`` entry, or unstacked for a None entry."""
    try:
        axes = optree.tree_broadcast_prefix(out_axes, result, none_is_leaf=True)
    except ValueError:
        raise ShapeError(
            f"out_axes {out_axes!r} is not a tree prefix of the result's structure "
            f"{optree.tree_structure(result, none_is_leaf=True)}",
            op="vmap",
        ) from None
    leaves, tree = optree.tree_flatten(result, none_is_leaf=True)
    placed = [
        _move_mapped(leaf, axis) if isinstance(leaf, Tensor) else leaf
        for leaf, axis in zip(leaves, optree.tree_leaves(axes, none_is_leaf=True), strict=True)
    ]
    return optree.tree_unflatten(tree, placed)


def _move_mapped(leaf: Tensor, axis: int | None) -> Tensor:
    term = leaf.term
    if axis is None:
        if isinstance(term, Build1) and term.var not in free_vars(term.body):
            return Tensor(term.body)
        raise ShapeError(
            "vmap has a mapped output but out_axes is None for it: an output with "
            "out_axes=None must not depend on the mapped arguments (as in jax.vmap)",
            op="vmap",
            shapes=[leaf.shape],
        )
    rank = len(leaf.shape)
    if not -rank <= axis < rank:
        raise ShapeError(
            f"out_axes {int(axis)} is out of range for a result of shape "
            f"{list(leaf.shape[1:])} mapped over {leaf.shape[0]}",
            op="vmap",
            shapes=[leaf.shape],
        )
    position = int(axis) % rank
    if position == 0:
        return leaf
    perm = [*range(1, position + 1), 0, *range(position + 1, rank)]
    return transpose(leaf, perm)


def jit(f: Callable[..., Any], *, backend: str | None = None) -> Callable[..., Any]:
    """``f`` compiled, as ``jax.jit``: traced once per input shapes, dtypes, backend and
    keyword values (keywords are static: they must be hashable), vectorised by the bot
    and compiled to Python over the arrays' namespace; later calls with inputs of those
    types run the compiled code only.

    The semantics are JAX's: what ``f`` captures (globals, closure cells, attributes)
    is read **when it is traced** and baked into the compiled program; a later change
    is not seen until the cache is cleared (``jitted.clear_cache()`` or
    :func:`clear_caches`).  Use it for a function whose captured values do not change
    (``da.jit(da.grad(loss))``); :func:`grad` and the other transformations always read
    call-time values.  Inside a trace ``jit`` is the identity.  A primitive defined
    again (``da.primitive``, a re-run cell) is not a captured value: the next call of
    every jitted function traces again, with the new definition."""
    if not callable(f):
        raise DualarrError(f"expected a function, got {type(f).__name__}", op="jit")
    if backend is not None:
        get_backend(backend)
    # per entry: the program, and False (one result), True (a flat tuple) or the
    # structure of a nested result
    compiled: OrderedDict[Hashable, tuple[CompiledProgram, Any]] = OrderedDict()

    def jitted(*args: Any, **kwargs: Any) -> Any:
        if not kwargs and backend is None and current_trace() is None:
            # the lean path: NumPy arrays of a cached type run the generated code, then
            # only a result that would alias an input is copied
            quick = _array_types(args)
            # a primitive defined again (``primitives.generation``) traces again
            settings = (config.fuse, config.fuse_min_size, primitives.generation)
            hit = compiled.get((quick, (), None, settings)) if quick is not None else None
            if hit is not None:
                code, several = hit
                with np.errstate(all="ignore"):
                    raw = code.function(np, HELPERS, code.constants, *args)
                if not several:
                    return _fresh_numpy(raw[0], code.output_dtypes[0], args, code.spares[0])
                taken = list(args)  # nor does one result alias another
                for v, dt, spare in zip(raw, code.output_dtypes, code.spares, strict=True):
                    taken.append(_fresh_numpy(v, dt, taken, spare))
                return _structured(tuple(taken[len(args) :]), several)
        if _traced(args) or current_trace() is not None:
            return f(*args, **kwargs)
        quick = _array_types(args)
        try:
            key: Hashable = (
                quick if quick is not None else tuple(input_type(a, k) for k, a in enumerate(args)),
                tuple(sorted(kwargs.items())) if kwargs else (),
                backend,
                (config.fuse, config.fuse_min_size, primitives.generation),
            )
            entry = compiled.get(key)
        except TypeError:
            raise DualarrError(
                "keyword arguments of a jitted function are static (part of the cache key) "
                f"and must be hashable, got {sorted(kwargs)}",
                op="jit",
            ) from None
        home, run_on = backend_of(args), get_backend(backend, args)
        if run_on is not home:
            args = tuple(to_backend(run_on, a) for a in args)
        if entry is None:
            nested: list[Any] = []  # the result's structure, where it nests
            try:
                program = trace(_flat_results(_bound(f, kwargs), nested), *args)
            except TypeError:
                _check_call(f, args, kwargs, "jit")
                raise
            vectorised, _ = vectorise_program(program)
            with collector_paused():
                code = compile_program(
                    vectorised.inputs, vectorised.outputs, f"jit_{len(compiled)}"
                )
            entry = compiled[key] = (code, nested[0] if nested else vectorised.tuple_output)
            if len(compiled) > CACHE_SIZE:
                compiled.popitem(last=False)
        code, several = entry
        if quick is not None:
            with np.errstate(all="ignore"):
                raw = code.function(np, HELPERS, code.constants, *args)
            values = tuple(
                np.asarray(v).astype(dt, copy=False)
                for v, dt in zip(raw, code.output_dtypes, strict=True)
            )
        else:
            values = code(*args, backend=run_on)
        values = _home(home, _unaliased(tuple(values), args))
        return _structured(values, several) if several else values[0]

    def clear_cache() -> None:
        compiled.clear()

    jitted.__name__ = f"jit({_function_name(f)})"
    jitted.clear_cache = clear_cache  # type: ignore[attr-defined]
    return jitted


def _flat_results(f: Callable[..., Any], nested: list[Any]) -> Callable[..., Any]:
    """``f`` with a nested result (``value_and_grad``'s ``(value, (g0, g1))``, a dict)
    flattened to a tuple of its leaves, the structure appended to ``nested``; a result
    that is one value or a flat tuple or list as it is."""

    def flat(*args: Any) -> Any:
        result: Any = f(*args)
        if isinstance(result, dict) or (
            isinstance(result, tuple | list)
            and any(isinstance(item, tuple | list | dict) for item in result)
        ):
            whole: Any = result  # a tree of Tensors
            leaves, tree = optree.tree_flatten(whole, none_is_leaf=True)
            nested.append(tree)
            return tuple(leaves)
        return result

    flat.__name__ = getattr(f, "__name__", "program")
    return flat


def _structured(values: tuple[Any, ...], several: Any) -> Any:
    """The results of a jitted call in the structure the function returned them."""
    if several is True:
        return values
    return optree.tree_unflatten(several, list(values))


def _array_types(args: Sequence[Any]) -> Hashable | None:
    """The exact NumPy types of the arguments, when all are NumPy arrays: each one's
    shape and dtype, in one flat tuple (a dtype object is its own key: ``<f8`` and
    ``>f8`` differ; reading ``dtype.str`` would build a string per call)."""
    key: list[Any] = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        key.append(a.shape)
        key.append(a.dtype)
    return tuple(key)


def _fresh_numpy(
    value: Any, dtype: np.dtype[Any], inputs: Sequence[Any], spare: SpareBuffer
) -> np.ndarray:
    """``value`` as a NumPy array of ``dtype``, copied only when it is (a view of) an
    input or a read-only constant: a large one into the output's recycled buffer."""
    array: np.ndarray = value
    if type(value) is not np.ndarray or value.dtype != dtype:
        array = np.asarray(value).astype(dtype, copy=False)
    if array.base is None and array.flags.writeable:
        if all(array is not x for x in inputs):
            return array
    elif array.flags.writeable and not any(np.may_share_memory(array, x) for x in inputs):
        return array
    if array.size >= config.fuse_min_size:
        return copy_into_spare(spare, array, array.shape, array.dtype)
    copied: np.ndarray = array.copy()
    return copied


__all__ = [
    "CACHE_SIZE",
    "MODES",
    "cache_size",
    "clear_caches",
    "compiled_gradient",
    "grad",
    "jacobian",
    "jit",
    "jvp",
    "value_and_grad",
    "vjp",
    "vmap",
]
