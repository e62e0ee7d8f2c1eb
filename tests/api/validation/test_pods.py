"""Pod validation against upstream's pkg/apis/core/validation (v1.37): each case names the rule it pins.

Every case asserts the complete list of ``str(error)`` for a pod that is valid except for the one change,
so a rule that stops firing, fires twice or changes its text or path fails the test.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from kubeplane.api.validation.pods import (
    validate_pod,
    validate_pod_spec,
    validate_pod_status_update,
    validate_pod_update,
)

Obj = dict[str, Any]
Mutate = Callable[[Obj], None]

DNS_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
QUANTITY_REGEX = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def container(name: str = "c", **extra: Any) -> Obj:
    """A defaulted container, as the registry hands it to validation."""
    return {
        "name": name,
        "image": "nginx:1.27",
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePolicy": "File",
        "terminationMessagePath": "/dev/termination-log",
        **extra,
    }


def pod(**spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "containers": [container()],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "enableServiceLinks": True,
            **spec,
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def c0(p: Obj) -> Obj:
    first: Obj = p["spec"]["containers"][0]
    return first


def spec_set(**values: Any) -> Mutate:
    return lambda p: p["spec"].update(values)


def both(*mutations: Mutate) -> Mutate:
    def apply(p: Obj) -> None:
        for m in mutations:
            m(p)

    return apply


def c0_set(**values: Any) -> Mutate:
    return lambda p: c0(p).update(values)


def resources(**res: Any) -> Mutate:
    return c0_set(resources=res)


def term(**t: Any) -> Obj:
    return {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone", **t}


def required_affinity(*terms: Obj) -> Mutate:
    selector = {"nodeSelectorTerms": list(terms)}
    return spec_set(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}})


def tsc(**c: Any) -> Obj:
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", **c}


C = "spec.containers[0]"
CREATE_CASES: list[tuple[str, Mutate, list[str]]] = [
    ("valid defaulted pod", lambda p: None, []),
    ("validateContainers: containers required", spec_set(containers=[]), ["spec.containers: Required value"]),
    (
        "validateContainerCommon: name is a DNS-1123 label",
        c0_set(name="Bad_Name"),
        [f'{C}.name: Invalid value: "Bad_Name": {DNS_LABEL}'],
    ),
    ("validateContainerCommon: name required", c0_set(name=""), [f"{C}.name: Required value"]),
    ("validateContainerCommon: image required", c0_set(image=""), [f"{C}.image: Required value"]),
    (
        "validateContainers: names unique among containers",
        spec_set(containers=[container("a"), container("a")]),
        ['spec.containers[1].name: Duplicate value: "a"'],
    ),
    (
        "validateInitContainers: names unique across containers and init containers",
        spec_set(initContainers=[container("c")]),
        ['spec.initContainers[0].name: Duplicate value: "c"'],
    ),
    (
        "validateContainerCommon: terminationMessagePolicy values",
        c0_set(terminationMessagePolicy="Never"),
        [
            f'{C}.terminationMessagePolicy: Unsupported value: "Never": supported values: "File", '
            '"FallbackToLogsOnError"'
        ],
    ),
    (
        "validatePullPolicy: values",
        c0_set(imagePullPolicy="Sometimes"),
        [f'{C}.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'],
    ),
    (
        "validateContainerPorts: containerPort required",
        c0_set(ports=[{"containerPort": 0, "protocol": "TCP"}]),
        [f"{C}.ports[0].containerPort: Required value"],
    ),
    (
        "validateContainerPorts: port ranges and protocol",
        c0_set(ports=[{"containerPort": 70000, "hostPort": 65536, "protocol": "ICMP"}]),
        [
            f"{C}.ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            f"{C}.ports[0].hostPort: Invalid value: 65536: must be between 1 and 65535, inclusive",
            f'{C}.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
        ],
    ),
    (
        "validateContainerPorts: protocol required",
        c0_set(ports=[{"containerPort": 80}]),
        [f"{C}.ports[0].protocol: Required value"],
    ),
    (
        "validateContainerPorts: names are IANA_SVC_NAMEs, unique per container",
        c0_set(
            ports=[
                {"name": "http", "containerPort": 80, "protocol": "TCP"},
                {"name": "http", "containerPort": 81, "protocol": "TCP"},
                {"name": "a--b", "containerPort": 82, "protocol": "TCP"},
            ]
        ),
        [
            f'{C}.ports[1].name: Duplicate value: "http"',
            f'{C}.ports[2].name: Invalid value: "a--b": must not contain consecutive hyphens',
        ],
    ),
    (
        "checkHostPortConflicts: protocol/hostIP/hostPort unique across containers",
        spec_set(
            containers=[
                container("a", ports=[{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}]),
                container("b", ports=[{"containerPort": 81, "hostPort": 8080, "protocol": "TCP"}]),
            ]
        ),
        ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"'],
    ),
    (
        "ValidateEnv: relaxed names (RelaxedEnvironmentVariableValidation GA), name required",
        c0_set(env=[{"name": "A=B", "value": "1"}, {"name": "1DIGIT_OK"}, {"value": "x"}]),
        [
            f'{C}.env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of '
            "printable ASCII characters other than '='",
            f"{C}.env[2].name: Required value",
        ],
    ),
    (
        "validateEnvVarValueFrom: value and valueFrom exclusive",
        c0_set(
            env=[
                {
                    "name": "A",
                    "value": "x",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                }
            ]
        ),
        [f'{C}.env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'],
    ),
    (
        "validateObjectFieldSelector: supported field paths",
        c0_set(env=[{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.bogus"}}}]),
        [
            f'{C}.env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "spec.bogus": supported values: '
            '"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
            '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'
        ],
    ),
    (
        "ValidateEnvFrom: one source required (reported at the list)",
        c0_set(envFrom=[{"prefix": "P_"}]),
        [f'{C}.envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`'],
    ),
    (
        "quantity decoding: unparsable quantities",
        resources(limits={"cpu": "abc"}),
        [f'{C}.resources.limits[cpu]: Invalid value: "abc": {QUANTITY_REGEX}'],
    ),
    (
        "ValidateNonnegativeQuantity",
        resources(requests={"memory": "-1"}),
        [f'{C}.resources.requests[memory]: Invalid value: "-1": must be greater than or equal to 0'],
    ),
    (
        "validateResourceRequirements: requests <= limits (path is requests)",
        resources(requests={"cpu": "2"}, limits={"cpu": "1"}),
        [f'{C}.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'],
    ),
    (
        "validateResourceRequirements: equal quantities in other units are fine",
        resources(requests={"cpu": "1000m", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1024Mi"}),
        [],
    ),
    (
        "ValidateResourceQuantityValue: extended resources are integers",
        resources(requests={"example.com/gpu": "1.5"}, limits={"example.com/gpu": "1.5"}),
        [
            f'{C}.resources.limits[example.com/gpu]: Invalid value: "1500m": must be an integer',
            f'{C}.resources.requests[example.com/gpu]: Invalid value: "1500m": must be an integer',
        ],
    ),
    (
        "validateResourceRequirements: non-overcommitable requests equal limits",
        resources(requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "2"}),
        [f'{C}.resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
    ),
    (
        "validateResourceRequirements: non-overcommitable requests need a limit",
        resources(requests={"example.com/gpu": "1"}),
        [f"{C}.resources.limits: Required value: Limit must be set for non overcommitable resources"],
    ),
    (
        "validateResourceRequirements: hugepages need cpu or memory, whole pages",
        resources(requests={"hugepages-2Mi": "3Mi"}, limits={"hugepages-2Mi": "3Mi"}),
        [
            f'{C}.resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of '
            "hugepages-2Mi",
            f'{C}.resources.requests[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of '
            "hugepages-2Mi",
            f"{C}.resources: Forbidden: HugePages require cpu or memory",
        ],
    ),
    (
        "validateContainerResourceName: bare names must be standard container resources",
        resources(limits={"pods": "1", "foo": "1"}),
        [
            f'{C}.resources.limits[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
            f'{C}.resources.limits[foo]: Invalid value: "foo": must be a standard resource for containers',
            f'{C}.resources.limits[pods]: Invalid value: "pods": must be a standard resource for containers',
        ],
    ),
    (
        "validateRestartPolicy",
        spec_set(restartPolicy="Sometimes"),
        ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
    ),
    (
        "validateDNSPolicy",
        spec_set(dnsPolicy="Cloud"),
        [
            'spec.dnsPolicy: Unsupported value: "Cloud": supported values: "ClusterFirstWithHostNet", '
            '"ClusterFirst", "Default", "None"'
        ],
    ),
    (
        "validatePodDNSConfig: None needs a config",
        spec_set(dnsPolicy="None"),
        ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"],
    ),
    (
        "ValidatePodSpec: terminationGracePeriodSeconds required",
        lambda p: p["spec"].pop("terminationGracePeriodSeconds"),
        ["spec.terminationGracePeriodSeconds: Required value"],
    ),
    (
        "ValidatePodSpec: activeDeadlineSeconds in 1..MaxInt32",
        spec_set(activeDeadlineSeconds=0),
        ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"],
    ),
    (
        "ValidateLabels on nodeSelector (map path)",
        spec_set(nodeSelector={"bad key": "v"}),
        [f'spec.nodeSelector: Invalid value: "bad key": {QUALIFIED_NAME}'],
    ),
    (
        "ValidateNodeSelector: at least one term",
        required_affinity(),
        [
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
            "Required value: must have at least one node selector term"
        ],
    ),
    (
        "ValidateNodeSelectorRequirement: operators and values",
        required_affinity(
            {
                "matchExpressions": [
                    {"key": "a", "operator": "In"},
                    {"key": "b", "operator": "Foo", "values": ["x"]},
                    {"key": "c", "operator": "Gt", "values": ["1", "2"]},
                ],
                "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n"]}],
            }
        ),
        [
            f"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].{rest}"
            for rest in (
                "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                'matchExpressions[1].operator: Invalid value: "Foo": not a valid selector operator',
                "matchExpressions[2].values: Required value: must be specified single value when `operator` is "
                "'Lt' or 'Gt'",
                'matchFields[0].key: Invalid value: "metadata.uid": not a valid field selector key',
            )
        ],
    ),
    (
        "validatePodAffinityTerm: topologyKey required (and a qualified name), weights 1-100",
        spec_set(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [term(topologyKey="")],
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "podAffinityTerm": term()}],
                }
            }
        ),
        [
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
            "Required value: can not be empty",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
            'Invalid value: "": name part must be non-empty',
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
            f'Invalid value: "": {QUALIFIED_NAME}',
            "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
            "Invalid value: 0: must be in the range 1-100",
        ],
    ),
    (
        "ValidateLabelSelector in pod affinity: operator values",
        spec_set(
            affinity={
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        term(labelSelector={"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]})
                    ]
                }
            }
        ),
        [
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
            "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
            "'DoesNotExist'"
        ],
    ),
    (
        "ValidateTolerations (taints.validate_tolerations): empty key needs Exists",
        spec_set(tolerations=[{"operator": "Equal", "value": "x"}]),
        [
            'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
            'which means "match all values and all keys"'
        ],
    ),
    (
        "validateTopologySpreadConstraints: maxSkew, topologyKey, whenUnsatisfiable",
        spec_set(topologySpreadConstraints=[tsc(maxSkew=0, topologyKey="", whenUnsatisfiable="Maybe")]),
        [
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty",
            'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
            '"DoNotSchedule", "ScheduleAnyway"',
        ],
    ),
    (
        "validateMinDomains and ValidateSpreadConstraintNotRepeat",
        spec_set(
            topologySpreadConstraints=[
                tsc(whenUnsatisfiable="ScheduleAnyway", minDomains=0),
                tsc(whenUnsatisfiable="ScheduleAnyway"),
            ]
        ),
        [
            'spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, '
            'ScheduleAnyway}"',
            "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: must be greater than zero",
            "spec.topologySpreadConstraints[0].minDomains: Invalid value: 0: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        ],
    ),
    (
        "validateMatchLabelKeysInTopologySpread: needs a labelSelector, keys not in it",
        spec_set(
            topologySpreadConstraints=[
                tsc(matchLabelKeys=["app"]),
                tsc(topologyKey="host", labelSelector={"matchLabels": {"app": "x"}}, matchLabelKeys=["app"]),
            ]
        ),
        [
            "spec.topologySpreadConstraints[0].matchLabelKeys: Forbidden: must not be specified when labelSelector "
            "is not set",
            'spec.topologySpreadConstraints[1].matchLabelKeys[0]: Invalid value: "app": exists in both '
            "matchLabelKeys and labelSelector",
        ],
    ),
    (
        "validateSchedulingGates: qualified names, unique",
        spec_set(schedulingGates=[{"name": "example.com/gate"}, {"name": "example.com/gate"}]),
        ['spec.schedulingGates[1]: Duplicate value: "example.com/gate"'],
    ),
    (
        "ValidatePodCreate: no nodeName while scheduling gates remain",
        spec_set(nodeName="node-1", schedulingGates=[{"name": "gate"}]),
        ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"],
    ),
    (
        "ValidatePodCreate: ephemeral containers only through the subresource",
        spec_set(ephemeralContainers=[container("debug")]),
        ["spec.ephemeralContainers: Forbidden: cannot be set on create"],
    ),
    (
        "validateContainerOnlyForPod: image without surrounding whitespace",
        c0_set(image=" nginx"),
        [f'{C}.image: Invalid value: " nginx": must not have leading or trailing whitespace'],
    ),
    (
        "ValidateVolumes: names unique, one source each",
        spec_set(
            volumes=[
                {"name": "v", "emptyDir": {}},
                {"name": "v", "emptyDir": {}},
                {"name": "w"},
                {"name": "x", "emptyDir": {}, "secret": {"secretName": "s"}},
            ]
        ),
        [
            'spec.volumes[1].name: Duplicate value: "v"',
            "spec.volumes[2]: Required value: must specify a volume type",
            "spec.volumes[3].secret: Forbidden: may not specify more than 1 volume type",
        ],
    ),
    (
        "ValidateVolumeMounts: mounts name existing volumes, unique paths",
        both(
            spec_set(volumes=[{"name": "data", "emptyDir": {}}]),
            c0_set(volumeMounts=[{"name": "data", "mountPath": "/d"}, {"name": "nope", "mountPath": "/d"}]),
        ),
        [
            f'{C}.volumeMounts[1].name: Not found: "nope"',
            f'{C}.volumeMounts[1].mountPath: Invalid value: "/d": must be unique',
        ],
    ),
    (
        "validatePodHostNetworkDeps: hostPort must match containerPort",
        both(spec_set(hostNetwork=True), c0_set(ports=[{"containerPort": 80, "hostPort": 81, "protocol": "TCP"}])),
        [f"{C}.ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"],
    ),
    (
        "validateInitContainers: restartPolicy only Always; no probes without it",
        spec_set(
            initContainers=[
                container(
                    "i", restartPolicy="Never", livenessProbe={"exec": {"command": ["true"]}, "successThreshold": 1}
                )
            ]
        ),
        [
            'spec.initContainers[0].restartPolicy: Unsupported value: "Never": supported values: "Always"',
            "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without "
            "restartPolicy=Always",
        ],
    ),
    (
        "validateLivenessProbe: successThreshold must be 1; one handler",
        c0_set(livenessProbe={"successThreshold": 2, "periodSeconds": 10}),
        [
            f"{C}.livenessProbe: Required value: must specify a handler type",
            f"{C}.livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ],
    ),
    (
        "validateContainers: restartPolicy forbidden for regular containers",
        c0_set(restartPolicy="Always"),
        [f"{C}.restartPolicy: Forbidden: may not be set for non-init containers"],
    ),
    (
        "validateOverhead: a resource list",
        spec_set(overhead={"cpu": "-100m"}),
        ['spec.overhead.limits[cpu]: Invalid value: "-100m": must be greater than or equal to 0'],
    ),
    (
        "ValidatePodSpec: priorityClassName is a DNS subdomain",
        spec_set(priorityClassName="High_Priority"),
        [
            'spec.priorityClassName: Invalid value: "High_Priority": a lowercase RFC 1123 subdomain must consist of '
            "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_validate_pod_create(mutate: Mutate, expected: list[str]) -> None:
    p = pod()
    mutate(p)
    assert [str(e) for e in validate_pod(p)] == expected


def updated(mutate: Mutate, base: Obj | None = None) -> tuple[Obj, Obj]:
    old = base if base is not None else pod()
    new = copy.deepcopy(old)
    mutate(new)
    return new, old


TOL = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}
GATED = pod(schedulingGates=[{"name": "a"}, {"name": "b"}], nodeSelector={"zone": "a"})
UPDATE_CASES: list[tuple[str, tuple[Obj, Obj], list[str]]] = [
    ("no change", updated(lambda p: None), []),
    ("containers[*].image may change", updated(c0_set(image="nginx:1.28")), []),
    (
        "semantic equality: 1 == 1000m",
        updated(resources(limits={"cpu": "1000m"}), pod(containers=[container(resources={"limits": {"cpu": "1"}})])),
        [],
    ),
    (
        "ValidateContainerUpdates: no added or removed containers",
        updated(spec_set(containers=[container("a"), container("b")])),
        ["spec.containers: Forbidden: pod updates may not add or remove containers"],
    ),
    (
        "activeDeadlineSeconds may only decrease",
        updated(spec_set(activeDeadlineSeconds=20), pod(activeDeadlineSeconds=10)),
        ["spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"],
    ),
    (
        "activeDeadlineSeconds may be lowered",
        updated(spec_set(activeDeadlineSeconds=5), pod(activeDeadlineSeconds=10)),
        [],
    ),
    (
        "activeDeadlineSeconds may not be removed",
        updated(lambda p: p["spec"].pop("activeDeadlineSeconds"), pod(activeDeadlineSeconds=10)),
        ["spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"],
    ),
    (
        "tolerations may be added",
        updated(spec_set(tolerations=[TOL, {"operator": "Exists"}]), pod(tolerations=[TOL])),
        [],
    ),
    (
        "validateOnlyAddedTolerations: tolerationSeconds may change",
        updated(spec_set(tolerations=[{**TOL, "tolerationSeconds": 5}]), pod(tolerations=[TOL])),
        [],
    ),
    (
        "validateOnlyAddedTolerations: existing tolerations are kept",
        updated(spec_set(tolerations=[{**TOL, "key": "other"}]), pod(tolerations=[TOL])),
        ["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
    ),
    ("schedulingGates may be removed", updated(spec_set(schedulingGates=[{"name": "b"}]), GATED), []),
    (
        "validateOnlyDeletedSchedulingGates",
        updated(spec_set(schedulingGates=[{"name": "a"}, {"name": "c"}]), GATED),
        ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'c'"],
    ),
    (
        "gated pods: nodeSelector additions allowed",
        updated(spec_set(nodeSelector={"zone": "a", "disk": "ssd"}), GATED),
        [],
    ),
    (
        "gated pods: validateNodeSelectorMutation",
        updated(spec_set(nodeSelector={"zone": "b"}), GATED),
        [
            'spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are allowed '
            "(no mutations or deletions)"
        ],
    ),
    (
        "terminationGracePeriodSeconds may go from negative to 1",
        updated(spec_set(terminationGracePeriodSeconds=1), pod(terminationGracePeriodSeconds=-1)),
        [],
    ),
    (
        "everything else is immutable (kubeplane's diff after upstream's message)",
        updated(spec_set(hostname="web", terminationGracePeriodSeconds=10)),
        [f'spec: Forbidden: {UPDATABLE}\nspec.hostname: null -> "web"\nspec.terminationGracePeriodSeconds: 30 -> 10'],
    ),
    (
        "update also runs the create rules on the new pod",
        updated(c0_set(image="")),
        [f"{C}.image: Required value"],
    ),
]


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_validate_pod_update(objs: tuple[Obj, Obj], expected: list[str]) -> None:
    assert [str(e) for e in validate_pod_update(*objs)] == expected


def with_status(**status: Any) -> Mutate:
    return lambda p: p["status"].update(status)


TERMINATED = {"name": "c", "state": {"terminated": {"exitCode": 0}}}
RUNNING = {"name": "c", "state": {"running": {}}}
STATUS_CASES: list[tuple[str, tuple[Obj, Obj], list[str]]] = [
    ("conditions of system types", updated(with_status(conditions=[{"type": "Ready", "status": "True"}])), []),
    (
        "validatePodConditions: custom types are qualified names (upstream's metadata path)",
        updated(with_status(conditions=[{"type": "bad type", "status": "True"}])),
        [f'metadata.conditions[0].Type: Invalid value: "bad type": {QUALIFIED_NAME}'],
    ),
    (
        "ValidatePodStatusUpdate: nodeName is not changed by status",
        updated(spec_set(nodeName="node-2")),
        ["status.nodeName: Forbidden: may not be changed directly"],
    ),
    (
        "ValidatePodStatusUpdate: qosClass is immutable",
        updated(with_status(qosClass="Guaranteed")),
        ['status.qosClass: Invalid value: "Guaranteed": field is immutable'],
    ),
    (
        "ValidateContainerStateTransition: Never-restart pods stay terminated",
        updated(
            with_status(containerStatuses=[RUNNING]),
            pod(restartPolicy="Never") | {"status": {"qosClass": "BestEffort", "containerStatuses": [TERMINATED]}},
        ),
        ["status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state"],
    ),
    (
        "validatePodIPs: one per family, no duplicates",
        updated(with_status(podIPs=[{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}])),
        [
            'status.podIPs: Invalid value: [{"ip":"10.0.0.1"},{"ip":"10.0.0.1"}]: may specify no more than one IP '
            "for each IP family",
            'status.podIPs[1]: Duplicate value: {"ip":"10.0.0.1"}',
        ],
    ),
    ("validatePodIPs: dual stack", updated(with_status(podIPs=[{"ip": "10.0.0.1"}, {"ip": "fd00::1"}])), []),
    (
        "validateHostIPs: hostIPs[0] is hostIP",
        updated(with_status(hostIP="10.0.0.2", hostIPs=[{"ip": "10.0.0.3"}])),
        ['status.hostIPs[0].ip: Invalid value: "10.0.0.3": must be equal to `hostIP`'],
    ),
]


@pytest.mark.parametrize(("objs", "expected"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_validate_pod_status_update(objs: tuple[Obj, Obj], expected: list[str]) -> None:
    assert [str(e) for e in validate_pod_status_update(*objs)] == expected


@pytest.mark.parametrize(
    ("spec_patch", "expected"),
    [
        ({"containers": "nginx"}, ['spec.containers: Invalid value: "string": must be of type array']),
        (
            {
                "containers": [
                    {"name": 7, "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}
                ]
            },
            [f'{C}.name: Invalid value: "integer": must be of type string'],
        ),
        (
            {"terminationGracePeriodSeconds": "30"},
            ['spec.terminationGracePeriodSeconds: Invalid value: "string": must be of type integer'],
        ),
        (
            {"tolerations": [{"key": 1, "operator": "Exists"}]},
            ['spec.tolerations[0].key: Invalid value: "integer": must be of type string'],
        ),
    ],
    ids=["list as string", "name as integer", "int as string", "toleration key as integer"],
)
def test_wrong_types_are_one_field_error(spec_patch: Obj, expected: list[str]) -> None:
    """A wrong JSON type is one TypeInvalid error; the Required its absence would cause is suppressed."""
    assert [str(e) for e in validate_pod(pod(**spec_patch))] == expected


def test_validate_pod_spec_for_templates() -> None:
    """The embedded-spec entry point other kinds' validators call: paths rooted at the given path; a template
    may leave a host-network hostPort at 0 (upstream's ResourceIsPod=false)."""
    from kubeplane.api.validation.field import new_path

    spec = pod(hostNetwork=True, containers=[container(ports=[{"containerPort": 80, "protocol": "TCP"}])])["spec"]
    at = new_path("spec", "template", "spec")
    assert validate_pod_spec(spec, at) == []
    assert [str(e) for e in validate_pod_spec(spec, at, resource_is_pod=True)] == [
        "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: 0: must match `containerPort` when "
        "`hostNetwork` is true"
    ]
    assert [str(e) for e in validate_pod_spec({**spec, "containers": []}, at)] == [
        "spec.template.spec.containers: Required value"
    ]
    assert [str(e) for e in validate_pod_spec("nope", at)] == [
        'spec.template.spec: Invalid value: "string": must be of type object'
    ]
