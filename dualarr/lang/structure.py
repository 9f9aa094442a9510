"""Structure read off a constructor's dataclass fields: which fields hold children (one,
or a tuple of them), how to read them fast, and how to rebuild a node with new ones.

Terms (:mod:`dualarr.lang.terms`) and Deltas (:mod:`dualarr.ad.delta`) both derive their
``children`` and ``with_children`` from here, so a new constructor of either needs no
entry in a hand-kept list: its field types say which fields are children.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Structure", "structure_of"]


@dataclass(frozen=True)
class Structure:
    """A constructor's child fields (name, whether a tuple of children), in declaration
    order, and its other constructor fields; ``read`` gives the children of a node."""

    cls: type
    children: tuple[tuple[str, bool], ...]
    statics: tuple[str, ...]
    read: Callable[[Any], tuple[Any, ...]]

    def rebuild(self, node: Any, kids: Sequence[Any], **statics: Any) -> Any:
        """``node`` with new children (in :attr:`read`'s order) and, where given, new
        values of other fields; the constructor checks the new node."""
        if not self.children and not statics:
            return node
        values: dict[str, Any] = {name: getattr(node, name) for name in self.statics}
        values.update(statics)
        at = 0
        for name, many in self.children:
            if many:
                count = len(getattr(node, name))
                values[name] = tuple(kids[at : at + count])
                at += count
            else:
                values[name] = kids[at]
                at += 1
        return self.cls(**values)

    def make(self, kids: Sequence[Any], statics: Mapping[str, Any]) -> Any:
        """A new node of this constructor from its children (in :attr:`read`'s order;
        a field holding a tuple of children takes those the single ones leave) and the
        values of its other fields."""
        values = dict(statics)
        spare = len(kids) - sum(1 for _, many in self.children if not many)
        at = 0
        for name, many in self.children:
            count = spare if many else 1
            values[name] = tuple(kids[at : at + count]) if many else kids[at]
            at += count
        return self.cls(**values)

    def statics_of(self, node: Any) -> dict[str, Any]:
        """The values of ``node``'s other constructor fields (its parameters), by name."""
        return {name: getattr(node, name) for name in self.statics}


def structure_of(cls: type, child: str, children: str) -> Structure:
    """The structure of dataclass ``cls`` whose fields annotated ``child`` (one child) or
    ``children`` (a tuple of them) are its children; fields with ``init=False`` (a shape
    the constructor computes) are neither."""
    kids, statics = [], []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.type in (child, children):
            kids.append((f.name, f.type == children))
        else:
            statics.append(f.name)
    fields = tuple(kids)
    return Structure(cls, fields, tuple(statics), _reader(fields))


def _reader(fields: tuple[tuple[str, bool], ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The fastest reader of the children (the hottest function of every pass): an
    ``attrgetter`` where the fields allow one."""
    names = tuple(name for name, _ in fields)
    if not fields:
        return lambda node: ()
    if len(fields) == 1:
        ((name, many),) = fields
        read = operator.attrgetter(name)
        return read if many else lambda node: (read(node),)
    if not any(many for _, many in fields):
        return operator.attrgetter(*names)

    def spliced(node: Any) -> tuple[Any, ...]:
        kids: list[Any] = []
        for name, many in fields:
            value = getattr(node, name)
            if many:
                kids.extend(value)
            else:
                kids.append(value)
        return tuple(kids)

    return spliced
