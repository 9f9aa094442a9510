"""Errors raised by dualarr.

Every error is a :class:`DualarrError`.  Messages name the operation, the shapes
involved and, where it can be found, the line of user code that asked for it, so a
mistake is reported where it was made (at trace time), never as a NumPy traceback
from deep inside an evaluator.
"""

from __future__ import annotations

import linecache
import os
import sys
from collections.abc import Sequence

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIPPED = {"dualarr", "numpy"}  # frames of these modules are never the user's line


def user_location() -> str | None:
    """``file:line: source`` of the innermost stack frame outside the dualarr package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        module = str(frame.f_globals.get("__name__", ""))
        inside = filename.startswith(_PACKAGE_DIR + os.sep) or module.split(".")[0] in _SKIPPED
        if not inside:
            lineno = frame.f_lineno
            source = linecache.getline(frame.f_code.co_filename, lineno).strip()
            where = f"{frame.f_code.co_filename}:{lineno}"
            return f"{where}: {source}" if source else where
        frame = frame.f_back  # type: ignore[assignment]
    return None


def format_shape(shape: Sequence[int]) -> str:
    """Shapes print as in the paper: ``[2,3]`` (rank 0 is ``[]``)."""
    return "[" + ",".join(str(d) for d in shape) + "]"


class DualarrError(Exception):
    """Base class of every error raised by dualarr.

    ``op`` is the operation that failed, ``shapes`` the shapes it was given and
    ``location`` the user's ``file:line`` (found automatically).
    """

    def __init__(
        self,
        message: str,
        *,
        op: str | None = None,
        shapes: Sequence[Sequence[int]] = (),
        location: str | None = None,
    ) -> None:
        self.op = op
        self.shapes = tuple(tuple(s) for s in shapes)
        self.location = location if location is not None else user_location()
        self.detail = message
        text = f"{op}: {message}" if op else message
        if self.location:
            text += f"\n  at {self.location}"
        super().__init__(text)


class ShapeError(DualarrError):
    """Shapes (or ranks) that do not fit the operation, found at trace time."""


class IndexOutOfRangeError(ShapeError):
    """A static index outside its axis (NumPy's rule, found at trace time; a traced
    index out of range reads 0 instead, paper §5.2).  ``index``, ``axis`` and
    ``array_shape`` say which."""

    def __init__(
        self,
        index: int,
        axis: int,
        array_shape: Sequence[int],
        *,
        op: str = "index",
        location: str | None = None,
    ) -> None:
        self.index = index
        self.axis = axis
        self.array_shape = tuple(array_shape)
        super().__init__(
            f"index {index} is out of bounds for axis {axis} with size {array_shape[axis]} "
            f"(array shape {format_shape(array_shape)})",
            op=op,
            shapes=[array_shape],
            location=location,
        )


class DtypeError(DualarrError):
    """Element types that do not fit the operation (e.g. a float used as an index)."""


class TracingError(DualarrError):
    """Python control flow on a traced value, a leaked tracer, or a bad traced function."""


class UnsupportedError(DualarrError):
    """A construct or input that dualarr does not support (with what to use instead)."""


class UnsupportedDtypeError(DtypeError, UnsupportedError):
    """An element type dualarr does not support (float16, complex, strings, objects):
    both a :class:`DtypeError` and an :class:`UnsupportedError`."""
