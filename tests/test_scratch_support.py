"""The support of the "Build it yourself" notebooks: random core programs and their plain
tuple view (``dualarr.teach.scratch_support``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

import dualarr as da
from dualarr.lang.errors import UnsupportedError
from dualarr.lang.terms import Build1, Reshape, postorder
from dualarr.teach.examples import fig18
from dualarr.teach.scratch_support import (
    FIG7_CONSTRUCTS,
    PlainTerm,
    plain,
    random_programs,
)

ALWAYS = {"const", "var", "op", "index", "replicate"}
"""What every program may contain, whatever constructs were asked for: variables (read
with ``index`` or spread with ``replicate``), constants and index arithmetic."""


TAGS = FIG7_CONSTRUCTS | ALWAYS


def is_node(value: object) -> bool:
    if not isinstance(value, tuple) or not value:
        return False
    return isinstance(value[0], str) and value[0] in TAGS


def nodes(term: PlainTerm) -> Iterator[PlainTerm]:
    """Every node of a plain term, parents first."""
    yield term
    for field in term[1:]:
        if is_node(field):
            assert isinstance(field, tuple)
            yield from nodes(field)
        elif isinstance(field, tuple):
            for item in field:
                if is_node(item):
                    assert isinstance(item, tuple)
                    yield from nodes(item)


def binders(term: PlainTerm) -> list[str]:
    """The names a plain term binds (let, build1, gather and scatter)."""
    names: list[str] = []
    for node in nodes(term):
        match node:
            case ("let", str(name), _, _) | ("build1", _, str(name), _):
                names.append(name)
            case ("gather" | "scatter", _, _, tuple(bound), _):
                names.extend(str(n) for n in bound)
    return names


def test_random_programs_are_reproducible_from_the_seed() -> None:
    first = random_programs(7, 20)
    again = random_programs(7, 20)
    assert [str(p) for p in first] == [str(p) for p in again]
    for a, b in zip(first, again, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(a.arrays, b.arrays, strict=True))
    assert [str(p) for p in random_programs(8, 20)] != [str(p) for p in first]


def test_random_programs_evaluate_to_finite_float_arrays_of_their_type() -> None:
    for p in random_programs(0, 100):
        value = p.program(*p.arrays)
        assert value.shape == p.term.shape and value.dtype == np.float64
        assert np.all(np.isfinite(value))


def test_random_programs_cover_every_construct_of_fig7() -> None:
    drawn = Counter(node[0] for p in random_programs(0, 300) for node in nodes(p.plain()))
    assert set(drawn) == TAGS


@pytest.mark.parametrize("constructs", [{"op"}, {"build1", "index", "gather", "cond"}])
def test_constructs_limit_what_is_drawn(constructs: set[str]) -> None:
    for p in random_programs(1, 100, constructs=constructs):
        assert {node[0] for node in nodes(p.plain())} <= constructs | ALWAYS


def test_unknown_constructs_are_refused() -> None:
    with pytest.raises(UnsupportedError, match="reshape"):
        random_programs(0, 1, constructs={"op", "reshape"})


def test_outer_build1_makes_every_output_a_build1() -> None:
    programs = random_programs(2, 50, outer_build1=True, constructs={"op", "index", "build1"})
    assert all(isinstance(p.term, Build1) for p in programs)


def test_names_are_unique_and_name_the_inputs() -> None:
    for p in random_programs(3, 100):
        bound = binders(p.plain())
        assert len(bound) == len(set(bound))
        free = {node[1] for node in nodes(p.plain()) if node[0] == "var"} - set(bound)
        assert free <= set(p.env())
        assert not set(bound) & set(p.env())


def test_names_are_the_printed_names() -> None:
    for p in random_programs(4, 30):
        text = str(p)
        assert all(name in text for name in p.env())


def test_plain_view_of_a_traced_program() -> None:
    program = da.trace(fig18, np.arange(3.0))  # sumOuter (build1 3 (λi. x[i] * x[2 - i]))
    match plain(program.term):
        case ("sumOuter", ("build1", 3, "i", ("op", "mul", (left, right)))):
            assert left == ("index", ("var", "x"), (("var", "i"),))
            match right:
                case ("index", ("var", "x"), (("op", "sub", (("const", two), ("var", "i"))),)):
                    assert isinstance(two, np.ndarray) and two == 2
                case _:
                    pytest.fail(f"unexpected x[2 - i]: {right!r}")
        case other:
            pytest.fail(f"unexpected plain form {other!r}")


def test_plain_refuses_constructs_outside_the_grammar() -> None:
    program = da.trace(lambda a: da.reshape(a, (2, 3)), np.arange(6.0))
    assert any(isinstance(node, Reshape) for node in postorder([program.term]))
    with pytest.raises(UnsupportedError, match="Reshape"):
        plain(program.term)
