"""``pods/log`` (issue 23): upstream's checks and messages on a bare API server, then real kubectl and the official
Python client against ``kubeplane up`` with its kubelet fleet.

Pinned upstream behaviour:

* pkg/registry/core/pod/rest/log.go ``LogREST.Get`` with ``ValidatePodLogOptions`` (pkg/apis/core/validation):
  422 ``PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0``, the
  same for ``limitBytes``/``sinceSeconds`` (``must be greater than 0``), ``[]: Forbidden: at most one of
  `sinceTime` or `sinceSeconds` may be specified``; the parameter codec's 400s (strconv, time.Parse messages);
* pkg/registry/core/pod/strategy.go ``LogLocation``/``validateContainer``: ``a container name must be specified
  for pod p, choose one of: [init a b]``, ``container c is not valid for pod p``, a pod without a node answers
  204 (``StreamObject`` with a nil stream), ``nodes "ghost" not found``;
* pkg/kubelet/client ``GetConnectionInfo``: ``no preferred addresses found; known addresses: []``, the port from
  ``daemonEndpoints``; an unreachable kubelet is a 500 with Go's dial error;
* apiserver ``GenericHttpResponseChecker``: the kubelet's 400 text as a BadRequest; ``NewGenericServerResponse``'s
  message for other codes;
* kubectl logs (staging/src/k8s.io/kubectl/pkg/cmd/logs): ``-c``, ``--tail``, ``--timestamps`` (RFC3339Nano),
  ``--previous``, ``-f`` (ends when the container stops), ``--limit-bytes``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.apiserver.pod_logs import generic_server_response, kubelet_refusal

from .conftest import Server
from .up_cluster import KUBECTL, Cluster, eventually, pod, start_cluster

PODS = "/api/v1/namespaces/default/pods"


def request(server: Server, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = server.connection(timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw[:1] == b"{" else raw.decode()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module", autouse=True)
def seeded(server: Server) -> None:
    many = pod("many", containers=[{"name": "a", "image": "x"}, {"name": "b", "image": "x"}],
               initContainers=[{"name": "init", "image": "x"}])  # fmt: skip
    for body in (pod("solo"), many, pod("ghosted", nodeName="ghost"), pod("noaddr", nodeName="bare"),
                 pod("dead", nodeName="dead")):  # fmt: skip
        status, out = request(server, "POST", PODS, body)
        assert status == 201, out
    bare = {"metadata": {"name": "bare"}, "status": {"addresses": []}}
    dead = {"metadata": {"name": "dead"}, "status": {"addresses": [{"type": "Hostname", "address": "dead"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": closed_port()}}}}  # fmt: skip
    for node in (bare, dead):
        status, out = request(server, "POST", "/api/v1/nodes", node)
        assert status == 201, out


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        ("tailLines=-1", 422, 'PodLogOptions "solo" is invalid: tailLines: Invalid value: -1: must be greater than or '
                              "equal to 0"),
        ("limitBytes=0", 422, 'PodLogOptions "solo" is invalid: limitBytes: Invalid value: 0: must be greater than 0'),
        ("sinceSeconds=0", 422, 'PodLogOptions "solo" is invalid: sinceSeconds: Invalid value: 0: must be greater '
                                "than 0"),
        ("sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", 422,
         'PodLogOptions "solo" is invalid: []: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be '
         "specified"),
        ("tailLines=-1&limitBytes=0", 422, 'PodLogOptions "solo" is invalid: [tailLines: Invalid value: -1: must be '
                                           "greater than or equal to 0, limitBytes: Invalid value: 0: must be greater "
                                           "than 0]"),
        ("tailLines=ten", 400, 'strconv.ParseInt: parsing "ten": invalid syntax'),
        ("sinceTime=yesterday", 400, 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse '
                                     '"yesterday" as "2006"'),
        ("container=zzz", 400, "container zzz is not valid for pod solo"),
    ],
)  # fmt: skip
def test_options_and_container_are_checked_first(server: Server, query: str, code: int, message: str) -> None:
    status, out = request(server, "GET", f"{PODS}/solo/log?{query}")
    assert (status, out["message"], out["code"]) == (code, message, code)


def test_container_choice_and_locations(server: Server) -> None:
    status, out = request(server, "GET", f"{PODS}/many/log")
    assert (status, out["reason"]) == (400, "BadRequest")
    assert out["message"] == "a container name must be specified for pod many, choose one of: [init a b]"
    status, out = request(server, "GET", f"{PODS}/nope/log")
    assert (status, out["message"]) == (404, 'pods "nope" not found')
    status, out = request(server, "GET", f"{PODS}/solo/log")  # no node: no location, nothing to stream
    assert (status, out) == (204, "")
    status, out = request(server, "GET", f"{PODS}/ghosted/log")
    assert (status, out["message"]) == (404, 'nodes "ghost" not found')
    status, out = request(server, "GET", f"{PODS}/noaddr/log")
    assert (status, out["message"]) == (500, "no preferred addresses found; known addresses: []")
    status, out = request(server, "GET", f"{PODS}/dead/log?tailLines=3&insecureSkipTLSVerifyBackend=true")
    assert status == 500
    assert "reason" not in out
    assert re.fullmatch(
        r'Get "http://dead:(\d+)/containerLogs/default/dead/app\?tailLines=3": dial tcp 127\.0\.0\.1:\1: connect: '
        r"connection refused",
        out["message"],
    ), out["message"]


def test_kubelet_answers_become_upstreams_statuses() -> None:
    bad = kubelet_refusal(400, 'container "app" in pod "web" is waiting to start: ContainerCreating', "web")
    assert (bad.code, bad.reason, bad.message) == (
        400, "BadRequest", 'container "app" in pod "web" is waiting to start: ContainerCreating')  # fmt: skip
    missing = generic_server_response(404, 'pod "web" does not exist', "pods/log", "web")
    assert (missing.code, missing.reason) == (404, "NotFound")
    assert missing.message == "the server could not find the requested resource ( pods/log web)"
    assert missing.details == {"name": "web", "kind": "pods/log"}
    internal = kubelet_refusal(500, "boom", "web")
    assert (internal.code, internal.message) == (500, "Internal error occurred: boom")


# --- acceptance against kubeplane up ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from start_cluster(tmp_path_factory.mktemp("logs-up"))


STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (.*)$")
LINES = {"sim.kubeplane.io/log": "hello\nworld\n"}


def test_kubectl_logs_container_tail_and_timestamps(cluster: Cluster) -> None:
    containers = [{"name": "app", "image": "busybox:1.36"}, {"name": "side", "image": "nginx:1.27"}]
    cluster.apply(pod("web", annotations={**LINES, "sim.kubeplane.io/log.side": "side car"}, containers=containers))
    cluster.running("web")
    out = cluster.kubectl("logs", "web", "-c", "app")
    assert out.splitlines() == [
        "kubeplane: started container app (image busybox:1.36); it is simulated and runs no process",
        "hello",
        "world",
    ]
    assert cluster.kubectl("logs", "web", "-c", "side", "--tail", "1") == "side car\n"
    stamped = cluster.kubectl("logs", "web", "-c", "app", "--tail=2", "--timestamps").splitlines()
    assert [STAMPED.match(line).group(1) for line in stamped] == ["hello", "world"]  # type: ignore[union-attr]
    assert cluster.kubectl("logs", "web", "-c", "app", "--limit-bytes=3") == "kub"
    assert cluster.kubectl("logs", "web", "-c", "app", "--since=1h", "--tail=1") == "world\n"


def test_kubectl_logs_previous_after_a_restart(cluster: Cluster) -> None:
    annotations = {**LINES, "sim.kubeplane.io/duration": "1s", "sim.kubeplane.io/exit-code": "2"}
    cluster.apply(pod("crashy", annotations=annotations))
    restarts = "jsonpath={.status.containerStatuses[0].restartCount}"
    eventually(lambda: cluster.kubectl("get", "pod", "crashy", "-o", restarts) not in ("", "0"), "a restart")
    previous = cluster.kubectl("logs", "crashy", "--previous")
    assert previous.splitlines()[-3:] == ["hello", "world", "kubeplane: container app exited with code 2"]
    cluster.apply(pod("steady"))
    cluster.running("steady")
    done = cluster.run("logs", "steady", "--previous")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (BadRequest): previous terminated container "app" in pod "steady" not found'
    )


def test_kubectl_logs_follow_ends_when_the_pod_terminates(cluster: Cluster) -> None:
    cluster.apply(pod("chatty", annotations={**LINES, "sim.kubeplane.io/log-every": "200ms"}))
    cluster.running("chatty")
    follow = subprocess.Popen(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(cluster.tmp / "cache"),
         "logs", "-f", "chatty", "--tail=1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        first = follow.stdout.readline()
        assert first in ("hello\n", "world\n")
        time.sleep(0.5)  # a few more ticks arrive while the stream stays open
        cluster.kubectl("delete", "pod", "chatty", "--wait=false")
        out, err = follow.communicate(timeout=30)  # bounded: the kubelet ends the stream as the container stops
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait()
    assert follow.returncode == 0, err
    assert out.count("hello\n") >= 1
    assert out.endswith("kubeplane: container app received SIGTERM\nkubeplane: container app exited with code 0\n")


def test_official_python_client_reads_pod_logs(cluster: Cluster) -> None:
    from kubernetes import client, config

    cluster.apply(pod("pyread", annotations=LINES))
    cluster.running("pyread")
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        core = client.CoreV1Api(api)
        text = core.read_namespaced_pod_log("pyread", "default", tail_lines=2)
        assert text == "hello\nworld\n"
        stamped = core.read_namespaced_pod_log("pyread", "default", container="app", timestamps=True, limit_bytes=40)
        assert STAMPED.match(stamped.splitlines()[0])
        assert len(stamped) == 40
        with pytest.raises(client.ApiException) as refused:
            core.read_namespaced_pod_log("pyread", "default", container="nope")
        assert refused.value.status == 400
        assert json.loads(refused.value.body)["message"] == "container nope is not valid for pod pyread"
    finally:
        api.close()


def test_log_requests_are_counted_as_connect(server: Server) -> None:
    """Upstream ``LogREST.OverrideMetricsVerb``: a pods/log GET is counted with verb CONNECT."""
    request(server, "GET", f"{PODS}/solo/log")
    _, text = request(server, "GET", "/metrics")
    counted = [
        line
        for line in text.splitlines()
        if line.startswith("apiserver_request_total{") and 'subresource="log"' in line
    ]
    assert counted
    assert all('verb="CONNECT"' in line for line in counted)
