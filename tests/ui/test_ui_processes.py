"""With ``kubeplane up --processes`` the web UI is served by the API server's own process, not the scheduler's:
it must still explain with the scheduler's configuration (``--scheduler-config`` reaches the API server as its
hidden ``--ui-scheduler-config``), not kube-scheduler's default. Checked over HTTP, as the browser calls it."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubeplane.client.kubeconfig import load_kubeconfig
from tests.cli.test_up_seeds import _start, _stop, _wait_for_kubeconfig

CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def _call(address: str, method: str, path: str, headers: dict[str, str], body: str = "") -> tuple[Any, bytes]:
    parts = urlsplit(address)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(parts.hostname or "127.0.0.1", parts.port, context=context, timeout=60)
    conn.request(method, path, body=body or None, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response, data


def test_the_ui_of_up_processes_uses_the_schedulers_configuration(tmp_path: Path) -> None:
    config = tmp_path / "scheduler.yaml"
    config.write_text(CONFIG)
    data_dir = tmp_path / "data"
    process, log = _start(data_dir, "--processes", "--scheduler-config", str(config))
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        kubeconfig = load_kubeconfig(data_dir / "kubeconfig")
        address, token = kubeconfig.server, kubeconfig.token or ""
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        response, _ = _call(address, "POST", "/ui/login", form, f"token={token}")
        assert response.status == 303
        cookie = response.getheader("set-cookie").split(";", 1)[0]
        response, data = _call(address, "GET", "/ui/scheduler/config", {"Cookie": cookie, "X-Kubeplane-UI": "1"})
        assert response.status == 200, data
        doc = json.loads(data)
        assert doc["source"] == "running"
        assert "type: MostAllocated" in doc["yaml"]
        assert "leaderElect: false" in doc["yaml"]
    finally:
        code = _stop(process, log)
    assert code == 0, log.read_text(errors="replace")[-3000:]
