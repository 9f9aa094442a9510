"""The differentiation API: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``.

Like JAX's, over the pipeline of the paper: the function is traced, vectorised by the bot
and simplified (cached per function and input types).  Then, by default
(``mode="compiled"``), differentiated at compile time (§7): the gradient program is
generated as Python once per (function, shapes, dtypes, backend) and run on every call.
``mode="interpret"`` selects the concrete dual-arrays path instead: D with NumPy primals
(§6) and the reverse pass of Fig. 17 over the Delta, on every call.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import delta as dl
from .arrays import Backend
from .backends import backend_of, get_backend, to_backend
from .core import Const, FromIntegral, IdSupply, Term, Var, type_name
from .dual import Dual, DualAlgebra
from .errors import DtypeError, DualarrError, ShapeError, UnsupportedError
from .evaluate import Interpreter, algebra_for
from .letconv import LetProgram
from .pipeline import CompiledGradient, compile_gradient, gradient_stages, vectorise_program
from .program import Program, ShapeSpec, input_type, trace
from .reverse import ReverseState, ReverseStats, backprop, eval_delta, forward
from .staging import TermAlgebra
from .tensor import Tensor, current_context, ensure_tensor
from .trampoline import collector_paused

MODES = ("compiled", "interpret")
_CACHE_SIZE = 128
_programs: OrderedDict[Hashable, Program] = OrderedDict()
_gradients: OrderedDict[Hashable, CompiledGradient] = OrderedDict()


def _cache_key(
    f: Callable[..., Any], args: Sequence[Any], backend: str = "numpy"
) -> Hashable | None:
    types = tuple((shape, dtype) for shape, dtype in (input_type(a, k) for k, a in enumerate(args)))
    try:
        key: Hashable = (f, types, backend)
        hash(key)
    except TypeError:
        return None
    return key


def vectorised_program(f: Callable[..., Any], args: Sequence[Any]) -> Program:
    """``f`` traced on ``args``' types, vectorised and simplified; cached per types."""
    key = _cache_key(f, args)
    if key is not None and key in _programs:
        _programs.move_to_end(key)
        return _programs[key]
    program, _ = vectorise_program(trace(f, *args))
    if key is not None:
        _programs[key] = program
        if len(_programs) > _CACHE_SIZE:
            _programs.popitem(last=False)
    return program


def compiled_gradient(
    f: Callable[..., Any],
    args: Sequence[Any],
    positions: Sequence[int] | None = None,
    *,
    unit_cotangent: bool = False,
    backend: str = "numpy",
    value: bool = True,
) -> CompiledGradient:
    """The compiled gradient program of ``f`` for ``args``' types (every stage of §7 and
    code generation) with respect to ``positions`` (default: every float input), cached
    per (function, shapes, dtypes, backend, positions); ``unit_cotangent`` specialises
    it to the cotangent 1 of ``grad``."""
    base = _cache_key(f, args, backend)
    chosen = None if positions is None else tuple(positions)
    key = None if base is None else (base, chosen, unit_cotangent, value)
    if key is not None and key in _gradients:
        _gradients.move_to_end(key)
        return _gradients[key]
    with collector_paused():
        result = compile_gradient(
            vectorised_program(f, args), positions, unit_cotangent=unit_cotangent, value=value
        )
    if key is not None:
        _gradients[key] = result
        if len(_gradients) > _CACHE_SIZE:
            _gradients.popitem(last=False)
    return result


def clear_caches() -> None:
    """Forget every traced, vectorised and compiled program."""
    _programs.clear()
    _gradients.clear()


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
        deltas.append(
            out.delta if isinstance(out, Dual) else dl.Zero(term.shape, term.dtype)
        )
    return DualRun(program, values, deltas, alg, tuple(positions), backend)


def _check_mode(mode: str, op: str) -> None:
    if mode not in MODES:
        raise DualarrError(
            f"unknown mode {mode!r}; available: {', '.join(MODES)}", op=op
        )


def _positions(argnums: int | Sequence[int], count: int, op: str) -> tuple[int, ...]:
    raw = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    positions = []
    for a in raw:
        if not -count <= a < count:
            raise DualarrError(f"argnums {a} is out of range for {count} arguments", op=op)
        positions.append(a % count)
    return tuple(positions)


def _check_differentiable(program: Program, positions: Sequence[int], op: str) -> None:
    for k in positions:
        var = program.inputs[k]
        if not var.dtype.is_float:
            raise DtypeError(
                f"argument {k} ({var.hint} : {type_name(var.shape, var.dtype)}) is not a "
                "float array; differentiate with respect to float inputs only",
                op=op,
            )


def _result(array: Any, like: Term, backend: Backend | None = None) -> Any:
    """A fresh array of ``like``'s type (a gradient never aliases anything)."""
    if backend is None or backend.name == "numpy":
        return np.array(np.broadcast_to(array, like.shape), dtype=like.dtype.numpy())
    xp = backend.xp
    array = xp.broadcast_to(xp.asarray(array, dtype=backend.dtype(like.dtype)), like.shape)
    return xp.asarray(array, copy=True)


def _array_types(args: Sequence[Any]) -> Hashable | None:
    """The exact NumPy types of the arguments, when all are NumPy arrays."""
    if all(type(a) is np.ndarray for a in args):
        return tuple((a.shape, a.dtype.str) for a in args)
    return None


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
    return results[0] if isinstance(argnums, int) else results


def _concrete_gradients(
    run: DualRun, seeds: Sequence[tuple[dl.Delta, Any]], stats: ReverseStats | None = None
) -> dict[int, Any]:
    alg = algebra_for(run.backend)
    state = ReverseState()
    stats = stats if stats is not None else ReverseStats()
    with np.errstate(all="ignore"), collector_paused():
        for delta, cotangent in seeds:
            eval_delta(alg, state, cotangent, delta, stats)
        return backprop(alg, state, stats).grad


def value_and_grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    mode: str = "compiled",
    backend: str | None = None,
) -> Callable[..., tuple[Any, Any]]:
    """``f``'s value and gradient with respect to ``argnums`` (``f`` returns a rank-0
    float); a tuple of gradients when ``argnums`` is a tuple.  ``mode="compiled"`` runs
    the generated gradient program, ``mode="interpret"`` the concrete reverse pass.
    ``backend`` ("numpy", "cupy") runs on that backend; by default the arrays' own.
    Results come back on the backend of the input arrays."""
    return _value_and_grad(f, argnums, mode, backend, with_value=True)


def _value_and_grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int],
    mode: str,
    backend: str | None,
    *,
    with_value: bool,
) -> Callable[..., tuple[Any, Any]]:
    """``value_and_grad``; without ``with_value`` (for ``grad``) the compiled program
    skips the primal value (its first result is then 0)."""
    _check_mode(mode, "value_and_grad")
    if backend is not None:
        get_backend(backend)  # a clear error now for an unknown or unavailable backend
    # (shape, dtype) of every argument -> the compiled gradient and the positions:
    # calls with arrays of seen types skip tracing, the caches and the checks
    seen: dict[Hashable, tuple[CompiledGradient, tuple[int, ...]]] = {}
    unit = np.ones((), dtype=np.float64)

    def wrapped(*args: Any) -> tuple[Any, Any]:
        if any(isinstance(a, Tensor) for a in args):  # inside a trace: vmap(grad(f)), …
            return _traced_value_and_grad(f, args, argnums)
        quick = _array_types(args) if mode == "compiled" and backend in (None, "numpy") else None
        hit = seen.get(quick) if quick is not None else None
        if hit is not None:
            compiled, positions = hit
            value, all_grads = compiled.run(args, unit)
            by_position = dict(zip(compiled.positions, all_grads, strict=True))
            return value[()], _select(by_position, positions, argnums)
        home, run_on = backend_of(args), get_backend(backend, args)
        if run_on is not home:  # an explicit transfer, requested by ``backend=``
            args = tuple(to_backend(run_on, a) for a in args)
        positions = _positions(argnums, len(args), "grad")
        program = vectorised_program(f, args)
        out = _check_gradient_program(program, positions)
        if mode == "compiled":
            compiled = compiled_gradient(
                f,
                args,
                sorted(set(positions)),
                unit_cotangent=True,
                backend=run_on.name,
                value=with_value,
            )
            if quick is not None and out.dtype.numpy() == unit.dtype:
                seen[quick] = (compiled, positions)
            value_array, all_grads = compiled(*args, backend=run_on)
            by_position = dict(zip(compiled.positions, all_grads, strict=True))
            chosen = _select(by_position, positions, argnums)
            return _home(home, value_array[()]), _home(home, chosen)
        run = dual_run(program, args, positions, run_on)
        seed = algebra_for(run_on).full((), 1.0, out.dtype)
        grads = _concrete_gradients(run, [(run.deltas[0], seed)])
        results = tuple(
            _result(grads.get(k, 0.0), program.inputs[k], run_on) for k in positions
        )
        value = run.values[0][()]
        return _home(home, value), _home(home, results[0] if isinstance(argnums, int) else results)

    wrapped.__name__ = f"value_and_grad({getattr(f, '__name__', 'f')})"
    return wrapped


def _check_gradient_program(program: Program, positions: Sequence[int]) -> Term:
    """The one rank-0 float output of a program given to ``grad``, or a clear error."""
    _check_differentiable(program, positions, "grad")
    if program.tuple_output or program.outputs[0].shape != ():
        shapes = [type_name(t.shape, t.dtype) for t in program.outputs]
        raise ShapeError(
            f"grad needs a function returning one rank-0 float, got {', '.join(shapes)}; "
            "use da.vjp or da.jacobian for other outputs",
            op="grad",
            shapes=[t.shape for t in program.outputs],
        )
    out = program.outputs[0]
    if not out.dtype.is_float:
        raise DtypeError(f"grad needs a float output, got {out.dtype}", op="grad")
    return out


def _traced_program(
    f: Callable[..., Any], args: Sequence[Any], op: str
) -> tuple[list[Term], Program]:
    """The traced arguments' terms, and ``f`` traced for their types and vectorised."""
    terms = [ensure_tensor(a, op).term for a in args]
    specs = [ShapeSpec(t.shape, t.dtype.numpy()) for t in terms]
    program, _ = vectorise_program(trace(f, *specs))
    return terms, program


def _traced_value(program: Program, terms: Sequence[Term], op: str) -> Tensor:
    """``program``'s one output on ``terms``, as a term of the enclosing trace."""
    interpreter = Interpreter(TermAlgebra(current_context(op).supply))
    (value,) = interpreter.run(program.outputs, dict(zip(program.inputs, terms, strict=True)))
    return Tensor(value)


def _instantiate(
    gradient: LetProgram, terms: Sequence[Term], cotangent: Term, op: str
) -> list[Term]:
    """The let-program ``gradient`` (Fig. 21) on ``terms`` and ``cotangent`` as terms
    of the enclosing trace (``(value, *gradients)``)."""
    *inputs, dt = gradient.inputs
    env: dict[Var, Term] = dict(zip(inputs, terms, strict=True))
    env[dt] = cotangent
    interpreter = Interpreter(TermAlgebra(current_context(op).supply))
    for var, term in gradient.bindings:
        env[var] = interpreter.run([term], env)[0]
    return interpreter.run(list(gradient.outputs), env)


def _traced_value_and_grad(
    f: Callable[..., Any], args: Sequence[Any], argnums: int | Sequence[int]
) -> tuple[Any, Any]:
    """``value_and_grad`` on traced arguments (inside ``da.trace``, ``da.vmap``, another
    ``da.grad``): the gradient program of §7 (Fig. 21), built for the arguments' types,
    is instantiated as terms of the enclosing trace, so the bot then vectorises it like
    any other code (``vmap(grad(f))`` gives per-example gradients in bulk)."""
    terms, program = _traced_program(f, args, "grad")
    positions = _positions(argnums, len(args), "grad")
    _check_gradient_program(program, positions)
    gradient = gradient_stages(program, sorted(set(positions)), unit_cotangent=True).gradient
    dt = gradient.inputs[-1]
    one = Const(np.ones((), dtype=dt.dtype.numpy()))
    value, *grads = _instantiate(gradient, terms, one, "grad")
    by_position = dict(zip(gradient.positions, (Tensor(g) for g in grads), strict=True))
    return Tensor(value), _select(by_position, positions, argnums)


def _traced_vjp(
    f: Callable[..., Any], args: Sequence[Any]
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    """``vjp`` on traced arguments: the value, and a pullback that instantiates the
    gradient program of §7 with its cotangent (itself a traced value or an array), so
    ``vmap`` of a pullback, or ``jacobian`` inside a trace, are bulk programs too."""
    terms, program = _traced_program(f, args, "vjp")
    out = program.outputs[0]
    if program.tuple_output or not out.dtype.is_float:
        raise UnsupportedError(
            "vjp of traced values needs a function with one float output", op="vjp"
        )
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    gradient = gradient_stages(program, positions).gradient if positions else None
    value = _traced_value(program, terms, "vjp")

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
        return tuple(
            Tensor(by_position[k]) if k in by_position else None for k in range(len(args))
        )

    return value, pullback


def _traced_jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """``jvp`` on traced values, by transposing the pullback (it is linear in its
    cotangent): ``J v`` is the gradient in ``ct`` of ``<pullback(ct), v>``, so two
    reverse passes, both built as terms of the enclosing trace."""
    from .lang import sum as total

    terms, program = _traced_program(f, primals, "jvp")
    out = program.outputs[0]
    if program.tuple_output or not out.dtype.is_float:
        raise UnsupportedError(
            "jvp of traced values needs a function with one float output", op="jvp"
        )
    value = _traced_value(program, terms, "jvp")
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
    tangent = grad(pairing)(Tensor(zero), *primals, *tangents)
    return value, tangent


def _traced_jacobian(
    f: Callable[..., Any],
    args: Sequence[Any],
    positions: Sequence[int],
    argnums: int | Sequence[int],
) -> Any:
    """``jacobian`` on traced arguments: the pullback mapped (``vmap``, so in bulk) over
    the one-hot cotangents, one row per output element."""
    from .lang import constant, reshape
    from .vmap import vmap

    value, pullback = _traced_vjp(f, args)
    out = value.term
    size = math.prod(out.shape)
    basis = constant(np.eye(size, dtype=out.dtype.numpy()).reshape((size, *out.shape)))
    results = []
    for k in positions:
        arg = ensure_tensor(args[k], "jacobian").term
        if not arg.dtype.is_float:
            raise DtypeError(f"jacobian of input {k}: not a float input", op="jacobian")
        shape = (*out.shape, *arg.shape)
        rows = vmap(lambda c, k=k: pullback(c)[k])(basis)
        results.append(reshape(rows, shape))
    return results[0] if isinstance(argnums, int) else tuple(results)


def grad(
    f: Callable[..., Any],
    argnums: int | Sequence[int] = 0,
    *,
    mode: str = "compiled",
    backend: str | None = None,
) -> Callable[..., Any]:
    """The gradient of ``f`` (rank-0 float output) with respect to ``argnums``, like
    ``jax.grad`` (``mode`` and ``backend`` as for :func:`value_and_grad`).  It also
    works on traced values, so ``da.vmap(da.grad(f))`` gives per-example gradients and
    ``da.grad`` of a function that calls ``da.grad`` gives second derivatives."""
    inner = _value_and_grad(f, argnums, mode, backend, with_value=False)

    def wrapped(*args: Any) -> Any:
        return inner(*args)[1]

    wrapped.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    return wrapped


def vjp(
    f: Callable[..., Any], *args: Any, mode: str = "compiled"
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    """``(f(*args), pullback)``; ``pullback(cotangent)`` gives one cotangent per argument
    (``None`` for integer and bool arguments).  A function with one float output uses
    the compiled gradient program (``mode="compiled"``); tuple outputs and
    ``mode="interpret"`` use the concrete reverse pass.  On traced values (inside
    ``da.vmap``, ``da.trace``, …) the pullback builds the gradient program as terms."""
    _check_mode(mode, "vjp")
    if any(isinstance(a, Tensor) for a in args):  # inside a trace
        return _traced_vjp(f, args)
    backend = backend_of(args)
    program = vectorised_program(f, args)
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    single = not program.tuple_output and program.outputs[0].dtype.is_float
    if mode == "compiled" and single:
        return _compiled_vjp(f, args, program, positions, backend)
    run = dual_run(program, args, positions, backend)
    value = tuple(run.values) if program.tuple_output else run.values[0]

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
            _result(grads.get(k, 0.0), v, backend) if k in positions else None
            for k, v in enumerate(program.inputs)
        )

    return value, pullback


def _cotangent(backend: Backend, value: Any, term: Term, op: str) -> Any:
    """A cotangent (or tangent) for ``term``'s type, as an array of ``backend``."""
    if backend.name == "numpy":
        array = np.asarray(value, dtype=term.dtype.numpy() if term.dtype.is_float else None)
    else:
        array = backend.xp.asarray(value, dtype=backend.dtype(term.dtype))
    if tuple(array.shape) != term.shape:
        raise ShapeError(
            f"{'tangent' if op == 'jvp' else 'cotangent'} of shape {list(array.shape)} for "
            f"{'an argument' if op == 'jvp' else 'an output'} of type "
            f"{type_name(term.shape, term.dtype)}",
            op=op,
            shapes=[tuple(array.shape), term.shape],
        )
    return array


def _compiled_vjp(
    f: Callable[..., Any],
    args: Sequence[Any],
    program: Program,
    positions: Sequence[int],
    backend: Backend,
) -> tuple[Any, Callable[..., tuple[Any, ...]]]:
    compiled = compiled_gradient(f, args, backend=backend.name)
    term = program.outputs[0]
    value = program(*args)
    value = np.asarray(value) if backend.name == "numpy" else value

    def pullback(*cotangents: Any) -> tuple[Any, ...]:
        if len(cotangents) != 1:
            raise DualarrError(f"expected 1 cotangent, got {len(cotangents)}", op="vjp")
        array = _cotangent(backend, cotangents[0], term, "vjp")
        _, grads = compiled(*args, cotangent=array, backend=backend)
        by_position = dict(zip(compiled.positions, grads, strict=True))
        return tuple(by_position[k] if k in positions else None for k in range(len(args)))

    return value, pullback


def jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Any, Any]:
    """``(f(*primals), tangent of f's output)`` along ``tangents`` (forward evaluation of
    the Delta, "evalFwd")."""
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise DualarrError(
            f"{len(primals)} primals but {len(tangents)} tangents", op="jvp"
        )
    if any(isinstance(a, Tensor) for a in (*primals, *tangents)):  # inside a trace
        return _traced_jvp(f, primals, tangents)
    backend = backend_of(primals)
    program = vectorised_program(f, primals)
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    run = dual_run(program, primals, positions, backend)
    seeds: dict[int, Any] = {
        k: _cotangent(backend, tangents[k], program.inputs[k], "jvp") for k in positions
    }
    alg = algebra_for(backend)
    with np.errstate(all="ignore"):
        outs = [
            _result(forward(alg, d, seeds) if term.dtype.is_float else 0.0, term, backend)
            for d, term in zip(run.deltas, program.outputs, strict=True)
        ]
    if program.tuple_output:
        return tuple(run.values), tuple(outs)
    return run.values[0], outs[0]


def jacobian(
    f: Callable[..., Any], argnums: int | Sequence[int] = 0, *, mode: str = "compiled"
) -> Callable[..., Any]:
    """The Jacobian, shape ``output.shape + input.shape``: one reverse pass per output
    element over one forward pass (paper App. A); on traced values, the pullback mapped
    over the one-hot cotangents (in bulk, by the bot)."""
    _check_mode(mode, "jacobian")

    def wrapped(*args: Any) -> Any:
        positions = _positions(argnums, len(args), "jacobian")
        if any(isinstance(a, Tensor) for a in args):  # inside a trace
            return _traced_jacobian(f, args, positions, argnums)
        program = vectorised_program(f, args)
        _check_differentiable(program, positions, "jacobian")
        if program.tuple_output:
            raise DualarrError("jacobian needs a function with one output", op="jacobian")
        out = program.outputs[0]
        if not out.dtype.is_float:
            raise DtypeError(f"jacobian needs a float output, got {out.dtype}", op="jacobian")
        backend = backend_of(args)
        xp = np if backend.name == "numpy" else backend.xp
        size = math.prod(out.shape)
        rows: dict[int, list[Any]] = {k: [] for k in positions}
        run = dual_run(program, args, positions, backend) if mode == "interpret" else None
        compiled = (
            compiled_gradient(f, args, sorted(set(positions)), backend=backend.name)
            if mode == "compiled"
            else None
        )
        slots = xp.arange(size)
        for element in range(size):  # one-hot cotangents, built on the arrays' backend
            seed = xp.reshape(xp.astype(slots == element, _dtype(xp, out)), out.shape)
            if compiled is not None:
                _, all_grads = compiled(*args, cotangent=seed, backend=backend)
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
        return results[0] if isinstance(argnums, int) else results

    wrapped.__name__ = f"jacobian({getattr(f, '__name__', 'f')})"
    return wrapped


__all__ = [
    "MODES",
    "clear_caches",
    "compiled_gradient",
    "grad",
    "jacobian",
    "jvp",
    "value_and_grad",
    "vjp",
]

