"""The CRD-time checks of ``x-kubernetes-validations``, as apiextensions' CRD validation makes them.

Upstream: pkg/apis/apiextensions/validation/validation.go ``ValidateCustomResourceDefinitionOpenAPISchema``: per
rule, in this order, ``rule is not specified`` (Required), the ``message`` checks, an empty ``messageExpression``
(Required), an unsupported ``reason``, the ``fieldPath`` checks (``fieldPath must be a valid path: <why>``);
then, only when none of those failed at the node, compilation: ``Invalid value: apiextensions.ValidationRule{...}:
compilation failed: ...`` on ``rule`` (the bad value is Go's ``%#v`` of the internal struct),
``messageExpression compilation failed: ...`` on ``messageExpression``, and ``oldSelf cannot be used on the
uncorrelatable portion of the schema within <path>`` for a transition rule under the items of a list that is
not ``x-kubernetes-list-type: map``, and ``optionalOldSelf: Invalid value: true: may not be set if oldSelf is not
used in rule``. Children are checked before their parent, as upstream recurses first.
Not checked: the estimated cost limits (``estimated rule cost exceeds budget by factor of ...``: they need
cel-go's type-checked cost estimator over ``maxLength``/``maxItems``; see :mod:`.cel_cost`) and cel-go's type
checking (see :mod:`.cel`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubeplane.api.validation.field import ErrorList, GoSyntax, Path, invalid, not_supported, required

from .cel import REASONS, compile_expression, valid_field_path

Schema = Mapping[str, Any]

__all__ = ["go_rule", "validate_rules_of_schema"]

_NEWLINES = re.compile(r"[\n\r]+")


def _go_string(value: object) -> str:
    """Go's ``%#v`` of a string (``strconv.Quote``, enough for rule texts)."""
    text = str(value or "")
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + escaped.replace("\t", "\\t") + '"'


def go_rule(rule: Mapping[str, Any]) -> GoSyntax:
    """The rule as Go's ``%#v`` of the internal ``apiextensions.ValidationRule``. Pointers print as an address
    upstream; a fixed one stands for it here (``nil`` when unset, as upstream)."""
    reason = "nil" if rule.get("reason") is None else "0xc000000000"
    old = "nil" if rule.get("optionalOldSelf") is None else "0xc000000000"
    return GoSyntax(
        f"apiextensions.ValidationRule{{Rule:{_go_string(rule.get('rule'))}, "
        f"Message:{_go_string(rule.get('message'))}, "
        f"MessageExpression:{_go_string(rule.get('messageExpression'))}, "
        f"Reason:(*apiextensions.FieldValueErrorReason)({reason}), FieldPath:{_go_string(rule.get('fieldPath'))}, "
        f"OptionalOldSelf:(*bool)({old})}}"
    )


def validate_rules_of_schema(schema: Schema, path: Path) -> ErrorList:
    """CRD-time errors of every ``x-kubernetes-validations`` under ``schema``, reached at ``path``: the rules'
    field errors, then their compilation errors (upstream ``OpenAPISchemaErrorList.AllErrors``)."""
    schema_errs, cel_errs = _walk(schema, path, None)
    return schema_errs + cel_errs


def _walk(schema: Schema, path: Path, uncorrelatable: Path | None) -> tuple[ErrorList, ErrorList]:
    schema_errs: ErrorList = []
    cel_errs: ErrorList = []

    def into(sub: Schema, at: Path, within: Path | None) -> None:
        more, cel_more = _walk(sub, at, within)
        schema_errs.extend(more)
        cel_errs.extend(cel_more)

    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            into(sub, path.child("properties").key(str(key)), uncorrelatable)
    items = schema.get("items")
    if isinstance(items, Mapping):
        within = uncorrelatable
        if within is None and schema.get("x-kubernetes-list-type") != "map":
            within = path.child("items")
        into(items, path.child("items"), within)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        into(extra, path.child("additionalProperties"), uncorrelatable)
    for i, sub in enumerate(schema.get("allOf") or ()):
        if isinstance(sub, Mapping):
            into(sub, path.child("allOf").index(i), uncorrelatable)
    rules = schema.get("x-kubernetes-validations")
    if not isinstance(rules, list):
        return schema_errs, cel_errs
    base = path.child("x-kubernetes-validations")
    for i, rule in enumerate(rules):
        if isinstance(rule, Mapping):
            schema_errs.extend(_rule_fields(rule, schema, base.index(i)))
    if schema_errs:
        return schema_errs, cel_errs  # upstream compiles only when nothing at or under the node is invalid
    for i, rule in enumerate(rules):
        if isinstance(rule, Mapping):
            cel_errs.extend(_compile(rule, base.index(i), uncorrelatable))
    return schema_errs, cel_errs


def _rule_fields(rule: Mapping[str, Any], schema: Schema, rpath: Path) -> ErrorList:
    errs: ErrorList = []
    source = str(rule.get("rule") or "")
    message = str(rule.get("message") or "")
    if not source.strip():
        errs.append(required(rpath.child("rule"), "rule is not specified"))
    elif message and not message.strip():
        errs.append(invalid(rpath.child("message"), message, detail="message must be non-empty if specified"))
    elif len(message) > 2048:
        detail = "message must have a maximum length of 2048 characters"
        errs.append(invalid(rpath.child("message"), message[:10] + "...", detail=detail))
    elif _NEWLINES.search(message.strip()):
        errs.append(invalid(rpath.child("message"), message, detail="message must not contain line breaks"))
    elif _NEWLINES.search(source.strip()) and not message.strip():
        errs.append(required(rpath.child("message"), "message must be specified if rule contains line breaks"))
    expression = str(rule.get("messageExpression") or "")
    if expression and not expression.strip():
        errs.append(required(rpath.child("messageExpression"), "messageExpression must be non-empty if specified"))
    reason = rule.get("reason")
    if reason is not None and reason not in REASONS:
        errs.append(not_supported(rpath.child("reason"), reason, supported=REASONS))
    field_path = str(rule.get("fieldPath") or "")
    if field_path and not field_path.strip():
        errs.append(invalid(rpath.child("fieldPath"), field_path, detail="fieldPath must be non-empty if specified"))
    if _NEWLINES.search(field_path):
        errs.append(invalid(rpath.child("fieldPath"), field_path, detail="fieldPath must not contain line breaks"))
    if field_path:
        try:
            valid_field_path(field_path, schema)
        except ValueError as exc:
            detail = f"fieldPath must be a valid path: {exc}"
            errs.append(invalid(rpath.child("fieldPath"), field_path, detail=detail))
    return errs


def _compile(rule: Mapping[str, Any], rpath: Path, uncorrelatable: Path | None) -> ErrorList:
    errs: ErrorList = []
    compiled = compile_expression(str(rule["rule"]))
    if compiled.error:
        errs.append(invalid(rpath.child("rule"), go_rule(rule), detail="compilation failed: " + compiled.error))
    expression = str(rule.get("messageExpression") or "")
    if expression.strip():
        message = compile_expression(expression)
        if message.error:
            detail = "messageExpression compilation failed: " + message.error
            errs.append(invalid(rpath.child("messageExpression"), go_rule(rule), detail=detail))
    if compiled.uses_old_self:
        if uncorrelatable is not None:
            detail = f"oldSelf cannot be used on the uncorrelatable portion of the schema within {uncorrelatable}"
            errs.append(invalid(rpath.child("rule"), str(rule["rule"]), detail=detail))
    elif rule.get("optionalOldSelf") is not None:
        detail = "may not be set if oldSelf is not used in rule"
        errs.append(invalid(rpath.child("optionalOldSelf"), bool(rule["optionalOldSelf"]), detail=detail))
    return errs
