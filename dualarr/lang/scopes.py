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

from .terms import Let, Term, Var, bound_vars, children


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


def nesting(order: Sequence[Term], roots: Iterable[Term], *, lets: bool) -> dict[Term, int]:
    """The binder nesting of every node of ``order`` (children before parents): the
    longest path from a root, counting each scoped position entered (a ``let``'s body
    only when ``lets``)."""
    depth: dict[Term, int] = {r: 0 for r in roots}
    for node in reversed(order):
        here = depth.get(node, 0)
        scoped = bound_vars(node)[1] if lets or not isinstance(node, Let) else ()
        for position, kid in enumerate(children(node)):
            inner = here + (1 if position in scoped else 0)
            if inner > depth.get(kid, -1):
                depth[kid] = inner
    return depth


class Scopes:
    """Where each node of a DAG lives: :meth:`home` is the innermost binder whose
    variables the node mentions (``None``: the top level).

    One pass over ``order`` (children, and let-bound terms, before their users) finds,
    for each node, the variables it mentions freely *that are bound by some scope*:
    inputs and top-level lets (home ``None``) are left out, so each set holds at most
    the variables of the binders around the node, and the pass is linear in the DAG
    for any number of top-level bindings."""

    def __init__(
        self,
        order: Sequence[Term],
        roots: Iterable[Term],
        binder: dict[Var, Term],
        *,
        lets_are_scopes: bool,
    ) -> None:
        self.binder = binder
        self.lets_are_scopes = lets_are_scopes
        self.nesting = nesting(order, roots, lets=lets_are_scopes)
        self._home: dict[Term, Term | None] = {}
        self._scoped: dict[Term, frozenset[Var]] = {}
        self._scope: dict[Var, Term | None] = {}
        none: frozenset[Var] = frozenset()
        for node in order:
            if isinstance(node, Var):
                scope = self._scope_of(node)
                scoped = none if scope is None else frozenset((node,))
            else:
                kids = children(node)
                if not kids:
                    scoped = none
                elif len(kids) == 1:
                    scoped = self._scoped[kids[0]]
                else:
                    scoped = frozenset().union(*(self._scoped[k] for k in kids))
                own = bound_vars(node)[0]
                if own and not scoped.isdisjoint(own):
                    scoped = scoped.difference(own)
            self._scoped[node] = scoped
            home: Term | None = None
            for var in scoped:
                candidate = self._scope[var]
                if self.depth(candidate) > self.depth(home):
                    home = candidate
            self._home[node] = home

    def depth(self, scope: Term | None) -> int:
        """How deeply ``scope`` (a binder, or ``None`` for the top level) is nested."""
        return 0 if scope is None else self.nesting.get(scope, 0) + 1

    def _scope_of(self, var: Var) -> Term | None:
        """The scope a variable is visible from: its binder, or the home of a let's
        bound term when lets are aliases; ``None`` for an input."""
        if var not in self._scope:
            binder = self.binder.get(var)
            if isinstance(binder, Let) and not self.lets_are_scopes:
                self._scope[var] = self._home[binder.bound]
            else:
                self._scope[var] = binder
        return self._scope[var]

    def home(self, node: Term) -> Term | None:
        return self._home[node]

    def scoped_free_vars(self, node: Term) -> frozenset[Var]:
        """The variables ``node`` mentions that a binder of the DAG binds outside it
        (a root's are the variables used outside their scope: none in a closed term)."""
        return self._scoped[node]
