"""Real clients, unchanged (issue 23): real kubectl v1.37 and the official Python client against a TLS
``kubeplane apiserver`` scheduler and simulated kubelets: ``kubeplane up``.

Pinned upstream behaviour:
- pkg/registry/*/storage/storage.go ``ReturnDeletedObject``: pods, services, serviceaccounts, namespaces,
  persistentvolumes, persistentvolumeclaims, storageclasses and csinodes answer a DELETE with the object (so the
  client's typed ``delete_*`` parses it); the other kinds with a Status Success (store.go ``finalizeDelete``).
- pkg/kubelet/nodestatus/setters.go: ``NodeSystemInfo`` fields without ``omitempty`` are always sent, so
  ``kubeProxyVersion`` is there as "" and the client's typed ``V1NodeSystemInfo`` accepts every Node.
- pkg/registry/core/pod/strategy.go ``streamLocation`` / ``PortForwardLocation`` (404, the container choice,
  "pod P does not have a host assigned") then apimachinery pkg/util/proxy/upgradeaware.go (400 "Upgrade request
  required" without an Upgrade header); an upgrade to a simulated container is a 400 Status, never a 500.
- kubectl/pkg/validation/schema.go ``schemaValidation``: with a v2 document that lacks the kind, validation is
  skipped and an unknown kind gets "no matches for kind" (not "failed to download openapi").
"""

from __future__ import annotations

import asyncio
import json
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets
from kubernetes import client, config
from websockets.typing import Subprotocol

from kubeplane.client.kubeconfig import load_kubeconfig

from .conftest import Server

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"
NS = "default"
NODES = 2


class Cluster:
    def __init__(self, server: Server, cache: Path) -> None:
        self.server = server
        self.base = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache)]
        self.api = config.new_client_from_config(config_file=str(server.kubeconfig))

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        command = [*self.base, *args]
        return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """``kubeplane up``: the API server on HTTPS with the scheduler and the kubelet fleet in the same process
    (the fleet writes its Nodes through the registry, not over HTTP)."""
    root = tmp_path_factory.mktemp("compat")
    nodes = root / "nodes.yaml"
    nodes.write_text(f"nodes:\n- count: {NODES}\n  namePattern: sim-{{index}}\n")
    data, log = root / "data", (root / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--node-config", str(nodes),
         "--pull-delay", "0", "--shutdown-delay", "1s"],
        stdout=log, stderr=log,
    )  # fmt: skip
    kubeconfig = data / "kubeconfig"
    deadline = time.monotonic() + 60
    while not kubeconfig.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.2)  # the kubeconfig is written whole before it is renamed into place; let the server settle
    assert process.poll() is None, (root / "up.log").read_text()
    assert kubeconfig.exists(), (root / "up.log").read_text()
    settings = load_kubeconfig(kubeconfig)
    assert settings.token is not None
    made = Cluster(Server(data, process, kubeconfig, settings.server, settings.token, log), root / "cache")
    try:
        yield made
    finally:
        made.api.close()
        made.server.stop()


def _wait_for_nodes(api: client.CoreV1Api) -> list[Any]:
    deadline = time.monotonic() + 60
    while True:
        items = api.list_node().items  # typed: raises if a Node does not parse
        if len(items) >= NODES or time.monotonic() > deadline:
            return list(items)
        time.sleep(0.2)


def test_every_node_of_a_kubelet_fleet_parses_with_the_typed_client(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api)
    nodes = _wait_for_nodes(core)
    assert len(nodes) == NODES
    for node in nodes:
        info = node.status.node_info
        assert info.kube_proxy_version == ""
        assert info.kubelet_version
        assert info.operating_system == "linux"


def test_deleting_a_service_returns_the_service(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api)
    core.create_namespaced_service(NS, {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}})
    deleted = core.delete_namespaced_service("web", NS)
    assert isinstance(deleted, client.V1Service)
    assert (deleted.kind, deleted.metadata.name) == ("Service", "web")


def test_deletes_return_the_object_exactly_for_upstreams_kinds(cluster: Cluster) -> None:
    core, storage = client.CoreV1Api(cluster.api), client.StorageV1Api(cluster.api)
    core.create_namespaced_service_account(NS, {"metadata": {"name": "sa"}})
    assert isinstance(core.delete_namespaced_service_account("sa", NS), client.V1ServiceAccount)
    pv = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}
    core.create_persistent_volume({"metadata": {"name": "pv"}, "spec": pv})
    assert core.delete_persistent_volume("pv").metadata.name == "pv"
    storage.create_storage_class({"metadata": {"name": "sc"}, "provisioner": "example.com/disk"})
    assert storage.delete_storage_class("sc").provisioner == "example.com/disk"
    core.create_namespaced_config_map(NS, {"metadata": {"name": "cm"}})
    status = core.delete_namespaced_config_map("cm", NS)  # the client declares this one's answer a plain object
    assert (status["kind"], status["status"], status["details"]["name"], status["details"]["kind"]) == (
        "Status",
        "Success",
        "cm",
        "configmaps",
    )


POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME}
spec:
  NODE
  nodeSelector: {NODESELECTOR}
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
"""


def _pod(cluster: Cluster, name: str, node: str | None) -> None:
    manifest = POD.replace("NAME", name).replace("NODESELECTOR", "" if node else "no: node")  # unbound: stays so
    manifest = manifest.replace("NODE", f"nodeName: {node}" if node else "")
    result = cluster.kubectl("apply", "-f", "-", stdin=manifest)
    assert result.returncode == 0, result.stderr


def _one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_kubectl_exec_prints_one_clear_error(cluster: Cluster) -> None:
    nodes = _wait_for_nodes(client.CoreV1Api(cluster.api))
    _pod(cluster, "bound", nodes[0].metadata.name)
    _pod(cluster, "unbound", None)
    assert _one_error_line(cluster.kubectl("exec", "bound", "-c", "a", "--", "ls")) == (
        "error: unable to upgrade connection: "
        "exec is not available for pod bound: its containers are simulated by kubeplane and run no process"
    )
    assert _one_error_line(cluster.kubectl("exec", "unbound", "-c", "a", "--", "ls")) == (
        "error: unable to upgrade connection: pod unbound does not have a host assigned"
    )
    attach = cluster.kubectl("attach", "bound", "-c", "b")
    assert _one_error_line(attach).endswith("attach is not available for pod bound: its containers are simulated by "
                                            "kubeplane and run no process")  # fmt: skip


def _raw(cluster: Cluster, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    import http.client

    server = cluster.server
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection(server.host, server.port, timeout=30, context=context)
    conn.request(method, path, headers={"Authorization": f"Bearer {server.token}", **(headers or {})})
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


@pytest.mark.parametrize(
    ("method", "sub", "message"),
    [
        ("POST", "exec?command=ls&container=a", "Upgrade request required"),
        ("GET", "attach?container=b", "Upgrade request required"),
        ("GET", "portforward?ports=80", "Upgrade request required"),
        ("POST", "exec?command=ls", "a container name must be specified for pod bound, choose one of: [a b]"),
        ("POST", "exec?command=ls&container=zz", "container zz is not valid for pod bound"),
    ],
)
def test_plain_connect_requests_get_upstreams_errors(cluster: Cluster, method: str, sub: str, message: str) -> None:
    nodes = _wait_for_nodes(client.CoreV1Api(cluster.api))
    _pod(cluster, "bound", nodes[0].metadata.name)
    code, body = _raw(cluster, method, f"/api/v1/namespaces/{NS}/pods/bound/{sub}")
    assert (code, body["kind"], body["reason"], body["message"]) == (400, "Status", "BadRequest", message)
    code, body = _raw(cluster, method, f"/api/v1/namespaces/{NS}/pods/missing/{sub}")
    assert (code, body["message"]) == (404, 'pods "missing" not found')


def test_websocket_upgrade_is_refused_with_a_status(cluster: Cluster) -> None:
    nodes = _wait_for_nodes(client.CoreV1Api(cluster.api))
    _pod(cluster, "bound", nodes[0].metadata.name)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    url = cluster.server.address.replace("https://", "wss://")
    url += f"/api/v1/namespaces/{NS}/pods/bound/portforward?ports=80"

    async def handshake() -> Any:
        headers = {"Authorization": f"Bearer {cluster.server.token}"}
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(
                url, ssl=context, additional_headers=headers, subprotocols=[Subprotocol("v4.channel.k8s.io")]
            ):
                pass
        return refused.value.response

    response = asyncio.run(handshake())
    assert response.status_code == 400
    body = json.loads(response.body)
    assert (body["kind"], body["code"], body["message"]) == (
        "Status",
        400,
        "portforward is not available for pod bound: its containers are simulated by kubeplane and run no process",
    )


UNKNOWN = """
apiVersion: example.com/v1
kind: Foo
metadata: {name: x}
"""


def test_kubectl_apply_and_explain_of_an_unknown_kind_get_kubectls_usual_errors(cluster: Cluster) -> None:
    applied = cluster.kubectl("apply", "-f", "-", stdin=UNKNOWN)
    assert applied.returncode == 1
    assert 'no matches for kind "Foo" in version "example.com/v1"' in applied.stderr
    assert "openapi" not in applied.stderr
    assert "validating" not in applied.stderr
    explained = cluster.kubectl("explain", "foo")
    assert explained.returncode == 1
    assert explained.stderr.strip() == 'the server doesn\'t have a resource type "foo"'
    code, doc = _raw(cluster, "GET", "/openapi/v2", {"Accept": "application/json"})
    assert (code, doc["swagger"], doc["definitions"]) == (200, "2.0", {})
