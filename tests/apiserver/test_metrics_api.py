"""``metrics.k8s.io/v1beta1`` (issue 23): discovery, NodeMetrics and PodMetrics as metrics-server serves them, and
``kubectl top`` against ``kubeplane up``.

Pinned upstream behaviour:

* kubectl top (staging/src/k8s.io/kubectl/pkg/cmd/top/top_node.go, top_pod.go ``SupportedMetricsAPIVersionAvailable``):
  the group must be in discovery, else "Metrics API not available"; it lists ``nodes``/``pods`` of the group with
  the label selector;
* metrics-server pkg/api (node.go, pod.go): ``get`` and ``list`` only; objects with ``metadata`` (name, namespace,
  labels, creationTimestamp), ``timestamp``, ``window``, ``usage`` {cpu, memory} and the pod's ``containers``;
  a missing node or pod is the lister's 404 (``node "x" not found``, ``pod "x" not found``), one without metrics
  ``nodemetrics.metrics.k8s.io "x" not found`` / ``podmetrics.metrics.k8s.io "ns/x" not found``;
* apiserver's installer: ``watch`` on a storage that cannot watch is 405 ``watch is not supported on resources of
  kind "nodes.metrics.k8s.io"``;
* the kubelet's ``/metrics/resource`` counters turned into rates over ``window`` (metrics-server storage).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.apiserver.metrics_api import NodeSeries, parse_resource_metrics

from .conftest import Server
from .up_cluster import Cluster, pod, start_cluster

METRICS = "/apis/metrics.k8s.io/v1beta1"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def request(server: Server, method: str, path: str, body: Any = None, accept: str = "") -> tuple[int, Any]:
    conn = server.connection(timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    if accept:
        headers["Accept"] = accept
    conn.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw[:1] == b"{" else raw.decode()


def test_discovery_lists_the_metrics_group(server: Server) -> None:
    status, groups = request(server, "GET", "/apis")
    assert status == 200
    found = [g for g in groups["groups"] if g["name"] == "metrics.k8s.io"]
    assert found == [{"name": "metrics.k8s.io", "versions": [{"groupVersion": "metrics.k8s.io/v1beta1",
                      "version": "v1beta1"}], "preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1",
                      "version": "v1beta1"}}]  # fmt: skip
    status, resources = request(server, "GET", METRICS)
    assert status == 200
    assert [(r["name"], r["kind"], r["namespaced"], r["verbs"]) for r in resources["resources"]] == [
        ("nodes", "NodeMetrics", False, ["get", "list"]),
        ("pods", "PodMetrics", True, ["get", "list"]),
    ]
    status, aggregated = request(server, "GET", "/apis", accept=AGGREGATED)
    assert status == 200
    entry = next(i for i in aggregated["items"] if i["metadata"]["name"] == "metrics.k8s.io")
    assert [(r["resource"], r["scope"]) for r in entry["versions"][0]["resources"]] == [
        ("nodes", "Cluster"),
        ("pods", "Namespaced"),
    ]


def test_errors_as_metrics_server(server: Server) -> None:
    request(server, "POST", "/api/v1/namespaces/default/pods", pod("idle"))
    request(server, "POST", "/api/v1/nodes", {"metadata": {"name": "quiet"}})  # no kubelet answers for it
    cases = [
        (f"{METRICS}/nodes/nowhere", 404, 'node "nowhere" not found'),
        (f"{METRICS}/nodes/quiet", 404, 'nodemetrics.metrics.k8s.io "quiet" not found'),
        (f"{METRICS}/namespaces/default/pods/nope", 404, 'pod "nope" not found'),
        (f"{METRICS}/namespaces/default/pods/idle", 404, 'podmetrics.metrics.k8s.io "default/idle" not found'),
        (f"{METRICS}/nodes?watch=true", 405, 'watch is not supported on resources of kind "nodes.metrics.k8s.io"'),
        (f"{METRICS}/nodes?labelSelector=a%20in", 400, None),
        (f"{METRICS}/namespaces/default/nodes", 404, "the server could not find the requested resource"),
        (f"{METRICS}/nodes/quiet/status", 404, "the server could not find the requested resource"),
    ]
    for path, code, message in cases:
        status, out = request(server, "GET", path)
        assert status == code, (path, out)
        if message is not None:
            assert out["message"] == message, path
    status, listed = request(server, "GET", f"{METRICS}/nodes")
    assert (status, listed["kind"], listed["items"]) == (200, "NodeMetricsList", [])
    status, _ = request(server, "DELETE", f"{METRICS}/nodes/quiet")
    assert status == 405


SCRAPE_1 = """\
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 5 1800000010000
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 6.7108864e+07 1800000010000
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.8e+09 1800000010000
node_cpu_usage_seconds_total 100 1800000010000
node_memory_working_set_bytes 6.7108864e+07 1800000010000
"""


def test_rates_over_the_window_between_scrapes() -> None:
    series = NodeSeries()
    series.add(parse_resource_metrics(SCRAPE_1), 1.0)
    first = series.containers("default", "web")["app"]  # one point: measured from the container's start
    assert (first.cpu_cores, first.window, first.memory) == (0.5, 10.0, 64 * 2**20)
    node = series.node()
    assert node is not None
    assert (node.cpu_cores, node.window) == (0.5, 10.0)
    later = SCRAPE_1.replace(" 5 ", " 8 ").replace("100 ", "103 ").replace("1800000010000", "1800000015000")
    series.add(parse_resource_metrics(later), 2.0)
    second = series.containers("default", "web")["app"]
    assert (second.cpu_cores, second.window) == (0.6, 5.0)
    node = series.node()
    assert node is not None
    assert (node.cpu_cores, node.window) == (0.6, 5.0)


# --- acceptance against kubeplane up ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from start_cluster(tmp_path_factory.mktemp("top-up"))


def test_kubectl_top_nodes_and_pods(cluster: Cluster) -> None:
    resources = {"requests": {"cpu": "250m", "memory": "64Mi"}}
    web = pod("web", containers=[{"name": "app", "image": "nginx:1.27", "resources": resources},
                                 {"name": "side", "image": "busybox:1.36",
                                  "resources": {"requests": {"cpu": "50m", "memory": "16Mi"}}}])  # fmt: skip
    web["metadata"]["labels"] = {"app": "web"}
    hot = pod("hot", annotations={"sim.kubeplane.io/usage-cpu": "1500m", "sim.kubeplane.io/usage-memory": "1Gi"})
    cluster.apply(web)
    cluster.apply(hot)
    cluster.running("web")
    cluster.running("hot")
    rows = [line.split() for line in cluster.kubectl("top", "pods", "--no-headers").splitlines()]
    assert sorted(rows) == [["hot", "1500m", "1024Mi"], ["web", "300m", "80Mi"]]
    rows = [line.split() for line in cluster.kubectl("top", "pod", "web", "--containers", "--no-headers").splitlines()]
    assert rows == [["web", "app", "250m", "64Mi"], ["web", "side", "50m", "16Mi"]]
    assert cluster.kubectl("top", "pods", "-l", "app=web", "--no-headers").split()[0] == "web"
    nodes = {line.split()[0]: line.split()[1:] for line in cluster.kubectl("top", "nodes", "--no-headers").splitlines()}
    assert set(nodes) == {"master", "node01", "node02"}
    assert nodes["master"][:1] == ["0m"]
    used = sorted(int(row[0].removesuffix("m")) for name, row in nodes.items() if name != "master")
    assert sum(used) == 1800  # every pod's cpu lands on its node


def test_node_and_pod_metrics_objects(cluster: Cluster) -> None:
    cluster.apply(pod("obj", containers=[{"name": "app", "image": "nginx:1.27",
                                          "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}}]))  # fmt: skip
    cluster.running("obj")
    doc = json.loads(cluster.kubectl("get", "--raw", f"{METRICS}/namespaces/default/pods/obj"))
    assert list(doc) == ["kind", "apiVersion", "metadata", "timestamp", "window", "containers"]
    assert (doc["kind"], doc["apiVersion"]) == ("PodMetrics", "metrics.k8s.io/v1beta1")
    assert doc["containers"] == [{"name": "app", "usage": {"cpu": "100m", "memory": "32Mi"}}]
    assert doc["window"].endswith("s")
    node_name = cluster.kubectl("get", "pod", "obj", "-o", "jsonpath={.spec.nodeName}")
    node = json.loads(cluster.kubectl("get", "--raw", f"{METRICS}/nodes/{node_name}"))
    assert list(node) == ["kind", "apiVersion", "metadata", "timestamp", "window", "usage"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == node_name
    assert set(node["usage"]) == {"cpu", "memory"}


def test_official_python_client_lists_metrics(cluster: Cluster) -> None:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    try:
        custom = client.CustomObjectsApi(api)
        nodes = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")
        assert nodes["kind"] == "NodeMetricsList"
        assert {item["metadata"]["name"] for item in nodes["items"]} == {"master", "node01", "node02"}
        selected = custom.list_cluster_custom_object(
            "metrics.k8s.io", "v1beta1", "nodes", label_selector="node-role.kubernetes.io/control-plane"
        )
        assert [item["metadata"]["name"] for item in selected["items"]] == ["master"]
    finally:
        api.close()
