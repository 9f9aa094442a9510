"""The bulk-operation transform (paper §5, Figs. 9–11) and what it enables.

The bot removes every ``build1`` (Theorem 5.1), the simplifier cleans up after it, and
``vmap`` is ``build1`` plus the bot.  Imports only the layers below.
"""
