"""The component metrics endpoint: /metrics in the Prometheus text format and /healthz, over real HTTP."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families

from kubeplane.metrics import CONTENT_TYPE, leader_election_master_status, set_leader_status, start_metrics_server


async def test_serves_metrics_and_healthz_on_a_free_port() -> None:
    registry = CollectorRegistry()
    Counter("demo_requests", "Demo counter.", ["code"], registry=registry).labels("200").inc(3)
    set_leader_status("kube-scheduler", True, registry=registry)
    server = await start_metrics_server(registry, 0)
    try:
        assert server.port > 0
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{server.url}/metrics") as response:
                assert response.status == 200
                assert response.headers["Content-Type"] == CONTENT_TYPE
                text = await response.text()
            async with session.get(f"{server.url}/healthz") as response:
                assert response.status == 200
                assert await response.text() == "ok"
            async with session.get(f"{server.url}/nothing") as response:
                assert response.status == 404
    finally:
        await server.close()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert [(s.labels, s.value) for s in families["demo_requests"].samples] == [({"code": "200"}, 3.0)]
    leader = families["leader_election_master_status"]
    assert leader.type == "gauge"
    assert [(s.labels, s.value) for s in leader.samples] == [({"name": "kube-scheduler"}, 1.0)]


async def test_healthz_reports_the_callback() -> None:
    healthy = False
    server = await start_metrics_server(CollectorRegistry(), 0, healthz=lambda: healthy)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{server.url}/healthz") as response:
                assert response.status == 503
            healthy = True
            async with session.get(f"{server.url}/healthz") as response:
                assert response.status == 200
    finally:
        await server.close()


def test_leader_status_flips_between_master_and_backup() -> None:
    registry = CollectorRegistry()
    set_leader_status("kube-scheduler", True, registry=registry)
    set_leader_status("kube-scheduler", False, registry=registry)
    assert leader_election_master_status(registry) is leader_election_master_status(registry)
    assert registry.get_sample_value("leader_election_master_status", {"name": "kube-scheduler"}) == 0.0


async def test_a_taken_port_is_an_error() -> None:
    first = await start_metrics_server(CollectorRegistry(), 0)
    try:
        with pytest.raises(OSError, match=r"(?i)address"):
            await start_metrics_server(CollectorRegistry(), first.port)
    finally:
        await first.close()
