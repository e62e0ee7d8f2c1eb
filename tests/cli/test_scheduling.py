"""``kubeplane explain`` (offline on files, and live) and ``kubeplane scheduler`` as its own process over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from tests.apiserver.conftest import start_server

runner = CliRunner()
KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]


def _node(name: str, *, cpu: str = "4", taint: bool = False) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    spec: dict[str, Any] = {}
    if taint:
        spec["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(name: str, cpu: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [_node("master", taint=True), _node("node01"), _node("node02"), _pod("busy", "3", "node01")],
    }
    (tmp_path / "cluster.json").write_text(json.dumps(cluster))
    (tmp_path / "small.yaml").write_text(yaml.safe_dump(_pod("small", "500m")))
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(_pod("big", "10")))
    return tmp_path


def test_explain_json_selects_the_emptier_node(files: Path) -> None:
    result = runner.invoke(
        app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "small.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["pod"] == "default/small"
    assert out["selected"] == "node02"
    assert out["message"] == ""
    master = out["nodes"]["master"]["filters"]["TaintToleration"]
    assert master == {"code": "UnschedulableAndUnresolvable", "reasons": ["node(s) had untolerated taint(s)"]}
    node02 = out["nodes"]["node02"]
    fit = node02["scores"]["NodeResourcesFit"]
    assert fit["weight"] == 1
    assert node02["total"] == sum(s["normalized"] * s["weight"] for s in node02["scores"].values())
    assert node02["total"] > out["nodes"]["node01"]["total"]


def test_explain_unschedulable_pod_reports_the_scheduler_message(files: Path) -> None:
    result = runner.invoke(
        app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "big.yaml"), "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["selected"] is None
    # every PostFilter plugin's reason, joined (upstream RunPostFilterPlugins): DynamicResources' then preemption's
    post_filter = (
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert out["message"] == (
        f"0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. {post_filter}."
    )
    # 10 CPUs exceed every node's allocatable: UnschedulableAndUnresolvable, so no node is a candidate; the
    # section's message is the PostFilter plugins' joined one
    assert out["preemption"] == {"nominatedNode": None, "candidates": {}, "message": post_filter}
    # explain runs every filter on every node: the master fails both plugins, counted once (the first) above.
    assert out["nodes"]["master"]["filters"]["NodeResourcesFit"]["reasons"] == ["Insufficient cpu"]


def test_explain_table_marks_the_winner(files: Path) -> None:
    result = runner.invoke(
        app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "small.yaml")]
    )
    assert result.exit_code == 0, result.output
    assert "selected node02" in result.output
    winner = next(line for line in result.output.splitlines() if "node02" in line and "fits" in line)
    assert "*" in winner
    assert "TaintToleration: node(s) had untolerated taint(s)" in result.output


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            {
                "profiles": [
                    {"schedulerName": "s", "plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 0}]}}}
                ]
            },
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: 0: must be in the range [1, 100]",
            id="weight",
        ),
        pytest.param(
            {"profiles": [{"schedulerName": "s", "plugins": {"filter": {"enabled": [{"name": "Foo"}]}}}]},
            'plugin "Foo" does not exist; available plugins: BestFit, CheckCSIStorageCapacity, CheckPodCountLimit, '
            "CheckPodLimitResources, DefaultBinder",
            id="unknown-plugin",
        ),
    ],
)
def test_invalid_configuration_is_reported_by_field(files: Path, config: dict[str, Any], message: str) -> None:
    path = files / "config.yaml"
    path.write_text(
        yaml.safe_dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", **config})
    )
    result = runner.invoke(
        app,
        [
            "explain",
            "--cluster",
            str(files / "cluster.json"),
            "--pod",
            str(files / "small.yaml"),
            "--config",
            str(path),
        ],
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert message in result.output


def test_explain_missing_pod_file_is_one_line(files: Path) -> None:
    result = runner.invoke(
        app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "nope.yaml")]
    )
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: --pod")
    assert len(result.output.strip().splitlines()) == 1


def test_scheduler_process_over_http_and_live_explain(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n"
        "  leaderElect: false\n"
    )
    log = (tmp_path / "scheduler.log").open("wb")
    scheduler = subprocess.Popen(
        [*KUBEPLANE, "scheduler", "--kubeconfig", str(server.kubeconfig), "--config", str(config), "--metrics-port=0"],
        stdout=log,
        stderr=log,
    )
    try:
        from kubeplane.client.http import HTTPClient

        async def scenario() -> str:
            client = HTTPClient.from_kubeconfig(server.kubeconfig)
            try:
                await client.create(client.resource("nodes"), _node("node01"))
                await client.create(client.resource("pods"), _pod("web", "100m"), namespace="default")
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    pod = await client.get(client.resource("pods"), "web", namespace="default")
                    if pod["spec"].get("nodeName"):
                        return str(pod["spec"]["nodeName"])
                    await asyncio.sleep(0.1)
                return ""
            finally:
                await client.close()

        assert asyncio.run(scenario()) == "node01", (tmp_path / "scheduler.log").read_text()
        live = runner.invoke(
            app, ["explain", "--pod", "default/web", "--kubeconfig", str(server.kubeconfig), "-o", "json"]
        )
        assert live.exit_code == 0, live.output
        assert json.loads(live.output)["pod"] == "default/web"
    finally:
        os.kill(scheduler.pid, signal.SIGTERM)
        assert scheduler.wait(timeout=30) == 0
        log.close()
        server.stop()


def _explain_json(files: Path, pod: dict[str, Any]) -> dict[str, Any]:
    (files / "pod.json").write_text(json.dumps(pod))
    args = ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "pod.json"), "-o", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def test_explain_bound_pod_is_placed_among_all_nodes(files: Path) -> None:
    """A bound pod (nodeName and PodScheduled=True, as the binding subresource leaves it) is explained as the
    scheduler would place it now, among all nodes: NodeName does not reject every other node."""
    bound = _pod("small", "500m", "node01")
    bound["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    out = _explain_json(files, bound)
    assert out["boundTo"] == "node01"
    assert out["selected"] == "node02"
    assert out["nodes"]["node02"]["filters"]["NodeName"] == {"code": "Success"}
    # A pod file that only names a node (never bound) is still judged by NodeName, as the scheduler would.
    named = _explain_json(files, _pod("small", "500m", "node01"))
    assert "boundTo" not in named
    assert named["nodes"]["node02"]["filters"]["NodeName"]["reasons"] == [
        "node(s) didn't match the requested node name"
    ]


def test_explain_names_the_untolerated_taint_per_node(files: Path) -> None:
    """Upstream's TaintToleration reason is generic ("untolerated taint(s)"); explain's detail names the taint
    of each node while the message keeps upstream's wording."""
    out = _explain_json(files, _pod("small", "500m"))
    assert out["nodes"]["master"]["details"] == {"TaintToleration": "node-role.kubernetes.io/control-plane:NoSchedule"}
    table = runner.invoke(
        app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "pod.json")]
    ).output
    assert "untolerated taint(s) (node-role.kubernetes.io/control-plane:NoSchedule)" in table


def test_explain_pod_that_fits_nowhere_shows_every_column_and_a_total(files: Path) -> None:
    result = runner.invoke(app, ["explain", "--cluster", str(files / "cluster.json"), "--pod", str(files / "big.yaml")])
    assert result.exit_code == 0, result.output
    out = result.output
    for column in ("NODE", "FILTERS", "TaintToleration", "NodeResourcesFit", "TOTAL"):
        assert column in out, column
    assert "0 of 3 node(s) fit" in out


def test_explain_follows_the_scheduler_sampling_on_large_clusters(tmp_path: Path) -> None:
    """At 150 nodes the scheduler looks for numFeasibleNodesToFind = 100 feasible nodes and scores those only
    (upstream findNodesThatPassFilters); explain reports the same: 100 examined and scored, 50 unexamined."""
    items = [_node(f"n{i:03d}") for i in range(150)]
    (tmp_path / "cluster.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    out = _explain_json(tmp_path, _pod("small", "500m"))
    examined = [n for n, e in out["nodes"].items() if e["examined"]]
    assert len(examined) == 100
    assert all(out["nodes"][n]["scores"] for n in examined)
    assert out["selected"] in examined
    assert all(not e["scores"] and e["filters"] for e in out["nodes"].values() if not e["examined"])
