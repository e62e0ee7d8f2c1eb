"""discovery.k8s.io/v1 EndpointSlice served by the API server, and the Endpoints/EndpointSlice printers.

Pins: the resource in discovery (``pkg/registry/discovery/endpointslice/storage``), ``SetDefaults_EndpointPort``
(name "" and protocol TCP), the strategy's generation (1 on create, +1 when anything but metadata or the labels
change), ``ValidateEndpointSliceUpdate`` as a 422 that changes nothing, ``generateName``, and the printers
``printEndpointSlice`` / ``printEndpoints`` (``pkg/printers/internalversion/printers.go``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.api.resources import default_table
from kubeplane.apiserver.printers import column_definitions, row_for
from kubeplane.client.errors import InvalidError
from kubeplane.client.local import LocalClient

Obj = dict[str, Any]
NOW = 1_700_000_000.0


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory()
    try:
        yield c
    finally:
        await c.close()


def test_the_resource_table_serves_endpointslices() -> None:
    info = default_table().resolve("endpointslices")
    assert info is not None
    assert (info.group, info.version, info.kind, info.namespaced) == ("discovery.k8s.io", "v1", "EndpointSlice", True)
    assert info.api_version == "discovery.k8s.io/v1"


async def test_create_defaults_generation_and_immutable_address_type(client: LocalClient) -> None:
    res = client.resource("endpointslices")
    body = {
        "metadata": {"generateName": "web-", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"port": 80}],
    }
    created = await client.create(res, body, namespace="default")
    assert created["metadata"]["name"].startswith("web-")
    assert created["metadata"]["generation"] == 1
    assert created["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}]

    created["metadata"]["annotations"] = {"a": "b"}
    same = await client.update(res, created, namespace="default")
    assert same["metadata"]["generation"] == 1  # metadata alone
    same["metadata"]["labels"]["x"] = "y"
    relabelled = await client.update(res, same, namespace="default")
    assert relabelled["metadata"]["generation"] == 2  # labels count
    relabelled["endpoints"] = []
    emptied = await client.update(res, relabelled, namespace="default")
    assert emptied["metadata"]["generation"] == 3

    emptied["addressType"] = "IPv6"
    with pytest.raises(InvalidError) as err:
        await client.update(res, emptied, namespace="default")
    assert 'addressType: Invalid value: "IPv6": field is immutable' in err.value.message
    stored = await client.get(res, created["metadata"]["name"], namespace="default")
    assert stored["addressType"] == "IPv4"
    assert stored["metadata"]["resourceVersion"] == emptied["metadata"]["resourceVersion"]


def test_endpoint_slice_columns_and_cells() -> None:
    """printEndpointSlice: NAME, ADDRESSTYPE, PORTS, ENDPOINTS, AGE; three items then '+ N more...'; <unset>."""
    names = [c["name"] for c in column_definitions(("discovery.k8s.io", "EndpointSlice"))]
    assert names == ["Name", "AddressType", "Ports", "Endpoints", "Age"]
    obj = {
        "metadata": {"name": "web-abcde", "creationTimestamp": format_time(NOW - 10)},
        "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "metrics"}, {}, {"port": 9}],
        "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)],
    }
    row = row_for(("discovery.k8s.io", "EndpointSlice"), obj, now=NOW)
    assert row == ["web-abcde", "IPv4", "80,metrics,* + 1 more...", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "10s"]
    empty = {"metadata": {"name": "e", "creationTimestamp": format_time(NOW - 10)}, "addressType": "IPv4"}
    assert row_for(("discovery.k8s.io", "EndpointSlice"), empty, now=NOW)[2:4] == ["<unset>", "<unset>"]


def test_endpoints_columns_and_cells() -> None:
    """printEndpoints / formatEndpoints: ip:port for ready addresses, '<none>' without subsets."""
    names = [c["name"] for c in column_definitions(("", "Endpoints"))]
    assert names == ["Name", "Endpoints", "Age"]
    obj = {
        "metadata": {"name": "web", "creationTimestamp": format_time(NOW - 10)},
        "subsets": [
            {
                "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                "notReadyAddresses": [{"ip": "10.0.0.9"}],
                "ports": [{"port": 80}, {"port": 443}],
            }
        ],
    }
    assert row_for(("", "Endpoints"), obj, now=NOW) == [
        "web",
        "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...",
        "10s",
    ]
    bare = {"metadata": {"name": "x", "creationTimestamp": format_time(NOW - 10)}}
    assert row_for(("", "Endpoints"), bare, now=NOW)[1] == "<none>"
    headless = {**bare, "subsets": [{"addresses": [{"ip": "fd00::1"}]}]}
    assert row_for(("", "Endpoints"), headless, now=NOW)[1] == "fd00::1"
