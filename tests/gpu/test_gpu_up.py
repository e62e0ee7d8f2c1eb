"""GPU sharing on a real cluster: ``kubeplane up`` with GPU nodes and the GPU plugins, driven by the project's
kubectl, and ``kubeplane explain`` against it.

Two nodes: ``a100-0`` (two A100 devices) and ``t4-0`` (one T4). The configuration adds GpuShare and
GpuModelPreference (A100 before T4) to the default plugins. Shares of 600 milli-GPU fill the A100's devices one
each (device 0, then 1: 400 milli is left on each), the third goes to the T4, the fourth fits nowhere and is Pending
with GpuShare's reason; a pod bound by hand (``spec.nodeName``) gets its device from the kubelet; the scheduler and
the kubelet never put two shares that do not fit together on one device.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.cli.test_up_seeds import KUBEPLANE, Cluster, _start, _stop, _wait_for_kubeconfig, eventually

NODES = [
    {
        "name": "a100-0",
        "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "2"},
        "labels": {"nvidia.com/gpu.product": "A100"},
    },
    {
        "name": "t4-0",
        "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "1"},
        "labels": {"nvidia.com/gpu.product": "T4"},
    },
]
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "GpuShare"}, {"name": "GpuModelPreference", "weight": 50}]}
            },
            "pluginConfig": [{"name": "GpuModelPreference", "args": {"models": ["A100", "T4"]}}],
        }
    ],
}


def share(name: str, milli: int, node: str | None = None) -> str:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"gpu.kubeplane.io/milli": str(milli)}},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": "1"}}}]},
    }
    if node:
        pod["spec"]["nodeName"] = node
    return json.dumps(pod)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("gpu-up")
    (base / "nodes.yaml").write_text(yaml.safe_dump(NODES))
    (base / "sched.yaml").write_text(yaml.safe_dump(CONFIG))
    data_dir = base / "data"
    process, log = _start(
        data_dir, "--node-config", str(base / "nodes.yaml"), "--scheduler-config", str(base / "sched.yaml")
    )
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        yield Cluster(data_dir, process, log)
    finally:
        code = _stop(process, log)
    assert code == 0, log.read_text(errors="replace")[-3000:]


def placed(cluster: Cluster, name: str) -> tuple[str, str]:
    """(node, devices annotation) of a Running pod."""
    pod = cluster.running_pod(name)
    devices = pod["metadata"].get("annotations", {}).get("gpu.kubeplane.io/devices", "")
    assert devices, pod["metadata"]
    return pod["spec"]["nodeName"], devices


def test_shares_fill_the_preferred_model_device_by_device_then_the_next(cluster: Cluster) -> None:
    cluster.kubectl("create", "-f", "-", stdin=share("s1", 600))
    assert placed(cluster, "s1") == ("a100-0", "0")
    cluster.kubectl("create", "-f", "-", stdin=share("s2", 600))
    assert placed(cluster, "s2") == ("a100-0", "1")  # device 0 has 400 milli left
    cluster.kubectl("create", "-f", "-", stdin=share("s3", 600))
    assert placed(cluster, "s3") == ("t4-0", "0")
    cluster.kubectl("create", "-f", "-", stdin=share("s4", 600))
    cluster.pending_with("s4", "0/2 nodes are available: 2 node(s) had no GPU with 600 milli free.")

    # A small share still fits next to a big one; best fit takes the tightest device (all three have 400 left:
    # the preferred model, lowest index).
    cluster.kubectl("create", "-f", "-", stdin=share("s5", 400))
    assert placed(cluster, "s5") == ("a100-0", "0")

    # kubeplane explain on the live cluster shows the same reasons for the pending pod.
    kubeconfig = str(cluster.kubeconfig)
    config = cluster.data_dir.parent / "sched.yaml"
    explained = subprocess.run(
        [str(KUBEPLANE), "explain", "--kubeconfig", kubeconfig, "--pod", "default/s4", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "had no GPU with 600 milli free" in explained.stdout, explained.stdout + explained.stderr

    # Freeing a device lets the pending share in.
    cluster.kubectl("delete", "pod", "s3", "--wait=false")
    assert placed(cluster, "s4") == ("t4-0", "0")


def test_a_pod_bound_by_hand_gets_its_device_from_the_kubelet(cluster: Cluster) -> None:
    cluster.kubectl("create", "-f", "-", stdin=share("manual", 300, node="a100-0"))
    assert placed(cluster, "manual") == ("a100-0", "1")  # first fit: device 0 is full (s1 and s5)

    # One too many by hand: the kubelet refuses it as upstream's device manager does.
    cluster.kubectl("create", "-f", "-", stdin=share("toomuch", 900, node="a100-0"))

    def refused() -> dict[str, Any]:
        pod = cluster.pod("toomuch")
        assert pod is not None
        assert pod.get("status", {}).get("phase") == "Failed", pod.get("status")
        return pod

    status = eventually(refused, timeout=30)["status"]
    assert status["reason"] == "UnexpectedAdmissionError"
    assert status["message"].startswith("Allocate failed due to requested number of devices unavailable")
