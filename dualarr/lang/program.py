"""Tracing a Python function into a closed core-language program (stage ``source``).

``da.trace(f, *arrays_or_specs)`` runs ``f`` once on traced inputs and returns a
:class:`Program`: its input variables, output terms (a DAG with sharing kept), a
printer in the paper's notation and a reference evaluation when called on arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import array_api_compat
import numpy as np

from .errors import DtypeError, DualarrError, ShapeError, TracingError, UnsupportedError
from .tensor import (
    NumpyCall,
    Tensor,
    TraceContext,
    as_term,
    constant_array,
    enter_trace,
    exit_trace,
    param_hints,
    static_int,
)
from .terms import (
    DType,
    FreeVars,
    IdSupply,
    Term,
    Var,
    count_nodes,
    fresh_var,
    type_name,
    view,
    walk,
)


@dataclass(frozen=True)
class ShapeSpec:
    """An input described by shape and element type only (tracing without data)."""

    shape: tuple[int, ...]
    dtype: Any = "float64"

    def __post_init__(self) -> None:
        shape: Any = self.shape
        if isinstance(shape, int | np.integer) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, tuple | list | np.ndarray):
            raise ShapeError(f"shape must be a tuple of ints, got {shape!r}", op="ShapeSpec")
        dims = tuple(static_int(d, "ShapeSpec", f"dimension {k}") for k, d in enumerate(shape))
        object.__setattr__(self, "shape", dims)

    @property
    def core_dtype(self) -> DType:
        return DType.of_numpy(self.dtype, what="ShapeSpec")


def input_type(value: Any, position: int) -> tuple[tuple[int, ...], DType]:
    """Shape and core element type of one argument (array, number or ShapeSpec)."""
    if isinstance(value, ShapeSpec):
        return value.shape, value.core_dtype
    if isinstance(value, Tensor):
        raise TracingError(
            f"argument {position} is already a traced value: pass arrays or da.ShapeSpec",
            op="trace",
        )
    what = f"argument {position}"
    if isinstance(value, bool | int | float | np.generic | np.ndarray | list | tuple):
        array = constant_array(value, "trace", what)  # named errors: ragged, str, object
        return tuple(array.shape), DType.of_numpy(array.dtype, what=what, op="trace")
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None:  # another array library's array
        name = str(dtype).rsplit(".", 1)[-1]  # "float32", "cupy float32", "…strict.float64"
        return tuple(int(d) for d in shape), DType.of_numpy(name, what=what, op="trace")
    raise UnsupportedError(
        f"argument {position} of type {type(value).__name__} is not an array, a number "
        "or a da.ShapeSpec",
        op="trace",
    )


@dataclass(frozen=True, eq=False)
class Program:
    """A traced program: ``λinputs. outputs`` in the core language."""

    name: str
    inputs: tuple[Var, ...]
    outputs: tuple[Term, ...]
    tuple_output: bool
    supply: IdSupply
    numpy_calls: tuple[NumpyCall, ...] = ()
    """The ``dualarr.numpy`` calls that wrote it (the source as the user wrote it)."""

    @property
    def term(self) -> Term:
        """The output term (for a program with one output)."""
        if self.tuple_output:
            raise TracingError(
                f"{self.name} returns {len(self.outputs)} values; use .outputs", op="term"
            )
        return self.outputs[0]

    @property
    def size(self) -> int:
        """Number of distinct nodes of the program's DAG."""
        return count_nodes(self.outputs)

    def signature(self) -> str:
        """``(x : float64[10]) -> float64[]``."""
        params = ", ".join(
            f"{self._names()[k]} : {type_name(v.shape, v.dtype)}" for k, v in enumerate(self.inputs)
        )
        results = ", ".join(type_name(t.shape, t.dtype) for t in self.outputs)
        if self.tuple_output:
            results = f"({results})"
        return f"({params}) -> {results}"

    def _names(self) -> list[str]:
        return list(view("input_names")(self.inputs))

    def __str__(self) -> str:
        return str(view("print_program")(self.inputs, self.outputs, tuple_output=self.tuple_output))

    @property
    def constants(self) -> dict[str, np.ndarray]:
        """The array constants the program holds (captured arrays), by the names it prints
        them with: ``k1 : float64[1000,1000]`` in ``str(p)``, ``p.constants["k1"]`` here."""
        return dict(view("constant_table")(self.inputs, self.outputs))

    def numpy_source(self) -> str:
        """The program as the user wrote it with ``dualarr.numpy``: one ``let`` per NumPy
        call, its lowering to the core language on the right of ``=`` and the call as
        written after ``#`` (the plain term when no ``dnp`` function was called)."""
        return str(view("print_numpy_program")(self))

    def numpy_graph(self) -> Any:
        """The term DAG with each ``dualarr.numpy`` call's lowering in a labelled box."""
        return view("numpy_graph")(self)

    def __repr__(self) -> str:
        return f"<Program {self.name} {self.signature()}, {self.size} nodes>"

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def graph(self) -> Any:
        """The program's term DAG as a graphviz drawing (:mod:`dualarr.show.drawing`)."""
        return view("stage_graph")(self)

    def bind(self, *arrays: Any) -> dict[Var, np.ndarray]:
        """Check ``arrays`` against the inputs' types and pair them with the variables."""
        if len(arrays) != len(self.inputs):
            raise TracingError(
                f"{self.name} takes {len(self.inputs)} arguments, got {len(arrays)}", op="call"
            )
        env: dict[Var, np.ndarray] = {}
        names = self._names()
        for k, (var, value) in enumerate(zip(self.inputs, arrays, strict=True)):
            if is_foreign_array(value):  # kept on its backend
                shape, dtype = input_type(value, k)
                _check_input(names[k], var, shape, dtype, str(value.dtype), self.name)
                env[var] = value
                continue
            array = constant_array(value, self.name, f"input {names[k]}")
            shape, dtype = input_type(array, k)
            if shape != var.shape:
                raise ShapeError(
                    f"input {names[k]} was traced as {type_name(var.shape, var.dtype)}, "
                    f"got shape {list(shape)}",
                    op=self.name,
                    shapes=[var.shape, shape],
                )
            if dtype is not var.dtype:
                raise DtypeError(
                    f"input {names[k]} was traced as {type_name(var.shape, var.dtype)}, "
                    f"got {array.dtype}",
                    op=self.name,
                    shapes=[var.shape],
                )
            env[var] = array.astype(var.dtype.numpy(), copy=False)
        return env

    def __call__(self, *arrays: Any) -> Any:
        """Evaluate with the reference evaluator on the arrays' backend; one array or a
        tuple."""
        env = self.bind(*arrays)
        inputs = list(env.values())
        outputs = view("evaluate")(list(self.outputs), env)
        values = fresh_results(outputs, inputs)
        return tuple(values) if self.tuple_output else values[0]


def fresh_result(value: Any, inputs: list[Any]) -> Any:
    """``value`` sharing no memory with ``inputs`` and writable (no result aliases an
    input or a read-only constant): such an array is copied."""
    if isinstance(value, np.ndarray):
        if not value.flags.writeable or any(
            isinstance(x, np.ndarray) and np.may_share_memory(value, x) for x in inputs
        ):
            return value.copy()
        return value
    if is_foreign_array(value) and any(value is x for x in inputs):
        return array_api_compat.array_namespace(value).asarray(value, copy=True)
    return value


def is_foreign_array(value: Any) -> bool:
    """Another backend's array (CuPy, ``array_api_strict``, Dask), kept on its device (or
    lazy): an array-API object that is not NumPy's.  CuPy's and Dask's arrays have no
    ``__array_namespace__``, so ``array_api_compat`` recognises them."""
    if isinstance(value, np.ndarray):
        return False
    return (
        hasattr(value, "__array_namespace__")
        or array_api_compat.is_cupy_array(value)
        or array_api_compat.is_dask_array(value)
    )


def fresh_results(values: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
    """``values`` (the results of one call), none sharing memory with ``inputs`` or with
    another of them (DESIGN §3): a result that would is copied, so that updating one in
    place (``g *= 0``) never changes another."""
    kept: list[Any] = []
    for value in values:
        kept.append(fresh_result(value, [*inputs, *kept]))
    return kept


def _check_input(
    name: str, var: Var, shape: tuple[int, ...], dtype: DType, shown: str, op: str
) -> None:
    if shape != var.shape:
        raise ShapeError(
            f"input {name} was traced as {type_name(var.shape, var.dtype)}, "
            f"got shape {list(shape)}",
            op=op,
            shapes=[var.shape, shape],
        )
    if dtype is not var.dtype:
        raise DtypeError(
            f"input {name} was traced as {type_name(var.shape, var.dtype)}, got {shown}",
            op=op,
            shapes=[var.shape],
        )


def scalar_float_output(program: Program, op: str) -> Term:
    """The one rank-0 float output of ``program``, or a :class:`DualarrError` naming
    what ``op`` got instead."""
    if program.tuple_output or len(program.outputs) != 1:
        raise DualarrError(
            f"{program.name} returns {len(program.outputs)} values; {op} needs one rank-0 "
            "float output",
            op=op,
        )
    out = program.outputs[0]
    if out.shape != () or not out.dtype.is_float:
        raise DualarrError(
            f"{program.name} returns {type_name(out.shape, out.dtype)}; {op} needs a rank-0 "
            "float output (sum it, or take one element)",
            op=op,
            shapes=[out.shape],
        )
    return out


def trace(f: Callable[..., Any], *args: Any, captures: bool = False) -> Program:
    """Trace ``f`` on arrays (or :class:`ShapeSpec` values) into a core-language program.

    With ``captures``, ``f`` may read traced values of an enclosing trace: they stay
    free variables of the program (:func:`dualarr.lang.closure.close_program` makes them
    inputs); otherwise that is an error."""
    if not callable(f):
        raise TracingError(f"expected a function, got {type(f).__name__}", op="trace")
    supply = IdSupply()
    hints = param_hints(f, len(args), "x")
    inputs = tuple(
        fresh_var(supply, hint, *input_type(a, k))
        for k, (hint, a) in enumerate(zip(hints, args, strict=True))
    )
    name = getattr(f, "__name__", "program")
    context = TraceContext(supply)
    token = enter_trace(context)
    try:
        result = f(*[Tensor(v) for v in inputs])
        tuple_output = isinstance(result, tuple | list)
        items = list(result) if tuple_output else [result]
        if result is None or any(item is None for item in items):
            raise TracingError(f"{name} returned None; return the computed value", op="trace")
        outputs = tuple(as_term(item, "trace") for item in items)
    finally:
        exit_trace(token)
    calls = tuple(context.numpy_calls)
    if captures:
        return Program(name, inputs, outputs, tuple_output, supply, calls)
    allowed = set(inputs)
    if _other_vars(outputs, allowed):  # else only inputs: nothing can leak
        free = FreeVars()
        for out in outputs:
            leaked = [v for v in free(out) if v not in allowed]
            if leaked:
                raise TracingError(
                    f"{name} uses a traced value from outside this trace "
                    f"({', '.join(v.hint for v in leaked)}): pass it as an argument",
                    op="trace",
                )
    return Program(name, inputs, outputs, tuple_output, supply, calls)


def _other_vars(roots: Sequence[Term], allowed: set[Var]) -> bool:
    """Whether the DAG mentions a variable besides ``allowed``: one walk, stopping at
    the first, with only a set of visited nodes (a program without binders, such as a
    loop of elementwise operations, then needs no free-variable sets at all)."""
    return any(isinstance(node, Var) and node not in allowed for node in walk(roots))
