"""Services: the registry strategy, start-up repair, and the ``default/kubernetes`` Service with its endpoints.

* :class:`ServiceStrategy` is upstream's ``pkg/registry/core/service/strategy.go`` plus the REST hooks of
  ``storage/rest.go``: a created Service's status is reset to ``{"loadBalancer": {}}``; an update keeps what was
  allocated when the client left it out (``patchAllocatedValues``) and keeps ``clusterIP``/``clusterIPs`` in step
  (``normalizeClusterIPs``); ``begin_create``/``begin_update`` run :mod:`.service_alloc` before validation and
  storage; ``after_delete`` releases the addresses and ports. A DELETE returns the deleted Service, as upstream's
  ``ReturnDeletedObject: true``.
* :func:`repair_allocations` runs at start: every stored Service's cluster IPs get their IPAddress object and its
  node ports their bit in the RangeAllocation if missing (upstream's repair controllers, ``ipallocator/controller/
  repairip.go`` and ``portallocator/controller/repair.go``), so a data dir from before the allocators, or a crash
  between allocation and store, ends consistent.
* :func:`ensure_kubernetes_service` is upstream's ``pkg/controlplane/controller/kubernetesservice`` with the lease
  endpoint reconciler (``pkg/controlplane/reconcilers``): ``default/kubernetes`` of type ClusterIP with the first
  address of the service CIDR, port 443 named ``https`` to the API server's port, and its Endpoints (label
  ``endpointslice.kubernetes.io/skip-mirror: "true"``) and, when the table serves discovery.k8s.io
  EndpointSlices, its ``kubernetes`` EndpointSlice (label ``kubernetes.io/service-name: kubernetes``), both
  naming the API server's address. They are written to the store as the reconciler writes them: kubeplane serves on
  127.0.0.1, which endpoint validation would refuse (upstream never advertises a loopback address).
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Any

import orjson

from kubeplane.api import meta as apimeta
from kubeplane.api.resources import ResourceInfo
from kubeplane.store.interface import KeyExists

from .service_alloc import Finish, needs_health_check, node_ports
from .strategies import Obj, Strategy

if TYPE_CHECKING:
    from .registry import Registry

__all__ = ["ServiceStrategy", "ensure_kubernetes_service", "repair_allocations"]

KUBERNETES_SERVICE = "kubernetes"
_SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"


def _needs_cluster_ip(spec: Obj) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_port(spec: Obj) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def patch_allocated_values(new: Obj, old: Obj) -> None:
    """Upstream ``patchAllocatedValues``: a resubmitted manifest without the allocated values keeps them."""
    spec, old_spec = new.setdefault("spec", {}), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if _needs_node_port(old_spec) and _needs_node_port(spec):
        used = set(node_ports(old_spec)) & set(node_ports(spec))
        by_name = {p.get("name", ""): p.get("nodePort", 0) for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for p in spec.get("ports") or []:
            if isinstance(p, dict) and not p.get("nodePort"):
                value = by_name.get(p.get("name", ""), 0)
                if value and value not in used:
                    p["nodePort"] = value
    both_health = needs_health_check(old_spec) and needs_health_check(spec)
    if both_health and not spec.get("healthCheckNodePort") and old_spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def normalize_cluster_ips(new: Obj, old: Obj) -> None:
    """Upstream ``normalizeClusterIPs`` for an update (the create half is in :mod:`.service_alloc`)."""
    spec, old_spec = new.get("spec"), old.get("spec") or {}
    if not isinstance(spec, dict):
        return
    old_ips = list(old_spec.get("clusterIPs") or [])
    if old_ips and not spec.get("clusterIPs") and old_spec.get("clusterIP") == spec.get("clusterIP"):
        spec["clusterIPs"] = old_ips
    if old_spec.get("clusterIP") != spec.get("clusterIP"):
        same = list(spec.get("clusterIPs") or []) == old_ips
        if old_spec.get("clusterIP") and not spec.get("clusterIP"):
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [spec.get("clusterIP")]


class ServiceStrategy(Strategy):
    """Upstream ``svcStrategy`` with the Service REST's allocation hooks."""

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"loadBalancer": {}}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        patch_allocated_values(new, old)
        normalize_cluster_ips(new, old)

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        return await registry.service_allocators.allocate_create(obj, dry_run=dry_run)

    async def begin_update(self, registry: Registry, new: Obj, old: Obj, *, dry_run: bool) -> Finish | None:
        return await registry.service_allocators.allocate_update(new, old, dry_run=dry_run)

    async def after_delete(self, registry: Registry, obj: Obj) -> None:
        await registry.service_allocators.release_all(obj)


async def repair_allocations(registry: Registry) -> None:
    """Bring the IPAddress objects and the node-port RangeAllocation in line with the stored Services."""
    allocators = registry.service_allocators
    await allocators.ips.load()
    services = registry.resource("", "services")
    cache = registry.cache(services)
    cache.sync()
    ports: list[int] = []
    for svc in list(cache.objects.values()):
        spec = svc.get("spec") or {}
        meta = svc["metadata"]
        parent = {"namespace": str(meta.get("namespace") or ""), "name": str(meta["name"])}
        if _needs_cluster_ip(spec):
            for ip in spec.get("clusterIPs") or []:
                if ip and ip != "None" and ip not in allocators.ips.taken:
                    try:
                        await allocators.ips.allocate(ip, parent)
                    except Exception:  # outside every CIDR (the flag changed) or taken: upstream only warns
                        continue
        ports.extend(node_ports(spec))
        if needs_health_check(spec) and spec.get("healthCheckNodePort"):
            ports.append(int(spec["healthCheckNodePort"]))
    wanted = [p - allocators.ports.base for p in ports if allocators.ports.contains(p)]

    def mark(bitmap: Any) -> None:
        for offset in wanted:
            if not bitmap.has(offset):
                bitmap.allocate(offset)

    await allocators.ports._update(mark)


async def ensure_kubernetes_service(registry: Registry, host: str, port: int) -> None:
    """Create or reconcile ``default/kubernetes`` and point its endpoints at ``host:port``."""
    services = registry.resource("", "services")
    first = registry.service_allocators.ips.cidrs[0]
    cluster_ip = first.address(first.first)
    ports = [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}]
    current = registry.get_cached(services, "default", KUBERNETES_SERVICE)
    if current is None:
        body = {
            "metadata": {
                "name": KUBERNETES_SERVICE,
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {"ports": ports, "clusterIP": cluster_ip, "sessionAffinity": "None", "type": "ClusterIP"},
        }
        await registry.create(services, "default", body)
    else:
        spec = current.get("spec") or {}
        if spec.get("ports") != ports or spec.get("type") != "ClusterIP":  # getMasterServiceUpdateIfNeeded

            def reconcile(old: Obj) -> Obj:
                old["spec"]["ports"], old["spec"]["type"] = ports, "ClusterIP"
                return old

            await registry.guaranteed_update(services, "default", KUBERNETES_SERVICE, reconcile)
    await _write_endpoints(registry, host, port)


async def _put(registry: Registry, info: ResourceInfo, obj: Obj) -> None:
    """Create or replace ``obj`` in the store as the endpoint reconciler's own write (no change: no write)."""
    meta = obj["metadata"]
    key = info.key(meta["name"], meta.get("namespace"))
    for _ in range(8):
        kv = await registry.store.get(key)
        if kv is None:
            meta["uid"] = apimeta.new_uid(registry.rng)
            meta["creationTimestamp"] = apimeta.format_time(registry.now())
            try:
                await registry.store.create(key, orjson.dumps(obj))
            except KeyExists:
                continue
            return
        stored = orjson.loads(kv.value)
        meta["uid"] = stored["metadata"].get("uid")
        meta["creationTimestamp"] = stored["metadata"].get("creationTimestamp")
        if stored == obj:
            return
        try:
            await registry.store.update(key, orjson.dumps(obj), expected_mod_revision=kv.mod_revision)
        except Exception:
            continue
        return


async def _write_endpoints(registry: Registry, host: str, port: int) -> None:
    ip = str(ipaddress.ip_address(host))
    endpoints = registry.resource("", "endpoints")
    await _put(
        registry,
        endpoints,
        {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": KUBERNETES_SERVICE, "namespace": "default", "labels": {_SKIP_MIRROR: "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
        },
    )
    try:
        slices = registry.resource("discovery.k8s.io", "endpointslices")
    except KeyError:  # EndpointSlices not served (yet): the Endpoints alone
        return
    await _put(
        registry,
        slices,
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": KUBERNETES_SERVICE,
                "namespace": "default",
                "labels": {"kubernetes.io/service-name": KUBERNETES_SERVICE},
            },
            "addressType": "IPv6" if ":" in ip else "IPv4",
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    )
