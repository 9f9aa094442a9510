"""The printer: the paper's notation, sharing shown with lets in the right scope, stable names."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from strategies import GeneratedProgram, programs

import dualarr as da
from dualarr.ad import delta as dl
from dualarr.api import dual_run
from dualarr.lang.errors import DualarrError
from dualarr.lang.terms import term_constructors
from dualarr.show.printer import RENDERINGS, index_names, print_delta, tabulated_component
from dualarr.teach.examples import fig18

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

X = np.ones((3, 4))


def text(f, *args) -> str:  # type: ignore[no-untyped-def]
    return str(da.trace(f, *args))


def test_fig18_source_term() -> None:
    assert text(fig18, np.ones(10)) == r"\x. sumOuter (build1 10 (\i. x[i] * x[9 - i]))"


def test_gather_and_scatter_notation() -> None:
    assert (
        text(lambda x: da.gather([2, 3], x, lambda i, j: (2 * i, j + 1)), X)
        == r"\x. gather [2,3] x (\[i, j]. [2 * i, j + 1])"
    )
    assert (
        text(lambda x: da.scatter([5], x, lambda a, b: (a + b,)), X)
        == r"\x. scatter [5] x (\[a, b]. [a + b])"
    )


def test_other_constructs() -> None:
    assert text(lambda x: da.transpose(da.replicate(2, x), (1, 0, 2)), X) == (
        r"\x. tr [1,0,2] (replicate 2 x)"
    )
    assert text(lambda x: da.reshape(x, (12,)), X) == r"\x. reshape [12] x"
    assert text(lambda x: da.from_list([x[0], x[1]]), X) == r"\x. fromList [x[0], x[1]]"
    assert text(lambda x: da.to_float(da.iota(4)), X) == r"\x. fromIntegral (iota 4)"
    assert text(lambda x: da.where(x[0, 0] > 0.0, x[0], -x[1]), X) == (
        r"\x. cond (x[0, 0] > 0.0) x[0] (-x[1])"
    )
    assert text(lambda x: da.exp(x[0, 0]) ** 2.0 / (1.0 - x[1, 1]), X) == (
        r"\x. exp x[0, 0] ** 2.0 / (1.0 - x[1, 1])"
    )


def test_precedence_and_associativity() -> None:
    assert text(lambda a, b: a - (b - a), 1.0, 2.0) == r"\a b. a - (b - a)"
    assert text(lambda a, b: (a - b) - a, 1.0, 2.0) == r"\a b. a - b - a"
    assert text(lambda a, b: (a + b) * a, 1.0, 2.0) == r"\a b. (a + b) * a"
    assert text(lambda a, b: -(a * b), 1.0, 2.0) == r"\a b. -(a * b)"
    assert text(lambda a, b: (a < b) == (b < a), 1.0, 2.0) == r"\a b. (a < b) == (b < a)"


def test_sharing_becomes_lets_at_top_level() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        y = da.sin(x)
        z = y * y
        return z + z

    assert text(f, 1.0) == "\\x.\nlet t1 = sin x in\nlet t2 = t1 * t1 in\nt2 + t2"


def test_shared_subterm_is_let_bound_inside_the_scope_of_its_variable() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        c = da.exp(x[0, 0])  # closed: goes to the top
        def row(i: da.Tensor) -> da.Tensor:
            w = c * x[i, 0]  # shared, mentions i
            def body(v: da.Tensor) -> da.Tensor:
                u = v * w  # shared, mentions v
                return u * u + w + c

            return da.let(x[i, 1], body)

        return da.build1(3, row)

    out = text(f, X)
    lines = out.splitlines()
    assert lines[1] == "let t1 = exp x[0, 0] in"
    assert "build1 3 (\\i." in lines[2]
    assert "let v = x[i, 1] in" in out
    assert "let t2 = t1 * x[i, 0] in" in out, out
    assert out.index("let t2") > out.index("build1 3")  # inside the lambda, it mentions i
    assert "let t3 = v * t2 in" in out
    assert out.index("let t3") > out.index("let v =")  # inside the let: the innermost scope


def test_shared_index_arithmetic_stays_in_the_gather_lambda() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        def ix(i: da.Tensor) -> tuple[da.Tensor, da.Tensor]:
            k = i * 2 + 1
            return (k % 3, k // 3)

        return da.gather([2], x, ix)

    assert text(f, X) == "\\x.\ngather [2] x (\\[i].\n  let t1 = i * 2 + 1 in\n  [t1 % 3, t1 // 3])"


def test_names_are_stable_unique_and_from_the_users_code() -> None:
    def f(x: da.Tensor, i: da.Tensor) -> da.Tensor:
        return da.build1(2, lambda i1: da.build1(2, lambda i: x[i, i1] + da.to_float(i)))

    out = text(f, X, np.int64(0))
    assert out.startswith(r"\x i. build1 2 (\i1. build1 2 (\i2. x[i2, i1] + fromIntegral i2))")
    assert out == text(f, X, np.int64(0))  # the same program prints the same


def test_constants_print_readably() -> None:
    assert text(lambda x: x + np.array([1.0, 2.0, 3.0, 4.0]), X[0]) == (
        r"\x. x + [1.0, 2.0, 3.0, 4.0]"
    )
    assert text(lambda x: x + np.zeros(100), np.ones(100)) == "k1 : float64[100]\n\\x. x + k1"
    assert text(lambda x: da.index(x, (-1,)), X) == r"\x. x[-1]"
    assert text(lambda x: x[-1], X) == r"\x. x[2]"  # a static index wraps, as in NumPy


def test_captured_arrays_are_named_data_with_their_values_in_constants() -> None:
    """A large constant prints as ``k1`` under a ``k1 : float64[40,30]`` declaration, never
    as its values; ``p.constants`` (and the gradient program's) hold them by those names."""
    w, b = np.random.default_rng(0).standard_normal((40, 30)), np.linspace(0.0, 1.0, 40)

    def f(x: da.Tensor) -> da.Tensor:
        return da.sum(da.tanh(da.matmul(w, x) + b) * b) + da.sum(w[0] * x)

    program = da.trace(f, np.ones(30))
    printed = str(program)
    declared = ["k1 : float64[40,30]", "k2 : float64[40]", "k3 : float64[30]"]
    assert printed.splitlines()[:3] == declared
    assert "k1" in printed.splitlines()[3] and "<constant" not in printed
    assert list(program.constants) == ["k1", "k2", "k3"]
    np.testing.assert_array_equal(program.constants["k1"], w)
    np.testing.assert_array_equal(program.constants["k2"], b)
    gradient = da.pipeline(f, np.ones(30)).gradient
    for name, value in gradient.constants.items():
        assert f"{name} : {value.dtype}[{','.join(map(str, value.shape))}]" in str(gradient)
    assert any(v.shape == w.shape for v in gradient.constants.values())
    labels = program.graph().source
    assert 'label="k1\nfloat64[40,30]"' in labels


def test_multiple_outputs_print_as_a_tuple() -> None:
    assert text(lambda x: (x[0], da.sum(x)), X) == r"\x. (x[0], sumOuter (reshape [12] x))"


def test_structured_repr_lists_each_node_once() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        y = x * x
        return y + y

    dump = repr(da.trace(f, X).term)
    assert dump.startswith("<Op float64[3,4], 3 nodes:")
    assert "%1 = Op(op='mul', args=(x#1, x#1)) : float64[3,4]" in dump
    assert "%2 = Op(op='add', args=(%1, %1)) : float64[3,4]>" in dump
    assert repr(da.trace(f, X)).startswith("<Program f (x : float64[3,4]) -> float64[3,4]")


# --------------------------------------------------------------------------------------
# Deltas print their index functions in full (Fig. 16)
# --------------------------------------------------------------------------------------


def concrete_delta(f: Callable[..., da.Tensor], *arrays: np.ndarray) -> dl.Delta:
    program = da.pipeline(f, *arrays).vectorised
    return dual_run(program, arrays, tuple(range(len(arrays)))).deltas[0]


def test_a_concrete_delta_prints_its_index_function_as_the_program_wrote_it() -> None:
    x = np.arange(1.0, 6.0)
    assert print_delta(concrete_delta(fig18, x)).splitlines() == [
        r"s1 = Gather [5] Input 0 (\[i]. [4 - i])",
        "s2 = Add (Contract 'a,a->' Input 0 [5. 4. 3. 2. 1.]) "
        "(Contract 'a,a->' s1 [1. 2. 3. 4. 5.])",
        "s2",
    ]
    assert print_delta(da.pipeline(fig18, x).forward.delta).splitlines()[0] == (
        r"s1 = Gather [5] Input 0 (\[i]. [4 - i])"
    )


def test_a_table_that_is_no_affine_function_prints_as_a_lookup_or_as_named_data() -> None:
    def f(x: da.Tensor) -> da.Tensor:
        small = da.gather([3, 2], x, lambda i, j: (2 * i + j - 1, (i * j) % 3))
        large = da.gather([20], x, lambda i: ((i * i) % 5, i % 2))
        return da.sum(small * 2.0) + da.sum(large)

    lines = print_delta(concrete_delta(f, np.arange(12.0).reshape(6, 2))).splitlines()
    assert lines[:2] == ["k1 : int64[20]", "k2 : int64[20]"]
    small = r"(\[i, j]. [2 * i + j - 1, [[0,0],[0,1],[0,2]][i, j]])"  # (i * j) % 3
    assert f"s1 = Gather [3,2] Input 0 {small}" in lines
    assert r"s5 = Gather [20] Input 0 (\[i]. [k1[i], k2[i]])" in lines


@settings(max_examples=60, suppress_health_check=SLOW_OK)
@given(programs(float_only=True, max_depth=4))
def test_printed_deltas_show_every_index_function(gp: GeneratedProgram) -> None:
    """No index function of a Delta prints as ``λ…`` or is cut short: every Gather and
    Scatter line holds a whole ``(\\[…]. […])``, concrete (§6) or symbolic (§7)."""
    run = dual_run(gp.program(), gp.arrays, tuple(range(len(gp.inputs))))
    texts = [print_delta(run.deltas[0])]
    with contextlib.suppress(DualarrError):  # a function the compiled path does not take
        texts.append(print_delta(da.pipeline(gp.function(), *gp.arrays).forward.delta))
    for text in texts:
        assert "λ" not in text and "…" not in text
        for line in text.splitlines():
            if re.search(r"\b(Gather|Scatter) \[", line):
                assert re.search(r"\(\\\[[\w, ]*\]\. \[", line), line


def evaluate_component(
    text: str, names: list[str], point: tuple[int, ...], tables: dict[str, np.ndarray]
) -> int:
    """The value of a printed index component at one grid point."""
    lookup = re.fullmatch(r"(\[.*\]|k\d+)\[([\w, ]+)\]", text)
    env = dict(zip(names, point, strict=True))
    if lookup is None:
        return int(eval(text, {"__builtins__": {}}, env))
    table = tables[lookup[1]] if lookup[1] in tables else np.array(eval(lookup[1]))
    return int(table[point])


@given(
    hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
    st.integers(-5, 5),
    st.lists(st.integers(-3, 3), min_size=3, max_size=3),
    st.booleans(),
    st.data(),
)
def test_a_tabulated_index_component_prints_as_a_function_equal_to_its_table(
    shape: tuple[int, ...], constant: int, slopes: list[int], affine: bool, data: st.DataObject
) -> None:
    """Read back from its table (§6), a component is the affine function it tabulates,
    written as arithmetic, or else the table itself; either way it has the table's value
    at every point of the grid."""
    grids = np.indices(shape)
    table = constant + sum(a * g for a, g in zip(slopes, grids, strict=False))
    if not affine:
        table = data.draw(hnp.arrays(np.int64, shape, elements=st.integers(-2, 9)))
    table = np.asarray(table, dtype=np.int64)
    names = index_names(len(shape))
    tables: dict[str, np.ndarray] = {}

    def table_name(t: np.ndarray) -> str:
        tables[f"k{len(tables) + 1}"] = t
        return f"k{len(tables)}"

    text = tabulated_component(table, names, table_name)
    if affine:
        assert "[" not in text  # arithmetic, no lookup
    for point in np.ndindex(*shape):
        assert evaluate_component(text, names, point, tables) == table[point]


def test_every_construct_has_a_rendering() -> None:
    """The printer renders each construct by its rule in RENDERINGS (#37): every term
    constructor of the language has one."""
    missing = [c.__name__ for c in term_constructors() if c not in RENDERINGS]
    assert missing == []
