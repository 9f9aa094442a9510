"""The printer: the paper's notation, sharing shown with lets in the right scope, stable names."""

from __future__ import annotations

import numpy as np

import dualarr as da
from dualarr.teach.examples import fig18

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
