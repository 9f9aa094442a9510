"""Grading the build-it-yourself track task by task (MiniTorch's ``pytest -m taskN_M``,
in a notebook cell and on the command line).

A task is one function (or a few) that the learner writes; its check runs the learner's
code, usually on dualarr's random programs, and either passes or reports one
:class:`Mismatch`: which program, which element, what dualarr expected, what the
learner's code gave, and a hint that names the paper's rule without giving the answer.
``check("a.evaluate")`` in a notebook grades the definitions in that notebook;
:func:`progress` grades a whole stage; ``python -m dualarr.teach.scratch check`` grades
the saved notebooks.  A check never raises: a stub that raises ``NotImplementedError``,
or code that fails, is reported as a failed task with its hint.
"""

from __future__ import annotations

import importlib
import inspect
import reprlib
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "STAGES",
    "Mismatch",
    "Outcome",
    "Task",
    "attempt",
    "check",
    "count_calls",
    "count_lines",
    "expect_close",
    "learner_error_lines",
    "progress",
    "run_task",
    "task",
    "tasks_of",
]

T = TypeVar("T")

STAGES: dict[str, str] = {
    "a": "a-tracing-and-evaluation",
    "b": "b-bulk-operation-transform",
    "c": "c-dual-arrays",
    "d": "d-compile-time",
    "e": "e-code-generation",
    "f": "f-transposition",
    "g": "g-vmap",
}
"""The stages in order, each with its notebook's file stem."""


class Mismatch(Exception):
    """What a check found: the learner's code disagrees with dualarr (or with the paper's
    promise) on one program."""

    def __init__(
        self,
        what: str,
        *,
        hint: str,
        program: str | None = None,
        inputs: Mapping[str, Any] | None = None,
        element: str | None = None,
        expected: Any = None,
        obtained: Any = None,
    ) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint
        self.program = program
        self.inputs = dict(inputs or {})
        self.element = element
        self.expected = expected
        self.obtained = obtained

    def lines(self) -> list[str]:
        """The report, one line per fact."""
        out = [self.what]
        if self.program is not None:
            out.append(f"program:  {self.program}")
        for name, value in self.inputs.items():
            out.append(f"input:    {name} = {_short(value)}")
        if self.element is not None:
            out.append(f"element:  {self.element}")
        if self.expected is not None or self.obtained is not None:
            out.append(f"expected: {_short(self.expected)}")
            out.append(f"obtained: {_short(self.obtained)}")
        out.append(f"hint:     {self.hint}")
        return out


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        with np.printoptions(precision=4, suppress=True, threshold=20, edgeitems=3):
            return " ".join(repr(value).split())
    return reprlib.repr(value)


@dataclass(frozen=True)
class Task:
    """One graded task: the learner's ``names``, checked by ``run`` on a namespace."""

    id: str
    names: tuple[str, ...]
    title: str
    hint: str
    run: Callable[[Mapping[str, Any]], str]

    @property
    def stage(self) -> str:
        return self.id.split(".", 1)[0]


_TASKS: dict[str, Task] = {}


def task(
    id: str, *, names: Iterable[str], title: str, hint: str
) -> Callable[[Callable[[Mapping[str, Any]], str]], Callable[[Mapping[str, Any]], str]]:
    """Register a check: a function of the learner's namespace that returns what it
    verified (one line) or raises :class:`Mismatch`."""

    def register(run: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], str]:
        _TASKS[id] = Task(id, tuple(names), title, hint, run)
        return run

    return register


def tasks_of(stage: str) -> list[Task]:
    """The tasks of one stage, in the order the notebook sets them."""
    if stage not in STAGES:
        raise KeyError(f"no stage {stage!r}: the stages are {', '.join(STAGES)}")
    importlib.import_module(f"{__package__}.checks_{stage}")
    return [t for t in _TASKS.values() if t.stage == stage]


def _task(id: str) -> Task:
    stage = id.split(".", 1)[0]
    known = {t.id: t for t in tasks_of(stage)} if stage in STAGES else {}
    if id not in known:
        raise KeyError(f"no task {id!r}; the tasks are: {', '.join(known) or ', '.join(STAGES)}")
    return known[id]


@dataclass(frozen=True)
class Outcome:
    """A task's result: passed, and the report's lines."""

    task: Task
    passed: bool
    lines: list[str] = field(default_factory=list)

    def report(self, detail: bool = True) -> str:
        mark = "✔" if self.passed else "✘"
        head = f"{mark} {self.task.id}: {self.task.title}"
        if not detail:
            return head
        return "\n".join([head, *(f"    {line}" for line in self.lines)])


def run_task(t: Task, namespace: Mapping[str, Any]) -> Outcome:
    """Run one check on ``namespace``; every failure is an :class:`Outcome`, never an
    exception."""
    missing = [name for name in t.names if name not in namespace]
    if missing:
        return Outcome(t, False, [f"{', '.join(missing)} not defined", f"hint:     {t.hint}"])
    try:
        with np.errstate(all="ignore"):
            verified = t.run(namespace)
    except Mismatch as found:
        return Outcome(t, False, found.lines())
    except NotImplementedError:
        written = [n for n in t.names if not _raises_not_implemented(namespace[n])]
        todo = [n for n in t.names if n not in written]
        return Outcome(
            t,
            False,
            [f"not written yet: {', '.join(todo or t.names)} (NotImplementedError)",
             f"hint:     {t.hint}"],
        )
    except RecursionError:
        return Outcome(t, False, ["your code recursed without end (RecursionError)",
                                  f"hint:     {t.hint}"])
    except Exception as error:  # the learner's code failed: say where, in their code
        return Outcome(t, False, [*learner_error_lines(error), f"hint:     {t.hint}"])
    return Outcome(t, True, [verified])


def _raises_not_implemented(f: Any) -> bool:
    try:
        source = inspect.getsource(f)
    except (OSError, TypeError):
        return False
    return "raise NotImplementedError" in source


def learner_error_lines(error: Exception) -> list[str]:
    """What a check reports of an exception the learner's code raised: the line
    ``your code raised Type: message`` and, when a frame outside the library (the
    learner's code) is on the traceback, the line ``at: function, line n: source``."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if not _is_library(f.filename)]
    where = mine[-1] if mine else (frames[-1] if frames else None)
    head = f"your code raised {type(error).__name__}: {error}"
    if where is None:
        return [head]
    return [head, f"at:       {where.name}, line {where.lineno}: {where.line}"]


_LIBRARY_ROOTS = tuple(
    str(Path(p).resolve())
    for p in (Path(__file__).parents[2], Path(np.__file__).parents[1],
              Path(inspect.__file__).parent)
)


def _is_library(filename: str) -> bool:
    return filename.startswith(_LIBRARY_ROOTS) or filename.startswith("<frozen")


def _caller_namespace(depth: int = 2) -> dict[str, Any]:
    frame: FrameType | None = sys._getframe(depth)
    assert frame is not None
    return frame.f_globals


def check(id: str, namespace: Mapping[str, Any] | None = None) -> None:
    """Grade task ``id`` (``"a.evaluate"``) on the caller's definitions (or
    ``namespace``) and print the report."""
    outcome = run_task(_task(id), _caller_namespace() if namespace is None else namespace)
    # a failure goes to standard error: what an autograder (nbgrader) reads as no points
    print(outcome.report(), file=sys.stdout if outcome.passed else sys.stderr)


def progress(stage: str, namespace: Mapping[str, Any] | None = None) -> list[Outcome]:
    """Grade every task of ``stage`` and print one line per task and the count."""
    scope = _caller_namespace() if namespace is None else namespace
    outcomes = [run_task(t, scope) for t in tasks_of(stage)]
    passed = sum(o.passed for o in outcomes)
    print(f"stage {stage} ({STAGES[stage]}): {passed}/{len(outcomes)} tasks pass")
    for o in outcomes:
        print("  " + o.report(detail=False))
    return _QuietList(outcomes)


class _QuietList(list[Outcome]):
    def __repr__(self) -> str:
        return ""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        return None


class NotYet:
    """What :func:`attempt` gives for a demonstration whose code is not written yet or
    fails: it reads as a note where the result would be printed."""

    def __init__(self, note: str) -> None:
        self.note = note

    def __repr__(self) -> str:
        return self.note

    __str__ = __repr__


def attempt(run: Callable[[], T]) -> T | NotYet:
    """Run a demonstration that uses the learner's code: its result, or a note (a
    :class:`NotYet`) when that code is not written yet or fails, so that a notebook never
    stops on it."""
    try:
        with np.errstate(all="ignore"):
            return run()
    except NotImplementedError:
        return NotYet("(not written yet: runs once the functions above are filled in)")
    except Exception as error:
        return NotYet("(" + "; ".join(learner_error_lines(error)) + ")")


def count_calls(run: Callable[[], T]) -> tuple[T, int]:
    """``run()`` and the number of Python calls it made in the learner's code (every
    function not defined in dualarr, NumPy or the standard library): the work a
    complexity check counts."""
    calls = 0
    library: dict[Any, bool] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call":
            code = frame.f_code
            known = library.get(code)
            if known is None:
                known = library[code] = _is_library(code.co_filename)
            if not known:
                calls += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(previous)
    return result, calls


def count_lines(run: Callable[[], T]) -> tuple[T, int]:
    """``run()`` and the number of Python lines it ran outside dualarr, NumPy and the
    standard library (the learner's code and the code it generated): work that
    :func:`count_calls` misses, a loop over elements inside one call."""
    lines = 0
    library: dict[Any, bool] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line":
            lines += 1
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        known = library.get(code)
        if known is None:
            known = library[code] = _is_library(code.co_filename)
        return None if known else local

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = run()
    finally:
        sys.settrace(previous)
    return result, lines


def expect_close(
    expected: Any,
    obtained: Any,
    *,
    what: str,
    hint: str,
    program: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> None:
    """Raise :class:`Mismatch` naming the first element where ``obtained`` differs from
    ``expected`` (shapes first)."""
    want = np.asarray(expected)
    got = np.asarray(obtained) if obtained is not None else None
    if got is None or got.shape != want.shape:
        raise Mismatch(
            f"{what}: shape {None if got is None else list(got.shape)}, "
            f"expected {list(want.shape)}",
            hint=hint, program=program, inputs=inputs,
            expected=want, obtained=obtained,
        )  # fmt: skip
    if got.dtype == object:
        raise Mismatch(f"{what}: an array of Python objects, expected numbers", hint=hint,
                       program=program, inputs=inputs, expected=want, obtained=got)
    close = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                       equal_nan=True)
    if not close.all():
        at = tuple(int(j) for j in np.argwhere(~close)[0])
        raise Mismatch(
            f"{what}: {int((~close).sum())} of {want.size} elements differ",
            hint=hint, program=program, inputs=inputs, element=str(list(at)),
            expected=want[at], obtained=got[at],
        )  # fmt: skip
