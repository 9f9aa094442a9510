"""Differentiation with dual arrays (paper §6–§7, Figs. 12–21).

Delta terms, D as an algebra over any primal algebra, the reverse pass (Fig. 17), the
compile-time passes of §7 (Eq. 6, the symbolic reverse pass of Fig. 19), share → let
(Figs. 20–21) and transposition read as rewriting into a linear language.
"""
