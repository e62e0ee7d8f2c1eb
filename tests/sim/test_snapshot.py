"""A simulation that starts from a live cluster: ``kubeplane sim snapshot`` and ``sim run --from-cluster``
against a running ``kubeplane up``, then the "what if I drain node01" question answered in the simulation while
the cluster itself is untouched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Scenario

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


def test_snapshot_of_a_running_cluster_and_a_what_if_drain(tmp_path: Path) -> None:
    data = tmp_path / "data"
    up = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--pull-delay", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    kubeconfig = data / "kubeconfig"
    base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert up.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.1)
        subprocess.run([*base, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=4"], check=True,
                       capture_output=True, timeout=60)  # fmt: skip
        while True:
            pods = json.loads(subprocess.run([*base, "get", "pods", "-o", "json"], check=True, capture_output=True,
                                             timeout=60).stdout)["items"]  # fmt: skip
            if len(pods) == 4 and all(p["status"].get("phase") == "Running" for p in pods):
                break
            assert time.monotonic() < deadline
            time.sleep(0.2)
        live = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
        # The kubelets list pulled images in their next status report: wait for it, so that the two snapshots
        # below (from the API, then from the store) see the same node status (they raced on `images` before).
        while True:
            nodes = json.loads(subprocess.run([*base, "get", "nodes", "-o", "json"], check=True, capture_output=True,
                                              timeout=60).stdout)["items"]  # fmt: skip
            pulled = {
                n["metadata"]["name"]
                for n in nodes
                if any(
                    any("nginx:1.27" in name for name in i.get("names") or ()) for i in n["status"].get("images") or ()
                )
            }
            if set(live.values()) <= pulled:
                break
            assert time.monotonic() < deadline + 60
            time.sleep(0.2)

        out = tmp_path / "snap.yaml"
        done = subprocess.run([*KUBEPLANE, "sim", "snapshot", "--kubeconfig", str(kubeconfig), "--out", str(out)],
                              capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        assert done.stdout.startswith(f"wrote {out}: 3 node(s), ")
        scenario_data = yaml.safe_load(out.read_text())
        assert [n["name"] for n in scenario_data["cluster"]["nodes"]] == ["master", "node01", "node02"]
        kinds = [w["manifest"]["kind"] for w in scenario_data["workload"]]
        assert kinds.count("Pod") == 4
        assert kinds.count("Deployment") == 1
        assert kinds.count("ReplicaSet") == 1

        # the same from the data dir's store, while the cluster runs
        out2 = tmp_path / "snap2.yaml"
        subprocess.run([*KUBEPLANE, "sim", "snapshot", "--data-dir", str(data), "--out", str(out2)],
                       capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
        assert yaml.safe_load(out2.read_text())["cluster"] == scenario_data["cluster"]

        # replayed: the pods stay where they run, and the controllers adopt them (no new pods)
        scenario = Scenario.parse({**scenario_data, "duration": "2m"})
        result = run(scenario)
        assert {p["name"]: p["node"] for p in result.pods} == live
        # what if node01 were drained: every web pod on node02, the live cluster unchanged
        drained = Scenario.parse({**scenario_data, "duration": "3m",
                                  "actions": [{"at": "30s", "drain": {"node": "node01"}}]})  # fmt: skip
        after = run(drained)
        running = [p for p in after.pods if p["phase"] == "Running"]
        assert len(running) == 4
        assert {p["node"] for p in running} == {"node02"}
        still = json.loads(subprocess.run([*base, "get", "pods", "-o", "json"], check=True, capture_output=True,
                                          timeout=60).stdout)["items"]  # fmt: skip
        assert {p["metadata"]["name"]: p["spec"]["nodeName"] for p in still} == live
    finally:
        os.kill(up.pid, signal.SIGTERM)
        up.wait(timeout=30)
