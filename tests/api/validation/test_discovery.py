"""discovery.k8s.io/v1 EndpointSlice validation against upstream ``pkg/apis/discovery/validation``
(validation.go, validation_test.go): each case names the rule it pins; messages are upstream's."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.validation.discovery import validate_endpoint_slice, validate_endpoint_slice_update

Obj = dict[str, Any]


def eps(address_type: str = "IPv4", endpoints: list[Obj] | None = None, ports: list[Obj] | None = None) -> Obj:
    return {
        "metadata": {"name": "web-abcde", "namespace": "default"},
        "addressType": address_type,
        "endpoints": endpoints if endpoints is not None else [{"addresses": ["10.0.0.1"]}],
        "ports": ports if ports is not None else [{"name": "http", "protocol": "TCP", "port": 80}],
    }


def messages(obj: Obj) -> list[str]:
    return [str(e) for e in validate_endpoint_slice(obj)]


def test_a_valid_slice_of_each_type() -> None:
    """TestValidateEndpointSlice 'good-slice', 'fqdn', 'ipv6'."""
    assert messages(eps()) == []
    assert messages(eps("IPv6", [{"addresses": ["2001:db8::1"], "nodeName": "node-1", "hostname": "h1"}])) == []
    assert messages(eps("FQDN", [{"addresses": ["foo.example.com"]}])) == []
    assert messages(eps(ports=[])) == []


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        # validateAddressType
        (eps(""), ["addressType: Required value"]),
        (eps("IP"), ['addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"']),
        # validateEndpoints: addresses required, valid for the type, not special (ValidateEndpointIP)
        (eps(endpoints=[{"addresses": []}]),
         ["endpoints[0].addresses: Required value: must contain at least 1 address"]),
        (eps(endpoints=[{"addresses": ["2001:db8::1"]}]),
         ['endpoints[0].addresses[0]: Invalid value: "2001:db8::1": must be a valid IPv4 address']),
        (eps(endpoints=[{"addresses": ["127.0.0.1"]}]),
         ['endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range '
          "(127.0.0.0/8, ::1/128)"]),
        (eps(endpoints=[{"addresses": ["169.254.1.1"]}]),
         ['endpoints[0].addresses[0]: Invalid value: "169.254.1.1": may not be in the link-local range '
          "(169.254.0.0/16, fe80::/10)"]),
        (eps("FQDN", [{"addresses": ["localhost"]}]),
         ['endpoints[0].addresses[0]: Invalid value: "localhost": should be a domain with at least two segments '
          "separated by dots"]),
        (eps(endpoints=[{"addresses": ["10.0.0.1"], "hostname": "Bad_Host"}]),
         ['endpoints[0].hostname: Invalid value: "Bad_Host": a lowercase RFC 1123 label must consist of lower case '
          "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
          "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
        # validatePorts
        (eps(ports=[{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "UDP"}]),
         ['ports[1].name: Duplicate value: "a"']),
        (eps(ports=[{"name": "a", "protocol": "HTTP"}]),
         ['ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']),
        (eps(ports=[{"name": "a"}]), ["ports[0].protocol: Required value"]),
    ],
)  # fmt: skip
def test_rules_and_messages(obj: Obj, want: list[str]) -> None:
    assert messages(obj) == want


def test_at_most_1000_endpoints_and_100_addresses() -> None:
    """validateEndpoints: over maxEndpoints is one Too many error; over maxAddresses too."""
    many = [{"addresses": [f"10.0.{i // 250}.{i % 250 + 1}"]} for i in range(1001)]
    assert messages(eps(endpoints=many)) == ["endpoints: Too many: 1001: must have at most 1000 items"]
    crowded = [{"addresses": [f"10.0.0.{i + 1}" for i in range(101)]}]
    assert messages(eps(endpoints=crowded)) == ["endpoints[0].addresses: Too many: 101: must have at most 100 items"]


def test_address_type_is_immutable() -> None:
    """ValidateEndpointSliceUpdate: ValidateImmutableField(addressType)."""
    old = eps()
    new = eps("IPv6", [{"addresses": ["2001:db8::1"]}])
    assert [str(e) for e in validate_endpoint_slice_update(new, old)] == [
        'addressType: Invalid value: "IPv6": field is immutable'
    ]
    assert validate_endpoint_slice_update(eps(), old) == []
