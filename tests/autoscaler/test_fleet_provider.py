"""The simulated cloud (``kubeplane.autoscaler.fleet_provider``) on a kubelet fleet and a fake clock.

Upstream behaviour pinned: cloud providers' ``NodeGroup.IncreaseSize`` ("size increase must be positive", "size
increase too large - desired:N max:M", GCE MIG / AWS ASG), ``DeleteNodes`` ("min size reached, nodes will not be
deleted", "<node> belongs to a different ... than <group>"), a booting node registering NotReady with the
``node.kubernetes.io/not-ready:NoSchedule`` taint (TaintNodesByCondition admission) and the template node
``template-node-for-<group>`` (``SanitizedTemplateNodeInfoFromNodeGroup``).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from kubeplane.api.views import NodeView
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.autoscaler.fleet_provider import DELETED, DELETING, READY, REGISTERED, FleetProvider, fleet_provider
from kubeplane.autoscaler.nodegroups import parse_node_groups
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, CloudProvider, NodeGroupError
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.fleet import FLEET_USER, FleetOptions, node_groups, node_user_name
from tests.kubelet.harness import Env, running_fleet

GROUPS = parse_node_groups(
    [
        {"name": "small", "minSize": 1, "maxSize": 3, "pricePerHour": 1.0, "provisioningDelay": "2m",
         "deletionDelay": "30s", "template": {"capacity": {"cpu": "2"}, "labels": {"pool": "small"},
                                              "taints": ["dedicated=batch:NoSchedule"]}},
        {"name": "big", "minSize": 0, "maxSize": 2, "initialSize": 0, "template": {"capacity": {"cpu": "16"}}},
    ]
)  # fmt: skip


@pytest.fixture
async def env() -> AsyncIterator[tuple[Env, FleetProvider]]:
    async with running_fleet([{"name": "static"}], FleetOptions()) as started:
        provider = FleetProvider(started.fleet, GROUPS, clock=started.clock)
        await provider.start()
        try:
            yield started, provider
        finally:
            await provider.stop()


async def _ready(env: Env, name: str) -> bool:
    return NodeView(await env.client.get(env.nodes, name)).is_ready


async def test_initial_nodes_are_ready_at_once_and_labelled(env: tuple[Env, FleetProvider]) -> None:
    e, provider = env
    cloud: CloudProvider = provider  # mypy checks FleetProvider against the protocol
    assert cloud.node_groups() == list(GROUPS)
    assert [g.name for g in provider.node_groups()] == ["small", "big"]
    assert provider.nodes("small") == ["small-0"]
    assert provider.nodes("big") == []
    node = await e.client.get(e.nodes, "small-0")
    assert node["metadata"]["labels"][NODE_GROUP_LABEL] == "small"
    assert node["metadata"]["labels"]["pool"] == "small"
    assert NodeView(node).is_ready
    assert provider.node_group_for("small-0") == "small"
    assert provider.node_group_for("static") is None
    assert [(c.event, c.node, c.size) for c in provider.history] == [(REGISTERED, "small-0", 1), (READY, "small-0", 1)]


async def test_scale_up_registers_not_ready_then_ready_after_the_delay(env: tuple[Env, FleetProvider]) -> None:
    e, provider = env
    await provider.increase_size("small", 2)
    assert provider.target_size("small") == 3
    assert provider.upcoming("small") == 2
    assert provider.nodes("small") == ["small-0", "small-1", "small-2"]
    node = await e.client.get(e.nodes, "small-1")
    assert not NodeView(node).is_ready
    assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in node["spec"]["taints"]
    await e.clock.advance(119)
    assert not await _ready(e, "small-1")
    await e.clock.advance(1)
    await e.until(lambda: _ready(e, "small-2"), "small-2 Ready")
    assert await _ready(e, "small-1")
    assert provider.upcoming("small") == 0
    ready_at = [c.t for c in provider.history if c.event == READY and c.node == "small-1"]
    assert ready_at == [120.0]


@pytest.mark.parametrize(
    ("group", "delta", "message"),
    [
        ("small", 0, "size increase must be positive"),
        ("small", 3, "size increase too large - desired:4 max:3"),
        ("nope", 1, "node group nope not found"),
    ],
    ids=["increase-must-be-positive", "increase-beyond-max-size", "unknown-group"],
)
async def test_increase_refusals_change_nothing(
    env: tuple[Env, FleetProvider], group: str, delta: int, message: str
) -> None:
    e, provider = env
    with pytest.raises(NodeGroupError, match=message):
        await provider.increase_size(group, delta)
    assert provider.target_size("small") == 1
    assert "small-1" not in e.fleet.nodes


async def test_delete_stops_the_kubelet_and_deletes_the_node_after_the_delay(env: tuple[Env, FleetProvider]) -> None:
    e, provider = env
    await provider.increase_size("small", 1)
    await e.clock.advance(120)
    await provider.delete_nodes("small", ["small-1"])
    assert provider.target_size("small") == 1
    assert provider.nodes("small") == ["small-0"]
    assert not e.fleet.nodes["small-1"].running
    await e.clock.advance(29)
    await e.client.get(e.nodes, "small-1")  # still there
    await e.clock.advance(1)
    with pytest.raises(NotFoundError):
        await e.client.get(e.nodes, "small-1")
    events = [(c.t, c.event, c.size) for c in provider.history if c.node == "small-1"]
    assert events == [(0.0, REGISTERED, 2), (120.0, READY, 2), (120.0, DELETING, 2), (150.0, DELETED, 1)]
    # small-0 from 0 to 150 s, small-1 from 0 (registration) to 150 s (deletion)
    assert provider.node_seconds("small") == pytest.approx(300.0)
    assert (provider.added("small"), provider.removed("small")) == (1, 1)
    await provider.increase_size("small", 1)
    assert provider.nodes("small") == ["small-0", "small-2"]  # names are never reused


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["small-0"], "min size reached, nodes will not be deleted"),
        (["static"], "static belongs to a different node group than small"),
    ],
    ids=["delete-below-min-size", "delete-foreign-node"],
)
async def test_delete_refusals_change_nothing(env: tuple[Env, FleetProvider], names: list[str], message: str) -> None:
    e, provider = env
    with pytest.raises(NodeGroupError, match=message):
        await provider.delete_nodes("small", names)
    assert provider.nodes("small") == ["small-0"]
    assert e.fleet.nodes["small-0"].running


async def test_deleting_a_booting_node_means_it_never_becomes_ready(env: tuple[Env, FleetProvider]) -> None:
    e, provider = env
    await provider.increase_size("small", 1)
    await provider.delete_nodes("small", ["small-1"])
    await e.clock.advance(200)
    assert [c.event for c in provider.history if c.node == "small-1"] == [REGISTERED, DELETING, DELETED]
    assert provider.node_seconds("small", until=200) == pytest.approx(200 + 30)


async def test_template_node_is_the_next_node_once_ready(env: tuple[Env, FleetProvider]) -> None:
    _, provider = env
    node = provider.template_node("small")
    assert node["metadata"]["name"] == "template-node-for-small"
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "template-node-for-small"
    assert (labels[NODE_GROUP_LABEL], labels["pool"]) == ("small", "small")
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["cpu"] == "2"
    assert NodeView(node).is_ready


async def test_a_restart_takes_back_the_groups_existing_nodes() -> None:
    async with running_fleet([{"name": "static"}], FleetOptions()) as e:
        provider = FleetProvider(e.fleet, GROUPS, clock=e.clock)
        await provider.start(existing=["static", "small-2", "small-5", "big-x", "other-1"])
        try:
            assert provider.nodes("small") == ["small-2", "small-5"]  # initialSize 1 is met already
            assert provider.nodes("big") == []
            assert await _ready(e, "small-5")
            await provider.increase_size("small", 1)
            assert provider.nodes("small")[-1] == "small-6"
        finally:
            await provider.stop()


async def test_the_standalone_factory_runs_its_own_fleet_and_takes_back_nodes() -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    try:
        async with fleet_provider(client, GROUPS, clock=clock, rng=random.Random(1)) as provider:
            assert provider.nodes("small") == ["small-0"]
            await provider.increase_size("small", 1)
            assert provider.fleet.nodes["small-1"].spec.csi_drivers  # the default CSI driver runs
        names = [n["metadata"]["name"] for n in (await client.list(client.resource("nodes")))["items"]]
        assert sorted(names) == ["small-0", "small-1"]
        async with fleet_provider(client, GROUPS, clock=clock, rng=random.Random(1)) as again:  # a restart
            assert again.nodes("small") == ["small-0", "small-1"]
            assert again.node_group_for("small-1") == "small"
    finally:
        await client.close()


async def test_booting_nodes_register_and_turn_ready_as_their_own_kubelet_identity() -> None:
    """NodeRestriction and the Node authorizer accept a booting node's registration (the not-ready taint included)
    and its Ready report when each node writes as ``system:node:<name>``; the admin client deletes Nodes."""
    clock = FakeClock()
    base = await LocalClient.in_memory(now=clock.now)
    fleet_user = UserInfo(FLEET_USER, groups=("system:authenticated",))
    try:
        async with fleet_provider(
            base.as_user(fleet_user),
            GROUPS,
            clock=clock,
            rng=random.Random(1),
            node_client=lambda name: base.as_user(UserInfo(node_user_name(name), groups=node_groups())),
            admin_client=base,
        ) as provider:
            await provider.increase_size("small", 1)
            node = await base.get(base.resource("nodes"), "small-1")
            assert {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"} in node["spec"]["taints"]
            await clock.advance(120)
            env = Env(base, clock, provider.fleet)
            await env.until(lambda: _ready(env, "small-1"), "small-1 Ready")
            await provider.delete_nodes("small", ["small-1"])
            await clock.advance(30)
            await env.until(lambda: _gone(env, "small-1"), "small-1 deleted")
    finally:
        await base.close()


async def _gone(env: Env, name: str) -> bool:
    try:
        await env.client.get(env.nodes, name)
    except NotFoundError:
        return True
    return False
