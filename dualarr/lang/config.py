"""Settings that change how the pipeline runs, never what it computes (cf. ``jax.config``).

``check_stages``: after each stage, check the invariant its output must satisfy: bot
normal form (Theorem 5.1), the extracted Delta form of Eq. 6, the let program's scoping
(Fig. 21).  Each check is one more walk over the program, so it is off by default, like
``jax_enable_checks``; the test suite turns it on, and so does ``DUALARR_CHECK_STAGES=1``
in the environment::

    da.config.update("check_stages", True)
    with da.config.checking_stages(): ...

``fuse``: generate fused kernels for elementwise float64 work (:mod:`dualarr.codegen.kernels`;
numexpr on NumPy, ``ElementwiseKernel`` on CuPy).  On by default; off
(``DUALARR_FUSE=0``, ``da.config.update("fuse", False)`` or ``with
da.config.fusing(False): ...``) the generated program calls one array function per
operation: the unfused program, kept for teaching and as the oracle of the fused one.
``fuse_min_size`` (``DUALARR_FUSE_MIN_SIZE``, default 65,536): arrays of fewer elements
are not fused, since one NumPy call on them costs less than a kernel call (the test
suite sets it to 1, so that its small programs run through the kernels).
``vector_math`` (``DUALARR_VECTOR_MATH``, default on): a kernel of ``sin`` or ``cos``
calls Intel's Vector Math Library (``mkl_umath``, the ``vml`` extra) when it is installed,
within 1 ulp of NumPy's result; read when a gradient program is compiled.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields

from .errors import DualarrError

__all__ = ["Config", "config"]


@dataclass
class Config:
    """The settings; read them as attributes, change them with :meth:`update`."""

    check_stages: bool = os.environ.get("DUALARR_CHECK_STAGES", "") not in ("", "0")
    fuse: bool = os.environ.get("DUALARR_FUSE", "1") not in ("", "0")
    fuse_min_size: int = int(os.environ.get("DUALARR_FUSE_MIN_SIZE", "65536"))
    vector_math: bool = os.environ.get("DUALARR_VECTOR_MATH", "1") not in ("", "0")

    def update(self, name: str, value: bool | int) -> None:
        """Set one setting by name (an unknown name is an error, not a new attribute)."""
        known = {f.name: f.type for f in fields(self)}
        if name not in known:
            raise DualarrError(
                f"unknown setting {name!r}; the settings are {', '.join(sorted(known))}",
                op="config.update",
            )
        if known[name] in ("int", int):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise DualarrError(
                    f"{name} takes a non-negative int, got {value!r}", op="config.update"
                )
        elif not isinstance(value, bool):
            raise DualarrError(f"{name} takes True or False, got {value!r}", op="config.update")
        setattr(self, name, value)

    @contextmanager
    def checking_stages(self, on: bool = True) -> Iterator[None]:
        """``check_stages`` set to ``on`` inside the ``with`` block."""
        with self._set("check_stages", on):
            yield

    @contextmanager
    def fusing(self, on: bool = True) -> Iterator[None]:
        """``fuse`` set to ``on`` inside the ``with`` block."""
        with self._set("fuse", on):
            yield

    @contextmanager
    def _set(self, name: str, on: bool) -> Iterator[None]:
        before = getattr(self, name)
        self.update(name, on)
        try:
            yield
        finally:
            setattr(self, name, before)


config = Config()
