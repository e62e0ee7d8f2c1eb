"""Label selectors against upstream apimachinery ``pkg/labels`` (selector_test.go) and ``metav1`` helpers.

Case ids name the upstream test (or code path) each case pins; error strings are upstream's verbatim.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import labels
from kubeplane.api.labels import Operator, Requirement, SelectorError
from kubeplane.api.validation.field import new_path

# Upstream's messages (apimachinery util/validation), copied here so a drift in either module fails a test.
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


# --- parsing -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
    ids=lambda s: f"TestSelectorParse-good[{s}]",
)
def test_parse_round_trips_without_spaces(text: str) -> None:
    assert str(labels.parse(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "x=a||y=b",
            f'unable to parse requirement: values[0][x]: Invalid value: "a||y": {LABEL_VALUE_MSG}',
        ),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        (
            "x nott in (y)",
            "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt",
        ),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("x in in", "unable to parse requirement: found 'in' expected: '('"),
        ("x in", "unable to parse requirement: found '' expected: '('"),
        ("x>=1", "unable to parse requirement: found '=', expected: identifier"),
        ("x\x00y=z", "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        ("x in (a,(", "unable to parse requirement: found '(', expected: ',', or identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("-x", f'unable to parse requirement: <nil>: Invalid value: "-x": {NAME_PART_MSG}'),
        (
            "x>-1",  # Gt values are validated as label values too, so a negative bound is rejected
            f'unable to parse requirement: values[0][x]: Invalid value: "-1": {LABEL_VALUE_MSG}',
        ),
        (
            "x=" + "a" * 64,
            f'unable to parse requirement: values[0][x]: Invalid value: "{"a" * 64}": must be no more than 63 bytes',
        ),
    ],
    ids=[
        "TestSelectorParse-bad-pipes-are-part-of-the-value",
        "TestSelectorParse-bad-double-operator",
        "TestSelectorParse-bad-not-exists-with-value",
        "TestSelectorParse-bad-lt-non-integer",
        "TestSetSelectorParser-trailing-comma",
        "TestSetSelectorParser-missing-comma-after-set",
        "TestSetSelectorParser-no-comma-in-set",
        "TestSetSelectorParser-unclosed-set",
        "TestSetSelectorParser-cpar-without-operator",
        "TestSetSelectorParser-opar",
        "TestSetSelectorParser-unknown-operator",
        "TestSetSelectorParser-leading-comma",
        "parseValues-keyword-in-value-position-needs-paren",
        "parseValues-end-of-string",
        "lexer-longest-token-then-equals",
        "lexer-nul-byte-ends-identifier",
        "parseIdentifiersList-operator-in-set",
        "parseKeyAndInferOperator-bang-alone",
        "validateLabelKey-nil-path",
        "NewRequirement-gt-value-is-a-label-value",
        "NewRequirement-value-too-long",
    ],
)
def test_parse_errors_are_upstreams(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        labels.parse(text)
    assert str(exc.value) == message


def test_parse_error_keeps_field_errors_as_causes() -> None:
    with pytest.raises(SelectorError) as exc:
        labels.parse("x<a")
    assert [(e.field, e.bad_value) for e in exc.value.errors] == [("values[0]", "a")]


def _req(key: str, op: Operator, *values: str) -> Requirement:
    return Requirement(key, op, values)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\rx", [_req("x", Operator.EXISTS)]),
        (
            "this-is-a-dns.domain.com/key-with-dash",
            [_req("this-is-a-dns.domain.com/key-with-dash", Operator.EXISTS)],
        ),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            [_req("0.1.2.domain/99", Operator.NOT_IN, "10.10.100.1", "tick.tack.clock")],
        ),
        ("foo  in\t (abc)", [_req("foo", Operator.IN, "abc")]),
        ("x notin\n (abc)", [_req("x", Operator.NOT_IN, "abc")]),
        ("x in (abc,)", [_req("x", Operator.IN, "", "abc")]),
        ("x in ()", [_req("x", Operator.IN, "")]),
        ("x notin ( )", [_req("x", Operator.NOT_IN, "")]),
        ("x notin (, a)", [_req("x", Operator.NOT_IN, "", "a")]),
        ("x in (b,,a,b)", [_req("x", Operator.IN, "", "a", "b")]),
        (
            "x notin (abc,def),bar,z in (),w",
            [
                _req("bar", Operator.EXISTS),
                _req("w", Operator.EXISTS),
                _req("x", Operator.NOT_IN, "abc", "def"),
                _req("z", Operator.IN, ""),
            ],
        ),
        ("x,y in (a)", [_req("x", Operator.EXISTS), _req("y", Operator.IN, "a")]),
        ("x=a,y!=b", [_req("x", Operator.EQUALS, "a"), _req("y", Operator.NOT_EQUALS, "b")]),
        ("x==a", [_req("x", Operator.DOUBLE_EQUALS, "a")]),
        ("x>1", [_req("x", Operator.GREATER_THAN, "1")]),
        ("x<7", [_req("x", Operator.LESS_THAN, "7")]),
        ("a ", [_req("a", Operator.EXISTS)]),
        ("a in (x,y,notin, z,in)", [_req("a", Operator.IN, "in", "notin", "x", "y", "z")]),
        ("in=notin", [_req("in", Operator.EQUALS, "notin")]),
        ("x=a,x!=b", [_req("x", Operator.EQUALS, "a"), _req("x", Operator.NOT_EQUALS, "b")]),
        ("x \x00y=z", [_req("x", Operator.EXISTS)]),
        ("x=\x00y", [_req("x", Operator.EQUALS, "y")]),
    ],
    ids=[
        "TestSetSelectorParser-carriage-return",
        "TestSetSelectorParser-dns-prefixed-key",
        "TestSetSelectorParser-ip-like-values",
        "TestSetSelectorParser-tabs",
        "TestSetSelectorParser-newline",
        "TestSetSelectorParser-trailing-comma-in-set-is-empty-value",
        "TestSetSelectorParser-empty-set-is-empty-value",
        "TestSetSelectorParser-blank-set",
        "TestSetSelectorParser-leading-comma-in-set",
        "parseIdentifiersList-dedupes-and-sorts",
        "TestSetSelectorParser-sorted-by-key",
        "TestSetSelectorParser-exists-then-in",
        "TestSetSelectorParser-equals-not-equals",
        "parseOperator-double-equals",
        "TestSetSelectorParser-gt",
        "TestSetSelectorParser-lt",
        "TestSetSelectorParser-trailing-space",
        "TestSetSelectorParser-keywords-as-values",
        "parser-keywords-as-key-and-value",
        "ByKey-stable-for-equal-keys",
        "lexer-nul-byte-after-space-ends-input",
        "lexer-nul-byte-after-token-is-skipped",
    ],
)
def test_parse_requirements(text: str, expected: list[Requirement]) -> None:
    assert list(labels.parse(text).requirements) == expected


def test_deterministic_parse() -> None:
    """Upstream TestDeterministicParse."""
    assert str(labels.parse("x=a,a=x")) == str(labels.parse("a=x,x=a")) == "a=x,x=a"


# --- matching ----------------------------------------------------------------------------------------------

LABELSET = {"foo": "bar", "baz": "blah"}


@pytest.mark.parametrize(
    ("text", "label_set", "want"),
    [
        ("", {"x": "y"}, True),
        ("x=y", {"x": "y"}, True),
        ("x=y,z=w", {"x": "y", "z": "w"}, True),
        ("x!=y,z!=w", {"x": "z", "z": "a"}, True),
        ("notin=in", {"notin": "in"}, True),
        ("x", {"x": "z"}, True),
        ("!x", {"y": "z"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "0"}, True),
        ("x=z", {}, False),
        ("x=y", {"x": "z"}, False),
        ("x=y,z=w", {"x": "w", "z": "w"}, False),
        ("x!=y,z!=w", {"x": "z", "z": "w"}, False),
        ("x", {"y": "z"}, False),
        ("!x", {"x": "z"}, False),
        ("x>1", {"x": "0"}, False),
        ("x<1", {"x": "2"}, False),
        ("foo=bar,baz=blah", LABELSET, True),
        ("foo=bar,foobar=bar,baz=blah", LABELSET, False),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}, True),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}, False),
        ("x notin (),y", {"y": ""}, True),
        ("!x,y", {"y": ""}, True),
        ("x notin (),!y", {"y": ""}, False),
        ("x in ()", {"y": "baz"}, False),
        ("z>1", {"z": "v2"}, False),
        ("x=", {}, False),
        ("x=", {"x": ""}, True),
        ("x!=a", {}, True),
        ("x!=", {}, True),
        ("x notin (a,b)", {}, True),
        ("x>1", {}, False),
        ("x>1", {"x": "1"}, False),
        ("x<1", {"x": "1"}, False),
        ("x>05", {"x": "006"}, True),
        ("x<1", {"x": "+0"}, True),
        ("x<1", {"x": "-5"}, True),
        ("x>1", {"x": "99999999999999999999"}, False),
        ("x>1", {"x": " 5"}, False),
        ("x>1", {"x": "1_0"}, False),
        ("x>1", {"x": "٣"}, False),
        ("a=1,b=2,c in (3,4)", {"a": "1", "b": "2", "c": "4"}, True),
        ("a=1,b=2,c in (3,4)", {"a": "1", "b": "2"}, False),
    ],
    ids=[
        "TestSelectorMatches-empty-matches-all",
        "TestSelectorMatches-equals",
        "TestSelectorMatches-two-equals",
        "TestSelectorMatches-two-not-equals",
        "TestSelectorMatches-keywords-in-exact-match",
        "TestSelectorMatches-exists",
        "TestSelectorMatches-does-not-exist",
        "TestSelectorMatches-gt",
        "TestSelectorMatches-lt",
        "TestSelectorMatches-equals-missing-key",
        "TestSelectorMatches-equals-other-value",
        "TestSelectorMatches-one-of-two-fails",
        "TestSelectorMatches-not-equals-hit",
        "TestSelectorMatches-exists-missing",
        "TestSelectorMatches-does-not-exist-present",
        "TestSelectorMatches-gt-fails",
        "TestSelectorMatches-lt-fails",
        "TestSelectorMatches-labelset",
        "TestSelectorMatches-labelset-extra-requirement",
        "TestRequirementSelectorMatching-in-and-notin",
        "TestRequirementSelectorMatching-in-fails",
        "TestRequirementSelectorMatching-notin-empty-missing-key",
        "TestRequirementSelectorMatching-does-not-exist-and-exists",
        "TestRequirementSelectorMatching-does-not-exist-fails",
        "TestRequirementSelectorMatching-in-empty-value",
        "TestRequirementSelectorMatching-gt-non-integer-label",
        "Matches-equals-empty-needs-key",
        "Matches-equals-empty-with-empty-value",
        "Matches-not-equals-missing-key",
        "Matches-not-equals-empty-missing-key",
        "Matches-notin-missing-key",
        "Matches-gt-missing-key",
        "Matches-gt-is-strict",
        "Matches-lt-is-strict",
        "ParseInt-leading-zeros",
        "ParseInt-plus-sign",
        "ParseInt-negative",
        "ParseInt-out-of-int64-range",
        "ParseInt-no-spaces",
        "ParseInt-no-underscores",
        "ParseInt-ascii-digits-only",
        "fast-path-mixed-selector",
        "fast-path-mixed-selector-missing",
    ],
)
def test_selector_matches(text: str, label_set: dict[str, str], want: bool) -> None:
    selector = labels.parse(text)
    assert selector.matches(label_set) is want
    assert selector.matcher(label_set) is want
    assert all(r.matches(label_set) for r in selector.requirements) is want


@pytest.mark.parametrize(
    ("requirement", "label_set", "want"),
    [
        (Requirement("x", Operator.GREATER_THAN, ("a",)), {"x": "5"}, False),
        (Requirement("x", Operator.GREATER_THAN, ("1", "2")), {"x": "5"}, False),
        (Requirement("x", Operator.IN, ()), {"x": ""}, False),
        (Requirement("x", Operator.NOT_IN, ()), {"x": ""}, True),
        (Requirement("x", Operator.NOT_EQUALS, ("a", "b")), {"x": "b"}, False),
    ],
    ids=[
        "Matches-gt-unparsable-bound-never-matches",
        "Matches-gt-needs-exactly-one-value",
        "Matches-in-without-values-never-matches",
        "Matches-notin-without-values-always-matches",
        "Matches-not-equals-checks-every-value",
    ],
)
def test_unvalidated_requirements_match_as_upstream(
    requirement: Requirement, label_set: dict[str, str], want: bool
) -> None:
    assert requirement.matches(label_set) is want


# --- requirements and strings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "op", "values", "message"),
    [
        (
            "x",
            "in",
            None,
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "x",
            "notin",
            [],
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        ("x", "in", ["foo"], None),
        ("x", "notin", ["foo"], None),
        ("x", "exists", None, None),
        ("x", "!", None, None),
        ("1foo", "in", ["bar"], None),
        ("1234", "in", ["bar"], None),
        ("y", "gt", ["1"], None),
        ("z", "lt", ["6"], None),
        (
            "foo",
            "gt",
            ["bar"],
            "values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x",
            "gt",
            ["1", "2"],
            "values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
        ),
        (
            "a" * 254,
            "exists",
            None,
            f'key: Invalid value: "{"a" * 254}": name part must be no more than 63 bytes',
        ),
        (
            "x",
            "exists",
            ["a"],
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
        ),
        (
            "x",
            "=",
            ["a", "b"],
            'values: Invalid value: ["a","b"]: exact-match compatibility requires one single value',
        ),
        (
            "x",
            "approx",
            None,
            'operator: Unsupported value: "approx": supported values: '
            '"in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!"',
        ),
        (
            "-k",
            "in",
            ["a b", "ok"],
            f'[key: Invalid value: "-k": {NAME_PART_MSG}, values[0][-k]: Invalid value: "a b": {LABEL_VALUE_MSG}]',
        ),
    ],
    ids=[
        "TestRequirementConstructor-in-nil-values",
        "TestRequirementConstructor-notin-empty-values",
        "TestRequirementConstructor-in-one-value",
        "TestRequirementConstructor-notin-one-value",
        "TestRequirementConstructor-exists",
        "TestRequirementConstructor-does-not-exist",
        "TestRequirementConstructor-key-starts-with-digit",
        "TestRequirementConstructor-numeric-key",
        "TestRequirementConstructor-gt",
        "TestRequirementConstructor-lt",
        "TestRequirementConstructor-gt-non-integer",
        "NewRequirement-gt-two-values",
        "TestRequirementConstructor-key-too-long",
        "NewRequirement-exists-with-values",
        "NewRequirement-equals-two-values",
        "NewRequirement-unsupported-operator",
        "NewRequirement-errors-aggregate-in-brackets",
    ],
)
def test_new_requirement(key: str, op: str, values: list[str] | None, message: str | None) -> None:
    if message is None:
        req = labels.new_requirement(key, op, values)
        assert (req.key, req.operator.value, req.values) == (key, op, tuple(values or ()))
        return
    with pytest.raises(SelectorError) as exc:
        labels.new_requirement(key, op, values)
    assert str(exc.value) == message
    assert exc.value.errors


def test_new_requirement_prefixes_path() -> None:
    with pytest.raises(SelectorError, match=r"^spec\.x\[0\]\.values: Invalid value: null: "):
        labels.new_requirement("k", "in", None, path=new_path("spec", "x").index(0))


@pytest.mark.parametrize(
    ("requirements", "text"),
    [
        (
            [
                _req("x", Operator.IN, "abc", "def"),
                _req("y", Operator.NOT_IN, "jkl"),
                _req("z", Operator.EXISTS),
            ],
            "x in (abc,def),y notin (jkl),z",
        ),
        (
            [
                _req("x", Operator.NOT_IN, "abc", "def"),
                _req("y", Operator.NOT_EQUALS, "jkl"),
                _req("z", Operator.DOES_NOT_EXIST),
            ],
            "x notin (abc,def),y!=jkl,!z",
        ),
        (
            [
                _req("x", Operator.NOT_IN, "abc"),
                _req("y", Operator.IN, "jkl", "mno"),
                _req("z", Operator.NOT_IN, ""),
            ],
            "x notin (abc),y in (jkl,mno),z notin ()",
        ),
        (
            [
                _req("x", Operator.EQUALS, "abc"),
                _req("y", Operator.DOUBLE_EQUALS, "jkl"),
                _req("z", Operator.NOT_EQUALS, "a"),
                _req("z", Operator.EXISTS),
            ],
            "x=abc,y==jkl,z!=a,z",
        ),
        (
            [
                _req("x", Operator.GREATER_THAN, "2"),
                _req("y", Operator.LESS_THAN, "8"),
                _req("z", Operator.EXISTS),
            ],
            "x>2,y<8,z",
        ),
        ([_req("x", Operator.IN, "b", "a", "b")], "x in (a,b,b)"),
    ],
    ids=[
        "TestToString-in-notin-exists",
        "TestToString-notin-notequals-doesnotexist",
        "TestToString-empty-value-set",
        "TestToString-exact-operators",
        "TestToString-gt-lt",
        "TestSafeSort-values-sorted-duplicates-kept",
    ],
)
def test_to_string(requirements: list[Requirement], text: str) -> None:
    assert str(labels.Selector(tuple(requirements))) == text


# --- everything, nothing, add, exact match -----------------------------------------------------------------


def test_everything_and_nothing_differ_but_print_the_same() -> None:
    """Upstream TestEverything; Nothing() matches nothing and is not empty; both print as ``""``."""
    assert labels.everything().matches({"x": "y"})
    assert labels.everything().empty()
    assert not labels.nothing().matches({})
    assert not labels.nothing().empty()
    assert str(labels.everything()) == str(labels.nothing()) == ""
    assert labels.matches_nothing(labels.nothing())
    assert not labels.matches_nothing(labels.everything())
    assert labels.everything() != labels.nothing()
    assert labels.nothing().add(_req("x", Operator.EXISTS)) is labels.nothing()
    assert labels.parse("") == labels.everything()


def test_add_sorts_by_key_and_copies() -> None:
    """Upstream TestAdd: Add returns a new selector with the requirement merged in key order."""
    base = labels.everything().add(_req("key", Operator.IN, "value"))
    added = base.add(_req("a", Operator.EQUALS, "b"), _req("key2", Operator.EQUALS, "value2"))
    assert str(base) == "key in (value)"
    assert str(added) == "a=b,key in (value),key2=value2"


@pytest.mark.parametrize(
    ("text", "label", "want"),
    [
        ("", "test", None),
        ("a=b", "test", None),
        ("test=b", "test", "b"),
        ("test==b", "test", "b"),
        ("test in (b)", "test", "b"),
        ("test in (b,c)", "test", None),
        ("test=", "test", ""),
        ("test!=b", "test", None),
        ("test,test=b", "test", None),
    ],
    ids=[
        "RequiresExactMatch-empty",
        "RequiresExactMatch-other-key",
        "RequiresExactMatch-equals",
        "RequiresExactMatch-double-equals",
        "RequiresExactMatch-in-one-value",
        "RequiresExactMatch-in-two-values",
        "RequiresExactMatch-empty-value",
        "RequiresExactMatch-not-equals",
        "RequiresExactMatch-first-requirement-on-key-decides",
    ],
)
def test_requires_exact_match(text: str, label: str, want: str | None) -> None:
    assert labels.parse(text).requires_exact_match(label) == want


def test_selector_is_immutable() -> None:
    selector = labels.parse("a=b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        selector.requirements = ()  # type: ignore[misc]


def test_selector_from_set() -> None:
    """Upstream TestSetMatches / TestNilMapIsValid: nil and empty sets select everything."""
    assert labels.selector_from_set(None).empty()
    assert labels.selector_from_set({}).empty()
    selector = labels.selector_from_set({"foo": "bar", "baz": "blah"})
    assert str(selector) == "baz=blah,foo=bar"
    assert selector.matches(LABELSET)
    assert not selector.matches({"foo": "bar"})
    assert labels.selector_from_set({"foo": "=blah"}).matches({"foo": "=blah"})  # not validated


def test_validated_selector_from_set_rejects_bad_values() -> None:
    with pytest.raises(SelectorError, match=r'^values\[0\]\[foo\]: Invalid value: "=blah": '):
        labels.validated_selector_from_set({"foo": "=blah"})


# --- metav1.LabelSelector ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label_selector", "text", "matches"),
    [
        (None, "", False),
        ({}, "", True),
        ({"matchLabels": {}, "matchExpressions": []}, "", True),
        ({"matchLabels": {"foo": "bar"}}, "foo=bar", True),
        (
            {
                "matchLabels": {"foo": "bar"},
                "matchExpressions": [{"key": "baz", "operator": "In", "values": ["qux", "norf"]}],
            },
            "baz in (norf,qux),foo=bar",
            False,
        ),
        (
            {
                "matchExpressions": [
                    {"key": "z", "operator": "Exists"},
                    {"key": "a", "operator": "DoesNotExist"},
                    {"key": "m", "operator": "NotIn", "values": ["x"]},
                ]
            },
            "!a,m notin (x),z",
            False,
        ),
        ({"matchLabels": {"baz": "blah"}}, "baz=blah", True),
    ],
    ids=[
        "LabelSelectorAsSelector-nil-is-nothing",
        "LabelSelectorAsSelector-empty-is-everything",
        "LabelSelectorAsSelector-empty-lists-are-everything",
        "LabelSelectorAsSelector-match-labels",
        "LabelSelectorAsSelector-labels-and-expressions",
        "LabelSelectorAsSelector-sorted-by-key",
        "LabelSelectorAsSelector-matches",
    ],
)
def test_label_selector_as_selector(label_selector: dict[str, Any] | None, text: str, matches: bool) -> None:
    selector = labels.label_selector_as_selector(label_selector)
    assert str(selector) == text
    assert selector.matches(LABELSET) is matches


@pytest.mark.parametrize(
    ("label_selector", "message"),
    [
        (
            {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid pod selector operator',
        ),
        ({"matchExpressions": [{"key": "k"}]}, '"" is not a valid pod selector operator'),
        (
            {"matchExpressions": [{"key": "k", "operator": "In"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": []}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["a"]}]},
            'values: Invalid value: ["a"]: values set must be empty for exists and does not exist',
        ),
        ({"matchLabels": {"k": "a b"}}, f'values[0][k]: Invalid value: "a b": {LABEL_VALUE_MSG}'),
        ({"matchLabels": {"-k": "v"}}, f'key: Invalid value: "-k": {NAME_PART_MSG}'),
    ],
    ids=[
        "LabelSelectorAsSelector-gt-not-a-pod-selector-operator",
        "LabelSelectorAsSelector-missing-operator",
        "LabelSelectorAsSelector-in-without-values",
        "LabelSelectorAsSelector-empty-values-copied-as-nil",
        "LabelSelectorAsSelector-exists-with-values",
        "LabelSelectorAsSelector-bad-label-value",
        "LabelSelectorAsSelector-bad-label-key",
    ],
)
def test_label_selector_as_selector_errors(label_selector: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        labels.label_selector_as_selector(label_selector)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("label_selector", "text"),
    [
        (None, "<none>"),
        ({}, "<none>"),
        ({"matchLabels": {"a": "b"}}, "a=b"),
        ({"matchLabels": {"a": "-"}}, "<error>"),
    ],
    ids=[
        "FormatLabelSelector-nil",
        "FormatLabelSelector-empty",
        "FormatLabelSelector-labels",
        "FormatLabelSelector-error",
    ],
)
def test_format_label_selector(label_selector: dict[str, Any] | None, text: str) -> None:
    assert labels.format_label_selector(label_selector) == text


# --- the compiled fast paths agree with the requirement-by-requirement reference ---------------------------

_KEYS = st.sampled_from(["a", "b", "c"])
_VALUES = st.sampled_from(["", "1", "2", "x", "-3", "10"])
_REQUIREMENTS = st.builds(
    Requirement,
    _KEYS,
    st.sampled_from(list(Operator)),
    st.lists(_VALUES, max_size=3).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_REQUIREMENTS, max_size=4), st.dictionaries(_KEYS, _VALUES))
def test_compiled_selector_matches_reference(reqs: list[Requirement], label_set: dict[str, str]) -> None:
    def reference(r: Requirement) -> bool:  # upstream Requirement.Matches, written plainly
        present = r.key in label_set
        value = label_set.get(r.key, "")
        if r.operator in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return present and value in r.values
        if r.operator in (Operator.NOT_IN, Operator.NOT_EQUALS):
            return not present or value not in r.values
        if r.operator is Operator.EXISTS:
            return present
        if r.operator is Operator.DOES_NOT_EXIST:
            return not present
        if not present or len(r.values) != 1:
            return False
        lhs, rhs = labels.parse_int64(value), labels.parse_int64(r.values[0])
        if lhs is None or rhs is None:
            return False
        return lhs > rhs if r.operator is Operator.GREATER_THAN else lhs < rhs

    selector = labels.everything().add(*reqs)
    assert selector.matches(label_set) is all(reference(r) for r in reqs)


@pytest.mark.parametrize(
    "selector",
    [
        "app=web",
        {"matchLabels": "x"},
        {"matchLabels": {"a": 1}},
        {"matchExpressions": "x"},
        {"matchExpressions": ["x"]},
        {"matchExpressions": [{"key": 1, "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "a", "operator": ["In"], "values": ["a"]}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": "a"}]},
        {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
    ],
    ids=[
        "not-an-object",
        "matchLabels-string",
        "matchLabels-int-value",
        "matchExpressions-string",
        "expression-string",
        "key-int",
        "operator-list",
        "values-string",
        "values-int",
    ],
)
def test_label_selector_of_wrong_json_types_is_a_selector_error(selector: Any) -> None:
    """Wrongly typed selectors (upstream: decoding errors) raise SelectorError, never another exception."""
    with pytest.raises(labels.SelectorError, match="invalid label selector"):
        labels.label_selector_as_selector(selector)
