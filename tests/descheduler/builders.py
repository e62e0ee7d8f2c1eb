"""Test objects as upstream's ``test.BuildTestPod`` / ``test.BuildTestNode`` build them, and a dry-run harness
that runs one plugin over them (the PodEvictor in dry-run mode never calls the API, so a pass needs no server)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, cast

from prometheus_client import CollectorRegistry

from kubeplane.api.meta import format_time
from kubeplane.client.interface import Client
from kubeplane.descheduler.evictor import DefaultEvictor, DefaultEvictorArgs
from kubeplane.descheduler.framework import ClusterView, Handle, PodEvictor
from kubeplane.descheduler.podutil import SYSTEM_CRITICAL_PRIORITY, is_node_ready
from kubeplane.metrics.descheduler import descheduler_metrics

NOW = 1_800_000_000.0


def node(
    name: str,
    cpu_m: int = 2000,
    memory: int = 3000,
    pods: int = 10,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, Any]] = (),
    unschedulable: bool = False,
    ready: bool = True,
) -> dict[str, Any]:
    alloc = {"cpu": f"{cpu_m}m", "memory": str(memory), "pods": str(pods)}
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"taints": list(taints), **({"unschedulable": True} if unschedulable else {})},
        "status": {
            "capacity": dict(alloc),
            "allocatable": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    cpu_m: int = 100,
    memory: int = 0,
    node_name: str = "",
    *,
    namespace: str = "default",
    owner: str | None = "ReplicaSet",
    owner_name: str = "rs",
    priority: int | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    phase: str = "Running",
    tolerations: Sequence[Mapping[str, Any]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Mapping[str, Any] | None = None,
    volumes: Sequence[Mapping[str, Any]] = (),
    age: float = 3600.0,
    image: str = "nginx",
    **spec: Any,
) -> dict[str, Any]:
    requests: dict[str, str] = {}
    if cpu_m:
        requests["cpu"] = f"{cpu_m}m"
    if memory:
        requests["memory"] = str(memory)
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "creationTimestamp": format_time(NOW - age),
    }
    if owner is not None:
        meta["ownerReferences"] = [{"kind": owner, "name": owner_name, "uid": f"uid-{owner}-{owner_name}"}]
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": image, "resources": {"requests": requests}}],
        "nodeName": node_name,
        "tolerations": list(tolerations),
        "volumes": list(volumes),
        **spec,
    }
    if priority is not None:
        body["priority"] = priority
    if node_selector is not None:
        body["nodeSelector"] = dict(node_selector)
    if affinity is not None:
        body["affinity"] = dict(affinity)
    return {
        "metadata": meta,
        "spec": body,
        "status": {"phase": phase, "startTime": format_time(NOW - age)},
    }


def taint(key: str, value: str = "", effect: str = "NoSchedule") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str = "", effect: str = "NoSchedule", operator: str = "Equal") -> dict[str, Any]:
    return {"key": key, "value": value, "effect": effect, "operator": operator}


class Harness:
    """One profile's plugin, a dry-run PodEvictor and the view of ``nodes``/``pods``."""

    def __init__(
        self,
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]],
        *,
        evictor_args: DefaultEvictorArgs | None = None,
        max_per_node: int | None = None,
        max_per_namespace: int | None = None,
        max_total: int | None = None,
        pdbs: Sequence[Mapping[str, Any]] = (),
        threshold: int = SYSTEM_CRITICAL_PRIORITY,
    ) -> None:
        self.registry = CollectorRegistry()
        self.pod_evictor = PodEvictor(
            cast(Client, None),
            metrics=descheduler_metrics(self.registry),
            recorder=None,
            dry_run=True,
            max_per_node=max_per_node,
            max_per_namespace=max_per_namespace,
            max_total=max_total,
        )
        self.nodes = [n for n in nodes if is_node_ready(n)]
        self.view = ClusterView(nodes=self.nodes, pods=list(pods), pdbs=list(pdbs), now=NOW)
        self.handle = Handle(
            profile="test",
            evictors=[DefaultEvictor(evictor_args or DefaultEvictorArgs())],
            pod_evictor=self.pod_evictor,
            view=self.view,
            threshold=threshold,
        )

    def run(self, plugin_cls: Any, args: Any) -> list[str]:
        """Run the plugin's Deschedule or Balance once; the names of the evicted pods, in eviction order."""
        plugin = plugin_cls(args, self.handle)
        point = "deschedule" if hasattr(plugin, "deschedule") else "balance"
        asyncio.run(getattr(plugin, point)(self.nodes))
        return [e.name for e in self.pod_evictor.evicted]
