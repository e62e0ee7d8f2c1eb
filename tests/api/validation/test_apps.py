"""Pins apps/v1 validation: upstream's rules, exact messages and paths, and no exception on any JSON.

Cases come from upstream ``pkg/apis/apps/validation/validation_test.go`` (TestValidateDeployment,
TestValidateReplicaSet, TestValidateDaemonSet*, TestValidateStatefulSet*, the status tests) and from the
registry strategies' selector immutability; each id names the rule it pins. Expected lists are the *whole*
error list, so an extra or missing error fails the case.

The pod spec of a template belongs to the pods module; these tests replace it with a recording fake (so they
test this module alone and pin the delegation), and one contract test runs the real one.
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.validation import apps
from kubeplane.api.validation.field import ErrorList, Path, invalid

from .json_values import JSON
from .json_values import paths as json_paths

PODS = "kubeplane.api.validation.pods"
DELETE = object()
LABELS = {"a": "b"}
POD_SPEC = {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Always"}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": LABELS}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": SELECTOR,
        "template": TEMPLATE,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
}
REPLICASET: dict[str, Any] = {"kind": "ReplicaSet", "spec": {"replicas": 1, "selector": SELECTOR, "template": TEMPLATE}}
DAEMONSET: dict[str, Any] = {
    "kind": "DaemonSet",
    "spec": {
        "selector": SELECTOR,
        "template": TEMPLATE,
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        "revisionHistoryLimit": 10,
    },
}
STATEFULSET: dict[str, Any] = {
    "kind": "StatefulSet",
    "spec": {
        "replicas": 1,
        "selector": SELECTOR,
        "template": TEMPLATE,
        "serviceName": "web",
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": 10,
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    },
}
BASES = {"Deployment": DEPLOYMENT, "ReplicaSet": REPLICASET, "DaemonSet": DAEMONSET, "StatefulSet": STATEFULSET}

QNAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
    "used for validation is '[0-9]+%')"
)
NEG = "must be greater than or equal to 0"
MISMATCH = "`selector` does not match template `labels`"


class FakePods(types.ModuleType):
    """Stands in for the pods module: records ``validate_pod_spec`` calls, returns ``errors``."""

    def __init__(self) -> None:
        super().__init__(PODS)
        self.calls: list[tuple[Mapping[str, Any], str]] = []
        self.errors: ErrorList = []

    def validate_pod_spec(self, spec: Mapping[str, Any], path: Path) -> ErrorList:
        if not isinstance(spec, Mapping) or not isinstance(path, Path):
            raise TypeError("validate_pod_spec(spec: Mapping, path: Path) contract broken")
        self.calls.append((spec, str(path)))
        return list(self.errors)


@pytest.fixture(autouse=True, scope="module")
def fake_pods() -> Iterator[FakePods]:
    fake = FakePods()
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, PODS, fake)
        yield fake


@pytest.fixture(autouse=True)
def _reset_fake(fake_pods: FakePods) -> None:
    fake_pods.calls.clear()
    fake_pods.errors = []


def make(base: Mapping[str, Any], changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A deep copy of ``base`` with dotted paths set (or removed with ``DELETE``)."""
    obj: dict[str, Any] = copy.deepcopy(dict(base))
    for dotted, value in (changes or {}).items():
        *parents, last = dotted.split(".")
        node = obj
        for p in parents:
            node = node.setdefault(p, {})
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = copy.deepcopy(value)
    return obj


def messages(errs: ErrorList) -> list[str]:
    return [str(e) for e in errs]


def create(kind: str, changes: Mapping[str, Any] | None = None) -> list[str]:
    return messages(apps.CREATE_VALIDATORS["apps", kind](make(BASES[kind], changes)))


# --- create ------------------------------------------------------------------------------------------------

DEPLOYMENT_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    (
        "selector-nil-required-and-matches-nothing",
        {"spec.selector": DELETE},
        ["spec.selector: Required value", f'spec.template.metadata.labels: Invalid value: {{"a":"b"}}: {MISMATCH}'],
    ),
    (
        "empty-selector",
        {"spec.selector": {}},
        ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
    ),
    (
        "selector-does-not-match-template",
        {"spec.template.metadata.labels": {"a": "c"}},
        [f'spec.template.metadata.labels: Invalid value: {{"a":"c"}}: {MISMATCH}'],
    ),
    (
        "template-without-labels-prints-null",
        {"spec.template.metadata": {}},
        [f"spec.template.metadata.labels: Invalid value: null: {MISMATCH}"],
    ),
    (
        "bad-selector-operator-and-invalid-label-selector",
        {"spec.selector.matchExpressions": [{"key": "a", "operator": "Foo"}]},
        [
            'spec.selector.matchExpressions[0].operator: Invalid value: "Foo": not a valid selector operator',
            'spec.selector: Invalid value: {"matchLabels":{"a":"b"},"matchExpressions":[{"key":"a","operator":'
            '"Foo"}]}: invalid label selector',
        ],
    ),
    (
        "selector-in-needs-values",
        {"spec.selector.matchExpressions": [{"key": "a", "operator": "In"}]},
        [
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
            "'NotIn'",
            'spec.selector: Invalid value: {"matchLabels":{"a":"b"},"matchExpressions":[{"key":"a","operator":"In"}]}: '
            "invalid label selector",
        ],
    ),
    (
        "selector-exists-forbids-values-and-checks-key",
        {"spec.selector.matchExpressions": [{"key": "-a", "operator": "Exists", "values": ["x"]}]},
        [
            "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'",
            f'spec.selector.matchExpressions[0].key: Invalid value: "-a": {QNAME_MSG}',
            'spec.selector: Invalid value: {"matchLabels":{"a":"b"},"matchExpressions":[{"key":"-a","operator":'
            '"Exists","values":["x"]}]}: invalid label selector',
        ],
    ),
    (
        "selector-label-value-checked-strictly",
        {"spec.selector.matchLabels": {"a": "b", "c": "-x"}},
        [
            f'spec.selector.matchLabels: Invalid value: "-x": {LABEL_VALUE_MSG}',
            'spec.selector: Invalid value: {"matchLabels":{"a":"b","c":"-x"}}: invalid label selector',
        ],
    ),
    ("negative-replicas", {"spec.replicas": -1}, [f"spec.replicas: Invalid value: -1: {NEG}"]),
    ("negative-minReadySeconds", {"spec.minReadySeconds": -1}, [f"spec.minReadySeconds: Invalid value: -1: {NEG}"]),
    ("revisionHistoryLimit-zero-ok", {"spec.revisionHistoryLimit": 0}, []),
    (
        "negative-revisionHistoryLimit",
        {"spec.revisionHistoryLimit": -2},
        [f"spec.revisionHistoryLimit: Invalid value: -2: {NEG}"],
    ),
    (
        "progressDeadline-must-exceed-minReadySeconds",
        {"spec.minReadySeconds": 10, "spec.progressDeadlineSeconds": 10},
        ["spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds"],
    ),
    (
        "negative-progressDeadline",
        {"spec.progressDeadlineSeconds": -1},
        [
            f"spec.progressDeadlineSeconds: Invalid value: -1: {NEG}",
            "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds",
        ],
    ),
    (
        "strategy-type-unsupported-prints-internal-struct",
        {"spec.strategy": {"type": "Foo"}},
        [
            'spec.strategy: Unsupported value: {"Type":"Foo","RollingUpdate":null}: supported values: "Recreate", '
            '"RollingUpdate"'
        ],
    ),
    (
        "strategy-type-unsupported-with-rolling-update",
        {"spec.strategy.type": "Foo", "spec.strategy.rollingUpdate": {"maxSurge": 1}},
        [
            'spec.strategy: Unsupported value: {"Type":"Foo","RollingUpdate":{"MaxUnavailable":0,"MaxSurge":1}}: '
            'supported values: "Recreate", "RollingUpdate"'
        ],
    ),
    (
        "recreate-forbids-rollingUpdate",
        {"spec.strategy.type": "Recreate"},
        ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"],
    ),
    ("recreate-ok", {"spec.strategy": {"type": "Recreate"}}, []),
    (
        "rollingUpdate-required",
        {"spec.strategy": {"type": "RollingUpdate"}},
        ["spec.strategy.rollingUpdate: Required value: this should be defaulted and never be nil"],
    ),
    (
        "maxUnavailable-and-maxSurge-both-zero",
        {"spec.strategy.rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}},
        ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
    ),
    (
        "zero-percent-both",
        {"spec.strategy.rollingUpdate": {"maxUnavailable": "0%", "maxSurge": "0%"}},
        ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'],
    ),
    (
        "maxUnavailable-over-100-percent",
        {"spec.strategy.rollingUpdate.maxUnavailable": "110%"},
        ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater than 100%'],
    ),
    ("maxSurge-over-100-percent-ok", {"spec.strategy.rollingUpdate.maxSurge": "200%"}, []),
    (
        "maxSurge-not-a-percent",
        {"spec.strategy.rollingUpdate.maxSurge": "20Percent"},
        [f'spec.strategy.rollingUpdate.maxSurge: Invalid value: "20Percent": {PERCENT_MSG}'],
    ),
    (
        "maxUnavailable-negative",
        {"spec.strategy.rollingUpdate.maxUnavailable": -1},
        [f"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: -1: {NEG}"],
    ),
    (
        "restartPolicy-must-be-Always",
        {"spec.template.spec.restartPolicy": "Never"},
        ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
    (
        "activeDeadlineSeconds-forbidden-says-ReplicaSet",
        {"spec.template.spec.activeDeadlineSeconds": 5},
        ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"],
    ),
    (
        "ephemeral-containers-forbidden-in-template",
        {"spec.template.spec.ephemeralContainers": [{"name": "e", "image": "busybox"}]},
        ["spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"],
    ),
    (
        "template-labels-validated-at-template-labels",
        {"spec.template.metadata.labels": {"a": "b", "-k": "v"}},
        [f'spec.template.labels: Invalid value: "-k": {QNAME_MSG}'],
    ),
    (
        "template-annotations-validated",
        {"spec.template.metadata.annotations": {"-k": "v"}},
        [f'spec.template.annotations: Invalid value: "-k": {QNAME_MSG}'],
    ),
    (
        "wrong-type-replicas",
        {"spec.replicas": "3"},
        ['spec.replicas: Invalid value: "3": must be of type integer'],
    ),
    (
        "replicas-out-of-int32",
        {"spec.replicas": 2**31},
        ["spec.replicas: Invalid value: 2147483648: must be of type int32"],
    ),
    (
        "wrong-type-reported-once",
        {"spec.strategy": {"type": 5}},
        [
            "spec.strategy.type: Invalid value: 5: must be of type string",
            'spec.strategy: Unsupported value: {"Type":"","RollingUpdate":null}: supported values: "Recreate", '
            '"RollingUpdate"',
        ],
    ),
    (
        "wrong-type-int-or-string",
        {"spec.strategy.rollingUpdate.maxSurge": [1]},
        ["spec.strategy.rollingUpdate.maxSurge: Invalid value: [1]: must be of type integer or string"],
    ),
    (
        "wrong-type-label-value",
        {"spec.template.metadata.labels": {"a": "b", "n": 1}},
        ["spec.template.metadata.labels[n]: Invalid value: 1: must be of type string"],
    ),
    (
        "wrong-type-spec",
        {"spec": "x"},
        [
            'spec: Invalid value: "x": must be of type object',
            "spec.selector: Required value",
            f"spec.template.metadata.labels: Invalid value: null: {MISMATCH}",
            'spec.template.spec.restartPolicy: Unsupported value: "": supported values: "Always"',
            'spec.strategy: Unsupported value: {"Type":"","RollingUpdate":null}: supported values: "Recreate", '
            '"RollingUpdate"',
        ],
    ),
]

REPLICASET_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    ("negative-replicas", {"spec.replicas": -1}, [f"spec.replicas: Invalid value: -1: {NEG}"]),
    ("negative-minReadySeconds", {"spec.minReadySeconds": -3}, [f"spec.minReadySeconds: Invalid value: -3: {NEG}"]),
    (
        "empty-selector-message-says-deployment",
        {"spec.selector": {}},
        ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"],
    ),
    (
        "selector-mismatch",
        {"spec.selector": {"matchLabels": {"a": "x"}}},
        [f'spec.template.metadata.labels: Invalid value: {{"a":"b"}}: {MISMATCH}'],
    ),
    (
        "restartPolicy-OnFailure",
        {"spec.template.spec.restartPolicy": "OnFailure"},
        ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
    ),
]

DAEMONSET_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    (
        "selector-nil-is-not-required-but-matches-nothing",
        {"spec.selector": DELETE},
        [f'spec.template.metadata.labels: Invalid value: {{"a":"b"}}: {MISMATCH}'],
    ),
    (
        "empty-selector",
        {"spec.selector": {}},
        ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"],
    ),
    (
        "selector-mismatch",
        {"spec.template.metadata.labels": {"a": "z"}},
        [f'spec.template.metadata.labels: Invalid value: {{"a":"z"}}: {MISMATCH}'],
    ),
    (
        "invalid-selector-value-no-match-check",
        {"spec.selector.matchExpressions": [{"key": "x", "operator": "In", "values": ["bad value!"]}]},
        [f'spec.selector.matchExpressions[0].values[0]: Invalid value: "bad value!": {LABEL_VALUE_MSG}'],
    ),
    (
        "updateStrategy-type-unsupported",
        {"spec.updateStrategy": {"type": "Foo"}},
        [
            'spec.updateStrategy: Unsupported value: {"Type":"Foo","RollingUpdate":null}: supported values: '
            '"RollingUpdate", "OnDelete"'
        ],
    ),
    ("onDelete-ok", {"spec.updateStrategy": {"type": "OnDelete"}}, []),
    (
        "rollingUpdate-required",
        {"spec.updateStrategy": {"type": "RollingUpdate"}},
        ["spec.updateStrategy.rollingUpdate: Required value"],
    ),
    (
        "both-zero",
        {"spec.updateStrategy.rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}},
        ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"],
    ),
    (
        "both-non-zero",
        {"spec.updateStrategy.rollingUpdate": {"maxUnavailable": 1, "maxSurge": "10%"}},
        [
            'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is '
            "non-zero"
        ],
    ),
    (
        "maxSurge-over-100-percent",
        {"spec.updateStrategy.rollingUpdate": {"maxUnavailable": 0, "maxSurge": "101%"}},
        ['spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "101%": must not be greater than 100%'],
    ),
    (
        "activeDeadlineSeconds-says-DaemonSet",
        {"spec.template.spec.activeDeadlineSeconds": 1},
        ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"],
    ),
    ("negative-minReadySeconds", {"spec.minReadySeconds": -1}, [f"spec.minReadySeconds: Invalid value: -1: {NEG}"]),
    (
        "negative-revisionHistoryLimit",
        {"spec.revisionHistoryLimit": -1},
        [f"spec.revisionHistoryLimit: Invalid value: -1: {NEG}"],
    ),
]

STATEFULSET_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    ("podManagementPolicy-required", {"spec.podManagementPolicy": ""}, ["spec.podManagementPolicy: Required value"]),
    (
        "podManagementPolicy-values",
        {"spec.podManagementPolicy": "Foo"},
        ["spec.podManagementPolicy: Invalid value: \"Foo\": must be 'OrderedReady' or 'Parallel'"],
    ),
    ("parallel-ok", {"spec.podManagementPolicy": "Parallel"}, []),
    ("updateStrategy-required", {"spec.updateStrategy": {}}, ["spec.updateStrategy: Required value"]),
    (
        "updateStrategy-type-invalid-prints-internal-struct",
        {"spec.updateStrategy": {"type": "Foo", "rollingUpdate": {"partition": 2}}},
        [
            'spec.updateStrategy: Invalid value: {"Type":"Foo","RollingUpdate":{"Partition":2,"MaxUnavailable":null}}: '
            "must be 'RollingUpdate' or 'OnDelete'"
        ],
    ),
    (
        "onDelete-with-rollingUpdate",
        {"spec.updateStrategy.type": "OnDelete"},
        [
            'spec.updateStrategy.rollingUpdate: Invalid value: {"Partition":0,"MaxUnavailable":null}: only allowed for '
            "updateStrategy 'RollingUpdate'"
        ],
    ),
    (
        "negative-partition",
        {"spec.updateStrategy.rollingUpdate.partition": -1},
        [f"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: {NEG}"],
    ),
    (
        "maxUnavailable-cannot-be-0",
        {"spec.updateStrategy.rollingUpdate.maxUnavailable": 0},
        ["spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: cannot be 0"],
    ),
    (
        "maxUnavailable-over-100-percent",
        {"spec.updateStrategy.rollingUpdate.maxUnavailable": "101%"},
        ['spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%'],
    ),
    (
        "pvc-retention-policy-values",
        {"spec.persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Foo", "whenScaled": "Delete"}},
        [
            'spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Foo": supported values: '
            '"Retain", "Delete"'
        ],
    ),
    ("negative-ordinals-start", {"spec.ordinals": {"start": -1}}, [f"spec.ordinals.start: Invalid value: -1: {NEG}"]),
    (
        "selector-required",
        {"spec.selector": DELETE},
        [
            "spec.selector: Required value",
            f'spec.template.metadata.labels: Invalid value: {{"a":"b"}}: {MISMATCH}',
        ],
    ),
    (
        "empty-selector",
        {"spec.selector": {}},
        ["spec.selector: Invalid value: {}: empty selector is invalid for statefulset"],
    ),
    (
        "unparsable-selector-has-empty-detail",
        {"spec.selector.matchExpressions": [{"key": "a", "operator": "Foo"}]},
        [
            'spec.selector.matchExpressions[0].operator: Invalid value: "Foo": not a valid selector operator',
            'spec.selector: Invalid value: {"matchLabels":{"a":"b"},"matchExpressions":[{"key":"a","operator":"Foo"}]}',
        ],
    ),
    (
        "restartPolicy-must-be-Always",
        {"spec.template.spec.restartPolicy": "Never"},
        ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
    ),
    (
        "activeDeadlineSeconds-says-StatefulSet",
        {"spec.template.spec.activeDeadlineSeconds": 1},
        ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"],
    ),
    (
        "serviceName-is-a-dns-label-kubernetes-130233",
        {"spec.serviceName": "Web_1"},
        [
            'spec.serviceName: Invalid value: "Web_1": a lowercase RFC 1123 label must consist of lower case '
            "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
            "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ],
    ),
    ("serviceName-optional", {"spec.serviceName": DELETE}, []),
]


@pytest.mark.parametrize(
    ("kind", "changes", "expected"),
    [
        pytest.param(kind, changes, expected, id=f"{kind}:{case_id}")
        for kind, cases in (
            ("Deployment", DEPLOYMENT_CASES),
            ("ReplicaSet", REPLICASET_CASES),
            ("DaemonSet", DAEMONSET_CASES),
            ("StatefulSet", STATEFULSET_CASES),
        )
        for case_id, changes, expected in cases
    ],
)
def test_create(kind: str, changes: dict[str, Any], expected: list[str]) -> None:
    assert create(kind, changes) == expected


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_template_pod_spec_is_delegated_in_order(kind: str, fake_pods: FakePods) -> None:
    """ValidatePodTemplateSpec: labels, annotations, then the pod spec, then the workload's restartPolicy rule."""
    fake_pods.errors = [invalid(Path("x"), 1, detail="from pods")]
    got = create(
        kind, {"spec.template.metadata.labels": {"a": "b", "-k": "v"}, "spec.template.spec.restartPolicy": "Never"}
    )
    assert got == [
        f'spec.template.labels: Invalid value: "-k": {QNAME_MSG}',
        "x: Invalid value: 1: from pods",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]
    assert fake_pods.calls == [(make(POD_SPEC, {"restartPolicy": "Never"}), "spec.template.spec")]


def test_statefulset_pod_spec_is_not_validated_as_upstream(fake_pods: FakePods) -> None:
    """Upstream's TODO: a StatefulSet's pod volumes may name volumeClaimTemplates, so ValidatePodSpec is skipped."""
    assert create("StatefulSet") == []
    assert fake_pods.calls == []


def test_non_object_pod_spec_is_not_passed_on(fake_pods: FakePods) -> None:
    got = create("Deployment", {"spec.template.spec": ["x"]})
    assert got == [
        'spec.template.spec: Invalid value: ["x"]: must be of type object',
        'spec.template.spec.restartPolicy: Unsupported value: "": supported values: "Always"',
    ]
    assert fake_pods.calls == []


DEFAULTED_POD_SPEC = {
    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}],
    "restartPolicy": "Always",
    "dnsPolicy": "ClusterFirst",
    "terminationGracePeriodSeconds": 30,
}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_contract_with_the_real_pods_module(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real ``validate_pod_spec(spec, path) -> ErrorList`` accepts a defaulted template and roots its errors."""
    monkeypatch.delitem(sys.modules, PODS)
    assert create(kind, {"spec.template.spec": DEFAULTED_POD_SPEC}) == []
    got = create(kind, {"spec.template.spec": make(DEFAULTED_POD_SPEC, {"dnsPolicy": "Sometimes"})})
    assert got
    assert all(m.startswith("spec.template.spec.dnsPolicy: ") for m in got)


# --- update ------------------------------------------------------------------------------------------------


def update(kind: str, new: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    old = make(BASES[kind]) if old is None else old
    return messages(apps.UPDATE_VALIDATORS["apps", kind](make(BASES[kind], new), old))


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_selector_is_immutable_in_apps_v1(kind: str) -> None:
    changes = {
        "spec.selector": {"matchLabels": {"a": "b", "c": "d"}},
        "spec.template.metadata.labels": {"a": "b", "c": "d"},
    }
    assert update(kind, changes) == [
        'spec.selector: Invalid value: {"matchLabels":{"a":"b","c":"d"}}: field is immutable'
    ]
    assert update(kind, {"spec.replicas": 5, "spec.template.metadata.labels": {"a": "b", "x": "y"}}) == []


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "DaemonSet"])
def test_selector_immutability_is_semantic(kind: str) -> None:
    """apiequality.Semantic: an empty matchExpressions equals an absent one."""
    assert update(kind, {"spec.selector": {"matchLabels": {"a": "b"}, "matchExpressions": []}}) == []


def test_update_also_runs_create_checks() -> None:
    assert update("Deployment", {"spec.replicas": -1}) == [f"spec.replicas: Invalid value: -1: {NEG}"]


def test_daemonset_update_tolerates_invalid_selector_values_already_stored() -> None:
    """hasInvalidLabelValueInLabelSelector(old) relaxes ValidateLabelSelector for the update."""
    bad = {"spec.selector.matchExpressions": [{"key": "x", "operator": "In", "values": ["bad value!"]}]}
    assert update("DaemonSet", bad, make(DAEMONSET, bad)) == []
    assert update("DaemonSet", bad) == [
        f'spec.selector.matchExpressions[0].values[0]: Invalid value: "bad value!": {LABEL_VALUE_MSG}',
        'spec.selector: Invalid value: {"matchLabels":{"a":"b"},"matchExpressions":[{"key":"x","operator":"In",'
        '"values":["bad value!"]}]}: field is immutable',
    ]


STATEFULSET_FORBIDDEN = (
    "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({"spec.replicas": 3}, [], id="replicas-mutable"),
        pytest.param({"spec.template.spec.containers": [{"name": "c", "image": "nginx:2"}]}, [], id="template-mutable"),
        pytest.param({"spec.updateStrategy": {"type": "OnDelete"}}, [], id="updateStrategy-mutable"),
        pytest.param({"spec.minReadySeconds": 5, "spec.ordinals": {"start": 2}}, [], id="minReady-ordinals-mutable"),
        pytest.param({"spec.serviceName": "other"}, [STATEFULSET_FORBIDDEN], id="serviceName-frozen"),
        pytest.param({"spec.podManagementPolicy": "Parallel"}, [STATEFULSET_FORBIDDEN], id="podManagement-frozen"),
        pytest.param(
            {
                "spec.selector": {"matchLabels": {"a": "b", "c": "d"}},
                "spec.template.metadata.labels": {"a": "b", "c": "d"},
            },
            [STATEFULSET_FORBIDDEN],
            id="selector-frozen",
        ),
        pytest.param(
            {"spec.volumeClaimTemplates": [{"metadata": {"name": "v"}}]}, [STATEFULSET_FORBIDDEN], id="vct-frozen"
        ),
        pytest.param({"spec.volumeClaimTemplates": []}, [], id="empty-list-equals-absent"),
        pytest.param(
            {"spec.serviceName": "Bad_Name"}, [STATEFULSET_FORBIDDEN], id="serviceName-not-rechecked-on-update"
        ),
    ],
)
def test_statefulset_update(changes: dict[str, Any], expected: list[str]) -> None:
    assert update("StatefulSet", changes) == expected


# --- status ------------------------------------------------------------------------------------------------


def status(kind: str, new: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    validator = apps.STATUS_UPDATE_VALIDATORS["apps", kind]
    return messages(validator({"status": dict(new)}, {"status": dict(old or {})}))


GT = "cannot be greater than status.replicas"
STATUS_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("Deployment", "valid", {"replicas": 3, "readyReplicas": 2, "availableReplicas": 2, "updatedReplicas": 3}, {}, []),
    (
        "Deployment",
        "negatives-in-upstream-order",
        {"observedGeneration": -1, "readyReplicas": -1, "unavailableReplicas": -2, "collisionCount": -1},
        {},
        [
            f"status.observedGeneration: Invalid value: -1: {NEG}",
            f"status.readyReplicas: Invalid value: -1: {NEG}",
            f"status.unavailableReplicas: Invalid value: -2: {NEG}",
            f"status.collisionCount: Invalid value: -1: {NEG}",
            "status.availableReplicas: Invalid value: 0: cannot be greater than readyReplicas",
        ],
    ),
    (
        "Deployment",
        "counts-above-replicas",
        {"replicas": 1, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 3},
        {},
        [
            f"status.updatedReplicas: Invalid value: 2: {GT}",
            f"status.readyReplicas: Invalid value: 2: {GT}",
            f"status.availableReplicas: Invalid value: 3: {GT}",
            "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
        ],
    ),
    (
        "Deployment",
        "collisionCount-decremented",
        {"collisionCount": 1},
        {"collisionCount": 2},
        ["status.collisionCount: Invalid value: 1: cannot be decremented"],
    ),
    (
        "Deployment",
        "collisionCount-unset-counts-as-decrement",
        {},
        {"collisionCount": 1},
        ["status.collisionCount: Invalid value: 0: cannot be decremented"],
    ),
    ("Deployment", "collisionCount-set-first-time", {"collisionCount": 1}, {}, []),
    (
        "ReplicaSet",
        "counts-above-replicas",
        {
            "replicas": 1,
            "fullyLabeledReplicas": 2,
            "readyReplicas": 1,
            "availableReplicas": 2,
            "observedGeneration": -1,
        },
        {},
        [
            f"status.observedGeneration: Invalid value: -1: {NEG}",
            f"status.fullyLabeledReplicas: Invalid value: 2: {GT}",
            f"status.availableReplicas: Invalid value: 2: {GT}",
            "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas",
        ],
    ),
    (
        "DaemonSet",
        "negatives",
        {"currentNumberScheduled": -1, "numberReady": -1, "observedGeneration": -1, "numberUnavailable": -1},
        {},
        [
            f"status.currentNumberScheduled: Invalid value: -1: {NEG}",
            f"status.numberReady: Invalid value: -1: {NEG}",
            f"status.observedGeneration: Invalid value: -1: {NEG}",
            f"status.numberUnavailable: Invalid value: -1: {NEG}",
        ],
    ),
    (
        "DaemonSet",
        "collisionCount-decremented",
        {"collisionCount": 0},
        {"collisionCount": 3},
        ["status.collisionCount: Invalid value: 0: cannot be decremented"],
    ),
    (
        "StatefulSet",
        "counts-above-replicas",
        {"replicas": 2, "readyReplicas": 1, "currentReplicas": 3, "updatedReplicas": 3, "availableReplicas": 2},
        {},
        [
            f"status.currentReplicas: Invalid value: 3: {GT}",
            f"status.updatedReplicas: Invalid value: 3: {GT}",
            "status.availableReplicas: Invalid value: 2: cannot be greater than status.readyReplicas",
        ],
    ),
    (
        "StatefulSet",
        "observedGeneration-checked-only-when-set",
        {"observedGeneration": -5},
        {},
        [f"status.observedGeneration: Invalid value: -5: {NEG}"],
    ),
    (
        "StatefulSet",
        "wrong-type-count",
        {"replicas": 1.5},
        {},
        ["status.replicas: Invalid value: 1.5: must be of type integer"],
    ),
]


@pytest.mark.parametrize(
    ("kind", "new", "old", "expected"),
    [pytest.param(k, n, o, e, id=f"{k}:{i}") for k, i, n, o, e in STATUS_CASES],
)
def test_status_update(kind: str, new: dict[str, Any], old: dict[str, Any], expected: list[str]) -> None:
    assert status(kind, new, old) == expected


def test_tables_cover_the_four_workloads() -> None:
    keys = {("apps", k) for k in BASES}
    assert set(apps.CREATE_VALIDATORS) == set(apps.UPDATE_VALIDATORS) == set(apps.STATUS_UPDATE_VALIDATORS) == keys


# --- robustness --------------------------------------------------------------------------------------------


# Member names the validators read, so fuzzing also reaches members the base objects leave out.
VOCABULARY = [
    "replicas",
    "minReadySeconds",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "strategy",
    "rollingUpdate",
    "type",
    "maxUnavailable",
    "maxSurge",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "template",
    "metadata",
    "labels",
    "annotations",
    "spec",
    "restartPolicy",
    "activeDeadlineSeconds",
    "ephemeralContainers",
    "updateStrategy",
    "partition",
    "podManagementPolicy",
    "persistentVolumeClaimRetentionPolicy",
    "whenDeleted",
    "whenScaled",
    "ordinals",
    "start",
    "serviceName",
    "status",
    "collisionCount",
    "observedGeneration",
    "readyReplicas",
    "availableReplicas",
    "numberReady",
]


def _replace(obj: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(obj)
    node = out
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value
    return out


def fuzz(base: dict[str, Any], data: st.DataObject) -> Any:
    """``base`` with one value replaced by arbitrary JSON, or arbitrary JSON added under a known member name."""
    paths = list(json_paths(base))
    if data.draw(st.booleans()):
        return _replace(base, data.draw(st.sampled_from(paths)), data.draw(JSON))
    nodes = [p for p in paths if isinstance(_get(base, p), dict)]
    node = data.draw(st.sampled_from(nodes))
    return _replace(base, (*node, data.draw(st.sampled_from(VOCABULARY))), data.draw(JSON))


def _get(obj: Any, path: tuple[str | int, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


STATUS = {"replicas": 2, "readyReplicas": 1, "collisionCount": 1, "currentNumberScheduled": 1}
FUZZ_TARGETS = [
    (f"{table}:{kind}", table, kind, {**BASES[kind], "status": STATUS})
    for table in ("create", "update", "status")
    for kind in BASES
]


@pytest.mark.parametrize(("table", "kind", "base"), [pytest.param(t, k, b, id=i) for i, t, k, b in FUZZ_TARGETS])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_exception_on_wrong_json_types(table: str, kind: str, base: dict[str, Any], data: st.DataObject) -> None:
    new, old = (fuzz(base, data) for _ in range(2))
    if not isinstance(new, dict) or not isinstance(old, dict):
        return  # the registry always passes objects
    if table == "create":
        errs = apps.CREATE_VALIDATORS["apps", kind](new)
    elif table == "update":
        errs = apps.UPDATE_VALIDATORS["apps", kind](new, old)
    else:
        errs = apps.STATUS_UPDATE_VALIDATORS["apps", kind](new, old)
    for e in errs:
        str(e)  # every error renders
