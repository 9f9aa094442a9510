"""``da.pipeline``: every stage of the pipeline for one function and input types.

Stages so far (``shared/DESIGN.md`` §1): ``source`` (the traced core term),
``bot_steps`` (the bot's rule trace), ``vectorised`` (the bulk term after the bot and
simplification, Theorem 5.1 checked).  Each stage prints in the paper's notation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .bot import BotStep, check_bot_normal, vectorise
from .program import Program, trace
from .simplify import simplify


def vectorise_program(program: Program, *, record: bool = False) -> tuple[Program, list[BotStep]]:
    """The bot and the simplifier on a traced program: no ``build1`` is left."""
    result = vectorise(program.outputs, program.supply, record=record)
    terms = simplify(list(result.terms), program.supply)
    check_bot_normal(terms)
    vectorised = Program(
        program.name, program.inputs, tuple(terms), program.tuple_output, program.supply
    )
    return vectorised, result.steps


class Pipeline:
    """All stages of the pipeline for ``f`` traced on ``args`` (arrays or ShapeSpecs)."""

    STAGES = ("source", "bot_steps", "vectorised")

    def __init__(self, f: Callable[..., Any], *args: Any) -> None:
        self.function = f
        self.source: Program = trace(f, *args)
        self.vectorised, self.bot_steps = vectorise_program(self.source, record=True)

    @property
    def stages(self) -> tuple[str, ...]:
        return self.STAGES

    def __str__(self) -> str:
        parts = [f"== source  {self.source.signature()}", str(self.source), ""]
        parts.append(f"== bot_steps  ({len(self.bot_steps)} rule applications)")
        parts += [f"{s.number}. {s.rule} ({s.figure})" for s in self.bot_steps]
        parts += ["", "== vectorised", str(self.vectorised)]
        return "\n".join(parts)

    def __repr__(self) -> str:
        return (
            f"<Pipeline {self.source.name} {self.source.signature()}: "
            f"{len(self.bot_steps)} bot steps, stages {', '.join(self.stages)}>"
        )

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"


def pipeline(f: Callable[..., Any], *args: Any) -> Pipeline:
    """Trace ``f`` on ``args`` and run every stage (see :class:`Pipeline`)."""
    return Pipeline(f, *args)
