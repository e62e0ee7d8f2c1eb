"""The Service registry's allocation step, as ``pkg/registry/core/service/storage/alloc.go`` (v1.37).

:class:`ServiceAllocators` runs before a Service is validated and stored (upstream's ``BeginCreate`` /
``BeginUpdate`` hooks) and returns a *finish* callback: ``await finish(True)`` once the object is stored commits
(deferred releases happen), ``await finish(False)`` gives back everything the step allocated. So a request that fails
after allocating (validation, a conflict, a lost race) leaves the ranges as they were, and nothing is released until
the write that stops using it has succeeded.

What it decides, in upstream's order:

1. ``initIPFamilyFields``: ``ipFamilyPolicy`` defaults to SingleStack (RequireDualStack for a headless service
   without selector, the old policy on update), ``ValidateServiceClusterIPsRelatedFields`` runs first, families
   are inferred from given cluster IPs, then the default family (the first ``--service-cluster-ip-range``).
2. ClusterIPs: none for ExternalName or headless (``None``) services; a given one is reserved (422 on
   ``spec.clusterIPs``: ``failed to allocate IP 10.96.0.5: provided IP is already allocated``), else a free one is
   picked (500 ``failed to allocate a serviceIP: range is full``, as upstream).
3. NodePorts for NodePort and LoadBalancer services (``allocateLoadBalancerNodePorts``), one per distinct port
   number; a given one is reserved (422 on ``spec.ports[i].nodePort``); the health-check node port of a
   LoadBalancer with ``externalTrafficPolicy: Local``.
4. On update: ExternalName ↔ ClusterIP types allocate or release cluster IPs, types that stop needing node ports
   release them, ports removed from the spec release theirs.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubeplane.api.validation import field
from kubeplane.api.validation.services import validate_cluster_ips_related_fields
from kubeplane.store.interface import Store

from . import errors
from .ipallocator import AllocationError, ClusterIPAllocator, parse_service_cidrs
from .portallocator import NodePortAllocator, NodePortOperation, parse_port_range

__all__ = ["DEFAULT_NODE_PORT_RANGE", "DEFAULT_SERVICE_CIDR", "Finish", "ServiceAllocators"]

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"  # kubeadm's default (kube-apiserver's own is 10.0.0.0/24)
DEFAULT_NODE_PORT_RANGE = "30000-32767"

Obj = dict[str, Any]
Finish = Callable[[bool], Awaitable[None]]


def _spec(svc: Obj) -> Obj:
    spec = svc.setdefault("spec", {})
    return spec if isinstance(spec, dict) else {}


def _name(svc: Obj) -> str:
    return str(svc.get("metadata", {}).get("name") or "")


def _parent(svc: Obj) -> dict[str, str]:
    meta = svc.get("metadata", {})
    return {"namespace": str(meta.get("namespace") or ""), "name": str(meta.get("name") or "")}


def _ports(spec: Obj) -> list[Obj]:
    return [p for p in spec.get("ports") or [] if isinstance(p, dict)]


def _is_headless(spec: Obj) -> bool:
    ips = spec.get("clusterIPs") or []
    return bool(ips) and ips[0] == "None"


def needs_health_check(spec: Obj) -> bool:
    """Upstream ``apiservice.NeedsHealthCheck``."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def node_ports(spec: Obj) -> list[int]:
    return [int(p["nodePort"]) for p in _ports(spec) if isinstance(p.get("nodePort"), int) and p["nodePort"]]


def _invalid(svc: Obj, errs: field.ErrorList) -> errors.APIError:
    return errors.invalid("", "Service", _name(svc), errs)


class ServiceAllocators:
    """The cluster's ClusterIP and NodePort allocators (upstream ``Allocators``)."""

    def __init__(
        self,
        store: Store,
        *,
        service_cidr: str = DEFAULT_SERVICE_CIDR,
        node_port_range: str = DEFAULT_NODE_PORT_RANGE,
        rng: random.Random | None = None,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.ips = ClusterIPAllocator(store, parse_service_cidrs(service_cidr), rng=rng, now=now)
        base, last = parse_port_range(node_port_range)
        self.ports = NodePortAllocator(store, base, last, rng=rng)

    # -- ip families -------------------------------------------------------------------------------------------

    def init_ip_family_fields(self, svc: Obj, old: Obj | None) -> None:
        """Upstream ``initIPFamilyFields`` (422 on what cannot be served by this cluster's families)."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName":
            return
        old_spec = _spec(old) if old is not None else None
        if _matching_prefer_dual_stack(spec, old_spec):
            return
        if spec.get("ipFamilyPolicy") is None:
            if old_spec is not None and old_spec.get("ipFamilyPolicy") is not None:
                spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
            elif spec.get("clusterIP") == "None" and not spec.get("selector"):
                spec["ipFamilyPolicy"] = "RequireDualStack"
            else:
                spec["ipFamilyPolicy"] = "SingleStack"
        errs = validate_cluster_ips_related_fields(svc)
        if errs:
            raise _invalid(svc, errs)
        policy_path = field.new_path("spec", "ipFamilyPolicy")
        policy = spec["ipFamilyPolicy"]
        ips: list[str] = list(spec.get("clusterIPs") or [])
        families: list[str] = list(spec.get("ipFamilies") or [])
        if old_spec is not None:
            if policy == "SingleStack":
                if ips == list(old_spec.get("clusterIPs") or []) and len(ips) > 1:
                    ips = spec["clusterIPs"] = ips[:1]
                if families == list(old_spec.get("ipFamilies") or []) and len(families) > 1:
                    families = spec["ipFamilies"] = families[:1]
            else:
                if ips and len(ips) < len(old_spec.get("clusterIPs") or []):
                    detail = "must be 'SingleStack' to release the secondary cluster IP"
                    errs.append(field.invalid(policy_path, policy, detail=detail))
                if families and len(families) < len(old_spec.get("ipFamilies") or []):
                    detail = "must be 'SingleStack' to release the secondary IP family"
                    errs.append(field.invalid(policy_path, policy, detail=detail))
        if policy == "SingleStack":
            if len(ips) == 2:
                detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"
                errs.append(field.invalid(policy_path, policy, detail=detail))
            if len(families) == 2:
                detail = "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"
                errs.append(field.invalid(policy_path, policy, detail=detail))
        for i, ip in enumerate(ips):
            if ip == "None":
                break
            family = self.ips.family_of(ip)
            if i >= len(families):
                if family in self.ips.by_family:
                    families.append(family)
                else:
                    path = field.new_path("spec", "clusterIPs").index(i)
                    errs.append(field.invalid(path, ips, detail=f"{family} is not configured on this cluster"))
        if errs:
            raise _invalid(svc, errs)
        if spec.get("clusterIP") == "None" and not spec.get("selector"):
            families = families or [self.ips.default_family]
            if len(families) < 2 and policy != "SingleStack":
                families.append("IPv6" if families[0] == "IPv4" else "IPv4")
            spec["ipFamilies"] = families
            return
        if policy == "RequireDualStack" and len(self.ips.by_family) < 2:
            errs.append(
                field.invalid(policy_path, policy, detail="this cluster is not configured for dual-stack services")
            )
        for i, family in enumerate(families):
            if family not in self.ips.by_family:
                path = field.new_path("spec", "ipFamilies").index(i)
                errs.append(field.invalid(path, family, detail="not configured on this cluster"))
        if errs:
            raise _invalid(svc, errs)
        families = families or [self.ips.default_family]
        if policy != "SingleStack" and len(families) == 1 and len(self.ips.by_family) == 2:
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families

    # -- cluster IPs -------------------------------------------------------------------------------------------

    async def _alloc_ips(self, svc: Obj, wanted: Mapping[str, str], dry_run: bool) -> dict[str, str]:
        """Upstream ``allocIPs``: each family's given address reserved, or a free one picked. On failure what was
        reserved here is given back before the error propagates."""
        spec, allocated = _spec(svc), {}
        try:
            for family, ip in wanted.items():
                if ip == "":
                    try:
                        allocated[family] = await self.ips.allocate_next(family, _parent(svc), dry_run=dry_run)
                    except AllocationError as exc:
                        raise errors.internal(f"failed to allocate a serviceIP: {exc}") from None
                else:
                    try:
                        await self.ips.allocate(ip, _parent(svc), dry_run=dry_run)
                    except AllocationError as exc:
                        path = field.new_path("spec", "clusterIPs")
                        detail = f"failed to allocate IP {ip}: {exc}"
                        raise _invalid(svc, [field.invalid(path, spec.get("clusterIPs"), detail=detail)]) from None
                    allocated[family] = ip
        except BaseException:
            if not dry_run:
                for ip in allocated.values():
                    await self.ips.release(ip)
            raise
        return allocated

    async def _alloc_cluster_ips(self, svc: Obj, dry_run: bool) -> dict[str, str]:
        """Upstream ``allocClusterIPs``: none for ExternalName or headless services."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName" or _is_headless(spec):
            return {}
        ips: list[str] = list(spec.get("clusterIPs") or [])
        families: list[str] = list(spec.get("ipFamilies") or [])
        while len(ips) < len(families):
            ips.append("")
        allocated = await self._alloc_ips(svc, dict(zip(families, ips, strict=False)), dry_run)
        for i, family in enumerate(families):
            if family in allocated:
                ips[i] = allocated[family]
        spec["clusterIPs"] = ips
        if ips:
            spec["clusterIP"] = ips[0]
        return allocated

    async def _release_ips(self, ips: Mapping[str, str] | list[str]) -> None:
        for ip in ips.values() if isinstance(ips, Mapping) else ips:
            if ip and ip != "None":
                await self.ips.release(ip)

    # -- node ports ---------------------------------------------------------------------------------------------

    async def _init_node_ports(self, svc: Obj, op: NodePortOperation) -> None:
        """Upstream ``initNodePorts``: one node port per distinct port number; requested ones reserved."""
        spec = _spec(svc)
        allocate_all = _should_allocate_node_ports(spec)
        by_port: dict[Any, int] = {}
        ports = _ports(spec)
        for i, p in enumerate(ports):
            if not p.get("nodePort") and not allocate_all:
                continue
            known = by_port.get(p.get("port"), 0)
            if not known:
                requested = next(
                    (q["nodePort"] for q in ports if q.get("port") == p.get("port") and q.get("nodePort")), 0
                )
                if requested:
                    await self._reserve(svc, op, i, int(requested))
                    p["nodePort"] = by_port[p.get("port")] = int(requested)
                else:
                    p["nodePort"] = by_port[p.get("port")] = await self._next_port(op)
            elif p.get("nodePort") != known:
                if not p.get("nodePort"):
                    p["nodePort"] = known
                else:
                    await self._reserve(svc, op, i, int(p["nodePort"]))

    async def _reserve(self, svc: Obj, op: NodePortOperation, index: int, port: int) -> None:
        try:
            await op.allocate(port)
        except AllocationError as exc:
            path = field.new_path("spec", "ports").index(index).child("nodePort")
            raise _invalid(svc, [field.invalid(path, port, detail=str(exc))]) from None

    @staticmethod
    async def _next_port(op: NodePortOperation) -> int:
        try:
            return await op.allocate_next()
        except AllocationError as exc:
            raise errors.internal(f"failed to allocate a nodePort: {exc}") from None

    async def _alloc_health_check(self, spec: Obj, op: NodePortOperation) -> None:
        port = spec.get("healthCheckNodePort")
        try:
            if isinstance(port, int) and port:
                await op.allocate(port)
            else:
                spec["healthCheckNodePort"] = await op.allocate_next()
        except AllocationError as exc:
            what = f"requested HealthCheck NodePort {port}" if port else "a HealthCheck NodePort 0"
            raise errors.internal(f"failed to allocate {what}: {exc}") from None

    # -- the transactions ---------------------------------------------------------------------------------------

    async def allocate_create(self, svc: Obj, *, dry_run: bool) -> Finish:
        """Upstream ``beginCreate``: normalize, default families, allocate; the returned callback commits or
        reverts."""
        spec = _spec(svc)
        if spec.get("clusterIP") and not spec.get("clusterIPs"):  # normalizeClusterIPs on create
            spec["clusterIPs"] = [spec["clusterIP"]]
        self.init_ip_family_fields(svc, None)
        ips = await self._alloc_cluster_ips(svc, dry_run)
        op = NodePortOperation(self.ports, dry_run=dry_run)
        try:
            if spec.get("type") in ("NodePort", "LoadBalancer"):
                await self._init_node_ports(svc, op)
            if needs_health_check(spec):
                await self._alloc_health_check(spec, op)
        except BaseException:
            await op.finish()
            if not dry_run:
                await self._release_ips(ips)
            raise

        async def finish(success: bool) -> None:
            if success:
                await op.commit()
            else:
                await op.finish()
                if not dry_run:
                    await self._release_ips(ips)

        return finish

    async def allocate_update(self, svc: Obj, old: Obj, *, dry_run: bool) -> Finish:
        """Upstream ``beginUpdate`` after ``patchAllocatedValues``/``normalizeClusterIPs`` (done by the strategy)."""
        spec, old_spec = _spec(svc), _spec(old)
        self.init_ip_family_fields(svc, old)
        allocated: dict[str, str] = {}
        to_release: list[str] = []
        old_type, new_type = old_spec.get("type"), spec.get("type")
        old_ips: list[str] = list(old_spec.get("clusterIPs") or [])
        if _matching_prefer_dual_stack(spec, old_spec):
            pass
        elif old_type == "ExternalName" and new_type != "ExternalName":
            allocated = await self._alloc_cluster_ips(svc, dry_run)
        elif old_ips and old_ips[0] == "None":
            pass
        elif old_type != "ExternalName" and new_type == "ExternalName":
            to_release = old_ips
        else:
            old_fams, new_fams = old_spec.get("ipFamilies") or [], spec.get("ipFamilies") or []
            if len(old_fams) == 1 and len(new_fams) == 2:
                ips = list(spec.get("clusterIPs") or [])
                if len(ips) < 2:
                    ips.append("")
                allocated = await self._alloc_ips(svc, {new_fams[1]: ips[1]}, dry_run)
                ips[1] = allocated[new_fams[1]]
                spec["clusterIPs"] = ips
            elif len(old_fams) == 2 and len(new_fams) == 1 and len(old_ips) > 1:
                to_release = old_ips[1:2]
        op = NodePortOperation(self.ports, dry_run=dry_run)
        try:
            await self._update_node_ports(svc, old, op)
        except BaseException:
            await op.finish()
            if not dry_run:
                await self._release_ips(allocated)
            raise

        async def finish(success: bool) -> None:
            if success:
                await op.commit()
                if not dry_run:
                    await self._release_ips(to_release)
            else:
                await op.finish()
                if not dry_run:
                    await self._release_ips(allocated)

        return finish

    async def _update_node_ports(self, svc: Obj, old: Obj, op: NodePortOperation) -> None:
        """Upstream ``txnUpdateNodePorts``: release on a type that needs none, (re)allocate for one that does."""
        spec, old_spec = _spec(svc), _spec(old)
        old_needs = old_spec.get("type") in ("NodePort", "LoadBalancer")
        if old_needs and spec.get("type") in ("ExternalName", "ClusterIP"):
            for number in node_ports(old_spec):
                op.release_deferred(number)
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            old_numbers = node_ports(old_spec)
            allocate_all, reserved = _should_allocate_node_ports(spec), set()
            for i, p in enumerate(_ports(spec)):
                port = p.get("nodePort")
                if not port and not allocate_all:
                    continue
                if port:
                    if port not in old_numbers and port not in reserved:
                        await self._reserve(svc, op, i, int(port))
                        reserved.add(port)
                else:
                    p["nodePort"] = await self._next_port(op)
            new_numbers = node_ports(spec)
            for number in old_numbers:
                if number not in new_numbers:
                    op.release_deferred(number)
        needed, needs = needs_health_check(old_spec), needs_health_check(spec)
        if not needed and needs:
            await self._alloc_health_check(spec, op)
        elif needed and not needs and old_spec.get("healthCheckNodePort"):
            op.release_deferred(int(old_spec["healthCheckNodePort"]))

    async def release_all(self, svc: Obj) -> None:
        """Upstream ``releaseAllocatedResources`` (after a Service is deleted)."""
        spec = _spec(svc)
        if spec.get("type") != "ExternalName" and not _is_headless(spec):
            await self._release_ips(list(spec.get("clusterIPs") or []))
        ports = node_ports(spec)
        if needs_health_check(spec) and spec.get("healthCheckNodePort"):
            ports.append(int(spec["healthCheckNodePort"]))
        await self.ports.release(ports)


def _should_allocate_node_ports(spec: Obj) -> bool:
    if spec.get("type") == "NodePort":
        return True
    return spec.get("type") == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False


def _matching_prefer_dual_stack(spec: Obj, old_spec: Obj | None) -> bool:
    """Upstream ``isMatchingPreferDualStackClusterIPFields``: an update of a PreferDualStack service that keeps
    its type, IPs and families needs no family work."""
    if old_spec is None or spec.get("ipFamilyPolicy") is None or old_spec.get("type") != spec.get("type"):
        return False
    if spec.get("type") not in ("ClusterIP", "NodePort", "LoadBalancer"):
        return False
    if spec.get("ipFamilyPolicy") != "PreferDualStack" or old_spec.get("ipFamilyPolicy") not in (
        None,
        "PreferDualStack",
    ):
        return False
    same_ips = list(spec.get("clusterIPs") or []) == list(old_spec.get("clusterIPs") or [])
    return same_ips and list(spec.get("ipFamilies") or []) == list(old_spec.get("ipFamilies") or [])
