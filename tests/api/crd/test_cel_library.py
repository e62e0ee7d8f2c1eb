"""The Kubernetes CEL environment of CRD rules: optionalOldSelf, the extension libraries, the cost budget.

Pins, upstream (k8s.io/apiextensions-apiserver and k8s.io/apiserver unless noted):
* schema/cel/validation.go ``validateExpressions``: an ``optionalOldSelf`` rule runs without an old value with
  ``oldSelf`` an empty optional; the runtime cost budget (``RuntimeCELCostBudget``) and per-call limit
  (``PerCallLimit``) messages;
* pkg/cel/environment/base.go: the libraries of the base environment (URLs, Regex, Lists, Quantity, IP, CIDR,
  Format, semver v1, cel-go strings v2, sets, optional types, CrossTypeNumericComparisons);
* pkg/cel/library/{lists,regex,urls,quantity,ip,cidr,format,semverlib}.go and cel-go ext/strings.go,
  ext/sets.go: results and error texts (``library_test.go``/``cost_test.go`` cases).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.crd import cel

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {
                            "rule": "!oldSelf.hasValue() || self == oldSelf.value()",
                            "message": "name is immutable once set",
                            "optionalOldSelf": True,
                        },
                        {
                            "rule": "oldSelf.orValue('') != 'locked'",
                            "message": "was locked",
                            "optionalOldSelf": True,
                        },
                    ],
                },
                "plain": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "plain is immutable"}],
                },
            },
        }
    },
}


def cr(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "x.example.com/v1", "kind": "W", "metadata": {"name": "w"}, "spec": spec}


def test_optional_old_self_runs_on_create_with_an_empty_optional() -> None:
    """validation.go: with optionalOldSelf the rule is evaluated on create, ``oldSelf`` being
    ``optional.none()``; a plain transition rule is not."""
    assert cel.validate(cr(name="a", plain="x"), SCHEMA) == []
    errs = [str(e) for e in cel.validate(cr(name="b"), SCHEMA, cr(name="a"))]
    assert errs == ['spec.name: Invalid value: "string": name is immutable once set']
    errs = [str(e) for e in cel.validate(cr(name="locked"), SCHEMA, cr(name="locked"))]
    assert errs == ['spec.name: Invalid value: "string": was locked']


@pytest.mark.parametrize(
    ("rule", "ok"),
    [
        # cel-go ext/strings.go (v2)
        ("'hello'.charAt(1) == 'e'", True),
        ("'hello'.indexOf('l', 3) == 3 && 'hello'.lastIndexOf('l') == 3", True),
        ("'a,b,c'.split(',', 2) == ['a', 'b,c']", True),
        ("'hello'.substring(1, 3) == 'el' && ' x '.trim() == 'x'", True),
        ("['a', 'b'].join('-') == 'a-b' && 'AbC'.upperAscii() == 'ABC'", True),
        ("'aaa'.replace('a', 'b', 2) == 'bba' && strings.quote('a') == '\"a\"'", True),
        # library/lists.go
        ("[1, 2, 3].isSorted() && [1, 2].sum() == 3 && [3, 1].min() == 1 && [3, 1].max() == 3", True),
        ("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2", True),
        # library/regex.go
        ("'abc123'.find('[0-9]+') == '123' && 'a1b22'.findAll('[0-9]+') == ['1', '22']", True),
        # ext/sets.go
        ("sets.contains([1, 2], [2]) && sets.equivalent([1, 2], [2, 1, 1]) && !sets.intersects([1], [2])", True),
        # library/quantity.go
        ("quantity('1Gi').isGreaterThan(quantity('1G')) && quantity('1k').compareTo(quantity('1000')) == 0", True),
        ("quantity('2').add(3).asInteger() == 5 && quantity('5').sub(quantity('1')).isInteger()", True),
        ("quantity('500m').asApproximateFloat() == 0.5 && quantity('-1m').sign() == -1", True),
        ("isQuantity('1Mi') && !isQuantity('1x') && quantity('1').isLessThan(quantity('2'))", True),
        ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000) == quantity('20')", True),
        ("quantity('3').mul(2) == quantity('6') && quantity('1').div(3) == quantity('0.3333')", True),
        ("quantity('7').divInt(2) == quantity('3') && quantity('200M').compareTo(quantity('0.2G')) == 0", True),
        # library/ip.go, cidr.go
        ("ip('10.0.0.1').family() == 4 && isIP('::1') && ip('::1').isLoopback()", True),
        ("!ip.isCanonical('2001:db8::0:1') && ip('192.168.0.1').isGlobalUnicast()", True),
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3') && cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", True),
        ("string(cidr('10.0.0.1/8').masked()) == '10.0.0.0/8' && cidr('10.0.0.0/8').prefixLength() == 8", True),
        ("cidr('10.0.0.1/8').ip() == ip('10.0.0.1') && isCIDR('::/0') && !isCIDR('1.2.3.4')", True),
        # library/urls.go
        ("url('https://example.com:80/p?q=1&q=2').getQuery() == {'q': ['1', '2']}", True),
        ("url('https://[::1]:80/').getHostname() == '::1' && url('https://a.b:80/x').getPort() == '80'", True),
        ("url('https://a.b/x').getScheme() == 'https' && url('https://a.b/x').getEscapedPath() == '/x'", True),
        ("isURL('/a') && !isURL('foo')", True),
        # library/format.go
        ("format.named('dns1123Label').value().validate('ok').hasValue() == false", True),
        ("format.dns1123Label().validate('Bad_Name').hasValue() && !format.named('nope').hasValue()", True),
        ("format.dns1123LabelPrefix().validate('my-prefix-') == optional.none()", True),
        ("format.uuid().validate('x').value() == ['does not match the UUID format']", True),
        # library/semverlib.go (version 1)
        ("semver('1.2.3').isLessThan(semver('1.10.0')) && semver('v1.2', true).minor() == 2", True),
        ("isSemver('1.0.0-rc.1') && !isSemver('1.2') && semver('1.0.0').compareTo(semver('1.0.0-rc.1')) == 1", True),
        # optional types, CrossTypeNumericComparisons
        ("optional.of(1).value() == 1 && optional.none().orValue(5) == 5", True),
        ("1 < 2.5 && 1 == 1.0 && 2.0 > 1", True),
    ],
)
def test_library_functions(rule: str, ok: bool) -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": rule}]}
    assert cel.compile_expression(rule).error == ""
    assert (cel.validate({"apiVersion": "v", "kind": "K", "metadata": {}}, schema) == []) is ok


@pytest.mark.parametrize(
    ("rule", "detail"),
    [
        ("'hello'.charAt(9) == ''", "index out of range: 9"),
        ("'hello'.substring(3, 1) == ''", "invalid substring range. start: 3, end: 1"),
        ("[].min() == 0", "min called on empty list"),
        (
            "quantity('1x').isInteger()",
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        ("quantity('1.5').asInteger() == 1", "cannot convert value to integer"),
        (
            "ip('01.0.0.1').family() == 4",
            'IP Address "01.0.0.1" parse error during conversion from string: ParseAddr("01.0.0.1"): '
            "IPv4 field has octet with leading zero",
        ),
        ("ip('::ffff:1.2.3.4').family() == 6", 'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed'),
        (
            "ip('1.2.a.4').family() == 4",
            'IP Address "1.2.a.4" parse error during conversion from string: ParseAddr("1.2.a.4"): '
            'unexpected character (at "a.4")',
        ),
        (  # cidr.go stringToCIDR wraps parseCIDR's already prefixed error
            "cidr('10.0.0.0/33').prefixLength() == 1",
            "network address parse error during conversion from string: network address parse error during "
            'conversion from string: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range',
        ),
        (
            "url('foo').getHost() == ''",
            'URL parse error during conversion from string: parse "foo": invalid URI for request',
        ),
        ("semver('1.2').major() == 1", "No Major.Minor.Patch elements found"),
        ("optional.none().value() == 1", "optional.none() dereference"),
    ],
)
def test_library_errors(rule: str, detail: str) -> None:
    """Runtime errors: ``<error> evaluating rule: <rule>`` (validateExpressions), the error as the library's."""
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": rule}]}
    errs = [str(e) for e in cel.validate({"metadata": {}}, schema)]
    assert errs == [f'<nil>: Invalid value: "object": {detail} evaluating rule: {rule}']


def test_unknown_functions_still_fail_to_compile() -> None:
    """Names outside the base environment (``reverse`` is strings v3) are refused at CRD creation."""
    assert "undeclared reference to 'reverse'" in cel.compile_expression("'ab'.reverse() == 'ba'").error


LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {"type": "integer"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x >= 0))", "message": "nested"}],
        },
        "after": {"type": "string", "x-kubernetes-validations": [{"rule": "self == 'never'"}]},
    },
}


def test_per_call_limit() -> None:
    """A program past its per-call limit: ``'operation cancelled: actual cost limit exceeded': call cost exceeds
    limit for rule: <rule>``; later rules still run."""
    obj = {"items": list(range(20)), "after": "x"}
    errs = [str(e) for e in cel.validate(obj, LIST_SCHEMA, per_call_limit=100)]
    assert errs == [
        "items: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': call cost exceeds "
        "limit for rule: nested",
        "after: Invalid value: \"string\": failed rule: self == 'never'",
    ]


def test_runtime_budget_stops_validation() -> None:
    """Past the object's budget: ``validation failed due to running out of cost budget, no further validation
    rules will be run`` at the rule's node, and no later rule runs."""
    obj = {"items": list(range(20)), "after": "x"}
    errs = [str(e) for e in cel.validate(obj, LIST_SCHEMA, budget=100)]
    assert errs == [
        'items: Invalid value: "array": validation failed due to running out of cost budget, no further '
        "validation rules will be run"
    ]
    assert cel.validate({"items": [1, 2]}, LIST_SCHEMA) == []


def test_optional_old_self_without_old_self_is_refused_at_crd_creation() -> None:
    """validation.go: ``optionalOldSelf`` on a rule that does not use ``oldSelf``."""
    from kubeplane.api.crd import celdefinition
    from kubeplane.api.validation.field import new_path

    schema = {"type": "string", "x-kubernetes-validations": [{"rule": "self != ''", "optionalOldSelf": True}]}
    errs = [str(e) for e in celdefinition.validate_rules_of_schema(schema, new_path("s"))]
    assert errs == [
        "s.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: "
        "may not be set if oldSelf is not used in rule"
    ]
    assert celdefinition.validate_rules_of_schema(SCHEMA, new_path("s")) == []


@pytest.mark.parametrize(
    "rule",
    [
        "[10, 20].all(i, v, v == (i + 1) * 10)",
        "{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)",
        "[1, 2, 3].existsOne(i, v, v == 2) && ![1, 2, 2].existsOne(i, v, v == 2)",
        "[1, 2, 3].transformList(i, v, i * v) == [0, 2, 6]",
        "[1, 2, 3].transformList(i, v, v > 1, v) == [2, 3]",
        "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",
        "[1, 2].all(x, x > 0)",
    ],
)
def test_two_variable_comprehensions(rule: str) -> None:
    """cel-go ext/comprehensions.go (TwoVarComprehensions, base environment 1.32): index or key and value."""
    assert cel.compile_expression(rule).error == ""
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": rule}]}
    assert cel.validate({"metadata": {}}, schema) == []


def test_two_variable_comprehension_variables_are_scoped() -> None:
    assert "undeclared reference to 'w'" in cel.compile_expression("[1].all(i, v, w > 0)").error
