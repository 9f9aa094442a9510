"""Deep recursion without the Python stack: memoised recursive generators, trampolined.

A recursive pass is written as a generator: where it would call itself it ``yield``s
the request instead and receives the answer (``result = yield request``); its
``return`` value answers its own request.  :func:`run` drives the generators from an
explicit stack, memoising answers per request key, so passes over terms thousands of
levels deep (long ``let`` chains, deep elementwise chains) never hit the recursion
limit and shared subterms are handled once.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Generator, Hashable, Iterator
from typing import Any, TypeVar

Request = TypeVar("Request")
Answer = TypeVar("Answer")

Step = Generator[Any, Any, Any]


def run(
    root: Request,
    solve: Callable[[Request], Generator[Any, Any, Any]],
    key: Callable[[Request], Hashable],
    memo: dict[Hashable, Any] | None = None,
) -> Any:
    """Answer ``root`` with ``solve``, whose generators may ``yield`` sub-requests."""
    memo = {} if memo is None else memo
    root_key = key(root)
    if root_key in memo:
        return memo[root_key]
    stack: list[tuple[Hashable, Step]] = [(root_key, solve(root))]
    value: Any = None
    while stack:
        request_key, generator = stack[-1]
        try:
            request = generator.send(value)
        except StopIteration as stop:
            stack.pop()
            memo[request_key] = stop.value
            value = stop.value
            continue
        sub_key = key(request)
        if sub_key in memo:
            value = memo[sub_key]
        else:
            stack.append((sub_key, solve(request)))
            value = None
    return memo[root_key]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector during a pass that builds a large DAG.

    The passes allocate many small, mostly acyclic nodes; the collector's full scans of
    all live objects would otherwise make their time grow faster than the DAG.  Memory
    is still freed by reference counting; cycles are collected after the pass.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
