"""Issue 11's acceptance: ``kubeplane up`` as a subprocess, driven only by the project's real kubectl through the
seeds' scenarios (examples/seeds/README.md), checking placements, phases and ``kubectl describe`` events.

One cluster serves the whole module (started once; each scenario deletes what it created and the ``_reset``
fixture puts the nodes back to the demo state: no ``kgc`` label, workers untainted and schedulable, master with
only its control-plane NoSchedule taint), so the module stays within a few minutes. The process is stopped with
SIGTERM by its PID at the end and must exit 0 within 20 s. A second test starts ``kubeplane up --processes`` and
checks the same cluster forms over HTTP and that SIGTERM leaves no child process behind.

Every wait polls with :func:`eventually`; nothing sleeps for a fixed time except where the point is that
something does *not* happen (a Pending pod staying Pending, a tolerated pod staying put).
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

BIN = Path(sys.executable).parent
KUBECTL = BIN / "kubectl"
KUBEPLANE = BIN / "kubeplane"
SEEDS = Path(__file__).resolve().parents[2] / "examples" / "seeds"
WORKERS = ("node01", "node02")
MASTER_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}

T = TypeVar("T")


def eventually(fn: Callable[[], T], timeout: float = 30.0, interval: float = 0.25) -> T:
    """Call ``fn`` until it returns a truthy value (returned) without raising AssertionError; fail at ``timeout``
    with the last value or error."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            value = fn()
            if value:
                return value
            last = value
        except AssertionError as exc:
            last = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout}s; last: {last}")
        time.sleep(interval)


def seed(name: str) -> str:
    path = SEEDS / name
    assert path.is_file(), path
    return str(path)


@dataclass
class Cluster:
    data_dir: Path
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def run(self, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.data_dir / "cache")]
        return subprocess.run(
            [*command, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 120) -> str:
        done = self.run(*args, stdin=stdin, timeout=timeout)
        if done.returncode != 0:
            tail = self.log.read_text(errors="replace")[-3000:] if self.log.exists() else ""
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}\n--- up log:\n{tail}"
            )
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json"))

    def pods(self, selector: str | None = None) -> list[dict[str, Any]]:
        """The pods of ``default`` (those of ``selector``), terminating ones left out."""
        items = self.json("get", "pods", *(["-l", selector] if selector else []))["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    def pod(self, name: str) -> dict[str, Any] | None:
        done = self.run("get", "pod", name, "-o", "json")
        if done.returncode != 0:
            assert "NotFound" in done.stderr, done.stderr
            return None
        pod: dict[str, Any] = json.loads(done.stdout)
        return pod

    def running(self, selector: str, count: int) -> list[dict[str, Any]]:
        """Wait until exactly ``count`` live pods of ``selector`` exist and all are Running on a node."""

        def check() -> list[dict[str, Any]]:
            pods = self.pods(selector)
            assert len(pods) == count, [p["metadata"]["name"] for p in pods]
            assert all(phase(p) == "Running" and p["spec"].get("nodeName") for p in pods), summary(pods)
            return pods

        return eventually(check, timeout=45)

    def running_pod(self, name: str) -> dict[str, Any]:
        def check() -> dict[str, Any]:
            pod = self.pod(name)
            assert pod is not None, f"{name} does not exist"
            assert phase(pod) == "Running", summary([pod])
            assert pod["spec"].get("nodeName"), summary([pod])
            return pod

        return eventually(check, timeout=45)

    def gone(self, name: str, timeout: float = 30) -> None:
        eventually(lambda: self.pod(name) is None, timeout=timeout)

    def events(self, kind: str, name: str) -> list[dict[str, str]]:
        """The Events table of ``kubectl describe KIND NAME``: one dict per row (type, reason, from, message)."""
        return describe_events(self.kubectl("describe", kind, name))

    def pending_with(self, name: str, message: str) -> dict[str, Any]:
        """Wait for pod ``name`` to be unscheduled with a FailedScheduling event whose message has ``message``."""

        def check() -> dict[str, Any]:
            pod = self.pod(name)
            assert pod is not None, f"{name} does not exist"
            assert phase(pod) == "Pending", summary([pod])
            assert not pod["spec"].get("nodeName"), summary([pod])
            failed = [e for e in self.events("pod", name) if e["reason"] == "FailedScheduling"]
            assert any(message in e["message"] for e in failed), failed
            assert all(e["type"] == "Warning" and e["from"] == "default-scheduler" for e in failed), failed
            return pod

        return eventually(check, timeout=30)


def phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def node_of(pod: dict[str, Any]) -> str:
    return str(pod["spec"].get("nodeName") or "")


def images(pods: list[dict[str, Any]]) -> set[str]:
    return {c["image"] for p in pods for c in p["spec"]["containers"]}


def summary(pods: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(p["metadata"]["name"], phase(p), node_of(p)) for p in pods]


def describe_events(text: str) -> list[dict[str, str]]:
    """Parse the Events section of ``kubectl describe`` output by the header's column positions (the Age column
    can hold spaces, e.g. ``2s (x3 over 10s)``)."""
    lines = text.split("\nEvents:", 1)[1].splitlines()
    if not lines or "<none>" in lines[0]:
        return []
    header = lines[1]
    starts = [header.index(column) for column in ("Type", "Reason", "Age", "From", "Message")]
    rows = []
    for line in lines[3:]:
        if not line.strip():
            break
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)]
        rows.append(dict(zip(("type", "reason", "age", "from", "message"), cells, strict=True)))
    return rows


def test_describe_events_parser() -> None:
    text = (
        "Name: x\nEvents:\n  Type     Reason            Age               From               Message\n"
        "  ----     ------            ----              ----               -------\n"
        "  Warning  FailedScheduling  2s (x3 over 10s)  default-scheduler  0/3 nodes are available: a, b.\n"
        "  Normal   Pulled            1s                kubelet            Successfully pulled\n"
    )
    assert describe_events(text) == [
        {
            "type": "Warning",
            "reason": "FailedScheduling",
            "age": "2s (x3 over 10s)",
            "from": "default-scheduler",
            "message": "0/3 nodes are available: a, b.",
        },
        {"type": "Normal", "reason": "Pulled", "age": "1s", "from": "kubelet", "message": "Successfully pulled"},
    ]
    assert describe_events("Name: x\nEvents:  <none>\n") == []


def _wait_for_kubeconfig(process: subprocess.Popen[bytes], data_dir: Path, log: Path) -> None:
    deadline = time.monotonic() + 60
    while not (data_dir / "kubeconfig").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"kubeplane up did not get ready:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)


def _stop(process: subprocess.Popen[bytes], log: Path) -> int:
    """SIGTERM by PID; the exit code (killed, and the test failed, if it takes more than 20 s)."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        tail = log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"kubeplane up ignored SIGTERM for 20 s:\n{tail}") from None


def _start(data_dir: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    data_dir.mkdir(parents=True, exist_ok=True)
    log = data_dir.parent / f"{data_dir.name}-up.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(KUBEPLANE),
                "up",
                "--data-dir",
                str(data_dir),
                "--port",
                "0",
                "--pull-delay",
                "0.1",
                "--shutdown-delay",
                "1s",
                *extra,
            ],
            stdout=out,
            stderr=out,
        )
    return process, log


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("up") / "data"
    process, log = _start(data_dir)
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        cluster = Cluster(data_dir, process, log)
        names = cluster.kubectl("get", "nodes", "-o", "name").split()
        assert names == ["node/master", "node/node01", "node/node02"]  # registered before the kubeconfig appears
        yield cluster
    finally:
        code = _stop(process, log)
    assert code == 0, log.read_text(errors="replace")[-3000:]


@pytest.fixture(autouse=True)
def _reset(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each scenario: delete its workloads and pods, and put the nodes back to the demo state."""
    yield
    if "cluster" not in request.fixturenames:
        return
    cluster: Cluster = request.getfixturevalue("cluster")
    if cluster.process.poll() is not None:
        return
    cluster.kubectl("delete", "deployments,replicasets,daemonsets,pods", "--all", "--wait=false")
    eventually(lambda: not cluster.kubectl("get", "pods", "-o", "name").strip(), timeout=60)
    cluster.kubectl("label", "nodes", "--all", "kgc-")
    cluster.kubectl("uncordon", *WORKERS)
    for node in cluster.json("get", "nodes")["items"]:
        name = node["metadata"]["name"]
        taints = [{k: t[k] for k in ("key", "effect")} for t in node["spec"].get("taints") or []]
        want = [MASTER_TAINT] if name == "master" else []
        if taints != want:
            patch = {"spec": {"taints": want or None}}
            cluster.kubectl("patch", "node", name, "--type=merge", "-p", json.dumps(patch))


def started_reasons(cluster: Cluster, pod: str) -> list[str]:
    """The event reasons ``kubectl describe pod`` shows, once the container has Started."""
    reasons = [e["reason"] for e in cluster.events("pod", pod)]
    assert "Started" in reasons, reasons
    return reasons


def count_of(pods: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    assert len(pods) == count, summary(pods)
    return pods


# -- 1. nodeName -------------------------------------------------------------------------------------------


def test_node_name_bypasses_the_scheduler(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("myapp.yaml"))
    pods = cluster.running("app=myapp", 3)
    assert {node_of(p) for p in pods} == {"node01"}
    wide = cluster.kubectl("get", "pods", "-l", "app=myapp", "-o", "wide")
    assert [line.split()[6] for line in wide.splitlines()[1:]] == ["node01"] * 3  # the NODE column
    for pod in pods:
        name: str = pod["metadata"]["name"]
        reasons = eventually(functools.partial(started_reasons, cluster, name))
        assert "Scheduled" not in reasons, reasons
        assert {"Pulled", "Created", "Started"} <= set(reasons), reasons
    cluster.kubectl("delete", "-f", seed("myapp.yaml"))
    eventually(lambda: not cluster.pods("app=myapp"))


# -- 2. nodeSelector and labels ----------------------------------------------------------------------------


def test_node_selector_follows_kubectl_label(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("myapp1.yaml"))
    pending = eventually(lambda: count_of(cluster.pods("app=myapp1"), 3))
    cluster.pending_with(pending[0]["metadata"]["name"], "didn't match Pod's node affinity/selector")
    time.sleep(1)
    assert all(not node_of(p) for p in cluster.pods("app=myapp1"))

    cluster.kubectl("label", "nodes", "node01", "kgc=a")
    cluster.kubectl("label", "nodes", "node02", "kgc=b")
    assert cluster.kubectl("get", "node", "-l", "kgc=a", "-o", "name").split() == ["node/node01"]
    shown = cluster.kubectl("get", "nodes", "--show-labels")
    assert "kgc=a" in shown
    assert "kgc=b" in shown
    pods = cluster.running("app=myapp1", 3)
    assert {node_of(p) for p in pods} == {"node01"}, summary(pods)
    name = pods[0]["metadata"]["name"]
    scheduled = [e for e in cluster.events("pod", name) if e["reason"] == "Scheduled"]
    assert len(scheduled) == 1, scheduled
    assert scheduled[0]["from"] == "default-scheduler"
    assert scheduled[0]["message"] == f"Successfully assigned default/{name} to node01"

    cluster.kubectl("label", "nodes", "node02", "kgc=a", "--overwrite")
    assert cluster.kubectl("get", "node", "-l", "kgc=a", "-o", "name").split() == ["node/node01", "node/node02"]
    cluster.kubectl("label", "nodes", "node01", "kgc=b", "--overwrite")
    assert cluster.kubectl("get", "node", "-l", "kgc=a", "-o", "name").split() == ["node/node02"]
    # IgnoredDuringExecution: the running pods stay; new ones go where kgc=a is now
    cluster.kubectl("scale", "deployment", "myapp1", "--replicas=5")
    pods = cluster.running("app=myapp1", 5)
    assert sorted(node_of(p) for p in pods) == ["node01"] * 3 + ["node02"] * 2, summary(pods)

    cluster.kubectl("label", "nodes", "node02", "kgc-")
    assert cluster.kubectl("get", "node", "-l", "kgc=a", "-o", "name").strip() == ""
    assert "kgc" not in cluster.json("get", "node", "node02")["metadata"]["labels"]
    cluster.kubectl("scale", "deployment", "myapp1", "--replicas=6")
    new = eventually(lambda: [p for p in cluster.pods("app=myapp1") if not node_of(p)])
    cluster.pending_with(new[0]["metadata"]["name"], "didn't match Pod's node affinity/selector")
    cluster.kubectl("delete", "-f", seed("myapp1.yaml"))


# -- 3. node affinity --------------------------------------------------------------------------------------


def test_node_affinity_required_and_preferred(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("pod1.yaml"))
    assert node_of(cluster.running_pod("affinity")) == "node01"  # NotIn node02; master is tainted
    cluster.kubectl("delete", "pod", "--all")
    cluster.gone("affinity")

    cluster.kubectl("apply", "-f", seed("pod2.yaml"))  # prefers node03, which does not exist
    assert node_of(cluster.running_pod("affinity")) in WORKERS
    reasons = [e["reason"] for e in cluster.events("pod", "affinity")]
    assert "Scheduled" in reasons, reasons
    assert "FailedScheduling" not in reasons, reasons
    cluster.kubectl("delete", "pod", "--all")
    cluster.gone("affinity")

    cluster.kubectl("label", "nodes", "node02", "kgc=a")  # preferred, but excluded by the required term
    cluster.kubectl("apply", "-f", seed("pod-node-affinity-combined.yaml"))
    assert node_of(cluster.running_pod("affinity")) == "node01"
    cluster.kubectl("delete", "pod", "--all")


# -- 4. pod affinity and anti-affinity ---------------------------------------------------------------------


def test_pod_affinity_and_anti_affinity_on_kgc(cluster: Cluster) -> None:
    cluster.kubectl("label", "nodes", "node01", "kgc=a", "--overwrite")
    cluster.kubectl("label", "nodes", "node02", "kgc=a", "--overwrite")
    cluster.kubectl("apply", "-f", seed("pod4.yaml"))  # myapp02 needs a running app=myapp01 in its kgc domain
    cluster.pending_with("myapp02", "didn't match pod affinity rules")

    cluster.kubectl("apply", "-f", seed("pod3.yaml"))
    first = node_of(cluster.running_pod("myapp01"))
    assert first in WORKERS
    assert node_of(cluster.running_pod("myapp02")) in WORKERS  # both workers are one kgc=a domain
    other = next(n for n in WORKERS if n != first)

    cluster.kubectl("apply", "-f", seed("pod5.yaml"))  # preferred anti-affinity per hostname
    assert node_of(cluster.running_pod("myapp10")) == other

    cluster.kubectl("apply", "-f", seed("pod6.yaml"))  # required anti-affinity per kgc: one domain, so nowhere
    cluster.pending_with("myapp20", "didn't match pod anti-affinity rules")
    labels = cluster.kubectl("get", "pod", "--show-labels", "-o", "wide")
    assert "app=myapp20" in labels

    cluster.kubectl("label", "nodes", "node02", "kgc=b", "--overwrite")
    assert node_of(cluster.running_pod("myapp20")) == other
    cluster.kubectl("delete", "pod", "--all")


# -- 5. taint NoSchedule -----------------------------------------------------------------------------------


def test_taint_no_schedule_then_untaint(cluster: Cluster) -> None:
    taints = [line for line in cluster.kubectl("describe", "node", "master").splitlines() if "Taints" in line]
    assert taints == ["Taints:             node-role.kubernetes.io/control-plane:NoSchedule"]
    for node in WORKERS:
        assert "tainted" in cluster.kubectl("taint", "node", node, "key1=value1:NoSchedule")
    assert "Taints:             key1=value1:NoSchedule" in cluster.kubectl("describe", "node", "node01")

    cluster.kubectl("apply", "-f", seed("pod3.yaml"))
    cluster.pending_with("myapp01", "untolerated taint")
    time.sleep(1)
    assert phase(cluster.pod("myapp01") or {}) == "Pending"

    assert "untainted" in cluster.kubectl("taint", "node", "node02", "key1:NoSchedule-")
    assert node_of(cluster.running_pod("myapp01")) == "node02"
    reasons = [e["reason"] for e in cluster.events("pod", "myapp01")]
    assert reasons.index("FailedScheduling") < reasons.index("Scheduled") < reasons.index("Started"), reasons
    cluster.kubectl("taint", "node", "node01", "key1:NoSchedule-")
    assert not cluster.json("get", "node", "node01")["spec"].get("taints")
    cluster.kubectl("delete", "pod", "myapp01")


# -- 6. NoExecute eviction and tolerationSeconds ------------------------------------------------------------

SHORT_TOLERATION = """
apiVersion: v1
kind: Pod
metadata:
  name: tolerate-briefly
  labels: {app: tolerate-briefly}
spec:
  nodeSelector: {kubernetes.io/hostname: node01}
  containers:
  - {name: myapp, image: "soscscs/myapp:v1"}
  tolerations:
  - {key: check, operator: Equal, value: mycheck, effect: NoExecute, tolerationSeconds: 6}
"""


def test_no_execute_evicts_and_toleration_seconds(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("pod3.yaml"), "-f", seed("pod5.yaml"), "-f", seed("myapp-deploy.yaml"))
    bare = {name: node_of(cluster.running_pod(name)) for name in ("myapp01", "myapp10")}
    cluster.running("app=myapp-deploy", 3)
    assert set(bare.values()) == set(WORKERS), bare  # myapp10 avoids myapp01's node

    cluster.kubectl("taint", "node", "node02", "check=mycheck:NoExecute")
    on_node02 = next(name for name, node in bare.items() if node == "node02")
    on_node01 = next(name for name, node in bare.items() if node == "node01")
    cluster.gone(on_node02)  # a bare pod is deleted and nothing recreates it

    def replaced() -> list[dict[str, Any]]:
        pods = cluster.pods("app=myapp-deploy")
        assert len(pods) == 3, summary(pods)
        assert {node_of(p) for p in pods} == {"node01"}, summary(pods)
        assert all(phase(p) == "Running" for p in pods), summary(pods)
        return pods

    eventually(replaced, timeout=45)
    assert node_of(cluster.running_pod(on_node01)) == "node01"
    events = cluster.json("get", "events", "--field-selector", f"involvedObject.name={on_node02}")["items"]
    assert any(
        e["reason"] == "TaintManagerEviction" and e["message"] == f"Marking for deletion Pod default/{on_node02}"
        for e in events
    ), [(e["reason"], e["message"]) for e in events]

    # tolerations: with both workers tainted, only a tolerating pod runs; tolerationSeconds bounds its stay
    cluster.kubectl("delete", "pod", "myapp01", "myapp10", "--ignore-not-found")
    cluster.gone("myapp01")
    cluster.gone("myapp10")
    cluster.kubectl("apply", "-f", "-", stdin=SHORT_TOLERATION)
    assert node_of(cluster.running_pod("tolerate-briefly")) == "node01"
    cluster.kubectl("taint", "node", "node01", "check=mycheck:NoExecute")
    tainted = time.monotonic()
    cluster.kubectl("apply", "-f", seed("pod3.yaml"))
    cluster.pending_with("myapp01", "untolerated taint")
    cluster.kubectl("delete", "pod", "myapp01")
    cluster.gone("myapp01")
    cluster.kubectl("apply", "-f", seed("pod3-toleration.yaml"))  # tolerationSeconds 3600
    assert node_of(cluster.running_pod("myapp01")) in WORKERS

    eventually(lambda: (cluster.pod("tolerate-briefly") or {}).get("metadata", {}).get("deletionTimestamp"))
    waited = time.monotonic() - tainted
    assert waited >= 5, f"tolerate-briefly (tolerationSeconds 6) was evicted after {waited:.1f}s"
    cluster.gone("tolerate-briefly")
    assert phase(cluster.running_pod("myapp01")) == "Running"  # 3600s: still there
    assert not (cluster.pod("myapp01") or {})["metadata"].get("deletionTimestamp")
    cluster.kubectl("taint", "node", "node01", "check=mycheck:NoExecute-")
    cluster.kubectl("taint", "node", "node02", "check=mycheck:NoExecute-")
    cluster.kubectl("delete", "-f", seed("myapp-deploy.yaml"))
    cluster.kubectl("delete", "pod", "myapp01")


# -- 7. PreferNoSchedule on the master ---------------------------------------------------------------------

BIG = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: big
spec:
  replicas: 2
  selector:
    matchLabels: {app: big}
  template:
    metadata:
      labels: {app: big}
    spec:
      containers:
      - name: big
        image: soscscs/myapp:v1
        resources:
          requests: {cpu: "3"}
"""


def test_prefer_no_schedule_master_used_only_when_workers_are_full(cluster: Cluster) -> None:
    key = "node-role.kubernetes.io/control-plane"
    cluster.kubectl("taint", "node", "master", f"{key}:NoSchedule-")
    cluster.kubectl("taint", "node", "master", f"{key}=:PreferNoSchedule")
    assert f"Taints:             {key}:PreferNoSchedule" in cluster.kubectl("describe", "node", "master")

    cluster.kubectl("apply", "-f", "-", stdin=BIG)
    pods = cluster.running("app=big", 2)
    assert sorted(node_of(p) for p in pods) == list(WORKERS), summary(pods)  # 3 of each worker's 4 CPU
    cluster.kubectl("apply", "-f", seed("pod3.yaml"))  # small: still fits a worker, so not the master
    assert node_of(cluster.running_pod("myapp01")) in WORKERS

    cluster.kubectl("scale", "deployment", "big", "--replicas=3")  # no worker has 3 CPU left
    pods = cluster.running("app=big", 3)
    assert sorted(node_of(p) for p in pods) == ["master", *WORKERS], summary(pods)

    cluster.kubectl("taint", "node", "master", f"{key}:PreferNoSchedule-")
    cluster.kubectl("taint", "node", "master", f"{key}=:NoSchedule")
    cluster.kubectl("delete", "deployment", "big")
    cluster.kubectl("delete", "pod", "myapp01")


# -- 8. cordon, drain, uncordon ----------------------------------------------------------------------------

DRAIN_EXTRAS = """
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - {name: agent, image: "soscscs/myapp:v1"}
---
apiVersion: v1
kind: Pod
metadata:
  name: scratch
  labels: {app: scratch}
spec:
  nodeSelector: {kubernetes.io/hostname: node01}
  containers:
  - name: myapp
    image: soscscs/myapp:v1
    volumeMounts: [{name: tmp, mountPath: /tmp}]
  volumes:
  - {name: tmp, emptyDir: {}}
"""


def test_cordon_drain_uncordon(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("myapp-deploy.yaml"))
    cluster.kubectl("apply", "-f", "-", stdin=DRAIN_EXTRAS)
    pods = cluster.running("app=myapp-deploy", 3)
    assert {node_of(p) for p in pods} == set(WORKERS), summary(pods)
    agents = cluster.running("app=agent", 2)  # no toleration of the master's taint: the two workers
    agent_on_node01 = next(p["metadata"]["name"] for p in agents if node_of(p) == "node01")
    assert node_of(cluster.running_pod("scratch")) == "node01"

    assert "cordoned" in cluster.kubectl("cordon", "node01")
    status = {line.split()[0]: line.split()[1] for line in cluster.kubectl("get", "nodes").splitlines()[1:]}
    assert status == {"master": "Ready", "node01": "Ready,SchedulingDisabled", "node02": "Ready"}

    refused = cluster.run("drain", "node01", "--ignore-daemonsets", "--timeout=60s")
    assert refused.returncode != 0, refused.stdout
    assert "scratch" in refused.stderr, refused.stderr  # unmanaged, and with an emptyDir
    out = cluster.kubectl(
        "drain", "node01", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=90s", timeout=120
    )
    assert "node/node01 drained" in out, out

    pods = cluster.running("app=myapp-deploy", 3)
    assert {node_of(p) for p in pods} == {"node02"}, summary(pods)
    assert cluster.pod("scratch") is None  # --force: deleted, nothing recreates it
    assert node_of(cluster.running_pod(agent_on_node01)) == "node01"  # --ignore-daemonsets: left alone
    on_node01 = [p["metadata"]["name"] for p in cluster.pods() if node_of(p) == "node01"]
    assert on_node01 == [agent_on_node01]

    assert "uncordoned" in cluster.kubectl("uncordon", "node01")
    assert not cluster.json("get", "node", "node01")["spec"].get("unschedulable")
    cluster.kubectl("scale", "deployment", "myapp-deploy", "--replicas=6")
    pods = cluster.running("app=myapp-deploy", 6)
    assert "node01" in {node_of(p) for p in pods}, summary(pods)  # schedulable again
    cluster.kubectl("delete", "-f", seed("myapp-deploy.yaml"))
    cluster.kubectl("delete", "daemonset", "agent")


# -- 9. scale and rolling update ---------------------------------------------------------------------------


def test_scale_and_rolling_update(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("myapp-deploy.yaml"))
    cluster.kubectl("rollout", "status", "deployment/myapp-deploy", "--timeout=60s", timeout=90)
    assert {node_of(p) for p in cluster.running("app=myapp-deploy", 3)} == set(WORKERS)

    cluster.kubectl("scale", "deployment", "myapp-deploy", "--replicas=6")
    pods = cluster.running("app=myapp-deploy", 6)
    assert sorted(node_of(p) for p in pods) == ["node01"] * 3 + ["node02"] * 3, summary(pods)

    cluster.kubectl("set", "image", "deployment/myapp-deploy", "myapp=soscscs/myapp:v2")
    out = cluster.kubectl("rollout", "status", "deployment/myapp-deploy", "--timeout=90s", timeout=120)
    assert 'deployment "myapp-deploy" successfully rolled out' in out, out

    eventually(lambda: images(cluster.running("app=myapp-deploy", 6)) == {"soscscs/myapp:v2"})
    sets = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in cluster.json("get", "rs", "-l", "app=myapp-deploy")["items"]
    }
    assert sets == {"soscscs/myapp:v1": 0, "soscscs/myapp:v2": 6}
    history = cluster.kubectl("rollout", "history", "deployment/myapp-deploy")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"], history

    cluster.kubectl("rollout", "undo", "deployment/myapp-deploy")
    cluster.kubectl("rollout", "status", "deployment/myapp-deploy", "--timeout=90s", timeout=120)
    eventually(lambda: images(cluster.running("app=myapp-deploy", 6)) == {"soscscs/myapp:v1"})
    cluster.kubectl("scale", "deployment", "myapp-deploy", "--replicas=3")
    cluster.running("app=myapp-deploy", 3)

    cluster.kubectl("apply", "-f", seed("myapp-rs.yaml"))
    cluster.running("app=myapp-rs", 3)
    cluster.kubectl("scale", "rs", "myapp-rs", "--replicas=5")
    pods = cluster.running("app=myapp-rs", 5)
    victim = pods[0]["metadata"]["name"]
    cluster.kubectl("delete", "pod", victim)
    pods = cluster.running("app=myapp-rs", 5)
    assert victim not in {p["metadata"]["name"] for p in pods}
    cluster.kubectl("delete", "-f", seed("myapp-deploy.yaml"), "-f", seed("myapp-rs.yaml"))


# -- 10. pod phases ----------------------------------------------------------------------------------------

TOO_BIG = """
apiVersion: v1
kind: Pod
metadata:
  name: too-big
spec:
  containers:
  - name: myapp
    image: soscscs/myapp:v1
    resources:
      requests: {cpu: "64"}
"""


def test_pod_phases_succeeded_and_unschedulable(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", seed("myapp-once.yaml"), "-f", "-", stdin=TOO_BIG)
    cluster.running_pod("myapp-once")
    phases = eventually(
        lambda: cluster.kubectl("get", "pod", "myapp-once", "-o", "jsonpath={.status.phase}") == "Succeeded",
        timeout=30,
    )
    assert phases
    pod = cluster.pod("myapp-once")
    assert pod is not None
    status = pod["status"]["containerStatuses"][0]
    assert status["restartCount"] == 0, status
    assert status["state"]["terminated"]["exitCode"] == 0, status
    row = cluster.kubectl("get", "pod", "myapp-once").splitlines()[1].split()
    assert row[2] == "Completed", row
    reasons = [e["reason"] for e in cluster.events("pod", "myapp-once")]
    assert reasons.count("Started") == 1, reasons  # never restarted

    cluster.pending_with("too-big", "Insufficient cpu")
    assert cluster.kubectl("get", "pod", "too-big", "-o", "jsonpath={.status.phase}") == "Pending"
    cluster.kubectl("delete", "pod", "myapp-once", "too-big")


# -- 11. kubeplane store watch -----------------------------------------------------------------------------

WATCHED = """
apiVersion: v1
kind: Pod
metadata:
  name: watched
  labels: {app: watched}
spec:
  containers:
  - {name: myapp, image: "soscscs/myapp:v1"}
"""


def test_store_watch_shows_a_pods_revisions(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=WATCHED)
    pod = cluster.running_pod("watched")
    eventually(lambda: (cluster.pod("watched") or {}).get("status", {}).get("podIP"))
    pod = cluster.pod("watched") or pod
    key = "/registry/pods/default/watched"
    done = subprocess.run(
        [
            str(KUBEPLANE),
            "store",
            "watch",
            key,
            "--data-dir",
            str(cluster.data_dir),
            "--from-revision",
            "1",
            "--timeout",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    headers = [(i, line) for i, line in enumerate(lines) if not line.startswith("  ")]
    assert len(headers) >= 3, done.stdout
    assert all(line.startswith(f"PUT {key} revision=") for _, line in headers), headers
    revisions = [int(line.split("revision=")[1].split()[0]) for _, line in headers]
    versions = [int(line.split("version=")[1]) for _, line in headers]
    assert revisions == sorted(set(revisions)), headers
    assert versions == list(range(1, len(headers) + 1)), headers

    def block(n: int) -> list[str]:
        end = headers[n + 1][0] if n + 1 < len(headers) else len(lines)
        return [line.strip() for line in lines[headers[n][0] + 1 : end]]

    created = json.loads("\n".join(block(0)))  # the first version whole
    assert created["metadata"]["name"] == "watched"
    assert "nodeName" not in created["spec"]
    node = node_of(pod)
    bound = next(n for n in range(1, len(headers)) if f'+ spec.nodeName: "{node}"' in block(n))
    running = next(n for n in range(1, len(headers)) if f'+ status.podIP: "{pod["status"]["podIP"]}"' in block(n))
    assert bound < running, done.stdout
    phased = next(n for n in range(1, len(headers)) if '~ status.phase: "Pending" -> "Running"' in block(n))
    assert bound <= phased, done.stdout
    cluster.kubectl("delete", "pod", "watched")


# -- kubeplane up --processes ------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    done = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid="], capture_output=True, text=True, check=False)
    return [int(p) for p in done.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_up_processes_forms_the_cluster_over_http(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, log = _start(data_dir, "--processes")
    children: list[int] = []
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        cluster = Cluster(data_dir, process, log)

        def ready_nodes() -> bool:
            rows = [line.split() for line in cluster.kubectl("get", "nodes").splitlines()[1:]]
            return sorted((r[0], r[1]) for r in rows) == [(n, "Ready") for n in ("master", "node01", "node02")]

        eventually(ready_nodes, timeout=60)
        assert "https://127.0.0.1:" in cluster.kubeconfig.read_text()
        cluster.kubectl("apply", "-f", seed("myapp-deploy.yaml"))
        cluster.kubectl("rollout", "status", "deployment/myapp-deploy", "--timeout=60s", timeout=90)
        pods = cluster.running("app=myapp-deploy", 3)
        assert {node_of(p) for p in pods} == set(WORKERS), summary(pods)
        assert all(p["status"].get("podIP") for p in pods)
        children = _children(process.pid)
        commands = sorted(Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[3].decode() for c in children)
        assert commands == ["apiserver", "controller-manager", "kubelet", "scheduler"], commands
    finally:
        children = children or _children(process.pid)
        code = _stop(process, log)
    assert code == 0, log.read_text(errors="replace")[-3000:]
    assert _children(process.pid) == []
    assert [c for c in children if _alive(c)] == []


def test_up_processes_kubeconfig_means_nodes_registered(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    process, log = _start(data_dir, "--processes")
    try:
        _wait_for_kubeconfig(process, data_dir, log)
        names = Cluster(data_dir, process, log).kubectl("get", "nodes", "-o", "name").split()
        assert names == ["node/master", "node/node01", "node/node02"]
    finally:
        _stop(process, log)
