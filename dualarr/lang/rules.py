"""Per-construct rule tables: how a stage learns a construct without growing a ``match``.

Each stage that treats the constructs one by one (the simplifier's smart constructors,
the bot's ``build1`` and index rules, the printer, the derivative and transpose rules,
code generation, …) keeps a :class:`RuleTable` keyed by the construct's class, and
dispatches through it.  A construct's rules are registered beside the rest of that
stage's rules, or all together in the construct's own module (as JAX's ``lax.py``
registers a primitive's shape, JVP, transpose and batching rules side by side, and
Autodidax keeps one rule table per interpretation), so adding a construct is local: it
registers a rule in each table and no stage's code changes.

Every table is listed in :data:`TABLES`, so a test can check that each construct of the
language has a rule in each stage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from .errors import UnsupportedError

__all__ = ["TABLES", "RuleTable"]

R = TypeVar("R", bound=Callable[..., Any])


class RuleTable(Generic[R]):
    """The rules of one stage (``stage`` names it in messages), one per construct class.

    ``table.register(Transpose)`` is a decorator that files a rule; ``table[type(node)]``
    finds it — the rule of the construct's class, else of its nearest base class that
    has one (a rule filed for :class:`~dualarr.lang.terms.Structural` serves every
    construct of its own module that files none, e.g. printing it by name and
    parameters) — and a construct the stage has no rule for is an
    :class:`~dualarr.lang.errors.UnsupportedError` naming both.  A rule may serve
    several constructs (``register(ArgMin, ArgMax)``); a construct has one rule per
    table.  A table with a ``default`` (an analysis that may say "unknown") answers it
    for a construct without a rule of its own; a table without one is *complete*: every
    construct the stage meets must have a rule."""

    def __init__(self, stage: str, default: R | None = None) -> None:
        self.stage = stage
        self.default = default
        self._rules: dict[type, R] = {}
        self._inherited: dict[type, R | None] = {}
        TABLES.append(self)

    @property
    def complete(self) -> bool:
        """Whether every construct needs a rule here (no default)."""
        return self.default is None

    def register(self, *constructs: type) -> Callable[[R], R]:
        """File the decorated function as the rule of each of ``constructs``."""

        def add(rule: R) -> R:
            for construct in constructs:
                if construct in self._rules:
                    raise ValueError(f"{self.stage}: {construct.__name__} has a rule already")
                self._rules[construct] = rule
            self._inherited.clear()
            return rule

        return add

    def __getitem__(self, construct: type) -> R:
        rule = self._rules.get(construct) or self._inherit(construct)
        if rule is None:
            raise UnsupportedError(
                f"the construct {construct.__name__} has no {self.stage} rule",
                op=self.stage,
            )
        return rule

    def get(self, construct: type) -> R | None:
        """The rule of ``construct`` (its own, inherited, or the default), ``None`` when
        it has none."""
        return self._rules.get(construct) or self._inherit(construct)

    def _inherit(self, construct: type) -> R | None:
        """The rule of ``construct``'s nearest base class that has one, else the default."""
        if construct not in self._inherited:
            bases = (self._rules.get(base) for base in construct.__mro__[1:])
            self._inherited[construct] = next((r for r in bases if r is not None), self.default)
        return self._inherited[construct]

    def __contains__(self, construct: object) -> bool:
        """Whether ``construct`` has a rule of its own or of a base class (not the default)."""
        if not isinstance(construct, type):
            return False
        return any(cls in self._rules for cls in construct.__mro__)

    def __iter__(self) -> Iterator[type]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def __repr__(self) -> str:
        return f"RuleTable({self.stage!r}, {len(self._rules)} constructs)"


TABLES: list[RuleTable[Any]] = []
"""Every rule table, in the order the stages made them."""
