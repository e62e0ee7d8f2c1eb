"""API-server defaulting: :func:`apply_defaults` fills in what kube-apiserver's ``SetDefaults_*`` functions fill in.

Upstream is the ``defaults.go`` (and the generated ``zz_generated.defaults.go``) of ``pkg/apis/core/v1``,
``apps/v1``, ``scheduling/v1``, ``storage/v1`` and ``rbac/v1`` at v1.37; ``tests/api/test_defaults.py`` names
the upstream behaviour each case pins. Pods and the workloads that carry pod templates live in
:mod:`kubeplane.api.defaults_workloads`, storage.k8s.io in :mod:`kubeplane.api.defaults_storage`; this module
holds the other kinds and the dispatch.

Contract
    ``apply_defaults(obj)`` mutates a wire-format object in place, keyed by its ``apiVersion`` and ``kind``;
    a ``<Kind>List`` defaults each of its items as ``<Kind>``. Kinds without defaulters upstream
    (ConfigMap -- its ``data: {}`` default vanishes under ``omitempty`` --, policy/v1 PodDisruptionBudget,
    coordination Leases, Events) and kinds this module does not know are left untouched. Defaulting is
    idempotent, never raises on malformed input (validation reports that), and only ever adds or normalises
    fields, so the API server can run it on create, on update, and on every object it reads back, as upstream
    does on decode.

Deliberately *not* defaults, although a stored object shows them: the namespace ``kubernetes`` finalizer and a
pod's ``status.phase: Pending`` (registry strategies on create -- upstream keeps the finalizer out of the
defaulter because it may be removed later), a Service's clusterIP / ipFamilies / ipFamilyPolicy (the
allocator in the service registry), and what admission plugins add.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

import orjson

from kubeplane.api.defaults_batch import set_defaults_cron_job, set_defaults_job
from kubeplane.api.defaults_resource import (
    set_defaults_resource_claim,
    set_defaults_resource_claim_template,
    set_defaults_resource_slice,
)
from kubeplane.api.defaults_storage import set_defaults_csi_driver, set_defaults_storage_class
from kubeplane.api.defaults_workloads import (  # the _underscored wire helpers are shared by the two modules
    JSONObject,
    _ensure,
    _obj,
    _objs,
    _set_empty,
    _set_nil,
    round_up_resource_list,
    set_defaults_daemon_set,
    set_defaults_deployment,
    set_defaults_pod,
    set_defaults_pod_template,
    set_defaults_pvc,
    set_defaults_replica_set,
    set_defaults_replication_controller,
    set_defaults_stateful_set,
    set_defaults_volume_source,
)
from kubeplane.api.shapes import ShapeMemo, shape_key

__all__ = ["DEFAULTERS", "RBAC_GROUP", "Defaulter", "apply_defaults", "defaulter_for"]

Defaulter = Callable[[JSONObject], None]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
_CLIENT_IP_TIMEOUT_SECONDS: Final = 10800  # DefaultClientIPServiceAffinitySeconds: 3 hours


# --- core/v1 ---------------------------------------------------------------------------------------------------


def _service(service: JSONObject) -> None:
    """``SetDefaults_Service``. An externally reachable service (NodePort, LoadBalancer, or ClusterIP with
    externalIPs) gets ``externalTrafficPolicy: Cluster``; ExternalName gets no internalTrafficPolicy."""
    spec = _ensure(service, "spec")
    if spec is None:
        return
    _set_empty(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = _obj(spec, "sessionAffinityConfig")
        client_ip = _obj(config, "clientIP") if config is not None else None
        if client_ip is None or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": _CLIENT_IP_TIMEOUT_SECONDS}}
    _set_empty(spec, "type", "ClusterIP")
    kind = spec["type"]
    for port in _objs(spec, "ports"):
        _set_empty(port, "protocol", "TCP")
        target = port.get("targetPort")
        if target is None or target == "" or (target == 0 and not isinstance(target, bool)):
            number = port.get("port", 0)
            if isinstance(number, int) and not isinstance(number, bool):
                port["targetPort"] = number
    if kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and spec.get("externalIPs")):
        _set_empty(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("ClusterIP", "NodePort", "LoadBalancer"):
        _set_nil(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _set_nil(spec, "allocateLoadBalancerNodePorts", True)
        status = _obj(service, "status")
        load_balancer = _obj(status, "loadBalancer") if status is not None else None
        for ingress in _objs(load_balancer, "ingress") if load_balancer is not None else ():
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"


def _namespace(namespace: JSONObject) -> None:
    """``SetDefaults_Namespace`` (the immutable ``kubernetes.io/metadata.name`` label, always overwritten,
    skipped for a nameless generateName namespace) and ``SetDefaults_NamespaceStatus`` (phase Active)."""
    metadata = _obj(namespace, "metadata")
    name = metadata.get("name") if metadata is not None else None
    if metadata is not None and isinstance(name, str) and name:
        labels = _ensure(metadata, "labels")
        if labels is not None:
            labels[NAMESPACE_NAME_LABEL] = name
    status = _ensure(namespace, "status")
    if status is not None:
        _set_empty(status, "phase", "Active")


def _node(node: JSONObject) -> None:
    """``SetDefaults_NodeStatus``: allocatable defaults to a copy of capacity when unset; both rounded."""
    status = _obj(node, "status")
    if status is None:
        return
    capacity = _obj(status, "capacity")
    if capacity and not status.get("allocatable"):
        status["allocatable"] = dict(capacity)
    round_up_resource_list(status.get("capacity"))
    round_up_resource_list(status.get("allocatable"))


def _persistent_volume(volume: JSONObject) -> None:
    """``SetDefaults_PersistentVolume``: status.phase Pending, reclaim policy Retain, volumeMode Filesystem."""
    status = _ensure(volume, "status")
    if status is not None:
        _set_empty(status, "phase", "Pending")
    spec = _ensure(volume, "spec")
    if spec is None:
        return
    _set_empty(spec, "persistentVolumeReclaimPolicy", "Retain")
    _set_nil(spec, "volumeMode", "Filesystem")
    round_up_resource_list(spec.get("capacity"))
    set_defaults_volume_source(spec)


def _secret(secret: JSONObject) -> None:
    _set_empty(secret, "type", "Opaque")


def _endpoints(endpoints: JSONObject) -> None:
    for subset in _objs(endpoints, "subsets"):
        for port in _objs(subset, "ports"):
            _set_empty(port, "protocol", "TCP")


def _limit_range(limit_range: JSONObject) -> None:
    """``SetDefaults_LimitRangeItem`` for ``type: Container``: the default limit from max, then the default
    request from the default limit, then from min -- each only for resources not already named."""
    spec = _obj(limit_range, "spec")
    for item in _objs(spec, "limits") if spec is not None else ():
        if item.get("type") == "Container":
            default = dict(_obj(item, "default") or {})
            default_request = dict(_obj(item, "defaultRequest") or {})
            for target, source in ((default, _obj(item, "max")), (default_request, default)):
                for name, value in (source or {}).items():
                    target.setdefault(name, value)
            for name, value in (_obj(item, "min") or {}).items():
                default_request.setdefault(name, value)
            for key, merged in (("default", default), ("defaultRequest", default_request)):
                if merged and (item.get(key) is None or isinstance(item.get(key), dict)):
                    item[key] = merged
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            round_up_resource_list(item.get(key))


def _resource_quota(quota: JSONObject) -> None:
    spec, status = _obj(quota, "spec"), _obj(quota, "status")
    if spec is not None:
        round_up_resource_list(spec.get("hard"))
    if status is not None:
        round_up_resource_list(status.get("hard"))
        round_up_resource_list(status.get("used"))


# --- other groups ----------------------------------------------------------------------------------------------


def _endpoint_slice(endpoint_slice: JSONObject) -> None:
    """discovery/v1 ``SetDefaults_EndpointPort``: a port's name defaults to ``""`` and its protocol to TCP."""
    for port in _objs(endpoint_slice, "ports"):
        _set_nil(port, "name", "")
        _set_nil(port, "protocol", "TCP")


def _priority_class(priority_class: JSONObject) -> None:
    _set_nil(priority_class, "preemptionPolicy", "PreemptLowerPriority")


def _role_binding(binding: JSONObject) -> None:
    """``SetDefaults_RoleBinding``/``ClusterRoleBinding`` (roleRef.apiGroup) and ``SetDefaults_Subject``:
    User and Group subjects get the RBAC group; a ServiceAccount's is the core group ``""``, which
    ``omitempty`` leaves out of the wire format, so it stays absent."""
    role_ref = _ensure(binding, "roleRef")
    if role_ref is not None:
        _set_empty(role_ref, "apiGroup", RBAC_GROUP)
    for subject in _objs(binding, "subjects"):
        if subject.get("kind") in ("User", "Group"):
            _set_empty(subject, "apiGroup", RBAC_GROUP)


DEFAULTED_POD_SPECS: ShapeMemo[bytes] = ShapeMemo()
"""A pod spec's encoding before :func:`set_defaults_pod` -> its encoding after (:mod:`kubeplane.api.shapes`)."""


def set_defaults_pod_memo(pod: JSONObject) -> None:
    """:func:`set_defaults_pod`, answered from :data:`DEFAULTED_POD_SPECS` for a spec seen before.

    Exact because the pod defaults read and write ``spec`` alone (``SetDefaults_Pod`` and the PodSpec defaults
    look at nothing else), so equal specs default equally. The spec dict is updated in place, as the direct
    path does, from a fresh decode: no two pods share a defaulted sub-object."""
    spec = pod.get("spec")
    key = shape_key(spec) if isinstance(spec, dict) else None
    done = DEFAULTED_POD_SPECS.get(key)
    if done is not None:
        assert isinstance(spec, dict)
        spec.clear()
        spec.update(orjson.loads(done))
        return
    set_defaults_pod(pod)
    if key is not None:
        DEFAULTED_POD_SPECS.put(key, orjson.dumps(pod["spec"]))


# --- dispatch --------------------------------------------------------------------------------------------------

DEFAULTERS: Final[Mapping[tuple[str, str], Defaulter]] = MappingProxyType(
    {
        ("v1", "Pod"): set_defaults_pod_memo,
        ("v1", "PodTemplate"): set_defaults_pod_template,
        ("v1", "ReplicationController"): set_defaults_replication_controller,
        ("v1", "Service"): _service,
        ("v1", "Namespace"): _namespace,
        ("v1", "Node"): _node,
        ("v1", "PersistentVolume"): _persistent_volume,
        ("v1", "PersistentVolumeClaim"): set_defaults_pvc,
        ("v1", "Secret"): _secret,
        ("v1", "Endpoints"): _endpoints,
        ("v1", "LimitRange"): _limit_range,
        ("v1", "ResourceQuota"): _resource_quota,
        ("apps/v1", "Deployment"): set_defaults_deployment,
        ("apps/v1", "ReplicaSet"): set_defaults_replica_set,
        ("apps/v1", "DaemonSet"): set_defaults_daemon_set,
        ("apps/v1", "StatefulSet"): set_defaults_stateful_set,
        ("batch/v1", "Job"): set_defaults_job,
        ("batch/v1", "CronJob"): set_defaults_cron_job,
        ("discovery.k8s.io/v1", "EndpointSlice"): _endpoint_slice,
        ("scheduling.k8s.io/v1", "PriorityClass"): _priority_class,
        ("storage.k8s.io/v1", "StorageClass"): set_defaults_storage_class,
        ("storage.k8s.io/v1", "CSIDriver"): set_defaults_csi_driver,
        ("resource.k8s.io/v1", "ResourceClaim"): set_defaults_resource_claim,
        ("resource.k8s.io/v1", "ResourceClaimTemplate"): set_defaults_resource_claim_template,
        ("resource.k8s.io/v1", "ResourceSlice"): set_defaults_resource_slice,
        ("rbac.authorization.k8s.io/v1", "RoleBinding"): _role_binding,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _role_binding,
    }
)
"""(apiVersion, kind) -> in-place defaulter. Kinds absent here have no defaults."""


def defaulter_for(api_version: str, kind: str) -> Defaulter | None:
    """The defaulter for ``kind`` at ``api_version``, or None when upstream defaults nothing for it."""
    return DEFAULTERS.get((api_version, kind))


def apply_defaults(obj: dict[str, Any]) -> None:
    """Apply upstream's defaults for ``obj``'s apiVersion and kind in place (a ``<Kind>List`` item by item)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    defaulter = DEFAULTERS.get((api_version, kind))
    if defaulter is not None:
        defaulter(obj)
        return
    item_defaulter = DEFAULTERS.get((api_version, kind.removesuffix("List"))) if kind.endswith("List") else None
    if item_defaulter is not None:
        for item in _objs(obj, "items"):
            item_defaulter(item)
