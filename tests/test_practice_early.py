"""``dualarr.teach.practice`` for chapters 01–05: every checker passes a correct answer,
fails the placeholder that the chapter stores (with the hint meant for it) without
raising, and no hint gives the answer away."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dualarr as da
import dualarr.numpy as dnp
from dualarr.ad import delta as dl
from dualarr.lang.terms import DType, IdSupply
from dualarr.teach.exercises import Feedback
from dualarr.teach.practice import bulk_transform, core_language, dual_arrays, naive_array_ad
from dualarr.teach.practice import dual_numbers as dn

F = DType.FLOAT64


def passed(feedback: Feedback) -> None:
    assert isinstance(feedback, Feedback)
    assert feedback.passed, str(feedback)
    assert str(feedback).startswith("✔ PASSED")


def failed_with(feedback: Feedback, *fragments: str, without: tuple[str, ...] = ()) -> None:
    """``feedback`` is a failure whose text has every fragment and a hint, and whose hints
    contain none of the ``without`` strings (the answer)."""
    assert isinstance(feedback, Feedback)
    text = str(feedback)
    assert not feedback.passed, text
    assert text.startswith("✘ NOT YET"), text
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in:\n{text}"
    hints = [d for d in feedback.details if d.startswith("Hint:")]
    assert hints, f"no hint in:\n{text}"
    for answer in without:
        for hint in hints:
            assert answer not in hint, f"the hint gives {answer!r} away:\n{hint}"


# --------------------------------------------------------------------------------------
# Chapter 01: dual numbers and sharing
# --------------------------------------------------------------------------------------


class Dual:
    """The dual numbers of Fig. 2, as chapter 01 writes them."""

    def __init__(self, primal: float, delta: dl.Delta) -> None:
        self.primal = float(primal)
        self.delta = delta

    def node(self, primal: float, delta: dl.Delta) -> Dual:
        return type(self)(primal, delta)

    def __add__(self, other: Dual) -> Dual:
        return self.node(self.primal + other.primal, dl.Add(self.delta, other.delta))

    def __mul__(self, other: Dual) -> Dual:
        return self.node(
            self.primal * other.primal,
            dl.Add(dl.Scale(other.primal, self.delta), dl.Scale(self.primal, other.delta)),
        )


class StubDual(Dual):
    def __sub__(self, other: Dual) -> Dual:
        return self.node(self.primal - other.primal, dl.Add(self.delta, other.delta))


class SubDual(Dual):
    def __sub__(self, other: Dual) -> Dual:
        return self.node(
            self.primal - other.primal, dl.Add(self.delta, dl.Scale(-1.0, other.delta))
        )


def stub_exp(a: Dual) -> Dual:
    return a.node(float(np.exp(a.primal)), a.delta)


def good_exp(a: Dual) -> Dual:
    return a.node(float(np.exp(a.primal)), dl.Scale(float(np.exp(a.primal)), a.delta))


def test_sub_and_exp() -> None:
    passed(dn.check_sub_exp(SubDual, good_exp))
    failed_with(dn.check_sub_exp(StubDual, stub_exp), "x - y", "expected (1, -1), got (1, 1)",
                "opposite sign", without=("Scale(-1", "-1.0"))
    failed_with(dn.check_sub_exp(SubDual, stub_exp), "exp(x) at x = 0.5", "derivative",
                without=("Scale(np.exp", "Scale(float(np.exp"))
    failed_with(dn.check_sub_exp(Dual, good_exp), "TypeError", "__sub__")


def test_square_chain() -> None:
    def dag(n: int) -> int:
        return 3 * n + 1

    def tree(n: int) -> int:
        return int(2 ** (n + 2)) - 3

    def gradient(x: float, n: int) -> float:
        return float(2.0**n * x ** (2**n - 1))

    passed(dn.check_square_chain(dag, tree, gradient))
    failed_with(
        dn.check_square_chain(lambda n: n + 1, lambda n: 2 ** (n + 1) - 1, lambda x, n: 2.0**n),
        "dag_nodes(1) should be 4", "Dual.__mul__", without=("3 * n", "3n"),
    )
    failed_with(dn.check_square_chain(dag, lambda n: 2 ** (n + 1) - 1, gradient),
                "tree_nodes(1) should be 5", "recurrence", without=("2 ** (n + 2)",))
    failed_with(dn.check_square_chain(dag, tree, lambda x, n: 2.0**n),
                "gradient(1.5, 1) should be 3", "power", without=("2 ** n - 1", "2**n - 1"))


def test_broken_invariant() -> None:
    s2 = dl.Share(2, dl.Input(0, (), F))
    passed(dn.check_broken_invariant(dl.Add(s2, dl.Share(1, dl.Scale(3.0, s2)))))
    failed_with(dn.check_broken_invariant(dl.Share(1, dl.Share(2, dl.Input(0, (), F)))),
                "every Share is still evaluated once", "two paths")
    supply = IdSupply()
    fine = dl.Share(supply.fresh(), dl.Input(0, (), F))
    failed_with(dn.check_broken_invariant(fine), "check_invariants accepts it")
    assert not dn.check_broken_invariant(3.0).passed


def test_order_matters() -> None:
    def delta(direct_last: bool) -> dl.Delta:
        supply = IdSupply()
        s1 = dl.Share(supply.fresh(), dl.Input(0, (), F))
        s2 = dl.Share(supply.fresh(), dl.Scale(2.0, s1))
        parts = (s2, s1) if direct_last else (s1, s2)
        return dl.Share(supply.fresh(), dl.Add(*parts))

    passed(dn.check_order_matters(delta(direct_last=True)))
    chain = dl.Share(1, dl.Input(0, (), F))
    for k in (2, 3):
        chain = dl.Share(k, dl.Add(chain, chain))
    failed_with(dn.check_order_matters(chain), "evaluates every Share once", "found last")
    failed_with(dn.check_order_matters(delta(direct_last=False)), "as the heap does")
    broken = dl.Share(1, dl.Share(2, dl.Input(0, (), F)))
    assert "Invariant 1" in str(dn.check_order_matters(broken))


# --------------------------------------------------------------------------------------
# Chapter 02: the core array language
# --------------------------------------------------------------------------------------


def test_self_convolution() -> None:
    def right(x: Any) -> Any:
        n = x.shape[0]
        return da.build1(2 * n - 1, lambda k: da.sum(da.build1(n, lambda j: x[j] * x[k - j])))

    def stub(x: Any) -> Any:
        n = x.shape[0]
        return da.build1(2 * n - 1, lambda k: x[k] * x[k])

    passed(core_language.check_self_convolution(right))
    failed_with(core_language.check_self_convolution(stub), "expected 0.78125, got 2.44141",
                "indices add up to k", without=("k - j", "x[j]"))
    failed_with(core_language.check_self_convolution(lambda x: x), "shape expected [5]")


def test_weighted_histogram() -> None:
    def right(d: Any) -> Any:
        return da.scatter(10, d, lambda i: da.floor(d[i] * 10.0))

    def stub(d: Any) -> Any:
        return da.scatter(10, da.replicate(d.shape[0], 1.0), lambda i: da.floor(d[i] * 10.0))

    passed(core_language.check_weighted_histogram(right))
    failed_with(core_language.check_weighted_histogram(stub), "expected 0.821758, got 15",
                "its own weight", without=("scatter(10, d",))


def test_transpose_gather() -> None:
    def right(t: Any) -> Any:
        a, b, c = t.shape
        return da.gather((c, a, b), t, lambda i, j, k: (j, k, i))

    def stub(t: Any) -> Any:
        a, b, c = t.shape
        return da.gather((c, a, b), t, lambda i, j, k: (k, i, j))

    passed(core_language.check_transpose_gather(right))
    failed_with(core_language.check_transpose_gather(stub), "at [0, 0, 1] expected 4, got 12",
                "[1, 0, 2]", without=("(j, k, i)",))
    failed_with(core_language.check_transpose_gather(lambda t: da.transpose(t, (2, 0, 1))),
                "without tr")


def test_concatenate_twice() -> None:
    feedback = core_language.check_concatenate_twice(lambda x: da.concatenate([x, x]))
    passed(feedback)
    assert "select" in str(feedback) and "gather [20]" in str(feedback)
    failed_with(core_language.check_concatenate_twice(lambda x: da.concatenate([x, 0.0 * x])),
                "at [4] expected 1, got 0", "da.concatenate", without=("[x, x]",))


def sign_flip(x: Any) -> Any:
    if x[0] > 0.0:
        return x
    return -x


def test_error_line() -> None:
    passed(core_language.check_error_line(sign_flip, "if x[0] > 0.0:"))
    passed(core_language.check_error_line(sign_flip, "    if x[0] > 0.0:  "))
    failed_with(core_language.check_error_line(sign_flip, "return -x"),
                "not the line the error names", "print(err)", without=("if x[0]",))
    assert not core_language.check_error_line(lambda x: x, "").passed


def test_numpy_functions_on_traced_values() -> None:
    def with_dnp(x: Any) -> Any:
        return dnp.sum(dnp.roll(x, 1) * x)

    def with_np(x: Any) -> Any:
        return dnp.sum(np.roll(x, 1) * x)

    passed(core_language.check_same_program(with_np, with_dnp, np.arange(4.0)))
    assert not core_language.check_same_program(dnp.sum, with_dnp, np.arange(4.0)).passed
    passed(core_language.check_norm(lambda x: dnp.sqrt(dnp.sum(x * x))))
    passed(core_language.check_norm(lambda x: np.linalg.norm(x)))  # dnp.linalg.norm (#39)
    passed(core_language.check_norm(lambda x: dnp.sqrt(x @ x)))
    failed_with(core_language.check_norm(lambda x: np.sqrt(np.linalg.multi_dot([x, x]))),
                "numpy.linalg.multi_dot", "a @ b", "end of the message",
                without=("dnp.sqrt", "sqrt"))


# --------------------------------------------------------------------------------------
# Chapter 03: why naive array AD fails
# --------------------------------------------------------------------------------------


def dot_bulk(x: Any, y: Any) -> Any:
    return da.sum(x * y)


def test_dot_variant() -> None:
    right = {"scalar_gradient": False, "unvectorised_gradient": True,
             "dual_arrays_gradient": False}
    passed(naive_array_ad.check_dot_variant(dot_bulk, right))
    stub = dict.fromkeys(naive_array_ad.METHODS, False)
    failed_with(naive_array_ad.check_dot_variant(dot_bulk, stub), "unvectorised_gradient",
                "as written")

    def dot_map(x: Any, y: Any) -> Any:
        return da.sum(da.map(lambda i: x[i] * y[i], da.iota(x.shape[0])))

    # the bot and the simplifier make the map over iota the bulk program (its bounds
    # checks decided by the variables' ranges), so no method's Delta size changes
    with_map = {"scalar_gradient": False, "unvectorised_gradient": False,
                "dual_arrays_gradient": False}
    passed(naive_array_ad.check_dot_variant(dot_map, with_map))
    assert not naive_array_ad.check_dot_variant(dot_bulk, {"scalar_gradient": True}).passed
    assert not naive_array_ad.check_dot_variant(lambda x, y: da.sum(x), right).passed


def two_reads(x: Any, y: Any) -> Any:
    n = x.shape[0]
    return da.sum(da.build1(n, lambda i: x[i] * y[n - 1 - i] + x[i]))


def test_slope_prediction() -> None:
    right = {"scalar_gradient": 10, "unvectorised_gradient": 12, "dual_arrays_gradient": 0}
    passed(naive_array_ad.check_slope_prediction(two_reads, right))
    stub = {"scalar_gradient": 8, "unvectorised_gradient": 8, "dual_arrays_gradient": 0}
    failed_with(naive_array_ad.check_slope_prediction(two_reads, stub), "scalar_gradient",
                "one Input node", without=("10",))
    failed_with(
        naive_array_ad.check_slope_prediction(two_reads, {**right, "unvectorised_gradient": 8}),
        "unvectorised_gradient", "read twice", without=("12",),
    )


def test_matvec_one_hots() -> None:
    passed(naive_array_ad.check_matvec_one_hots(lambda n, m: n * m * (n * m + m)))
    failed_with(naive_array_ad.check_matvec_one_hots(lambda n, m: n * m),
                "measured 54, yours 6", "whole array", without=("n * m + m", "(n + 1)"))


# --------------------------------------------------------------------------------------
# Chapter 04: the bulk-operation transform
# --------------------------------------------------------------------------------------


def softmax_rows(a: Any) -> Any:
    return da.build1(a.shape[0], lambda i: da.exp(a[i]) / da.sum(da.exp(a[i])))


def test_softmax_rows() -> None:
    feedback = bulk_transform.check_softmax_rows(softmax_rows)
    passed(feedback)
    assert "build1-index" in str(feedback) and "sumOuter" in str(feedback)
    failed_with(bulk_transform.check_softmax_rows(lambda a: da.build1(a.shape[0],
                                                                      lambda i: da.exp(a[i]))),
                "expected 0.133601, got 0.135335", "row i")


def twice_if(x: Any) -> Any:
    n = x.shape[0]

    def element(i: Any) -> Any:
        if i < n:
            return x[i]
        return x[i - n]

    return da.build1(2 * n, element)


def test_python_if() -> None:
    passed(bulk_transform.check_python_if(twice_if, "b"))
    stub = bulk_transform.check_python_if(twice_if, "?")
    assert not stub.passed and "one of 'a', 'b', 'c'" in str(stub)
    failed_with(bulk_transform.check_python_if(twice_if, "a"), "not 'a'", "Speed",
                without=("'b'", "b)"))
    failed_with(bulk_transform.check_python_if(twice_if, "c"), "not 'c'", "leaky")
    assert not bulk_transform.check_python_if(lambda x: x, "b").passed


def test_diagonal_of_scatter() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def right(x: Any) -> Any:
        return da.build1(4, lambda i: da.scatter(4, x * x[i], lambda j: j // 2)[i])

    def stub(x: Any) -> Any:
        return da.build1(4, lambda i: da.scatter(4, x, lambda j: j // 2)[i])

    feedback = bulk_transform.check_diagonal_of_scatter(right, x)
    passed(feedback)
    assert "[4, 4] (16 elements)" in str(feedback)
    failed_with(bulk_transform.check_diagonal_of_scatter(stub, x), "rules applied: build1-index",
                "mentions the loop variable", without=("x[i]", "x * "))


def test_bot_preserves() -> None:
    def program(seed: int) -> Callable[[Any, Any], Any]:
        def f(x: Any, a: Any) -> Any:
            return da.build1(3, lambda i: a[i] * x[(i + seed) % 4] + da.sum(x))

        return f

    feedback = bulk_transform.check_bot_preserves(
        program, range(3), np.linspace(-1.0, 1.0, 4), np.arange(12.0).reshape(3, 4)
    )
    passed(feedback)
    assert "3 programs" in str(feedback)
    broken = bulk_transform.check_bot_preserves(
        lambda seed: lambda x, a: x + "no", range(1), np.zeros(4), np.zeros((3, 4))
    )
    assert not broken.passed and "seed 0" in str(broken)


# --------------------------------------------------------------------------------------
# Chapter 05: dual arrays
# --------------------------------------------------------------------------------------


def test_div_factors() -> None:
    passed(dual_arrays.check_div_factors(lambda x: (1 / x, -1 / x), np.zeros_like))
    failed_with(
        dual_arrays.check_div_factors(lambda x: (np.ones_like(x), -np.ones_like(x)), np.ones_like),
        "numerator's factor", "expected [2, 1, 0.5], got [1, 1, 1]", "quotient rule",
        without=("1 / x", "-1 / x", "1/x"),
    )
    failed_with(dual_arrays.check_div_factors(lambda x: (1 / x, -1 / x), np.ones_like),
                "the gradient of x / x", "expected [0, 0, 0]", "constant function")


def test_one_hot_reads() -> None:
    def reads(x: Any) -> Any:
        return x[2] * x[0] + x[2]

    passed(dual_arrays.check_one_hot_reads(reads, 2))
    failed_with(dual_arrays.check_one_hot_reads(lambda x: da.sum(x * x), 1),
                "no Index node", "Python int")
    failed_with(dual_arrays.check_one_hot_reads(reads, 3), "you predicted 3",
                "once, whatever the number of uses", without=(" 2 ",))


def test_accum_prediction() -> None:
    def twice(x: Any) -> Any:
        y = da.sin(x)
        z = y * y
        return da.sum(z + z)

    def thrice(x: Any) -> Any:
        y = da.sin(x)
        z = y * y
        return da.sum(z + z + z)

    def six_sin(x: np.ndarray) -> np.ndarray:
        return np.asarray(6 * np.sin(x))

    def four_sin(x: np.ndarray) -> np.ndarray:
        return np.asarray(4 * np.sin(x))

    passed(dual_arrays.check_accum_prediction(thrice, six_sin))
    failed_with(dual_arrays.check_accum_prediction(twice, four_sin), "sum(z + z + z)",
                "three times")
    failed_with(dual_arrays.check_accum_prediction(thrice, four_sin), "expected [5.04883",
                "chain rule", without=("6 *", "6 sin", "6sin"))


def test_chain_sizes() -> None:
    passed(dual_arrays.check_chain_sizes(lambda k: 4 * k + 3, lambda k: 5 * 2**k - 2))
    failed_with(dual_arrays.check_chain_sizes(lambda k: 6 * k + 1, lambda k: 7 * 2**k - 6),
                "dag_nodes(2) should be 11", "one step adds", without=("4 * k", "4k"))
    failed_with(dual_arrays.check_chain_sizes(lambda k: 4 * k + 3, lambda k: 7 * 2**k - 6),
                "tree_nodes(2) should be 18", "recurrence", without=("5 * 2", "2 ** k - 2"))


def test_contract_share() -> None:
    pytest.importorskip("ipywidgets")
    from dualarr_widgets import BackpropStepper

    rng = np.random.default_rng(0)
    X, labels, weights = rng.normal(size=(6, 3)), np.sign(rng.normal(size=6)), rng.normal(size=3)

    def loss(w: Any, X: Any, y: Any) -> Any:
        return da.mean(da.log1p(da.exp(-y * da.matmul(X, w))))

    delta = BackpropStepper(loss, weights, X, labels).delta
    passed(dual_arrays.check_contract_share(delta, 2))
    failed_with(dual_arrays.check_contract_share(delta, 0), "there is no Share 0", "describe()",
                without=("s2", "Share 2"))
    failed_with(dual_arrays.check_contract_share(delta, 3), "s3 holds none")
    assert not dual_arrays.check_contract_share("delta", 2).passed


@pytest.mark.parametrize(
    "module", [dn, core_language, naive_array_ad, bulk_transform, dual_arrays],
    ids=lambda m: m.__name__.rsplit(".", 1)[-1],
)
def test_every_checker_is_tested(module: Any) -> None:
    from pathlib import Path

    here = Path(__file__).read_text(encoding="utf-8")
    checkers = [
        name for name, value in vars(module).items()
        if name.startswith("check_") and getattr(value, "__module__", "") == module.__name__
    ]
    assert checkers
    untested = [name for name in checkers if f".{name}(" not in here]
    assert not untested, untested
