"""The API server's /metrics: request counters and latencies with upstream's labels, and registered watchers."""

from __future__ import annotations

import asyncio
import random

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.client.local import LocalClient
from kubeplane.metrics.apiserver import clean_scope, reported_verb
from tests.apiserver.conftest import Server


def _request(server: Server, method: str, path: str, body: object = None, *, token: bool = True) -> tuple[int, bytes]:
    return server.send(method, path, body, token="" if token else None)


def _samples(server: Server) -> dict[str, list[tuple[dict[str, str], float]]]:
    status, text = _request(server, "GET", "/metrics")
    assert status == 200
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text.decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def _value(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(v for got, v in samples.get(name, []) if all(got.get(k) == want for k, want in labels.items()))


def test_requests_are_counted_with_upstream_labels(server: Server) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "metrics-cm"}, "data": {"a": "b"}}
    assert _request(server, "POST", "/api/v1/namespaces/default/configmaps", cm)[0] == 201
    assert _request(server, "GET", "/api/v1/namespaces/default/configmaps/metrics-cm")[0] == 200
    assert _request(server, "GET", "/api/v1/namespaces/default/configmaps/missing")[0] == 404
    assert _request(server, "GET", "/api/v1/namespaces/default/configmaps")[0] == 200
    assert _request(server, "GET", "/api/v1/nodes")[0] == 200
    assert _request(server, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1")[0] == 200
    assert _request(server, "DELETE", "/api/v1/namespaces/default/configmaps/metrics-cm")[0] == 200
    assert _request(server, "GET", "/api/v1/nosuchthings")[0] == 404
    samples = _samples(server)
    total = "apiserver_request_total"
    common = {"group": "", "version": "v1", "resource": "configmaps", "subresource": "", "component": "apiserver"}
    assert _value(samples, total, verb="POST", scope="resource", code="201", **common) == 1
    assert _value(samples, total, verb="GET", scope="resource", code="200", **common) == 1
    assert _value(samples, total, verb="GET", scope="resource", code="404", **common) == 1
    assert _value(samples, total, verb="LIST", scope="namespace", code="200", **common) == 1
    assert _value(samples, total, verb="WATCH", scope="namespace", code="200", **common) == 1
    assert _value(samples, total, verb="DELETE", scope="resource", code="200", **common) == 1
    assert _value(samples, total, verb="LIST", resource="nodes", scope="cluster", code="200") == 1
    assert _value(samples, total, resource="nosuchthings") == 0  # unknown resources never become label values
    duration = "apiserver_request_duration_seconds_count"
    assert _value(samples, duration, verb="LIST", scope="namespace", dry_run="", **common) == 1
    assert _value(samples, "apiserver_request_duration_seconds_bucket", verb="POST", le="60.0", **common) == 1
    assert not any(labels.get("subresource") == "/metrics" for labels, _ in samples.get(total, []))
    # the watch ended (timeoutSeconds=1): no watcher left registered
    assert _value(samples, "apiserver_registered_watchers", group="", version="v1", kind="ConfigMap") == 0


def test_metrics_needs_the_token_as_other_non_api_paths(server: Server) -> None:
    """Anonymous requests are authorized as system:anonymous: /metrics is not among system:public-info-viewer's
    paths (403, as upstream), /healthz is."""
    assert _request(server, "GET", "/metrics", token=False)[0] == 403
    assert _request(server, "GET", "/healthz", token=False)[0] == 200


@pytest.mark.parametrize(
    ("method", "scope", "watch", "content_type", "expect"),
    [
        ("GET", "resource", False, "", "GET"),
        ("GET", "namespace", False, "", "LIST"),
        ("GET", "cluster", True, "", "WATCH"),
        ("POST", "resource", False, "", "POST"),
        ("PUT", "resource", False, "", "PUT"),
        ("PATCH", "resource", False, "application/merge-patch+json", "PATCH"),
        ("PATCH", "resource", False, "application/apply-patch+yaml", "APPLY"),
        ("DELETE", "namespace", False, "", "DELETE"),
        ("GET", "", False, "", "GET"),
        ("BREW", "", False, "", "other"),
    ],
)
def test_reported_verb(method: str, scope: str, watch: bool, content_type: str, expect: str) -> None:
    assert reported_verb(method, scope, watch=watch, content_type=content_type) == expect


def test_clean_scope() -> None:
    assert clean_scope(is_resource=True, verb="create", namespace="default", name="") == "resource"
    assert clean_scope(is_resource=True, verb="get", namespace="default", name="x") == "resource"
    assert clean_scope(is_resource=True, verb="list", namespace="default", name="") == "namespace"
    assert clean_scope(is_resource=True, verb="list", namespace=None, name="") == "cluster"
    assert clean_scope(is_resource=False, verb="get", namespace=None, name="") == ""


async def test_watchers_gauge_follows_open_watches() -> None:
    """In process: a watch that is open shows in apiserver_registered_watchers, and leaves it when it ends."""
    client = await LocalClient.in_memory()
    registry = CollectorRegistry()
    app = APIServerApp(client.registry, metrics_registry=registry, rng=random.Random(0))
    sent: list[dict[str, object]] = []
    disconnect = asyncio.Event()

    async def receive() -> dict[str, object]:
        await disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/pods",
        "raw_path": b"/api/v1/pods",
        "query_string": b"watch=true",
        "headers": [],
    }
    task = asyncio.ensure_future(app(scope, receive, send))
    labels = {"group": "", "version": "v1", "kind": "Pod"}
    for _ in range(200):
        if registry.get_sample_value("apiserver_registered_watchers", labels) == 1:
            break
        await asyncio.sleep(0.01)
    assert registry.get_sample_value("apiserver_registered_watchers", labels) == 1
    disconnect.set()
    await asyncio.wait_for(task, 10)
    assert registry.get_sample_value("apiserver_registered_watchers", labels) == 0
    assert sent[0]["status"] == 200
    count = {"verb": "WATCH", "dry_run": "", "group": "", "version": "v1", "resource": "pods", "subresource": ""}
    count |= {"scope": "cluster", "component": "apiserver", "code": "200"}
    assert registry.get_sample_value("apiserver_request_total", count) == 1
    await client.close()
