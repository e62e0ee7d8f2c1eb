"""``kubeplane descheduler``: upstream's flags (``--policy-config-file``, ``--descheduling-interval``,
``--dry-run``); a bad policy or interval is one ``error:`` line with upstream's message; with interval 0 the
process runs one pass against a real API server and exits, having evicted exactly the pod violating its node's
taint (through the Eviction API: the pod is marked for deletion)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from tests.apiserver.conftest import start_server, stop_process

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
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


@pytest.mark.parametrize(
    ("policy", "flags", "message"),
    [
        ({**POLICY, "apiVersion": "descheduler/v1alpha1"}, [],
         'error: failed decoding descheduler\'s policy config "{path}": no kind "DeschedulerPolicy" is registered '
         'for version "descheduler/v1alpha1"'),
        ({**POLICY, "profiles": [{**POLICY["profiles"][0], "pluginConfig": [{"name": "Nope"}]}]}, [],
         "error: in profile p: plugin Nope in pluginConfig not registered"),
        ({**POLICY, "profiles": [{**POLICY["profiles"][0], "pluginConfig": []}]}, [],
         'error: unable to find "RemovePodsViolatingNodeTaints" plugin config'),
        ({**POLICY, "profiles": [{**POLICY["profiles"][0], "plugins": {"balance": {
            "enabled": ["RemovePodsViolatingNodeTaints"]}}}]}, [],
         'error: profile "p" configures balance extension point of non-existing plugins: '
         "map[RemovePodsViolatingNodeTaints:{}]"),
        (POLICY, ["--descheduling-interval", "5 minutes"], "error: --descheduling-interval: "),
    ],
    ids=["unregistered-version", "unregistered-plugin", "enabled-without-config", "wrong-extension-point",
         "bad-interval"],
)  # fmt: skip
def test_bad_input_is_one_line(policy: dict[str, Any], flags: list[str], message: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    args = ["descheduler", "--kubeconfig", str(tmp_path / "none"), "--policy-config-file", str(path), *flags]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert result.output.startswith(message.replace("{path}", str(path))), result.output
    assert len(result.output.strip().splitlines()) == 1


def test_one_pass_evicts_the_taint_violator_and_exits(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        for name, taints in (("n1", [{"key": "k", "value": "v", "effect": "NoSchedule"}]), ("n2", [])):
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints}}
            assert server.send("POST", "/api/v1/nodes", node)[0] == 201
        for name, node_name in (("a", "n1"), ("b", "n2")):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-rs"}]},
                "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "nginx"}]},
            }  # fmt: skip
            assert server.send("POST", "/api/v1/namespaces/default/pods", pod)[0] == 201
        policy = tmp_path / "policy.yaml"
        policy.write_text(yaml.safe_dump(POLICY))
        process = subprocess.run(
            [*KUBEPLANE, "descheduler", "--kubeconfig", str(server.kubeconfig), "--policy-config-file", str(policy),
             "--metrics-port=0"],
            check=False, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert process.returncode == 0, process.stderr
        assert "kubeplane descheduler running with profiles p" in process.stderr
        status, raw = server.send("GET", "/api/v1/namespaces/default/pods")
        assert status == 200
        deleting = sorted(
            p["metadata"]["name"] for p in json.loads(raw)["items"] if p["metadata"].get("deletionTimestamp")
        )
        gone = {"a", "b"} - {p["metadata"]["name"] for p in json.loads(raw)["items"]}
        assert sorted([*deleting, *gone]) == ["a"]
    finally:
        stop_process(server.process)
        server.stop()
