"""Showing every stage (paper §3's notation, Figs. 7–21 as printed; book/rules.md §1):
the printer and graphviz drawings.

Both install themselves into the term and Delta types (``install_views``), which never
import them: ``print_term``, ``print_program``, ``print_let_program`` and ``print_delta``
(a Delta with its index functions in full), ``term_graph``, ``delta_graph`` and
``stage_graph`` (a pipeline stage drawn as its text reads: bindings ``v1 = …``, outputs
``value`` and ``gradient of x``).
"""
