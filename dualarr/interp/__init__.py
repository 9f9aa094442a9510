"""Interpretations of the core language (paper App. C–D: one language, many algebras).

The :class:`~dualarr.interp.algebra.Algebra` interface and its carriers: arrays of any
array-API namespace (NumPy, CuPy, ``array_api_strict``), the NumPy reference evaluator,
and terms (staging).  Imports only :mod:`dualarr.lang`.
"""
