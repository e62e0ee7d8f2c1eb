"""Pins Lease, PriorityClass, PodDisruptionBudget, StorageClass, RBAC and events.k8s.io Event validation.

Cases follow upstream's validation_test.go of each group (coordination, scheduling, policy, storage, rbac,
core events.go for ValidateEventCreate/Update with events.k8s.io/v1); ids name the rule pinned. Expected lists
are whole error lists, exact ``str(error)`` text.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.validation import cluster
from kubeplane.api.validation.field import ErrorList

from .json_values import JSON
from .json_values import paths as json_paths

DELETE = object()
NEG = "must be greater than or equal to 0"
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


RBAC = "rbac.authorization.k8s.io"
LEASE: dict[str, Any] = {
    "metadata": {"name": "l", "namespace": "kube-system"},
    "spec": {
        "holderIdentity": "h",
        "leaseDurationSeconds": 15,
        "leaseTransitions": 0,
        "renewTime": "2024-01-01T00:00:00.000000Z",
    },
}
PRIORITY_CLASS: dict[str, Any] = {
    "metadata": {"name": "high"},
    "value": 1000,
    "globalDefault": False,
    "preemptionPolicy": "PreemptLowerPriority",
}
PDB: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
    "status": {
        "disruptionsAllowed": 0,
        "currentHealthy": 1,
        "desiredHealthy": 1,
        "expectedPods": 1,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "lastTransitionTime": "2024-01-01T00:00:00Z",
            }
        ],
    },
}
STORAGE_CLASS: dict[str, Any] = {
    "metadata": {"name": "gp2"},
    "provisioner": "kubernetes.io/aws-ebs",
    "parameters": {"type": "gp2"},
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
}
ROLE: dict[str, Any] = {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
CLUSTER_ROLE: dict[str, Any] = {
    "rules": [
        {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]},
    ],
    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]},
}
ROLE_BINDING: dict[str, Any] = {
    "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
    "subjects": [
        {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
        {"kind": "User", "apiGroup": RBAC, "name": "alice"},
        {"kind": "Group", "apiGroup": RBAC, "name": "system:masters"},
    ],
}
CLUSTER_ROLE_BINDING: dict[str, Any] = make(ROLE_BINDING, {"roleRef.kind": "ClusterRole"})
EVENT: dict[str, Any] = {
    "metadata": {"name": "e", "namespace": "default"},
    "eventTime": "2024-01-01T00:00:00.000001Z",
    "reportingController": "kubeplane.io/scheduler",
    "reportingInstance": "scheduler-1",
    "action": "Binding",
    "reason": "Scheduled",
    "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1"},
    "note": "assigned",
    "type": "Normal",
}
BASES: dict[tuple[str, str], dict[str, Any]] = {
    ("coordination.k8s.io", "Lease"): LEASE,
    ("scheduling.k8s.io", "PriorityClass"): PRIORITY_CLASS,
    ("policy", "PodDisruptionBudget"): PDB,
    ("storage.k8s.io", "StorageClass"): STORAGE_CLASS,
    (RBAC, "Role"): ROLE,
    (RBAC, "ClusterRole"): CLUSTER_ROLE,
    (RBAC, "RoleBinding"): ROLE_BINDING,
    (RBAC, "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("events.k8s.io", "Event"): EVENT,
}
KINDS = {kind: key for key in BASES for kind in [key[1]]}


def messages(errs: ErrorList) -> list[str]:
    return [str(e) for e in errs]


def create(kind: str, changes: Mapping[str, Any] | None = None) -> list[str]:
    key = KINDS[kind]
    return messages(cluster.CREATE_VALIDATORS[key](make(BASES[key], changes)))


def update(kind: str, changes: Mapping[str, Any], old_changes: Mapping[str, Any] | None = None) -> list[str]:
    key = KINDS[kind]
    return messages(cluster.UPDATE_VALIDATORS[key](make(BASES[key], changes), make(BASES[key], old_changes)))


# --- create ------------------------------------------------------------------------------------------------

QNAME_KEY_MSG = (
    "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')"
)
REASON_MSG = (
    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
    "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
    "'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
    "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')"
)
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
RESERVED = "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only."

CREATE_CASES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    # coordination.k8s.io Lease: ValidateLeaseSpec
    ("Lease", "valid", {}, []),
    ("Lease", "empty-spec-ok", {"spec": {}}, []),
    (
        "Lease",
        "duration-must-be-positive",
        {"spec.leaseDurationSeconds": 0},
        ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
    ),
    (
        "Lease",
        "transitions-non-negative",
        {"spec.leaseTransitions": -1},
        ["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"],
    ),
    (
        "Lease",
        "strategy-values-doubled-path-as-upstream",
        {"spec.strategy": "Foo"},
        ['spec.strategy.strategy: Unsupported value: "Foo": supported values: "OldestEmulationVersion"'],
    ),
    ("Lease", "strategy-known", {"spec.strategy": "OldestEmulationVersion", "spec.preferredHolder": "h"}, []),
    ("Lease", "strategy-custom-qualified-name-ok", {"spec.strategy": "example.com/mine"}, []),
    (
        "Lease",
        "strategy-custom-must-be-qualified-name",
        {"spec.strategy": "a/b/c"},
        [f'spec.strategy.strategy: Invalid value: "a/b/c": {QNAME_KEY_MSG}'],
    ),
    (
        "Lease",
        "preferredHolder-needs-strategy",
        {"spec.preferredHolder": "h"},
        ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"],
    ),
    (
        "Lease",
        "renewTime-is-a-MicroTime",
        {"spec.renewTime": "2024-01-01T00:00:00Z"},
        [
            "spec.renewTime: Invalid value: \"2024-01-01T00:00:00Z\": parsing time '2024-01-01T00:00:00Z': not in "
            "the form 2006-01-02T15:04:05.000000Z07:00"
        ],
    ),
    # scheduling.k8s.io PriorityClass: ValidatePriorityClass
    ("PriorityClass", "valid", {}, []),
    ("PriorityClass", "highest-user-value-ok", {"value": 1_000_000_000}, []),
    (
        "PriorityClass",
        "above-highest-user-definable",
        {"value": 1_000_000_001},
        ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"],
    ),
    (
        "PriorityClass",
        "system-prefix-reserved",
        {"metadata.name": "system-foo"},
        [f"{RESERVED} error: system-foo is not a known system priority class"],
    ),
    ("PriorityClass", "system-node-critical-ok", {"metadata.name": "system-node-critical", "value": 2_000_001_000}, []),
    (
        "PriorityClass",
        "system-cluster-critical-ok",
        {"metadata.name": "system-cluster-critical", "value": 2_000_000_000},
        [],
    ),
    (
        "PriorityClass",
        "system-class-wrong-value",
        {"metadata.name": "system-cluster-critical", "value": 5},
        [f"{RESERVED} error: value of system-cluster-critical PriorityClass must be 2000000000"],
    ),
    (
        "PriorityClass",
        "system-class-not-global-default",
        {"metadata.name": "system-node-critical", "value": 2_000_001_000, "globalDefault": True},
        [f"{RESERVED} error: globalDefault of system-node-critical PriorityClass must be false"],
    ),
    (
        "PriorityClass",
        "preemptionPolicy-required-when-set-empty",
        {"preemptionPolicy": ""},
        ["preemptionPolicy: Required value"],
    ),
    (
        "PriorityClass",
        "preemptionPolicy-values",
        {"preemptionPolicy": "Sometimes"},
        ['preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"'],
    ),
    ("PriorityClass", "preemptionPolicy-optional", {"preemptionPolicy": DELETE}, []),
    (
        "PriorityClass",
        "wrong-type-globalDefault",
        {"globalDefault": "yes"},
        ['globalDefault: Invalid value: "yes": must be of type boolean'],
    ),
    # policy PodDisruptionBudget: ValidatePodDisruptionBudgetSpec
    ("PodDisruptionBudget", "valid", {}, []),
    ("PodDisruptionBudget", "percent-ok", {"spec.minAvailable": "50%"}, []),
    (
        "PodDisruptionBudget",
        "min-and-max-exclusive-prints-internal-spec",
        {"spec.maxUnavailable": "10%"},
        [
            'spec: Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"a":"b"}},"MaxUnavailable":"10%",'
            '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set'
        ],
    ),
    (
        "PodDisruptionBudget",
        "negative-minAvailable",
        {"spec.minAvailable": -1},
        [f"spec.minAvailable: Invalid value: -1: {NEG}"],
    ),
    (
        "PodDisruptionBudget",
        "maxUnavailable-over-100-percent",
        {"spec.minAvailable": DELETE, "spec.maxUnavailable": "101%"},
        ['spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%'],
    ),
    ("PodDisruptionBudget", "nil-selector-ok", {"spec.selector": DELETE}, []),
    (
        "PodDisruptionBudget",
        "selector-validated",
        {"spec.selector": {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-x"]}]}},
        [f'spec.selector.matchExpressions[0].values[0]: Invalid value: "-x": {LABEL_VALUE_MSG}'],
    ),
    (
        "PodDisruptionBudget",
        "unhealthyPodEvictionPolicy-values",
        {"spec.unhealthyPodEvictionPolicy": "Never"},
        [
            'spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", '
            '"IfHealthyBudget"'
        ],
    ),
    ("PodDisruptionBudget", "unhealthyPodEvictionPolicy-ok", {"spec.unhealthyPodEvictionPolicy": "AlwaysAllow"}, []),
    # storage.k8s.io StorageClass: ValidateStorageClass
    ("StorageClass", "valid", {}, []),
    ("StorageClass", "provisioner-required", {"provisioner": ""}, ["provisioner: Required value"]),
    ("StorageClass", "provisioner-checked-lower-cased", {"provisioner": "Kubernetes.io/AWS-EBS"}, []),
    (
        "StorageClass",
        "provisioner-qualified-name",
        {"provisioner": "a/b/c"},
        [f'provisioner: Invalid value: "a/b/c": {QNAME_KEY_MSG}'],
    ),
    (
        "StorageClass",
        "parameter-key-not-empty",
        {"parameters": {"": "x"}},
        ['parameters: Invalid value: "": field can not be empty.'],
    ),
    (
        "StorageClass",
        "too-many-parameters",
        {"parameters": {f"k{i}": "v" for i in range(513)}},
        ["parameters: Too long: may not be more than 512 bytes"],
    ),
    (
        "StorageClass",
        "parameters-over-256KiB",
        {"parameters": {"k": "v" * 256 * 1024}},
        ["parameters: Too long: may not be more than 262144 bytes"],
    ),
    (
        "StorageClass",
        "reclaimPolicy-values",
        {"reclaimPolicy": "Recycle"},
        ['reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"'],
    ),
    (
        "StorageClass",
        "volumeBindingMode-required",
        {"volumeBindingMode": DELETE},
        ["volumeBindingMode: Required value"],
    ),
    (
        "StorageClass",
        "volumeBindingMode-values",
        {"volumeBindingMode": "Lazy"},
        ['volumeBindingMode: Unsupported value: "Lazy": supported values: "Immediate", "WaitForFirstConsumer"'],
    ),
    (
        "StorageClass",
        "topology-values-required-and-unique-keys-unique",
        {"allowedTopologies": [{"matchLabelExpressions": [{"key": "z", "values": ["a", "a"]}, {"key": "z"}]}]},
        [
            'allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: "a"',
            "allowedTopologies[0].matchLabelExpressions[1].values: Required value",
            'allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: "z"',
        ],
    ),
    (
        "StorageClass",
        "topology-duplicate-terms",
        {"allowedTopologies": [{"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}] * 2},
        ['allowedTopologies[1].matchLabelExpressions: Duplicate value: ""'],
    ),
    (
        "StorageClass",
        "topology-empty-term-quirk-nil-maps-seeded",
        {"allowedTopologies": [{}, {"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}]},
        ['allowedTopologies[0].matchLabelExpressions: Duplicate value: ""'] * 2,
    ),
    # rbac: ValidatePolicyRule, ValidateClusterRole, ValidateRoleBinding(Subject)
    ("Role", "valid", {}, []),
    ("Role", "no-rules-ok", {"rules": []}, []),
    (
        "Role",
        "verbs-required",
        {"rules": [{"apiGroups": [""], "resources": ["pods"]}]},
        ["rules[0].verbs: Required value: verbs must contain at least one value"],
    ),
    (
        "Role",
        "resource-rule-needs-groups-and-resources",
        {"rules": [{"verbs": ["get"]}]},
        [
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
            "rules[0].resources: Required value: resource rules must supply at least one resource",
        ],
    ),
    (
        "Role",
        "namespaced-rules-no-non-resource-urls",
        {"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}]},
        [
            'rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs',
            'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and '
            "non-resource URLs",
        ],
    ),
    ("ClusterRole", "valid", {}, []),
    (
        "ClusterRole",
        "aggregation-needs-a-selector",
        {"aggregationRule": {}},
        [
            "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
            "aggregationRule is non-nil"
        ],
    ),
    (
        "ClusterRole",
        "aggregation-selector-invalid-prints-null-as-upstream",
        {"aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Foo"}]}]}},
        [
            'aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Foo": not a valid '
            "selector operator",
            "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
        ],
    ),
    ("RoleBinding", "valid", {}, []),
    (
        "RoleBinding",
        "roleRef-required",
        {"roleRef": DELETE},
        [
            'roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"',
            'roleRef.kind: Unsupported value: "": supported values: "Role", "ClusterRole"',
            "roleRef.name: Required value",
        ],
    ),
    (
        "RoleBinding",
        "roleRef-name-is-a-path-segment",
        {"roleRef.name": ".."},
        ["roleRef.name: Invalid value: \"..\": may not be '..'"],
    ),
    (
        "RoleBinding",
        "service-account-subject-rules",
        {"subjects": [{"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": "x"}]},
        [
            f'subjects[0].name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}',
            'subjects[0].apiGroup: Unsupported value: "x": supported values: ""',
        ],
    ),
    (
        "RoleBinding",
        "user-and-group-need-rbac-group",
        {"subjects": [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g", "apiGroup": "x"}]},
        [
            'subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"',
            'subjects[1].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
        ],
    ),
    (
        "RoleBinding",
        "subject-kind-and-name",
        {"subjects": [{"kind": "Robot"}]},
        [
            "subjects[0].name: Required value",
            'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        ],
    ),
    ("ClusterRoleBinding", "valid", {}, []),
    (
        "ClusterRoleBinding",
        "roleRef-must-be-ClusterRole",
        {"roleRef.kind": "Role"},
        ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"'],
    ),
    (
        "ClusterRoleBinding",
        "service-account-needs-namespace",
        {"subjects": [{"kind": "ServiceAccount", "name": "sa"}]},
        ["subjects[0].namespace: Required value"],
    ),
    # events.k8s.io Event: ValidateEventCreate (legacy rules, then the strict v1 ones); internal field paths
    ("Event", "valid", {}, []),
    (
        "Event",
        "eventTime-required-legacy-part-lenient",
        {"eventTime": DELETE, "reportingController": DELETE, "action": DELETE},
        ["eventTime: Required value"],
    ),
    (
        "Event",
        "no-eventTime-namespace-must-match",
        {"eventTime": DELETE, "metadata.namespace": "ns", "regarding.namespace": "other"},
        [
            'involvedObject.namespace: Invalid value: "other": does not match event.namespace',
            "eventTime: Required value",
        ],
    ),
    (
        "Event",
        "cluster-scoped-regarding-needs-default-or-kube-system",
        {"metadata.namespace": "ns", "regarding.namespace": DELETE},
        ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
    ),
    (
        "Event",
        "cluster-scoped-regarding-in-kube-system",
        {"metadata.namespace": "kube-system", "regarding.namespace": DELETE},
        [],
    ),
    (
        "Event",
        "reporting-fields-required",
        {"reportingController": DELETE, "reportingInstance": DELETE, "action": DELETE, "reason": DELETE},
        [
            "reportingController: Required value",
            'reportingController: Invalid value: "": name part must be non-empty',
            f'reportingController: Invalid value: "": {QNAME_MSG}',
            "reportingInstance: Required value",
            "action: Required value",
            "reason: Required value",
        ],
    ),
    (
        "Event",
        "length-limits-print-empty-value",
        {"reportingInstance": "i" * 129, "action": "a" * 129, "reason": "r" * 129, "note": "n" * 1025},
        [
            'reportingInstance: Invalid value: "": can have at most 128 characters',
            'action: Invalid value: "": can have at most 128 characters',
            'reason: Invalid value: "": can have at most 128 characters',
            'message: Invalid value: "": can have at most 1024 characters',
        ],
    ),
    ("Event", "limits-are-bytes", {"reason": "é" * 65}, ['reason: Invalid value: "": can have at most 128 characters']),
    (
        "Event",
        "type-values",
        {"type": "Odd"},
        ['type: Invalid value: "": has invalid value: Odd'],
    ),
    (
        "Event",
        "series-rules",
        {"series": {"count": 1}},
        ['series.count: Invalid value: "": should be at least 2', "series.lastObservedTime: Required value"],
    ),
    ("Event", "series-ok", {"series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}}, []),
    (
        "Event",
        "deprecated-fields-must-be-unset",
        {
            "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2024-01-01T00:00:00Z",
            "deprecatedCount": 3,
            "deprecatedSource": {"component": "kubelet"},
        },
        [
            'firstTimestamp: Invalid value: "": needs to be unset',
            'lastTimestamp: Invalid value: "": needs to be unset',
            'count: Invalid value: "": needs to be unset',
            'source: Invalid value: "": needs to be unset',
        ],
    ),
]


@pytest.mark.parametrize(
    ("kind", "changes", "expected"),
    [pytest.param(k, c, e, id=f"{k}:{i}") for k, i, c, e in CREATE_CASES],
)
def test_create(kind: str, changes: dict[str, Any], expected: list[str]) -> None:
    assert create(kind, changes) == expected


# --- update ------------------------------------------------------------------------------------------------

BAD_EXPR = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-x"]}]}
EVENT_REF = (
    '{"Kind":"Pod","Namespace":"default","Name":"q","UID":"","APIVersion":"v1","ResourceVersion":"","FieldPath":""}'
)
UPDATE_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("Lease", "renew-ok", {"spec.renewTime": "2024-01-01T00:00:10.000000Z", "spec.leaseTransitions": 1}, {}, []),
    (
        "Lease",
        "create-rules-apply",
        {"spec.leaseDurationSeconds": -1},
        {},
        ["spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0"],
    ),
    ("PriorityClass", "description-mutable", {"description": "new"}, {}, []),
    ("PriorityClass", "value-immutable", {"value": 7}, {}, ["value: Forbidden: may not be changed in an update."]),
    (
        "PriorityClass",
        "preemptionPolicy-immutable",
        {"preemptionPolicy": "Never"},
        {},
        ['preemptionPolicy: Invalid value: "Never": field is immutable'],
    ),
    (
        "PriorityClass",
        "preemptionPolicy-unset-is-a-change",
        {"preemptionPolicy": DELETE},
        {},
        ["preemptionPolicy: Invalid value: null: field is immutable"],
    ),
    ("PodDisruptionBudget", "spec-mutable", {"spec.minAvailable": "30%"}, {}, []),
    (
        "PodDisruptionBudget",
        "invalid-selector-expression-value-tolerated-if-stored",
        {"spec.selector": BAD_EXPR},
        {"spec.selector": BAD_EXPR},
        [],
    ),
    (
        "PodDisruptionBudget",
        "matchLabels-stay-strict-even-if-stored",
        {"spec.selector.matchLabels": {"a": "-x"}},
        {"spec.selector.matchLabels": {"a": "-x"}},
        [f'spec.selector.matchLabels: Invalid value: "-x": {LABEL_VALUE_MSG}'],
    ),
    (
        "PodDisruptionBudget",
        "invalid-selector-value-refused-if-new",
        {"spec.selector.matchLabels": {"a": "-x"}},
        {},
        [f'spec.selector.matchLabels: Invalid value: "-x": {LABEL_VALUE_MSG}'],
    ),
    ("StorageClass", "mountOptions-mutable", {"mountOptions": ["ro"], "allowVolumeExpansion": True}, {}, []),
    (
        "StorageClass",
        "frozen-fields",
        {
            "provisioner": "other.io/x",
            "parameters": {"type": "io1"},
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {},
        [
            "parameters: Forbidden: updates to parameters are forbidden.",
            "provisioner: Forbidden: updates to provisioner are forbidden.",
            "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
            'volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable',
        ],
    ),
    (
        "StorageClass",
        "nil-and-empty-parameters-differ-reflect-DeepEqual",
        {"parameters": {}},
        {"parameters": DELETE},
        ["parameters: Forbidden: updates to parameters are forbidden."],
    ),
    (
        "Role",
        "rules-mutable",
        {"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["list"]}]},
        {},
        [],
    ),
    (
        "ClusterRole",
        "invalid-aggregation-value-tolerated-if-stored",
        {"aggregationRule.clusterRoleSelectors": [BAD_EXPR]},
        {"aggregationRule.clusterRoleSelectors": [BAD_EXPR]},
        ["aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector."],
    ),
    (
        "ClusterRole",
        "invalid-aggregation-value-refused-if-new",
        {"aggregationRule.clusterRoleSelectors": [BAD_EXPR]},
        {},
        [
            "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]: Invalid value: "
            f'"-x": {LABEL_VALUE_MSG}',
            "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
        ],
    ),
    ("RoleBinding", "subjects-mutable", {"subjects": []}, {}, []),
    (
        "RoleBinding",
        "cannot-change-roleRef-prints-internal-struct",
        {"roleRef.name": "r2"},
        {},
        [
            'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"r2"}: cannot change '
            "roleRef"
        ],
    ),
    (
        "ClusterRoleBinding",
        "cannot-change-roleRef",
        {"roleRef.name": "admin"},
        {},
        [
            'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"ClusterRole","Name":"admin"}: '
            "cannot change roleRef"
        ],
    ),
    (
        "Event",
        "series-may-be-added",
        {"series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:02.000000Z"}},
        {},
        [],
    ),
    (
        "Event",
        "changed-series-validated",
        {"series": {"count": 1, "lastObservedTime": "2024-01-01T00:00:02.000000Z"}},
        {},
        ['series.count: Invalid value: "": should be at least 2'],
    ),
    (
        "Event",
        "unchanged-bad-series-not-revalidated",
        {"series": {"count": 1, "lastObservedTime": "2024-01-01T00:00:02.000000Z"}},
        {"series": {"count": 1, "lastObservedTime": "2024-01-01T00:00:02.000000Z"}},
        [],
    ),
    (
        "Event",
        "regarding-immutable-as-involvedObject",
        {"regarding.name": "q"},
        {},
        [f"involvedObject: Invalid value: {EVENT_REF}: field is immutable"],
    ),
    ("Event", "note-immutable-as-message", {"note": "x"}, {}, ['message: Invalid value: "x": field is immutable']),
    (
        "Event",
        "reason-checked-twice-as-upstream",
        {"reason": "Other"},
        {},
        ['reason: Invalid value: "Other": field is immutable'] * 2,
    ),
    (
        "Event",
        "eventTime-immutable",
        {"eventTime": "2024-01-01T00:00:05.000000Z"},
        {},
        ['eventTime: Invalid value: "2024-01-01T00:00:05.000000Z": field is immutable'],
    ),
    (
        "Event",
        "eventTime-same-instant-other-offset-ok",
        {"eventTime": "2024-01-01T01:00:00.000001+01:00"},
        {},
        [],
    ),
    (
        "Event",
        "deprecated-and-reporting-immutable",
        {"deprecatedCount": 4, "type": "Warning", "action": "Other", "reportingInstance": "s-2"},
        {},
        [
            "count: Invalid value: 4: field is immutable",
            'type: Invalid value: "Warning": field is immutable',
            'action: Invalid value: "Other": field is immutable',
            'reportingInstance: Invalid value: "s-2": field is immutable',
        ],
    ),
]


@pytest.mark.parametrize(
    ("kind", "changes", "old_changes", "expected"),
    [pytest.param(k, c, o, e, id=f"{k}:{i}") for k, i, c, o, e in UPDATE_CASES],
)
def test_update(kind: str, changes: dict[str, Any], old_changes: dict[str, Any], expected: list[str]) -> None:
    assert update(kind, changes, old_changes) == expected


# --- status ------------------------------------------------------------------------------------------------

CONDITION = PDB["status"]["conditions"][0]
PDB_STATUS_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", {}, []),
    (
        "counts-non-negative",
        {"status.disruptionsAllowed": -1, "status.expectedPods": -2},
        [f"status.disruptionsAllowed: Invalid value: -1: {NEG}", f"status.expectedPods: Invalid value: -2: {NEG}"],
    ),
    (
        "condition-rules",
        {
            "status.conditions": [
                {**CONDITION, "status": "Maybe", "reason": "bad reason"},
                {"type": "-t", "observedGeneration": -1},
            ]
        },
        [
            'status.conditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"',
            f'status.conditions[0].reason: Invalid value: "bad reason": {REASON_MSG}',
            f'status.conditions[1].type: Invalid value: "-t": {QNAME_MSG}',
            'status.conditions[1].status: Unsupported value: "": supported values: "False", "True", "Unknown"',
            "status.conditions[1].observedGeneration: Invalid value: -1: must be greater than or equal to zero",
            "status.conditions[1].lastTransitionTime: Required value: must be set",
            "status.conditions[1].reason: Required value: must be set",
        ],
    ),
    (
        "condition-types-unique",
        {"status.conditions": [CONDITION, CONDITION]},
        ['status.conditions[1].type: Duplicate value: "DisruptionAllowed"'],
    ),
    (
        "condition-reason-and-message-length",
        {"status.conditions": [{**CONDITION, "reason": "R" * 1025, "message": "m" * (32 * 1024 + 1)}]},
        [
            "status.conditions[0].reason: Too long: may not be more than 1024 bytes",
            "status.conditions[0].message: Too long: may not be more than 32768 bytes",
        ],
    ),
]


@pytest.mark.parametrize(("changes", "expected"), [pytest.param(c, e, id=i) for i, c, e in PDB_STATUS_CASES])
def test_pdb_status_update(changes: dict[str, Any], expected: list[str]) -> None:
    validator = cluster.STATUS_UPDATE_VALIDATORS["policy", "PodDisruptionBudget"]
    assert messages(validator(make(PDB, changes), PDB)) == expected


def test_tables() -> None:
    assert set(cluster.CREATE_VALIDATORS) == set(cluster.UPDATE_VALIDATORS) == set(BASES)
    assert set(cluster.STATUS_UPDATE_VALIDATORS) == {("policy", "PodDisruptionBudget")}


# --- robustness --------------------------------------------------------------------------------------------

VOCABULARY = [
    "spec", "status", "metadata", "name", "namespace", "leaseDurationSeconds", "leaseTransitions", "strategy",
    "preferredHolder", "renewTime", "acquireTime", "value", "globalDefault", "preemptionPolicy", "minAvailable",
    "maxUnavailable", "selector", "matchLabels", "matchExpressions", "key", "operator", "values",
    "unhealthyPodEvictionPolicy", "conditions", "type", "reason", "message", "lastTransitionTime",
    "observedGeneration", "provisioner", "parameters", "reclaimPolicy", "volumeBindingMode", "allowedTopologies",
    "matchLabelExpressions", "rules", "verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs",
    "aggregationRule", "clusterRoleSelectors", "roleRef", "apiGroup", "kind", "subjects", "eventTime", "series",
    "count", "lastObservedTime", "regarding", "related", "note", "deprecatedSource", "deprecatedCount",
    "deprecatedFirstTimestamp", "reportingController", "reportingInstance", "action",
]  # fmt: skip


def _get(obj: Any, path: tuple[str | int, ...]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _replace(obj: Any, path: tuple[str | int, ...], value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(obj)
    _get(out, path[:-1])[path[-1]] = value
    return out


def fuzz(base: dict[str, Any], data: st.DataObject) -> Any:
    """``base`` with one value replaced by arbitrary JSON, or arbitrary JSON added under a known member name."""
    paths = list(json_paths(base))
    if data.draw(st.booleans()):
        return _replace(base, data.draw(st.sampled_from(paths)), data.draw(JSON))
    node = data.draw(st.sampled_from([p for p in paths if isinstance(_get(base, p), dict)]))
    return _replace(base, (*node, data.draw(st.sampled_from(VOCABULARY))), data.draw(JSON))


def _targets() -> Iterator[Any]:
    for key, base in BASES.items():
        for table in ("create", "update", "status"):
            if table != "status" or key in cluster.STATUS_UPDATE_VALIDATORS:
                yield pytest.param(table, key, base, id=f"{table}:{key[1]}")


@pytest.mark.parametrize(("table", "key", "base"), list(_targets()))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_no_exception_on_wrong_json_types(
    table: str, key: tuple[str, str], base: dict[str, Any], data: st.DataObject
) -> None:
    new, old = copy.deepcopy(fuzz(base, data)), fuzz(base, data)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return  # the registry always passes objects
    if table == "create":
        errs = cluster.CREATE_VALIDATORS[key](new)
    elif table == "update":
        errs = cluster.UPDATE_VALIDATORS[key](new, old)
    else:
        errs = cluster.STATUS_UPDATE_VALIDATORS[key](new, old)
    for e in errs:
        str(e)
