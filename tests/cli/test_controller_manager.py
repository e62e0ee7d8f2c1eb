"""``kubeplane controller-manager``: leader election on kube-system/kube-controller-manager, /healthz and /metrics on
``--metrics-port``, ``--controllers`` selection and its one-line error, a clean SIGTERM."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.controllers.manager import select_controllers
from tests.apiserver.conftest import start_server, stop_process

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        (["*"], ["a", "b", "c"]),
        (["*", "-b"], ["a", "c"]),
        (["c", "a"], ["a", "c"]),
        ([], []),
    ],
)
def test_select_controllers_as_upstream(spec: list[str], want: list[str]) -> None:
    assert select_controllers(spec, ["a", "b", "c"]) == want


def test_unknown_controller_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["controller-manager", "--kubeconfig", str(tmp_path / "none"), "--controllers=x"])
    assert result.exit_code == 1
    assert result.output.startswith('error: --controllers: "x" is not in the list of known controllers')
    assert len(result.output.strip().splitlines()) == 1


def test_controller_manager_process_leads_and_serves_metrics(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    log_path = tmp_path / "cm.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                *KUBEPLANE,
                "controller-manager",
                "--kubeconfig",
                str(server.kubeconfig),
                "--leader-elect=true",
                "--leader-elect-lease-duration=4s",
                "--leader-elect-renew-deadline=3s",
                "--leader-elect-retry-period=500ms",
                "--metrics-port=0",
            ],
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        text = ""
        while time.monotonic() < deadline:
            text = log_path.read_text()
            if "acquired lease kube-system/kube-controller-manager" in text:
                break
            time.sleep(0.1)
        assert "acquired lease kube-system/kube-controller-manager" in text, text
        found = re.search(r"serving /healthz and /metrics on (http://\S+)", text)
        assert found, text
        with urllib.request.urlopen(f"{found.group(1)}/healthz", timeout=10) as response:
            assert response.read() == b"ok"
        with urllib.request.urlopen(f"{found.group(1)}/metrics", timeout=10) as response:
            assert 'leader_election_master_status{name="kube-controller-manager"} 1.0' in response.read().decode()
    finally:
        stop_process(process)
        server.stop()
    assert process.returncode == 0, log_path.read_text()
