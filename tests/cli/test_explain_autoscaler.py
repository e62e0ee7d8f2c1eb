"""``kubeplane explain`` on a cluster of ``kubeplane up --node-groups``: the autoscaler publishes its groups in
kube-system/kubeplane-autoscaler-node-groups, and explain's answer for a Pending pod gets the ``autoscaler`` part
(each template's Filter verdict, the TriggeredScaleUp group and the upcoming node's expected Ready time; for a
pod no group can take, NotTriggerScaleUp's reasons), in ``-o json`` and in the table."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeplane.autoscaler.drain import time_of

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = str(Path(sys.executable).parent / "kubectl")
GROUPS = """\
nodeGroups:
- name: small
  minSize: 1
  maxSize: 3
  provisioningDelay: 5m
  template: {capacity: {cpu: "2", memory: 4Gi}}
- name: tainted
  minSize: 0
  maxSize: 2
  template: {capacity: {cpu: "8", memory: 16Gi}, taints: [{key: dedicated, value: batch, effect: NoSchedule}]}
"""


def _pod(name: str, cpu: str) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": "100Mi"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": resources}]},
    }


@dataclass(frozen=True, slots=True)
class ScaledUp:
    """A ``kubeplane up --node-groups`` cluster after the autoscaler's loop: ``pending`` waits for the small
    group's scale-up (TriggeredScaleUp), ``too-big`` fits no group (NotTriggerScaleUp)."""

    kubeconfig: Path
    kubectl: list[str]
    pending: str


@contextmanager
def scaled_up_cluster(tmp_path: Path) -> Iterator[ScaledUp]:
    (tmp_path / "groups.yaml").write_text(GROUPS)
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--nodes", "0", "--store", "memory",
         "--node-groups", str(tmp_path / "groups.yaml")],
        stdout=log, stderr=log,
    )  # fmt: skip
    kubeconfig = data / "kubeconfig"
    kubectl = [KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        pods = {
            "kind": "List",
            "apiVersion": "v1",
            "items": [_pod("a", "1500m"), _pod("b", "1500m"), _pod("too-big", "16")],
        }
        subprocess.run([*kubectl, "apply", "-f", "-"], input=json.dumps(pods), text=True, check=True, timeout=60)
        deadline = time.monotonic() + 40  # the autoscaler's scan-interval is 10s
        reasons: set[str] = set()
        while time.monotonic() < deadline and reasons != {"TriggeredScaleUp", "NotTriggerScaleUp"}:
            time.sleep(0.5)
            events = subprocess.run(
                [*kubectl, "get", "events", "-o", "json"], capture_output=True, text=True, check=True, timeout=60
            )
            reasons = {e["reason"] for e in json.loads(events.stdout)["items"]} & {
                "TriggeredScaleUp",
                "NotTriggerScaleUp",
            }
        assert reasons == {"TriggeredScaleUp", "NotTriggerScaleUp"}, (tmp_path / "up.log").read_text()
        listed = subprocess.run([*kubectl, "get", "pods", "-o", "json"],
                                capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
        [pending] = [
            p["metadata"]["name"] for p in json.loads(listed.stdout)["items"]
            if p["metadata"]["name"] != "too-big" and not p["spec"].get("nodeName")
        ]  # fmt: skip  # one of a and b fits on small-0, the other waits for the scale-up
        yield ScaledUp(kubeconfig, kubectl, pending)
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=30)
        log.close()
    assert code == 0


def test_explain_says_which_group_helps_and_when_its_node_is_expected(tmp_path: Path) -> None:
    with scaled_up_cluster(tmp_path) as cluster:
        kubeconfig, kubectl, pending = cluster.kubeconfig, cluster.kubectl, cluster.pending
        explain = [*KUBEPLANE, "explain", "--kubeconfig", str(kubeconfig)]
        out = subprocess.run([*explain, "--pod", f"default/{pending}", "-o", "json"],
                             capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
        part = json.loads(out.stdout)["autoscaler"]
        small, tainted = part["groups"]
        assert (small["name"], small["fits"], small["helps"]) == ("small", True, True)
        assert tainted["reasons"] == ["node(s) had untolerated taint(s)"]  # TaintToleration on the template
        assert part["triggered"]["message"] == "pod triggered scale-up: [{small 1->2 (max: 3)}]"
        [upcoming] = part["upcoming"]
        node = json.loads(subprocess.run([*kubectl, "get", "node", upcoming["node"], "-o", "json"],
                                         capture_output=True, text=True, check=True, timeout=60).stdout)  # fmt: skip
        created = time_of(node["metadata"]["creationTimestamp"])
        assert created is not None
        assert time_of(upcoming["expectedReady"]) == created + 300  # creation (the scale-up) + provisioningDelay

        out = subprocess.run([*explain, "--pod", "default/too-big", "-o", "json"],
                             capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
        part = json.loads(out.stdout)["autoscaler"]
        assert part["notTriggered"]["message"] == (
            "pod didn't trigger scale-up: 1 Insufficient cpu, 1 node(s) had untolerated taint(s)"
        )
        assert part["triggered"] is None

        table = subprocess.run([*explain, "--pod", f"default/{pending}"],
                               capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
        assert "autoscaler: node groups (kube-system/kubeplane-autoscaler-node-groups)" in table
        assert f"upcoming node {upcoming['node']} (small): expected Ready at {upcoming['expectedReady']}" in table
