"""Teaching baselines, measured: why the paper needs dual *arrays* and the bot.

* :func:`scalar_gradient` — the dual-numbers algorithm of §2 on every scalar (Figs. 2, 3,
  5): each array element is its own dual number, so the Delta term has one node per
  scalar operation and grows with the data (the "Delta explosion" of §4.1).
* :func:`unvectorised_gradient` — dual arrays *without* the bot (§4.2–4.4): ``build1`` is
  differentiated element by element (a ``FromList`` of per-element Deltas) and every
  ``index`` transposes to a one-hot array of the indexed array's full size.
* :func:`dual_arrays_gradient` — the paper's path: bot, then dual arrays (§6).

Each returns a :class:`BaselineReport` with the gradient, the Delta node count, the
one-hot cotangents materialised by the reverse pass and the time taken.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ..ad import delta as dl
from ..ad.dual import Dual, DualAlgebra
from ..ad.reverse import ReverseStats, reverse
from ..api import dual_run, vectorised_program
from ..interp.algebra import Algebra, IndexFn
from ..interp.evaluate import Interpreter, NumpyAlgebra, index_array
from ..lang.errors import ShapeError, UnsupportedError
from ..lang.program import Program, trace
from ..lang.terms import DType, IdSupply, Shape, Structural, Var


@dataclass
class BaselineReport:
    """One gradient computation, measured."""

    method: str
    gradients: tuple[np.ndarray, ...]
    delta_nodes: int
    shares: int
    one_hots: int
    seconds: float

    def __str__(self) -> str:
        return (
            f"{self.method}: {self.delta_nodes} Delta nodes ({self.shares} Share), "
            f"{self.one_hots} one-hot cotangents, {self.seconds * 1e3:.2f} ms"
        )


# --------------------------------------------------------------------------------------
# Every scalar its own dual number (§2)
# --------------------------------------------------------------------------------------

Objects = np.ndarray  # float arrays: object arrays of rank-0 Duals; others: NumPy arrays


class ScalarDualAlgebra(Algebra[Any]):
    """The core language where every float element is a scalar dual number (§2).

    Elementwise operations apply the scalar derivative rules of
    :class:`~dualarr.ad.dual.DualAlgebra` to each element; data movement moves the scalar
    duals; sums add them one by one.
    """

    def __init__(self, supply: IdSupply) -> None:
        self.scalar = DualAlgebra(NumpyAlgebra(), supply)
        self.np = NumpyAlgebra()

    # -- helpers -------------------------------------------------------------------------

    @staticmethod
    def is_dual_array(a: Any) -> bool:
        return isinstance(a, np.ndarray) and a.dtype == object

    def zero(self, dtype: DType) -> Dual[Any]:
        return Dual(np.zeros((), dtype.numpy()), dl.Zero((), dtype))

    def lift(self, values: np.ndarray, dtype: DType) -> Objects:
        out = np.empty(values.shape, dtype=object)
        for pos in np.ndindex(*values.shape):
            out[pos] = Dual(np.asarray(values[pos]), dl.Zero((), dtype))
        return out

    def primal(self, a: Any) -> np.ndarray:
        if not self.is_dual_array(a):
            return np.asarray(a)
        out = np.empty(a.shape, dtype=np.float64)
        for pos in np.ndindex(*a.shape):
            out[pos] = a[pos].primal
        return out

    def _map(self, fn: Callable[..., Any], args: Sequence[Any]) -> Objects:
        arrays = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in args])
        out = np.empty(arrays[0].shape, dtype=object)
        for pos in np.ndindex(*out.shape):
            out[pos] = fn(*[a[pos] for a in arrays])
        return out

    # -- the algebra -----------------------------------------------------------------------

    def shape(self, a: Any) -> Shape:
        return tuple(np.shape(a))

    def const(self, value: np.ndarray) -> Any:
        dtype = DType.of_numpy(value.dtype)
        return self.lift(value, dtype) if dtype.is_float else value

    def full(self, shape: Shape, value: float | int | bool, dtype: DType) -> Any:
        return self.const(np.full(shape, value, dtype=dtype.numpy()))

    def iota(self, n: int) -> Any:
        return np.arange(n, dtype=np.int64)

    def op(self, name: str, args: Sequence[Any], dtype: DType) -> Any:
        if not any(self.is_dual_array(a) for a in args):
            return self.np.op(name, args, dtype)
        if not dtype.is_float:  # a comparison of floats: on the primal values
            return self.np.op(name, [self.primal(a) for a in args], dtype)
        return self._map(lambda *xs: self.scalar.op(name, xs, dtype), args)

    def cond(self, c: Any, a: Any, b: Any) -> Any:
        return a if bool(np.asarray(c)) else b

    def from_integral(self, a: Any, dtype: DType) -> Any:
        return self.lift(np.asarray(a).astype(dtype.numpy()), dtype)

    def floor(self, a: Any) -> Any:
        return self.np.floor(self.primal(a))

    def _fill_zero(self, a: Any, picked: np.ndarray, valid: np.ndarray) -> Objects:
        dtype = next((x.delta.dtype for x in a.flat), DType.FLOAT64) if a.size else DType.FLOAT64
        out = np.empty(picked.shape, dtype=object)
        for pos in np.ndindex(*picked.shape):
            out[pos] = picked[pos] if valid[pos] else self.zero(dtype)
        return out

    def _read(self, a: Any, ix: Sequence[Any]) -> Any:
        if not self.is_dual_array(a):
            return index_array(np.asarray(a), ix)
        # index an array of positions, then read the duals (0 out of range)
        positions = np.arange(a.size, dtype=np.int64).reshape(a.shape)
        flat = index_array(positions, ix)
        valid = index_array(np.ones(a.shape, dtype=bool), ix)
        picked = np.asarray(a.reshape(-1)[np.where(valid, flat, 0)], dtype=object)
        return self._fill_zero(a, picked, valid)

    def index(self, a: Any, ix: Sequence[Any]) -> Any:
        return self._read(a, ix)

    def gather(self, outer: Shape, a: Any, fn: IndexFn[Any]) -> Any:
        if not fn.components:
            return np.broadcast_to(a, (*outer, *np.shape(a))).copy()
        return self._read(a, fn.components)

    def scatter(self, outer: Shape, a: Any, fn: IndexFn[Any], n_vars: int) -> Any:
        if not self.is_dual_array(a):
            return self.np.scatter(outer, a, fn, n_vars)
        dtype = next((x.delta.dtype for x in a.flat), DType.FLOAT64) if a.size else DType.FLOAT64
        tail = a.shape[n_vars:]
        out = np.empty((*outer, *tail), dtype=object)
        for pos in np.ndindex(*out.shape):
            out[pos] = self.zero(dtype)
        grid = a.shape[:n_vars]
        comps = [np.broadcast_to(np.asarray(c, dtype=np.int64), grid) for c in fn.components]
        for src in np.ndindex(*a.shape[:n_vars]):
            target = tuple(int(c[src]) for c in comps)
            if all(0 <= t < e for t, e in zip(target, outer, strict=True)):
                for inner in np.ndindex(*tail):
                    out[(*target, *inner)] = self.scalar.op(
                        "add", (out[(*target, *inner)], a[(*src, *inner)]), dtype
                    )
        return out

    def sum_outer(self, a: Any) -> Any:
        if not self.is_dual_array(a):
            return self.np.sum_outer(a)
        dtype = next((x.delta.dtype for x in a.flat), DType.FLOAT64) if a.size else DType.FLOAT64
        out = np.empty(a.shape[1:], dtype=object)
        for pos in np.ndindex(*out.shape):
            total = self.zero(dtype)
            for k in range(a.shape[0]):
                total = self.scalar.op("add", (total, a[(k, *pos)]), dtype)
            out[pos] = total
        return out

    def replicate(self, count: int, a: Any) -> Any:
        return np.broadcast_to(a, (count, *np.shape(a))).copy()

    def transpose(self, perm: Sequence[int], a: Any) -> Any:
        return np.transpose(a, perm)

    def reshape(self, shape: Shape, a: Any) -> Any:
        return np.reshape(a, shape)

    def from_list(self, elems: Sequence[Any]) -> Any:
        if any(self.is_dual_array(e) for e in elems):
            out = np.empty((len(elems), *np.shape(elems[0])), dtype=object)
            for k, e in enumerate(elems):
                element = np.asarray(e, dtype=object)
                if element.ndim == 0:
                    out[k] = element[()]  # a rank-0 row: store the dual itself
                else:
                    out[k] = element
            return out
        return self.np.from_list(elems)

    def argmin(self, a: Any) -> Any:
        return self.np.argmin(self.primal(a))

    def argmax(self, a: Any) -> Any:
        return self.np.argmax(self.primal(a))

    def argsort(self, a: Any) -> Any:
        return self.np.argsort(self.primal(a))

    def structural(
        self, construct: type[Structural], args: Sequence[Any], params: Mapping[str, Any]
    ) -> Any:
        raise UnsupportedError(
            f"{construct.name} moves array elements: the scalar dual-numbers baseline (§2) "
            "has scalars only",
            op=construct.name,
        )

    def contract(self, spec: str, a: Any, b: Any) -> Any:
        raise UnsupportedError(
            f"contract ({spec}) is not part of the scalar dual-numbers baseline (§2): it "
            "runs traced programs before simplification, which has no contractions",
            op="contract",
        )

    def build1(self, rows: Sequence[Any], shape: Shape, dtype: DType) -> Any:
        if not rows:
            return self.full(shape, 0, dtype)
        return self.from_list(rows)

    def index_point(self, value: int) -> Any:
        return np.int64(value)

    def index_grid(self, shape: Shape) -> list[Any] | None:
        return self.np.index_grid(shape)

    def index_fn_from_bulk(self, components: Sequence[Any], grid: Shape) -> IndexFn[Any]:
        return self.np.index_fn_from_bulk(components, grid)

    def index_fn_from_points(self, columns: Sequence[Sequence[Any]], grid: Shape) -> IndexFn[Any]:
        return self.np.index_fn_from_points(columns, grid)

    def index_fn_constant(self, ix: Sequence[Any]) -> IndexFn[Any]:
        return self.np.index_fn_constant(ix)


def _rank0_float_output(program: Program, method: str) -> None:
    out = program.outputs
    if program.tuple_output or out[0].shape != () or not out[0].dtype.is_float:
        raise ShapeError(
            "baselines differentiate functions with one rank-0 float output", op=method
        )


def scalar_gradient(f: Callable[..., Any], *args: Any) -> BaselineReport:
    """Gradient with every scalar its own dual number (§2); all float arguments."""
    start = time.perf_counter()
    program = trace(f, *args)
    _rank0_float_output(program, "scalar_gradient")
    supply = IdSupply()
    alg = ScalarDualAlgebra(supply)
    env: dict[Var, Any] = {}
    owners: dict[int, tuple[int, tuple[int, ...]]] = {}
    bound = program.bind(*args)
    next_input = 0
    for k, var in enumerate(program.inputs):
        value = bound[var]
        if not var.dtype.is_float:
            env[var] = value
            continue
        duals = np.empty(var.shape, dtype=object)
        for pos in np.ndindex(*var.shape):
            owners[next_input] = (k, pos)
            duals[pos] = Dual(np.asarray(value[pos]), dl.Input(next_input, (), var.dtype))
            next_input += 1
        env[var] = duals
    with np.errstate(all="ignore"):
        (out,) = Interpreter(alg).run(list(program.outputs), env)
        result = cast(Dual[Any], out[()] if isinstance(out, np.ndarray) else out)
        stats = ReverseStats()
        grads_by_scalar = reverse(NumpyAlgebra(), result.delta, np.ones(()), stats)
    gradients = [np.zeros(v.shape, v.dtype.numpy()) for v in program.inputs]
    for n, g in grads_by_scalar.items():
        k, pos = owners[n]
        gradients[k][pos] = g
    size = dl.size([result.delta])
    float_grads = tuple(g for g, v in zip(gradients, program.inputs, strict=True)
                        if v.dtype.is_float)
    return BaselineReport(
        "scalar dual numbers (§2)", float_grads, size.nodes, size.shares, stats.one_hots,
        time.perf_counter() - start,
    )


def _array_gradient(program: Program, args: Sequence[Any], method: str) -> BaselineReport:
    start = time.perf_counter()
    _rank0_float_output(program, method)
    positions = tuple(k for k, v in enumerate(program.inputs) if v.dtype.is_float)
    run = dual_run(program, args, positions)
    stats = ReverseStats()
    with np.errstate(all="ignore"):
        grads = reverse(NumpyAlgebra(), run.deltas[0], np.ones(()), stats)
    gradients = tuple(
        np.array(np.broadcast_to(grads.get(k, 0.0), program.inputs[k].shape),
                 dtype=program.inputs[k].dtype.numpy())
        for k in positions
    )
    size = dl.size(run.deltas)
    return BaselineReport(
        method, gradients, size.nodes, size.shares, stats.one_hots, time.perf_counter() - start
    )


def unvectorised_gradient(f: Callable[..., Any], *args: Any) -> BaselineReport:
    """Dual arrays on the source program, ``build1`` element by element (§4.2–4.4)."""
    return _array_gradient(trace(f, *args), args, "dual arrays without the bot (§4)")


def dual_arrays_gradient(f: Callable[..., Any], *args: Any) -> BaselineReport:
    """The paper's path: the bot and the simplifier, then dual arrays (§5, §6)."""
    start = time.perf_counter()
    program = vectorised_program(f, args)
    report = _array_gradient(program, args, "dual arrays after the bot (§6)")
    report.seconds = time.perf_counter() - start
    return report



