"""Issue 25's StatefulSet and DaemonSet acceptance with real kubectl against ``kubeplane apiserver``,
``scheduler``, ``controller-manager`` and ``kubelet`` processes (the fixture of
:mod:`tests.cli.test_controllers_with_kubectl`): a StatefulSet of 3 comes up as web-0, web-1, web-2 in order,
a rolling update with partition 1 leaves web-0 on the old revision, ``kubectl rollout history`` lists the
ControllerRevisions and ``rollout undo`` goes back (kubectl does both client-side from the revisions'
``data``, upstream's getPatch); the same for a DaemonSet with ``--revision`` and ``--to-revision``."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.apiserver.conftest import Server
from tests.cli.test_controllers_with_kubectl import cluster as cluster  # noqa: PLC0414 (the fixture)

STS = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
"""

DS = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: "agent:1"}]
"""


def _wait(what: str, check: Any, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.3)
    return value


def _live(kubectl: Any, selector: str) -> dict[str, dict[str, Any]]:
    items = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json"))["items"]
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def _images(kubectl: Any, selector: str) -> dict[str, str]:
    return {n: p["spec"]["containers"][0]["image"] for n, p in _live(kubectl, selector).items()}


def test_statefulset_order_partition_history_and_undo(cluster: tuple[Server, Any]) -> None:
    _server, kubectl = cluster
    kubectl("apply", "-f", "-", stdin=STS)
    kubectl("rollout", "status", "statefulset/web", "--timeout=90s")
    pods = _live(kubectl, "app=web")
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    created = [pods[f"web-{i}"]["metadata"]["creationTimestamp"] for i in range(3)]
    ready_at = [
        next(c["lastTransitionTime"] for c in pods[f"web-{i}"]["status"]["conditions"] if c["type"] == "Ready")
        for i in range(3)
    ]
    # OrderedReady: each pod was created no earlier than its predecessor became Ready.
    assert created[1] >= ready_at[0]
    assert created[2] >= ready_at[1]
    assert "web-0" in kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.hostname}")

    kubectl("patch", "statefulset", "web", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":1}}}}')
    kubectl("set", "image", "statefulset/web", "nginx=nginx:1.28")
    _wait(
        "web-1 and web-2 updated, web-0 kept",
        lambda: _images(kubectl, "app=web") == {"web-0": "nginx:1.27", "web-1": "nginx:1.28", "web-2": "nginx:1.28"},
    )
    sts = json.loads(kubectl("get", "statefulset", "web", "-o", "json"))
    labels = {n: p["metadata"]["labels"]["controller-revision-hash"] for n, p in _live(kubectl, "app=web").items()}
    assert labels["web-0"] == sts["status"]["currentRevision"] != sts["status"]["updateRevision"] == labels["web-2"]
    revisions = kubectl("get", "controllerrevisions", "-l", "app=web")
    assert "statefulset.apps/web" in revisions

    history = kubectl("rollout", "history", "statefulset/web")
    assert history.split()[:2] == ["statefulset.apps/web", "REVISION"]
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    detail = kubectl("rollout", "history", "statefulset/web", "--revision=1")
    assert "nginx:1.27" in detail

    kubectl("patch", "statefulset", "web", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}')
    kubectl("rollout", "undo", "statefulset/web")
    _wait("all back on nginx:1.27", lambda: set(_images(kubectl, "app=web").values()) == {"nginx:1.27"})
    kubectl("rollout", "status", "statefulset/web", "--timeout=90s")
    history = kubectl("rollout", "history", "statefulset/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]
    # kubectl compares its own getPatch bytes with the revision's data: they are the same bytes.
    assert "skipped rollback" in kubectl("rollout", "undo", "statefulset/web", "--to-revision=3")

    kubectl("scale", "statefulset/web", "--replicas=1")
    _wait("scaled to web-0", lambda: sorted(_live(kubectl, "app=web")) == ["web-0"])
    events = kubectl("get", "events", "--field-selector", "involvedObject.name=web", "-o", "json")
    messages = {e["message"] for e in json.loads(events)["items"]}
    assert "create Pod web-0 in StatefulSet web successful" in messages
    assert "delete Pod web-2 in StatefulSet web successful" in messages


def test_daemonset_history_and_undo(cluster: tuple[Server, Any]) -> None:
    _server, kubectl = cluster
    kubectl("apply", "-f", "-", stdin=DS)
    kubectl("rollout", "status", "daemonset/agent", "--timeout=90s")
    kubectl("set", "image", "daemonset/agent", "agent=agent:2")
    kubectl("rollout", "status", "daemonset/agent", "--timeout=90s")
    _wait("all on agent:2", lambda: set(_images(kubectl, "app=agent").values()) == {"agent:2"})
    history = kubectl("rollout", "history", "daemonset/agent")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    detail = kubectl("rollout", "history", "daemonset/agent", "--revision=2")
    assert "agent:2" in detail
    assert "agent:1" not in detail
    kubectl("rollout", "undo", "daemonset/agent", "--to-revision=1")
    kubectl("rollout", "status", "daemonset/agent", "--timeout=90s")
    _wait("all back on agent:1", lambda: set(_images(kubectl, "app=agent").values()) == {"agent:1"})
    history = kubectl("rollout", "history", "daemonset/agent")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]
    skipped = kubectl("rollout", "undo", "daemonset/agent", "--to-revision=3")
    assert "skipped rollback" in skipped
