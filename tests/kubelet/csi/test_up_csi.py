"""``kubeplane up`` (both modes) ships the simulated CSI driver: the default StorageClass ``standard`` (as kind's,
backed by csi.kubeplane.io), the CSIDriver and a CSINode per node, read with real kubectl (the venv's, with this
test's kubeconfig and cache dir)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl not installed in the venv (make kubectl)")
@pytest.mark.parametrize("mode", [[], ["--processes"]], ids=["one-process", "processes"])
def test_up_has_the_standard_class_csidriver_and_csinodes(tmp_path: Path, mode: list[str]) -> None:
    data = tmp_path / "data"
    kubeconfig = data / "kubeconfig"
    log = (tmp_path / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--store", "memory", *mode],
        stdout=log, stderr=log,
    )  # fmt: skip

    def kubectl(*args: str) -> str:
        base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=True).stdout

    try:
        deadline = time.monotonic() + 120
        while not kubeconfig.exists():
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, "kubeplane up not ready"
            time.sleep(0.1)
        standard = json.loads(kubectl("get", "storageclass", "standard", "-o", "json"))
        assert standard["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
        assert standard["provisioner"] == "csi.kubeplane.io"
        assert standard["volumeBindingMode"] == "WaitForFirstConsumer"
        assert standard["reclaimPolicy"] == "Delete"
        assert standard["allowVolumeExpansion"] is True
        driver = json.loads(kubectl("get", "csidriver", "csi.kubeplane.io", "-o", "json"))
        assert driver["spec"]["attachRequired"] is False
        assert driver["spec"]["storageCapacity"] is False  # the default driver: unlimited capacity
        while True:  # the fleet registers the CSINodes right after the Nodes (the kubeconfig may come first)
            nodes = json.loads(kubectl("get", "csinodes", "-o", "json"))["items"]
            if len(nodes) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert {n["metadata"]["name"] for n in nodes} == {"master", "node01", "node02"}
        for node in nodes:
            (entry,) = node["spec"]["drivers"]
            assert entry["name"] == "csi.kubeplane.io"
            assert entry["nodeID"] == node["metadata"]["name"]
            assert entry["topologyKeys"] == ["topology.csi.kubeplane.io/node"]
        labels = kubectl(
            "get", "nodes", "-o", "jsonpath={.items[*].metadata.labels.topology\\.csi\\.kubeplane\\.io/node}"
        )
        assert sorted(labels.split()) == ["master", "node01", "node02"]
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=60)
        log.close()
    assert code == 0
