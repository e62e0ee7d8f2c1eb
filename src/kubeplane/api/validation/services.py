"""Service validation, as kube-apiserver's ``ValidateService``, ``ValidateServiceUpdate`` and
``ValidateLoadBalancerStatus`` (``pkg/apis/core/validation``).

Covers ports, the cluster IPs and IP families (dual-stack), session affinity, external IPs, the load-balancer
only fields, traffic policies, and what an update may not change (a cluster IP or IP family once set, the
load-balancer class, a local health-check node port). Upstream's odd paths are kept:
``spec.LoadBalancerSourceRanges`` and a root-level ``allocateLoadBalancerNodePorts``.

Invariants
    * Read through a :data:`~.reader.CORE_V1` reader, every validator ends with :func:`~.reader.finish`.
    * IP addresses are parsed as upstream's ``netutils`` does (leading zeros allowed in IPv4); an address that
      does not parse gets only its parse error, never the family or "special address" rules.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    PROTOCOLS,
    check_enum,
    invalid_each,
    is_ipv6,
    validate_port_num_or_name,
)
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import CORE_V1, Reader, finish

__all__ = [
    "validate_cluster_ips_related_fields",
    "validate_service",
    "validate_service_status_update",
    "validate_service_update",
]

_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")
_TRAFFIC_DISTRIBUTIONS: Final = ("PreferClose", "PreferSameNode", "PreferSameZone")
_MAX_AFFINITY_SECONDS: Final = 86400


def _headless(spec: Reader) -> bool:
    return spec.strings("clusterIPs") == ["None"]


def _special_ip_errors(ip: str, path: Path) -> ErrorList:
    """Upstream ``ValidateNonSpecialIP`` for an address that already parsed."""
    try:
        addr = ipaddress.ip_address(ip if ":" in ip else ".".join(str(int(p)) for p in ip.split(".")))
    except ValueError:
        return []
    errs: ErrorList = []
    if addr.is_unspecified:
        errs.append(field.invalid(path, ip, detail=f"may not be unspecified ({ip})"))
    if addr.is_loopback:
        errs.append(field.invalid(path, ip, detail="may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if addr.is_link_local and not addr.is_multicast:
        errs.append(field.invalid(path, ip, detail="may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    link_local_mc = (
        addr in ipaddress.ip_network("224.0.0.0/24") if addr.version == 4 else (int(addr) >> 112) & 0xFF0F == 0xFF02
    )
    if link_local_mc:
        detail = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
        errs.append(field.invalid(path, ip, detail=detail))
    return errs


def _service_port(p: Reader, *, require_name: bool, seen: set[str]) -> None:
    name = p.string("name")
    if require_name and not name:
        p.errs.append(field.required(p.at("name")))
    elif name:
        p.errs.extend(invalid_each(p.at("name"), name, names.is_dns1123_label(name)))
        if name in seen:
            p.errs.append(field.duplicate(p.at("name"), name))
        seen.add(name)
    port = p.integer("port")
    if port is not None:
        p.errs.extend(field.invalid(p.at("port"), port, detail=m) for m in names.is_valid_port_num(port))
    check_enum(p, "protocol", PROTOCOLS)
    p.errs.extend(validate_port_num_or_name(p, "targetPort"))
    app = p.opt_string("appProtocol")
    if app is not None:
        p.errs.extend(invalid_each(p.at("appProtocol"), app, names.is_qualified_name(app)))


def _cluster_ips(spec: Reader) -> None:
    """Upstream ``ValidateServiceClusterIPsRelatedFields`` (not for ExternalName)."""
    errs, ips = spec.errs, spec.strings("clusterIPs")
    path, families = spec.at("clusterIPs"), spec.strings("ipFamilies")
    if spec.string("clusterIP"):
        if not ips:
            errs.append(field.required(path))
        elif ips[0] != spec.string("clusterIP"):
            errs.append(field.invalid(path, ips, detail="first value must match `clusterIP`"))
    elif ips:
        errs.append(field.invalid(path, ips, detail="must be empty when `clusterIP` is not specified"))
    for i, family in enumerate(families):
        if family not in ("IPv4", "IPv6"):
            errs.append(field.not_supported(spec.at("ipFamilies").index(i), family, supported=("IPv4", "IPv6")))
        if family in families[:i]:
            errs.append(field.duplicate(spec.at("ipFamilies").index(i), family))
    check_enum(spec, "ipFamilyPolicy", ("PreferDualStack", "RequireDualStack", "SingleStack"), required=False)
    bad = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == "None":
            if len(ips) > 1:
                bad = True
                errs.append(field.invalid(path, ips, detail="'None' must be the first and only value"))
            continue
        ip_errs = names.is_valid_ip(path.index(i), ip)
        bad = bad or bool(ip_errs)
        errs.extend(ip_errs)
    if len(ips) > 2:
        errs.append(field.invalid(path, ips, detail="may only hold up to 2 values"))
    if bad:
        return
    if len(ips) > 1 and is_ipv6(ips[0]) == is_ipv6(ips[1]):
        errs.append(field.invalid(path, ips, detail="may specify no more than one IP for each IP family"))
    if not _headless(spec):
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            if family in ("IPv4", "IPv6") and is_ipv6(ip) != (family == "IPv6"):
                detail = f"expected an {family} value as indicated by `ipFamilies[{i}]`"
                errs.append(field.invalid(path.index(i), ip, detail=detail))


def validate_service(svc: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateService`` (the topology annotations and source-range annotation are metadata)."""
    errs: ErrorList = []
    spec = CORE_V1.root(svc, errs).child("spec")
    kind, headless, ports = spec.string("type"), _headless(spec), spec.items("ports")
    if not ports and not headless and kind != "ExternalName":
        errs.append(field.required(spec.at("ports")))
    if kind in ("LoadBalancer", "NodePort") and headless:
        detail = f"may not be set to 'None' for {kind} services"
        errs.append(field.invalid(spec.at("clusterIPs").index(0), "None", detail=detail))
    if kind == "ExternalName":
        for key in ("clusterIPs", "ipFamilies"):
            if spec.array(key):
                errs.append(field.forbidden(spec.at(key), "may not be set for ExternalName services"))
        if spec.has("ipFamilyPolicy"):
            errs.append(field.forbidden(spec.at("ipFamilyPolicy"), "may not be set for ExternalName services"))
        cname = spec.string("externalName").removesuffix(".")
        if cname:
            errs.extend(invalid_each(spec.at("externalName"), cname, names.is_dns1123_subdomain(cname)))
        else:
            errs.append(field.required(spec.at("externalName")))
    seen: set[str] = set()
    for p in ports:
        _service_port(p, require_name=len(ports) > 1, seen=seen)
    if spec.has("selector"):
        errs.extend(meta.validate_labels(spec.string_map("selector"), spec.at("selector")))
    check_enum(spec, "sessionAffinity", ("ClientIP", "None"))
    affinity = spec.string("sessionAffinity")
    if affinity == "ClientIP":
        _client_ip_config(spec)
    elif affinity == "None" and spec.has("sessionAffinityConfig"):
        errs.append(field.forbidden(spec.at("sessionAffinityConfig"), "must not be set when session affinity is None"))
    if kind != "ExternalName":
        _cluster_ips(spec)
    for i, ip in enumerate(spec.strings("externalIPs")):
        ip_errs = names.is_valid_ip(spec.at("externalIPs").index(i), ip)
        errs.extend(ip_errs or _special_ip_errors(ip, spec.at("externalIPs").index(i)))
    check_enum(spec, "type", _SERVICE_TYPES)
    node_ports: set[tuple[str, int]] = set()
    port_keys: set[tuple[str, int | None]] = set()
    for p in ports:
        node_port, protocol = p.integer("nodePort"), p.string("protocol")
        if kind == "ClusterIP" and node_port:
            errs.append(field.forbidden(p.at("nodePort"), "may not be used when `type` is 'ClusterIP'"))
        if node_port:
            if (protocol, node_port) in node_ports:
                errs.append(field.duplicate(p.at("nodePort"), node_port))
            node_ports.add((protocol, node_port))
        port_key = (protocol, p.integer("port"))
        if port_key in port_keys:
            assert p.path is not None
            errs.append(field.duplicate(p.path, {"protocol": protocol, "port": port_key[1]}))
        port_keys.add(port_key)
    _load_balancer_fields(spec)
    _traffic_policies(spec)
    return finish(errs)


def _client_ip_config(spec: Reader) -> None:
    detail = "when session affinity type is ClientIP"
    config = spec.mapping("sessionAffinityConfig")
    client = config.mapping("clientIP") if config is not None else None
    timeout = client.integer("timeoutSeconds", None) if client is not None else None
    if config is None:
        spec.errs.append(field.required(spec.at("sessionAffinityConfig"), detail))
    elif client is None:
        spec.errs.append(field.required(config.at("clientIP"), detail))
    elif timeout is None:
        spec.errs.append(field.required(client.at("timeoutSeconds"), detail))
    elif not 0 < timeout <= _MAX_AFFINITY_SECONDS:
        detail = f"must be greater than 0 and less than {_MAX_AFFINITY_SECONDS}"
        spec.errs.append(field.invalid(client.at("timeoutSeconds"), timeout, detail=detail))


def _load_balancer_fields(spec: Reader) -> None:
    errs, is_lb = spec.errs, spec.string("type") == "LoadBalancer"
    lb_only = "may only be used when `type` is 'LoadBalancer'"
    ranges = spec.strings("loadBalancerSourceRanges")
    if ranges:
        path = spec.at("LoadBalancerSourceRanges")  # sic, upstream
        if not is_lb:
            errs.append(field.forbidden(path, lb_only))
        for i, cidr in enumerate(ranges):
            errs.extend(names.is_valid_cidr(path.index(i), cidr.strip()))
    if spec.has("allocateLoadBalancerNodePorts") and not is_lb:
        errs.append(field.forbidden(spec.at("allocateLoadBalancerNodePorts"), lb_only))
    if is_lb and not spec.has("allocateLoadBalancerNodePorts"):
        errs.append(field.required(field.new_path("allocateLoadBalancerNodePorts")))  # sic, upstream's root path
    lb_class = spec.opt_string("loadBalancerClass")
    if lb_class is not None:
        if is_lb:
            errs.extend(invalid_each(spec.at("loadBalancerClass"), lb_class, names.is_qualified_name(lb_class)))
        else:
            errs.append(field.forbidden(spec.at("loadBalancerClass"), lb_only))


def _traffic_policies(spec: Reader) -> None:
    errs, kind = spec.errs, spec.string("type")
    accessible = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.strings("externalIPs")))
    policy = spec.string("externalTrafficPolicy")
    if not accessible:
        if policy:
            detail = "may only be set for externally-accessible services"
            errs.append(field.invalid(spec.at("externalTrafficPolicy"), policy, detail=detail))
    else:
        check_enum(spec, "externalTrafficPolicy", _TRAFFIC_POLICIES)
    health = spec.integer("healthCheckNodePort")
    if not (kind == "LoadBalancer" and policy == "Local"):
        if health:
            detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
            errs.append(field.invalid(spec.at("healthCheckNodePort"), health, detail=detail))
    elif health == 0:
        errs.append(field.required(spec.at("healthCheckNodePort")))
    elif health is not None:
        errs.extend(invalid_each(spec.at("healthCheckNodePort"), health, names.is_valid_port_num(health)))
    if not spec.has("internalTrafficPolicy") and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(field.required(spec.at("internalTrafficPolicy")))
    check_enum(spec, "internalTrafficPolicy", _TRAFFIC_POLICIES, required=False)
    check_enum(spec, "trafficDistribution", _TRAFFIC_DISTRIBUTIONS, required=False)


def validate_service_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceUpdate``: cluster IPs and IP families keep their primary, plus the create rules."""
    errs: ErrorList = []
    spec, old_spec = CORE_V1.root(new, errs).child("spec"), CORE_V1.root(old, []).child("spec")
    external = "ExternalName" in (spec.string("type"), old_spec.string("type"))
    ips, old_ips = spec.strings("clusterIPs"), old_spec.strings("clusterIPs")
    path = spec.at("clusterIPs")
    if not external and not (_headless(spec) and _headless(old_spec)):
        changed = "may not change once set"
        if len(ips) == len(old_ips):
            errs.extend(
                field.invalid(path.index(i), ips, detail=changed) for i, ip in enumerate(old_ips) if ip != ips[i]
            )
        elif len(old_ips) > len(ips):
            if not ips:
                errs.append(field.invalid(path.index(0), ips, detail="primary clusterIP can not be unset"))
            elif ips[0] != old_ips[0]:
                errs.append(field.invalid(path.index(0), ips, detail=changed))
            if len(ips) == 1 and spec.string("ipFamilyPolicy") != "SingleStack":
                detail = "must be set to 'SingleStack' when releasing the secondary clusterIP"
                errs.append(field.invalid(spec.at("ipFamilyPolicy"), spec.opt_string("ipFamilyPolicy"), detail=detail))
        elif old_ips and ips[0] != old_ips[0]:
            errs.append(field.invalid(path.index(0), ips, detail=changed))
    fams, old_fams = spec.strings("ipFamilies"), old_spec.strings("ipFamilies")
    if not external and _headless(spec) == _headless(old_spec) and not _headless(spec):
        fpath = spec.at("ipFamilies").index(0)
        if len(fams) == len(old_fams):
            errs.extend(
                field.invalid(fpath, fams, detail="may not change once set")
                for f, o in zip(fams, old_fams, strict=True)
                if f != o
            )
        elif fams and old_fams and fams[0] != old_fams[0]:  # a family released or added: the primary stays
            errs.append(field.invalid(fpath, ips, detail="may not change once set"))
    lb_class, old_class = spec.opt_string("loadBalancerClass"), old_spec.opt_string("loadBalancerClass")
    if spec.string("type") == old_spec.string("type") == "LoadBalancer" and lb_class != old_class:
        errs.append(field.invalid(spec.at("loadBalancerClass"), lb_class, detail="may not change once set"))
    local = [
        s.string("type") == "LoadBalancer" and s.string("externalTrafficPolicy") == "Local" for s in (spec, old_spec)
    ]
    if all(local) and spec.integer("healthCheckNodePort") != old_spec.integer("healthCheckNodePort"):
        errs.append(field.forbidden(spec.at("healthCheckNodePort"), IMMUTABLE_MSG))
    return finish(errs + validate_service(new))


def validate_service_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateLoadBalancerStatus`` (LoadBalancerIPMode enabled)."""
    errs: ErrorList = []
    root = CORE_V1.root(new, errs)
    status = root.child("status").child("loadBalancer")
    ingress = status.items("ingress")
    if ingress and root.child("spec").string("type") != "LoadBalancer":
        errs.append(field.forbidden(status.at("ingress"), "may only be used when `spec.type` is 'LoadBalancer'"))
        return finish(errs)
    for ing in ingress:
        ip, mode, hostname = ing.string("ip"), ing.opt_string("ipMode"), ing.string("hostname")
        if ip:
            errs.extend(names.is_valid_ip(ing.at("ip"), ip))
        if mode is None and ip:
            errs.append(field.required(ing.at("ipMode"), "must be specified when `ip` is set"))
        elif mode is not None and not ip:
            errs.append(field.forbidden(ing.at("ipMode"), "may not be specified when `ip` is not set"))
        elif mode is not None and mode not in ("Proxy", "VIP"):
            errs.append(field.not_supported(ing.at("ipMode"), mode, supported=("Proxy", "VIP")))
        if hostname:
            errs.extend(invalid_each(ing.at("hostname"), hostname, names.is_dns1123_subdomain(hostname)))
            if not names.is_valid_ip(None, hostname):
                errs.append(field.invalid(ing.at("hostname"), hostname, detail="must be a DNS name, not an IP address"))
    return finish(errs)


def validate_cluster_ips_related_fields(svc: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceClusterIPsRelatedFields`` alone: the service allocator's pre-check
    (``storage/alloc.go`` ``initIPFamilyFields``) before it infers families or allocates."""
    errs: ErrorList = []
    spec = CORE_V1.root(svc, errs).child("spec")
    if spec.string("type") != "ExternalName":
        _cluster_ips(spec)
    return finish(errs)
