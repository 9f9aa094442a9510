"""The core language and its Python front end (paper §3, Figs. 7–8; App. B–C).

Errors, the primitive registry (one record per elementwise primitive), the term types,
traced values and the functions users write programs with, tracing into a
:class:`~dualarr.lang.program.Program`, and the call-time closure of a traced program.
The lowest layer: it imports no other part of dualarr.
"""
