"""``kubeplane up --node-groups FILE``: the groups' initial nodes join the cluster Ready, labelled with their group
(cluster-autoscaler's node groups as the simulated cloud runs them), and the autoscaler runs with the
``--autoscaler-flag`` flags; bad input is one line."""

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
        (GROUPS, ["--autoscaler-flag=--scan-interval=ten"],
         'error: invalid value "ten" for flag -scan-interval: parse error'),
        (GROUPS, ["--autoscaler-flag", "--max-nodes-totl=3"], "error: flag provided but not defined: -max-nodes-totl"),
    ],
    ids=["ca-validate-max-below-min", "one-process-only", "go-flag-invalid-value", "go-flag-not-defined"],
)  # fmt: skip
def test_bad_node_groups_are_one_line(tmp_path: Path, groups: str, extra: list[str], message: str) -> None:
    (tmp_path / "groups.yaml").write_text(groups)
    done = subprocess.run(
        [*KUBEPLANE, "up", "--data-dir", str(tmp_path / "d"), "--node-groups", "groups.yaml", *extra],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == message
    assert not (tmp_path / "d").exists()  # refused before the data dir is touched


def test_autoscaler_flags_need_node_groups(tmp_path: Path) -> None:
    done = subprocess.run(
        [*KUBEPLANE, "up", "--data-dir", str(tmp_path / "d"), "--autoscaler-flag=--scan-interval=1m"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr.strip()) == (
        1,
        "error: --autoscaler-flag configures the autoscaler of --node-groups: give --node-groups FILE",
    )


def test_the_groups_initial_nodes_join_ready_and_labelled_and_the_autoscaler_gets_its_flags(tmp_path: Path) -> None:
    """The autoscaler runs with ``--autoscaler-flag``s: its status ConfigMap (written every loop, upstream's
    ``--write-status-configmap``) has the name ``--status-config-map-name`` gave it."""
    (tmp_path / "groups.yaml").write_text(GROUPS)
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--nodes", "0", "--store", "memory",
         "--node-groups", str(tmp_path / "groups.yaml"), "--autoscaler-flag=--scan-interval=1s",
         "--autoscaler-flag", "--status-config-map-name=ca-status"],
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
        kubectl = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
        get_status = [*kubectl, "get", "configmap", "-n", "kube-system", "-o", "name", "--ignore-not-found"]
        deadline = time.monotonic() + 60
        while not (found := subprocess.run([*get_status, "ca-status"], capture_output=True, text=True, timeout=60,
                                           check=True).stdout.strip()):  # fmt: skip
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "up.log").read_text()
            time.sleep(0.2)
        assert found == "configmap/ca-status"
        default = subprocess.run([*get_status, "cluster-autoscaler-status"], capture_output=True, text=True,
                                 timeout=60, check=True).stdout  # fmt: skip
        assert default == ""
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=30)
        log.close()
    assert code == 0
