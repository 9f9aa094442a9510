"""Checkers for the classroom assignments (``notebooks/assignments/``).

Every ``check_*`` function runs a student's answer on test programs and returns a
:class:`Feedback`: passed or not, and *what* is wrong — which program or input, which
element, the expected and the computed value, which rule of the paper is involved, and a
hint.  A wrong answer never raises (an exception raised by the answer is reported too);
only misuse does (e.g. a checker given something that is not a function).

The assignments:

1. the bulk-operation transform (§5): ``build1`` of ``index`` becomes a ``gather``
   (Fig. 11) and ``build1`` of ``sumOuter`` a transposed ``sumOuter`` (Fig. 9) —
   :func:`check_bot_index_rule`, :func:`check_bot_sum_outer_rule`, run by
   :func:`teaching_bot`;
2. a Delta rule for a new primitive (§2.3, §6.3, Fig. 14) — :func:`check_delta_rule`;
3. a gather program and its gradient (§3.3, §6.3, Fig. 17) — :func:`check_diffs`,
   :func:`check_tv_gradient`, :func:`check_scatter_prediction`;
4. the sharing bug of scalar dual numbers (§2.5, §2.6) — :func:`check_visit_formula`,
   :func:`check_sharing`;
5. share → let on Delta terms (Fig. 20, §7.4) — :func:`check_let_conversion`;
6. the transposition rules ``T[·]`` (Fig. 17, §6) — :func:`check_transposition_rules`;
7. the reverse pass over array Deltas (Fig. 17) — :func:`check_reverse_pass`;
8. batching rules, the ``build1`` rules that ``vmap`` runs (Fig. 9) —
   :func:`check_transpose_batching_rule`, :func:`check_replicate_batching_rule`, run by
   :func:`teaching_vmap`;
9. the normal form of Theorem 5.1 (§5.1) — :func:`check_no_build1`,
   :func:`check_normal_form`.
"""

from .array_reverse_pass import check_reverse_pass, operand_cotangent
from .bot_rules import check_bot_index_rule, check_bot_sum_outer_rule, teaching_bot
from .delta_rules import check_delta_rule
from .feedback import Feedback, graded
from .gather_gradient import check_diffs, check_scatter_prediction, check_tv_gradient
from .let_conversion import check_let_conversion, format_let_form
from .normal_form import check_no_build1, check_normal_form
from .sharing_bug import check_sharing, check_visit_formula, reverse_visits
from .transposition_rules import check_transposition_rules
from .vmap_rule import check_replicate_batching_rule, check_transpose_batching_rule, teaching_vmap

__all__ = [
    "Feedback",
    "check_bot_index_rule",
    "check_bot_sum_outer_rule",
    "check_delta_rule",
    "check_diffs",
    "check_let_conversion",
    "check_no_build1",
    "check_normal_form",
    "check_replicate_batching_rule",
    "check_reverse_pass",
    "check_scatter_prediction",
    "check_sharing",
    "check_transpose_batching_rule",
    "check_transposition_rules",
    "check_tv_gradient",
    "check_visit_formula",
    "format_let_form",
    "graded",
    "operand_cotangent",
    "reverse_visits",
    "teaching_bot",
    "teaching_vmap",
]
