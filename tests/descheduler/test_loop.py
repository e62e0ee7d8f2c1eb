"""The descheduler's loop against an in-process API server (LocalClient): a pass evicts through the Eviction API
(the pod is marked for deletion), records upstream's Event (reason: the plugin, action ``Descheduled``, message
``pod eviction from <node> node by sigs.k8s.io/descheduler``) and counts ``descheduler_pods_evicted``; dry-run
sends nothing; a cluster of one node is left alone; limits hold per pass; a named priority threshold is read from
its PriorityClass. Time is the injected FakeClock."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from kubeplane.descheduler.loop import Descheduler
from kubeplane.descheduler.policy import PolicyError, parse_policy
from tests.descheduler.builders import node, pod, taint

POLICY: dict[str, Any] = {
    "apiVersion": "descheduler/v1alpha2",
    "kind": "DeschedulerPolicy",
    "profiles": [
        {
            "name": "p",
            "pluginConfig": [{"name": "RemovePodsViolatingNodeTaints"}],
            "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}},
        }
    ],
}


def _policy(**extra: Any) -> Any:
    return parse_policy({**POLICY, **extra})


def _api_pod(name: str, node_name: str) -> dict[str, Any]:
    obj = pod(name, node_name=node_name)
    obj["metadata"] = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "creationTimestamp")}
    obj["status"] = {}
    return obj


async def _cluster(nodes: Sequence[dict[str, Any]], pods: Sequence[dict[str, Any]]) -> LocalClient:
    client = await LocalClient.in_memory()
    for spec in nodes:
        body = {"apiVersion": "v1", "kind": "Node", **spec}
        body["status"] = {k: v for k, v in spec["status"].items() if k != "conditions"}
        await client.create(client.resource("nodes"), body)
    for p in pods:
        await client.create(client.resource("pods"), {"apiVersion": "v1", "kind": "Pod", **p}, namespace="default")
    return client


async def _pass(client: LocalClient, policy: Any, *, dry_run: bool = False) -> tuple[Descheduler, CollectorRegistry]:
    registry = CollectorRegistry()
    d = Descheduler(client, policy=policy, clock=FakeClock(), rng=random.Random(1), interval=0, dry_run=dry_run,
                    metrics_registry=registry)  # fmt: skip
    try:
        await d.start()
        await d.run()
        await d.recorder.flush()
    finally:
        await d.stop()
    return d, registry


def _deleting(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p["metadata"].get("deletionTimestamp"))


NODES = [node("n1", taints=[taint("k", "v")]), node("n2")]


def test_a_pass_evicts_through_the_eviction_api_with_event_and_metric() -> None:
    async def main() -> None:
        client = await _cluster(NODES, [_api_pod("a", "n1"), _api_pod("b", "n2")])
        d, registry = await _pass(client, _policy())
        pods = (await client.list(client.resource("pods"), namespace="default"))["items"]
        assert _deleting(pods) == ["a"]
        assert [(e.name, e.node, e.strategy, e.profile) for e in d.evicted] == [
            ("a", "n1", "RemovePodsViolatingNodeTaints", "p")
        ]
        events = (await client.list(client.resource("events"), namespace="default"))["items"]
        [event] = [e for e in events if e["involvedObject"]["name"] == "a"]
        assert (event["type"], event["reason"], event["action"]) == (
            "Normal",
            "RemovePodsViolatingNodeTaints",
            "Descheduled",
        )
        assert event["message"] == "pod eviction from n1 node by sigs.k8s.io/descheduler"
        assert event["reportingComponent"] == "sigs.k8s.io.descheduler"
        # an events.k8s.io/v1 Event (upstream's EventBroadcasterAdapter): eventTime, no core source
        assert event["eventTime"]
        assert not event.get("source")
        assert event["reportingInstance"].startswith("sigs.k8s.io.descheduler-")
        text = generate_latest(registry).decode()
        labels = 'namespace="default",node="n1",profile="p",result="success",strategy="RemovePodsViolatingNodeTaints"'
        assert f"descheduler_pods_evicted{{{labels}}} 1.0" in text
        assert f"descheduler_pods_evicted_total{{{labels}}} 1.0" in text
        await client.close()

    asyncio.run(main())


def test_dry_run_counts_but_sends_nothing() -> None:
    async def main() -> None:
        client = await _cluster(NODES, [_api_pod("a", "n1")])
        d, _ = await _pass(client, _policy(), dry_run=True)
        assert [e.name for e in d.evicted] == ["a"]
        assert _deleting((await client.list(client.resource("pods"), namespace="default"))["items"]) == []
        events = (await client.list(client.resource("events"), namespace="default"))["items"]
        assert not [e for e in events if e.get("action") == "Descheduled"]
        await client.close()

    asyncio.run(main())


def test_one_node_cluster_is_left_alone() -> None:
    """Upstream runProfiles: 'The cluster size is 0 or 1 meaning eviction causes service disruption'."""

    async def main() -> None:
        client = await _cluster(NODES[:1], [_api_pod("a", "n1")])
        d, _ = await _pass(client, _policy())
        assert d.evicted == []
        await client.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    ("extra", "evicted"),
    [({"maxNoOfPodsToEvictTotal": 1}, 1), ({"maxNoOfPodsToEvictPerNode": 2}, 2), ({"nodeSelector": "pool=x"}, 0),
     ({}, 3)],
    ids=["maxNoOfPodsToEvictTotal", "maxNoOfPodsToEvictPerNode", "nodeSelector-matches-no-node", "no-limits"],
)  # fmt: skip
def test_policy_limits_and_node_selector(extra: dict[str, Any], evicted: int) -> None:
    async def main() -> None:
        client = await _cluster(NODES, [_api_pod(n, "n1") for n in ("a", "b", "c")])
        d, _ = await _pass(client, _policy(**extra))
        assert len(d.evicted) == evicted
        await client.close()

    asyncio.run(main())


def test_named_priority_threshold_is_read_from_its_priority_class() -> None:
    policy = {
        **POLICY,
        "profiles": [{**POLICY["profiles"][0], "pluginConfig": [
            {"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "missing"}}},
            {"name": "RemovePodsViolatingNodeTaints"}]}],
    }  # fmt: skip

    async def main() -> None:
        client = await _cluster(NODES, [])
        with pytest.raises(PolicyError, match="unable to get priority value from the priority class"):
            await _pass(client, parse_policy(policy))
        await client.create(
            client.resource("priorityclasses"),
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "missing"},
             "value": 1000},
        )  # fmt: skip
        d = Descheduler(client, policy=parse_policy(policy), clock=FakeClock(), rng=random.Random(1), interval=0,
                        metrics_registry=CollectorRegistry())  # fmt: skip
        await d.start()
        assert d._thresholds == {"p": 1000}
        await d.stop()
        await client.close()

    asyncio.run(main())
