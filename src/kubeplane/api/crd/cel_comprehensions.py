"""cel-go's two-variable comprehensions (``ext.TwoVarComprehensions``, in the Kubernetes base environment since
1.32) for cel-python, whose parser reads them but whose interpreter knows only one-variable macros.

``list.all(i, v, p)``, ``list.exists(i, v, p)``, ``list.existsOne(i, v, p)`` bind the index and the element;
on a map the key and the value. ``transformList(i, v, [filter,] expr)`` builds a list, ``transformMap(k, v,
[filter,] expr)`` a map with the same keys. Errors follow CEL's logic: ``all`` is false as soon as one element
is false (errors elsewhere notwithstanding) and ``exists`` true as soon as one is true; otherwise an element's
error is the result. ``transformMapEntry`` is not provided.
"""

from __future__ import annotations

from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

__all__ = ["TWO_VARIABLE", "evaluate", "is_two_variable"]

TWO_VARIABLE = frozenset({"all", "exists", "existsOne", "exists_one", "transformList", "transformMap"})
_ARITY = {"all": (3,), "exists": (3,), "existsOne": (3,), "exists_one": (3,), "transformList": (3, 4)}
_ARITY["transformMap"] = (3, 4)


def _exprs(tree: Any) -> list[Any]:
    args = tree.children[2] if len(tree.children) == 3 else None
    return [] if args is None else [c for c in args.children if not isinstance(c, str)]


def is_two_variable(tree: Any) -> bool:
    """Whether a ``member_dot_arg`` node is a two-variable comprehension (by its name and argument count)."""
    name = str(tree.children[1])
    return name in TWO_VARIABLE and len(_exprs(tree)) in _ARITY[name]


def _variable(expr: Any) -> str:
    idents = [str(t) for n in expr.find_data("ident") for t in n.children if isinstance(t, str)]
    if len(idents) != 1:
        raise CELEvalError("two-variable comprehension variables must be simple identifiers", SyntaxError, ())
    return idents[0]


def evaluate(evaluator: Any, tree: Any) -> Any:
    """The comprehension's value, with ``evaluator``'s activation and cost tracking (its sub-evaluators)."""
    name = str(tree.children[1])
    exprs = _exprs(tree)
    target = evaluator.visit(tree.children[0])
    if isinstance(target, CELEvalError):
        return target
    try:
        first, second = _variable(exprs[0]), _variable(exprs[1])
    except CELEvalError as exc:
        return exc
    if isinstance(target, list):
        pairs = [(celtypes.IntType(i), v) for i, v in enumerate(target)]
    elif isinstance(target, dict):
        pairs = list(target.items())
    else:
        return CELEvalError("no such overload", TypeError, ())

    def run(expr: Any, key: Any, value: Any) -> Any:
        try:
            return evaluator.sub_evaluator(expr).evaluate({first: key, second: value})
        except CELEvalError as exc:
            return exc

    if name in ("all", "exists", "existsOne", "exists_one"):
        results = [run(exprs[2], k, v) for k, v in pairs]
        errors = [r for r in results if isinstance(r, CELEvalError)]
        truths = [bool(r) for r in results if not isinstance(r, CELEvalError)]
        if name == "all":
            if not all(truths):
                return celtypes.BoolType(False)
            return errors[0] if errors else celtypes.BoolType(True)
        if name == "exists":
            if any(truths):
                return celtypes.BoolType(True)
            return errors[0] if errors else celtypes.BoolType(False)
        return errors[0] if errors else celtypes.BoolType(sum(truths) == 1)
    selected = []
    for k, v in pairs:
        if len(exprs) == 4:
            keep = run(exprs[2], k, v)
            if isinstance(keep, CELEvalError):
                return keep
            if not bool(keep):
                continue
        out = run(exprs[-1], k, v)
        if isinstance(out, CELEvalError):
            return out
        selected.append((k, out))
    if name == "transformList":
        return celtypes.ListType([out for _, out in selected])
    if not isinstance(target, dict):
        return CELEvalError("no such overload", TypeError, ())
    return celtypes.MapType(dict(selected))
