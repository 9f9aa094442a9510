"""Code generation: a vectorised term DAG as Python source over an array namespace (§7.5).

The input is a closed, ``build1``-free DAG (the output of the bot and the simplifier);
the output is one function ``def program(xp, helpers, x, ...)`` written against the
array-API names (``xp.sin``, ``xp.sum(axis=0)``, ``xp.permute_dims``, ``xp.where``...),
returning a tuple.  Sharing is kept: a node used twice (or needed by name) gets one
line ``tN = ...`` placed in the innermost scope of its free variables, the rule of
:mod:`dualarr.show.printer`; unshared nodes are inlined.  Every ``let`` is an assignment.

Gather and scatter index functions run in bulk: the lambda's variables are bound to
index grids and the index expressions become array expressions, then
``helpers.gather`` / ``helpers.scatter`` apply the totality semantics (out-of-range
reads give 0, out-of-range writes are dropped).  An index function that is not scalar
index work (:func:`dualarr.lang.indexing.is_scalar_index_work`) is evaluated by a generated
Python loop over its grid.  Integer ``//`` and ``%`` call ``helpers.quot`` /
``helpers.rem`` (``a // 0 == a``, ``a % 0 == a``).  Every traversal is iterative.

A loop (:class:`~dualarr.lang.terms.MapAccum`, horde-ad's mapAccum; not in the paper)
is a Python ``for`` around its body's code, a nested scope like an index function's:
the source's size does not depend on the number of steps.
"""

from __future__ import annotations

import dataclasses
import keyword
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..interp.algebra import ARRAY_MEANINGS, MeaningsByName
from ..interp.arrays import (
    Backend,
    contract,
    generic_helpers,
    index_helpers,
    primal_helpers,
)
from ..interp.backends import numpy_backend
from ..lang.config import config
from ..lang.errors import DualarrError
from ..lang.indexing import affine_form, is_scalar_index_work
from ..lang.names import Namer
from ..lang.primitives import REGISTRY, Infix, NamespaceCall, UserImplementation
from ..lang.scopes import Scopes, collect_binders
from ..lang.terms import (
    ArgMax,
    ArgMin,
    ArgSort,
    Build1,
    Cond,
    Const,
    Contract,
    DType,
    Floor,
    FreeVars,
    FromIntegral,
    FromList,
    Gather,
    Index,
    Iota,
    Let,
    LoopOutput,
    MapAccum,
    Op,
    Replicate,
    Reshape,
    Scatter,
    Shape,
    Share,
    Structural,
    SumOuter,
    Term,
    Transpose,
    Var,
    assert_never,
    children,
    distinct_binders,
    postorder,
    static_int_value,
)
from .buffers import SpareBuffer
from .kernels import (
    FUSABLE,
    UNFUSED,
    Apply,
    Arg,
    CompiledKernel,
    Kernel,
    KernelExpr,
    Literal,
    combine_like_terms,
    kernel_parameter_name,
    literal_value,
    substitute_args,
    transcendental,
)
from .threads import take_rows

__all__ = [
    "HELPERS",
    "SEGMENT_STATEMENTS",
    "CompiledProgram",
    "GeneratedCode",
    "compile_function",
    "compile_program",
    "generate",
]

# --------------------------------------------------------------------------------------
# Run-time helpers (the ``helpers`` argument of generated functions)
# --------------------------------------------------------------------------------------


def _grid(shape: tuple[int, ...]) -> list[np.ndarray]:
    """One index grid per dimension of ``shape`` (the lambda's variables, in bulk), as
    broadcastable ``arange``s: ``(n, 1)`` and ``(1, m)`` for a 2-d grid."""
    return list(np.indices(shape, dtype=np.int64, sparse=True)) if shape else []


def _points(shape: tuple[int, ...]) -> Iterator[tuple[np.int64, ...]]:
    """Every point of ``shape`` in row-major order (the loop fallback)."""
    for point in np.ndindex(*shape):
        yield tuple(np.int64(p) for p in point)


def _columns(count: int) -> list[list[Any]]:
    return [[] for _ in range(count)]


def _from_points(columns: Sequence[Sequence[Any]], shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.asarray(c, dtype=np.int64).reshape(shape) for c in columns]


def _take_on_threads(xp: Any, array: np.ndarray, comps: Sequence[np.ndarray]) -> np.ndarray:
    """NumPy's ``take`` of components in range, a large one-dimensional one on several
    threads (:func:`dualarr.codegen.threads.take_rows`: the same bits)."""
    if len(comps) == 1:
        taken = take_rows(array, comps[0])
        if taken is not None:
            return taken
    picked: np.ndarray = numpy_backend().take(xp, array, comps)
    return picked


NUMPY_ON_THREADS = dataclasses.replace(numpy_backend(), take=_take_on_threads)
"""The NumPy backend of generated code: large in-range gathers on several threads."""


def _wrap(j: Any, n: Any) -> Any:
    """The primitive ``wrap`` (NumPy's wrap of negative indices) on NumPy: ``j`` itself
    when no entry is negative, found by one ``min`` (data indices usually are), else
    ``where(j < 0, j + n, j)``, the same values as the registry's implementation."""
    if type(j) is not np.ndarray:
        j = np.asarray(j)
    if j.size and j.min() >= 0 and _is_result_shape(j.shape, np.shape(n)):
        return j
    return np.where(j < 0, j + n, j)


def _is_result_shape(shape: tuple[int, ...], other: tuple[int, ...]) -> bool:
    """Whether an elementwise result of operands of these shapes has ``shape`` (a scalar
    ``j`` read next to a full ``n`` is broadcast)."""
    return not other or other == shape or np.broadcast_shapes(shape, other) == shape


HELPERS = SimpleNamespace(
    **{**primal_helpers(np), "wrap": _wrap},
    contract=contract,
    grid=_grid,
    points=_points,
    columns=_columns,
    from_points=_from_points,
    meanings=MeaningsByName(),
    **index_helpers(NUMPY_ON_THREADS),
)
"""The ``helpers`` namespace passed to generated functions (NumPy implementations; the
elementwise ones are :func:`dualarr.interp.arrays.primal_helpers` with ``xp = numpy``,
``wrap`` with a fast path for indices that need no wrap; ``index``, ``in_range``,
``gather`` and ``scatter`` are the evaluator's own (§5.2,
:func:`dualarr.interp.arrays.index_helpers`))."""


def helpers_for(backend: Backend) -> SimpleNamespace:
    """NumPy's fast helpers, or the array-API ones
    (:func:`dualarr.interp.arrays.generic_helpers`)."""
    return HELPERS if backend.name == "numpy" else generic_helpers(backend)

# --------------------------------------------------------------------------------------
# Names and literals
# --------------------------------------------------------------------------------------

_RESERVED = {"xp", "helpers", "constants", "implementations", "float", "True", "False", "None"}


def _scalar(value: object) -> str:
    if isinstance(value, np.bool_ | bool):
        return "True" if value else "False"
    if isinstance(value, np.integer | int):
        return str(int(value))
    f = float(value)  # type: ignore[arg-type]
    if math.isnan(f):
        return "float('nan')"
    if math.isinf(f):
        return "float('inf')" if f > 0 else "-float('inf')"
    return repr(f)


def _const_text(value: np.ndarray, dtype: DType) -> str:
    """A rank-0 constant as source (arrays are entries of the constant table)."""
    return f"xp.asarray({_scalar(value[()])}, dtype=xp.{dtype})"


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _replicated_scalar(term: Term) -> Term | None:
    """The rank-0 term that ``term`` replicates (``replicate n (replicate m s)``), if any."""
    if not isinstance(term, Replicate):
        return None
    while isinstance(term, Replicate):
        term = term.array
    return term if term.shape == () else None


def _affine_slices(
    index: Sequence[Term], variables: tuple[Var, ...], extents: Shape, grid: Shape
) -> tuple[list[str], list[int]] | None:
    """Index components that are in-range constants or ``±v + c`` of distinct variables
    (over ``grid``, into ``extents``) as slice subscripts (``2:7``, ``9::-1``), with the
    variable (its position) behind each sliced axis; None when they are not."""
    subscripts: list[str] = []
    order: list[int] = []
    for position, component in enumerate(index):
        extent = extents[position]
        value = static_int_value(component)
        if value is not None:
            if not 0 <= value < extent:
                return None
            subscripts.append(str(value))
            continue
        form = affine_form(component, variables)
        if form is None:
            return None
        var, sign, shift = form
        axis = variables.index(var)
        if axis in order:
            return None
        n = grid[axis]
        if sign == 1 and shift >= 0 and shift + n <= extent:
            subscripts.append(f"{shift}:{shift + n}")
        elif sign == -1 and shift < extent and shift - n + 1 >= 0:
            stop = shift - n
            subscripts.append(f"{shift}:{stop if stop >= 0 else ''}:-1")
        else:
            return None
        order.append(axis)
    if len(order) != len(variables):
        return None  # a variable the index ignores: a replicate (gather) or a sum (scatter)
    return subscripts, order


def _slice_view(node: Gather) -> tuple[str, tuple[int, ...] | None] | None:
    """A gather whose index components are in-range constants or ``±v + c`` of distinct
    variables is basic slicing (``x[::-1]``, ``x[2:7]``), then maybe a transpose:
    the subscripts and the permutation, or None."""
    found = _affine_slices(node.index, node.vars, node.array.shape, node.outer_shape)
    if found is None:
        return None
    subscripts, order = found
    axis_of = {axis: k for k, axis in enumerate(order)}  # variable -> its sliced axis
    tail = len(node.array.shape) - len(node.index)
    count = len(node.vars)
    perm = (*(axis_of[j] for j in range(count)), *range(count, count + tail))
    if tail:  # the array API wants every dimension named: the rest as an ellipsis
        subscripts.append("...")
    return ", ".join(subscripts), None if perm == tuple(range(len(perm))) else perm


def _slice_target(node: Scatter) -> tuple[str, tuple[int, ...] | None] | None:
    """A scatter that writes each element once, in range, to a slice (``±v + c`` of
    distinct variables, or constants): zeros with that slice assigned, ``out[2:6] = a``
    (no index arrays, no summing).  The subscripts and the permutation that puts the
    array's axes in the slice's order, or None."""
    count = len(node.vars)
    found = _affine_slices(node.index, node.vars, node.outer_shape, node.array.shape[:count])
    if found is None:
        return None
    subscripts, order = found
    rank = len(node.array.shape)
    perm = (*order, *range(count, rank))
    if rank > count or not subscripts:
        subscripts.append("...")
    return ", ".join(subscripts), None if perm == tuple(range(rank)) else perm


def _broadcast_operands(args: tuple[Term, ...]) -> tuple[Term, ...]:
    """A replicated scalar next to a full array: the scalar (the namespace broadcasts)."""
    bases = [_replicated_scalar(a) for a in args]
    if any(b is not None for b in bases) and any(b is None for b in bases):
        return tuple(a if b is None else b for a, b in zip(args, bases, strict=True))
    return args


def _targets(names: Sequence[str]) -> str:
    return f"({names[0]},)" if len(names) == 1 else ", ".join(names)


# Python precedences of the emitted expressions (higher binds tighter).
_ATOM = 12
_POW = 9
_UNARY = 8
_MUL = 7
_ADD = 6
_CMP = 4

_INFIX: dict[str, tuple[str, int]] = {
    record.name: (record.kernel.numexpr, record.precedence)
    for record in REGISTRY.values()
    if isinstance(record.kernel, Infix) and record.kernel.numexpr == record.infix
}
"""The primitives written as a Python operator, with its precedence: those whose
record's infix symbol is its kernel's (numexpr's, i.e. Python's) operator."""

def _call(op: str, implementations: dict[str, Callable[..., Any]]) -> str:
    """How a call of a primitive is spelled when it is not an operator (:data:`_INFIX`,
    ``-a``, ``1.0 / a``), up to its opening parenthesis: the namespace function (its
    record's implementation is one), the helper of that name, dualarr's own record's
    implementation bound to ``xp`` (``helpers.elementwise[op](``), or a user's record's
    implementation (``da.primitive``) as it is now, kept in the program's own table
    (``implementations[op](xp, ``, filled into ``implementations``): a primitive defined
    again later never changes a compiled program, whose derivative code was made from
    the same record."""
    impl = REGISTRY[op].impl
    if isinstance(impl, NamespaceCall):
        return f"xp.{impl.name}("
    if hasattr(HELPERS, op):
        return f"helpers.{op}("
    if not isinstance(impl, UserImplementation):
        return f"helpers.elementwise[{op!r}]("
    implementations[op] = impl
    return f"implementations[{op!r}](xp, "

_MAX_NEST = 6  # inline expressions at most this deep (the parser's nesting limit)
_MAX_WIDTH = 88  # a longer inline expression gets its own line

# --------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------

_TOP = None  # scope key of the function body; a lambda's scope is keyed by its binder


@dataclass
class _Chunk:
    """Lines emitted into one scope (the function body or one index function)."""

    lines: list[str]


class _Generator:
    """Analyses the DAG (uses, scopes) and emits one function, all iteratively."""

    def __init__(
        self,
        inputs: Sequence[Var],
        outputs: Sequence[Term],
        name: str,
        bindings: Sequence[tuple[Var, Term]] = (),
        fuse: bool = False,
    ) -> None:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise DualarrError(f"{name!r} is not a valid function name", op="codegen")
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.name = name
        self.fv = FreeVars()
        self.binder: dict[Var, Term] = {}
        # top-level bindings (a let-program, Fig. 21) act as lets around the body
        self.top_lets = {var: Let(var, term, var) for var, term in bindings}
        self.names: dict[Term, str] = {}
        self.namer = Namer(_RESERVED, identifiers=True)
        # arrays are data, not source: each array constant is one entry of a table
        # passed at call time, named once at the top of the function
        self.constants: list[np.ndarray] = []
        self.constant_lines: list[str] = []
        self.constant_names: dict[Term, str] = {}
        for var in self.inputs:
            self.names[var] = self.namer.fresh(var.hint)
        # fusion (:mod:`dualarr.codegen.kernels`): elementwise float64 work not yet
        # written out, as a kernel expression over leaves (the texts in ``leaves``)
        self.fuse = fuse
        self.fusable: set[Term] = set()
        self.pending: dict[Term, KernelExpr] = {}
        self.leaves: list[str] = []
        self.leaf_index: dict[str, int] = {}
        self.leaf_dtypes: list[DType] = []
        self.leaf_shapes: list[Shape] = []
        self.kernels: list[Kernel] = []
        self.implementations: dict[str, Callable[..., Any]] = {}  # see :func:`_call`
        self.read_outside: set[Term] = set()
        self.range_checks: dict[tuple[str, Shape, Term | None], str] = {}
        self.shared_components: dict[str, str] = {}
        self.alias_of: dict[Term, Term] = {}  # a pending let-bound name -> its expression
        # one array under several names (``v1 = t1``, a view taken twice): kernels read
        # it as one argument, so that like terms over it are seen as alike
        self.same_array: dict[str, str] = {}
        self.views: dict[str, str] = {}  # ``x[::-1]`` in the function body -> its name
        self.view_text: dict[str, str] = {}  # and back
        self.owner: dict[str, Term] = {}  # a ``tN`` name -> the node its line computes
        self.loop_names: dict[Term, list[str]] = {}  # a loop -> the names of its results
        self.invariants: dict[Var, Term] = {}  # a loop's invariant variable -> its value

    # -- analysis ------------------------------------------------------------------

    def _kids(self, node: Term) -> tuple[Term, ...]:
        """Dependencies in emission order: a let-bound variable depends on its bound."""
        if isinstance(node, Var):
            binder = self.binder.get(node)
            return (binder.bound,) if isinstance(binder, Let) else ()
        if isinstance(node, Let):
            return (node.var, node.body)
        return children(node)

    def _analyse(self) -> list[Term]:
        # binders (reject build1 and variables bound twice), via the real children
        plain = postorder([*self.outputs, *(let.bound for let in self.top_lets.values())])
        for node in plain:
            if isinstance(node, Build1):
                raise DualarrError(
                    "cannot generate code for build1: vectorise the program first "
                    "(dualarr.pipeline.vectorise_program)",
                    op="codegen",
                )
        binder, rebound = collect_binders(plain)
        rebound |= binder.keys() & self.top_lets.keys()
        if rebound:
            var = min(rebound, key=lambda v: v.id)
            raise DualarrError(f"variable {var.hint}#{var.id} is bound twice", op="codegen")
        self.binder.update(self.top_lets)
        self.binder.update(binder)
        for node in plain:  # a loop invariant is a let around its loop: see _emit_loop
            if isinstance(node, MapAccum):
                for var, const in zip(node.const_vars, node.consts, strict=True):
                    self.binder[var] = Let(var, const, var)
                    self.invariants[var] = const
        known = set(self.inputs) | self.binder.keys()
        for node in plain:
            if isinstance(node, Var) and node not in known:
                raise DualarrError(
                    f"the program is not closed: {node.hint}#{node.id} is free", op="codegen"
                )
        order = postorder(self.outputs, self._kids)
        # home scope of every node: the innermost lambda whose variables it mentions
        scopes = Scopes(order, self.outputs, self.binder, lets_are_scopes=False)
        leaked = {v for root in self.outputs for v in scopes.scoped_free_vars(root)}
        if leaked:
            var = min(leaked, key=lambda v: v.id)
            raise DualarrError(
                f"the program is not closed: {var.hint}#{var.id} is used outside its binder",
                op="codegen",
            )
        self.home: dict[Term, Term | None] = {node: scopes.home(node) for node in order}
        # uses, seeing through lets (a let is an alias of its body)
        self.uses: dict[Term, int] = {}
        self.cross: set[Term] = set()  # used from another scope: needs a name
        for root in self.outputs:
            target = self._resolve(root)
            self.uses[target] = self.uses.get(target, 0) + 1
        for node in order:
            if isinstance(node, Let):
                continue
            for kid in self._operands(node):
                target = self._resolve(kid)
                self.uses[target] = self.uses.get(target, 0) + 1
                inside = isinstance(node, Gather | Scatter | MapAccum) and (
                    self.home[target] is node
                )
                if self.home[target] is not self.home[node] and not inside:
                    self.cross.add(target)
            if isinstance(node, MapAccum):  # a result the body computes before the loop
                self.cross.update(
                    target
                    for target in map(self._resolve, node.body)
                    if self.home[target] is not node
                )
            if isinstance(node, Cond):  # strict: both branches computed first
                self.cross.update(
                    (self._resolve(node.if_true), self._resolve(node.if_false))
                )
        self.row_lists = self._row_lists(order)
        self.bulk: dict[Term, bool] = {}
        self.lambdas: dict[Term, Gather | Scatter] = {}
        for node in order:
            if isinstance(node, Gather | Scatter):
                self.lambdas[node] = node
                vs = frozenset(node.vars)
                self.bulk[node] = all(is_scalar_index_work(i, vs, self.fv) for i in node.index)
        if self.fuse:
            for node in order:
                if self._fusable(node):
                    self.fusable.add(node)
            # nodes some non-kernel reads (an output, a let, a gather...)
            self.read_outside = {self._resolve(root) for root in self.outputs}
            for node in order:
                if node not in self.fusable and not isinstance(node, Let):
                    self.read_outside.update(self._resolve(k) for k in self._operands(node))
        return order

    def _row_lists(self, order: Sequence[Term]) -> set[LoopOutput]:
        """The ys results only loops read, row by row, as their xs: each is kept as a
        Python list of its rows (the arrays the body made, held by reference) instead of
        a stacked array, so that no step copies its row in and out (fresh stack pages
        cost as much as the copy).  Any other reader (an operation on the whole stack, a
        result of the program) needs the array.  Rows of rank 0 stay stacked: a row read
        back from a stack is an array, never a NumPy scalar."""
        # each node's readers: "rows" (a loop reading it as xs), "whole" (any other
        # reader, or the program's result), or an alias (a let) whose readers count
        readers: dict[Term, list[Term | str]] = {}
        for root in self.outputs:
            readers.setdefault(root, []).append("whole")
        for node in order:
            if isinstance(node, Var):
                binder = self.binder.get(node)
                if isinstance(binder, Let):
                    readers.setdefault(binder.bound, []).append(node)
                continue
            if isinstance(node, Let):
                readers.setdefault(node.body, []).append(node)
                continue
            if isinstance(node, MapAccum):
                for kid in node.xs:
                    readers.setdefault(kid, []).append("rows")
                wholes: tuple[Term, ...] = (*node.inits, *node.body)
            else:
                wholes = self._operands(node)
            for kid in wholes:
                readers.setdefault(kid, []).append("whole")

        def rows_only(node: Term, seen: frozenset[Term]) -> bool:
            return all(
                reader == "rows"
                if isinstance(reader, str)
                else reader not in seen and rows_only(reader, seen | {reader})
                for reader in readers.get(node, ["whole"])
            )

        def a_stack_of_rows(node: LoopOutput) -> bool:
            loop = node.loop
            assert isinstance(loop, MapAccum)
            y = node.index - len(loop.carry_vars)  # its position among the ys
            return (
                y >= 0
                and len(loop.shapes[node.index]) > 1
                and not isinstance(loop.ys[y], Const)
                and rows_only(node, frozenset())
            )

        return {
            node for node in order if isinstance(node, LoopOutput) and a_stack_of_rows(node)
        }

    def _fusable(self, node: Term) -> bool:
        """An elementwise operation a kernel can hold: a primitive of
        :data:`dualarr.codegen.kernels.FUSABLE` (or ``if``) on float64 and booleans, in
        the function body or a loop's body (not inside an index function)."""
        home = self.home[node]
        if home is not _TOP and not isinstance(home, MapAccum):
            return False
        if isinstance(node, Var):  # a let-bound name of a kernel expression: an alias
            binder = self.binder.get(node)
            return isinstance(binder, Let) and self._resolve(binder.bound) in self.fusable
        if isinstance(node, Op):
            if node.op not in FUSABLE:
                return False
            operands: tuple[Term, ...] = _broadcast_operands(node.args)
        elif isinstance(node, Cond):
            operands = (node.cond, node.if_true, node.if_false)
        else:
            return False
        allowed = (DType.FLOAT64, DType.BOOL)
        return (
            node.dtype in allowed
            and all(a.dtype in allowed for a in operands)
            and math.prod(node.shape) >= config.fuse_min_size
        )

    @staticmethod
    def _resolve(node: Term) -> Term:
        while isinstance(node, Let):
            node = node.body
        return node

    # -- emission ------------------------------------------------------------------

    def generate(self) -> str:
        order = self._analyse()
        self.text: dict[Term, tuple[str, int, int]] = {}  # node -> (text, precedence, nesting)
        self.chunks: dict[Term | None, _Chunk] = {_TOP: _Chunk([])}
        for node in order:
            self._emit(node)
        inputs = [self.names[v] for v in self.inputs]
        self.parameters = ("xp", "helpers", "constants", *inputs)
        results = [self._ref(r, 0) for r in self.outputs]
        self._inline_single_range_checks()
        self.results = "(" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"
        self._free_after_last_use()
        body = [
            *self.kernel_lines(),
            *self.constant_lines,
            *self.chunks[_TOP].lines,
            f"return {self.results}",
        ]
        head = [
            f"def {self.name}({', '.join(self.parameters)}):",
            '    """Generated by dualarr.codegen (paper §7.5)."""',
        ]
        return "\n".join([*head, *("    " + line for line in body)]) + "\n"

    def kernel_lines(self) -> list[str]:
        """The fused kernels the body calls, as comments (:attr:`GeneratedCode.kernels`)."""
        return [f"# {kernel}" for kernel in self.kernels]

    def statements(self) -> tuple[str, ...]:
        """The body's top-level statements, unindented (a loop keeps its indented body)."""
        grouped: list[list[str]] = []
        for line in [*self.constant_lines, *self.chunks[_TOP].lines]:
            if grouped and line.startswith(" "):
                grouped[-1].append(line)
            else:
                grouped.append([line])
        return tuple("\n".join(lines) for lines in grouped)

    def _ref(self, node: Term, need: int) -> str:
        if node not in self.text:  # a fused expression read by a non-kernel
            self._materialise(node)
        text, prec, _ = self.text[node]
        return f"({text})" if prec < need else text

    def _nest(self, node: Term) -> int:
        entry = self.text.get(node)
        return 1 if entry is None else entry[2]

    def _lines(self, node: Term) -> list[str]:
        home = self.home[node]
        chunk = self.chunks.get(home)
        if chunk is None:
            chunk = self.chunks[home] = _Chunk([])
        return chunk.lines

    def _bind(self, node: Term, expr: str) -> None:
        """Emit ``tN = expr`` in the node's home scope; the node is then its name."""
        name = self.namer.fresh("t", numbered=True)
        self._lines(node).append(f"{name} = {expr}")
        self.text[node] = (name, _ATOM, 0)
        self.owner[name] = node

    def _emit(self, node: Term) -> None:
        match node:
            case Var():
                binder = self.binder.get(node)
                if node in self.invariants:  # the invariant's own name
                    self.text[node] = (self._named(self.invariants[node]), _ATOM, 0)
                    return
                if node not in self.names:
                    self.names[node] = self.namer.fresh(node.hint)
                name = self.names[node]
                if isinstance(binder, Let):
                    if node in self.fusable and self._alias(node, binder.bound):
                        return
                    bound = self._ref(binder.bound, 0)
                    if not self._rename_last(node, binder.bound, bound, name):
                        self._lines(node).append(f"{name} = {bound}")
                        if bound.isidentifier() and self.home[node] is _TOP:
                            self.same_array[name] = self.same_array.get(bound, bound)
                self.text[node] = (name, _ATOM, 0)
                return
            case Let(body=body):
                if body not in self.text:  # a pending kernel expression
                    self.pending[node] = self.pending[body]
                    self.alias_of[node] = body
                    return
                self.text[node] = self.text[body]
                return
            case Gather() | Scatter():
                self._emit_indexed(node)
                return
            case MapAccum():
                self._emit_loop(node)
                return
            case LoopOutput(index=k, loop=loop):
                self.text[node] = (self.loop_names[loop][k], _ATOM, 0)
                return
            case _:
                pass
        if node in self.fusable:
            self._emit_fusable(node)
            return
        expr, prec = self._expr(node)
        kids = children(node)
        nest = 1 + max((self._nest(k) for k in kids), default=0)
        trivial = isinstance(node, Const)  # a scalar literal or a constant's name
        unused = self.uses.get(node, 0) == 0  # e.g. a replicate its ops broadcast
        named = not trivial and not unused and (
            self.uses.get(node, 0) != 1
            or node in self.cross
            or nest > _MAX_NEST
            or len(expr) > _MAX_WIDTH
        )
        if named:
            self._bind(node, expr)
        else:
            self.text[node] = (expr, prec, nest)

    # -- fusion ----------------------------------------------------------------------

    _MAX_KERNEL_OPERATIONS = 48  # a longer chain is split (numexpr's program stays small)
    _MAX_KERNEL_ARGUMENTS = 24

    def _emit_fusable(self, node: Term) -> None:
        """Extend the kernel expressions of the operands (or start one): the node stays
        pending, or is written out now as ``tN = kernelK(xp, ...)`` when it needs a name."""
        if isinstance(node, Op):
            op, operands = node.op, _broadcast_operands(node.args)
        else:
            assert isinstance(node, Cond)
            op, operands = "select", (node.cond, node.if_true, node.if_false)
        sealed = op in UNFUSED  # NumPy's own loop, alone in its kernel: operands are leaves
        if sealed:
            for operand in operands:
                if operand in self.pending and operand not in self.text:
                    self._materialise(operand)
        args = [self._kernel_operand(a) for a in operands]
        if all(isinstance(a, Literal) for a in args):
            # never fold constants in a kernel (numexpr folds them in Python, where
            # ``1.0 / 0.0`` raises): an operation of constants reads one as an argument
            args[0] = self._kernel_operand(operands[0], literal=False)
        while 1 + sum(_operation_count(a) for a in args) > self._MAX_KERNEL_OPERATIONS:
            # the largest operand's kernel is written out first: kernels stay bounded
            k = max(range(len(args)), key=lambda j: _operation_count(args[j]))
            self._materialise(operands[k])
            args[k] = self._kernel_operand(operands[k])
        while len(set().union(*(self._leaf_indices(a) for a in args))) > (
            self._MAX_KERNEL_ARGUMENTS
        ):  # the same for the arguments: the operand reading the most is written out
            k = max(range(len(args)), key=lambda j: len(self._leaf_indices(args[j])))
            self._materialise(operands[k])
            args[k] = self._kernel_operand(operands[k])
        expr = Apply(op, tuple(args))
        self.pending[node] = expr
        uses = self.uses.get(node, 0)
        leaves = set(self._leaf_indices(expr))
        if (
            sealed
            or (uses > 1 and not self._recomputed(node, expr))
            or node in self.cross
            or _operation_count(expr) > self._MAX_KERNEL_OPERATIONS
            or len(leaves) > self._MAX_KERNEL_ARGUMENTS
        ):
            self._materialise(node)
            text = self.text[node][0]
            alone = sealed and uses == 1 and node not in self.cross  # its reader names it
            if not text.isidentifier() and uses > 0 and not alone:
                self._bind(node, text)

    _RECOMPUTED_OPERATIONS = 6

    def _recomputed(self, node: Term, expr: KernelExpr) -> bool:
        """A shared expression cheaper to recompute in each kernel that reads it than to
        store and load (as XLA does): a few operations, none transcendental, read only by
        kernels."""
        return (
            node not in self.read_outside
            and _operation_count(expr) <= self._RECOMPUTED_OPERATIONS
            and not transcendental(expr)
        )

    def _alias(self, var: Var, bound: Term) -> bool:
        """A let-bound name of a pending kernel expression that kernels recompute where
        they read it (:meth:`_recomputed`): it stays pending and gets no line."""
        target = self._resolve(bound)
        expr = self.pending.get(target)
        if expr is None or target in self.text:
            return False
        if self.uses.get(var, 0) > 1 and not self._recomputed(var, expr):
            return False
        if var in self.cross or var in self.read_outside:
            return False
        self.pending[var] = expr
        self.alias_of[var] = target
        return True

    def _kernel_operand(self, node: Term, literal: bool = True) -> KernelExpr:
        """A pending operand's expression, a scalar literal, or a leaf (the operand's
        name: an expression is first given one)."""
        pending = self.pending.get(node)
        if pending is not None and node not in self.text:
            return pending
        if literal and isinstance(node, Const) and node.value.ndim == 0:
            value = literal_value(node.value[()])
            if value is not None:
                return Literal(value)
        text = self._ref(node, 0)
        if not text.isidentifier():
            self._bind(node, text)
            text = self.text[node][0]
        text = self.same_array.get(text, text)
        index = self.leaf_index.get(text)
        if index is None:
            index = self.leaf_index[text] = len(self.leaves)
            self.leaves.append(text)
            self.leaf_dtypes.append(node.dtype)
            self.leaf_shapes.append(node.shape)
        return Arg(index)

    def _leaf_indices(self, expr: KernelExpr) -> list[int]:
        """The leaves ``expr`` reads, each once, in order of first appearance."""
        seen: dict[int, None] = {}
        stack = [expr]
        while stack:
            e = stack.pop()
            if isinstance(e, Arg):
                seen.setdefault(e.index, None)
            elif isinstance(e, Apply):
                stack.extend(reversed(e.args))
        return list(seen)

    def _materialise(self, node: Term) -> None:
        """The pending node's text: a kernel call, even of one operation, so that its
        result is written into the site's recycled buffer
        (:class:`dualarr.codegen.buffers.SpareBuffer`)."""
        expr = self.pending[node]
        alias = self.alias_of.get(node)
        if alias is not None:
            if alias not in self.text:
                self._ref(alias, 0)
            self.text[node] = self.text[alias]
            return
        used = self._leaf_indices(expr)
        local = {g: k for k, g in enumerate(used)}
        params: list[str] = []
        taken = {self.leaves[g] for g in used}
        for k, g in enumerate(used):
            name = kernel_parameter_name(self.leaves[g], k)
            if name in params or (name != self.leaves[g] and name in taken):
                name = next(
                    f"a{j}" for j in range(k, k + len(used) + 1)
                    if f"a{j}" not in taken and f"a{j}" not in params
                )
            params.append(name)
        kernel = Kernel(
            self.namer.fresh("kernel", numbered=True),
            tuple(params),
            tuple(self.leaf_dtypes[g] for g in used),
            combine_like_terms(
                substitute_args(expr, {g: Arg(k) for g, k in local.items()}),
                [self.leaf_dtypes[g] is DType.FLOAT64 for g in used],
            ),
            node.dtype,
            node.shape,
        )
        self.kernels.append(kernel)
        call = f"{kernel.name}(xp, " + ", ".join(self.leaves[g] for g in used) + ")"
        self.text[node] = (call, _ATOM, 1)

    def _slice_pending(self, node: Gather, subscripts: str) -> bool:
        """A slice of a pending kernel expression is the expression over the slices of its
        arguments (elementwise work commutes with taking a view): ``(dt * x)[::-1]``
        becomes ``dt * x[::-1]``, still pending, so that the kernel reading it computes
        it in the same pass instead of writing it out first.  False when the array is
        not pending."""
        array = self._resolve(node.array)
        expr = self.pending.get(array)
        if expr is None or array in self.text or self.home[node] is not _TOP:
            return False
        if node.array in self.alias_of or array in self.alias_of:
            return False
        sliced: dict[int, KernelExpr] = {}
        for g in self._leaf_indices(expr):
            if self.leaf_shapes[g] == ():
                sliced[g] = Arg(g)  # a scalar reads the same at every element
                continue
            if self.leaf_shapes[g] != array.shape:
                return False
            name = self._view(node, f"{self.leaves[g]}[{subscripts}]")
            index = self.leaf_index.get(name)
            if index is None:
                index = self.leaf_index[name] = len(self.leaves)
                self.leaves.append(name)
                self.leaf_dtypes.append(self.leaf_dtypes[g])
                self.leaf_shapes.append(node.shape)
            sliced[g] = Arg(index)
        self.pending[node] = substitute_args(expr, sliced)
        uses = self.uses.get(node, 0)
        if uses > 1 or node in self.cross or node in self.read_outside:
            self._materialise(node)
            text = self.text[node][0]
            if not text.isidentifier() and uses > 1:
                self._bind(node, text)
        return True

    def _rename_last(self, var: Var, bound: Term, text: str, name: str) -> bool:
        """``v1 = x[::-1]`` for ``t1 = x[::-1]`` then ``v1 = t1``: the let's name given to
        the line just written for its bound, read by nothing else."""
        lines = self._lines(var)
        target = self._resolve(bound)
        if (
            self.owner.get(text) is not target
            or not lines
            or not lines[-1].startswith(f"{text} = ")
            or self.uses.get(target, 0) != 1
            or text in self.leaf_index
            or text in self.same_array.values()
        ):
            return False
        lines[-1] = f"{name} = {lines[-1][len(text) + 3 :]}"
        self.text[target] = (name, _ATOM, 0)
        del self.owner[text]
        view = self.view_text.pop(text, None)
        if view is not None:
            self.views[view] = name
            self.view_text[name] = view
        return True

    def _view(self, node: Gather, expr: str) -> str:
        """The name of the view ``expr`` (``x[::-1]``): a new ``tN = expr`` line, or in the
        function body the name it already has (the views' arrays are never written)."""
        top = self.home[node] is _TOP
        name = self.views.get(expr) if top else None
        if name is None:
            name = self.namer.fresh("t", numbered=True)
            self._lines(node).append(f"{name} = {expr}")
            if top:
                self.views[expr] = name
                self.view_text[name] = expr
        return name

    def _shared_component(self, text: str, local: Sequence[str], lines: list[str]) -> str:
        """A bulk index component computed from arrays of the function body alone (no
        grid variable, nothing of this gather's own lines), such as the ``wrap`` of an
        index array, named once (``jN = ...``) for every gather and scatter that reads
        it, which then share its range check too; any other component as it is."""
        if text.isidentifier() or any(re.search(rf"\b{n}\b", text) for n in local):
            return text
        name = self.shared_components.get(text)
        if name is None:
            name = self.shared_components[text] = self.namer.fresh("j", numbered=True)
            lines.append(f"{name} = {text}")
        return name

    def _range_check(self, node: Gather | Scatter, comps: str, extents: Shape) -> str:
        """``, in_rangeN``: the name of the range check of ``comps`` (index arrays of the
        function body, by name) against ``extents``, made once for every gather and
        scatter that uses it; empty when the call checks for itself."""
        known = self._known_in_range(node.index, extents)
        if known is not None:
            return f", {known}"  # constant indices, checked here once
        if not re.fullmatch(r"\[[\w, ]*\]", comps):
            return ""
        at: Term = node
        home = self.home[node]
        if isinstance(home, MapAccum):  # indices the loop does not change: check once
            if not self._outside_loop(home, comps):
                return ""
            at = home
        elif home is not _TOP:
            return ""
        key = (comps, tuple(extents), self.home[at])
        name = self.range_checks.get(key)
        if name is None:
            name = self.range_checks[key] = self.namer.fresh("in_range", numbered=True)
            self._lines(at).append(f"{name} = helpers.in_range({comps}, {_shape(extents)})")
        return f", {name}"

    def _outside_loop(self, loop: MapAccum, comps: str) -> bool:
        """Whether every name ``comps`` reads is bound before ``loop`` (none is a carry,
        a row, or bound by the body's lines so far)."""
        inside = {self.names[v] for v in (*loop.carry_vars, *loop.x_vars) if v in self.names}
        chunk = self.chunks.get(loop)
        if chunk is not None:
            inside |= set(_reads_and_binds(chunk.lines, nested=True)[1])
        return not set(re.findall(r"\w+", comps)) & inside

    def _known_in_range(self, index: Sequence[Term], extents: Shape) -> bool | None:
        """Whether every component is within its extent, when its values are constants
        known now (a constant, or an element of a constant array, which out of range
        reads 0); None when some are not."""
        if not index:
            return None
        within = True
        for component, extent in zip(index, extents, strict=True):
            bounds = self._index_bounds(component)
            if bounds is None:
                return None
            within &= bounds[0] >= 0 and bounds[1] < extent
        return within

    def _index_bounds(self, term: Term) -> tuple[int, int] | None:
        """Bounds of the values ``term`` can take, known now: a constant (an element of
        a constant array, or the 0 read out of its range), an iota, or the position an
        ``argmax``/``argmin``/``argsort`` returns; None otherwise."""
        read_element = False
        while True:
            if isinstance(term, Index):
                term = term.array  # one of its elements, or 0
                read_element = True
                continue
            if isinstance(term, Var) and isinstance(self.binder.get(term), Let):
                term = self.binder[term].bound  # type: ignore[union-attr]
                continue
            if isinstance(term, Let):
                term = term.body
                continue
            break
        match term:
            case Const(value=value) if term.dtype is DType.INT64:
                values = np.append(np.ravel(value), 0) if read_element else np.ravel(value)
                return (int(values.min()), int(values.max())) if values.size else None
            case Iota(size=n) if n > 0:
                return (0, n - 1)
            case ArgMax(array=a) | ArgMin(array=a) | ArgSort(array=a) if a.shape[0] > 0:
                return (0, a.shape[0] - 1)
            case _:
                return None

    def _inline_single_range_checks(self) -> None:
        """A range check only one gather or scatter reads is left to that call."""
        lines = self.chunks[_TOP].lines
        for name in self.range_checks.values():
            pattern = re.compile(rf"\b{name}\b")
            readers = [k for k, line in enumerate(lines) if pattern.search(line)]
            if len(readers) == 2 and not lines[readers[1]].startswith(" "):
                definition, reader = readers  # one call, not in a loop's body
                lines[reader] = lines[reader].replace(f", {name})", ")")
                del lines[definition]

    def _free_after_last_use(self) -> None:
        """``del a, b`` after the statement that reads ``a`` and ``b`` last: each array the
        body names is freed once dead, as a hand-written NumPy function frees its
        temporaries, so that a long program's memory stays that of its live values
        (and the allocator reuses warm memory instead of asking the system for more).
        Reads and bindings are those :func:`_reads_and_binds` sees in each statement."""
        lines = self.chunks[_TOP].lines
        bound: dict[str, int] = {}  # name -> the line of the statement binding it
        last_read: dict[str, int] = {}  # name -> the last line of its last reader
        for start, stop in _statement_spans(lines):
            reads, binds = _reads_and_binds(lines[start:stop])
            for name in reads:
                last_read[name] = stop - 1
            for name in binds:
                bound.setdefault(name, start)
        for name in _reads_and_binds([f"_ = {self.results}"])[0]:
            last_read[name] = len(lines)  # read by the returned tuple: never freed
        # ``v4 = t1`` names one array twice: it is freed after the last read of either
        group_last: dict[str, int] = {}  # the array's first name -> its last read
        for alias, name in self.same_array.items():
            group_last[name] = max(
                group_last.get(name, last_read.get(name, -1)), last_read.get(alias, -1)
            )
        for alias, name in self.same_array.items():
            if group_last[name] >= 0:
                last_read[alias] = last_read[name] = group_last[name]
        dead: dict[int, list[str]] = {}
        checks = set(self.range_checks.values())  # one bool each: nothing to free
        for name, line in bound.items():
            after = last_read.get(name, -1)
            if line < after < len(lines) and name not in checks:
                dead.setdefault(after, []).append(name)
        if dead:
            freed: list[str] = []
            for k, text in enumerate(lines):
                freed.append(text)
                if k in dead:
                    freed.append("del " + ", ".join(dead[k]))
            lines[:] = freed

    def _constant(self, node: Const) -> str:
        """The name of an array constant: ``k1 = constants[0]  # float64[3]: [1. 2. 3.]``
        at the top of the function (the values in the comment only when short)."""
        name = self.constant_names.get(node)
        if name is None:
            name = self.constant_names[node] = self.namer.fresh("k", numbered=True)
            value = node.value
            note = f"{node.dtype}{list(value.shape)}".replace(" ", "")
            if value.size <= 8:
                note += ": " + " ".join(np.array2string(value, separator=" ").split())
            self.constant_lines.append(f"{name} = constants[{len(self.constants)}]  # {note}")
            self.constants.append(value)
        return name

    def _bulk_scope(self, node: Term) -> bool:
        home = self.home[node]
        return home is not None and self.bulk.get(home, False)

    def _expr(self, node: Term) -> tuple[str, int]:
        ref = self._ref
        match node:
            case Const(value=value) if value.ndim == 0:
                return _const_text(value, node.dtype), _ATOM
            case Const():
                return self._constant(node), _ATOM
            case Op(op=op, args=args):
                return self._op(op, args)
            case Cond(cond=c, if_true=a, if_false=b):
                # strict (both branches are computed) and never bool(c): no
                # device-to-host copy on a GPU; batched over an index grid in bulk scopes
                return f"xp.where({ref(c, 0)}, {ref(a, 0)}, {ref(b, 0)})", _ATOM
            case Index(array=a, index=index):
                if self._indexes_its_grid(node):  # a[i, j] over exactly a's grid is a
                    return ref(a, _ATOM), _ATOM
                comps = ", ".join(ref(i, 0) for i in index)
                return f"helpers.index({ref(a, 0)}, [{comps}])", _ATOM
            case SumOuter(array=a):
                return f"xp.sum({ref(a, 0)}, axis=0)", _ATOM
            case Replicate(array=a):
                return f"xp.broadcast_to({ref(a, 0)}, {_shape(node.shape)})", _ATOM
            case Transpose(perm=perm, array=a):
                return f"xp.permute_dims({ref(a, 0)}, {_shape(perm)})", _ATOM
            case Reshape(new_shape=sh, array=a):
                return f"xp.reshape({ref(a, 0)}, {_shape(sh)})", _ATOM
            case FromList(elems=elems):
                return "xp.stack([" + ", ".join(ref(e, 0) for e in elems) + "])", _ATOM
            case Iota(size=n):
                return f"xp.arange({n}, dtype=xp.int64)", _ATOM
            case FromIntegral(array=a, to=to):
                return f"xp.astype({ref(a, 0)}, xp.{to})", _ATOM
            case Floor(array=a):
                return f"helpers.floor({ref(a, 0)})", _ATOM
            case ArgMin(array=a):
                return f"xp.argmin({ref(a, 0)}, axis=0)", _ATOM
            case ArgMax(array=a):
                return f"xp.argmax({ref(a, 0)}, axis=0)", _ATOM
            case ArgSort(array=a):
                return f"xp.argsort({ref(a, 0)}, axis=0, stable=True)", _ATOM
            case Contract(spec=spec, left=a, right=b):
                return f'helpers.contract(xp, "{spec}", {ref(a, 0)}, {ref(b, 0)})', _ATOM
            case Share():
                raise DualarrError(
                    "share nodes are let-converted (Fig. 20) before code generation",
                    op="codegen",
                )
            case Var() | Let() | Build1() | Gather() | Scatter() | MapAccum() | LoopOutput():
                raise AssertionError(f"{type(node).__name__} is emitted elsewhere")
            case Structural():
                return self._structural(node), _ATOM
            case _:
                assert_never(node)

    def _structural(self, node: Structural) -> str:
        """A :class:`~dualarr.lang.terms.Structural` construct calls its one array meaning
        (:data:`dualarr.interp.algebra.ARRAY_MEANINGS`) by its class name:
        ``helpers.meanings['Rev'](xp, a, axis=0)``."""
        ARRAY_MEANINGS[type(node)]  # a construct without one is refused here, by name
        args = [self._ref(kid, 0) for kid in children(node)]
        args += [f"{name}={value!r}" for name, value in node.params.items()]
        return f"helpers.meanings[{type(node).__name__!r}](xp, {', '.join(args)})"

    def _indexes_its_grid(self, node: Index) -> bool:
        """``a[i, j]`` in a bulk lambda ``\\[i, j]`` whose grid is ``a``'s shape."""
        home = self.home[node]
        binder = None if home is None else self.lambdas.get(home)
        if binder is None or not self.bulk.get(binder, False):
            return False
        grid = binder.outer_shape if isinstance(binder, Gather) else binder.array.shape[
            : len(binder.vars)
        ]
        return (
            len(node.index) == len(binder.vars)
            and all(i is v for i, v in zip(node.index, binder.vars, strict=True))
            and node.array.shape == grid
        )

    def _operands(self, node: Term) -> tuple[Term, ...]:
        """What a node's code reads: :meth:`_kids`, except that an elementwise operation
        reads a replicated scalar next to a full array as the scalar (broadcasting), and
        a loop reads its invariants through their variables (lets around it)."""
        if isinstance(node, MapAccum):  # its invariants are read through their lets
            return (*node.inits, *node.xs, *node.body)
        if not isinstance(node, Op):
            return self._kids(node)
        return _broadcast_operands(node.args)

    def _op(self, op: str, args: tuple[Term, ...]) -> tuple[str, int]:
        args = _broadcast_operands(args)
        infix = _INFIX.get(op)
        scalars = [isinstance(a, Const) and a.value.ndim == 0 for a in args]
        literals = infix is not None and not all(scalars)  # two literals make no array

        def ref(node: Term, need: int) -> str:
            # a scalar constant next to an array: a Python literal (a "weak" scalar of the
            # array API, so a float32 array stays float32)
            if literals and isinstance(node, Const) and node.value.ndim == 0:
                literal = _scalar(node.value[()])
                return f"({literal})" if literal.startswith("-") and need > _ADD else literal
            return self._ref(node, need)

        if infix is not None:
            symbol, p = infix
            a, b = args
            if p == _CMP:  # Python chains comparisons: parenthesise both sides
                return f"{ref(a, p + 1)} {symbol} {ref(b, p + 1)}", p
            if p == _POW:
                return f"{ref(a, p + 1)} ** {ref(b, p)}", p
            return f"{ref(a, p)} {symbol} {ref(b, p + 1)}", p
        if op == "stop_gradient":  # the identity once differentiated
            text, precedence, _ = self.text[args[0]]
            return text, precedence
        if op == "neg":
            return f"-{ref(args[0], _UNARY)}", _UNARY
        if op == "recip":
            return f"1.0 / {ref(args[0], _MUL + 1)}", _MUL
        call = _call(op, self.implementations)
        return call + ", ".join(ref(a, 0) for a in args) + ")", _ATOM

    def _emit_indexed(self, node: Gather | Scatter) -> None:
        """Grids (or a loop), the lambda's own lines, then the gather/scatter call."""
        inner = self.chunks.pop(node, _Chunk([]))
        if isinstance(node, Gather):
            view = _slice_view(node)
            if view is not None:  # a strided view: no index arrays at all
                subscripts, perm = view
                if perm is None and self._slice_pending(node, subscripts):
                    return
                expr = f"{self._ref(node.array, _ATOM)}[{subscripts}]"
                if perm is not None:
                    expr = f"xp.permute_dims({expr}, {_shape(perm)})"
                self.text[node] = (self._view(node, expr), _ATOM, 0)
                self.owner.setdefault(self.text[node][0], node)
                return
        if isinstance(node, Scatter) and not inner.lines:
            target = _slice_target(node)
            if target is not None:  # zeros, then one slice assigned: no index arrays
                subscripts, perm = target
                value = self._ref(node.array, 0)
                if perm is not None:
                    value = f"xp.permute_dims({value}, {_shape(perm)})"
                result = self.namer.fresh("t", numbered=True)
                lines = self._lines(node)
                lines.append(
                    f"{result} = xp.zeros({_shape(node.shape)}, dtype=xp.{node.dtype})"
                )
                lines.append(f"{result}[{subscripts}] = {value}")
                self.text[node] = (result, _ATOM, 0)
                return
        for var in node.vars:
            if var not in self.names:
                self.names[var] = self.namer.fresh(var.hint)
        names = [self.names[v] for v in node.vars]
        kind = "gather" if isinstance(node, Gather) else "scatter"
        grid = node.outer_shape if isinstance(node, Gather) else node.array.shape[: len(node.vars)]
        result = self.namer.fresh("t", numbered=True)
        lines = self._lines(node)
        params = ", ".join(names)
        if self.bulk[node]:
            lines.append(
                f"# {kind} {list(node.outer_shape)} (\\[{params}]. ...): index grids, bulk index"
            )
            parts = [self._ref(i, 0) for i in node.index]
            used = " ".join([*inner.lines, *parts])
            if any(re.search(rf"\b{name}\b", used) for name in names):
                lines.append(f"{_targets(names)} = helpers.grid({_shape(grid)})")
            lines.extend(inner.lines)
            if self.home[node] is _TOP:
                local = [*names, *_reads_and_binds(inner.lines)[1]]
                parts = [self._shared_component(c, local, lines) for c in parts]
            comps = "[" + ", ".join(parts) + "]"
        else:
            cols = f"{result}_ix"
            lines.append(
                f"# {kind} {list(node.outer_shape)} (\\[{params}]. ...): the index function "
                "is not scalar index work (it computes arrays from its variables), "
                "so it is evaluated point by point"
            )
            lines.append(f"{cols} = helpers.columns({len(node.index)})")
            lines.append(
                f"for {_targets(names) if names else '_'} in helpers.points({_shape(grid)}):"
            )
            body = [*inner.lines]
            body += [f"{cols}[{k}].append({self._ref(i, 0)})" for k, i in enumerate(node.index)]
            lines.extend("    " + line for line in body or ["pass"])
            comps = f"helpers.from_points({cols}, {_shape(grid)})"
        array = self._ref(node.array, 0)
        extents = node.array.shape[: len(node.index)] if isinstance(node, Gather) else (
            node.outer_shape[: len(node.index)]
        )
        check = self._range_check(node, comps, extents)
        if isinstance(node, Gather):
            call = f"helpers.gather({array}, {comps}, {_shape(node.outer_shape)}{check})"
        else:
            call = (
                f"helpers.scatter({array}, {comps}, {_shape(node.outer_shape)}, "
                f"{len(node.vars)}{check})"
            )
        lines.append(f"{result} = {call}")
        self.text[node] = (result, _ATOM, 0)
        self.owner[result] = node

    def _emit_loop(self, loop: MapAccum) -> None:
        """A loop (horde-ad's mapAccum; not in the paper) as a Python ``for`` around its
        body's lines, so the program's size does not depend on the number of steps.

        Before it: each carry's name bound to its initial value, each ys stack allocated
        (``xp.empty``; a Python list of rows where only loops read it, :meth:`_row_lists`).
        Each step binds the row of every xs it reads, runs the body's lines (the
        innermost scope of what reads the loop's variables: names, kernels), writes its
        row of every stack, then rebinds every carry in one assignment, so
        that no next carry reads another's new value.  The invariants are lets around
        the loop (:meth:`_analyse`): what the body computes from them alone was placed
        before it.  Nothing is written in place but the fresh stacks, and each name
        holds its array, so a recycled kernel buffer is never one a carry (or a list of
        rows) still holds."""
        count = len(loop.carry_vars)
        carries = [self._binder_name(v) for v in loop.carry_vars]
        rows = [self._ref(y, 0) for y in loop.ys]
        nexts = [self._ref(c, 0) for c in loop.carry_outs]
        body = self.chunks.pop(loop, _Chunk([])).lines
        inits = [self._ref(i, 0) for i in loop.inits]
        xs = [self._named(x) for x in loop.xs]
        lines = self._lines(loop)
        lines.extend(f"{c} = {i}" for c, i in zip(carries, inits, strict=True))
        stacks = [self.namer.fresh("ys", numbered=True) for _ in loop.ys]
        listed = [
            any(out.loop is loop and out.index == count + o for out in self.row_lists)
            for o in range(len(stacks))
        ]
        for stack, shape, dtype, as_list in zip(
            stacks, loop.shapes[count:], loop.dtypes[count:], listed, strict=True
        ):
            if as_list:
                lines.append(f"{stack} = [None] * {loop.length}")
            else:
                lines.append(f"{stack} = xp.empty({_shape(shape)}, dtype=xp.{dtype})")
        step = self.namer.fresh("step", numbered=True)
        order = f"{loop.length - 1}, -1, -1" if loop.reverse else str(loop.length)
        lines.append(f"for {step} in range({order}):")
        block = [
            f"{self.names[v]} = {x}[{step}]"
            if self._listed(term)
            else f"{self.names[v]} = {x}[{step}, ...]"
            for v, x, term in zip(loop.x_vars, xs, loop.xs, strict=True)
            if v in self.names  # a row the body reads
        ]
        block += body
        block += [
            f"{s}[{step}] = {y}" if as_list else f"{s}[{step}, ...] = {y}"
            for s, y, as_list in zip(stacks, rows, listed, strict=True)
        ]
        changed = [(c, n) for c, n in zip(carries, nexts, strict=True) if c != n]
        if changed:
            targets = ", ".join(c for c, _ in changed)
            block.append(f"{targets} = " + ", ".join(n for _, n in changed))
        lines.extend("    " + line for line in block or ["pass"])
        self.loop_names[loop] = [*carries, *stacks]

    def _listed(self, term: Term) -> bool:
        """Whether ``term`` (seen through lets) is a ys result kept as a list of rows."""
        while True:
            if isinstance(term, Let):
                term = term.body
            elif isinstance(term, Var) and isinstance(self.binder.get(term), Let):
                bound = self.binder[term]
                assert isinstance(bound, Let)
                term = bound.bound
            else:
                return term in self.row_lists

    def _binder_name(self, var: Var) -> str:
        """The name of a variable a loop binds (given now when its body never reads it)."""
        if var not in self.names:
            self.names[var] = self.namer.fresh(var.hint)
        return self.names[var]

    def _named(self, node: Term) -> str:
        """The node's text, given a name first when it is an expression."""
        text = self._ref(node, 0)
        if not text.isidentifier():
            self._bind(node, text)
            text = self.text[node][0]
        return text


def _operation_count(expr: KernelExpr) -> int:
    count, stack = 0, [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Apply):
            count += 1
            stack.extend(e.args)
    return count


@dataclass(frozen=True)
class GeneratedCode:
    """The source of ``def name(xp, helpers, constants, *inputs)`` and the table of array
    constants it reads (``constants[k]``): arrays are data, never literals in the source.
    ``parameters``, ``statements`` and ``results`` are the same function in parts: its
    parameter names, its body's top-level statements and its returned tuple.  ``kernels``
    are the fused kernels it calls by name (``kernel1(xp, a, b)``, listed as comments at
    the top of the body); ``implementations`` the primitives' implementations it calls
    as ``implementations[name](xp, …)`` (user-defined ones, bound when generated)."""

    source: str
    constants: tuple[np.ndarray, ...]
    name: str = "program"
    parameters: tuple[str, ...] = ()
    statements: tuple[str, ...] = ()
    results: str = "()"
    kernels: tuple[Kernel, ...] = ()
    implementations: tuple[tuple[str, Callable[..., Any]], ...] = ()


def generate(
    inputs: Sequence[Var],
    outputs: Sequence[Term],
    name: str = "program",
    bindings: Sequence[tuple[Var, Term]] = (),
    fuse: bool | None = None,
) -> GeneratedCode:
    """Python source of ``def name(xp, helpers, constants, *inputs)`` returning the
    outputs (§7.5), with its constant table.

    ``outputs`` must be closed over ``inputs`` and the ``bindings`` (a let-program's
    top-level ``let``s, each one line named after its variable) and free of ``build1``.
    ``fuse`` (default: the ``fuse`` setting, :mod:`dualarr.lang.config`) groups
    elementwise float64 work into kernels (:mod:`dualarr.codegen.kernels`).
    """
    terms = distinct_binders([*(t for _, t in bindings), *outputs])
    count = len(bindings)
    renamed = [(v, t) for (v, _), t in zip(bindings, terms[:count], strict=True)]
    generator = _Generator(
        inputs, terms[count:], name, renamed, config.fuse if fuse is None else fuse
    )
    source = generator.generate()
    return GeneratedCode(
        source,
        tuple(generator.constants),
        name,
        generator.parameters,
        generator.statements(),
        generator.results,
        tuple(generator.kernels),
        tuple(generator.implementations.items()),
    )


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_BINDING = re.compile(r"\(?([A-Za-z_]\w*(?:, *[A-Za-z_]\w*)*),?\)? = ")


def _statement_spans(lines: Sequence[str]) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of each top-level statement of a generated body: a line at the
    left margin and the indented lines of its block."""
    start = None
    for k, line in enumerate(lines):
        if not line.startswith(" "):
            if start is not None:
                yield start, k
            start = k
    if start is not None:
        yield start, len(lines)


def _reads_and_binds(statement: Sequence[str], nested: bool = False) -> tuple[set[str], list[str]]:
    """The names a top-level statement of generated code may read, and those it binds
    (``t1 = ...``, ``i1, j1 = ...``, ``(i1,) = ...``).  The reads are every identifier
    outside comment lines and the statement's own binding targets: more than the names
    read (an attribute, a word of a string), which can only keep a value longer, never
    free it early.  A name bound inside a block (a loop's body rebinding its carries,
    which may run no step) counts as read, and as bound only when ``nested``."""
    reads: set[str] = set()
    binds: list[str] = []
    for k, line in enumerate(statement):
        text = line.lstrip()
        if text.startswith("#"):
            continue
        binding = _BINDING.match(text)
        if binding is not None:
            targets = _IDENTIFIER.findall(binding.group(1))
            if k == 0 or nested:
                binds.extend(targets)
            if k > 0:
                reads.update(targets)
            text = text[binding.end() :]
        reads.update(_IDENTIFIER.findall(text))
    return reads, binds


SEGMENT_STATEMENTS = 1000
"""Top-level statements compiled as one unit at most (:func:`compile_function`)."""

_RESULTS = "__dualarr_results__"


def compile_function(code: GeneratedCode) -> Callable[..., tuple[Any, ...]]:
    """The generated function, compiled.

    A body of at most :data:`SEGMENT_STATEMENTS` statements is compiled as the
    ``def`` of ``code.source``.  A longer one runs as consecutive segments of that many
    statements, each compiled on its own as a function of the names it reads from the
    parameters and earlier segments, returning the names later segments read: the same
    statements in the same order, on fast local variables, and each value dropped after
    the last segment that reads it.  CPython's ``compile()`` of one unit grows faster
    than its length (about 12-13x the time for 10x the lines on a 2-core x86-64 machine,
    against 10.3x for ten separate units, and its memory with it), so segments keep code
    generation linear.
    """
    where = f"<dualarr.codegen.generate {code.name}>"
    kernels = {kernel.name: CompiledKernel(kernel) for kernel in code.kernels}
    namespace: dict[str, Any] = dict(kernels)
    namespace["implementations"] = dict(code.implementations)
    if len(code.statements) <= SEGMENT_STATEMENTS:
        exec(compile(code.source, where, "exec"), namespace)
        function: Callable[..., tuple[Any, ...]] = namespace[code.name]
        return function
    plan = _segments(code, namespace, where)
    parameters = code.parameters

    def segmented(*arguments: Any) -> tuple[Any, ...]:
        values = dict(zip(parameters, arguments, strict=True))
        for segment in plan[:-1]:
            written = segment.function(*[values[name] for name in segment.reads])
            values.update(zip(segment.writes, written, strict=True))
            for name in segment.drops:
                del values[name]
        final = plan[-1]
        results: tuple[Any, ...] = final.function(*[values[name] for name in final.reads])
        return results

    segmented.__name__ = segmented.__qualname__ = code.name
    return segmented


@dataclass(frozen=True)
class _Segment:
    """One compiled piece of a long body: ``writes = function(*reads)``, after which the
    names no later segment reads are dropped."""

    function: Callable[..., Any]
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    drops: tuple[str, ...]


def _segments(code: GeneratedCode, namespace: dict[str, Any], where: str) -> list[_Segment]:
    """The body's statements in pieces of :data:`SEGMENT_STATEMENTS`, each a function of
    the names it reads (:func:`_reads_and_binds`) from the parameters and the earlier
    pieces, returning those a later piece reads (a loop's carries, rebound in its block,
    included)."""
    statements = [*code.statements, f"{_RESULTS} = {code.results}"]
    pieces = [
        statements[start : start + SEGMENT_STATEMENTS]
        for start in range(0, len(statements), SEGMENT_STATEMENTS)
    ]
    loads: list[set[str]] = []
    stores: list[set[str]] = []
    for piece in pieces:
        load: set[str] = set()
        store: set[str] = set()
        for statement in piece:
            read, bind = _reads_and_binds(statement.split("\n"), nested=True)
            load |= read
            store.update(bind)
        loads.append(load)
        stores.append(store)
    last_read = {name: k for k, load in enumerate(loads) for name in load}  # the latest
    available = set(code.parameters)
    plan: list[_Segment] = []
    for k, piece in enumerate(pieces):
        reads = tuple(sorted(loads[k] & available))
        writes = tuple(sorted(n for n in stores[k] if last_read.get(n, -1) > k))
        last = k == len(pieces) - 1
        body = piece[:-1] if last else piece
        tail = f"return {code.results}" if last else (
            "return (" + "".join(f"{name}, " for name in writes) + ")"
        )
        name = f"{code.name}_segment{k + 1}"
        lines = [f"def {name}({', '.join(reads)}):"]
        lines += ["    " + line for text in body for line in text.split("\n")]
        lines.append("    " + tail)
        unit = compile("\n".join(lines) + "\n", f"{where[:-1]} segment {k + 1}>", "exec")
        exec(unit, namespace)
        drops = tuple(n for n in reads if last_read[n] == k)
        available.difference_update(drops)
        available.update(writes)
        plan.append(_Segment(namespace[name], reads, writes, drops))
    return plan


class CompiledProgram:
    """Generated source, compiled once; calling it runs the program on NumPy arrays."""

    def __init__(
        self,
        inputs: Sequence[Var],
        outputs: Sequence[Term],
        name: str = "program",
        bindings: Sequence[tuple[Var, Term]] = (),
        fuse: bool | None = None,
    ) -> None:
        self.inputs = tuple(inputs)
        self.output_dtypes = tuple(t.dtype.numpy() for t in outputs)
        self.output_shapes = tuple(t.shape for t in outputs)
        self.name = name
        code = generate(inputs, outputs, name, bindings, fuse)
        self.source = code.source
        self.constants = code.constants
        self.kernels = code.kernels
        self.spares = tuple(SpareBuffer() for _ in outputs)  # where copied results go
        self._constants_on: dict[str, tuple[Any, ...]] = {"numpy": code.constants}
        self.function: Callable[..., tuple[Any, ...]] = compile_function(code)

    def constants_on(self, backend: Backend) -> tuple[Any, ...]:
        """The constant table as arrays of ``backend`` (moved there once)."""
        table = self._constants_on.get(backend.name)
        if table is None:
            xp = backend.xp
            table = self._constants_on[backend.name] = tuple(xp.asarray(c) for c in self.constants)
        return table

    def __call__(self, *arrays: Any, backend: Backend | None = None) -> tuple[Any, ...]:
        """Run on arrays of one backend (NumPy by default, else the arrays' own)."""
        from ..interp.backends import backend_of

        if len(arrays) != len(self.inputs):
            raise DualarrError(
                f"{self.name} takes {len(self.inputs)} arrays, got {len(arrays)}", op="codegen"
            )
        backend = backend if backend is not None else backend_of(arrays)
        if backend.name == "numpy":
            with np.errstate(all="ignore"):
                values = self.function(
                    np, HELPERS, self.constants, *(np.asarray(a) for a in arrays)
                )
            return tuple(
                np.asarray(v).astype(dt, copy=False)
                for v, dt in zip(values, self.output_dtypes, strict=True)
            )
        xp = backend.xp
        arguments = (xp.asarray(a) for a in arrays)
        values = self.function(xp, helpers_for(backend), self.constants_on(backend), *arguments)
        return tuple(
            xp.astype(xp.asarray(v), getattr(xp, str(dt)))
            for v, dt in zip(values, self.output_dtypes, strict=True)
        )

    def __repr__(self) -> str:
        return f"<CompiledProgram {self.name}: {self.source.count(chr(10))} lines>"


def compile_program(
    inputs: Sequence[Var],
    outputs: Sequence[Term],
    name: str = "program",
    bindings: Sequence[tuple[Var, Term]] = (),
    fuse: bool | None = None,
) -> CompiledProgram:
    """:func:`generate` then ``exec`` once: a callable over NumPy arrays (``fuse``: see
    :func:`generate`)."""
    return CompiledProgram(inputs, outputs, name, bindings, fuse)
