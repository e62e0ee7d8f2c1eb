"""Workload / PodGroup validation and pod ``spec.schedulingGroup``, as upstream
pkg/apis/scheduling/validation/validation_test.go (TestValidateWorkload, TestValidatePodGroup and their update
tests) with upstream's messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.validation import pods
from kubeplane.api.validation.scheduling_workload import (
    validate_pod_group,
    validate_pod_group_update,
    validate_workload,
    validate_workload_update,
)
from tests.api.validation.test_pods import pod


def _workload(*templates: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "default"}, "spec": {"podGroupTemplates": list(templates)}}


def _tpl(name: str = "workers", policy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "schedulingPolicy": policy if policy is not None else {"gang": {"minCount": 2}}}


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_valid_workload() -> None:
    assert validate_workload(_workload(_tpl(), _tpl("ps", {"basic": {}}))) == []


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        # upstream "no pod group templates"
        (_workload(), ["spec.podGroupTemplates: Required value: must have at least one item"]),
        # upstream "too many pod group templates"
        (
            _workload(*[_tpl(f"g{i}") for i in range(9)]),
            ["spec.podGroupTemplates: Too many: 9: must have at most 8 items"],
        ),
        # upstream "duplicate pod group template name"
        (_workload(_tpl(), _tpl()), ['spec.podGroupTemplates[1]: Duplicate value: "workers"']),
        # upstream "no scheduling policy set"
        (
            _workload(_tpl(policy={})),
            ['spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`'],
        ),
        # upstream "both basic and gang set"
        (
            _workload(_tpl(policy={"basic": {}, "gang": {"minCount": 1}})),
            [
                'spec.podGroupTemplates[0].schedulingPolicy: Invalid value: "{`basic`, `gang`}": exactly one of '
                "`basic`, `gang` is required, but multiple fields are set"
            ],
        ),
        # upstream "gang minCount zero" / "gang minCount negative"
        (
            _workload(_tpl(policy={"gang": {"minCount": 0}})),
            ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Required value"],
        ),
        (
            _workload(_tpl(policy={"gang": {"minCount": -1}})),
            ["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than zero"],
        ),
    ],
)
def test_invalid_workload(workload: dict[str, Any], expected: list[str]) -> None:
    assert _msgs(validate_workload(workload)) == expected


def test_workload_templates_immutable() -> None:
    """upstream TestValidateWorkloadUpdate "podGroupTemplates changed"."""
    old = _workload(_tpl())
    new = _workload(_tpl(policy={"gang": {"minCount": 3}}))
    errs = validate_workload_update(new, old)
    assert [e.field for e in errs] == ["spec.podGroupTemplates"]
    assert str(errs[0]).endswith("field is immutable")
    assert validate_workload_update(copy.deepcopy(old), old) == []


def _pg(policy: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "pg", "namespace": "default"}, "spec": {"schedulingPolicy": policy}}


def test_pod_group_policy() -> None:
    assert validate_pod_group(_pg({"gang": {"minCount": 4}})) == []
    assert _msgs(validate_pod_group(_pg({"gang": {"minCount": 0}}))) == [
        "spec.schedulingPolicy.gang.minCount: Required value"
    ]
    ref = _pg({"basic": {}})
    ref["spec"]["workloadRef"] = {"workloadName": "", "templateName": "Bad_Name"}
    msgs = _msgs(validate_pod_group(ref))
    assert msgs[0] == "spec.workloadRef.workloadName: Required value"
    assert msgs[1].startswith('spec.workloadRef.templateName: Invalid value: "Bad_Name": a lowercase RFC 1123')


def test_pod_group_spec_immutable() -> None:
    """upstream TestValidatePodGroupUpdate: the scheduling policy may not change."""
    errs = validate_pod_group_update(_pg({"gang": {"minCount": 3}}), _pg({"gang": {"minCount": 4}}))
    assert [(e.field, e.detail) for e in errs] == [("spec.schedulingPolicy", "field is immutable")]


def _pod(group: dict[str, Any] | None) -> dict[str, Any]:
    return pod() if group is None else pod(schedulingGroup=group)


def test_pod_scheduling_group() -> None:
    assert pods.validate_pod(_pod({"podGroupName": "pg"})) == []
    assert _msgs(pods.validate_pod(_pod({"podGroupName": ""}))) == ["spec.schedulingGroup.podGroupName: Required value"]
    assert _msgs(pods.validate_pod(_pod({}))) == [
        'spec.schedulingGroup: Invalid value: "": must specify one of: `podGroupName`'
    ]


def test_pod_scheduling_group_immutable() -> None:
    errs = pods.validate_pod_update(_pod({"podGroupName": "b"}), _pod({"podGroupName": "a"}))
    assert _msgs(errs) == ['spec.schedulingGroup: Invalid value: {"podGroupName":"b"}: field is immutable']
    errs = pods.validate_pod_update(_pod(None), _pod({"podGroupName": "a"}))
    assert [e.field for e in errs] == ["spec.schedulingGroup"]
