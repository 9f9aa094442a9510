"""The linear-algebra cases of a peer suite, through the conformance harness.

HIPS autograd's ``tests/test_linalg.py`` checks the gradients of ``numpy.linalg`` on a
fixed list of cases: inverses of stacks, solves with matrix, vector and batched
right-hand sides, determinants of stacks and of negated matrices, vector and matrix
norms over axes (``ord`` 2 to 4, Frobenius, nuclear), ``eigh`` of either triangle with
broadcast batch axes, Cholesky factors (and a reparameterisation through one), and the
reduced SVD of wide, square and tall matrices and stacks, with and without its vectors.
Each case is restated here as a NumPy user writes it with ``dnp``, and checked by
:func:`numpy_conformance.conforms`: values against NumPy, gradients in both modes
against central differences of NumPy's, the jvp/vjp identity and ``vmap``.  A function
with several results is checked on all of them, flattened into one vector; a function
of a symmetric matrix on ``(tril A + tril A ᵀ) / 2``, as autograd's
``check_symmetric_matrix_grads`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy_conformance import conforms

import dualarr.numpy as dnp

Function = Callable[..., Any]
RNG = np.random.default_rng(1)


def _flat(xp: Any, results: Any) -> Any:
    """Several results as one vector (``xp``: NumPy or dnp)."""
    parts = results if isinstance(results, tuple | list) else (results,)
    return xp.concatenate([xp.reshape(p, (-1,)) for p in parts])


def _symmetric(xp: Any, a: Any) -> Any:
    lower = xp.tril(a)
    return (lower + xp.swapaxes(lower, -1, -2)) / 2.0


def _case(build: Callable[[Any], Function], symmetric: bool = False) -> tuple[Function, Function]:
    """The dnp and NumPy functions of one case, from one definition over ``xp``."""

    def over(xp: Any) -> Function:
        inner = build(xp)

        def f(*args: Any) -> Any:
            if symmetric:
                args = (_symmetric(xp, args[0]), *args[1:])
            return _flat(xp, inner(*args))

        return f

    return over(dnp), over(np)


def _psd(n: int) -> np.ndarray:
    m = RNG.normal(size=(n, n))
    return m @ m.T


def _gram(m: np.ndarray) -> np.ndarray:
    """``m mᵀ`` for every matrix of a stack."""
    gram: np.ndarray = np.einsum("...ij,...kj->...ik", m, m)
    return gram


_B8 = RNG.normal(size=(8, 7))
_B8_VECTOR = RNG.normal(size=8)
_B5 = RNG.normal(size=(5, 4, 1))  # NumPy 2's solve reads a 2-d b as one matrix
_B5_STACK = RNG.normal(size=(5, 4, 6))
_A6 = RNG.normal(size=(6, 6)) + np.eye(6)
_Z6 = np.random.default_rng(0).normal(size=6)

CASES: dict[str, tuple[Callable[[Any], Function], tuple[np.ndarray, ...], bool]] = {
    "inv": (lambda xp: xp.linalg.inv, (RNG.normal(size=(8, 8)) @ RNG.normal(size=(8, 8))
                                       + 8.0 * np.eye(8),), False),
    "inv_3d": (lambda xp: xp.linalg.inv, (RNG.normal(size=(4, 4, 4)) + 5 * np.eye(4),), False),
    "inv_4d": (lambda xp: xp.linalg.inv, (RNG.normal(size=(4, 4, 4, 4)) + 5 * np.eye(4),),
               False),
    "solve_arg1": (lambda xp: lambda a: xp.linalg.solve(a, _B8),
                   (RNG.normal(size=(8, 8)) + 10 * np.eye(8),), False),
    "solve_arg1_1d": (lambda xp: lambda a: xp.linalg.solve(a, _B8_VECTOR),
                      (RNG.normal(size=(8, 8)) + 10 * np.eye(8),), False),
    "solve_arg2": (lambda xp: lambda b: xp.linalg.solve(_A6, b),
                   (RNG.normal(size=(6, 5)),), False),
    "solve_arg1_3d": (lambda xp: lambda a: xp.linalg.solve(a, _B5),
                      (RNG.normal(size=(5, 4, 4)) + 5 * np.eye(4),), False),
    "solve_arg1_3d_3d": (lambda xp: lambda a: xp.linalg.solve(a, _B5_STACK),
                         (RNG.normal(size=(5, 4, 4)) + 5 * np.eye(4),), False),
    "det": (lambda xp: xp.linalg.det, (RNG.normal(size=(6, 6)),), False),
    "det_3d": (lambda xp: xp.linalg.det, (RNG.normal(size=(3, 3, 3)),), False),
    "slogdet": (lambda xp: lambda a: xp.linalg.slogdet(a)[1], (RNG.normal(size=(6, 6)),), False),
    "slogdet_negated": (lambda xp: lambda a: xp.linalg.slogdet(-a)[1],
                        (RNG.normal(size=(6, 6)),), False),
    "slogdet_3d": (lambda xp: lambda a: xp.sum(xp.linalg.slogdet(a)[1]),
                   (np.stack([_psd(5) + 5 * np.eye(5) for _ in range(3)]),), False),
    "vector_2norm": (lambda xp: xp.linalg.norm, (RNG.normal(size=6),), False),
    "frobenius_norm": (lambda xp: xp.linalg.norm, (RNG.normal(size=(6, 5)),), False),
    "frobenius_norm_axis": (lambda xp: lambda a: xp.linalg.norm(a, axis=(0, 1)),
                            (RNG.normal(size=(6, 5, 4)),), False),
    **{
        f"vector_norm_ord{order}": (
            (lambda o: lambda xp: lambda a: xp.linalg.norm(a, ord=o))(order),
            (RNG.normal(size=6),),
            False,
        )
        for order in (2, 3, 4)
    },
    **{
        f"norm_axis{axis}": (
            (lambda k: lambda xp: lambda a: xp.linalg.norm(a, axis=k))(axis),
            (RNG.normal(size=(6, 5, 4)),),
            False,
        )
        for axis in (0, 1, 2)
    },
    "norm_nuclear": (lambda xp: lambda a: xp.linalg.norm(a, ord="nuc"),
                     (RNG.normal(size=(6, 5)),), False),
    "norm_nuclear_axis": (lambda xp: lambda a: xp.linalg.norm(a, ord="nuc", axis=(0, 1)),
                          (RNG.normal(size=(6, 5, 4)),), False),
    "eigh_lower": (lambda xp: xp.linalg.eigh, (_psd(6),), True),
    "eigh_upper": (lambda xp: lambda a: xp.linalg.eigh(a, "U"), (_psd(6),), True),
    "eigh_lower_broadcasting": (
        lambda xp: xp.linalg.eigh,
        (_gram(RNG.normal(size=(2, 3, 6, 6)) + 10 * np.eye(6)),),
        True,
    ),
    "eigh_upper_broadcasting": (
        lambda xp: lambda a: xp.linalg.eigh(a, "U"),
        (_gram(RNG.normal(size=(2, 3, 6, 6)) + 10 * np.eye(6)),),
        True,
    ),
    "cholesky": (lambda xp: xp.linalg.cholesky, (_psd(6),), True),
    "cholesky_broadcast": (lambda xp: xp.linalg.cholesky,
                           (np.stack([_psd(6) for _ in range(3)]),), True),
    "cholesky_reparameterization_trick": (
        lambda xp: lambda a: xp.linalg.norm(xp.linalg.cholesky(a) @ _Z6),
        (_psd(6),),
        True,
    ),
    **{
        f"svd_{name}": (
            lambda xp: lambda a: xp.linalg.svd(a, full_matrices=False),
            (RNG.normal(size=shape),),
            False,
        )
        for name, shape in (
            ("wide_2d", (3, 5)), ("wide_3d", (4, 3, 5)), ("square_2d", (4, 4)),
            ("square_3d", (3, 4, 4)), ("tall_2d", (5, 3)), ("tall_3d", (4, 5, 3)),
        )
    },
    **{
        f"svd_only_s_{name}": (
            lambda xp: lambda a: xp.linalg.svd(a, full_matrices=False, compute_uv=False),
            (RNG.normal(size=shape),),
            False,
        )
        for name, shape in (("2d", (5, 3)), ("3d", (4, 5, 3)))
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_peer_suites_linear_algebra_case(name: str) -> None:
    build, args, symmetric = CASES[name]
    dnp_f, np_f = _case(build, symmetric)
    conforms(dnp_f, np_f, args)
