"""ui/trying.py without a browser: the scheduler view's description of a configuration, the edited
configuration's checks (kube-scheduler's own: strict decoding, validation, plugin resolution), which pods are
Pending, and "try" on a fixed snapshot (pkg/scheduler/framework/plugins/noderesources: LeastAllocated, the v1
default, prefers the emptier node, MostAllocated the fuller one)."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
import yaml

from kubeplane.scheduler.config import default_config, parse_config
from kubeplane.scheduler.explain import cluster_snapshot
from kubeplane.scheduler.plugins.registry import registry_for
from kubeplane.ui import trying

MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


async def NO_API(_scope: Any, _receive: Any, _send: Any) -> None:
    raise AssertionError("the snapshot is listed through the patched cluster_state")


def _node(name: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, *, node: str = "", cpu: str = "100m", **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}
    body: dict[str, Any] = {"containers": [container], **spec}
    if node:
        body["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": body, "status": {}}


@pytest.fixture
def snapshot(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    pods = [_pod("filler", node="n1", cpu="2"), _pod("held", schedulingGates=[{"name": "x/hold"}]), _pod("other")]

    async def cluster_state(_app: Any, _token: str) -> tuple[Any, Any, Any]:
        return [_node("n1"), _node("n2")], pods, []

    monkeypatch.setattr(trying, "cluster_state", cluster_state)
    return pods


def test_describe_expands_the_default_profile_per_point_with_weights() -> None:
    doc = trying.describe(default_config(), source="default")
    assert doc["source"] == "default"
    (profile,) = doc["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    assert profile["percentageOfNodesToScore"] is None
    score = {p["name"]: p["weight"] for p in profile["points"]["score"]}
    assert score["TaintToleration"] == 3
    assert score["NodeResourcesFit"] == 1
    assert [p["name"] for p in profile["points"]["bind"]] == ["DefaultBinder"]
    assert doc["yaml"].startswith("apiVersion: kubescheduler.config.k8s.io/v1\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: [", "invalid YAML"),
        ("- a\n- b\n", "the configuration must be a KubeSchedulerConfiguration object"),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nfoo: 1\n",
            'strict decoding error: unknown field "foo"',
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
            "- schedulerName: s\n  plugins: {score: {enabled: [{name: NoSuchPlugin}]}}\n",
            "NoSuchPlugin",
        ),
    ],
    ids=["yaml-syntax", "not-an-object", "unknown-field", "unknown-plugin"],
)
def test_an_edited_configuration_kube_scheduler_refuses_is_a_400_naming_the_problem(text: str, expected: str) -> None:
    with pytest.raises(trying.TryFailed) as caught:
        trying.parse_edited(text)
    assert caught.value.status == 400
    assert expected in caught.value.body["message"]


def test_a_yaml_syntax_error_carries_its_line() -> None:
    with pytest.raises(trying.TryFailed) as caught:
        trying.parse_edited("apiVersion: x\nkind: [\n")
    assert caught.value.body["line"] == 3


def test_pending_means_unbound_not_terminal_not_deleting() -> None:
    assert trying.is_pending(_pod("a"))
    assert not trying.is_pending(_pod("b", node="n1"))
    assert not trying.is_pending({**_pod("c"), "status": {"phase": "Failed"}})
    deleting = _pod("d")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert not trying.is_pending(deleting)


@pytest.mark.usefixtures("snapshot")
def test_try_answers_both_configurations_side_by_side() -> None:
    result = asyncio.run(
        trying.try_config(NO_API, "t", MOST_ALLOCATED, current=default_config(), pods=["default/held"])
    )
    assert result["pending"] == 1
    assert not result["truncated"]
    (row,) = result["evaluated"]
    assert row["pod"] == "default/held"
    assert row["today"]["node"] == "n2"  # LeastAllocated: away from the filler's 2 CPUs
    assert row["tried"]["node"] == "n1"  # MostAllocated: onto them
    assert row["changed"]
    assert row["today"]["feasible"] == row["tried"]["feasible"] == 2


def test_try_evaluates_at_most_max_pods(snapshot: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trying, "MAX_PODS", 1)
    result = asyncio.run(trying.try_config(NO_API, "t", MOST_ALLOCATED, current=default_config()))
    assert result["pending"] == 2
    assert result["truncated"]
    assert len(result["evaluated"]) == 1
    assert all(p["spec"].get("nodeName") in (None, "n1") for p in snapshot)  # nothing was bound


@pytest.mark.usefixtures("snapshot")
def test_a_pod_whose_scheduler_name_the_configuration_lacks_gets_explains_message() -> None:
    current = default_config()
    pod = _pod("elsewhere", schedulerName="batch")
    nodes = [_node("n1")]
    answer = trying._answer(
        pod,
        nodes=nodes,
        pods=[],
        others=[],
        config=current,
        registry=registry_for(current),
        snapshot=cluster_snapshot(nodes, []),
    )
    assert answer["node"] is None
    assert "no profile for schedulerName 'batch'" in answer["message"]


# --- outOfTreeRegistry: a web request never makes the server import code its operator did not configure ---------

_OOT_MODULE = "tests.ui.oot_never_imported"
_OOT = (
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    f"outOfTreeRegistry:\n  Sneaky: {_OOT_MODULE}:factory\n"
    "profiles:\n- schedulerName: default-scheduler\n  plugins: {filter: {enabled: [{name: Sneaky}]}}\n"
)


def test_an_edited_out_of_tree_registry_is_refused_before_anything_is_imported() -> None:
    """Resolving profiles imports each ``outOfTreeRegistry`` module (kubeplane's extension, as ``kubeplane
    scheduler --config`` loads it): Try refuses entries the running configuration lacks, with a 403 naming the
    field, and the module is never imported."""
    with pytest.raises(trying.TryFailed) as caught:
        trying.parse_edited(_OOT, default_config())
    assert caught.value.status == 403
    assert caught.value.body["message"].startswith("outOfTreeRegistry.Sneaky: Forbidden:")
    assert _OOT_MODULE not in sys.modules
    with pytest.raises(trying.TryFailed) as caught:
        trying.parse_edited(_OOT)  # no running configuration: nothing is allowed
    assert caught.value.status == 403


def test_an_out_of_tree_plugin_the_running_configuration_registered_can_be_tried() -> None:
    path = "tests.scheduler.plugins.standin_plugins:new_label_gate"
    running_text = (
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        f"outOfTreeRegistry:\n  LabelGate: {path}\n"
        "profiles:\n- schedulerName: default-scheduler\n"
    )
    running = trying.parse_edited(running_text, parse_config(yaml.safe_load(running_text)))
    edited = running_text + "  plugins: {filter: {enabled: [{name: LabelGate}]}}\n"
    assert dict(trying.parse_edited(edited, running).out_of_tree_registry) == {"LabelGate": path}
    moved = edited.replace(path, "tests.scheduler.plugins.standin_plugins:LabelGate")
    with pytest.raises(trying.TryFailed) as caught:  # same name, another import path: refused too
        trying.parse_edited(moved, running)
    assert caught.value.status == 403
