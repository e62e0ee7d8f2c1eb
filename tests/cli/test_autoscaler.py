"""``kubeplane autoscaler``: cluster-autoscaler's flags and the node-groups file with one-line errors, and the
process against an API server (it brings the groups' nodes up and writes the status ConfigMap)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from tests.apiserver.conftest import start_server, stop_process

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
GROUPS = "nodeGroups:\n- {name: small, minSize: 1, maxSize: 3, template: {capacity: {cpu: '2', memory: 4Gi}}}\n"


@pytest.mark.parametrize(
    ("args", "groups", "message"),
    [
        (["--scan-interval=abc"], GROUPS, 'error: invalid value "abc" for flag -scan-interval: parse error'),
        (["--no-such-flag=1"], GROUPS, "error: flag provided but not defined: -no-such-flag"),
        (["--expander=grpc"], GROUPS, "error: Expander grpc not supported, available values: random, most-pods, "
                                      "least-waste, price, priority"),
        ([], "- {name: g, minSize: 3, maxSize: 1}\n",
         "error: node group g: maxSize: max size must be greater or equal to min size"),
    ],
    ids=["go flag parse error", "undefined flag", "unknown expander", "node group spec validation"],
)  # fmt: skip
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], groups: str, message: str) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(groups)
    result = CliRunner().invoke(
        app, ["autoscaler", "--kubeconfig", str(tmp_path / "none"), "--node-groups", str(path), *args]
    )
    assert result.exit_code == 1
    assert result.output.strip() == message


def test_autoscaler_process_runs_the_groups_and_writes_its_status(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", tls=True)  # kubectl sends its token over TLS only
    groups = tmp_path / "groups.yaml"
    groups.write_text(GROUPS)
    log_path = tmp_path / "autoscaler.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [*KUBEPLANE, "autoscaler", "--kubeconfig", str(server.kubeconfig), "--node-groups", str(groups),
             "--metrics-port=0", "--scan-interval=1s"],
            stdout=log,
            stderr=log,
        )  # fmt: skip
    kubectl = [KUBECTL, "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(tmp_path / "cache")]
    try:
        deadline = time.monotonic() + 30
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            got = subprocess.run(
                [*kubectl, "get", "configmap", "cluster-autoscaler-status", "-n", "kube-system", "-o", "json"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if got.returncode == 0:
                status = yaml.safe_load(json.loads(got.stdout)["data"]["status"])
                break
            time.sleep(0.2)
        assert status, log_path.read_text()
        [group] = status["nodeGroups"]
        assert group["name"] == "small"
        assert group["health"]["cloudProviderTarget"] == 1
        nodes = subprocess.run([*kubectl, "get", "nodes", "-o", "name"], capture_output=True, text=True, check=True)
        assert nodes.stdout.split() == ["node/small-0"]
    finally:
        stop_process(process)
        server.stop()
    assert process.returncode == 0, log_path.read_text()
