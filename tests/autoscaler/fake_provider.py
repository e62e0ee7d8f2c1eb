"""An in-memory :class:`~kubeplane.autoscaler.provider.CloudProvider` for the core's tests, keeping the contract's
invariants: nodes named ``<group>-<n>`` (never reused), labelled with the group, sizes within bounds. With a
client, new nodes are created in the API (Ready at once: ``provisioning_delay`` 0) and deleted nodes are removed
with the pods bound to them (what the kubelet and pod GC would do)."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from typing import Any

from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, NodeGroupError, NodeGroupSpec
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client


def node_object(
    name: str,
    *,
    cpu: str = "2",
    memory: str = "4Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    ready: bool = True,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": list(taints or [])},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    return node


class FakeProvider:
    def __init__(self, groups: Sequence[NodeGroupSpec], *, client: Client | None = None) -> None:
        self.specs = list(groups)
        self.client = client
        self._nodes: dict[str, list[str]] = {g.name: [] for g in groups}
        self._counter: dict[str, int] = {g.name: 0 for g in groups}
        self.upcoming_counts: dict[str, int] = {g.name: 0 for g in groups}
        self.increases: list[tuple[str, int]] = []
        self.deletions: list[tuple[str, list[str]]] = []

    def _spec(self, group: str) -> NodeGroupSpec:
        for spec in self.specs:
            if spec.name == group:
                return spec
        raise NodeGroupError(f"unknown node group {group!r}")

    # --- CloudProvider -----------------------------------------------------------------------------------

    def node_groups(self) -> Sequence[NodeGroupSpec]:
        return self.specs

    def node_group_for(self, node_name: str) -> str | None:
        for group, names in self._nodes.items():
            if node_name in names:
                return group
        return None

    def target_size(self, group: str) -> int:
        return len(self._nodes[group])

    def nodes(self, group: str) -> list[str]:
        return list(self._nodes[group])

    def upcoming(self, group: str) -> int:
        return self.upcoming_counts[group]

    def template_node(self, group: str) -> dict[str, Any]:
        spec = self._spec(group)
        t = spec.template
        name = f"template-node-for-{group}"
        return node_object(
            name,
            cpu=str(t.get("cpu", "2")),
            memory=str(t.get("memory", "4Gi")),
            labels={**dict(t.get("labels") or {}), NODE_GROUP_LABEL: group},
            taints=copy.deepcopy(list(t.get("taints") or [])),
            extra=dict(t.get("extra") or {}),
        )

    def add_existing(self, group: str, count: int) -> list[dict[str, Any]]:
        """Register ``count`` nodes without an API call (return the objects for the caller to create)."""
        out = []
        for _ in range(count):
            name = f"{group}-{self._counter[group]}"
            self._counter[group] += 1
            self._nodes[group].append(name)
            node = self.template_node(group)
            node["metadata"]["name"] = name
            node["metadata"]["labels"]["kubernetes.io/hostname"] = name
            out.append(node)
        return out

    async def increase_size(self, group: str, delta: int) -> None:
        spec = self._spec(group)
        if delta <= 0 or self.target_size(group) + delta > spec.max_size:
            raise NodeGroupError(f"size increase too large for {group}")
        self.increases.append((group, delta))
        for node in self.add_existing(group, delta):
            if self.client is not None:
                await self.client.create(self.client.resource("nodes"), node)

    async def delete_nodes(self, group: str, names: Sequence[str]) -> None:
        spec = self._spec(group)
        if any(n not in self._nodes[group] for n in names):
            raise NodeGroupError(f"node not in group {group}")
        if self.target_size(group) - len(names) < spec.min_size:
            raise NodeGroupError(f"size decrease too large for {group}")
        self.deletions.append((group, list(names)))
        for name in names:
            self._nodes[group].remove(name)
            if self.client is None:
                continue
            pods = self.client.resource("pods")
            listed = await self.client.list(pods, field_selector=f"spec.nodeName={name}")
            for pod in listed["items"]:
                meta = pod["metadata"]
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(pods, meta["name"], namespace=meta["namespace"], grace_period_seconds=0)
            await self.client.delete(self.client.resource("nodes"), name)
