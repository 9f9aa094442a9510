"""Fresh, unique names for variables and shared nodes, from their hints.

The printer (``x``, ``t1``, ``v2``) and code generation (Python identifiers) both name
what a term binds; one :class:`Namer` does it for both.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable


class Namer:
    """Unique names from hints: a hint itself while unused (unless ``numbered``), else
    the hint with the next free number.  With ``identifiers`` every name is a valid
    Python identifier that is not a keyword."""

    def __init__(self, reserved: Iterable[str] = (), *, identifiers: bool = False) -> None:
        self.used: set[str] = set(reserved)
        self.counters: dict[str, int] = {}
        self.identifiers = identifiers

    def fresh(self, hint: str, *, numbered: bool = False) -> str:
        base = hint or "v"
        if self.identifiers:
            base = re.sub(r"\W", "_", base)
            if base[0].isdigit():
                base = "v" + base
            if keyword.iskeyword(base) or keyword.issoftkeyword(base):
                base += "_"
        if not numbered and base not in self.used:
            self.used.add(base)
            return base
        n = self.counters.get(base, 0)
        while True:
            n += 1
            name = f"{base}{n}"
            if name not in self.used:
                break
        self.counters[base] = n
        self.used.add(name)
        return name
