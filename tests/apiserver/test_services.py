"""Services end to end: ClusterIP and NodePort allocation, the ``kubernetes`` Service, restarts, concurrency.

Each test names the upstream behaviour it pins (kube-apiserver v1.37, ``pkg/registry/core/service/...``).
Servers are real ``kubeplane apiserver`` processes on 127.0.0.1 (conftest); kubectl is the project's own, with the
test server's kubeconfig and a temporary cache dir.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, start_server
from .test_kubectl import KUBECTL

SVC = "/api/v1/namespaces/default/services"


def call(server: Server, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    conn = server.connection()
    try:
        headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def service(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}], **spec},
    }


def create(server: Server, name: str, **spec: Any) -> tuple[int, Any]:
    return call(server, "POST", SVC, service(name, **spec))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with a /29 service range (6 addresses) and a 20-port node-port range."""
    srv = start_server(
        tmp_path_factory.mktemp("small") / "data",
        "--service-cluster-ip-range",
        "10.0.0.0/29",
        "--service-node-port-range",
        "31000-31019",
    )
    yield srv
    srv.stop()


def test_kubernetes_service_and_endpoints(server: Server) -> None:
    """controlplane/controller/kubernetesservice + reconcilers: ``default/kubernetes`` takes the first address of
    the range, port 443 ``https`` to the API server's port, and its Endpoints name the server's address."""
    status, svc = call(server, "GET", f"{SVC}/kubernetes")
    assert status == 200
    assert svc["spec"]["clusterIP"] == "10.96.0.1"
    assert svc["spec"]["clusterIPs"] == ["10.96.0.1"]
    assert svc["spec"]["ports"] == [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": server.port}]
    assert svc["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    status, eps = call(server, "GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    assert status == 200
    assert eps["subsets"] == [
        {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": server.port, "protocol": "TCP"}]}
    ]
    assert eps["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}


def test_create_allocates_cluster_ip_and_defaults_families(server: Server) -> None:
    """storage/alloc.go allocateCreate + initIPFamilyFields: a free address of the range, clusterIPs in step,
    ipFamilies [IPv4], ipFamilyPolicy SingleStack; strategy.go PrepareForCreate: status.loadBalancer {}."""
    status, svc = create(server, "alloc")
    assert status == 201, svc
    spec = svc["spec"]
    assert ipaddress.ip_address(spec["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
    assert spec["clusterIP"] not in ("10.96.0.0", "10.255.255.255")
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert svc["status"] == {"loadBalancer": {}}
    # dynamic allocations prefer the upper band (KEP-3070): 10.96.0.1-10.96.1.0 (256 addresses) is kept for
    # static requests while the rest of the range has room
    assert int(ipaddress.ip_address(spec["clusterIP"])) >= int(ipaddress.ip_address("10.96.1.1"))


def test_requested_ip_taken_or_out_of_range(server: Server) -> None:
    """alloc.go allocIPs → 422 on spec.clusterIPs: ``failed to allocate IP X: provided IP is already allocated``;
    an address outside the service CIDR (or its network address) is MetaAllocator's ErrMismatchedNetwork."""
    assert create(server, "static-a", clusterIP="10.96.0.50")[0] == 201
    status, body = create(server, "static-b", clusterIP="10.96.0.50")
    assert status == 422
    assert body["message"] == (
        'Service "static-b" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.50"]: '
        "failed to allocate IP 10.96.0.50: provided IP is already allocated"
    )
    for ip in ("192.168.0.10", "10.96.0.0"):
        status, body = create(server, "static-c", clusterIP=ip)
        assert status == 422
        assert body["message"].endswith(
            f"failed to allocate IP {ip}: the provided network does not match the current range"
        )
    assert call(server, "GET", f"{SVC}/static-b")[0] == 404


def test_delete_releases_and_returns_the_service(server: Server) -> None:
    """storage/rest.go afterDelete → releaseAllocatedResources; ReturnDeletedObject: the deleted Service."""
    assert create(server, "rel", clusterIP="10.96.0.60")[0] == 201
    status, body = call(server, "DELETE", f"{SVC}/rel")
    assert status == 200
    assert body["kind"] == "Service"
    assert body["spec"]["clusterIP"] == "10.96.0.60"
    assert create(server, "rel2", clusterIP="10.96.0.60")[0] == 201


def test_headless_and_external_name_get_no_address(server: Server) -> None:
    """alloc.go allocClusterIPs: none for headless (``None``) and ExternalName services."""
    status, svc = create(server, "headless", clusterIP="None")
    assert status == 201
    assert svc["spec"]["clusterIPs"] == ["None"]
    assert svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    body = service("ext", type="ExternalName", externalName="example.com")
    del body["spec"]["selector"]
    status, svc = call(server, "POST", SVC, body)
    assert status == 201
    assert "clusterIP" not in svc["spec"]
    assert "ipFamilies" not in svc["spec"]


def test_node_ports_allocated_checked_and_released(small: Server) -> None:
    """alloc.go initNodePorts / updateNodePorts / releaseNodePorts and portallocator's messages."""
    status, svc = create(small, "np", type="NodePort")
    assert status == 201
    port = svc["spec"]["ports"][0]["nodePort"]
    assert 31000 <= port <= 31019
    status, body = create(small, "np2", type="NodePort", ports=[{"port": 80, "nodePort": port}])
    assert status == 422
    assert body["message"] == (
        f'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: {port}: provided port is already allocated'
    )
    status, body = create(small, "np3", type="NodePort", ports=[{"port": 80, "nodePort": 30000}])
    assert status == 422
    assert body["message"].endswith("provided port is not in the valid range. The range of valid ports is 31000-31019")
    # a type change to ClusterIP releases the port (the nodePort field must go, as validation requires)
    status, current = call(small, "GET", f"{SVC}/np")
    current["spec"]["type"] = "ClusterIP"
    current["spec"]["ports"][0].pop("nodePort")
    current["spec"].pop("externalTrafficPolicy", None)
    assert call(small, "PUT", f"{SVC}/np", current)[0] == 200
    assert create(small, "np4", type="NodePort", ports=[{"port": 80, "nodePort": port}])[0] == 201
    # a LoadBalancer gets node ports and status.loadBalancer {}
    status, lb = create(small, "lb", type="LoadBalancer")
    assert status == 201
    assert lb["status"] == {"loadBalancer": {}}
    assert 31000 <= lb["spec"]["ports"][0]["nodePort"] <= 31019


def test_resubmitted_manifest_keeps_allocations(server: Server) -> None:
    """storage/rest.go patchAllocatedValues: a PUT without clusterIP/nodePort keeps the allocated ones."""
    status, svc = create(server, "keep", type="NodePort")
    assert status == 201
    again = service("keep", type="NodePort")
    again["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"]
    status, updated = call(server, "PUT", f"{SVC}/keep", again)
    assert status == 200, updated
    assert updated["spec"]["clusterIP"] == svc["spec"]["clusterIP"]
    assert updated["spec"]["ports"][0]["nodePort"] == svc["spec"]["ports"][0]["nodePort"]


def test_exhaustion_is_upstreams_internal_error(small: Server) -> None:
    """alloc.go allocIPs: a full range is 500 ``failed to allocate a serviceIP: range is full`` (upstream's code)."""
    results = [create(small, f"full-{i}") for i in range(8)]
    assert [s for s, _ in results].count(201) <= 5  # 6 usable addresses, one is kubernetes's
    status, body = results[-1]
    assert status == 500
    assert body["message"] == "Internal error occurred: failed to allocate a serviceIP: range is full"


def test_fifty_parallel_creates_get_fifty_addresses(server: Server) -> None:
    """Uniqueness under concurrency: IPAddress objects are created atomically (ipallocator.go createIPAddress)."""
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda i: create(server, f"par-{i}"), range(50)))
    assert [s for s, _ in results] == [201] * 50
    ips = {svc["spec"]["clusterIP"] for _, svc in results}
    assert len(ips) == 50


def test_restart_keeps_allocations(tmp_path: Path) -> None:
    """Allocations are IPAddress objects and a RangeAllocation in the store: a restart keeps them."""
    data = tmp_path / "data"
    first = start_server(data)
    try:
        assert create(first, "before", clusterIP="10.96.0.70", type="NodePort")[0] == 201
        node_port = call(first, "GET", f"{SVC}/before")[1]["spec"]["ports"][0]["nodePort"]
    finally:
        first.stop()
    second = start_server(data)
    try:
        status, body = create(second, "after", clusterIP="10.96.0.70")
        assert status == 422
        assert body["message"].endswith("provided IP is already allocated")
        status, body = create(second, "after", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
        assert status == 422
        assert body["message"].endswith("provided port is already allocated")
        # the kubernetes Service survives the restart and keeps the first address
        assert call(second, "GET", f"{SVC}/kubernetes")[1]["spec"]["clusterIP"] == "10.96.0.1"
    finally:
        second.stop()


def test_kubectl_expose(tmp_path: Path) -> None:
    """`kubectl expose` (the issue's acceptance): the Service gets a ClusterIP; `kubectl get svc kubernetes`."""
    srv = start_server(tmp_path / "data", tls=True)
    base = [str(KUBECTL), "--kubeconfig", str(srv.kubeconfig), "--cache-dir", str(tmp_path / "cache")]

    def kubectl(*args: str) -> str:
        result = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        return result.stdout

    try:
        kubectl("create", "deployment", "web", "--image=nginx:1.25")
        assert kubectl("expose", "deployment", "web", "--port=80").strip() == "service/web exposed"
        svc = json.loads(kubectl("get", "svc", "web", "-o", "json"))
        assert ipaddress.ip_address(svc["spec"]["clusterIP"]) in ipaddress.ip_network("10.96.0.0/12")
        assert svc["spec"]["ipFamilies"] == ["IPv4"]
        table = kubectl("get", "svc", "kubernetes")
        assert "10.96.0.1" in table
        assert "443/TCP" in table
    finally:
        srv.stop()
