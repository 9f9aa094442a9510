"""Transposition as rewriting (``book/rules.md §6``): a Delta in let-form, transposed by the rules
T[·] into a linear program and run with NumPy, gives the gradients of the reverse pass of
Fig. 17 (``dualarr.ad.reverse.reverse``), on hand-built Deltas, traced programs and
generated programs; the program prints in the rules' notation and deep chains are fine."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import count
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.ad.reverse import reverse
from dualarr.ad.transposition import (
    Delete,
    LinearProgram,
    Lookup,
    Onehot,
    RecordingAlgebra,
    run_linear,
    to_let_form,
    transpose_delta,
)
from dualarr.api import dual_run, vectorised_program
from dualarr.interp.algebra import IndexFn
from dualarr.interp.evaluate import NumpyAlgebra
from dualarr.lang.errors import DualarrError
from dualarr.lang.terms import DType

F64 = DType.FLOAT64
ALG = NumpyAlgebra()
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def transposed(d: dl.Delta) -> LinearProgram:
    return transpose_delta(to_let_form(d))


def assert_agree(
    d: dl.Delta, cotangent: np.ndarray, rtol: float = 1e-9,
    program: LinearProgram | None = None,
) -> dict[int, Any]:
    """``run_linear(T[let-form d])`` and ``reverse`` give the same gradients (finite parts;
    ``rtol=0``: bitwise equal, NaNs included)."""
    with np.errstate(all="ignore"):
        expected = reverse(ALG, d, cotangent)
        got = run_linear(program or transposed(d), ALG, cotangent)
    assert got.keys() == expected.keys()
    for k, want in expected.items():
        g, e = np.asarray(got[k]), np.asarray(want)
        assert g.shape == e.shape
        if rtol == 0:
            assert np.array_equal(g, e, equal_nan=True), (g, e)
            continue
        finite = np.isfinite(g) & np.isfinite(e)
        np.testing.assert_allclose(g[finite], e[finite], rtol=rtol, atol=1e-12)
    return got


# --------------------------------------------------------------------------------------
# Hand-built Deltas
# --------------------------------------------------------------------------------------


def hand_built() -> Iterator[tuple[str, dl.Delta]]:
    ids = count(1)

    def share(d: dl.Delta) -> dl.Share:
        return dl.Share(next(ids), d)

    rng = np.random.default_rng(0)
    x0 = dl.Input(0, (4,), F64)
    x1 = dl.Input(1, (2, 3), F64)
    a, b = rng.normal(size=4), rng.normal(size=4)

    yield "input", x0
    yield "zero", dl.Zero((4,), F64)
    yield "scale-add", share(dl.Add(dl.Scale(a, x0), dl.Scale(b, x0)))
    s1 = share(dl.Scale(a, x0))
    s2 = share(dl.Add(s1, s1))
    yield "shared-twice", share(dl.Add(dl.Scale(b, s2), s1))
    yield "index", share(dl.Index(x1, (np.int64(1),)))
    yield "index-out-of-range", share(dl.Add(dl.Index(x1, (np.int64(1), np.int64(7))),
                                             dl.Index(x1, (np.int64(0), np.int64(2)))))
    yield "gather", share(dl.Gather((5,), x0, IndexFn((np.array([3, 0, 5, -1, 0]),)), (5,)))
    rows = IndexFn((np.array([[0, 1], [1, 1]]),))
    yield "gather-rows", share(dl.Gather((2, 2), x1, rows, (2, 2, 3)))
    yield "scatter", share(dl.Scatter((3,), x0, IndexFn((np.array([0, 2, 2, 7]),)), 1))
    yield "scatter-rows", share(dl.Scatter((4, 3), x1, IndexFn((np.array([3, 3]),)), 1))
    yield "sum-replicate", share(dl.SumOuter(share(dl.Replicate(3, x0))))
    yield "sum-outer", share(dl.SumOuter(x1))
    yield "transpose-reshape", share(dl.Reshape((6,), share(dl.Transpose((1, 0), x1))))
    yield "from-list", share(dl.FromList((x0, dl.Zero((4,), F64), dl.Scale(a, x0))))
    yield "shared-zero", share(dl.Add(share(dl.Zero((4,), F64)), x0))
    yield "convert", share(dl.Convert(F64, share(dl.Convert(DType.FLOAT32, dl.Scale(a, x0)))))
    s3 = share(dl.Reshape((4,), share(dl.Transpose((1, 0), share(dl.Reshape((2, 2), x0))))))
    rows_columns = IndexFn((np.array([1, 0, 1, 0]), np.array([0, 1, 2, 3])))
    s4 = share(dl.Add(s3, dl.Scale(a, dl.Gather((4,), x1, rows_columns, (4,)))))
    yield "two-inputs", share(dl.FromList((s4, s3, dl.Scale(b, s4))))


@pytest.mark.parametrize(("name", "d"), list(hand_built()), ids=[n for n, _ in hand_built()])
def test_hand_built_deltas_agree_with_reverse(name: str, d: dl.Delta) -> None:
    rng = np.random.default_rng(1)
    for _ in range(3):
        assert_agree(d, rng.normal(size=d.shape))
    assert_agree(d, rng.normal(size=d.shape), rtol=0)


def test_let_form_binds_each_share_once_lowest_id_outermost() -> None:
    x = dl.Input(0, (3,), F64)
    s1 = dl.Share(1, dl.Scale(np.full(3, 2.0), x))
    s4 = dl.Share(4, dl.Add(s1, s1))
    s6 = dl.Share(6, dl.Add(s4, s1))
    let_form = to_let_form(s6)
    assert [name for name, _ in let_form.bindings] == [1, 4, 6]
    assert let_form.root is s6 and let_form.bindings[1][1] is s4.delta
    assert str(let_form).splitlines() == [
        "let s1 = Scale [2. 2. 2.] Input 0 in",
        "let s4 = Add s1 s1 in",
        "let s6 = Add s4 s1 in",
        "s6",
    ]


def test_let_form_checks_the_share_invariants() -> None:
    x = dl.Input(0, (3,), F64)
    with pytest.raises(DualarrError, match="Invariant 2"):
        to_let_form(dl.Share(2, dl.Add(dl.Share(1, x), dl.Share(1, x))))
    with pytest.raises(DualarrError, match="Invariant 1"):
        to_let_form(dl.Share(1, dl.Add(dl.Share(3, x), x)))


def test_transposed_let_uses_lookup_and_delete_in_the_rule_order() -> None:
    x = dl.Input(0, (3,), F64)
    s1 = dl.Share(1, dl.Scale(np.full(3, 2.0), x))
    program = transposed(dl.Share(2, dl.Add(s1, s1)))
    kinds = [type(s).__name__ for s in program.body]
    # T[Let 1 _ (Let 2 _ (Var 2))]: Var 2, then Let 2 (Lookup, Delete, T[s1 + s1]), then Let 1
    assert kinds == ["Onehot", "Lookup", "Delete", "Onehot", "Onehot",
                     "Lookup", "Delete", "Bind", "Onehot"]
    assert program.inputs == (0,)
    grads = run_linear(program, ALG, np.ones(3))
    np.testing.assert_array_equal(grads[0], [4.0, 4.0, 4.0])


# --------------------------------------------------------------------------------------
# Traced programs
# --------------------------------------------------------------------------------------


def fig18(x: da.Tensor) -> da.Tensor:
    n = x.shape[0]
    return da.sum(da.build1(n, lambda i: x[i] * x[n - 1 - i]))


def sharing(x: da.Tensor) -> da.Tensor:
    y = x * x
    z = y + y
    return z * y


def gathers_and_scatters(x: da.Tensor) -> da.Tensor:
    g = da.gather([3], x, lambda i: (2 * i,))
    s = da.scatter([2], x, lambda i: (i % 2,))
    c = da.where(x[0] > 1.5, x * 2.0, x * x)
    return da.sum(g * g) + da.sum(s * s) + da.sum(c)


def from_list(x: da.Tensor, y: da.Tensor) -> da.Tensor:
    return da.from_list([x * y, da.sin(x), y, x[1] * y])


def transposes_and_reshapes(a: da.Tensor) -> da.Tensor:
    t = da.transpose(a) * 2.0
    return da.reshape(t, (6,)) * da.reshape(da.exp(a), (6,))


def rows_dot(a: da.Tensor, b: da.Tensor) -> da.Tensor:
    return da.build1(a.shape[0], lambda i: da.sum(a[i] * b) + a[i, 0] * a[i, 2])


TRACED: list[tuple[str, Callable[..., da.Tensor], Sequence[Sequence[int]]]] = [
    ("fig18", fig18, [(5,)]),
    ("matmul", da.matmul, [(2, 3), (3, 4)]),
    ("sharing", sharing, [(4,)]),
    ("gathers-scatters", gathers_and_scatters, [(5,)]),
    ("from-list", from_list, [(3,), (3,)]),
    ("transposes-reshapes", transposes_and_reshapes, [(2, 3)]),
    ("rows-dot", rows_dot, [(2, 3), (3,)]),
    ("softmax", lambda x: da.softmax(x) * da.logsumexp(x), [(4,)]),
]


@pytest.mark.parametrize(("name", "f", "shapes"), TRACED, ids=[t[0] for t in TRACED])
def test_traced_programs_agree_with_reverse(
    name: str, f: Callable[..., da.Tensor], shapes: Sequence[Sequence[int]]
) -> None:
    rng = np.random.default_rng(2)
    arrays = [rng.uniform(0.5, 2.0, size=sh) for sh in shapes]
    program = vectorised_program(f, arrays)
    run = dual_run(program, arrays, range(len(arrays)))
    (d,) = run.deltas
    for _ in range(3):
        got = assert_agree(d, rng.normal(size=d.shape), rtol=1e-12)
        assert set(got) == set(range(len(arrays)))
    # the program adds the reverse pass's contributions in the reverse pass's order
    assert_agree(d, rng.normal(size=d.shape), rtol=0)


def test_fig18_gradient_is_twice_the_reversed_input() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    run = dual_run(vectorised_program(fig18, [x]), [x], [0])
    grads = run_linear(transposed(run.deltas[0]), ALG, np.ones(()))
    np.testing.assert_allclose(grads[0], 2 * x[::-1])


def test_printed_program_of_fig18_shows_the_rules() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])
    run = dual_run(vectorised_program(fig18, [x]), [x], [0])
    let_form = to_let_form(run.deltas[0])
    assert str(let_form).splitlines()[:3] == [
        "let s1 = Gather [4] Input 0 f1 in",
        "let s2 = Add (Contract 'a,a->' Input 0 [4. 3. 2. 1.])"
        " (Contract 'a,a->' s1 [1. 2. 3. 4.]) in",
        "s2",
    ]
    text = str(transpose_delta(let_form))
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "Γ | c : float64[] ||- DMap"
    for expected in [
        "Onehot s2 c  ",  # T[Var n] = Onehot n c
        "let c1 = Lookup s2",  # T[Let n u1 u2]: Lookup n, Delete n
        "Delete s2",
        "let c2 = Contract ',a->a' c1 [4. 3. 2. 1.]",  # T[Contract "A,B->C" u y]
        "Onehot dx0 c2",  # T[Input n]
        "let c5 = Scatter [4] c4 f1",  # T[Gather sh u f]
        "f1 = λ, tabulated on its grid: [3 2 1 0]",
    ]:
        assert any(line.startswith(expected.strip()) for line in lines), (expected, text)
    assert "-- T[Gather sh u f]" in text and "-- T[Let 1 u1 u2]" in text
    assert "-- T[Contract s u y]" in text


def test_printed_program_of_a_sum_of_sines_shows_scale_and_sumouter() -> None:
    x = np.array([1.0, 2.0, 3.0])
    run = dual_run(vectorised_program(lambda x: da.sum(da.sin(x) * 2.0), [x]), [x], [0])
    text = str(transpose_delta(to_let_form(run.deltas[0])))
    assert "-- T[SumOuter u]" in text and "-- T[Scale y u]" in text
    grads = run_linear(transpose_delta(to_let_form(run.deltas[0])), ALG, np.ones(()))
    np.testing.assert_allclose(grads[0], 2 * np.cos(x))


def test_deep_shared_chain_transposes_without_recursion() -> None:
    def chain(x: da.Tensor) -> da.Tensor:
        y = x
        for _ in range(3000):
            y = 0.5 * (y + y - 1.0)
        return da.sum(y)

    x = np.linspace(-1.0, 1.0, 3)
    run = dual_run(vectorised_program(chain, [x]), [x], [0])
    d = run.deltas[0]
    let_form = to_let_form(d)
    names = [name for name, _ in let_form.bindings]
    assert len(names) >= 3000 and names == sorted(names)
    program = transpose_delta(let_form)
    assert len(program) <= 10 * dl.size([d]).nodes  # linear in the size of the Delta
    grads = assert_agree(d, np.array(1.0), rtol=0, program=program)
    np.testing.assert_allclose(grads[0], np.ones(3))
    assert len(str(program).splitlines()) > len(program)
    assert len(str(let_form).splitlines()) > 3000
    assert sum(isinstance(s, Lookup) for s in program.body) == len(names)
    assert sum(isinstance(s, Delete) for s in program.body) == len(names)
    assert any(isinstance(s, Onehot) for s in program.body)


def float_positions(gp: GeneratedProgram) -> list[int]:
    return [k for k, v in enumerate(gp.inputs) if v.dtype is F64]


@settings(max_examples=250, suppress_health_check=SLOW_OK)
@given(programs(float_only=True), st.integers(0, 2**32 - 1))
def test_generated_programs_agree_with_reverse(gp: GeneratedProgram, seed: int) -> None:
    rng = np.random.default_rng(seed)
    arrays = list(gp.arrays)
    positions = float_positions(gp)
    program = vectorised_program(gp.function(), arrays)
    with np.errstate(all="ignore"):
        run = dual_run(program, arrays, positions)
    (d,) = run.deltas
    assert_agree(d, rng.normal(size=d.shape))


def test_pieces_print_on_their_own() -> None:
    x = dl.Input(0, (3,), F64)
    program = transposed(dl.Share(1, dl.Gather((2,), x, IndexFn((np.array([2, 0]),)), (2,))))
    assert [str(s) for s in program.body] == [
        "Onehot s1 c", "let c1 = Lookup s1", "Delete s1",
        "let c2 = Scatter [3] c1 ⟨[2 0]⟩", "Onehot dx0 c2",
    ]
    assert repr(to_let_form(x)) == "Input 0"
    zero = transposed(dl.Zero((3,), F64))
    assert str(zero).splitlines() == ["Γ | c : float64[3] ||- DMap", "  0"]


def test_the_program_is_the_reverse_pass_recorded() -> None:
    """The rules are stated once: every binding of the program is one call of the reverse
    pass's algebra, and a node whose operand is Zero writes nothing."""
    x = dl.Input(0, (3,), F64)
    program = transposed(dl.Share(2, dl.Add(dl.Scale(np.ones(3), dl.Zero((3,), F64)), x)))
    assert [type(s).__name__ for s in program.body] == ["Onehot", "Lookup", "Delete", "Onehot"]
    algebra = RecordingAlgebra()
    c = algebra.cotangent((2, 3), F64)
    assert algebra.transpose((1, 0), c).shape == (3, 2)
    assert algebra.contract("ab,b->a", c, np.ones(3)).shape == (2,)
    assert algebra.element(c, 1).shape == (3,)
    assert len(algebra.body) == 3
