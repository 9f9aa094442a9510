"""Teaching material: the baselines of §2 and §4 (scalar dual numbers, dual arrays
without the bot), the assignments' checkers, the practice cells, the build-it-yourself
track, the classroom and the examples.  The cross-checks they use (SymPy's exact
gradients, ``check_grad``) are the library's (:mod:`dualarr.sympy_reference`,
:mod:`dualarr.check`)."""
