"""``da.pipeline``: every stage of the pipeline for one function and input types.

The stages of the pipeline (README, "Modules (one per stage)"), each an attribute that
prints in the paper's notation:

========== ==================================================== =====================
stage      what it is                                           module
========== ==================================================== =====================
source     the traced core term                                 :mod:`dualarr.lang.program`
bot_steps  the bot's rule trace (rule, figure, before, after)   :mod:`dualarr.vectorise.bot`
vectorised the bulk term: no ``build1`` (Theorem 5.1)           :mod:`dualarr.vectorise.bot`
forward    D with symbolic primals: value term + Delta          :mod:`dualarr.ad.symbolic_forward`
delta      Eq. 6: primal bindings, value, Delta over variables  :mod:`dualarr.ad.extraction`
shared     the symbolic reverse pass: gradient with ``share``   :mod:`dualarr.ad.symbolic_reverse`
gradient   share → let + wrapper, simplified (Figs. 20–21)      :mod:`dualarr.ad.share_to_let`
kernels    the fused elementwise kernels the source calls       :mod:`dualarr.codegen.kernels`
python     the generated source over an array namespace         :mod:`dualarr.codegen.generate`
========== ==================================================== =====================

Calling the pipeline runs the compiled gradient: ``p(*arrays, cotangent=1.0)`` returns
``(value, grads)`` with one gradient per float input.

``da.pipeline(f, *args, contractions=False)`` skips the one kit extension that changes
the shape of the Delta of the paper's Fig. 18: recognising a sum of products as a
contraction (``dot0``, matmul) before differentiation.  The vectorised term keeps its
``sumOuter (a * b)`` and the Delta is built from the paper's constructors (``SumOuter``,
``Add``, ``Scale``, ``Gather``) instead of ``Contract``; the gradient is the same.

``da.pipeline(f, *args, fuse=False)`` generates the unfused program (one array call per
operation, no ``kernels``); ``fuse=True`` fuses; the default follows the ``fuse`` setting
(:mod:`dualarr.lang.config`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .ad.extraction import ExtractedDelta, extract
from .ad.share_to_let import LetProgram, share_to_let, simplify_let_program
from .ad.symbolic_forward import ForwardPass, forward_pass
from .ad.symbolic_reverse import SharedGradient, symbolic_reverse
from .codegen.buffers import SpareBuffer, copy_into_spare
from .codegen.generate import HELPERS, CompiledProgram, helpers_for
from .codegen.kernels import Kernel
from .interp.arrays import Backend
from .interp.backends import backend_of
from .lang.config import config
from .lang.errors import DualarrError, PrimitiveRedefinedError, ShapeError
from .lang.primitives import REGISTRY, Primitive, UserImplementation
from .lang.program import Program, trace
from .lang.terms import Const, Op, postorder, substitute, type_name, view
from .vectorise.bot import BotStep, check_bot_normal, vectorise
from .vectorise.simplify import simplify

__all__ = [
    "CompiledGradient",
    "FusedKernels",
    "Pipeline",
    "compile_gradient",
    "pipeline",
    "vectorise_program",
]


def vectorise_program(
    program: Program, *, record: bool = False, contractions: bool = True
) -> tuple[Program, list[BotStep]]:
    """The bot and the simplifier on a traced program: no ``build1`` is left.  Without
    ``contractions`` sums of products stay ``sumOuter`` (the paper's Fig. 18)."""
    result = vectorise(program.outputs, program.supply, record=record)
    terms = simplify(list(result.terms), program.supply, contractions=contractions)
    if config.check_stages:
        check_bot_normal(terms)
    vectorised = Program(
        program.name, program.inputs, tuple(terms), program.tuple_output, program.supply
    )
    return vectorised, result.steps


@dataclass(frozen=True)
class GradientStages:
    """The compile-time stages after the bot, for one vectorised program."""

    forward: ForwardPass
    delta: ExtractedDelta
    shared: SharedGradient
    gradient: LetProgram


def gradient_stages(
    vectorised: Program,
    positions: Sequence[int] | None = None,
    *,
    unit_cotangent: bool = False,
    value: bool = True,
) -> GradientStages:
    """forward → delta (Eq. 6) → shared (Fig. 19) → gradient (Figs. 20–21, simplified),
    differentiating the inputs at ``positions`` (default: every float input).

    With ``unit_cotangent`` (``grad`` of a rank-0 output: the cotangent is always 1) the
    constant 1 replaces ``dt`` before simplification, so ``1 * e`` disappears; ``dt``
    stays a parameter, unused.  Without ``value`` (``grad``, which discards it) the
    primal output is the constant 0, so simplification drops what only it needed."""
    forward = forward_pass(vectorised)
    extracted = extract(forward)
    shared = symbolic_reverse(extracted, positions)
    let_program = share_to_let(shared)
    if unit_cotangent:
        let_program = _with_unit_cotangent(let_program)
    if not value:
        out = vectorised.outputs[0]
        zero = Const(np.zeros(out.shape, dtype=out.dtype.numpy()))
        let_program = replace(let_program, outputs=(zero, *let_program.outputs[1:]))
    gradient = simplify_let_program(let_program)
    return GradientStages(forward, extracted, shared, gradient)


def _with_unit_cotangent(program: LetProgram) -> LetProgram:
    dt = program.inputs[-1]
    if dt.shape != ():
        raise DualarrError("a unit cotangent needs a rank-0 output", op="pipeline")
    one = Const(np.ones((), dtype=dt.dtype.numpy()))
    terms = substitute(program.terms(), {dt: one})
    count = len(program.bindings)
    bindings = tuple((v, t) for (v, _), t in zip(program.bindings, terms[:count], strict=True))
    return replace(program, bindings=bindings, outputs=tuple(terms[count:]))


class CompiledGradient:
    """The gradient program compiled to Python: ``(value, grads) = g(*arrays, ct)``.
    ``fuse`` (default: the ``fuse`` setting) groups its elementwise work into kernels
    (§7.5, :mod:`dualarr.codegen.kernels`)."""

    def __init__(
        self, program: Program, gradient: LetProgram, fuse: bool | None = None
    ) -> None:
        self.program = program
        self.gradient = gradient
        self.compiled = CompiledProgram(
            gradient.inputs, gradient.outputs, gradient.name, gradient.bindings, fuse
        )
        self._types = {k: (v.shape, v.dtype.numpy()) for k, v in enumerate(program.inputs)}
        out = program.outputs[0]
        self._out_type = (out.shape, out.dtype.numpy())

    @property
    def source(self) -> str:
        return self.compiled.source

    @property
    def positions(self) -> tuple[int, ...]:
        return self.gradient.positions

    def __call__(
        self, *arrays: Any, cotangent: Any = 1.0, backend: Backend | None = None
    ) -> tuple[Any, tuple[Any, ...]]:
        """``(value, grads)`` for ``arrays``, checked against the traced input types, on
        ``backend`` (default: the arrays' own, NumPy for NumPy arrays and numbers)."""
        env = self.program.bind(*arrays)
        values = [env[v] for v in self.program.inputs]
        backend = backend if backend is not None else backend_of(values)
        out = self.program.outputs[0]
        xp = np if backend.name == "numpy" else backend.xp
        ct = xp.asarray(cotangent, dtype=getattr(xp, out.dtype.value))
        if tuple(ct.shape) != out.shape:
            if tuple(ct.shape) == ():
                ct = xp.broadcast_to(ct, out.shape)
            else:
                raise ShapeError(
                    f"cotangent of shape {list(ct.shape)} for an output of type "
                    f"{type_name(out.shape, out.dtype)}",
                    op="pipeline",
                    shapes=[tuple(ct.shape), out.shape],
                )
        return self.run(values, ct, backend)

    def run(
        self, values: Sequence[Any], cotangent: Any, backend: Backend | None = None
    ) -> tuple[Any, tuple[Any, ...]]:
        """The program on arrays already of the traced types (no checks)."""
        if backend is not None and backend.name != "numpy":
            return self._run_on(backend, values, cotangent)
        with np.errstate(all="ignore"):
            value, *grads = self.compiled.function(
                np, HELPERS, self.compiled.constants, *values, cotangent
            )
        spares = self.compiled.spares
        taken = [*values]  # no result aliases an input or another result of this call
        taken.append(_fresh(value, *self._out_type, taken, spares[0]))
        for j, (k, g) in enumerate(zip(self.positions, grads, strict=True)):
            taken.append(_fresh(g, *self._types[k], taken, spares[1 + j]))
        return taken[len(values)], tuple(taken[len(values) + 1 :])

    def _run_on(
        self, backend: Backend, values: Sequence[Any], cotangent: Any
    ) -> tuple[Any, tuple[Any, ...]]:
        xp = backend.xp
        constants = self.compiled.constants_on(backend)
        value, *grads = self.compiled.function(
            xp, helpers_for(backend), constants, *values, cotangent
        )

        taken = [*values]  # no result is an input or another result of this call

        def fresh(array: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
            array = xp.asarray(array)
            target = getattr(xp, dtype.name)
            if array.dtype != target:
                array = xp.astype(array, target)
            if tuple(array.shape) != shape or any(array is x for x in taken):
                array = xp.asarray(xp.broadcast_to(array, shape), copy=True)
            taken.append(array)
            return array

        first = fresh(value, *self._out_type)
        pairs = zip(self.positions, grads, strict=True)
        return first, tuple(fresh(g, *self._types[k]) for k, g in pairs)

    def __repr__(self) -> str:
        return f"<CompiledGradient {self.gradient.name}: {len(self.gradient.bindings)} bindings>"


def _fresh(
    array: Any,
    shape: tuple[int, ...],
    dtype: np.dtype[Any],
    inputs: Sequence[Any],
    spare: SpareBuffer,
) -> Any:
    """``array`` as a writeable array of ``shape`` and ``dtype`` that aliases no input: a
    result the generated code allocated (or a view of one) is returned as it is,
    anything else (a broadcast, an input or a view of one) is copied, a large one into
    the output's recycled buffer (:class:`dualarr.codegen.buffers.SpareBuffer`)."""
    if (
        isinstance(array, np.ndarray)
        and array.shape == shape
        and array.dtype == dtype
        and array.flags.writeable
        and not any(np.may_share_memory(array, x) for x in inputs)
    ):
        return array
    if math.prod(shape) >= config.fuse_min_size:
        return copy_into_spare(spare, array, shape, dtype)
    return np.array(np.broadcast_to(array, shape), dtype=dtype)


def compile_gradient(
    vectorised: Program,
    positions: Sequence[int] | None = None,
    *,
    unit_cotangent: bool = False,
    value: bool = True,
) -> CompiledGradient:
    """All compile-time stages and code generation for a vectorised program (with
    ``value=False`` the program returns 0 for the value and computes only gradients)."""
    stages = gradient_stages(vectorised, positions, unit_cotangent=unit_cotangent, value=value)
    return CompiledGradient(vectorised, stages.gradient)


@dataclass(frozen=True)
class FusedKernels:
    """The ``kernels`` stage: the fused elementwise kernels the generated gradient
    program calls (§7.5), one per line as ``kernel1(x, v3, dt) = cos(x) * v3 * dt
    : float64[1000]``; ``fused`` says whether fusion was on, so an empty listing says
    why it is empty."""

    kernels: tuple[Kernel, ...]
    fused: bool = True

    def __str__(self) -> str:
        if self.kernels:
            return "\n".join(str(kernel) for kernel in self.kernels)
        if not self.fused:
            return "no fused kernels: fusion is off"
        return "no fused kernels: no elementwise group worth a kernel"

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def graph(self) -> Any:
        """Each kernel's expression tree as a graphviz drawing, one box per kernel
        (:mod:`dualarr.show.drawing`)."""
        return view("kernel_graph")(self.kernels, note=str(self))


class Pipeline:
    """All stages of the pipeline for ``f`` traced on ``args`` (arrays or ShapeSpecs).

    With ``contractions=False`` the simplifier before differentiation does not turn a
    sum of products into a contraction (a kit extension), so ``delta`` is the paper's
    (Fig. 18: ``SumOuter``, ``Add``, ``Scale``, ``Gather``); every later stage, the
    compiled gradient included, is derived from that vectorised term.  ``fuse``
    (default: the ``fuse`` setting when the pipeline is made) says whether the compiled
    gradient fuses elementwise work into the kernels of the ``kernels`` stage (§7.5).
    The later stages are built on first use; if a user's primitive the source calls has
    been defined again since it was traced (``da.primitive``), building one raises
    :class:`~dualarr.lang.errors.PrimitiveRedefinedError` rather than mixing two
    definitions (a stage built before keeps the old definition whole).
    """

    STAGES = (
        "source",
        "bot_steps",
        "vectorised",
        "forward",
        "delta",
        "shared",
        "gradient",
        "kernels",
        "python",
    )

    def __init__(
        self,
        f: Callable[..., Any],
        *args: Any,
        contractions: bool = True,
        fuse: bool | None = None,
    ) -> None:
        self.function = f
        self.contractions = contractions
        self.fuse: bool = config.fuse if fuse is None else fuse
        self.source: Program = trace(f, *args)
        self._primitives = _user_primitives(self.source)
        self.vectorised, self.bot_steps = vectorise_program(
            self.source, record=True, contractions=contractions
        )
        out = self.vectorised.outputs
        self.differentiable = (
            not self.vectorised.tuple_output and len(out) == 1 and out[0].dtype.is_float
        )
        self._stages: GradientStages | None = None
        self._compiled: CompiledGradient | None = None

    def _check_primitives(self) -> None:
        """A :class:`PrimitiveRedefinedError` when a user's primitive the source calls
        has been defined again since it was traced: a stage built now would mix two
        definitions (the vectorised term already folded constants with the old one)."""
        for name, record in self._primitives.items():
            if REGISTRY.get(name) != record:
                raise PrimitiveRedefinedError(
                    f"{name} was defined again after this pipeline was traced; make the "
                    "pipeline again (da.pipeline) to see the new definition",
                    primitive=name,
                )

    def _gradient_stages(self) -> GradientStages:
        if self._stages is None:
            self._check_primitives()
            if not self.differentiable:
                shapes = ", ".join(type_name(t.shape, t.dtype) for t in self.vectorised.outputs)
                raise DualarrError(
                    f"the gradient stages need one float output, got {shapes}",
                    op="pipeline",
                    shapes=[t.shape for t in self.vectorised.outputs],
                )
            self._stages = gradient_stages(self.vectorised)
        return self._stages

    @property
    def forward(self) -> ForwardPass:
        """D with symbolic primals (§7, App. D): the value term and its Delta."""
        return self._gradient_stages().forward

    @property
    def delta(self) -> ExtractedDelta:
        """The form of Eq. 6: primal bindings, the value, the Delta over variables."""
        return self._gradient_stages().delta

    @property
    def shared(self) -> SharedGradient:
        """The symbolic reverse pass (Fig. 19): gradient terms with ``share`` nodes."""
        return self._gradient_stages().shared

    @property
    def gradient(self) -> LetProgram:
        """``λ(inputs, dt). let … in (value, gradient…)`` (Figs. 20–21), simplified."""
        return self._gradient_stages().gradient

    @property
    def compiled(self) -> CompiledGradient:
        if self._compiled is None:
            self._check_primitives()
            self._compiled = CompiledGradient(self.vectorised, self.gradient, self.fuse)
        return self._compiled

    @property
    def kernels(self) -> FusedKernels:
        """The fused kernels the generated source calls (§7.5): elementwise float64
        work, one numexpr (CPU) or CuPy (GPU) kernel each; none when ``fuse`` is off."""
        return FusedKernels(tuple(self.compiled.compiled.kernels), self.fuse)

    @property
    def python(self) -> str:
        """The generated Python source of the gradient program (§7.5), calling the
        ``kernels`` when fused."""
        return self.compiled.source

    @property
    def constants(self) -> tuple[np.ndarray, ...]:
        """The array constants the generated source reads as ``constants[k]`` (named
        ``k<k+1>`` there): arrays are data passed at call time, not literals."""
        return self.compiled.compiled.constants

    def __call__(self, *arrays: Any, cotangent: Any = 1.0) -> tuple[Any, tuple[Any, ...]]:
        """``(value, grads)`` from the compiled gradient program, one per float input."""
        return self.compiled(*arrays, cotangent=cotangent)

    @property
    def stages(self) -> tuple[str, ...]:
        return self.STAGES if self.differentiable else self.STAGES[:3]

    def __str__(self) -> str:
        parts = [f"== source  {self.source.signature()}", str(self.source), ""]
        parts.append(f"== bot_steps  ({len(self.bot_steps)} rule applications)")
        parts += [f"{s.number}. {s.rule} ({s.figure})" for s in self.bot_steps]
        parts += ["", "== vectorised", str(self.vectorised)]
        if self.differentiable:
            for stage in ("forward", "delta", "shared", "gradient", "kernels", "python"):
                parts += ["", f"== {stage}", str(getattr(self, stage)).rstrip("\n")]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return (
            f"<Pipeline {self.source.name} {self.source.signature()}: "
            f"{len(self.bot_steps)} bot steps, stages {', '.join(self.stages)}>"
        )

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"


def _user_primitives(program: Program) -> dict[str, Primitive]:
    """The records of the user-defined primitives ``program`` calls, as they are now."""
    return {
        node.op: REGISTRY[node.op]
        for node in postorder(program.outputs)
        if isinstance(node, Op) and isinstance(REGISTRY[node.op].impl, UserImplementation)
    }


def pipeline(
    f: Callable[..., Any], *args: Any, contractions: bool = True, fuse: bool | None = None
) -> Pipeline:
    """Trace ``f`` on ``args`` and make every stage available (see :class:`Pipeline`).

    ``contractions=False`` keeps sums of products as ``sumOuter`` before differentiation
    (no ``dot0``/matmul ``Contract``, a kit extension), so the Delta is the paper's, as in
    Fig. 18: ``SumOuter (Add (Scale …) (Scale … (Gather …)))``.  The gradient is the same.

    ``fuse`` (default: the ``fuse`` setting, :mod:`dualarr.lang.config`) generates the
    gradient program with its elementwise work fused into kernels (§7.5, the ``kernels``
    stage); ``fuse=False`` gives the unfused program, one array call per operation."""
    return Pipeline(f, *args, contractions=contractions, fuse=fuse)
