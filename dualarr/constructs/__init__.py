"""Structural constructs beyond the paper's core language (Fig. 7), one module each.

A construct here is a :class:`dualarr.lang.terms.Structural` dataclass (its fields, its
shape rule) whose module registers its rules in every stage's rule table
(:mod:`dualarr.lang.rules`): its meaning on arrays, its derivative (§6, Fig. 14) and
transpose (§6.2), its smart constructor, its bot rules (§5, Figs. 9–11) and how it
prints and draws.  None is from the paper: each is a kit extension, and says so.
"""

from .linalg_solve import Cholesky, Inv, LogAbsDet, SignDet, Solve
from .linalg_spectral import Eigh, Qr, Svd
from .rev import Rev, rev

__all__ = [
    "Cholesky",
    "Eigh",
    "Inv",
    "LogAbsDet",
    "Qr",
    "Rev",
    "SignDet",
    "Solve",
    "Svd",
    "rev",
]
