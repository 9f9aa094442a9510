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
from types import TracebackType

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIPPED = {"dualarr", "numpy"}  # frames of these modules are never the user's line


def user_location() -> str | None:
    """``file:line: source`` of the innermost stack frame outside the dualarr package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        module = str(frame.f_globals.get("__name__", ""))
        inside = (
            filename.startswith(_PACKAGE_DIR + os.sep)
            or module.split(".")[0] in _SKIPPED
            or frame.f_code.co_filename.startswith("<frozen importlib")  # a lazy import
            or frame.f_code.co_filename.startswith("<dualarr.")  # generated code
        )
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


class MissingDependencyError(UnsupportedError, ImportError):
    """A feature needs an optional package that is not installed (also an
    ``ImportError``); ``module`` names the package, ``extra`` the pip extra that
    installs it (``pip install 'dualarr[extra]'``)."""

    def __init__(
        self,
        message: str,
        *,
        module: str,
        extra: str,
        op: str | None = None,
        location: str | None = None,
    ) -> None:
        self.module = module
        self.extra = extra
        super().__init__(message, op=op, location=location)


class UnsupportedDtypeError(DtypeError, UnsupportedError):
    """An element type dualarr does not support (float16, complex, strings, objects):
    both a :class:`DtypeError` and an :class:`UnsupportedError`."""


class PrimitiveError(DualarrError):
    """A user-defined primitive (``da.primitive``) that is not well formed: ``primitive``
    names it.  The subclasses say what was wrong."""

    def __init__(
        self, message: str, *, primitive: str, location: str | None = None
    ) -> None:
        self.primitive = primitive
        super().__init__(message, op=f"primitive {primitive}", location=location)


class PrimitiveDefinitionError(PrimitiveError):
    """``da.primitive`` given something it cannot take: a name that is not an identifier
    (or is a built-in primitive's), partials not a tuple of one function per argument,
    or an implementation or partial that cannot take its arguments."""


class PartialDerivativeError(PrimitiveError):
    """A partial derivative of a user-defined primitive that failed on the algebra it
    is written over (``np.cos(x)`` instead of ``m.cos(x)``) or returned something that
    is not a value of it (``None``)."""


class PrimitiveResultError(PrimitiveError, ShapeError):
    """A user-defined primitive's implementation whose result is not its arguments'
    (broadcast) shape: elementwise work maps each element to one element."""


class PrimitiveRedefinedError(PrimitiveError):
    """A stage asked of an object made before a primitive it calls was defined again
    (a :class:`~dualarr.Pipeline` builds its later stages on demand): building it from
    the new definition would mix two definitions in one object."""


def traceback_location(traceback: TracebackType | None) -> str | None:
    """``file:line: source`` of the innermost frame of ``traceback`` outside dualarr and
    NumPy (where a user's function raised), or None."""
    found: str | None = None
    while traceback is not None:
        frame = traceback.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] not in _SKIPPED:
            lineno = traceback.tb_lineno
            source = linecache.getline(frame.f_code.co_filename, lineno).strip()
            where = f"{frame.f_code.co_filename}:{lineno}"
            found = f"{where}: {source}" if source else where
        traceback = traceback.tb_next
    return found
