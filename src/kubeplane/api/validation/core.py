"""Kind-specific validation of core/v1 objects, as kube-apiserver's ``pkg/apis/core/validation``.

The registry looks a validator up by ``(group, kind)`` (group ``""`` for core) in :data:`CREATE_VALIDATORS`,
:data:`UPDATE_VALIDATORS` (``validate(new, old)``: the create rules on ``new`` plus what may not change, as the
registry strategies' ``ValidateUpdate`` call both) or :data:`STATUS_UPDATE_VALIDATORS` (the ``/status``
subresource). Objects are defaulted core/v1 JSON dicts; ``metadata`` is validated generically by the API
server and not here, except where upstream's kind-specific rules read it (an Event's namespace, a
service-account token Secret's annotation, a Namespace's deletion timestamp).

Every validator returns an :data:`~kubeplane.api.validation.field.ErrorList` and never raises on bad input:
wrong JSON types become field errors (see :class:`~kubeplane.api.validation.containers.Obj`). Messages and paths
are upstream's, oddities included (node taints under ``metadata.taints``, a Service's
``spec.LoadBalancerSourceRanges``).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubeplane.api import meta, taints
from kubeplane.api.validation import field, names
from kubeplane.api.validation.containers import (
    NEGATIVE_MSG,
    PROTOCOLS,
    Obj,
    finish,
    parse_quantity_at,
    validate_port_num_or_name,
    validate_resource_quantity_value,
)
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.pods import (
    check_pod_template_spec,
    normalize,
    spec_diff,
    validate_label_selector,
    validate_node_selector,
    validate_pod,
    validate_pod_status_update,
    validate_pod_update,
)

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS", "Validate", "ValidateUpdate"]

Validate = Callable[[Mapping[str, Any]], ErrorList]
ValidateUpdate = Callable[[Mapping[str, Any], Mapping[str, Any]], ErrorList]

IMMUTABLE_MSG: Final = "field is immutable"
MAX_SECRET_SIZE: Final = 1024 * 1024


def _root(obj: object, errs: ErrorList) -> Obj:
    return Obj(obj if isinstance(obj, Mapping) else {}, None, errs)


def _child(o: Obj, key: str) -> Obj:
    sub = o.mapping(key)
    return sub if sub is not None else Obj({}, o.at(key), o.errs)


def _invalid_each(errs: ErrorList, path: Path, value: str, msgs: list[str]) -> None:
    errs.extend(field.invalid(path, value, detail=m) for m in msgs)


def _immutable(errs: ErrorList, path: Path, new: Any, old: Any) -> None:
    """Upstream ``ValidateImmutableField``: ``Invalid value: <new>: field is immutable``."""
    if normalize(new) != normalize(old):
        errs.append(field.invalid(path, new, detail=IMMUTABLE_MSG))


def _enum(o: Obj, key: str, allowed: tuple[str, ...], *, required: bool = True) -> None:
    value = o.string(key)
    if not value:
        if required:
            o.errs.append(field.required(o.at(key)))
    elif value not in allowed:
        o.errs.append(field.not_supported(o.at(key), value, supported=allowed))


def _is_v6(ip: str) -> bool:
    return not names.is_valid_ipv6_address(None, ip)


# --- Node ---------------------------------------------------------------------------------------------------


def _node_resources(status: Obj) -> None:
    """Upstream ``ValidateNodeResources``; as upstream, paths are ``status.capacity.<name>`` (children)."""
    for key in ("capacity", "allocatable"):
        for name, q in status.quantities(key).items():
            status.errs.extend(validate_resource_quantity_value(name, q, status.at(key).child(name)))


def _node_taints(spec: Obj) -> None:
    items = spec.items("taints")
    for t in items:
        for key in ("key", "value", "effect", "timeAdded"):
            t.string(key)
    if items:  # upstream's path: metadata.taints
        spec.errs.extend(taints.validate_taints([t.data for t in items], field.new_path("metadata", "taints")))


def _pod_cidrs(spec: Obj) -> list[str]:
    cidrs = spec.strings("podCIDRs")
    return cidrs or ([spec.string("podCIDR")] if spec.string("podCIDR") else [])


def validate_node(node: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNode``: taints, capacity and allocatable quantities, pod CIDRs."""
    errs: ErrorList = []
    root = _root(node, errs)
    spec = _child(root, "spec")
    _node_taints(spec)
    _node_resources(_child(root, "status"))
    cidrs = _pod_cidrs(spec)
    path = spec.at("podCIDRs")
    for i, cidr in enumerate(cidrs):
        errs.extend(names.is_valid_cidr(path.index(i), cidr))
    if len(cidrs) > 1:
        families = [_is_v6(c.partition("/")[0]) for c in cidrs]
        if len(cidrs) > 2 or all(families) or not any(families):
            errs.append(field.invalid(path, cidrs, detail="may specify no more than one CIDR for each IP family"))
        for i, cidr in enumerate(cidrs):
            if cidr in cidrs[:i]:
                errs.append(field.duplicate(path.index(i), cidr))
    return finish(errs)


def validate_node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNodeUpdate``: addresses unique; podCIDRs and providerID immutable once set."""
    errs: ErrorList = []
    root, old_root = _root(new, errs), _root(old, [])
    spec, old_spec = _child(root, "spec"), _child(old_root, "spec")
    status = _child(root, "status")
    _node_resources(status)
    seen: list[Any] = []
    for i, address in enumerate(status.items("addresses")):
        entry = {"type": address.string("type"), "address": address.string("address")}
        if entry in seen:
            errs.append(field.duplicate(status.at("addresses").index(i), entry))
        seen.append(entry)
    old_cidrs = _pod_cidrs(old_spec)
    if old_cidrs and old_cidrs != _pod_cidrs(spec):
        errs.append(field.forbidden(spec.at("podCIDRs"), 'node updates may not change podCIDR except from "" to valid'))
    old_provider = old_spec.string("providerID")
    if old_provider and old_provider != spec.string("providerID"):
        detail = 'node updates may not change providerID except from "" to valid'
        errs.append(field.forbidden(spec.at("providerID"), detail))
    _node_taints(spec)
    if spec.string("externalID") != old_spec.string("externalID"):
        errs.append(field.forbidden(spec.at("externalID"), "may not be updated"))
    return finish(errs)


def _node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    return finish(validate_node(new) + validate_node_update(new, old))


# --- Namespace ----------------------------------------------------------------------------------------------


def validate_namespace(ns: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNamespace``: finalizers are qualified names, unprefixed only ``kubernetes``."""
    errs: ErrorList = []
    spec = _child(_root(ns, errs), "spec")
    path = spec.at("finalizers")  # upstream reports every finalizer at the list's path
    for name in spec.strings("finalizers"):
        _invalid_each(errs, path, name, names.is_qualified_name(name))
        if "/" not in name and name != "kubernetes":
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            errs.append(field.invalid(path, name, detail=detail))
    return finish(errs)


def validate_namespace_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateNamespaceStatusUpdate``: the phase follows ``metadata.deletionTimestamp``."""
    errs: ErrorList = []
    root = _root(new, errs)
    phase = _child(root, "status").string("phase")
    path = field.new_path("status", "Phase")
    if not _child(root, "metadata").has("deletionTimestamp"):
        if phase != "Active":
            errs.append(field.invalid(path, phase, detail="may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        detail = "may only be 'Terminating' if `deletionTimestamp` is not empty"
        errs.append(field.invalid(path, phase, detail=detail))
    return finish(errs)


# --- Service ------------------------------------------------------------------------------------------------

_SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")
_TRAFFIC_DISTRIBUTIONS: Final = ("PreferClose", "PreferSameNode", "PreferSameZone")
_MAX_AFFINITY_SECONDS: Final = 86400


def _headless(spec: Obj) -> bool:
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


def _service_port(p: Obj, *, require_name: bool, seen: set[str]) -> None:
    name = p.string("name")
    if require_name and not name:
        p.errs.append(field.required(p.at("name")))
    elif name:
        _invalid_each(p.errs, p.at("name"), name, names.is_dns1123_label(name))
        if name in seen:
            p.errs.append(field.duplicate(p.at("name"), name))
        seen.add(name)
    port = p.integer("port")
    if port is not None:
        p.errs.extend(field.invalid(p.at("port"), port, detail=m) for m in names.is_valid_port_num(port))
    _enum(p, "protocol", PROTOCOLS)
    p.errs.extend(validate_port_num_or_name(p.data.get("targetPort", 0), p.at("targetPort")))
    app = p.opt_string("appProtocol")
    if app is not None:
        _invalid_each(p.errs, p.at("appProtocol"), app, names.is_qualified_name(app))


def _cluster_ips(spec: Obj) -> None:
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
    _enum(spec, "ipFamilyPolicy", ("PreferDualStack", "RequireDualStack", "SingleStack"), required=False)
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
    if len(ips) > 1 and _is_v6(ips[0]) == _is_v6(ips[1]):
        errs.append(field.invalid(path, ips, detail="may specify no more than one IP for each IP family"))
    if not _headless(spec):
        for i, (ip, family) in enumerate(zip(ips, families, strict=False)):
            if family in ("IPv4", "IPv6") and _is_v6(ip) != (family == "IPv6"):
                detail = f"expected an {family} value as indicated by `ipFamilies[{i}]`"
                errs.append(field.invalid(path.index(i), ip, detail=detail))


def validate_service(svc: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateService`` (the topology annotations and source-range annotation are metadata)."""
    errs: ErrorList = []
    spec = _child(_root(svc, errs), "spec")
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
            _invalid_each(errs, spec.at("externalName"), cname, names.is_dns1123_subdomain(cname))
        else:
            errs.append(field.required(spec.at("externalName")))
    seen: set[str] = set()
    for p in ports:
        _service_port(p, require_name=len(ports) > 1, seen=seen)
    if spec.has("selector"):
        errs.extend(meta.validate_labels(spec.string_map("selector"), spec.at("selector")))
    _enum(spec, "sessionAffinity", ("ClientIP", "None"))
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
    _enum(spec, "type", _SERVICE_TYPES)
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


def _client_ip_config(spec: Obj) -> None:
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


def _load_balancer_fields(spec: Obj) -> None:
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
            _invalid_each(errs, spec.at("loadBalancerClass"), lb_class, names.is_qualified_name(lb_class))
        else:
            errs.append(field.forbidden(spec.at("loadBalancerClass"), lb_only))


def _traffic_policies(spec: Obj) -> None:
    errs, kind = spec.errs, spec.string("type")
    accessible = kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(spec.strings("externalIPs")))
    policy = spec.string("externalTrafficPolicy")
    if not accessible:
        if policy:
            detail = "may only be set for externally-accessible services"
            errs.append(field.invalid(spec.at("externalTrafficPolicy"), policy, detail=detail))
    else:
        _enum(spec, "externalTrafficPolicy", _TRAFFIC_POLICIES)
    health = spec.integer("healthCheckNodePort")
    if not (kind == "LoadBalancer" and policy == "Local"):
        if health:
            detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"
            errs.append(field.invalid(spec.at("healthCheckNodePort"), health, detail=detail))
    elif health == 0:
        errs.append(field.required(spec.at("healthCheckNodePort")))
    elif health is not None:
        _invalid_each(errs, spec.at("healthCheckNodePort"), health, names.is_valid_port_num(health))  # type: ignore[arg-type]
    if not spec.has("internalTrafficPolicy") and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(field.required(spec.at("internalTrafficPolicy")))
    _enum(spec, "internalTrafficPolicy", _TRAFFIC_POLICIES, required=False)
    _enum(spec, "trafficDistribution", _TRAFFIC_DISTRIBUTIONS, required=False)


def validate_service_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceUpdate``: cluster IPs and IP families keep their primary, plus the create rules."""
    errs: ErrorList = []
    spec, old_spec = _child(_root(new, errs), "spec"), _child(_root(old, []), "spec")
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
    root = _root(new, errs)
    status = _child(_child(root, "status"), "loadBalancer")
    ingress = status.items("ingress")
    if ingress and _child(root, "spec").string("type") != "LoadBalancer":
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
            _invalid_each(errs, ing.at("hostname"), hostname, names.is_dns1123_subdomain(hostname))
            if not names.is_valid_ip(None, hostname):
                errs.append(field.invalid(ing.at("hostname"), hostname, detail="must be a DNS name, not an IP address"))
    return finish(errs)


# --- ConfigMap, Secret, ServiceAccount ------------------------------------------------------------------


def _decoded(o: Obj, key: str) -> dict[str, bytes]:
    """A ``map[string][]byte`` field: base64 values decoded, bad ones reported."""
    out: dict[str, bytes] = {}
    for k, v in o.string_map(key).items():
        try:
            out[k] = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError) as exc:
            o.errs.append(field.invalid(o.at(key).key(k), "<value omitted>", detail=f"illegal base64 data: {exc}"))
    return out


def _keys(o: Obj, key: str, keys: Mapping[str, object]) -> None:
    for k in keys:
        _invalid_each(o.errs, o.at(key).key(k), k, names.is_config_map_key(k))


def validate_config_map(cm: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateConfigMap``: keys, no key in both maps, total size at most 1 MiB."""
    errs: ErrorList = []
    root = _root(cm, errs)
    data, binary = root.string_map("data"), _decoded(root, "binaryData")
    _keys(root, "data", data)
    for k in data:
        if k in binary:
            errs.append(field.invalid(root.at("data").key(k), k, detail="duplicate of key present in binaryData"))
    _keys(root, "binaryData", binary)
    size = sum(len(v.encode("utf-8", "surrogatepass")) for v in data.values()) + sum(map(len, binary.values()))
    if size > MAX_SECRET_SIZE:
        errs.append(field.too_long(field.new_path(""), MAX_SECRET_SIZE))
    return finish(errs)


def _immutable_data(errs: ErrorList, new: Obj, old: Obj, keys: tuple[str, ...]) -> None:
    """Once ``immutable: true``, the flag and the data may not change."""
    if old.boolean("immutable"):
        if not new.boolean("immutable"):
            errs.append(field.forbidden(new.at("immutable"), "field is immutable when `immutable` is set"))
        for key in keys:
            if normalize(new.data.get(key)) != normalize(old.data.get(key)):
                errs.append(field.forbidden(new.at(key), "field is immutable when `immutable` is set"))


def validate_config_map_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _immutable_data(errs, _root(new, errs), _root(old, []), ("data", "binaryData"))
    return finish(errs + validate_config_map(new))


_SECRET_REQUIRED_KEYS: Final = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def validate_secret(secret: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateSecret``: keys, total size at most 1 MiB, the data each built-in type needs.

    ``stringData`` is merged into ``data`` by upstream's conversion before validation; it is merged here too.
    """
    errs: ErrorList = []
    root = _root(secret, errs)
    data = _decoded(root, "data")
    data.update((k, v.encode("utf-8", "surrogatepass")) for k, v in root.string_map("stringData").items())
    data_path = root.at("data")
    _keys(root, "data", data)
    if sum(map(len, data.values())) > MAX_SECRET_SIZE:
        errs.append(field.too_long(data_path, MAX_SECRET_SIZE))
    kind = root.string("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = _child(_child(root, "metadata"), "annotations").data
        if not annotations.get("kubernetes.io/service-account.name"):
            at = field.new_path("metadata", "annotations").key("kubernetes.io/service-account.name")
            errs.append(field.required(at))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.extend(field.required(data_path.key(k)) for k in ("username", "password"))
    elif kind == "kubernetes.io/ssh-auth" and not data.get("ssh-privatekey"):
        errs.append(field.required(data_path.key("ssh-privatekey")))
    for key in _SECRET_REQUIRED_KEYS.get(kind, ()):
        if key not in data:
            errs.append(field.required(data_path.key(key)))
        elif key.startswith(".docker"):
            try:
                if not isinstance(json.loads(data[key]), dict):
                    raise ValueError("json: cannot unmarshal into Go value of type map[string]interface {}")
            except ValueError as exc:
                errs.append(field.invalid(data_path.key(key), "<secret contents redacted>", detail=str(exc)))
    return finish(errs)


def validate_secret_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    root, old_root = _root(new, errs), _root(old, [])
    _immutable(errs, root.at("type"), root.string("type"), old_root.string("type"))
    _immutable_data(errs, root, old_root, ("data",))
    return finish(errs + validate_secret(new))


def _no_rules(_obj: Mapping[str, Any], _old: Mapping[str, Any] | None = None) -> ErrorList:
    """Kinds whose only upstream rules are metadata rules (ServiceAccount)."""
    return []


# --- Event (legacy core/v1 rules) ---------------------------------------------------------------------------


def validate_event(event: Mapping[str, Any]) -> ErrorList:
    """Upstream ``legacyValidateEvent``, all that applies to core/v1 Events (the strict events.k8s.io/v1 rules
    do not): the involved object's namespace matches the event's, and a new-style event (one with
    ``eventTime``) names its reporting controller, instance, action and reason within upstream's limits."""
    errs: ErrorList = []
    root = _root(event, errs)
    namespace = _child(root, "metadata").string("namespace")
    involved = _child(root, "involvedObject").string("namespace")
    ns_path = field.new_path("involvedObject", "namespace")
    mismatch = "does not match event.namespace"
    if not root.has("eventTime"):
        if (not involved and namespace not in ("", "default")) or (involved and namespace != involved):
            errs.append(field.invalid(ns_path, involved, detail=mismatch))
    else:
        if not involved and namespace not in ("default", "kube-system"):
            errs.append(field.invalid(ns_path, involved, detail=mismatch))
        # core/v1 JSON calls the reporting controller ``reportingComponent``; upstream names the path after the
        # request's version, which for core/v1 is this same name.
        controller = root.string("reportingComponent")
        if not controller:
            errs.append(field.required(root.at("reportingComponent")))
        _invalid_each(errs, root.at("reportingComponent"), controller, names.is_qualified_name(controller))
        for key, limit, required in (
            ("reportingInstance", 128, True),
            ("action", 128, True),
            ("reason", 128, True),
            ("message", 1024, False),
        ):
            value = root.string(key)
            if required and not value:
                errs.append(field.required(root.at(key)))
            if len(value.encode("utf-8", "surrogatepass")) > limit:
                errs.append(field.invalid(root.at(key), "", detail=f"can have at most {limit} characters"))
    _invalid_each(errs, field.new_path("namespace"), namespace, names.is_dns1123_subdomain(namespace))
    return finish(errs)


def _event_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    return validate_event(new)  # core/v1: only the legacy rules, on create and update alike


# --- PersistentVolume, PersistentVolumeClaim ----------------------------------------------------------------

_ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES: Final = ("Block", "Filesystem")
_PV_SOURCES: Final = (
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", None),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)  # fmt: skip  (flexVolume: upstream counts it without the "more than 1" check)


def _access_modes(spec: Obj, *, required_detail: str) -> None:
    modes = spec.strings("accessModes")
    if not modes:
        spec.errs.append(field.required(spec.at("accessModes"), required_detail))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            spec.errs.append(field.not_supported(spec.at("accessModes"), mode, supported=_ACCESS_MODES))
    known = [m for m in modes if m in _ACCESS_MODES]
    if "ReadWriteOncePod" in known and any(m != "ReadWriteOncePod" for m in known):
        detail = "may not use ReadWriteOncePod with other access modes"
        spec.errs.append(field.forbidden(spec.at("accessModes"), detail))


def _class_name(spec: Obj, key: str) -> None:
    value = spec.string(key)
    if value:
        _invalid_each(spec.errs, spec.at(key), value, names.is_dns1123_subdomain(value))


def validate_persistent_volume(pv: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeSpec`` (not inline): capacity, access modes, one source, affinity."""
    errs: ErrorList = []
    spec = _child(_root(pv, errs), "spec")
    _access_modes(spec, required_detail="")
    capacity = spec.quantities("capacity")
    if not spec.data.get("capacity"):
        errs.append(field.required(spec.at("capacity")))
    if "storage" not in capacity or len(capacity) > 1:
        shown = {k: str(q) for k, q in capacity.items()}
        errs.append(field.not_supported(spec.at("capacity"), shown, supported=("storage",)))
    for name, q in capacity.items():
        at = spec.at("capacity").key(name)
        if q.value() < 0:
            errs.append(field.invalid(at, q.value(), detail="must be a valid resource quantity"))
        if q.sign() <= 0:
            errs.append(field.invalid(at, str(q), detail="must be greater than zero"))
    _enum(spec, "persistentVolumeReclaimPolicy", ("Delete", "Recycle", "Retain"), required=False)
    affinity = spec.mapping("nodeAffinity")
    if affinity is not None:
        required = affinity.mapping("required")
        if required is None:
            errs.append(field.required(affinity.at("required"), "must specify required node constraints"))
        else:
            validate_node_selector(required)
    count = 0
    for source_key, error_key in _PV_SOURCES:
        source = spec.mapping(source_key)
        if source is None:
            continue
        if count and error_key is not None:
            errs.append(field.forbidden(spec.at(error_key), "may not specify more than 1 volume type"))
            continue
        count += 1
        if source_key in ("hostPath", "local") and not source.string("path"):
            errs.append(field.required(source.at("path")))
        if source_key == "local" and affinity is None:
            errs.append(field.required(spec.at("nodeAffinity"), "Local volume requires node affinity"))
        if source_key == "csi" and not source.string("volumeHandle"):
            errs.append(field.required(source.at("volumeHandle")))
    if count == 0:
        errs.append(field.required(field.new_path("spec"), "must specify a volume type"))
    host_path = _child(spec, "hostPath").string("path")
    if host_path.rstrip("/") == "" and host_path and spec.string("persistentVolumeReclaimPolicy") == "Recycle":
        detail = "may not be 'recycle' for a hostPath mount of '/'"
        errs.append(field.forbidden(spec.at("persistentVolumeReclaimPolicy"), detail))
    _class_name(spec, "storageClassName")
    _enum(spec, "volumeMode", _VOLUME_MODES, required=False)
    return finish(errs)


def validate_persistent_volume_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeUpdate``: the source, volume mode and node affinity are fixed."""
    errs: ErrorList = []
    spec, old_spec = _child(_root(new, errs), "spec"), _child(_root(old, []), "spec")
    keys = [key for key, _ in _PV_SOURCES]
    new_source = normalize({k: spec.data.get(k) for k in keys})
    old_source = normalize({k: old_spec.data.get(k) for k in keys})
    csi, old_csi = new_source.get("csi"), old_source.get("csi")
    if isinstance(csi, dict) and isinstance(old_csi, dict) and "controllerExpandSecretRef" not in old_csi:
        csi.pop("controllerExpandSecretRef", None)  # may be set once
    if new_source != old_source:
        detail = "spec.persistentvolumesource is immutable after creation\n" + spec_diff(old_source, new_source, "spec")
        errs.append(field.forbidden(field.new_path("spec", "persistentvolumesource"), detail))
    _immutable(errs, field.new_path("volumeMode"), spec.data.get("volumeMode"), old_spec.data.get("volumeMode"))
    if old_spec.has("nodeAffinity") and normalize(spec.data.get("nodeAffinity")) != normalize(
        old_spec.data.get("nodeAffinity")
    ):
        detail = IMMUTABLE_MSG + ", except for updating from beta label to GA"
        errs.append(field.invalid(field.new_path("nodeAffinity"), spec.data.get("nodeAffinity"), detail=detail))
    return finish(errs + validate_persistent_volume(new))


def _data_source(spec: Obj, key: str) -> None:
    source = spec.mapping(key)
    if source is None:
        return
    for k in ("name", "kind"):
        if not source.string(k):
            spec.errs.append(field.required(source.at(k)))
    group = source.string("apiGroup")
    if not group and source.string("kind") != "PersistentVolumeClaim":
        detail = "must be 'PersistentVolumeClaim' when referencing the default apiGroup"
        spec.errs.append(field.invalid(source.path, source.string("kind"), detail=detail))
    if group:
        _invalid_each(spec.errs, source.at("apiGroup"), group, names.is_dns1123_subdomain(group))


_REF_KEYS: Final = ("apiGroup", "kind", "name")


def _pvc_spec(spec: Obj) -> None:
    """Upstream ``ValidatePersistentVolumeClaimSpec``."""
    _access_modes(spec, required_detail="at least 1 access mode is required")
    validate_label_selector(spec.mapping("selector"))
    at = spec.at("resources").key("storage")
    storage = _child(spec, "resources").quantities("requests").get("storage")
    if storage is None:
        spec.errs.append(field.required(at))
    elif storage.sign() <= 0:
        spec.errs.append(field.invalid(at, str(storage), detail="must be greater than zero"))
    else:
        spec.errs.extend(validate_resource_quantity_value("storage", storage, at))
    _class_name(spec, "storageClassName")
    _enum(spec, "volumeMode", _VOLUME_MODES, required=False)
    _data_source(spec, "dataSource")
    _data_source(spec, "dataSourceRef")
    source, ref = spec.mapping("dataSource"), spec.mapping("dataSourceRef")
    if ref is not None and ref.string("namespace"):
        if source is not None:
            detail = "may not be specified when dataSourceRef.namespace is specified"
            spec.errs.append(field.invalid(spec.path, str(spec.at("dataSource")), detail=detail))
    elif source is not None and ref is not None and any(source.string(k) != ref.string(k) for k in _REF_KEYS):
        spec.errs.append(field.invalid(spec.path, str(spec.at("dataSource")), detail="must match dataSourceRef"))


def validate_persistent_volume_claim(pvc: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _pvc_spec(_child(_root(pvc, errs), "spec"))
    return finish(errs)


def validate_persistent_volume_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeClaimUpdate`` (RecoverVolumeExpansionFailure on): the spec is fixed
    but for the storage request of a bound claim, a volume name set once, a class set from nil."""
    errs: ErrorList = []
    root, old_root = _root(new, errs), _root(old, [])
    spec, old_spec = _child(root, "spec"), _child(old_root, "spec")
    munged = {**spec.data}
    if not old_spec.string("volumeName"):
        munged["volumeName"] = old_spec.data.get("volumeName")
    if not old_spec.has("storageClassName") and spec.has("storageClassName"):
        annotations = _child(_child(old_root, "metadata"), "annotations").data
        beta = annotations.get("volume.beta.kubernetes.io/storage-class")
        if beta is None or beta == spec.data["storageClassName"]:
            munged["storageClassName"] = None
    bound = _child(root, "status").string("phase") == "Bound"
    resources = _child(spec, "resources").data
    old_resources = _child(old_spec, "resources").data
    if bound and isinstance(resources.get("requests"), Mapping):
        requests = {**resources["requests"]}
        old_requests = old_resources.get("requests")
        requests["storage"] = old_requests.get("storage") if isinstance(old_requests, Mapping) else None
        munged["resources"] = {**resources, "requests": requests}
    if bound and spec.has("volumeAttributesClassName"):
        munged["volumeAttributesClassName"] = old_spec.data.get("volumeAttributesClassName")
    new_norm, old_norm = normalize(munged), normalize(old_spec.data)
    if new_norm != old_norm:
        detail = (
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        )
        errs.append(field.forbidden(field.new_path("spec"), detail + "\n" + spec_diff(old_norm, new_norm, "spec")))
    size = _child(spec, "resources").quantities("requests").get("storage")
    old_size = _child(old_spec, "resources").quantities("requests").get("storage")
    status_size = _child(_child(old_root, "status"), "capacity").data.get("storage")
    if size is not None and old_size is not None and size < old_size:
        status_q = parse_quantity_at(status_size, field.new_path("status"), []) if status_size is not None else None
        if size.sign() <= 0 if status_q is None else size <= status_q:  # a missing capacity reads as 0
            at = field.new_path("spec", "resources", "requests", "storage")
            errs.append(field.forbidden(at, "field can not be less than status.capacity"))
    _immutable(errs, field.new_path("volumeMode"), spec.data.get("volumeMode"), old_spec.data.get("volumeMode"))
    return finish(errs + validate_persistent_volume_claim(new))


def validate_persistent_volume_claim_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeClaimStatusUpdate``: access modes present, capacities not negative."""
    errs: ErrorList = []
    root = _root(new, errs)
    if not _child(root, "spec").strings("accessModes"):
        errs.append(field.required(field.new_path("Spec", "accessModes")))  # sic, upstream
    status = _child(root, "status")
    for name, q in status.quantities("capacity").items():
        if q.value() < 0:
            errs.append(
                field.invalid(status.at("capacity").key(name), q.value(), detail="must be a valid resource quantity")
            )
    return finish(errs)


# --- ReplicationController ----------------------------------------------------------------------------------


def validate_replication_controller(rc: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicationControllerSpec``: a non-empty selector that matches the template labels,
    a template that always restarts and has no deadline."""
    errs: ErrorList = []
    spec = _child(_root(rc, errs), "spec")
    for key in ("minReadySeconds", "replicas"):
        value = spec.integer(key)
        if value is not None and value < 0:
            errs.append(field.invalid(spec.at(key), value, detail=NEGATIVE_MSG))
    selector = spec.string_map("selector")
    if not selector:
        errs.append(field.required(spec.at("selector")))
    template = spec.mapping("template")
    if template is None:
        errs.append(field.required(spec.at("template")))
        return finish(errs)
    labels = _child(template, "metadata").string_map("labels")
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        at = template.at("metadata").child("labels")
        errs.append(field.invalid(at, labels, detail="`selector` does not match template `labels`"))
    check_pod_template_spec(template)
    tpl_spec = _child(template, "spec")
    policy = tpl_spec.string("restartPolicy")
    if policy != "Always":
        errs.append(field.not_supported(tpl_spec.at("restartPolicy"), policy, supported=("Always",)))
    if tpl_spec.has("activeDeadlineSeconds"):
        detail = "activeDeadlineSeconds in ReplicationController is not Supported"
        errs.append(field.forbidden(tpl_spec.at("activeDeadlineSeconds"), detail))
    return finish(errs)


def _rc_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    return validate_replication_controller(new)


def validate_replication_controller_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateReplicationControllerStatus``: counts not negative and consistent."""
    errs: ErrorList = []
    status = _child(_root(new, errs), "status")
    counts: dict[str, int] = {}
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        value = status.integer(key)
        counts[key] = value or 0
        if value is not None and value < 0:
            errs.append(field.invalid(status.at(key), value, detail=NEGATIVE_MSG))
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(field.invalid(status.at(key), counts[key], detail="cannot be greater than status.replicas"))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        detail = "cannot be greater than readyReplicas"
        errs.append(field.invalid(status.at("availableReplicas"), counts["availableReplicas"], detail=detail))
    return finish(errs)


# --- the registry's tables ----------------------------------------------------------------------------------


def _with_create(create: Validate, update: ValidateUpdate | None = None) -> ValidateUpdate:
    """An update validator that runs ``create`` on the new object, then ``update`` (if any)."""

    def validate(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
        return finish(create(new) + (update(new, old) if update is not None else []))

    return validate


CREATE_VALIDATORS: Final[dict[tuple[str, str], Validate]] = {
    ("", "Pod"): validate_pod,
    ("", "Node"): validate_node,
    ("", "Namespace"): validate_namespace,
    ("", "Service"): validate_service,
    ("", "ConfigMap"): validate_config_map,
    ("", "Secret"): validate_secret,
    ("", "ServiceAccount"): _no_rules,
    ("", "Event"): validate_event,
    ("", "PersistentVolume"): validate_persistent_volume,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim,
    ("", "ReplicationController"): validate_replication_controller,
}
"""``(group, kind)`` -> ``validate(obj)`` for a create."""

UPDATE_VALIDATORS: Final[dict[tuple[str, str], ValidateUpdate]] = {
    ("", "Pod"): validate_pod_update,
    ("", "Node"): _node_update,
    ("", "Namespace"): _with_create(validate_namespace),
    ("", "Service"): validate_service_update,
    ("", "ConfigMap"): validate_config_map_update,
    ("", "Secret"): validate_secret_update,
    ("", "ServiceAccount"): _no_rules,
    ("", "Event"): _event_update,
    ("", "PersistentVolume"): validate_persistent_volume_update,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim_update,
    ("", "ReplicationController"): _rc_update,
}
"""``(group, kind)`` -> ``validate(new, old)`` for an update of the main resource."""

STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], ValidateUpdate]] = {
    ("", "Pod"): validate_pod_status_update,
    ("", "Node"): validate_node_update,
    ("", "Namespace"): validate_namespace_status_update,
    ("", "Service"): validate_service_status_update,
    ("", "PersistentVolume"): _no_rules,
    ("", "PersistentVolumeClaim"): validate_persistent_volume_claim_status_update,
    ("", "ReplicationController"): validate_replication_controller_status_update,
}
"""``(group, kind)`` -> ``validate(new, old)`` for the ``/status`` subresource."""
