"""Core/v1 kind validation against upstream's pkg/apis/core/validation (v1.37), and the registry tables.

Table cases assert the complete list of ``str(error)`` for an object valid but for one change. The
robustness tests put wrong JSON types at every position of every fixture (and hypothesis puts arbitrary JSON
at random positions) and require every registered validator to answer with field errors, never an exception.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.api.validation.core import CREATE_VALIDATORS, STATUS_UPDATE_VALIDATORS, UPDATE_VALIDATORS

Obj = dict[str, Any]
Mutate = Callable[[Obj], None]

QUALIFIED_NAME = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def container(name: str = "c") -> Obj:
    """A defaulted container (the same shape as test_pods' fixture; the test dirs are not packages)."""
    return {"name": name, "image": "nginx", "imagePullPolicy": "IfNotPresent", "terminationMessagePolicy": "File"}


def pod(**spec: Any) -> Obj:
    base = {"containers": [container()], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
    return {"kind": "Pod", "spec": {**base, "terminationGracePeriodSeconds": 30, **spec}, "status": {}}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def node(**spec: Any) -> Obj:
    return {
        "kind": "Node",
        "metadata": {"name": "n1"},
        "spec": {"podCIDR": "10.0.1.0/24", "podCIDRs": ["10.0.1.0/24"], "providerID": "kind://n1", **spec},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
        },
    }


def service(**spec: Any) -> Obj:
    return {
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "internalTrafficPolicy": "Cluster",
            **spec,
        },
        "status": {"loadBalancer": {}},
    }


def pv(**spec: Any) -> Obj:
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": "/data", "type": ""},
            "volumeMode": "Filesystem",
            **spec,
        },
    }


def pvc(**spec: Any) -> Obj:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
            **spec,
        },
        "status": {"phase": "Pending"},
    }


def rc(**spec: Any) -> Obj:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": copy.deepcopy(pod()["spec"])}
    return {
        "kind": "ReplicationController",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 2, "selector": {"app": "web"}, "template": template, **spec},
        "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2},
    }


def event(**fields: Any) -> Obj:
    return {
        "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
        "reason": "Scheduled",
        "message": "ok",
        "type": "Normal",
        **fields,
    }


FIXTURES: dict[str, Obj] = {
    "Pod": pod(
        initContainers=[container("init")],
        volumes=[{"name": "v", "emptyDir": {"sizeLimit": "1Gi"}}],
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"a": "b"}},
                                                       "topologyKey": "z"}}
                ]
            },
        },
        topologySpreadConstraints=[
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "minDomains": 2,
             "labelSelector": {"matchLabels": {"a": "b"}}, "matchLabelKeys": ["rev"]}
        ],
        schedulingGates=[{"name": "gate"}],
        dnsConfig={"nameservers": ["1.1.1.1"], "searches": ["svc.cluster.local"], "options": [{"name": "ndots"}]},
    ) | {"status": {"qosClass": "Burstable", "podIPs": [{"ip": "10.0.0.5"}], "conditions": [{"type": "Ready"}]}},
    "Node": node(taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    "Namespace": {"kind": "Namespace", "metadata": {"name": "ns"}, "spec": {"finalizers": ["kubernetes"]},
                  "status": {"phase": "Active"}},
    "Service": service(),
    "ConfigMap": {"kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a.txt": "x"},
                  "binaryData": {"b.bin": b64("y")}},
    "Secret": {"kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque", "data": {"k": b64("v")},
               "stringData": {"s": "v"}},
    "ServiceAccount": {"kind": "ServiceAccount", "metadata": {"name": "sa"}, "secrets": [{"name": "s"}]},
    "Event": event(),
    "PersistentVolume": pv(),
    "PersistentVolumeClaim": pvc(selector={"matchLabels": {"a": "b"}}),
    "ReplicationController": rc(),
}  # fmt: skip


def test_every_kind_has_create_and_update_validators() -> None:
    """The registry looks validators up by (group, kind); core kinds use group ""."""
    kinds = {kind for group, kind in CREATE_VALIDATORS if group == ""}
    assert kinds == set(FIXTURES)
    assert set(UPDATE_VALIDATORS) == set(CREATE_VALIDATORS)
    assert set(STATUS_UPDATE_VALIDATORS) <= set(CREATE_VALIDATORS)


@pytest.mark.parametrize("kind", sorted(FIXTURES))
def test_fixtures_are_valid(kind: str) -> None:
    obj = FIXTURES[kind]
    assert CREATE_VALIDATORS["", kind](obj) == []
    assert UPDATE_VALIDATORS["", kind](obj, copy.deepcopy(obj)) == []
    if ("", kind) in STATUS_UPDATE_VALIDATORS:
        assert STATUS_UPDATE_VALIDATORS["", kind](obj, copy.deepcopy(obj)) == []


def changed(base: Obj, mutate: Mutate) -> Obj:
    new = copy.deepcopy(base)
    mutate(new)
    return new


def spec_set(**values: Any) -> Mutate:
    return lambda o: o["spec"].update(values)


def top_set(**values: Any) -> Mutate:
    return lambda o: o.update(values)


SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

CREATE_CASES: list[tuple[str, str, Obj, list[str]]] = [
    # Node
    (
        "validateNodeTaints: effect and uniqueness (upstream reports at metadata.taints)",
        "Node",
        node(taints=[{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}, {"key": "x"}]),
        [
            'metadata.taints[1]: Duplicate value: {"key":"k","effect":"NoSchedule"}: taints must be unique by key '
            "and effect pair",
            "metadata.taints[2].effect: Required value",
        ],
    ),
    (
        "ValidateNodeResources: quantities non-negative (paths are status.capacity.<name>)",
        "Node",
        changed(node(), lambda n: n["status"]["capacity"].update(cpu="-1", pods="1.5")),
        [
            'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0',
            'status.capacity.pods: Invalid value: "1500m": must be an integer',
        ],
    ),
    (
        "quantity decoding in node capacity",
        "Node",
        changed(node(), lambda n: n["status"]["allocatable"].update(memory="lots")),
        [
            'status.allocatable[memory]: Invalid value: "lots": quantities must match the regular expression '
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        ],
    ),
    (
        "ValidateNode: podCIDRs valid, one per family",
        "Node",
        node(podCIDRs=["10.0.1.0/24", "10.0.2.0/24", "nope"]),
        [
            'spec.podCIDRs[2]: Invalid value: "nope": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)',
            'spec.podCIDRs: Invalid value: ["10.0.1.0/24","10.0.2.0/24","nope"]: may specify no more than one CIDR '
            "for each IP family",
        ],
    ),
    ("ValidateNode: dual-stack podCIDRs", "Node", node(podCIDRs=["10.0.1.0/24", "fd00:1::/64"]), []),
    # Namespace
    (
        "ValidateNamespace: finalizers qualified, unprefixed only 'kubernetes' (path without index)",
        "Namespace",
        {"kind": "Namespace", "spec": {"finalizers": ["kubernetes", "foo", "example.com/x"]}},
        ['spec.finalizers: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified'],
    ),
    # Service
    ("ValidateService: ports required for ClusterIP", "Service", service(ports=[]), ["spec.ports: Required value"]),
    (
        "ValidateService: headless services need no ports",
        "Service",
        service(ports=[], clusterIP="None", clusterIPs=["None"]),
        [],
    ),
    (
        "validateServicePort: names required when several, port range, protocol, targetPort",
        "Service",
        service(
            ports=[
                {"name": "a", "protocol": "TCP", "port": 0, "targetPort": "http-alt"},
                {"protocol": "ICMP", "port": 81, "targetPort": "Not_A_Name"},
            ]
        ),
        [
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[1].name: Required value",
            'spec.ports[1].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"',
            'spec.ports[1].targetPort: Invalid value: "Not_A_Name": must contain only alpha-numeric characters '
            "(a-z, 0-9), and hyphens (-)",
        ],
    ),
    (
        "ValidateService: duplicate (protocol, port)",
        "Service",
        service(
            ports=[
                {"name": "a", "protocol": "TCP", "port": 80, "targetPort": 80},
                {"name": "b", "protocol": "TCP", "port": 80, "targetPort": 81},
            ]
        ),
        ['spec.ports[1]: Duplicate value: {"protocol":"TCP","port":80}'],
    ),
    (
        "ValidateService: type values",
        "Service",
        service(type="Internal"),
        [
            'spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"'
        ],
    ),
    (
        "ValidateService: nodePort not with ClusterIP; selector labels",
        "Service",
        service(ports=[{"protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30080}], selector={"app": "a b"}),
        [
            'spec.selector: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric '
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
            "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        ],
    ),
    (
        "ValidateServiceClusterIPsRelatedFields: clusterIPs[0] matches clusterIP",
        "Service",
        service(clusterIPs=["10.96.0.11"]),
        ['spec.clusterIPs: Invalid value: ["10.96.0.11"]: first value must match `clusterIP`'],
    ),
    (
        "ValidateService: LoadBalancer needs allocateLoadBalancerNodePorts (upstream's root path) and ETP",
        "Service",
        service(type="LoadBalancer", ports=[{"protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30080}]),
        ["allocateLoadBalancerNodePorts: Required value", "spec.externalTrafficPolicy: Required value"],
    ),
    (
        "validateServiceExternalTrafficPolicy: only for externally accessible services",
        "Service",
        service(externalTrafficPolicy="Local"),
        ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services'],
    ),
    (
        "ValidateService: ExternalName needs a DNS name and no cluster IPs",
        "Service",
        service(type="ExternalName", externalName="", ports=[]),
        [
            "spec.clusterIPs: Forbidden: may not be set for ExternalName services",
            "spec.ipFamilies: Forbidden: may not be set for ExternalName services",
            "spec.ipFamilyPolicy: Forbidden: may not be set for ExternalName services",
            "spec.externalName: Required value",
        ],
    ),
    (
        "ValidateNonSpecialIP for externalIPs",
        "Service",
        service(externalIPs=["127.0.0.1"], externalTrafficPolicy="Cluster"),
        ['spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)'],
    ),
    (
        "validateClientIPAffinityConfig",
        "Service",
        service(sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}}),
        [
            "spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less "
            "than 86400"
        ],
    ),
    # ConfigMap
    (
        "ValidateConfigMap: keys are config keys, not in both maps",
        "ConfigMap",
        {"kind": "ConfigMap", "data": {"bad/key": "x", "dup": "1"}, "binaryData": {"dup": b64("2")}},
        [
            'data[bad/key]: Invalid value: "bad/key": a valid config key must consist of alphanumeric characters, '
            "'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
            "'[-._a-zA-Z0-9]+')",
            'data[dup]: Invalid value: "dup": duplicate of key present in binaryData',
        ],
    ),
    (
        "ValidateConfigMap: at most 1 MiB in all (error at the object, path [])",
        "ConfigMap",
        {"kind": "ConfigMap", "data": {"a": "x" * (1024 * 1024), "b": "y"}},
        ["[]: Too long: may not be more than 1048576 bytes"],
    ),
    # Secret
    (
        "ValidateSecret: 1 MiB of decoded data",
        "Secret",
        {"kind": "Secret", "type": "Opaque", "data": {"a": b64("x" * (1024 * 1024 + 1))}},
        ["data: Too long: may not be more than 1048576 bytes"],
    ),
    (
        "ValidateSecret: keys (stringData merged into data)",
        "Secret",
        {"kind": "Secret", "type": "Opaque", "stringData": {"..": "x"}},
        ["data[..]: Invalid value: \"..\": must not be '..'"],
    ),
    (
        "ValidateSecret: tls needs tls.crt and tls.key",
        "Secret",
        {"kind": "Secret", "type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
        ["data[tls.key]: Required value"],
    ),
    (
        "ValidateSecret: service-account-token needs the account annotation",
        "Secret",
        {"kind": "Secret", "type": "kubernetes.io/service-account-token", "metadata": {"annotations": {}}},
        ["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
    ),
    # Event
    ("legacyValidateEvent: an old-style event", "Event", event(), []),
    (
        "legacyValidateEvent: a complete new-style event (v1 JSON names the controller reportingComponent)",
        "Event",
        event(
            eventTime="2026-01-01T00:00:00.000000Z",
            reportingComponent="example.com/ctrl",
            reportingInstance="i-1",
            action="Act",
        ),
        [],
    ),
    (
        "legacyValidateEvent: involvedObject namespace matches",
        "Event",
        event(involvedObject={"kind": "Pod", "namespace": "other", "name": "x"}),
        ['involvedObject.namespace: Invalid value: "other": does not match event.namespace'],
    ),
    (
        "legacyValidateEvent: new-style events name controller (reportingComponent in v1), instance, action",
        "Event",
        event(eventTime="2026-01-01T00:00:00.000000Z", reason="x" * 129),
        [
            "reportingComponent: Required value",
            'reportingComponent: Invalid value: "": name part must be non-empty',
            f'reportingComponent: Invalid value: "": {QUALIFIED_NAME}',
            "reportingInstance: Required value",
            "action: Required value",
            'reason: Invalid value: "": can have at most 128 characters',
        ],
    ),
    # PersistentVolume
    (
        "ValidatePersistentVolumeSpec: accessModes and capacity required",
        "PersistentVolume",
        pv(accessModes=[], capacity={}),
        [
            "spec.accessModes: Required value",
            "spec.capacity: Required value",
            'spec.capacity: Unsupported value: {}: supported values: "storage"',
        ],
    ),
    (
        "ValidatePersistentVolumeSpec: modes supported, ReadWriteOncePod alone, storage positive",
        "PersistentVolume",
        pv(accessModes=["ReadWriteOncePod", "ReadWriteMany", "WriteOnly"], capacity={"storage": "0"}),
        [
            'spec.accessModes: Unsupported value: "WriteOnly": supported values: "ReadOnlyMany", "ReadWriteMany", '
            '"ReadWriteOnce", "ReadWriteOncePod"',
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
        ],
    ),
    (
        "ValidatePersistentVolumeSpec: exactly one volume source",
        "PersistentVolume",
        changed(pv(nfs={"server": "s", "path": "/"}), lambda v: None),
        ["spec.nfs: Forbidden: may not specify more than 1 volume type"],
    ),
    (
        "ValidatePersistentVolumeSpec: a source is required; local needs node affinity",
        "PersistentVolume",
        changed(pv(), lambda v: v["spec"].pop("hostPath")),
        ["spec: Required value: must specify a volume type"],
    ),
    (
        "ValidatePersistentVolumeSpec: local volumes need node affinity",
        "PersistentVolume",
        changed(pv(local={"path": "/mnt"}), lambda v: v["spec"].pop("hostPath")),
        ["spec.nodeAffinity: Required value: Local volume requires node affinity"],
    ),
    # PersistentVolumeClaim
    (
        "ValidatePersistentVolumeClaimSpec: accessModes and storage request required",
        "PersistentVolumeClaim",
        pvc(accessModes=[], resources={}),
        [
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
        ],
    ),
    (
        "ValidatePersistentVolumeClaimSpec: storage positive, selector valid",
        "PersistentVolumeClaim",
        pvc(resources={"requests": {"storage": "0"}}, selector={"matchExpressions": [{"key": "a", "operator": "In"}]}),
        [
            "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
            "'NotIn'",
            'spec.resources[storage]: Invalid value: "0": must be greater than zero',
        ],
    ),
    # ReplicationController
    (
        "ValidatePodTemplateSpecForRC: selector matches template labels",
        "ReplicationController",
        rc(selector={"app": "other"}),
        ['spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`'],
    ),
    (
        "ValidateReplicationControllerSpec: selector required, replicas non-negative",
        "ReplicationController",
        rc(selector={}, replicas=-1),
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0", "spec.selector: Required value"],
    ),
    (
        "ValidatePodTemplateSpecForRC: restartPolicy Always, no activeDeadlineSeconds; the pod spec is validated",
        "ReplicationController",
        changed(
            rc(),
            lambda r: r["spec"]["template"]["spec"].update(
                restartPolicy="Never", activeDeadlineSeconds=5, containers=[]
            ),
        ),
        [
            "spec.template.spec.containers: Required value",
            'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is "
            "not Supported",
        ],
    ),
]


@pytest.mark.parametrize(("kind", "obj", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_create(kind: str, obj: Obj, expected: list[str]) -> None:
    assert [str(e) for e in CREATE_VALIDATORS["", kind](obj)] == expected


def svc_lb(**spec: Any) -> Obj:
    return service(
        type="LoadBalancer",
        allocateLoadBalancerNodePorts=True,
        externalTrafficPolicy="Cluster",
        ports=[{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 80, "nodePort": 30080}],
        **spec,
    )


BOUND = pvc(volumeName="pv1") | {"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
UPDATE_CASES: list[tuple[str, str, Obj, Obj, list[str]]] = [
    ("Node: podCIDR set from empty", "Node", node(), node(podCIDR="", podCIDRs=[]), []),
    (
        "ValidateNodeUpdate: podCIDRs immutable once set",
        "Node",
        node(podCIDR="10.0.9.0/24", podCIDRs=["10.0.9.0/24"]),
        node(),
        ['spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'],
    ),
    (
        "ValidateNodeUpdate: providerID immutable once set",
        "Node",
        node(providerID="kind://n2"),
        node(),
        ['spec.providerID: Forbidden: node updates may not change providerID except from "" to valid'],
    ),
    (
        "ValidateServiceUpdate: clusterIP may not change",
        "Service",
        service(clusterIP="10.96.0.11", clusterIPs=["10.96.0.11"]),
        service(),
        ['spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set'],
    ),
    (
        "ValidateServiceUpdate: loadBalancerClass may not change",
        "Service",
        svc_lb(loadBalancerClass="example.com/b"),
        svc_lb(loadBalancerClass="example.com/a"),
        ['spec.loadBalancerClass: Invalid value: "example.com/b": may not change once set'],
    ),
    (
        "ValidateConfigMapUpdate: immutable data",
        "ConfigMap",
        {"kind": "ConfigMap", "immutable": True, "data": {"a": "2"}},
        {"kind": "ConfigMap", "immutable": True, "data": {"a": "1"}},
        ["data: Forbidden: field is immutable when `immutable` is set"],
    ),
    (
        "ValidateSecretUpdate: type immutable",
        "Secret",
        {"kind": "Secret", "type": "example.com/other"},
        {"kind": "Secret", "type": "Opaque"},
        ['type: Invalid value: "example.com/other": field is immutable'],
    ),
    (
        "PVC: a bound claim may grow",
        "PersistentVolumeClaim",
        changed(BOUND, lambda c: c["spec"]["resources"].update(requests={"storage": "2Gi"})),
        BOUND,
        [],
    ),
    (
        "ValidatePersistentVolumeClaimUpdate: spec immutable but for requests of bound claims",
        "PersistentVolumeClaim",
        pvc(resources={"requests": {"storage": "2Gi"}}),
        pvc(),
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and "
            'volumeAttributesClassName for bound claims\nspec.resources.requests.storage: "1Gi" -> "2Gi"'
        ],
    ),
    (
        "ValidatePersistentVolumeClaimUpdate: not below status.capacity",
        "PersistentVolumeClaim",
        changed(BOUND, lambda c: c["spec"]["resources"].update(requests={"storage": "512Mi"})),
        BOUND,
        ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"],
    ),
    (
        "RecoverVolumeExpansionFailure: a failed expansion may be lowered while above status.capacity",
        "PersistentVolumeClaim",
        changed(BOUND, lambda c: c["spec"]["resources"].update(requests={"storage": "2Gi"})),
        changed(BOUND, lambda c: c["spec"]["resources"].update(requests={"storage": "4Gi"})),
        [],
    ),
    ("PVC: volumeName may be set once", "PersistentVolumeClaim", pvc(volumeName="pv1"), pvc(), []),
    (
        "ValidatePersistentVolumeUpdate: the volume source is immutable",
        "PersistentVolume",
        pv(hostPath={"path": "/other", "type": ""}),
        pv(),
        [
            "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"
            'spec.hostPath.path: "/data" -> "/other"'
        ],
    ),
    ("PV: capacity may change", "PersistentVolume", pv(capacity={"storage": "20Gi"}), pv(), []),
]


@pytest.mark.parametrize(
    ("kind", "new", "old", "expected"), [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES]
)
def test_update(kind: str, new: Obj, old: Obj, expected: list[str]) -> None:
    assert [str(e) for e in UPDATE_VALIDATORS["", kind](new, old)] == expected


STATUS_CASES: list[tuple[str, str, Obj, list[str]]] = [
    (
        "ValidateNodeUpdate: addresses unique",
        "Node",
        changed(node(), lambda n: n["status"]["addresses"].append({"type": "Hostname", "address": "n1"})),
        ['status.addresses[2]: Duplicate value: {"type":"Hostname","address":"n1"}'],
    ),
    (
        "ValidateNamespaceStatusUpdate: Active without deletionTimestamp (upstream's status.Phase)",
        "Namespace",
        {"kind": "Namespace", "status": {"phase": "Terminating"}},
        ["status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"],
    ),
    (
        "ValidateLoadBalancerStatus: ingress only for LoadBalancer",
        "Service",
        service() | {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}},
        ["status.loadBalancer.ingress: Forbidden: may only be used when `spec.type` is 'LoadBalancer'"],
    ),
    (
        "ValidateLoadBalancerStatus: ipMode with ip; hostnames are names",
        "Service",
        svc_lb()
        | {"status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "1.2.3.4", "ipMode": "VIP"}]}}},
        [
            "status.loadBalancer.ingress[0].ipMode: Required value: must be specified when `ip` is set",
            "status.loadBalancer.ingress[1].ipMode: Forbidden: may not be specified when `ip` is not set",
            'status.loadBalancer.ingress[1].hostname: Invalid value: "1.2.3.4": must be a DNS name, not an IP address',
        ],
    ),
    (
        "ValidateReplicationControllerStatus: counts consistent",
        "ReplicationController",
        rc() | {"status": {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3}},
        [
            "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
            "status.availableReplicas: Invalid value: 3: cannot be greater than status.replicas",
            "status.availableReplicas: Invalid value: 3: cannot be greater than readyReplicas",
        ],
    ),
    (
        "ValidatePersistentVolumeClaimStatusUpdate: accessModes (upstream's Spec path)",
        "PersistentVolumeClaim",
        pvc(accessModes=[]),
        ["Spec.accessModes: Required value"],
    ),
]


@pytest.mark.parametrize(("kind", "new", "expected"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_status_update(kind: str, new: Obj, expected: list[str]) -> None:
    assert [str(e) for e in STATUS_UPDATE_VALIDATORS["", kind](new, FIXTURES[kind])] == expected


# --- robustness: wrong types anywhere never raise -----------------------------------------------------------

WRONG: list[Any] = [None, "x", -7, 2.5, True, [], {}, ["x", 1], {"k": [None]}]


def positions(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position in a JSON value: dict keys and list indexes, depth first."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k)
            yield from positions(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield (*path, i)
            yield from positions(v, (*path, i))


def replaced(obj: Obj, path: tuple[Any, ...], value: Any) -> Obj:
    new = copy.deepcopy(obj)
    target: Any = new
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return new


def run_all(kind: str, obj: Any, other: Any) -> None:
    """Every validator of ``kind`` on ``obj`` (as new and as old); each must return a list of errors."""
    results = [CREATE_VALIDATORS["", kind](obj), UPDATE_VALIDATORS["", kind](obj, other)]
    results.append(UPDATE_VALIDATORS["", kind](other, obj))
    if ("", kind) in STATUS_UPDATE_VALIDATORS:
        results.append(STATUS_UPDATE_VALIDATORS["", kind](obj, other))
        results.append(STATUS_UPDATE_VALIDATORS["", kind](other, obj))
    for errs in results:
        assert isinstance(errs, list)
        for e in errs:
            str(e)  # rendering must not raise either


@pytest.mark.parametrize("kind", sorted(FIXTURES))
def test_wrong_type_at_every_position_never_raises(kind: str) -> None:
    base = FIXTURES[kind]
    run_all(kind, "not an object", base)
    run_all(kind, {}, base)
    for path in positions(base):
        for value in WRONG:
            run_all(kind, replaced(base, path, value), base)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(sorted(FIXTURES)))
def test_arbitrary_json_at_random_positions_never_raises(data: st.DataObject, kind: str) -> None:
    base = FIXTURES[kind]
    obj = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = list(positions(obj))
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        obj = replaced(obj, path, data.draw(json_values))
    run_all(kind, obj, base)
