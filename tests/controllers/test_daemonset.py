"""The DaemonSet controller: placement predicates and helpers (tables after upstream's daemon tests), and end to
end over the in-process API server with the test playing scheduler and kubelet (binding and readiness)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.errors import NotFoundError
from kubeplane.controllers.controller_utils import compute_hash
from kubeplane.controllers.daemonset import DaemonSetController, _should_ignore_node_update
from kubeplane.controllers.daemonset_update import rolling_update_plan, updated_desired_node_counts
from kubeplane.controllers.daemonset_util import (
    HASH_LABEL,
    add_daemon_pod_tolerations,
    find_updated_pods_on_node,
    node_should_run_daemon_pod,
    pod_sort_key,
    replace_node_name_affinity,
    target_node_name,
)
from tests.controllers import harness
from tests.controllers.harness import eventually

NS = "default"
LABELS = {"app": "agent"}
MASTER_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}

# --- pure logic --------------------------------------------------------------------------------------------


def _node(
    name: str, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    node: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    if taints:
        node["spec"]["taints"] = taints
    return node


def _ds(**pod_spec: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "c", "image": "agent:1"}], **pod_spec}
    return {
        "metadata": {"name": "agent", "namespace": NS, "uid": "ds-uid"},
        "spec": {"selector": {"matchLabels": LABELS}, "template": {"metadata": {"labels": LABELS}, "spec": spec}},
    }


@pytest.mark.parametrize(
    ("node", "ds", "want"),
    [
        (_node("n"), _ds(), (True, True)),
        (_node("n", {"disk": "ssd"}), _ds(nodeSelector={"disk": "ssd"}), (True, True)),
        (_node("n", {"disk": "hdd"}), _ds(nodeSelector={"disk": "ssd"}), (False, False)),
        (_node("n"), _ds(nodeName="other"), (False, False)),
        (_node("n", taints=[MASTER_TAINT]), _ds(), (False, True)),  # NoSchedule: keep a running pod
        (_node("n", taints=[{"key": "k", "effect": "NoExecute"}]), _ds(), (False, False)),
        (_node("n", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), _ds(), (True, True)),
        (
            _node("n", taints=[MASTER_TAINT]),
            _ds(tolerations=[{"key": MASTER_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}]),
            (True, True),
        ),
        # daemon pods tolerate node-condition taints by default
        (_node("n", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]), _ds(), (True, True)),
        (_node("n", taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]), _ds(), (True, True)),
        (
            _node("n", taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
            _ds(),
            (False, True),
        ),
        (
            _node("n", taints=[{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
            _ds(hostNetwork=True),
            (True, True),
        ),
        (
            _node("n", {"zone": "a"}),
            _ds(
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                            ]
                        }
                    }
                }
            ),
            (False, False),
        ),
    ],
)
def test_node_should_run_daemon_pod(node: dict[str, Any], ds: dict[str, Any], want: tuple[bool, bool]) -> None:
    assert node_should_run_daemon_pod(node, ds) == want


def test_daemon_tolerations_are_added_once() -> None:
    spec: dict[str, Any] = {
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}]
    }
    add_daemon_pod_tolerations(spec)
    add_daemon_pod_tolerations(spec)
    keys = [(t["key"], t["effect"]) for t in spec["tolerations"]]
    assert keys == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert all("tolerationSeconds" not in t for t in spec["tolerations"])


def test_node_name_affinity_replaces_required_terms_and_is_read_back() -> None:
    affinity: dict[str, Any] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
        }
    }
    out = replace_node_name_affinity(affinity, "node-7")
    assert out["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]}]
    }
    assert out["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1, "preference": {}}]
    assert affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0] == {
        "matchExpressions": [{"key": "a", "operator": "Exists"}]
    }  # the input is not changed
    assert target_node_name({"metadata": {}, "spec": {"affinity": out}}) == "node-7"
    assert target_node_name({"metadata": {}, "spec": {"nodeName": "bound", "affinity": out}}) == "bound"


def test_hash_follows_the_template_and_collision_count() -> None:
    template = _ds()["spec"]["template"]
    h = compute_hash(template, None)
    assert h == compute_hash(template, None)
    assert h != compute_hash(template, 1)
    changed = {**template, "spec": {"containers": [{"name": "c", "image": "agent:2"}]}}
    assert h != compute_hash(changed, None)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_pod_order_and_updated_pods_on_node() -> None:
    def pod(name: str, created: str, node: str = "", hash_: str = "old", deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "creationTimestamp": created, "labels": {HASH_LABEL: hash_}}
        if deleting:
            meta["deletionTimestamp"] = created
        return {"metadata": meta, "spec": {"nodeName": node}}

    pods = [
        pod("c", "2027-01-01T00:00:02Z", "n"),
        pod("a", "2027-01-01T00:00:01Z"),
        pod("b", "2027-01-01T00:00:03Z", "n"),
    ]
    assert [p["metadata"]["name"] for p in sorted(pods, key=pod_sort_key)] == ["c", "b", "a"]  # bound first
    new, old, ok = find_updated_pods_on_node([pod("x", "t", hash_="new"), pod("y", "t")], "new", None)
    assert ok
    assert new is not None
    assert old is not None
    assert find_updated_pods_on_node([pod("x", "t"), pod("y", "t")], "new", None)[2] is False
    new, old, ok = find_updated_pods_on_node([pod("x", "t"), pod("y", "t", deleting=True)], "new", None)
    assert ok
    assert new is None
    assert old is not None


# --- end to end --------------------------------------------------------------------------------------------


Env = harness.Env[DaemonSetController]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(DaemonSetController) as e:
        yield e


async def add_node(env: Env, name: str, labels: dict[str, str] | None = None, taints: list[Any] | None = None) -> None:
    await env.client.create(env.res("nodes"), _node(name, labels, taints))


async def add_ds(env: Env, **spec: Any) -> dict[str, Any]:
    body = _ds(**spec.pop("pod_spec", {}))
    del body["metadata"]["uid"], body["metadata"]["namespace"]
    body["spec"].update(spec)
    return await env.client.create(env.res("daemonsets"), body, namespace=NS)


async def pods(env: Env) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await env.client.list(env.res("pods"), namespace=NS))["items"]
    return items


async def pods_by_target(env: Env) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in await pods(env):
        out.setdefault(target_node_name(pod), []).append(pod)
    return out


async def wait_for_nodes(env: Env, want: set[str]) -> dict[str, list[dict[str, Any]]]:
    seen: dict[str, list[dict[str, Any]]] = {}

    async def check() -> bool:
        nonlocal seen
        seen = await pods_by_target(env)
        return set(seen) == want and all(len(v) == 1 for v in seen.values())

    await eventually(check, what=f"one pod on each of {sorted(want)}")
    return seen


async def play_kubelet(env: Env, *, make_ready: bool = True) -> None:
    """One pass of scheduler + kubelet: finish deletions, bind unbound pods to their target, report Ready."""
    for pod in await pods(env):
        name = pod["metadata"]["name"]
        try:
            if pod["metadata"].get("deletionTimestamp"):
                await env.client.delete(env.res("pods"), name, namespace=NS, grace_period_seconds=0)
                continue
            if not pod["spec"].get("nodeName"):
                binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": target_node_name(pod)}}
                await env.client.create(env.res("pods"), binding, namespace=NS, subresource="binding", name=name)
            if make_ready and not _ready(pod):
                current = await env.client.get(env.res("pods"), name, namespace=NS)
                now = apimeta.format_time(env.clock.now())
                current["status"] = {
                    **current.get("status", {}),
                    "phase": "Running",
                    "startTime": now,
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "True", "lastTransitionTime": now},
                    ],
                }
                await env.client.update(env.res("pods"), current, namespace=NS, subresource="status")
        except NotFoundError:
            continue


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


async def ds_status(env: Env) -> dict[str, Any]:
    ds = await env.client.get(env.res("daemonsets"), "agent", namespace=NS)
    status: dict[str, Any] = ds.get("status") or {}
    return status


async def wait_status(env: Env, **want: int) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal seen
        seen = await ds_status(env)
        return all(seen.get(k, 0) == v for k, v in want.items())

    try:
        await eventually(check)
    except AssertionError:
        raise AssertionError(f"wanted {want}, status is {seen}") from None
    return seen


async def test_one_pod_per_eligible_node_and_master_excluded(env: Env) -> None:
    for name in ("n1", "n2"):
        await add_node(env, name)
    await add_node(env, "master", taints=[MASTER_TAINT])
    ds = await add_ds(env)
    by_node = await wait_for_nodes(env, {"n1", "n2"})
    pod = by_node["n1"][0]
    assert pod["metadata"]["generateName"] == "agent-"
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "name": "agent",
            "uid": ds["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["metadata"]["labels"][HASH_LABEL] == compute_hash(ds["spec"]["template"], None)
    assert pod["metadata"]["labels"]["app"] == "agent"
    assert not pod["spec"].get("nodeName")  # the scheduler binds it
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    }
    tolerations = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
    assert ("node.kubernetes.io/unreachable", "NoExecute") in tolerations
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") not in tolerations
    await wait_status(env, desiredNumberScheduled=2, currentNumberScheduled=2, numberReady=0, numberUnavailable=2)
    await eventually(lambda: _event_count(env, "SuccessfulCreate", 2), what="two SuccessfulCreate events")


async def _event_count(env: Env, reason: str, want: int) -> bool:
    await env.controller.recorder.flush()
    items = (await env.client.list(env.res("events"), namespace=NS))["items"]
    return sum(int(e.get("count") or 1) for e in items if e["reason"] == reason) >= want


async def test_tolerating_set_runs_on_master(env: Env) -> None:
    await add_node(env, "n1")
    await add_node(env, "master", taints=[MASTER_TAINT])
    toleration = {"key": MASTER_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}
    await add_ds(env, pod_spec={"tolerations": [toleration]})
    await wait_for_nodes(env, {"n1", "master"})


async def test_nodes_coming_and_going(env: Env) -> None:
    await add_node(env, "n1", {"role": "agent"})
    await add_ds(env, pod_spec={"nodeSelector": {"role": "agent"}})
    await wait_for_nodes(env, {"n1"})
    # a new eligible node gets a pod; an ineligible one does not
    await add_node(env, "n2", {"role": "agent"})
    await add_node(env, "n3", {"role": "db"})
    await wait_for_nodes(env, {"n1", "n2"})
    await eventually(lambda: _bind_all(env), what="pods bound")
    await wait_status(env, desiredNumberScheduled=2, currentNumberScheduled=2, numberReady=2, numberAvailable=2)
    # a label change makes n2 ineligible: its (bound) pod is deleted
    n2 = await env.client.get(env.res("nodes"), "n2")
    n2["metadata"]["labels"] = {"role": "db"}
    await env.client.update(env.res("nodes"), n2)

    async def n2_pod_terminating() -> bool:
        await play_kubelet(env)  # finishes the graceful deletion
        return set(await pods_by_target(env)) == {"n1"}

    await eventually(n2_pod_terminating, what="n2's pod removed")
    await wait_status(env, desiredNumberScheduled=1, currentNumberScheduled=1, numberMisscheduled=0)
    # a removed node's pod that was never bound is deleted by the controller (bound ones are PodGC's)
    await add_node(env, "n4", {"role": "agent"})
    await wait_for_nodes(env, {"n1", "n4"})
    await env.client.delete(env.res("nodes"), "n4")
    await wait_for_nodes(env, {"n1"})
    await eventually(lambda: _event_count(env, "SuccessfulDelete", 2), what="SuccessfulDelete events")


async def _bind_all(env: Env) -> bool:
    await play_kubelet(env)
    return all(p["spec"].get("nodeName") and _ready(p) for p in await pods(env))


async def test_rolling_update_replaces_one_node_at_a_time(env: Env) -> None:
    for name in ("n1", "n2", "n3"):
        await add_node(env, name)
    ds = await add_ds(env, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})
    await wait_for_nodes(env, {"n1", "n2", "n3"})
    await eventually(lambda: _bind_all(env), what="all pods running")
    await wait_status(env, desiredNumberScheduled=3, numberReady=3, numberAvailable=3, updatedNumberScheduled=3)
    old_hash = compute_hash(ds["spec"]["template"], None)

    ds = await env.client.get(env.res("daemonsets"), "agent", namespace=NS)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
    ds = await env.client.update(env.res("daemonsets"), ds, namespace=NS)
    new_hash = compute_hash(ds["spec"]["template"], None)
    assert new_hash != old_hash

    def hashes(items: list[dict[str, Any]]) -> list[str]:
        return sorted(p["metadata"]["labels"][HASH_LABEL] for p in items if not p["metadata"].get("deletionTimestamp"))

    for step in range(1, 4):
        # exactly one more node is being replaced; the new pod is not Ready yet, so nothing else moves
        async def replaced(step: int = step) -> bool:
            await play_kubelet(env, make_ready=False)
            return hashes(await pods(env)).count(new_hash) == step

        await eventually(replaced, what=f"step {step}: a new pod")
        for _ in range(10):
            await play_kubelet(env, make_ready=False)
            await asyncio.sleep(0.005)
            live = hashes(await pods(env))
            assert live.count(old_hash) == 3 - step, live  # maxUnavailable 1: no second old pod goes
            assert live.count(new_hash) == step, live
        await eventually(lambda: _bind_all(env), what=f"step {step}: new pod ready")
    status = await wait_status(
        env,
        desiredNumberScheduled=3,
        currentNumberScheduled=3,
        updatedNumberScheduled=3,
        numberReady=3,
        numberAvailable=3,
        numberUnavailable=0,
    )
    assert status["observedGeneration"] == ds["metadata"]["generation"]


async def test_on_delete_waits_for_the_user(env: Env) -> None:
    await add_node(env, "n1")
    await add_ds(env, updateStrategy={"type": "OnDelete"})
    by_node = await wait_for_nodes(env, {"n1"})
    old_name = by_node["n1"][0]["metadata"]["name"]
    await eventually(lambda: _bind_all(env), what="running")
    ds = await env.client.get(env.res("daemonsets"), "agent", namespace=NS)
    ds["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
    ds = await env.client.update(env.res("daemonsets"), ds, namespace=NS)
    await wait_status(env, updatedNumberScheduled=0, currentNumberScheduled=1)
    await asyncio.sleep(0.05)
    assert [p["metadata"]["name"] for p in await pods(env)] == [old_name]
    await env.client.delete(env.res("pods"), old_name, namespace=NS, grace_period_seconds=0)
    by_node = await wait_for_nodes(env, {"n1"})
    assert by_node["n1"][0]["metadata"]["labels"][HASH_LABEL] == compute_hash(ds["spec"]["template"], None)


async def test_min_ready_seconds_on_the_clock(env: Env) -> None:
    await add_node(env, "n1")
    await add_ds(env, minReadySeconds=10)
    await wait_for_nodes(env, {"n1"})
    await eventually(lambda: _bind_all(env), what="running")
    await wait_status(env, numberReady=1, numberAvailable=0, numberUnavailable=1)
    await env.clock.advance(5)
    await asyncio.sleep(0.02)
    assert (await ds_status(env))["numberAvailable"] == 0
    # the set is looked at again minReadySeconds after each sync that saw ready-but-unavailable pods (the
    # check at exactly +10 s is not yet "more than 10 s", so the one at +20 s is what flips it)
    await env.clock.advance(16)
    await wait_status(env, numberReady=1, numberAvailable=1, numberUnavailable=0)


NOW_TS = 1_800_000_000.0


# --- the RollingUpdate plan (pure) -------------------------------------------------------------------------


def _rolling_ds(rolling: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "ds"}, "spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}}


def _daemon_pod(name: str, hash_: str, *, ready: bool) -> dict[str, Any]:
    status = "True" if ready else "False"
    return {
        "metadata": {"name": name, "labels": {HASH_LABEL: hash_}},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


@pytest.mark.parametrize(
    ("rolling", "pods", "want"),
    [
        pytest.param(
            {"maxUnavailable": 1},
            {"n1": [_daemon_pod("a", "old", ready=True)], "n2": [_daemon_pod("b", "old", ready=True)]},
            (["a"], []),
            id="maxUnavailable-1-replaces-one-available-old-pod-at-a-time",
        ),
        pytest.param(
            {"maxUnavailable": 1},
            {"n1": [_daemon_pod("a", "old", ready=True)], "n2": [_daemon_pod("b", "old", ready=False)]},
            (["b"], []),
            id="an-unavailable-old-pod-is-replaced-first-and-uses-the-budget",
        ),
        pytest.param(
            {"maxUnavailable": 0, "maxSurge": 1},
            {"n1": [_daemon_pod("a", "old", ready=True)], "n2": [_daemon_pod("b", "old", ready=True)]},
            ([], ["n1"]),
            id="maxSurge-1-creates-beside-one-old-pod",
        ),
        pytest.param(
            {"maxUnavailable": 0, "maxSurge": 1},
            {"n1": [_daemon_pod("a", "old", ready=True), _daemon_pod("a2", "new", ready=True)]},
            (["a"], []),
            id="surge-deletes-the-old-pod-once-its-replacement-is-available",
        ),
    ],
)
def test_rolling_update_plan(
    rolling: dict[str, Any], pods: dict[str, list[dict[str, Any]]], want: tuple[list[str], list[str]]
) -> None:
    """Upstream ``rollingUpdate`` (daemon/update.go): without surge, old pods go within maxUnavailable
    (unavailable ones always); with surge, new pods are created beside old ones within maxSurge and an old pod is
    deleted once the new one on its node is available."""
    ds = _rolling_ds(rolling)
    nodes = {name: _node(name) for name in pods}
    by_node: dict[str, list[dict[str, Any]]] = {name: list(p) for name, p in pods.items()}
    counts = updated_desired_node_counts(ds, list(nodes.values()), by_node)
    plan = rolling_update_plan(ds, by_node, counts, hash_="new", now=NOW_TS, get_node=nodes.get)
    assert plan == want


def _reporting_node(**changes: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "resourceVersion": "7", "labels": {"zone": "a"}},
        "spec": {},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": "2027-01-15T08:00:00Z"},
                {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2027-01-15T08:00:00Z"},
            ],
            "images": [{"names": ["nginx:1.27"], "sizeBytes": 1}],
        },
    }
    for path, value in changes.items():
        section, key = path.split("__")
        node[section][key] = value
    return node


@pytest.mark.parametrize(
    ("changes", "ignored"),
    [
        ({"metadata__resourceVersion": "8"}, True),
        (
            {
                "status__conditions": [
                    {"type": "Ready", "status": "True", "lastHeartbeatTime": "2027-01-15T08:05:00Z"},
                    {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": "2027-01-15T08:05:00Z"},
                ]
            },
            True,
        ),
        ({"status__conditions": [{"type": "Ready", "status": "False"}]}, False),
        ({"metadata__labels": {"zone": "b"}}, False),
        ({"status__images": []}, False),
        ({"spec__unschedulable": True}, False),
    ],
    ids=[
        "resource-version-only",
        "a-status-report-moving-heartbeats",
        "ready-goes-false",
        "a-label-changes",
        "images-change",
        "cordoned",
    ],
)
def test_node_updates_the_controller_ignores(changes: dict[str, Any], ignored: bool) -> None:
    """Upstream ``shouldIgnoreNodeUpdate``: the same True conditions and nothing else changed but the
    resourceVersion and the conditions' details."""
    assert _should_ignore_node_update(_reporting_node(), _reporting_node(**changes)) is ignored
