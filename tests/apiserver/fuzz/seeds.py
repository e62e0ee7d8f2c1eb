"""One valid object per served kind, rich enough that mutations reach many field types.

Every seed passes kubeplane's (and upstream's) validation as it is: the fuzz harness creates them to have targets
for updates, patches, subresources and deletes, and mutates copies of them for its bodies. ``make(kind, name,
namespace)`` returns a fresh copy each call. Pods carry ``app: fuzz`` so the seed PodDisruptionBudget selects
them (evictions then go through the budget accounting).
"""

from __future__ import annotations

import copy
import datetime
from collections.abc import Callable
from typing import Any, Final

from kubeplane.api.resources import ResourceInfo, default_table

Obj = dict[str, Any]

LABELS: Final = {"app": "fuzz", "tier": "backend"}
CONTAINER: Final[Obj] = {
    "name": "c",
    "image": "nginx:1.25",
    "args": ["--port", "8080"],
    "command": ["/bin/sh", "-c"],
    "env": [{"name": "MODE", "value": "fuzz"}],
    "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}},
    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    "imagePullPolicy": "IfNotPresent",
}
POD_SPEC: Final[Obj] = {
    "containers": [CONTAINER],
    "initContainers": [{"name": "init", "image": "busybox:1.36", "command": ["true"]}],
    "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "nodeSelector": {"disk": "ssd"},
    "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            }
        }
    },
    "schedulerName": "default-scheduler",
    "priority": 0,
}
TEMPLATE: Final[Obj] = {"metadata": {"labels": LABELS}, "spec": POD_SPEC}
SELECTOR: Final[Obj] = {"matchLabels": LABELS}
RULES: Final = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]


def _meta(name: str, namespace: str | None) -> Obj:
    meta: Obj = {"name": name, "labels": dict(LABELS), "annotations": {"fuzz/seed": "true"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


# kind -> the object's fields besides apiVersion, kind and metadata
_BODIES: Final[dict[tuple[str, str], Callable[[str | None], Obj]]] = {
    ("", "Namespace"): lambda ns: {"spec": {"finalizers": ["kubernetes"]}},
    ("", "Node"): lambda ns: {
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "podCIDR": "10.0.0.0/24"},
        "status": {
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}],
        },
    },
    ("", "Pod"): lambda ns: {"spec": copy.deepcopy(POD_SPEC)},
    ("", "Event"): lambda ns: {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"},
        "reason": "Fuzz",
        "message": "hello",
        "type": "Normal",
        "count": 1,
        "source": {"component": "fuzz"},
    },
    ("", "ConfigMap"): lambda ns: {"data": {"key": "value", "other": "x"}, "binaryData": {"b": "AAEC"}},
    ("", "Secret"): lambda ns: {"type": "Opaque", "data": {"key": "dmFsdWU="}, "stringData": {"s": "plain"}},
    ("", "Service"): lambda ns: {
        "spec": {
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            "selector": dict(LABELS),
            "type": "ClusterIP",
            "sessionAffinity": "None",
        }
    },
    ("", "ServiceAccount"): lambda ns: {"automountServiceAccountToken": False, "secrets": [{"name": "s"}]},
    ("", "Endpoints"): lambda ns: {
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]
    },
    ("", "PersistentVolume"): lambda ns: {
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"},
            "persistentVolumeReclaimPolicy": "Retain",
        }
    },
    ("", "PersistentVolumeClaim"): lambda ns: {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    ("", "ReplicationController"): lambda ns: {
        "spec": {"replicas": 2, "selector": dict(LABELS), "template": copy.deepcopy(TEMPLATE)}
    },
    ("apps", "Deployment"): lambda ns: {
        "spec": {
            "replicas": 2,
            "selector": copy.deepcopy(SELECTOR),
            "template": copy.deepcopy(TEMPLATE),
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "revisionHistoryLimit": 5,
        }
    },
    ("apps", "ReplicaSet"): lambda ns: {
        "spec": {"replicas": 2, "selector": copy.deepcopy(SELECTOR), "template": copy.deepcopy(TEMPLATE)}
    },
    ("apps", "DaemonSet"): lambda ns: {
        "spec": {"selector": copy.deepcopy(SELECTOR), "template": copy.deepcopy(TEMPLATE)}
    },
    ("apps", "StatefulSet"): lambda ns: {
        "spec": {
            "replicas": 1,
            "serviceName": "svc",
            "selector": copy.deepcopy(SELECTOR),
            "template": copy.deepcopy(TEMPLATE),
        }
    },
    ("apps", "ControllerRevision"): lambda ns: {"revision": 2, "data": {"spec": {"replicas": 1}}},
    ("batch", "Job"): lambda ns: {
        "spec": {
            "completions": 2,
            "parallelism": 1,
            "backoffLimit": 3,
            "template": {**copy.deepcopy(TEMPLATE), "spec": {**copy.deepcopy(POD_SPEC), "restartPolicy": "Never"}},
        }
    },
    ("batch", "CronJob"): lambda ns: {
        "spec": {
            "schedule": "*/5 * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"template": {"spec": {**copy.deepcopy(POD_SPEC), "restartPolicy": "OnFailure"}}}},
        }
    },
    ("coordination.k8s.io", "Lease"): lambda ns: {"spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}},
    ("discovery.k8s.io", "EndpointSlice"): lambda ns: {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "nodeName": "n1"}],
        "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
    },
    ("scheduling.k8s.io", "PriorityClass"): lambda ns: {"value": 1000, "description": "fuzz"},
    ("scheduling.k8s.io", "Workload"): lambda ns: {
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
        }
    },
    ("scheduling.k8s.io", "PodGroup"): lambda ns: {
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "workers"},
            "schedulingPolicy": {"gang": {"minCount": 4}},
        }
    },
    ("scheduling.k8s.io", "CompositePodGroup"): lambda ns: {
        "spec": {
            "workloadRef": {"workloadName": "train", "templateName": "racks"},
            "schedulingPolicy": {"gang": {"minGroupCount": 1}},
        }
    },
    ("policy", "PodDisruptionBudget"): lambda ns: {"spec": {"minAvailable": 1, "selector": copy.deepcopy(SELECTOR)}},
    ("storage.k8s.io", "StorageClass"): lambda ns: {
        "provisioner": "example.com/disk",
        "parameters": {"type": "ssd"},
        "reclaimPolicy": "Delete",
    },
    ("storage.k8s.io", "CSINode"): lambda ns: {"spec": {"drivers": [{"name": "example.com", "nodeID": "n1"}]}},
    ("storage.k8s.io", "CSIDriver"): lambda ns: {"spec": {"attachRequired": True, "storageCapacity": True}},
    ("storage.k8s.io", "CSIStorageCapacity"): lambda ns: {
        "storageClassName": "standard",
        "capacity": "10Gi",
        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": "n1"}},
    },
    ("storage.k8s.io", "VolumeAttachment"): lambda ns: {
        "spec": {"attacher": "example.com", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}}
    },
    ("resource.k8s.io", "DeviceClass"): lambda ns: {
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}
    },
    ("resource.k8s.io", "ResourceClaim"): lambda ns: {
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    },
    ("resource.k8s.io", "ResourceClaimTemplate"): lambda ns: {
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        }
    },
    ("resource.k8s.io", "ResourceSlice"): lambda ns: {
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}],
        }
    },
    ("rbac.authorization.k8s.io", "Role"): lambda ns: {"rules": copy.deepcopy(RULES)},
    ("rbac.authorization.k8s.io", "ClusterRole"): lambda ns: {"rules": copy.deepcopy(RULES)},
    ("rbac.authorization.k8s.io", "RoleBinding"): lambda ns: {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): lambda ns: {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
        "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}],
    },
    ("events.k8s.io", "Event"): lambda ns: {
        "eventTime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingController": "fuzz.example.com/c",
        "reportingInstance": "fuzz-1",
        "action": "Fuzz",
        "reason": "Fuzz",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": ns, "apiVersion": "v1"},
        "note": "hello",
    },
    ("networking.k8s.io", "ServiceCIDR"): lambda ns: {"spec": {"cidrs": ["10.200.0.0/24"]}},
}


NAMED_BY_SPEC: Final = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})
"""Groups whose objects must be named from their spec (a CRD ``<plural>.<group>``, an APIService
``<version>.<group>``), which the fuzzer's generated names cannot follow; tests/apiserver/test_crds.py covers
them."""
NAMED_BY_VALUE: Final = frozenset({("networking.k8s.io", "IPAddress")})
"""Kinds named by their value (an IPAddress by its canonical IP, and owned by the Service allocator);
tests/apiserver/test_servicecidrs.py covers them."""


def served() -> list[ResourceInfo]:
    """Every resource of the default table, in table order (core events and events.k8s.io events both), but
    those of :data:`NAMED_BY_SPEC` and :data:`NAMED_BY_VALUE`."""
    return [
        info
        for info in default_table()
        if info.group not in NAMED_BY_SPEC and (info.group, info.kind) not in NAMED_BY_VALUE
    ]


def has_seed(info: ResourceInfo) -> bool:
    return (info.group, info.kind) in _BODIES


def make(info: ResourceInfo, name: str, namespace: str | None) -> Obj:
    """A fresh valid object of ``info``'s kind named ``name`` (in ``namespace`` when the kind is namespaced)."""
    ns = namespace if info.namespaced else None
    return {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "metadata": _meta(name, ns),
        **_BODIES[(info.group, info.kind)](ns),
    }


def binding(pod: str, namespace: str, node: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def eviction(pod: str, namespace: str) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }


def scale(name: str, namespace: str, replicas: int) -> Obj:
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas},
    }


def delete_options() -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Background",
        "preconditions": {},
    }
