"""Pins API-server defaulting: upstream's SetDefaults_* of core/v1, apps/v1, scheduling/v1, storage/v1, rbac/v1.

Each case id names the upstream function and behaviour (``pkg/apis/<group>/v1/defaults.go`` and the generated
``zz_generated.defaults.go`` that strings them together). Every input of every table is also run through the
idempotence test, and a property test throws random pods at the defaulter.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.defaults import DEFAULTERS, apply_defaults, defaulter_for
from kubeplane.api.defaults_workloads import default_image_pull_policy, image_tag, round_up_resource_list

Obj = dict[str, Any]

POD_SPEC_DEFAULTS: Obj = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "securityContext": {},
    "terminationGracePeriodSeconds": 30,
    "schedulerName": "default-scheduler",
}
CONTAINER_DEFAULTS: Obj = {
    "imagePullPolicy": "IfNotPresent",
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}


def _defaulted(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    apply_defaults(out)
    return out


def _pod(**spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def _container(**fields: Any) -> Obj:
    return {"name": "c", "image": "nginx:1.25", **fields}


# --- Pod ------------------------------------------------------------------------------------------------------


def test_minimal_pod_matches_kube_apiserver() -> None:
    pod = _pod(containers=[{"name": "c", "image": "nginx"}])
    assert _defaulted(pod) == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            **POD_SPEC_DEFAULTS,
            "enableServiceLinks": True,
            "containers": [{"name": "c", "image": "nginx", **CONTAINER_DEFAULTS, "imagePullPolicy": "Always"}],
        },
    }  # no status: status.phase Pending is the pod registry's, not SetDefaults_Pod's


POD_SPEC_CASES: list[Any] = [
    pytest.param({"restartPolicy": "Never", "dnsPolicy": "Default", "schedulerName": "mine"},
                 {"restartPolicy": "Never", "dnsPolicy": "Default", "schedulerName": "mine"},
                 id="SetDefaults_PodSpec-keeps-set-strings"),
    pytest.param({"terminationGracePeriodSeconds": 0}, {"terminationGracePeriodSeconds": 0},
                 id="SetDefaults_PodSpec-grace-period-pointer-keeps-0"),
    pytest.param({"securityContext": {"runAsUser": 1}}, {"securityContext": {"runAsUser": 1}},
                 id="SetDefaults_PodSpec-keeps-security-context"),
    pytest.param({"enableServiceLinks": False}, {"enableServiceLinks": False},
                 id="SetDefaults_Pod-enableServiceLinks-pointer-keeps-false"),
    pytest.param({"restartPolicy": "", "dnsPolicy": None}, {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"},
                 id="SetDefaults_PodSpec-empty-and-null-are-unset"),
    pytest.param({"overhead": {"cpu": "0.0001"}}, {"overhead": {"cpu": "1m"}},
                 id="SetDefaults_ResourceList-overhead-rounded"),
]  # fmt: skip


@pytest.mark.parametrize(("spec", "expected"), POD_SPEC_CASES)
def test_pod_spec_fields(spec: Obj, expected: Obj) -> None:
    out = _defaulted(_pod(containers=[_container()], **spec))["spec"]
    assert {key: out[key] for key in expected} == expected


IMAGE_CASES: list[Any] = [
    pytest.param("nginx", "Always", id="no-tag-means-latest"),
    pytest.param("nginx:latest", "Always", id="latest-tag"),
    pytest.param("nginx:1.25", "IfNotPresent", id="other-tag"),
    pytest.param("registry.k8s.io/pause:3.10", "IfNotPresent", id="registry-and-tag"),
    pytest.param("localhost:5000/foo", "Always", id="registry-port-is-not-a-tag"),
    pytest.param("[::1]:5000/foo:v1", "IfNotPresent", id="ipv6-registry"),
    pytest.param("busybox@sha256:" + "a" * 64, "IfNotPresent", id="digest-without-tag"),
    pytest.param("busybox:latest@sha256:" + "a" * 64, "Always", id="latest-tag-with-digest"),
    pytest.param("Example.com/foo", "Always", id="upper-case-registry-allowed"),
    pytest.param("foo:V1", "IfNotPresent", id="upper-case-tag-allowed"),
    pytest.param("localhost:5000/Foo", "IfNotPresent", id="ParseNormalizedNamed-upper-case-repository-fails"),
    pytest.param("index.docker.io/nginx", "Always", id="legacy-docker-hub-domain"),
    pytest.param("Nginx", "IfNotPresent", id="upper-case-name-fails"),
    pytest.param("a" * 64, "IfNotPresent", id="64-hex-identifier-fails"),
    pytest.param("", "IfNotPresent", id="empty-image-fails-parse"),
    pytest.param("a" * 250, "IfNotPresent", id="normalised-name-over-255-fails"),
    pytest.param("a" * 237, "Always", id="normalised-name-of-255-parses"),
]


@pytest.mark.parametrize(("image", "policy"), IMAGE_CASES)
def test_SetDefaults_Container_image_pull_policy(image: str, policy: str) -> None:
    assert default_image_pull_policy(image) == policy
    out = _defaulted(_pod(containers=[{"name": "c", "image": image}], initContainers=[{"name": "i", "image": image}]))
    assert out["spec"]["containers"][0]["imagePullPolicy"] == policy
    assert out["spec"]["initContainers"][0]["imagePullPolicy"] == policy


def test_image_tag_values() -> None:
    assert image_tag("nginx") == "latest"
    assert image_tag("a/b:c") == "c"
    assert image_tag("busybox@sha256:" + "a" * 64) == ""
    assert image_tag("foo:V1") == "V1"
    assert image_tag("localhost:5000/Foo") is None


CONTAINER_CASES: list[Any] = [
    pytest.param(_container(imagePullPolicy="Never", terminationMessagePolicy="FallbackToLogsOnError"),
                 {**CONTAINER_DEFAULTS, "imagePullPolicy": "Never",
                  "terminationMessagePolicy": "FallbackToLogsOnError"}, id="SetDefaults_Container-keeps-set"),
    pytest.param(_container(ports=[{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]),
                 {"ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]},
                 id="ContainerPort-protocol-TCP"),
    pytest.param(_container(resources={"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}),
                 {"resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                "requests": {"cpu": "500m", "memory": "1Gi"}}},
                 id="SetDefaults_Pod-requests-from-limits-where-absent"),
    pytest.param(_container(resources={"limits": {"cpu": "2"}}),
                 {"resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}},
                 id="SetDefaults_Pod-requests-created-from-limits"),
    pytest.param(_container(resources={"limits": {}}), {"resources": {"limits": {}}},
                 id="SetDefaults_Pod-empty-limits-add-no-requests"),
    pytest.param(_container(resources={"requests": {"cpu": "0.0001", "memory": "1.5m", "x": "abc"}}),
                 {"resources": {"requests": {"cpu": "1m", "memory": "2m", "x": "abc"}}},
                 id="SetDefaults_ResourceList-rounds-up-to-milli-invalid-left"),
    pytest.param(_container(env=[{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]),
                 {"env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name",
                                                                   "apiVersion": "v1"}}}]},
                 id="SetDefaults_ObjectFieldSelector-env"),
    pytest.param(_container(livenessProbe={"exec": {"command": ["true"]}}),
                 {"livenessProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 1, "periodSeconds": 10,
                                    "successThreshold": 1, "failureThreshold": 3}},
                 id="SetDefaults_Probe"),
    pytest.param(_container(readinessProbe={"httpGet": {"port": 80}, "timeoutSeconds": 0, "periodSeconds": 5}),
                 {"readinessProbe": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                     "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3}},
                 id="SetDefaults_Probe-zero-is-unset-and-SetDefaults_HTTPGetAction"),
    pytest.param(_container(startupProbe={"grpc": {"port": 9000}, "failureThreshold": 30}),
                 {"startupProbe": {"grpc": {"port": 9000, "service": ""}, "timeoutSeconds": 1, "periodSeconds": 10,
                                   "successThreshold": 1, "failureThreshold": 30}},
                 id="GRPCAction-service-empty-string"),
    pytest.param(_container(lifecycle={"preStop": {"httpGet": {"port": 80, "path": "/quit"}}}),
                 {"lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/quit", "scheme": "HTTP"}}}},
                 id="SetDefaults_HTTPGetAction-lifecycle"),
]  # fmt: skip


@pytest.mark.parametrize(("container", "expected"), CONTAINER_CASES)
def test_container_defaults(container: Obj, expected: Obj) -> None:
    out = _defaulted(_pod(containers=[container]))["spec"]["containers"][0]
    assert out == {**container, **CONTAINER_DEFAULTS, **expected}


def test_requests_from_limits_per_container_including_init() -> None:
    limits = {"resources": {"limits": {"memory": "64Mi"}}}
    out = _defaulted(_pod(containers=[_container(), _container(**limits)], initContainers=[_container(**limits)]))
    spec = out["spec"]
    assert "resources" not in spec["containers"][0]
    assert spec["containers"][1]["resources"]["requests"] == {"memory": "64Mi"}
    assert spec["initContainers"][0]["resources"]["requests"] == {"memory": "64Mi"}


def test_host_network_defaults_host_ports() -> None:
    ports = [{"containerPort": 80}, {"containerPort": 81, "hostPort": 9081}]
    out = _defaulted(_pod(hostNetwork=True, containers=[_container(ports=ports)]))
    assert [p["hostPort"] for p in out["spec"]["containers"][0]["ports"]] == [80, 9081]
    out = _defaulted(_pod(containers=[_container(ports=[{"containerPort": 80}])]))
    assert "hostPort" not in out["spec"]["containers"][0]["ports"][0]


def test_ephemeral_containers_get_container_defaults() -> None:
    out = _defaulted(_pod(containers=[_container()], ephemeralContainers=[{"name": "dbg", "image": "busybox"}]))
    assert out["spec"]["ephemeralContainers"][0] == {
        "name": "dbg",
        "image": "busybox",
        **CONTAINER_DEFAULTS,
        "imagePullPolicy": "Always",
    }


VOLUME_CASES: list[Any] = [
    pytest.param({"name": "v"}, {"name": "v", "emptyDir": {}}, id="SetDefaults_Volume-no-source-is-emptyDir"),
    pytest.param({"name": "v", "emptyDir": {"medium": "Memory"}}, {"name": "v", "emptyDir": {"medium": "Memory"}},
                 id="SetDefaults_Volume-emptyDir-untouched"),
    pytest.param({"name": "v", "secret": {"secretName": "s"}},
                 {"name": "v", "secret": {"secretName": "s", "defaultMode": 420}},
                 id="SetDefaults_SecretVolumeSource-420"),
    pytest.param({"name": "v", "configMap": {"name": "c", "defaultMode": 256}},
                 {"name": "v", "configMap": {"name": "c", "defaultMode": 256}},
                 id="SetDefaults_ConfigMapVolumeSource-keeps-mode"),
    pytest.param({"name": "v", "configMap": {"name": "c"}},
                 {"name": "v", "configMap": {"name": "c", "defaultMode": 420}},
                 id="SetDefaults_ConfigMapVolumeSource-420"),
    pytest.param({"name": "v", "hostPath": {"path": "/x"}}, {"name": "v", "hostPath": {"path": "/x", "type": ""}},
                 id="SetDefaults_HostPathVolumeSource-type-empty"),
    pytest.param({"name": "v", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "x"}}]}},
                 {"name": "v", "downwardAPI": {"defaultMode": 420, "items": [
                     {"path": "n", "fieldRef": {"fieldPath": "x", "apiVersion": "v1"}}]}},
                 id="SetDefaults_DownwardAPIVolumeSource"),
    pytest.param({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                 {"name": "v", "projected": {"defaultMode": 420, "sources": [
                     {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}},
                 id="SetDefaults_ProjectedVolumeSource-and-token-expiration"),
    pytest.param({"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
                 {"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {
                     "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem"}}}},
                 id="SetDefaults_PersistentVolumeClaimSpec-ephemeral"),
    pytest.param({"name": "v", "rbd": {"monitors": ["m"], "image": "i"}},
                 {"name": "v", "rbd": {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
                                       "keyring": "/etc/ceph/keyring"}}, id="RBDVolumeSource-declarative"),
    pytest.param({"name": "v", "image": {"reference": "repo/data:latest"}},
                 {"name": "v", "image": {"reference": "repo/data:latest", "pullPolicy": "Always"}},
                 id="SetDefaults_Volume-image-pull-policy"),
]  # fmt: skip


@pytest.mark.parametrize(("volume", "expected"), VOLUME_CASES)
def test_volume_defaults(volume: Obj, expected: Obj) -> None:
    assert _defaulted(_pod(containers=[_container()], volumes=[volume]))["spec"]["volumes"][0] == expected


# --- workloads ------------------------------------------------------------------------------------------------

_TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {"containers": [_container(resources={"limits": {"cpu": "1"}})]},
}
_DEFAULTED_TEMPLATE: Obj = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {  # PodSpec defaults only: no enableServiceLinks, no requests from limits (SetDefaults_Pod)
        **POD_SPEC_DEFAULTS,
        "containers": [{**_container(resources={"limits": {"cpu": "1"}}), **CONTAINER_DEFAULTS}],
    },
}


def _workload(kind: str, api_version: str = "apps/v1", **spec: Any) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w"}, "spec": spec}


WORKLOAD_CASES: list[Any] = [
    pytest.param(_workload("Deployment", template=_TEMPLATE),
                 {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                          "maxSurge": "25%"}}},
                 id="SetDefaults_Deployment"),
    pytest.param(_workload("Deployment", template=_TEMPLATE, replicas=0, strategy={"type": "Recreate"}),
                 {"replicas": 0, "strategy": {"type": "Recreate"}},
                 id="SetDefaults_Deployment-recreate-gets-no-rollingUpdate-replicas-0-kept"),
    pytest.param(_workload("Deployment", template=_TEMPLATE, strategy={"rollingUpdate": {"maxSurge": 0}}),
                 {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}}},
                 id="SetDefaults_Deployment-partial-rollingUpdate"),
    pytest.param(_workload("ReplicaSet", template=_TEMPLATE), {"replicas": 1}, id="SetDefaults_ReplicaSet"),
    pytest.param(_workload("DaemonSet", template=_TEMPLATE),
                 {"revisionHistoryLimit": 10, "updateStrategy": {
                     "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}},
                 id="SetDefaults_DaemonSet"),
    pytest.param(_workload("DaemonSet", template=_TEMPLATE, updateStrategy={"type": "OnDelete"}),
                 {"updateStrategy": {"type": "OnDelete"}}, id="SetDefaults_DaemonSet-on-delete"),
    pytest.param(_workload("StatefulSet", template=_TEMPLATE),
                 {"replicas": 1, "revisionHistoryLimit": 10, "podManagementPolicy": "OrderedReady",
                  "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0,
                                                                                "maxUnavailable": 1}},
                  "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}},
                 id="SetDefaults_StatefulSet-MaxUnavailableStatefulSet-StatefulSetAutoDeletePVC"),
    pytest.param(_workload("StatefulSet", template=_TEMPLATE, updateStrategy={"type": "RollingUpdate"}),
                 {"updateStrategy": {"type": "RollingUpdate"}},
                 id="SetDefaults_StatefulSet-explicit-type-gets-no-rollingUpdate-block"),
    pytest.param(_workload("StatefulSet", template=_TEMPLATE,
                           updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
                 {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2,
                                                                                "maxUnavailable": 1}}},
                 id="SetDefaults_StatefulSet-keeps-partition"),
    pytest.param(_workload("ReplicationController", "v1", template=_TEMPLATE),
                 {"replicas": 1, "selector": {"app": "a"}}, id="SetDefaults_ReplicationController"),
    pytest.param(_workload("ReplicationController", "v1", template=_TEMPLATE, selector={"x": "y"}),
                 {"selector": {"x": "y"}}, id="SetDefaults_ReplicationController-keeps-selector"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "expected_spec"), WORKLOAD_CASES)
def test_workload_defaults(obj: Obj, expected_spec: Obj) -> None:
    spec = _defaulted(obj)["spec"]
    assert {key: spec[key] for key in expected_spec} == expected_spec
    assert spec["template"] == _DEFAULTED_TEMPLATE


def test_statefulset_volume_claim_templates_are_claims() -> None:
    claim = {"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    spec = _defaulted(_workload("StatefulSet", template=_TEMPLATE, volumeClaimTemplates=[claim]))["spec"]
    assert spec["volumeClaimTemplates"] == [
        {
            "metadata": {"name": "data"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"},
        }
    ]


def test_replication_controller_labels_and_missing_template() -> None:
    rc = _defaulted(_workload("ReplicationController", "v1", template=_TEMPLATE))
    assert rc["metadata"]["labels"] == {"app": "a"}
    assert _defaulted(_workload("ReplicationController", "v1")) == _workload("ReplicationController", "v1", replicas=1)


def test_pod_template_kind() -> None:
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": _TEMPLATE}
    assert _defaulted(obj)["template"] == _DEFAULTED_TEMPLATE


# --- other core kinds and groups ------------------------------------------------------------------------------


def _obj(api_version: str, kind: str, **fields: Any) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "o"}, **fields}


KIND_CASES: list[Any] = [
    pytest.param(_obj("v1", "Service", spec={"ports": [{"port": 80}, {"port": 53, "protocol": "UDP",
                                                                      "targetPort": "dns"}]}),
                 {"spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80},
                                     {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}},
                 id="SetDefaults_Service-no-ipFamilyPolicy-without-allocator"),
    pytest.param(_obj("v1", "Service", spec={"type": "NodePort", "ports": [{"port": 80, "targetPort": 0}]}),
                 {"spec": {"type": "NodePort", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "externalTrafficPolicy": "Cluster",
                           "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}},
                 id="SetDefaults_Service-NodePort-externalTrafficPolicy-targetPort-0-is-unset"),
    pytest.param(_obj("v1", "Service", spec={"externalIPs": ["1.2.3.4"]}),
                 {"spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "externalIPs": ["1.2.3.4"], "externalTrafficPolicy": "Cluster"}},
                 id="SetDefaults_Service-ClusterIP-with-externalIPs-is-externally-accessible"),
    pytest.param(_obj("v1", "Service", spec={"type": "ExternalName", "externalName": "x.example"}),
                 {"spec": {"type": "ExternalName", "externalName": "x.example", "sessionAffinity": "None"}},
                 id="SetDefaults_Service-ExternalName-no-internalTrafficPolicy"),
    pytest.param(_obj("v1", "Service", spec={"type": "LoadBalancer"},
                      status={"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "h"}]}}),
                 {"spec": {"type": "LoadBalancer", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True},
                  "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP"}, {"hostname": "h"}]}}},
                 id="SetDefaults_Service-LoadBalancer-node-ports-and-ipMode"),
    pytest.param(_obj("v1", "Service", spec={"sessionAffinity": "ClientIP"}),
                 {"spec": {"type": "ClusterIP", "sessionAffinity": "ClientIP", "internalTrafficPolicy": "Cluster",
                           "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}},
                 id="SetDefaults_Service-ClientIP-timeout-10800"),
    pytest.param(_obj("v1", "Service", spec={"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}),
                 {"spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"}},
                 id="SetDefaults_Service-None-drops-sessionAffinityConfig"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
                 {"metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns"}},
                  "status": {"phase": "Active"}},
                 id="SetDefaults_Namespace-name-label-phase-Active-no-finalizer"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "ns-",
                                                                        "labels": {"x": "y"}}},
                 {"metadata": {"generateName": "ns-", "labels": {"x": "y"}}, "status": {"phase": "Active"}},
                 id="SetDefaults_Namespace-nameless-gets-no-label"),
    pytest.param(_obj("v1", "Node", status={"capacity": {"cpu": "4", "pods": "110"}}),
                 {"status": {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "4", "pods": "110"}}},
                 id="SetDefaults_NodeStatus-allocatable-from-capacity"),
    pytest.param(_obj("v1", "Node", status={"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3500m"}}),
                 {"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3500m"}}},
                 id="SetDefaults_NodeStatus-keeps-allocatable"),
    pytest.param(_obj("v1", "Node", spec={}), {"spec": {}}, id="SetDefaults_NodeStatus-no-capacity"),
    pytest.param(_obj("v1", "PersistentVolume", spec={"hostPath": {"path": "/d"}}),
                 {"spec": {"hostPath": {"path": "/d", "type": ""}, "persistentVolumeReclaimPolicy": "Retain",
                           "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}},
                 id="SetDefaults_PersistentVolume"),
    pytest.param(_obj("v1", "PersistentVolumeClaim", spec={"volumeMode": "Block"}),
                 {"spec": {"volumeMode": "Block"}, "status": {"phase": "Pending"}},
                 id="SetDefaults_PersistentVolumeClaim-keeps-volumeMode"),
    pytest.param(_obj("v1", "PersistentVolumeClaim"),
                 {"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}},
                 id="SetDefaults_PersistentVolumeClaimSpec"),
    pytest.param(_obj("v1", "Secret"), {"type": "Opaque"}, id="SetDefaults_Secret"),
    pytest.param(_obj("v1", "Secret", type="kubernetes.io/tls"), {"type": "kubernetes.io/tls"},
                 id="SetDefaults_Secret-keeps-type"),
    pytest.param(_obj("v1", "Endpoints", subsets=[{"ports": [{"port": 80}]}]),
                 {"subsets": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}, id="SetDefaults_Endpoints"),
    pytest.param(_obj("v1", "LimitRange", spec={"limits": [
                     {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "default": {"cpu": "1"},
                      "min": {"cpu": "100m", "ephemeral-storage": "1Mi"}},
                     {"type": "Pod", "max": {"cpu": "4"}}]}),
                 {"spec": {"limits": [
                     {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"},
                      "default": {"cpu": "1", "memory": "1Gi"},
                      "defaultRequest": {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Mi"},
                      "min": {"cpu": "100m", "ephemeral-storage": "1Mi"}},
                     {"type": "Pod", "max": {"cpu": "4"}}]}},
                 id="SetDefaults_LimitRangeItem-container-only"),
    pytest.param(_obj("v1", "ResourceQuota", spec={"hard": {"cpu": "0.5m"}}), {"spec": {"hard": {"cpu": "1m"}}},
                 id="SetDefaults_ResourceList-quota"),
    pytest.param(_obj("scheduling.k8s.io/v1", "PriorityClass", value=10),
                 {"value": 10, "preemptionPolicy": "PreemptLowerPriority"}, id="SetDefaults_PriorityClass"),
    pytest.param(_obj("storage.k8s.io/v1", "StorageClass", provisioner="p"),
                 {"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
                 id="SetDefaults_StorageClass"),
    pytest.param(_obj("storage.k8s.io/v1", "CSIDriver", spec={"attachRequired": False}),
                 {"spec": {"attachRequired": False, "podInfoOnMount": False, "storageCapacity": False,
                           "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                           "requiresRepublish": False, "seLinuxMount": False}},
                 id="SetDefaults_CSIDriver"),  # seLinuxMount: SELinuxMountReadWriteOncePod on in v1.37
    pytest.param(_obj("rbac.authorization.k8s.io/v1", "RoleBinding", roleRef={"kind": "Role", "name": "r"},
                      subjects=[{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                                {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]),
                 {"roleRef": {"kind": "Role", "name": "r", "apiGroup": "rbac.authorization.k8s.io"},
                  "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
                               {"kind": "Group", "name": "g", "apiGroup": "rbac.authorization.k8s.io"},
                               {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]},
                 id="SetDefaults_RoleBinding-and-SetDefaults_Subject"),
    pytest.param(_obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding",
                      roleRef={"kind": "ClusterRole", "name": "r", "apiGroup": "x"}),
                 {"roleRef": {"kind": "ClusterRole", "name": "r", "apiGroup": "x"}},
                 id="SetDefaults_ClusterRoleBinding-keeps-apiGroup"),
]  # fmt: skip


@pytest.mark.parametrize(("obj", "expected"), KIND_CASES)
def test_kind_defaults(obj: Obj, expected: Obj) -> None:
    assert _defaulted(obj) == {**obj, **expected}


UNTOUCHED_CASES: list[Any] = [
    pytest.param(_obj("v1", "ConfigMap", data={}), id="SetDefaults_ConfigMap-data-omitempty"),
    pytest.param(_obj("policy/v1", "PodDisruptionBudget", spec={"minAvailable": 1}), id="policy-v1-no-defaults"),
    pytest.param(_obj("coordination.k8s.io/v1", "Lease", spec={}), id="lease-no-defaults"),
    pytest.param(_obj("events.k8s.io/v1", "Event", reason="r"), id="event-no-defaults"),
    pytest.param(_obj("v1", "Event", reason="r"), id="core-event-no-defaults"),
    pytest.param(_obj("example.com/v1", "Widget", spec={}), id="unknown-kind"),
    pytest.param(_obj("apps/v1beta2", "Deployment", spec={}), id="other-version-not-ours"),
    pytest.param({"kind": "Pod", "spec": {}}, id="no-apiVersion"),
]


@pytest.mark.parametrize("obj", UNTOUCHED_CASES)
def test_kinds_without_defaults_are_untouched(obj: Obj) -> None:
    assert _defaulted(obj) == obj


def test_list_items_are_defaulted() -> None:
    pods = {"apiVersion": "v1", "kind": "PodList", "items": [_pod(containers=[_container()])]}
    item = _defaulted(pods)["items"][0]
    assert item["spec"]["restartPolicy"] == "Always"
    assert item["spec"]["enableServiceLinks"] is True


def test_dispatch_table() -> None:
    assert defaulter_for("v1", "Pod") is DEFAULTERS[("v1", "Pod")]
    assert defaulter_for("policy/v1", "PodDisruptionBudget") is None


def test_round_up_resource_list_keeps_spelling() -> None:
    resources: Obj = {"a": "1000m", "b": "1.5Gi", "c": "-0.0001", "d": 0.5, "e": True}
    round_up_resource_list(resources)
    assert resources == {"a": "1000m", "b": "1.5Gi", "c": "-1m", "d": 0.5, "e": True}


MALFORMED_CASES: list[Any] = [
    pytest.param(_pod(containers="x", volumes=[None, 3], initContainers=[{"ports": "p", "resources": 1}]),
                 id="pod-wrong-types"),
    pytest.param({"apiVersion": "v1", "kind": "Pod", "spec": "x"}, id="pod-spec-string"),
    pytest.param(_workload("Deployment", template=[], strategy="s"), id="deployment-wrong-types"),
    pytest.param(_workload("StatefulSet", updateStrategy={"rollingUpdate": 5}), id="statefulset-wrong-types"),
    pytest.param(_obj("v1", "Service", spec={"ports": [{"port": "80"}], "type": 5}), id="service-wrong-types"),
    pytest.param(_obj("v1", "Node", status={"capacity": {"cpu": []}}), id="node-wrong-types"),
    pytest.param(_obj("v1", "LimitRange", spec={"limits": [{"type": "Container", "default": "x"}]}),
                 id="limitrange-wrong-types"),
]  # fmt: skip


@pytest.mark.parametrize("obj", MALFORMED_CASES)
def test_malformed_input_never_raises(obj: Obj) -> None:
    _defaulted(obj)


# --- idempotence ----------------------------------------------------------------------------------------------


def _table_inputs() -> list[Any]:
    """Every object the tables above feed to the defaulter, under the case's own id."""
    params: list[Any] = []
    for case in POD_SPEC_CASES:
        params.append(pytest.param(_pod(containers=[_container()], **case.values[0]), id=case.id))
    for case in IMAGE_CASES:
        params.append(pytest.param(_pod(containers=[{"name": "c", "image": case.values[0]}]), id=case.id))
    for case in CONTAINER_CASES:
        params.append(pytest.param(_pod(containers=[case.values[0]]), id=case.id))
    for case in VOLUME_CASES:
        params.append(pytest.param(_pod(containers=[_container()], volumes=[case.values[0]]), id=case.id))
    for table in (WORKLOAD_CASES, KIND_CASES, UNTOUCHED_CASES, MALFORMED_CASES):
        params.extend(pytest.param(case.values[0], id=case.id) for case in table)
    return params


@pytest.mark.parametrize("obj", _table_inputs())
def test_defaulting_is_idempotent(obj: Obj) -> None:
    once = _defaulted(obj)
    assert _defaulted(once) == once


_IMAGES = st.sampled_from(["nginx", "nginx:1.25", "nginx:latest", "Bad", "", "r.io:5000/a/b@sha256:" + "f" * 64])
_QUANTITIES = st.sampled_from(["1", "0.0001", "100m", "1Gi", "abc", 0.5, "-1.5m"])
_PROBES = st.fixed_dictionaries(
    {},
    optional={
        "timeoutSeconds": st.integers(0, 3),
        "httpGet": st.fixed_dictionaries({"port": st.just(80)}, optional={"path": st.sampled_from(["", "/x"])}),
        "grpc": st.fixed_dictionaries({"port": st.just(1)}),
    },
)
_CONTAINERS = st.fixed_dictionaries(
    {"name": st.just("c"), "image": _IMAGES},
    optional={
        "imagePullPolicy": st.sampled_from(["", "Never"]),
        "ports": st.lists(st.fixed_dictionaries({"containerPort": st.integers(0, 3)}, optional={
            "hostPort": st.integers(0, 3), "protocol": st.sampled_from(["", "UDP"])}), max_size=2),
        "resources": st.fixed_dictionaries({}, optional={
            "limits": st.dictionaries(st.sampled_from(["cpu", "memory"]), _QUANTITIES, max_size=2),
            "requests": st.dictionaries(st.sampled_from(["cpu", "memory"]), _QUANTITIES, max_size=2)}),
        "livenessProbe": _PROBES,
    },
)  # fmt: skip
_VOLUMES = st.fixed_dictionaries(
    {"name": st.just("v")},
    optional={
        "secret": st.fixed_dictionaries({}, optional={"defaultMode": st.just(256)}),
        "hostPath": st.fixed_dictionaries({"path": st.just("/x")}),
        "emptyDir": st.none(),
    },
)
_PODS = st.fixed_dictionaries(
    {"containers": st.lists(_CONTAINERS, max_size=2)},
    optional={
        "initContainers": st.lists(_CONTAINERS, max_size=1),
        "volumes": st.lists(_VOLUMES, max_size=2),
        "hostNetwork": st.booleans(),
        "terminationGracePeriodSeconds": st.sampled_from([None, 0, 5]),
    },
)


@settings(max_examples=200, deadline=None)
@given(spec=_PODS, kind=st.sampled_from(["Pod", "Deployment", "StatefulSet", "DaemonSet"]))
def test_random_pods_default_idempotently(spec: Obj, kind: str) -> None:
    obj = _pod(**spec) if kind == "Pod" else _workload(kind, template={"spec": spec})
    once = copy.deepcopy(obj)
    apply_defaults(once)
    twice = copy.deepcopy(once)
    apply_defaults(twice)
    assert twice == once
    pod_spec = once["spec"] if kind == "Pod" else once["spec"]["template"]["spec"]
    assert {key: pod_spec[key] for key in POD_SPEC_DEFAULTS} == {
        key: value if spec.get(key) is None else spec[key] for key, value in POD_SPEC_DEFAULTS.items()
    }
    for container in pod_spec["containers"]:
        assert container["imagePullPolicy"] in ("Always", "IfNotPresent", "Never")
        assert all(port["protocol"] in ("TCP", "UDP") for port in container.get("ports", ()))
