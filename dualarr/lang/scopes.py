"""Scopes of a term DAG: which binder each variable has, how deeply each node is nested
in binders, and the innermost scope each node can live in (``book/rules.md §5.3``).

A DAG shares nodes, so a node has no one parent: its *nesting* is the longest path from a
root, counting the binders (``build1``, the index functions of ``gather``/``scatter``,
``let``) entered on the way, and its *home* is the innermost binder among those of the
variables it mentions — the outermost place where it can be computed once.  The printer
places a shared node's ``let`` there, and codegen emits its statement there; both read
this one analysis.  Codegen treats a ``let`` as an alias rather than a scope: a node
mentioning a let-bound variable lives where the let's bound term lives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .terms import FreeVars, Let, Term, Var, bound_vars, children


def collect_binders(nodes: Iterable[Term]) -> tuple[dict[Var, Term], set[Var]]:
    """The binder of each variable bound among ``nodes``, and the variables that two
    distinct binders bind (e.g. after the bot's ``build1``-op rule, Fig. 9)."""
    binder: dict[Var, Term] = {}
    rebound: set[Var] = set()
    for node in nodes:
        for var in bound_vars(node)[0]:
            if binder.get(var, node) is not node:
                rebound.add(var)
            binder[var] = node
    return binder, rebound


def nesting(order: Sequence[Term], roots: Iterable[Term], *, lets: bool) -> dict[int, int]:
    """The binder nesting of every node of ``order`` (children before parents): the
    longest path from a root, counting each scoped position entered (a ``let``'s body
    only when ``lets``)."""
    depth: dict[int, int] = {id(r): 0 for r in roots}
    for node in reversed(order):
        here = depth.get(id(node), 0)
        scoped = bound_vars(node)[1] if lets or not isinstance(node, Let) else ()
        for position, kid in enumerate(children(node)):
            inner = here + (1 if position in scoped else 0)
            if inner > depth.get(id(kid), -1):
                depth[id(kid)] = inner
    return depth


class Scopes:
    """Where each node of a DAG lives: :meth:`home` is the innermost binder whose
    variables the node mentions (``None``: the top level)."""

    def __init__(
        self,
        order: Sequence[Term],
        roots: Iterable[Term],
        binder: dict[Var, Term],
        free_vars: FreeVars,
        *,
        lets_are_scopes: bool,
    ) -> None:
        self.binder = binder
        self.free_vars = free_vars
        self.lets_are_scopes = lets_are_scopes
        self.nesting = nesting(order, roots, lets=lets_are_scopes)
        self._home: dict[int, Term | None] = {}
        for node in order:  # children (and let-bound terms) before their users
            self._home[id(node)] = self._innermost(node)

    def depth(self, scope: Term | None) -> int:
        """How deeply ``scope`` (a binder, or ``None`` for the top level) is nested."""
        return 0 if scope is None else self.nesting.get(id(scope), 0) + 1

    def scope_of(self, var: Var) -> Term | None:
        """The scope a variable is visible from: its binder, or the home of a let's
        bound term when lets are aliases; ``None`` for an input."""
        binder = self.binder.get(var)
        if isinstance(binder, Let) and not self.lets_are_scopes:
            return self.home(binder.bound)
        return binder

    def home(self, node: Term) -> Term | None:
        if id(node) in self._home:
            return self._home[id(node)]
        return self._innermost(node)

    def _innermost(self, node: Term) -> Term | None:
        home: Term | None = None
        for var in self.free_vars(node):
            scope = self.scope_of(var)
            if self.depth(scope) > self.depth(home):
                home = scope
        return home
