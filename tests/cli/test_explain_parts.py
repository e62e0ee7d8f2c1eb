"""``kubeplane explain --cluster FILE`` with the autoscaler's node-groups ConfigMap and the pod's events in the
file: the same ``autoscaler`` part as live; no ConfigMap, no part; a malformed ConfigMap is one ``error:`` line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kubeplane.autoscaler.explaining import groups_config_map
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.cli.main import app
from tests.autoscaler.fake_provider import FakeProvider, node_object
from tests.autoscaler.objects import pod_object


def _files(tmp_path: Path, *, config_map: dict[str, Any] | None) -> tuple[Path, Path]:
    provider = FakeProvider([NodeGroupSpec("small", 0, 2, {"cpu": "4", "memory": "8Gi"}, provisioning_delay=60)])
    event = {
        "kind": "Event",
        "reason": "NotTriggerScaleUp",
        "message": "pod didn't trigger scale-up: 1 Insufficient cpu",
        "lastTimestamp": "2027-01-15T08:00:10Z",
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
    }
    objects: list[dict[str, Any]] = [node_object("n1", cpu="2"), event]
    if config_map is not None:
        objects.append(config_map)
    else:
        objects.append(groups_config_map(provider, namespace="kube-system"))
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": objects}))
    pod = tmp_path / "pod.json"
    pod.write_text(json.dumps(pod_object("web", cpu="3", unschedulable=True)))
    return cluster, pod


def test_offline_cluster_file_gives_the_autoscaler_part(tmp_path: Path) -> None:
    cluster, pod = _files(tmp_path, config_map=None)
    result = CliRunner().invoke(app, ["explain", "--cluster", str(cluster), "--pod", str(pod), "-o", "json"])
    assert result.exit_code == 0, result.output
    part = json.loads(result.output)["autoscaler"]
    assert [(g["name"], g["fits"], g["helps"]) for g in part["groups"]] == [("small", True, True)]
    assert part["notTriggered"]["message"] == "pod didn't trigger scale-up: 1 Insufficient cpu"
    table = CliRunner().invoke(app, ["explain", "--cluster", str(cluster), "--pod", str(pod)])
    assert "  small (0/2 nodes): template fits" in table.output


@pytest.mark.parametrize(
    ("config_map", "expected"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kube-system"}, "data": {}}, None),
        (
            {"kind": "ConfigMap", "metadata": {"name": "kubeplane-autoscaler-node-groups", "namespace": "kube-system"},
             "data": {"nodeGroups": "{"}},
            "error: configmap kubeplane-autoscaler-node-groups: data.nodeGroups: not a list of node groups",
        ),
    ],
    ids=["no autoscaler, no part", "malformed ConfigMap is one error line"],
)  # fmt: skip
def test_without_a_usable_config_map(tmp_path: Path, config_map: dict[str, Any], expected: str | None) -> None:
    cluster, pod = _files(tmp_path, config_map=config_map)
    result = CliRunner().invoke(app, ["explain", "--cluster", str(cluster), "--pod", str(pod), "-o", "json"])
    if expected is None:
        assert result.exit_code == 0, result.output
        assert "autoscaler" not in json.loads(result.output)
    else:
        assert result.exit_code == 1
        assert result.output.startswith(expected)
        assert len(result.output.strip().splitlines()) == 1
