"""``kubeplane explain``'s autoscaler part: the published groups round-trip, each template's verdict is scale-up's
own (the scheduler's Filter reasons on a fresh template node), the chosen group comes from the pod's
TriggeredScaleUp event and each upcoming node's ETA is its creation plus the group's provisioningDelay."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.autoscaler.explaining import (
    GROUPS_CONFIGMAP,
    PublishedGroup,
    autoscaler_part,
    groups_config_map,
    published_groups,
    render_part,
)
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, NodeGroupSpec
from kubeplane.autoscaler.scaleup import not_triggered_message
from tests.autoscaler.fake_provider import FakeProvider, node_object
from tests.autoscaler.objects import pod_object

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def _provider() -> FakeProvider:
    return FakeProvider(
        [
            NodeGroupSpec("small", 1, 3, {"cpu": "2", "memory": "4Gi"}, price_per_hour=0.1, provisioning_delay=30),
            NodeGroupSpec("big", 0, 2, {"cpu": "8", "memory": "32Gi"}, provisioning_delay=90),
            NodeGroupSpec("gpu", 0, 2, {"cpu": "8", "memory": "32Gi", "taints": [TAINT]}),
        ]
    )


def _groups() -> list[PublishedGroup]:
    return published_groups(groups_config_map(_provider(), namespace="kube-system"))


def _event(reason: str, message: str, at: str, pod: str = "web") -> dict[str, Any]:
    return {
        "kind": "Event",
        "reason": reason,
        "message": message,
        "lastTimestamp": at,
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod, "uid": f"uid-default-{pod}"},
    }


def _grouped(name: str, group: str, *, ready: bool, created: str, cpu: str = "2") -> dict[str, Any]:
    node = node_object(name, cpu=cpu, labels={NODE_GROUP_LABEL: group}, ready=ready)
    node["metadata"]["creationTimestamp"] = created
    return node


def test_the_config_map_publishes_every_group_with_its_template_node() -> None:
    cm = groups_config_map(_provider(), namespace="kube-system")
    assert (cm["metadata"]["name"], cm["metadata"]["namespace"]) == (GROUPS_CONFIGMAP, "kube-system")
    small, big, gpu = published_groups(cm)
    assert (small.name, small.min_size, small.max_size, small.provisioning_delay, small.price_per_hour) == (
        "small", 1, 3, 30.0, 0.1,
    )  # fmt: skip
    assert big.template["metadata"]["name"] == "template-node-for-big"
    assert gpu.template["spec"]["taints"] == [TAINT]


def test_a_malformed_config_map_is_one_line() -> None:
    with pytest.raises(ValueError, match=f"^configmap {GROUPS_CONFIGMAP}: data.nodeGroups: not a list"):
        published_groups({"data": {"nodeGroups": "[{}]"}})


@pytest.mark.parametrize(
    ("cpu", "verdicts"),
    [
        ("1", {"small": [], "big": [], "gpu": ["node(s) had untolerated taint(s)"]}),
        ("4", {"small": ["Insufficient cpu"], "big": [], "gpu": ["node(s) had untolerated taint(s)"]}),
    ],
    ids=["NodeResourcesFit passes on both templates", "Insufficient cpu on the small template (NodeResourcesFit)"],
)
def test_each_template_gets_the_scheduler_filter_reasons(cpu: str, verdicts: dict[str, list[str]]) -> None:
    nodes = [_grouped("small-0", "small", ready=True, created="2027-01-15T08:00:00Z")]
    part = autoscaler_part(pod_object("web", cpu=cpu, unschedulable=True), groups=_groups(), nodes=nodes)
    assert {g["name"]: g["reasons"] for g in part["groups"]} == verdicts
    assert {g["name"]: g["fits"] for g in part["groups"]} == {g: not r for g, r in verdicts.items()}
    assert part["triggered"] is None
    assert part["upcoming"] == []


def test_a_group_at_max_size_does_not_help_even_when_its_template_fits() -> None:
    nodes = [_grouped(f"small-{i}", "small", ready=True, created="2027-01-15T08:00:00Z") for i in range(3)]
    part = autoscaler_part(pod_object("web", cpu="1"), groups=_groups(), nodes=nodes)
    small = part["groups"][0]
    assert (small["size"], small["fits"], small["helps"]) == (3, True, False)
    assert small["reasons"] == ["max node group size reached"]  # scale-up's MAX_LIMIT_REACHED


def test_triggered_scale_up_names_the_group_and_each_upcoming_node_eta() -> None:
    nodes = [
        _grouped("big-0", "big", ready=True, created="2027-01-15T08:00:00Z", cpu="8"),
        _grouped("big-1", "big", ready=False, created="2027-01-15T08:05:00Z", cpu="8"),
        _grouped("big-2", "big", ready=False, created="2027-01-15T08:05:10Z", cpu="8"),
    ]
    events = [
        _event("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 Insufficient cpu", "2027-01-15T08:04:00Z"),
        _event("TriggeredScaleUp", "pod triggered scale-up: [{big 1->3 (max: 2)}]", "2027-01-15T08:05:00Z"),
        _event("TriggeredScaleUp", "pod triggered scale-up: [{small 1->2 (max: 3)}]", "2027-01-15T08:05:00Z", "x"),
    ]
    part = autoscaler_part(pod_object("web", cpu="6"), groups=_groups(), nodes=nodes, events=events)
    assert part["triggered"]["groups"] == [{"group": "big", "from": 1, "to": 3, "max": 2}]
    assert part["upcoming"] == [
        {"node": "big-1", "group": "big", "expectedReady": "2027-01-15T08:06:30Z"},  # creation + 90s
        {"node": "big-2", "group": "big", "expectedReady": "2027-01-15T08:06:40Z"},
    ]
    assert part["notTriggered"] is None  # an older NotTriggerScaleUp is superseded
    lines = render_part(part)
    assert "  pod triggered scale-up: [{big 1->3 (max: 2)}] at 2027-01-15T08:05:00Z" in lines
    assert "  upcoming node big-1 (big): expected Ready at 2027-01-15T08:06:30Z" in lines


def test_not_trigger_scale_up_gives_upstreams_reasons() -> None:
    message = not_triggered_message({"small": ["Insufficient cpu"], "big": ["Insufficient cpu"]})
    events = [_event("NotTriggerScaleUp", message, "2027-01-15T08:04:00Z")]
    part = autoscaler_part(pod_object("web", cpu="16"), groups=_groups(), nodes=[], events=events)
    assert part["notTriggered"]["message"] == "pod didn't trigger scale-up: 2 Insufficient cpu"
    assert not any(g["helps"] for g in part["groups"])
    assert "  small (0/3 nodes): template does not fit: Insufficient cpu" in render_part(part)
