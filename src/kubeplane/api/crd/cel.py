"""CRD ``x-kubernetes-validations``: CEL rules compiled once per schema and evaluated per write, as kube-apiserver.

Upstream: apiextensions-apiserver pkg/apiserver/schema/cel (compilation.go ``Compile``, validation.go
``Validator.validate``/``validateExpressions``/``fieldErrorForReason``/``ruleMessageOrDefault``) and, for the
CRD itself, pkg/apis/apiextensions/validation/validation.go (compile errors as
``...x-kubernetes-validations[i].rule: Invalid value: apiextensions.ValidationRule{...}: compilation failed: ...``).

The engine is cel-python (``celpy``): an interpreter without cel-go's type checker, so a rule is *parsed* at CRD
creation and checked for functions and variables that do not exist (comprehension variables scoped); type errors
cel-go finds at compile time surface here at evaluation (``no such overload`` → upstream's runtime message for
that case). Functions are the Kubernetes base environment's (:mod:`.cel_library`); runtime cost is counted and
limited as upstream (:mod:`.cel_cost`: per call and per object), the CRD-time cost estimates are not made. The
CRD-time checks are :mod:`.celdefinition`'s. Invariants:

* a rule is evaluated only on a non-null value, with ``self`` bound to it; at a resource root ``self`` also has
  ``apiVersion``, ``kind`` and ``metadata.{name,generateName}`` (``model.WithTypeAndObjectMeta``);
* a rule naming ``oldSelf`` (a transition rule) runs only when the old value exists: on update, correlated
  through object properties, map values and ``x-kubernetes-list-type: map`` items by key, never on create;
  with ``optionalOldSelf: true`` it always runs, ``oldSelf`` being an optional (``optional.none()`` when there
  is no correlated old value);
* once the object's cost budget is spent, no further rule runs (``validation failed due to running out of
  cost budget, no further validation rules will be run``);
* evaluation never raises: whatever cel-python throws becomes upstream's ``<error> evaluating rule: <rule>``
  (a 422, never a 5xx);
* errors come in upstream's order: the node's rules in order, then ``allOf``, then children.

Compiled programs are cached by rule text (:func:`compile_expression`), so a CRD's rules compile once, not per request.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import base_functions

from kubeplane.api.validation.field import (
    ErrorList,
    Path,
    duplicate,
    forbidden,
    invalid,
    required,
)

from .cel_comprehensions import TWO_VARIABLE, is_two_variable
from .cel_cost import PER_CALL_LIMIT, RUNTIME_BUDGET, CostExceeded, CostingEvaluator, Tracker
from .cel_library import FUNCTIONS, PACKAGES
from .cel_types import EMPTY, LibraryError, Optional

Schema = Mapping[str, Any]

__all__ = ["Compiled", "compile_expression", "has_rules", "valid_field_path", "validate"]

REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"}) | TWO_VARIABLE


_KNOWN = frozenset(base_functions) | frozenset(FUNCTIONS) | _MACROS
_ENV = celpy.Environment()


# -- compilation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compiled:
    """One expression: its program, or the detail of why it did not compile (``error``)."""

    program: celpy.Runner | None
    uses_old_self: bool
    error: str


_COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "map", "filter"}) | TWO_VARIABLE
_TYPE_NAMES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"}
    | {"duration", "timestamp"}
)
_VARIABLES = frozenset({"self", "oldSelf"}) | _TYPE_NAMES | frozenset(PACKAGES)


def _undeclared(tree: Any, bound: frozenset[str]) -> Iterator[Any]:
    """Tokens naming a function that does not exist or a variable that is not declared (``self``, ``oldSelf``,
    a comprehension's variable, a type name), in source order. The tree is lark's; tokens are ``str``s with a
    ``line`` and ``column``."""
    children = tree.children
    tokens = [c for c in children if isinstance(c, str)]
    subtrees = [c for c in children if not isinstance(c, str)]
    if tree.data == "ident":
        if tokens and str(tokens[0]) not in bound:
            yield tokens[0]
        return
    if tree.data in ("ident_arg", "member_dot_arg") and tokens and str(tokens[0]) not in _KNOWN:
        yield tokens[0]
    if tree.data == "member_dot_arg" and tokens and str(tokens[0]) in _COMPREHENSIONS and len(subtrees) == 2:
        target, args = subtrees
        yield from _undeclared(target, bound)
        exprs = [c for c in args.children if not isinstance(c, str)]
        count = 2 if is_two_variable(tree) else 1  # cel-go's two-variable forms bind index/key and value
        names = [str(t) for e in exprs[:count] for n in e.find_data("ident") for t in n.children if isinstance(t, str)]
        inner = bound | frozenset(names[:count])
        for expr in exprs[count:]:
            yield from _undeclared(expr, inner)
        return
    for sub in subtrees:
        yield from _undeclared(sub, bound)


def _located(source: str, line: int, column: int, message: str) -> str:
    """cel-go's ``issues.String()`` for one issue: position (1-based column), source line, caret."""
    lines = source.splitlines() or [""]
    text = lines[min(max(line, 1), len(lines)) - 1]
    return f"ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {'.' * max(column - 1, 0)}^"


@lru_cache(maxsize=4096)
def compile_expression(source: str) -> Compiled:
    """Parse ``source`` and build its program; cached, so a CRD's rules compile once (about 1 ms to 40 ms each).

    The error detail imitates cel-go's ``issues.String()`` (``ERROR: <input>:line:col: ...`` then the source
    line and a caret); the parser's own words are cel-python's."""
    try:
        tree = _ENV.compile(source)
    except CELParseError as exc:
        line = int(getattr(exc, "line", 1) or 1)
        col = int(getattr(exc, "column", 0) or 0)
        return Compiled(None, False, _located(source, line, col + 1, "Syntax error"))
    for token in _undeclared(tree, _VARIABLES):
        line, column = int(getattr(token, "line", 1) or 1), int(getattr(token, "column", 1) or 1)
        message = f"undeclared reference to '{token}' (in container '')"
        return Compiled(None, False, _located(source, line, column, message))
    uses_old = any(str(t) == "oldSelf" for n in tree.find_data("ident") for t in n.children if isinstance(t, str))
    return Compiled(_ENV.program(tree, functions=dict(FUNCTIONS)), uses_old, "")


def _has_rules(schema: Schema) -> bool:
    if schema.get("x-kubernetes-validations"):
        return True
    subs = list((schema.get("properties") or {}).values()) + list(schema.get("allOf") or ())
    subs += [schema[k] for k in ("items", "additionalProperties") if isinstance(schema.get(k), Mapping)]
    return any(isinstance(s, Mapping) and _has_rules(s) for s in subs)


def has_rules(schema: Schema) -> bool:
    """Whether any node of ``schema`` carries ``x-kubernetes-validations`` (upstream ``hasXValidations``)."""
    return _has_rules(schema)


# -- values ------------------------------------------------------------------------------------------------------


def to_cel(value: Any, schema: Schema | None) -> Any:
    """A JSON value as CEL sees it under ``schema``: ``number`` fields are doubles even when written as ``1``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        if schema is not None and schema.get("type") == "number":
            return celtypes.DoubleType(float(value))
        return celtypes.IntType(value)
    if isinstance(value, float):
        return celtypes.DoubleType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, list):
        items = schema.get("items") if schema is not None else None
        return celtypes.ListType([to_cel(v, items if isinstance(items, Mapping) else None) for v in value])
    if isinstance(value, dict):
        props: Mapping[str, Any] = (schema.get("properties") or {}) if schema is not None else {}
        extra = schema.get("additionalProperties") if schema is not None else None
        return celtypes.MapType(
            {
                celtypes.StringType(k): to_cel(v, props.get(k) or (extra if isinstance(extra, Mapping) else None))
                for k, v in value.items()
            }
        )
    return value


def _root_value(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The resource root as CEL sees it: ``metadata`` narrowed to ``name`` and ``generateName``."""
    out = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        out["metadata"] = {k: meta[k] for k in ("name", "generateName") if k in meta}
    return out


# -- evaluation --------------------------------------------------------------------------------------------------


class _Budget:
    """What is left of the object's runtime cost budget; ``remaining < 0`` once exhausted (nothing more runs)."""

    __slots__ = ("per_call", "remaining")

    def __init__(self, remaining: int, per_call: int) -> None:
        self.remaining = remaining
        self.per_call = per_call


_OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"
_CANCELLED = "operation cancelled: actual cost limit exceeded"


def validate(
    obj: Mapping[str, Any],
    schema: Schema,
    old: Mapping[str, Any] | None = None,
    *,
    budget: int = RUNTIME_BUDGET,
    per_call_limit: int = PER_CALL_LIMIT,
) -> ErrorList:
    """Errors of every rule in ``schema`` against the custom resource ``obj`` (``old`` on update), drawing on
    one runtime cost ``budget`` (upstream ``RuntimeCELCostBudget``), each program stopped past
    ``per_call_limit`` (``PerCallLimit``)."""
    errs: ErrorList = []
    old_root = _root_value(old) if old is not None else None
    _validate(_root_value(obj), old_root, schema, None, errs, _Budget(budget, per_call_limit))
    return errs


def _validate(value: Any, old: Any, schema: Schema, path: Path | None, errs: ErrorList, budget: _Budget) -> None:
    if value is None or budget.remaining < 0:
        return
    _expressions(value, old, schema, path, errs, budget)
    for sub in schema.get("allOf") or ():
        if isinstance(sub, Mapping):
            _validate(value, old, sub, path, errs, budget)
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            olds = _correlate_list(value, old, schema)
            for i, item in enumerate(value):
                _validate(item, olds[i], items, _index(path, i), errs, budget)
    elif isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        props: Mapping[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key)
            if isinstance(sub, Mapping):
                _validate(item, old_map.get(key), sub, _child(path, key), errs, budget)
            elif isinstance(extra, Mapping):
                _validate(item, old_map.get(key), extra, _key(path, key), errs, budget)


def _child(path: Path | None, name: str) -> Path:
    return Path(name) if path is None else path.child(name)


def _key(path: Path | None, key: str) -> Path:
    return Path("").key(key) if path is None else path.key(key)


def _index(path: Path | None, i: int) -> Path:
    return Path("").index(i) if path is None else path.index(i)


def _correlate_list(value: list[Any], old: Any, schema: Schema) -> list[Any]:
    """Old items for ``value``'s items: only ``x-kubernetes-list-type: map`` lists correlate (by their keys)."""
    keys = schema.get("x-kubernetes-list-map-keys") or ()
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [None] * len(value)

    def key_of(item: Any) -> tuple[Any, ...] | None:
        return tuple(item.get(k) for k in keys) if isinstance(item, dict) else None

    by_key = {key_of(o): o for o in old if key_of(o) is not None}
    return [by_key.get(key_of(v)) for v in value]


def _activation(old: Any, rule: Mapping[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """``self``, the packages, and ``oldSelf``: the old value, or for an ``optionalOldSelf`` rule an optional
    (``optional.none()`` when there is no correlated old value, as on create)."""
    if not rule.get("optionalOldSelf"):
        return base
    wrapped = EMPTY if old is None else Optional(base.get("oldSelf"), present=True)
    return {**base, "oldSelf": wrapped}


def _expressions(value: Any, old: Any, schema: Schema, path: Path | None, errs: ErrorList, budget: _Budget) -> None:
    """``validateExpressions``: each rule in order; cost drawn from ``budget``; an exhausted budget stops all."""
    rules = schema.get("x-kubernetes-validations")
    if not isinstance(rules, list) or not rules:
        return
    stype = str(schema.get("type") or "")
    base: dict[str, Any] = {"self": to_cel(value, schema), **PACKAGES}
    if old is not None:
        base["oldSelf"] = to_cel(old, schema)
    for rule in rules:
        if not isinstance(rule, Mapping) or not str(rule.get("rule") or "").strip():
            continue
        compiled = compile_expression(str(rule["rule"]))
        if compiled.program is None:
            errs.append(invalid(path, stype, detail=f"rule compile error: compilation failed: {compiled.error}"))
            continue
        if compiled.uses_old_self and old is None and not rule.get("optionalOldSelf"):
            continue  # transition rules need an existing, correlated old value
        activation = _activation(old, rule, base)
        tracker = Tracker(budget.per_call)
        outcome = _run(compiled.program, activation, tracker)
        if tracker.cost > budget.remaining:
            errs.append(invalid(path, stype, detail=_OUT_OF_BUDGET))
            budget.remaining = -1
            return
        budget.remaining -= tracker.cost
        if isinstance(outcome, Exception):
            errs.append(invalid(path, stype, detail=_eval_error(outcome, rule)))
            continue
        if isinstance(outcome, bool | celtypes.BoolType) and bool(outcome):
            continue
        current = path
        normalized = _normalized_field_path(str(rule.get("fieldPath") or ""), schema)
        if normalized:
            current = _child(path, normalized)
        message = _message_expression(rule, activation, budget)
        errs.append(_error_for_reason(current, stype, message or _message_or_default(rule), rule.get("reason")))
        if budget.remaining < 0:
            return


def _run(program: celpy.Runner, activation: dict[str, Any], tracker: Tracker) -> Any:
    """The program's value, or the exception that ended it (never raised: a rule's failure is the client's 422,
    never the server's 500)."""
    evaluator = CostingEvaluator(program.ast, program.new_activation(), tracker)
    try:
        return evaluator.evaluate(activation)
    except CostExceeded as exc:
        return exc
    except Exception as exc:
        return exc


def _eval_error(exc: Exception, rule: Mapping[str, Any]) -> str:
    """Upstream's runtime error details (``validateExpressions``), from cel-python's exception."""
    if isinstance(exc, CostExceeded):
        return f"'{_CANCELLED}': call cost exceeds limit for rule: {_rule_error_string(rule)}"
    text = str(exc.args[0]) if exc.args else str(exc)
    cause = exc.args[1] if len(exc.args) > 1 else type(exc)
    if cause is LibraryError:
        return f"{text} evaluating rule: {_rule_error_string(rule)}"
    if "no matching overload" in text or "no such overload" in text:
        return (
            "'no such overload': call arguments did not match a supported operator, function or macro "
            f"signature for rule: {_rule_error_string(rule)}"
        )
    if text.startswith("Attempt to reduce an empty sequence"):  # cel-python's own list.min()
        text = "min called on empty list"
    elif cause is KeyError:
        m = re.search(r"'([^']*)'", text)
        text = f"no such key: {m.group(1)}" if m else "no such key"
    elif cause is ZeroDivisionError:
        text = "division by zero" if "divide" in text else "modulus by zero"
    elif cause is IndexError:
        text = "index out of bounds"
    return f"{text} evaluating rule: {_rule_error_string(rule)}"


def _message_expression(rule: Mapping[str, Any], activation: dict[str, Any], budget: _Budget) -> str:
    """The rule's ``messageExpression`` evaluated (``evalMessageExpression``), or ``""`` when absent or failing
    (upstream then uses the rule's message); its cost is drawn from ``budget`` too, and exhausting it ends
    validation (``remaining`` set below zero)."""
    source = str(rule.get("messageExpression") or "")
    if not source.strip():
        return ""
    compiled = compile_expression(source)
    if compiled.program is None:
        return ""
    tracker = Tracker(budget.per_call)
    out = _run(compiled.program, activation, tracker)
    if tracker.cost > budget.remaining:
        budget.remaining = -1
        return ""
    budget.remaining -= tracker.cost
    if not isinstance(out, str):
        return ""
    text = out.strip()
    if not text or "\n" in text or len(text) > 5 * 1024:
        return ""
    return text


def _message_or_default(rule: Mapping[str, Any]) -> str:
    message = str(rule.get("message") or "")
    return message.strip() if message else f"failed rule: {_rule_error_string(rule)}"


def _rule_error_string(rule: Mapping[str, Any]) -> str:
    message = str(rule.get("message") or "")
    return message.strip() if message else str(rule.get("rule") or "").strip()


def _error_for_reason(path: Path | None, stype: str, detail: str, reason: object) -> Any:
    """``fieldErrorForReason``: the reason picks the error type; ``Invalid`` shows the schema type as value."""
    if reason == "FieldValueForbidden":
        return forbidden(path, detail)
    if reason == "FieldValueRequired":
        return required(path, detail)
    if reason == "FieldValueDuplicate":
        return duplicate(path, stype)
    return invalid(path, stype, detail=detail)


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _path_tokens(json_path: str) -> list[str]:
    """``ValidFieldPath``'s scanner: ``.``, ``[`` and ``]`` alone, single-quoted strings whole, other runs."""
    out: list[str] = []
    i = 0
    while i < len(json_path):
        c = json_path[i]
        if c == "'":
            j = i + 1
            while j < len(json_path) and not (json_path[j] == "'" and json_path[j - 1] != "\\"):
                j += 1
            out.append(json_path[i : j + 1])
            i = j + 1
        elif c in ".[]":
            out.append(c)
            i += 1
        else:
            j = i
            while j < len(json_path) and json_path[j] not in ".[]":
                j += 1
            out.append(json_path[i:j])
            i = j
    return out


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1) not in _ESCAPES:
            raise ValueError(f"invalid string literal: invalid escape char {m.group(0)}")
        return _ESCAPES[m.group(1)]

    return re.sub(r"\\(.)", one, text)


def valid_field_path(json_path: str, schema: Schema) -> Path | None:
    """Upstream ``ValidFieldPath``: the field path a rule's ``fieldPath`` names under ``schema`` (properties by
    ``.name`` or ``['name']``, map values by key); raises ``ValueError`` with upstream's reason when invalid."""
    path: Path | None = None
    node: Any = schema
    tokens = iter(_path_tokens(json_path))

    def step(name: str) -> None:
        nonlocal path, node
        if isinstance(node.get("properties"), Mapping):
            path = _child(path, name)
            if name not in node["properties"]:
                raise ValueError("does not refer to a valid field")
            node = node["properties"][name]
        elif isinstance(node.get("additionalProperties"), Mapping):
            path = _key(path, name)
            node = node["additionalProperties"]
        else:
            raise ValueError("does not refer to a valid field")

    for tok in tokens:
        if tok == "[":
            quoted = next(tokens, None)
            if quoted is None:
                raise ValueError("unexpected end of JSON path")
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise ValueError(f"expected single quoted string but got {quoted}")
            step(_unescape(quoted[1:-1]))
            close = next(tokens, None)
            if close is None:
                raise ValueError("unexpected end of JSON path")
            if close != "]":
                raise ValueError(f"expected ] but got {close}")
        elif tok == ".":
            name = next(tokens, None)
            if name is None:
                raise ValueError("unexpected end of JSON path")
            step(name)
        else:
            raise ValueError(f"expected [ or . but got: {tok}")
    return path


def _normalized_field_path(json_path: str, schema: Schema) -> str:
    """The child name upstream appends for a failed rule's ``fieldPath`` (``NormalizedRuleFieldPath``)."""
    if not json_path:
        return ""
    try:
        path = valid_field_path(json_path, schema)
    except ValueError:
        return ""
    return "" if path is None else str(path)
