"""Settings that change how the pipeline runs, never what it computes (cf. ``jax.config``).

``check_stages``: after each stage, check the invariant its output must satisfy: bot
normal form (Theorem 5.1), the extracted Delta form of Eq. 6, the let program's scoping
(Fig. 21).  Each check is one more walk over the program, so it is off by default, like
``jax_enable_checks``; the test suite turns it on, and so does ``DUALARR_CHECK_STAGES=1``
in the environment::

    da.config.update("check_stages", True)
    with da.config.checking_stages(): ...
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

    def update(self, name: str, value: bool) -> None:
        """Set one setting by name (an unknown name is an error, not a new attribute)."""
        known = {f.name: f.type for f in fields(self)}
        if name not in known:
            raise DualarrError(
                f"unknown setting {name!r}; the settings are {', '.join(sorted(known))}",
                op="config.update",
            )
        if not isinstance(value, bool):
            raise DualarrError(f"{name} takes True or False, got {value!r}", op="config.update")
        setattr(self, name, value)

    @contextmanager
    def checking_stages(self, on: bool = True) -> Iterator[None]:
        """``check_stages`` set to ``on`` inside the ``with`` block."""
        before = self.check_stages
        self.check_stages = on
        try:
            yield
        finally:
            self.check_stages = before


config = Config()
