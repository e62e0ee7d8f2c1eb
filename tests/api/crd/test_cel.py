"""CRD ``x-kubernetes-validations`` (CEL), as apiextensions-apiserver evaluates them.

Pins pkg/apiserver/schema/cel/validation.go (``validateExpressions``: ``self``/``oldSelf``, transition rules
skipped without an old value, ``ruleMessageOrDefault``, ``messageExpression``, ``fieldPath``,
``fieldErrorForReason``), registry/customresource/strategy.go ``hasBlockingErr``, and the CRD-time compile
errors of pkg/apis/apiextensions/validation/validation.go."""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd import cel, celdefinition
from kubeplane.api.crd.definition import validate_crd
from kubeplane.api.crd.values import validate_resource
from kubeplane.api.validation.field import new_path

SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must be smaller than maxReplicas"},
        {"rule": "!has(self.mode) || self.mode != 'off' || self.replicas == 0"},
        {
            "rule": "!has(self.ports) || self.ports.all(p, p > 0)",
            "message": "ports must be positive",
            "fieldPath": ".ports",
        },
    ],
    "properties": {
        "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]},
        "maxReplicas": {"type": "integer"},
        "mode": {"type": "string"},
        "name": {
            "type": "string",
            "x-kubernetes-validations": [
                {
                    "rule": "self.lowerAscii() == self",
                    "messageExpression": "'name ' + self + ' must be lower case'",
                    "reason": "FieldValueForbidden",
                }
            ],
        },
        "ports": {"type": "array", "items": {"type": "integer"}},
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "size(self) < 4"}]},
        },
    },
}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"spec": SPEC}}


def cr(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec}


def messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [str(e) for e in validate_resource(obj, SCHEMA, old)]


def test_valid_object_has_no_errors() -> None:
    assert messages(cr(replicas=1, maxReplicas=2, name="ok", ports=[80], labels={"a": "b"})) == []


def test_failed_rule_gives_message_with_schema_type() -> None:
    # validateExpressions → fieldErrorForReason(nil reason) → field.Invalid(fldPath, sts.Type, message)
    assert messages(cr(replicas=3, maxReplicas=2)) == [
        'spec: Invalid value: "object": replicas must be smaller than maxReplicas'
    ]


def test_default_message_is_failed_rule() -> None:
    # ruleMessageOrDefault: "failed rule: <rule>"
    assert messages(cr(replicas=1, maxReplicas=2, mode="off")) == [
        "spec: Invalid value: \"object\": failed rule: !has(self.mode) || self.mode != 'off' || self.replicas == 0"
    ]


def test_message_expression_reason_field_path_and_map_keys() -> None:
    got = messages(cr(replicas=1, maxReplicas=2, name="Big", ports=[0], labels={"k": "long"}))
    assert got == [
        'spec.ports: Invalid value: "object": ports must be positive',  # fieldPath appended, the node's type
        "spec.name: Forbidden: name Big must be lower case",  # messageExpression + FieldValueForbidden
        'spec.labels[k]: Invalid value: "string": failed rule: size(self) < 4',  # additionalProperties: Key
    ]


def test_transition_rule_skipped_on_create_and_checked_on_update() -> None:
    # compiled.UsesOldSelf && oldObj == nil → continue; with an old value: self >= oldSelf
    assert messages(cr(replicas=1, maxReplicas=5)) == []
    old = cr(replicas=3, maxReplicas=5)
    assert messages(cr(replicas=4, maxReplicas=5), old) == []
    assert messages(cr(replicas=2, maxReplicas=5), old) == [
        'spec.replicas: Invalid value: "integer": failed rule: self >= oldSelf'
    ]


def test_type_error_blocks_rules() -> None:
    # strategy.go hasBlockingErr: a TypeInvalid error stops CEL evaluation with one extra error
    assert messages(cr(replicas="x", maxReplicas=0)) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; '
        "correct the existing errors to complete validation",
    ]


def test_runtime_errors_name_the_rule() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.missing == 1"}]}
    errs = [str(e) for e in cel.validate({"kind": "K"}, schema)]
    assert errs == ['<nil>: Invalid value: "object": no such key: missing evaluating rule: self.missing == 1']
    # a rule on an int-or-string value compares an int with a string: upstream's runtime overload message
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.port > 1", "message": "port too low"}]}
    assert [str(e) for e in cel.validate({"port": "http"}, schema)] == [
        "<nil>: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, "
        "function or macro signature for rule: port too low"
    ]
    # a non-bool result is a failure, never an exception (cel-go refuses it at compile time)
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.port"}]}
    assert [str(e) for e in cel.validate({"port": 1}, schema)] == [
        '<nil>: Invalid value: "object": failed rule: self.port'
    ]


def test_root_sees_metadata_name_only() -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('w')"}]}
    assert cel.validate({"metadata": {"name": "w1", "labels": {"a": "b"}}}, schema) == []
    assert len(cel.validate({"metadata": {"name": "v1"}}, schema)) == 1


PREFIX = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def crd_errors(schema: dict[str, Any]) -> list[str]:
    path = new_path("spec", "validation", "openAPIV3Schema").child("properties").key("spec")
    return [str(e) for e in celdefinition.validate_rules_of_schema(schema, path)]


def test_compile_errors_at_crd_time() -> None:
    # validation.go: cel.Compile's error on rule/messageExpression, the rule's Go struct as the bad value
    rules = [{"rule": "self.replicas +"}, {"rule": "nosuch(self)"}, {"rule": "true", "messageExpression": "'a' +"}]
    errs = crd_errors({"type": "object", "x-kubernetes-validations": rules})
    value = (
        'apiextensions.ValidationRule{Rule:"self.replicas +", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}'
    )
    assert len(errs) == 3
    assert errs[0].startswith(f"{PREFIX}[0].rule: Invalid value: {value}: compilation failed: ERROR: <input>:1:16:")
    assert errs[1].endswith(
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nosuch' (in container '')\n"
        " | nosuch(self)\n | ^"
    )
    assert errs[2].startswith(f"{PREFIX}[2].messageExpression: Invalid value: apiextensions.ValidationRule{{")
    assert "messageExpression compilation failed: ERROR: <input>:1:" in errs[2]


def test_undeclared_variables_outside_their_comprehension() -> None:
    # cel-go's checker: a comprehension variable is declared inside the macro only
    assert cel.compile_expression("self.l.all(x, self.l.exists(y, y == x))").error == ""
    assert cel.compile_expression("self.l.all(x, x > y)").error == (
        "ERROR: <input>:1:19: undeclared reference to 'y' (in container '')\n | self.l.all(x, x > y)\n"
        " | ..................^"
    )


def test_rule_field_errors_at_crd_time_skip_compilation() -> None:
    # validation.go: field checks first; compilation only when none failed at or under the node
    rules = [
        {"rule": " "},
        {"rule": "self.x +", "reason": "X"},
        {"rule": "true", "message": "a\nb"},
        {"rule": "true", "fieldPath": ".nope"},
        {"rule": "true", "fieldPath": "x"},
    ]
    assert crd_errors(
        {"type": "object", "properties": {"x": {"type": "string"}}, "x-kubernetes-validations": rules}
    ) == [
        f"{PREFIX}[0].rule: Required value: rule is not specified",
        f'{PREFIX}[1].reason: Unsupported value: "X": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        f'{PREFIX}[2].message: Invalid value: "a\\nb": message must not contain line breaks',
        f'{PREFIX}[3].fieldPath: Invalid value: ".nope": '
        "fieldPath must be a valid path: does not refer to a valid field",
        f'{PREFIX}[4].fieldPath: Invalid value: "x": fieldPath must be a valid path: expected [ or . but got: x',
    ]


def test_old_self_refused_under_unkeyed_list_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]},
            }
        },
    }
    assert crd_errors(schema) == [
        "spec.validation.openAPIV3Schema.properties[spec].properties[list].items.x-kubernetes-validations[0].rule: "
        'Invalid value: "self >= oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within '
        "spec.validation.openAPIV3Schema.properties[spec].properties[list].items"
    ]


def test_crd_with_bad_rule_is_invalid() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.x.example.com"},
        "spec": {
            "group": "x.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-validations": [{"rule": "1 +"}]}},
                }
            ],
        },
    }
    errs = [str(e) for e in validate_crd(crd)]
    assert any("x-kubernetes-validations[0].rule: Invalid value:" in e and "compilation failed" in e for e in errs)


def test_compilation_is_cached() -> None:
    first = cel.compile_expression("self.a == 1 && self.b == 2")
    assert cel.compile_expression("self.a == 1 && self.b == 2") is first
