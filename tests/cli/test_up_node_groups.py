"""``kubeplane up --node-groups FILE``: the groups' initial nodes join the cluster Ready, labelled with their group
(cluster-autoscaler's node groups as the simulated cloud runs them); bad input is one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"
GROUPS = """\
nodeGroups:
- name: small
  minSize: 1
  maxSize: 4
  initialSize: 2
  pricePerHour: 0.1
  provisioningDelay: 1m
  template: {capacity: {cpu: "2", memory: 4Gi}, labels: {pool: small}}
"""


@pytest.mark.parametrize(
    ("groups", "extra", "message"),
    [
        ("- {name: g, minSize: 3, maxSize: 1}\n", [],
         "error: node group g: maxSize: max size must be greater or equal to min size"),
        (GROUPS, ["--processes"],
         "error: --node-groups runs the groups' nodes in up's own fleet: it cannot be used with --processes"),
    ],
    ids=["ca-validate-max-below-min", "one-process-only"],
)  # fmt: skip
def test_bad_node_groups_are_one_line(tmp_path: Path, groups: str, extra: list[str], message: str) -> None:
    (tmp_path / "groups.yaml").write_text(groups)
    done = subprocess.run(
        [*KUBEPLANE, "up", "--data-dir", str(tmp_path / "d"), "--node-groups", "groups.yaml", *extra],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == message


def test_the_groups_initial_nodes_join_ready_and_labelled(tmp_path: Path) -> None:
    (tmp_path / "groups.yaml").write_text(GROUPS)
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--nodes", "0", "--store", "memory",
         "--node-groups", str(tmp_path / "groups.yaml")],
        stdout=log, stderr=log,
    )  # fmt: skip
    try:
        kubeconfig = data / "kubeconfig"
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        out = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
             "get", "nodes", "--no-headers", "-L", "autoscaling.kubeplane.io/node-group,pool"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        rows = sorted(line.split() for line in out.splitlines())
        assert [(r[0], r[1]) for r in rows] == [("master", "Ready"), ("small-0", "Ready"), ("small-1", "Ready")]
        assert [r[-2:] for r in rows[1:]] == [["small", "small"], ["small", "small"]]
        assert ", 3 node(s)" in (tmp_path / "up.log").read_text()  # the ready message counts the groups' nodes
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=30)
        log.close()
    assert code == 0
