"""End to end over the local transport, the seeds' inter-pod affinity scenarios (issue 7's acceptance list,
without preemption): the seeds' 3-node cluster of test_e2e_local plus a `kgc` topology label."""

from __future__ import annotations

from typing import Any

from kubeplane.client.interface import Obj
from tests.scheduler.test_e2e_local import Cluster, cluster, pod

__all__ = ["cluster"]  # the fixture, re-exported for pytest


def _term(key: str, values: list[str], topology_key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
        "topologyKey": topology_key,
    }


def labelled(name: str, labels: dict[str, str], **spec: Any) -> Obj:
    obj = pod(name, **spec)
    obj["metadata"]["labels"] = labels
    return obj


async def _label_nodes(c: Cluster, labels: dict[str, dict[str, str]]) -> None:
    for name, extra in labels.items():
        node = await c.client.get(c.nodes, name)
        node["metadata"]["labels"].update(extra)
        await c.client.update(c.nodes, node)


async def test_pod_affinity_follows_the_domain_of_app_myapp01(cluster: Cluster) -> None:
    await _label_nodes(cluster, {"node01": {"kgc": "a"}, "node02": {"kgc": "b"}})
    await cluster.create(labelled("myapp01", {"app": "myapp01"}, nodeSelector={"kubernetes.io/hostname": "node02"}))
    assert await cluster.node_of("myapp01") == "node02"
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("app", ["myapp01"], "kgc")]}}
    await cluster.create(labelled("follower", {"app": "follower"}, affinity=affinity))
    assert await cluster.node_of("follower") == "node02"


async def test_required_anti_affinity_on_hostname_leaves_the_extra_replica_pending(cluster: Cluster) -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term("app", ["web"], "kubernetes.io/hostname")]
        }
    }
    tolerate = [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}]
    for i in range(3):
        await cluster.create(labelled(f"web-{i}", {"app": "web"}, affinity=anti, tolerations=tolerate))
        await cluster.node_of(f"web-{i}")
    placed = {await cluster.node_of(f"web-{i}") for i in range(3)}
    assert placed == {"master", "node01", "node02"}
    await cluster.create(labelled("web-3", {"app": "web"}, affinity=anti, tolerations=tolerate))
    message = await cluster.failed_message("web-3")
    assert message == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.."
    )


async def test_anti_affinity_on_kgc_waits_until_node02_is_relabelled(cluster: Cluster) -> None:
    await _label_nodes(cluster, {"node01": {"kgc": "a"}, "node02": {"kgc": "a"}})
    await cluster.create(labelled("first", {"app": "db"}, nodeSelector={"kubernetes.io/hostname": "node01"}))
    assert await cluster.node_of("first") == "node01"
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term("app", ["db"], "kgc")]}}
    await cluster.create(labelled("second", {"app": "db"}, affinity=anti))
    message = await cluster.failed_message("second")
    assert message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match pod anti-affinity rules. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.."
    )
    await _label_nodes(cluster, {"node02": {"kgc": "b"}})
    assert await cluster.node_of("second") == "node02"


async def test_preferred_anti_affinity_of_weight_100_steers_away(cluster: Cluster) -> None:
    await cluster.create(labelled("cache", {"app": "cache"}, nodeSelector={"kubernetes.io/hostname": "node01"}))
    assert await cluster.node_of("cache") == "node01"
    preferred = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": _term("app", ["cache"], "kubernetes.io/hostname")}
            ]
        }
    }
    for i in range(3):
        await cluster.create(labelled(f"client-{i}", {"app": "client"}, affinity=preferred))
        assert await cluster.node_of(f"client-{i}") == "node02"
