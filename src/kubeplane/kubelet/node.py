"""The Node object and Lease a simulated kubelet registers and keeps fresh (upstream ``pkg/kubelet/nodestatus``
setters, ``kubelet_node_status.go`` and ``pkg/kubelet/nodelease``).

Cadence, as upstream's defaults: the Lease in ``kube-node-lease`` is renewed every 10 s (a quarter of its 40 s
duration); node status is computed every 10 s (``nodeStatusUpdateFrequency``) and patched when it changed or
5 minutes (``nodeStatusReportFrequency``) after the last report, each report moving ``lastHeartbeatTime``.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from kubeplane.api.meta import format_micro_time, format_time
from kubeplane.api.node_labels import is_kubelet_label, is_kubernetes_label
from kubeplane.api.nodedeclaredfeatures import kubelet_declared_features

from .config import NodeSpec
from .eviction import pressure_condition

Obj = dict[str, Any]

NODE_LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
MAX_IMAGES = 50  # upstream nodeStatusMaxImages
KUBELET_PORT = 10250

_READY = ("KubeletReady", "kubelet is posting ready status")
_NOT_READY = ("KubeletNotReady", "container runtime status check may not have completed yet")
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
"""The NoSchedule taint a booting node registers with (upstream's TaintNodesByCondition admission plugin puts it on
every new Node; the node lifecycle controller removes it once the node reports Ready)."""
CONDITION_ORDER = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")


def _stable_id(name: str, what: str) -> str:
    return hashlib.sha256(f"{what}/{name}".encode()).hexdigest()[:32]


def node_info(spec: NodeSpec) -> Obj:
    """``status.nodeInfo`` as a containerd node reports it (stable per node name). Every ``NodeSystemInfo`` field
    without ``omitempty`` is present, in the Go type's order: ``kubeProxyVersion`` too, as the "" a v1.37 kubelet
    sends (DisableNodeKubeProxyVersion); typed clients (the official Python client) refuse a Node without it."""
    return {
        "machineID": _stable_id(spec.name, "machine"),
        "systemUUID": str(uuid.UUID(_stable_id(spec.name, "system"))),
        "bootID": str(uuid.UUID(_stable_id(spec.name, "boot"))),
        "kernelVersion": "6.8.0-kubeplane",
        "osImage": "kubeplane simulated node",
        "containerRuntimeVersion": "containerd://2.1.0",
        "kubeletVersion": spec.kubelet_version,
        "kubeProxyVersion": "",
        "operatingSystem": spec.os,
        "architecture": spec.arch,
    }


def condition(type_: str, status: bool, heartbeat: str, transition: str) -> Obj:
    """A node condition as the kubelet reports it (``setters.go``): Ready, or a pressure condition."""
    if type_ == "Ready":
        reason, message = _READY if status else _NOT_READY
    else:
        pressure = pressure_condition(type_, status)
        reason, message = pressure.reason, pressure.message
    return {
        "type": type_,
        "status": "True" if status else "False",
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    }


def registration_node(
    spec: NodeSpec, now: float, images: list[Obj], *, kubelet_port: int = KUBELET_PORT, ready: bool = True
) -> Obj:
    """The Node a kubelet creates when it registers (``initialNode`` plus the first status); ``kubelet_port``
    is where its kubelet API answers (the fleet's endpoint, :mod:`~kubeplane.kubelet.kubelet_server`).
    ``ready=False``: a booting node (a cloud's new VM): Ready False and tainted ``node.kubernetes.io/not-ready``
    NoSchedule, as upstream's TaintNodesByCondition admission plugin taints every Node it admits."""
    stamp = format_time(now)
    taints = [dict(t) for t in spec.taints]
    if not ready and not any(t.get("key") == TAINT_NOT_READY for t in taints):
        taints.append({"key": TAINT_NOT_READY, "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": spec.name,
            "labels": dict(spec.labels),
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                **spec.annotations,
            },
        },
        "spec": {
            "podCIDR": spec.pod_cidr,
            "podCIDRs": [spec.pod_cidr],
            **({"taints": taints} if taints else {}),
        },
        "status": {
            "capacity": dict(spec.capacity),
            "allocatable": dict(spec.allocatable),
            "conditions": [condition(t, t == "Ready" and ready, stamp, stamp) for t in CONDITION_ORDER],
            "addresses": [{"type": "InternalIP", "address": spec.address}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
            "nodeInfo": node_info(spec),
            "images": images[:MAX_IMAGES],
            "declaredFeatures": kubelet_declared_features(),
        },
    }


def node_lease(name: str, node_uid: str, now: float) -> Obj:
    """The node's Lease (upstream ``nodelease.newLease``), owned by the Node so it goes when the Node goes."""
    meta: Obj = {"name": name, "namespace": NODE_LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": format_micro_time(now),
        },
    }


def sorted_images(images: list[Obj]) -> list[Obj]:
    """Largest first, at most 50 (upstream ``setters.Images``)."""
    return sorted(images, key=lambda i: -int(i.get("sizeBytes", 0)))[:MAX_IMAGES]


def kubelet_may_set_label(key: str) -> bool:
    """Whether a kubelet may set the label ``key`` on its own Node: NodeRestriction refuses labels in the
    ``kubernetes.io``/``k8s.io`` namespaces unless upstream's ``IsKubeletLabel`` allows them (the well-known
    labels, and the ``kubelet.kubernetes.io``/``node.kubernetes.io`` namespaces); ``node-restriction.kubernetes.io``
    is never the kubelet's. Such labels (e.g. ``node-role.kubernetes.io/control-plane``) are set by an admin, as
    kubeadm's mark-control-plane phase does."""
    return is_kubelet_label(key) or not is_kubernetes_label(key)
