"""Showing every stage (paper §3's notation, Figs. 7–21 as printed; book/rules.md §1):
the printer and graphviz drawings.

Both install themselves into the term and Delta types (``install_views``), which never
import them.
"""
