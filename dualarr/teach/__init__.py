"""Teaching and cross-checking tools: SymPy's exact gradients and ``check_grad``, the
baselines of §2 and §4 (scalar dual numbers, dual arrays without the bot), the
assignments' checkers and the examples."""
