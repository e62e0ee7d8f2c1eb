"""discovery.k8s.io/v1 EndpointSlice validation, as kube-apiserver's ``pkg/apis/discovery/validation``
(``ValidateEndpointSliceCreate`` / ``ValidateEndpointSliceUpdate``).

The rules, in upstream's order: ``addressType`` is required and one of ``FQDN``, ``IPv4``, ``IPv6``; at most 1000
endpoints (more is one ``Too many`` error and nothing else about endpoints), each with 1 to 100 addresses valid for
the slice's address type (an IPv4/IPv6 address must also not be unspecified, loopback or link-local: upstream
``ValidateEndpointIP``; an FQDN must be a domain of at least two labels), a ``nodeName`` that is a DNS subdomain,
at most 16 ``deprecatedTopology`` labels, a DNS-label ``hostname``, and hints with at most 8 zones and 8 nodes,
none repeated; at most 20000 ports, each with a DNS-label name (unique in the slice), a protocol among ``SCTP``,
``TCP``, ``UDP`` and an ``appProtocol`` that is a qualified name. An update also keeps ``addressType``.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader (bad types are type errors, never exceptions).
    * Ports are validated after defaulting (``name: ""`` and ``protocol: TCP``, upstream
      ``SetDefaults_EndpointPort``), so an absent name is the empty name, as upstream's pointer after defaulting.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import IMMUTABLE_MSG, PROTOCOLS, CreateValidator, UpdateValidator, invalid_each
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader

__all__ = [
    "CREATE_VALIDATORS",
    "STATUS_UPDATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "validate_endpoint_slice",
    "validate_endpoint_slice_update",
]

GROUP: Final = "discovery.k8s.io"
ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")  # sets.List order: sorted
MAX_TOPOLOGY_LABELS: Final = 16
MAX_ADDRESSES: Final = 100
MAX_PORTS: Final = 20000
MAX_ENDPOINTS: Final = 1000
MAX_ZONE_HINTS: Final = 8
MAX_NODE_HINTS: Final = 8


def validate_endpoint_ip(address: str, path: Path) -> ErrorList:
    """Upstream ``ValidateEndpointIP``: a parsable IP that is not unspecified, loopback or link-local."""
    parsed = names._parse_ip_sloppy(address)  # the package's one sloppy parser (leading zeros as Go's)
    if parsed is None:
        return [field.invalid(path, address, detail="must be a valid IP address")]
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = parsed
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        ip = parsed.ipv4_mapped  # Go's net.IP treats the IPv4-mapped form as IPv4
    errs: ErrorList = []
    if ip.is_unspecified:
        errs.append(field.invalid(path, address, detail=f"may not be unspecified ({address})"))
    if ip.is_loopback:
        errs.append(field.invalid(path, address, detail="may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local and not ip.is_multicast:
        errs.append(
            field.invalid(path, address, detail="may not be in the link-local range (169.254.0.0/16, fe80::/10)")
        )
    multicast_ll = (
        ip in ipaddress.ip_network("224.0.0.0/24") if ip.version == 4 else (int(ip) >> 112) & 0xFF0F == 0xFF02
    )
    if multicast_ll:
        detail = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
        errs.append(field.invalid(path, address, detail=detail))
    return errs


def is_fully_qualified_domain_name(path: Path, name: str) -> ErrorList:
    """apimachinery ``IsFullyQualifiedDomainName``: a DNS subdomain (trailing dot allowed) of two labels or more."""
    if not name:
        return [field.required(path)]
    name = name.removesuffix(".")
    msgs = names.is_dns1123_subdomain(name)
    if msgs:
        return [field.invalid(path, name, detail=",".join(msgs))]
    labels = name.split(".")
    if len(labels) < 2:
        return [field.invalid(path, name, detail="should be a domain with at least two segments separated by dots")]
    for label in labels:
        msgs = names.is_dns1123_label(label)
        if msgs:
            return [field.invalid(path, label, detail=",".join(msgs))]
    return []


def _validate_address(address: str, address_type: str, path: Path) -> ErrorList:
    if address_type == "IPv4":
        return names.is_valid_ipv4_address(path, address) + validate_endpoint_ip(address, path)
    if address_type == "IPv6":
        return names.is_valid_ipv6_address(path, address) + validate_endpoint_ip(address, path)
    if address_type == "FQDN":
        return is_fully_qualified_domain_name(path, address)
    return []  # unknown types fall through unvalidated, as upstream


def _validate_hints(hints: Reader) -> None:
    """Upstream ``validateHints``: zones are label values, nodes are node names; neither repeats, 8 of each."""
    errs = hints.errs
    for key, limit, check in (
        ("forZones", MAX_ZONE_HINTS, names.is_valid_label_value),
        ("forNodes", MAX_NODE_HINTS, names.is_dns1123_subdomain),
    ):
        entries = list(hints.each(key))
        if len(entries) > limit:
            errs.append(field.too_many(hints.at(key), actual=len(entries), maximum=limit))
            continue
        seen: set[str] = set()
        for entry in entries:
            name = entry.string("name")
            at = entry.at("name")
            if name in seen:
                errs.append(field.duplicate(at, name))
            seen.add(name)
            errs.extend(invalid_each(at, name, check(name)))


def _validate_endpoints(root: Reader, address_type: str) -> None:
    errs = root.errs
    endpoints = list(root.each("endpoints"))
    if len(endpoints) > MAX_ENDPOINTS:
        errs.append(field.too_many(root.at("endpoints"), actual=len(endpoints), maximum=MAX_ENDPOINTS))
        return
    for endpoint in endpoints:
        addresses = endpoint.strings("addresses")
        address_path = endpoint.at("addresses")
        if not addresses:
            errs.append(field.required(address_path, "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errs.append(field.too_many(address_path, actual=len(addresses), maximum=MAX_ADDRESSES))
        for i, address in enumerate(addresses):
            errs.extend(_validate_address(address, address_type, address_path.index(i)))
        node_name = endpoint.opt_string("nodeName")
        if node_name is not None:
            errs.extend(invalid_each(endpoint.at("nodeName"), node_name, names.is_dns1123_subdomain(node_name)))
        topology = endpoint.opt_string_map("deprecatedTopology")
        topology_path = endpoint.at("deprecatedTopology")
        if topology is not None:
            if len(topology) > MAX_TOPOLOGY_LABELS:
                errs.append(field.too_many(topology_path, actual=len(topology), maximum=MAX_TOPOLOGY_LABELS))
            errs.extend(meta.validate_labels(topology, topology_path))
        hostname = endpoint.opt_string("hostname")
        if hostname is not None:
            errs.extend(invalid_each(endpoint.at("hostname"), hostname, names.is_dns1123_label(hostname)))
        hints = endpoint.mapping("hints")
        if hints is not None:
            _validate_hints(hints)


def _validate_ports(root: Reader) -> None:
    errs = root.errs
    ports = list(root.each("ports"))
    if len(ports) > MAX_PORTS:
        errs.append(field.too_many(root.at("ports"), actual=len(ports), maximum=MAX_PORTS))
        return
    seen: set[str] = set()
    for port in ports:
        name = port.string("name")
        if name:
            errs.extend(invalid_each(port.at("name"), name, names.is_dns1123_label(name)))
        if name in seen:
            errs.append(field.duplicate(port.at("name"), name))
        seen.add(name)
        protocol = port.opt_string("protocol")
        if protocol is None:
            errs.append(field.required(port.at("protocol")))
        elif protocol not in PROTOCOLS:
            errs.append(field.not_supported(port.at("protocol"), protocol, supported=PROTOCOLS))
        port.integer("port", None)
        app_protocol = port.opt_string("appProtocol")
        if app_protocol is not None:
            errs.extend(invalid_each(port.at("appProtocol"), app_protocol, names.is_qualified_name(app_protocol)))


def validate_endpoint_slice(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEndpointSlice`` without the object metadata (validated generically by the server)."""
    errs: ErrorList = []
    root = NAMED_GROUPS.root(obj, errs)
    address_type = root.string("addressType")
    if not address_type:
        errs.append(field.required(field.new_path("addressType")))
    elif address_type not in ADDRESS_TYPES:
        errs.append(field.not_supported(field.new_path("addressType"), address_type, supported=ADDRESS_TYPES))
    _validate_endpoints(root, address_type)
    _validate_ports(root)
    return errs


def validate_endpoint_slice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEndpointSliceUpdate``: the create rules, then ``addressType`` may not change."""
    errs = validate_endpoint_slice(new)
    new_type = NAMED_GROUPS.root(new, []).string("addressType")
    if new_type != NAMED_GROUPS.root(old, []).string("addressType"):
        errs.append(field.invalid(field.new_path("addressType"), new_type, detail=IMMUTABLE_MSG))
    return errs


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {(GROUP, "EndpointSlice"): validate_endpoint_slice}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "EndpointSlice"): validate_endpoint_slice_update
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {}
