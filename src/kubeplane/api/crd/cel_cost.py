"""Runtime cost of CEL rules, as far as cel-python lets it be counted.

Upstream (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go, apiserver pkg/apis/cel/config.go):
every rule's program runs with a per-call limit (``PerCallLimit`` 1,000,000; past it cel-go stops with
``operation cancelled: actual cost limit exceeded``) and every validation of one object draws on one budget
(``RuntimeCELCostBudget`` 10,000,000): once a rule's actual cost exceeds what is left, the error is
``validation failed due to running out of cost budget, no further validation rules will be run`` and no
further rule runs.

cel-python has no cost tracker, so :class:`CostingEvaluator` counts one unit per evaluated variable, field
selection, index, function or method call, operator and list or map literal (cel-go's unit for each;
constants cost nothing), comprehension bodies once per element. cel-go's size-dependent function costs (a
string's ``contains`` or ``matches`` by its length, ``lists`` functions by their size) are not added, so the
count is a lower bound of upstream's. The CRD-time cost *estimates* (from ``maxLength``/``maxItems``) are not
made: they need cel-go's type-checked cost estimator.
"""

from __future__ import annotations

from typing import Any

from celpy.evaluation import Evaluator

from . import cel_comprehensions

__all__ = ["PER_CALL_LIMIT", "RUNTIME_BUDGET", "CostExceeded", "CostingEvaluator", "Tracker"]

PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000

_COSTED = frozenset(
    {"ident", "member_dot", "member_index", "ident_arg", "member_dot_arg", "list_lit", "map_lit"}
    | {"relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in"}
    | {"addition_add", "addition_sub", "multiplication_mul", "multiplication_div", "multiplication_mod"}
    | {"unary_not", "unary_neg"}
)


class CostExceeded(Exception):
    """The per-call limit was passed: evaluation stops (cel-go's cancellation)."""


class Tracker:
    """The actual cost of one program evaluation."""

    __slots__ = ("cost", "limit")

    def __init__(self, limit: int = PER_CALL_LIMIT) -> None:
        self.cost = 0
        self.limit = limit


class CostingEvaluator(Evaluator):
    """cel-python's interpreter, counting cost into ``tracker`` and stopping past its limit."""

    def __init__(self, ast: Any, activation: Any, tracker: Tracker) -> None:
        super().__init__(ast, activation)
        self.tracker = tracker

    def sub_evaluator(self, ast: Any) -> Evaluator:
        return CostingEvaluator(ast, self.activation, self.tracker)

    def member_dot_arg(self, tree: Any) -> Any:
        """cel-python's method calls and macros, and cel-go's two-variable comprehensions."""
        if len(tree.children) == 3 and cel_comprehensions.is_two_variable(tree):
            return cel_comprehensions.evaluate(self, tree)
        return super().member_dot_arg(tree)

    def _visit_tree(self, tree: Any) -> Any:  # lark's Interpreter reaches every node through this
        if tree.data in _COSTED:
            tracker = self.tracker
            tracker.cost += 1
            if tracker.cost > tracker.limit:
                raise CostExceeded
        return super()._visit_tree(tree)
