"""Build it yourself: the kit for ``notebooks/from-scratch/``, one connected mini pipeline.

The learner writes each stage of the paper's pipeline over one mini language
(:mod:`.terms`, :mod:`.delta`): (a) tracing and the total evaluator, (b) the bot, (c)
dual arrays and the reverse pass, (d) compile-time differentiation and share→let, (e)
code generation to NumPy, (f) transposition as a linear language, (g) vmap.  Each stage
consumes the previous one (:func:`stage`, mine or the reference) and is graded task by
task (:func:`check`, :func:`progress`, ``python -m dualarr.teach.scratch check``) with
dualarr as the oracle.
"""

from __future__ import annotations

from .grading import STAGES, Mismatch, attempt, check, count_calls, progress, tasks_of
from .notebooks import StageLoadError, stage

__all__ = [
    "STAGES",
    "Mismatch",
    "StageLoadError",
    "attempt",
    "check",
    "count_calls",
    "progress",
    "stage",
    "tasks_of",
]
