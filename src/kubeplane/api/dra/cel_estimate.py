"""A worst-case cost estimate of a DRA selector, for admission's ``cost limit`` check.

Upstream compiles selectors with cel-go's checker and estimates their worst-case cost (``env.EstimateCost`` with
the ``device`` variable's declared sizes: at most 32 domains, 32 attributes or capacities per domain, strings of
at most 64 characters); the API refuses an expression whose estimate exceeds CELSelectorExpressionMaxCost.
cel-python has neither, so this estimate counts as :mod:`kubeplane.api.crd.cel_cost` counts at runtime (one unit
per variable, selection, index, call, operator, literal list or map) and multiplies a comprehension's loop
(condition and step, two units, plus its body) by the size its range can have: a list literal's length, 32 for
``device.attributes``/``device.capacity`` and their domain maps, 64 for anything else (a list or string of an
attribute). It is an estimate in cel-go's units but not its exact figure: it rejects what nests loops far beyond
the limit (upstream's ``expensive`` case) and passes ordinary selectors.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd.cel_comprehensions import is_two_variable

__all__ = ["max_cost"]

_COSTED = frozenset(
    {"ident", "member_dot", "member_index", "ident_arg", "member_dot_arg", "list_lit", "map_lit"}
    | {"relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in"}
    | {"addition_add", "addition_sub", "multiplication_mul", "multiplication_div", "multiplication_mod"}
    | {"unary_not", "unary_neg"}
)
_LOOPS = frozenset({"all", "exists", "exists_one", "existsOne", "map", "filter", "transformList", "transformMap"})
_MAP_SIZE = 32  # ResourceSliceMaxAttributesAndCapacitiesPerDevice
_OTHER_SIZE = 64  # DeviceAttributeMaxValueLength


def _unwrap(tree: Any) -> Any:
    while (
        not isinstance(tree, str)
        and len(tree.children) == 1
        and tree.data not in ("literal", "ident", "list_lit", "map_lit")
    ):
        tree = tree.children[0]
    return tree


def _range_size(tree: Any) -> int:
    node = _unwrap(tree)
    if isinstance(node, str):
        return _OTHER_SIZE
    if node.data == "list_lit":
        items = [c for c in node.children if not isinstance(c, str)]
        return len(items[0].children) if items else 0
    text = " ".join(str(t) for t in node.scan_values(lambda v: isinstance(v, str)))
    if text.startswith(("device attributes", "device capacity")):
        depth = node.data
        return _MAP_SIZE if depth in ("member_dot", "member_index") else _OTHER_SIZE
    return _OTHER_SIZE


def max_cost(tree: Any) -> int:
    """The estimated worst-case cost of the parsed expression ``tree``."""
    if isinstance(tree, str):
        return 0
    if tree.data == "member_dot_arg" and str(tree.children[1]) in _LOOPS and len(tree.children) == 3:
        target, args = tree.children[0], tree.children[2]
        exprs = [c for c in args.children if not isinstance(c, str)] if args is not None else []
        skip = 2 if is_two_variable(tree) else 1
        body = sum(max_cost(e) for e in exprs[skip:])
        return 1 + max_cost(target) + _range_size(target) * (2 + body)
    own = 1 if tree.data in _COSTED else 0
    return own + sum(max_cost(c) for c in tree.children if not isinstance(c, str))
