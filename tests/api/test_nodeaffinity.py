"""Node selectors and node affinity against upstream component-helpers ``nodeaffinity_test.go``.

Case ids name the upstream test each case pins; error strings are upstream's verbatim.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import nodeaffinity as na
from kubeplane.api.labels import SelectorError
from kubeplane.api.validation.field import new_path

NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
SUPPORTED = '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def node(name: str = "", **node_labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": node_labels}}


HOST_1_IN = expr("metadata.name", "In", "host_1")
LABEL_1_IN = expr("label_1", "In", "label_1_val")

# The three terms of upstream's "invalid field selector and label selector" cases.
INVALID_TERMS: list[dict[str, Any]] = [
    {"matchFields": [expr("metadata.name", "In", "host_1", "host_2")]},
    {"matchExpressions": [LABEL_1_IN], "matchFields": [HOST_1_IN]},
    {"matchExpressions": [expr("invalid key", "In", "label_value")]},
]


@pytest.mark.parametrize(
    ("terms", "target", "want"),
    [
        ([{"matchExpressions": [LABEL_1_IN], "matchFields": [HOST_1_IN]}], node("host_1"), False),
        (
            [{"matchExpressions": [LABEL_1_IN], "matchFields": [HOST_1_IN]}],
            node("host_1", label_1="label_1_val"),
            True,
        ),
        ([{"matchExpressions": [LABEL_1_IN]}, {"matchFields": [HOST_1_IN]}], node("host_1"), True),
        ([{"matchFields": [HOST_1_IN]}], node("host_2"), False),
        ([{"matchFields": [expr("metadata.name", "NotIn", "host_1")]}], node("host_2"), True),
        ([{"matchFields": [HOST_1_IN]}], node("", a="b"), True),
        ([{"matchFields": [expr("metadata.uid", "In", "x")]}], node("host_1"), False),
        ([{"matchFields": [expr("metadata.uid", "NotIn", "x")]}], node("host_1"), True),
        ([{}], node("host_1"), False),
        ([{"matchExpressions": [], "matchFields": []}], node("host_1"), False),
        ([], node("host_1"), False),
        ([{}, {"matchFields": [HOST_1_IN]}], node("host_1"), True),
    ],
    ids=[
        "TestNodeSelectorMatch-node-matches-field-selector-but-not-labels",
        "TestNodeSelectorMatch-node-matches-field-selector-and-label-selector",
        "TestNodeSelectorMatch-second-term-matches",
        "matchFields-in-other-name",
        "matchFields-notin",
        "matchFields-skipped-for-unnamed-node",
        "matchFields-other-field-reads-empty",
        "matchFields-other-field-notin-reads-empty",
        "empty-term-matches-nothing",
        "term-with-empty-lists-matches-nothing",
        "no-terms-match-nothing",
        "empty-term-skipped-others-still-count",
    ],
)
def test_node_selector_match(terms: list[dict[str, Any]], target: dict[str, Any], want: bool) -> None:
    selector = na.new_node_selector({"nodeSelectorTerms": terms})
    assert selector.matches(target) is want
    assert na.node_selector_matches({"nodeSelectorTerms": terms}, target) is want


def test_new_node_selector_reports_every_terms_errors() -> None:
    """Upstream TestNodeSelectorMatch "invalid field selector and label selector"."""
    with pytest.raises(SelectorError) as exc:
        na.new_node_selector({"nodeSelectorTerms": INVALID_TERMS})
    assert str(exc.value) == (
        '[nodeSelectorTerms[0].matchFields[0].values: Invalid value: ["host_1","host_2"]: '
        "must have one element, "
        f'nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: "invalid key": {NAME_PART_MSG}]'
    )
    assert [e.field for e in exc.value.errors] == [
        "nodeSelectorTerms[0].matchFields[0].values",
        "nodeSelectorTerms[2].matchExpressions[0].key",
    ]


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (
            expr("foo", "Exists", "bar", "baz"),
            'root[0].values: Invalid value: ["bar","baz"]: values set must be empty for exists and does not exist',
        ),
        (
            expr("foo", "Foo", "bar"),
            f'root[0].operator: Unsupported value: "Foo": supported values: {SUPPORTED}',
        ),
        (
            expr("foo", "In"),
            "root[0].values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"key": "foo", "operator": "In", "values": []},
            "root[0].values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            expr("foo", "Gt", "bar"),
            "root[0].values[0]: Invalid value: \"bar\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            expr("foo", "Lt", "1", "2"),
            "root[0].values: Invalid value: [\"1\",\"2\"]: for 'Gt', 'Lt' operators, exactly one value is required",
        ),
    ],
    ids=[
        "TestNodeSelectorRequirementsAsSelector-exists-with-values",
        "nodeSelectorRequirementsAsSelector-unsupported-operator",
        "NewRequirement-in-nil-values",
        "NewRequirement-in-empty-values",
        "NewRequirement-gt-not-an-integer",
        "NewRequirement-lt-two-values",
    ],
)
def test_match_expression_errors(requirement: dict[str, Any], message: str) -> None:
    term = {"matchExpressions": [requirement]}
    with pytest.raises(SelectorError) as exc:
        na.new_node_selector({"nodeSelectorTerms": [term]}, path=new_path("root"))
    assert str(exc.value) == message.replace("root[0]", "root.nodeSelectorTerms[0].matchExpressions[0]")


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (
            expr("metadata.name", "Exists"),
            'nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: "Exists": supported values: '
            '"In", "NotIn"',
        ),
        (
            expr("metadata.name", "NotIn"),
            "nodeSelectorTerms[0].matchFields[0].values: Invalid value: null: must have one element",
        ),
    ],
    ids=[
        "nodeSelectorRequirementsAsFieldSelector-exists",
        "nodeSelectorRequirementsAsFieldSelector-no-values",
    ],
)
def test_match_field_errors(requirement: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as exc:
        na.new_node_selector({"nodeSelectorTerms": [{"matchFields": [requirement]}]})
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("requirement", "target", "want"),
    [
        (expr("foo", "In", "baz", "bar"), node(foo="bar"), True),
        (expr("foo", "Gt", "1"), node(foo="2"), True),
        (expr("bar", "Lt", "7"), node(bar="7"), False),
        (expr("kernel-version", "Gt", "0204"), node(**{"kernel-version": "0206"}), True),
        (expr("mem-type", "NotIn", "DDR", "DDR2"), node(**{"mem-type": "DDR3"}), True),
        (expr("GPU", "Exists"), node(GPU="NVIDIA-GRID-K1"), True),
        (expr("GPU", "DoesNotExist"), node(GPU="NVIDIA-GRID-K1"), False),
        (expr("foo", "In", "value1", "value2"), node(foo="bar"), False),
        (expr("foo", "Gt", "1"), node(foo="two"), False),
    ],
    ids=[
        "TestNodeSelectorRequirementsAsSelector-in",
        "TestNodeSelectorRequirementsAsSelector-gt",
        "TestNodeSelectorRequirementsAsSelector-lt",
        "TestPodMatchesNodeSelectorAndAffinityTerms-gt-leading-zeros",
        "TestPodMatchesNodeSelectorAndAffinityTerms-notin",
        "TestPodMatchesNodeSelectorAndAffinityTerms-exists",
        "TestPodMatchesNodeSelectorAndAffinityTerms-does-not-exist",
        "TestPodMatchesNodeSelectorAndAffinityTerms-affinity-does-not-match",
        "Requirement.Matches-gt-label-not-an-integer",
    ],
)
def test_match_expressions(requirement: dict[str, Any], target: dict[str, Any], want: bool) -> None:
    selector = na.new_node_selector({"nodeSelectorTerms": [{"matchExpressions": [requirement]}]})
    assert selector.matches(target) is want


def test_lazy_selector_reports_errors_only_when_nothing_matches() -> None:
    """Upstream LazyErrorNodeSelector: bad terms never match; their errors surface only without a match."""
    selector = na.new_lazy_error_node_selector({"nodeSelectorTerms": INVALID_TERMS})
    assert [e.field for e in selector.parse_errors] == [
        "nodeSelectorTerms[0].matchFields[0].values",
        "nodeSelectorTerms[2].matchExpressions[0].key",
    ]
    assert selector.match(node("host_1", label_1="label_1_val")) == (True, None)
    matched, err = selector.match(node("host_2", label_1="label_1_val"))
    assert not matched
    assert err is not None
    assert str(err).startswith("[nodeSelectorTerms[0].matchFields[0].values: Invalid value")
    assert selector.match(None) == (False, None)
    assert na.new_lazy_error_node_selector({"nodeSelectorTerms": [HOST_1_IN]}).match(node("x"))[1] is None


@pytest.mark.parametrize(
    ("terms", "target", "want"),
    [
        (
            [
                {"weight": 5, "preference": {"matchFields": [HOST_1_IN]}},
                {
                    "weight": 7,
                    "preference": {"matchExpressions": [expr("unknown_label", "In", "unknown_label_val")]},
                },
                {"weight": 11, "preference": {"matchExpressions": [LABEL_1_IN]}},
            ],
            node("host_1", label_1="label_1_val"),
            16,
        ),
        (
            [{"weight": 0, "preference": {"matchFields": [expr("metadata.name", "In", "host_1", "host_2")]}}],
            node("host_1"),
            0,
        ),
        ([{"weight": 3, "preference": {}}], node("host_1"), 0),
    ],
    ids=[
        "TestPreferredSchedulingTermsScore-first-and-third-term-match",
        "TestPreferredSchedulingTermsScore-invalid-but-no-weight-error-not-reported",
        "NewPreferredSchedulingTerms-empty-preference-skipped",
    ],
)
def test_preferred_scheduling_terms_score(terms: list[dict[str, Any]], target: dict[str, Any], want: int) -> None:
    assert na.new_preferred_scheduling_terms(terms).score(target) == want


def test_preferred_scheduling_terms_errors() -> None:
    """Upstream TestPreferredSchedulingTermsScore "invalid field selector and label selector": paths [i]."""
    terms = [{"weight": 1, "preference": t} for t in INVALID_TERMS]
    with pytest.raises(SelectorError) as exc:
        na.new_preferred_scheduling_terms(terms)
    assert [e.field for e in exc.value.errors] == ["[0].matchFields[0].values", "[2].matchExpressions[0].key"]


def _pod(node_selector: dict[str, str] | None = None, required: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if required is not None:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    return {"spec": spec}


@pytest.mark.parametrize(
    ("pod", "node_labels", "want"),
    [
        (_pod(), {}, True),
        (_pod({"foo": "bar"}), {}, False),
        (_pod({"foo": "bar"}), {"foo": "bar"}, True),
        (_pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, True),
        (_pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, False),
        (
            _pod(required={"nodeSelectorTerms": [{"matchExpressions": [expr("foo", "In", "bar", "value2")]}]}),
            {"foo": "bar"},
            True,
        ),
        (_pod(required={"nodeSelectorTerms": None}), {"foo": "bar"}, False),
        (_pod(required={"nodeSelectorTerms": []}), {"foo": "bar"}, False),
        (_pod(required={"nodeSelectorTerms": [{"matchExpressions": []}]}), {"foo": "bar"}, False),
        (
            _pod({"foo": "bar"}, {"nodeSelectorTerms": [{"matchExpressions": [expr("foo", "Exists")]}]}),
            {"foo": "baz"},
            False,
        ),
        (
            _pod({}, {"nodeSelectorTerms": [{"matchExpressions": [expr("foo", "Exists")]}]}),
            {"foo": "baz"},
            True,
        ),
    ],
    ids=[
        "TestPodMatchesNodeSelectorAndAffinityTerms-no-selector",
        "TestPodMatchesNodeSelectorAndAffinityTerms-missing-labels",
        "TestPodMatchesNodeSelectorAndAffinityTerms-same-labels",
        "TestPodMatchesNodeSelectorAndAffinityTerms-node-labels-are-superset",
        "TestPodMatchesNodeSelectorAndAffinityTerms-node-labels-are-subset",
        "TestPodMatchesNodeSelectorAndAffinityTerms-in-matches",
        "TestPodMatchesNodeSelectorAndAffinityTerms-nil-terms",
        "TestPodMatchesNodeSelectorAndAffinityTerms-empty-terms",
        "TestPodMatchesNodeSelectorAndAffinityTerms-empty-match-expressions",
        "RequiredNodeAffinity-node-selector-and-affinity-both-apply",
        "RequiredNodeAffinity-empty-node-selector-ignored",
    ],
)
def test_required_node_affinity(pod: dict[str, Any], node_labels: dict[str, str], want: bool) -> None:
    matched, err = na.get_required_node_affinity(pod).match(node("n1", **node_labels))
    assert matched is want
    assert err is None


def test_required_node_affinity_lazy_errors() -> None:
    """GetRequiredNodeAffinity uses the lazy selector: a bad term is an error only when nothing matched."""
    affinity = na.get_required_node_affinity(
        _pod(
            required={
                "nodeSelectorTerms": [
                    {"matchExpressions": [expr("a", "Bogus")]},
                    {"matchFields": [HOST_1_IN]},
                ]
            }
        )
    )
    assert affinity.match(node("host_1")) == (True, None)
    matched, err = affinity.match(node("host_2"))
    assert not matched
    assert str(err) == (
        f'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Bogus": supported values: {SUPPORTED}'
    )
