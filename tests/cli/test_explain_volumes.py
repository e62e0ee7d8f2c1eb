"""``kubeplane explain`` on cluster files with volumes: the default profile runs VolumeRestrictions, VolumeZone and
NodeVolumeLimits (v1.37's default plugins) and explain shows their upstream reasons per node (issue 26's acceptance:
two pods on the same read-write gcePersistentDisk; a zonal PV; a CSINode volume limit). A plugin's Error ends the
cycle and is reported, not turned into a failed command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kubeplane.cli.main import app

runner = CliRunner()


def _node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(name: str, *volumes: dict[str, Any], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}], "volumes": list(volumes)}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    }


BOUND = {"pv.kubernetes.io/bind-completed": "yes"}
"""A claim VolumeBinding takes as bound: volumeName and the PV controller's bind-completed annotation (upstream
``isPVCFullyBound``); without it the claim is an unbound Immediate one and VolumeBinding's PreFilter rejects."""


def _explain(
    tmp_path: Path, items: list[dict[str, Any]], pod: dict[str, Any], config: dict[str, Any] | None = None
) -> dict[str, Any]:
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    (tmp_path / "pod.json").write_text(json.dumps(pod))
    args = ["explain", "--cluster", str(tmp_path / "cluster.json"), "--pod", str(tmp_path / "pod.json"), "-o", "json"]
    if config is not None:
        (tmp_path / "config.json").write_text(json.dumps(config))
        args += ["--config", str(tmp_path / "config.json")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def _disk(read_only: bool) -> dict[str, Any]:
    return {"name": "data", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": read_only}}


def test_a_read_write_disk_in_use_keeps_the_second_pod_off_the_first_ones_node(tmp_path: Path) -> None:
    first = _pod("first", _disk(False), node="n1")
    out = _explain(tmp_path, [_node("n1"), _node("n2"), first], _pod("second", _disk(False)))
    assert out["nodes"]["n1"]["filters"]["VolumeRestrictions"] == {
        "code": "Unschedulable",
        "reasons": ["node(s) had no available disk"],
    }
    assert out["nodes"]["n2"]["filters"]["VolumeRestrictions"] == {"code": "Success"}
    assert out["selected"] == "n2"


def test_the_same_disk_read_only_on_both_sides_fits(tmp_path: Path) -> None:
    first = _pod("first", _disk(True), node="n1")
    out = _explain(tmp_path, [_node("n1"), first], _pod("second", _disk(True)))
    assert out["nodes"]["n1"]["filters"]["VolumeRestrictions"] == {"code": "Success"}
    assert out["selected"] == "n1"


def test_a_zonal_volume_pins_the_pod_to_its_zone(tmp_path: Path) -> None:
    zone = "topology.kubernetes.io/zone"
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv-a", "labels": {zone: "a"}},
        "spec": {},
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default", "annotations": BOUND},
        "spec": {"volumeName": "pv-a"},
    }
    items = [_node("in-a", {zone: "a"}), _node("in-b", {zone: "b"}), pv, claim]
    out = _explain(tmp_path, items, _pod("p", {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}))
    assert out["nodes"]["in-b"]["filters"]["VolumeZone"] == {
        "code": "UnschedulableAndUnresolvable",
        "reasons": ["node(s) had no available volume zone"],
    }
    assert out["selected"] == "in-a"


def test_a_node_at_its_csi_volume_limit_is_filtered(tmp_path: Path) -> None:
    driver = "csi.kubeplane.io"
    items: list[dict[str, Any]] = [_node("full"), _node("room")]
    for n, count in (("full", 1), ("room", 2)):
        items.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": n},
                "spec": {"drivers": [{"name": driver, "nodeID": n, "allocatable": {"count": count}}]},
            }
        )
    for i in range(3):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv-{i}"},
                "spec": {"csi": {"driver": driver, "volumeHandle": f"h-{i}"}},
            }
        )
        items.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"c-{i}", "namespace": "default", "annotations": BOUND},
                "spec": {"volumeName": f"pv-{i}"},
            }
        )
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "c-0"}}
    items += [
        _pod("u1", claim, node="full"),
        _pod("u2", {**claim, "persistentVolumeClaim": {"claimName": "c-1"}}, node="room"),
    ]
    out = _explain(tmp_path, items, _pod("p", {"name": "v", "persistentVolumeClaim": {"claimName": "c-2"}}))
    assert out["nodes"]["full"]["filters"]["NodeVolumeLimits"] == {
        "code": "Unschedulable",
        "reasons": ["node(s) exceed max volume count"],
    }
    assert out["selected"] == "room"


def test_a_plugin_error_is_reported_with_the_recorded_statuses(tmp_path: Path) -> None:
    """An ephemeral volume's claim that the pod does not own: NodeVolumeLimits errs on the first node examined
    (upstream ``ephemeral.VolumeIsForPod``); the cycle stops there, explain says so and exits 0."""
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "p-scratch", "namespace": "default"},
        "spec": {"storageClassName": "x"},
    }
    message = "PVC default/p-scratch was not created for pod default/p (pod is not owner)"
    # the default profile: VolumeBinding's PreFilter refuses the claim first (upstream podHasPVCs), unresolvable
    out = _explain(tmp_path, [_node("n1"), claim], _pod("p", {"name": "scratch", "ephemeral": {}}))
    assert out["preFilter"]["VolumeBinding"] == {"code": "UnschedulableAndUnresolvable", "reasons": [message]}
    # NodeVolumeLimits alone: its Filter errs, the cycle stops and explain reports it
    only = {"multiPoint": {"disabled": [{"name": "*"}], "enabled": [{"name": "PrioritySort"}, {"name": "DefaultBinder"},
            {"name": "NodeVolumeLimits"}]}}  # fmt: skip
    config = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
              "profiles": [{"schedulerName": "default-scheduler", "plugins": only}]}  # fmt: skip
    out = _explain(tmp_path, [_node("n1"), claim], _pod("p", {"name": "scratch", "ephemeral": {}}), config)
    assert out["error"] == f'running Filter plugin "NodeVolumeLimits": {message}'
    assert out["nodes"]["n1"]["filters"]["NodeVolumeLimits"] == {"code": "Error", "reasons": [message]}
    assert out["selected"] is None
