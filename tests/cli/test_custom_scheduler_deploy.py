"""The custom-scheduler manifests of deploy/custom-scheduler/ (seed 002): real kubectl applies them to
``kubeplane apiserver`` (the stand-in for a real cluster), then ``kubeplane scheduler`` runs with the Deployment's
arguments and the ConfigMap's configuration and schedules the pod that asks for ``custom-scheduler``, taking the
Lease the manifests name; the default scheduler is not running, so only the custom one can have bound it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import yaml

from tests.apiserver.conftest import start_server

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "custom-scheduler"
KUBECTL = Path(sys.executable).parent / "kubectl"
KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node01", "labels": {"kubernetes.io/hostname": "node01"}},
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def test_manifests_apply_and_the_custom_scheduler_binds_its_pod(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", tls=True)
    base = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(tmp_path / "cache")]

    def kubectl(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*base, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    scheduler: subprocess.Popen[bytes] | None = None
    log_path = tmp_path / "scheduler.log"
    try:
        applied = kubectl("apply", "-f", str(DEPLOY))
        for expected in (
            "serviceaccount/custom-scheduler created",
            "clusterrolebinding.rbac.authorization.k8s.io/custom-scheduler-role-binding created",
            "configmap/custom-scheduler-config created",
            "deployment.apps/custom-scheduler created",
            "pod/custom-scheduled-pod created",
        ):
            assert expected in applied
        kubectl("apply", "-f", "-", stdin=json.dumps(NODE))

        config_map = json.loads(
            kubectl("get", "configmap", "custom-scheduler-config", "-n", "kube-system", "-o", "json")
        )
        config = tmp_path / "scheduler-config.yaml"
        config.write_text(config_map["data"]["scheduler-config.yaml"])
        deployment = yaml.safe_load((DEPLOY / "deployment.yaml").read_text())
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        # The container's own config path and its all-interfaces metrics address stay in the pod; tests bind
        # to loopback only.
        args = [a for a in args if not a.startswith(("--config=", "--bind-address="))]
        with log_path.open("wb") as log:
            scheduler = subprocess.Popen(
                [
                    *KUBEPLANE,
                    "scheduler",
                    "--kubeconfig",
                    str(server.kubeconfig),
                    "--config",
                    str(config),
                    *args,
                    "--metrics-port=0",
                ],
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 60
        node = ""
        while time.monotonic() < deadline and not node:
            node = kubectl("get", "pod", "custom-scheduled-pod", "-o", "jsonpath={.spec.nodeName}").strip()
            time.sleep(0.3)
        assert node == "node01", log_path.read_text()
        holder = kubectl(
            "get", "lease", "custom-scheduler", "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}"
        )
        assert holder, log_path.read_text()

        # /healthz and /metrics on the port it logged (--metrics-port=0): the attempt and the leadership counted.
        found = re.search(r"serving /healthz and /metrics on (http://\S+)", log_path.read_text())
        assert found, log_path.read_text()
        url = found.group(1)
        with urllib.request.urlopen(f"{url}/healthz", timeout=10) as response:
            assert response.read() == b"ok"
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode()
        assert 'scheduler_schedule_attempts_total{profile="custom-scheduler",result="scheduled"} 1.0' in text
        assert 'leader_election_master_status{name="custom-scheduler"} 1.0' in text
    finally:
        if scheduler is not None:
            os.kill(scheduler.pid, signal.SIGTERM)
            scheduler.wait(timeout=30)
        server.stop()
