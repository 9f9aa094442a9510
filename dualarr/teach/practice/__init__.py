"""Checkers for the "What to try" exercises at the end of the teaching chapters
(``notebooks/NN-*.ipynb``): one module per chapter, each ``check_*`` function running a
learner's answer and returning a :class:`dualarr.teach.exercises.Feedback` that says
``✔ PASSED`` or ``✘ NOT YET``, with the failing input, the expected and the obtained value,
and a hint that guides without giving the answer.  A wrong answer never raises.

Chapter modules: ``dual_numbers`` (01), ``core_language`` (02), ``naive_array_ad`` (03),
``bulk_transform`` (04), ``dual_arrays`` (05), ``compile_time`` (06), ``vmap_practice``
(07), ``transposition_practice`` (08), ``performance`` (09) and ``sympy_checks`` (10).
"""
