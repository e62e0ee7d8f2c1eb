"""ClusterIP allocation as kube-apiserver v1.37 does it: one IPAddress object per allocated address.

Since v1.34 the MultiCIDRServiceAllocator feature is GA and locked on (``pkg/features/kube_features.go``), and the
dual write to the old RangeAllocation bitmap is gone: kube-apiserver's ``MetaAllocator``
(``pkg/registry/core/service/ipallocator/cidrallocator.go``) allocates an address by *creating* the
``networking.k8s.io/v1`` IPAddress named after it, and releases it by deleting that object. kubeplane does the same
under upstream's key (``/registry/ipaddresses/<ip>``), which gives three properties for free:

* **Uniqueness under concurrency**: the store's create is atomic; two creates of one address (two requests, or two
  API servers on one etcd) cannot both succeed. A dynamic allocation that loses that race moves on to the next
  address (upstream ``allocateFromRange``, "mid-air collision").
* **Durability**: the allocation is in the store before the Service is; a restart reads the IPAddress objects back
  (:meth:`ClusterIPAllocator.load`). A Service whose IPAddress is missing (written before this allocator existed)
  gets it back at start (upstream's RepairIPAddress controller, ``controller/repairip.go``).
* **No bitmap to rebuild**: the in-memory set ``taken`` only mirrors the stored names, as upstream's informer
  lister does; it is what the random scan consults.

Address semantics (``ipallocator.go`` ``NewIPAllocator``): the network address is never allocated, nor, for IPv4,
the broadcast address. The range is split (KEP-3070) at ``calculateRangeOffset`` addresses from the first one: a
dynamic allocation starts at a random address of the upper band and wraps inside it, and only when that band is
full tries the lower band (kept for static requests such as the ``kubernetes`` Service's first address).

Errors (``interfaces.go``): an address outside every service CIDR, or its network/broadcast address, is
``the provided network does not match the current range`` (MetaAllocator.getAllocator, ``prefixContainsIP``); a
taken one ``provided IP is already allocated``; a full range ``range is full``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson

from kubeplane.api import meta as apimeta
from kubeplane.store.interface import KeyExists, NotFound, Store

__all__ = [
    "ERR_ALLOCATED",
    "ERR_FULL",
    "ERR_MISMATCHED_NETWORK",
    "AllocationError",
    "ClusterIPAllocator",
    "ServiceCIDR",
    "parse_service_cidrs",
]

ERR_FULL = "range is full"
ERR_ALLOCATED = "provided IP is already allocated"
ERR_MISMATCHED_NETWORK = "the provided network does not match the current range"
IPADDRESS_PREFIX = "ipaddresses"
MANAGED_BY = "ipallocator.k8s.io"  # upstream ControllerName
_FAMILY_LABEL = "ipaddress.kubernetes.io/ip-family"
_MANAGED_LABEL = "ipaddress.kubernetes.io/managed-by"

IPAddr = ipaddress.IPv4Address | ipaddress.IPv6Address


class AllocationError(Exception):
    """An allocation refused with one of upstream's allocator messages (``str(exc)``)."""


class ServiceCIDR:
    """One service CIDR (upstream ``ipallocator.Allocator``): the usable addresses and the dynamic/static split."""

    def __init__(self, cidr: str) -> None:
        network = ipaddress.ip_network(cidr, strict=False)
        if network.version == 6 and network.prefixlen < 64:
            raise ValueError(f"shortest allowed prefix length for service CIDR is 64, got {network.prefixlen}")
        self.network = network
        self.family = "IPv4" if network.version == 4 else "IPv6"
        base = int(network.network_address)
        host_bits = network.max_prefixlen - network.prefixlen
        last = int(network.broadcast_address) - (1 if network.version == 4 else 0)
        self.first = base + 1
        self.last = last
        self.size = max(0, last - base)  # upstream hostsPerNetwork
        cidr_size = 1 << host_bits
        # calculateRangeOffset (bitmap.go): min(max(16, size/16), 256), 0 for 16 addresses or fewer
        self.range_offset = 0 if cidr_size <= 16 else max(16, min(cidr_size // 16, 256))

    def __str__(self) -> str:
        return str(self.network)

    def contains(self, ip: IPAddr) -> bool:
        """Upstream ``prefixContainsIP``: in the prefix, not its network address, nor (IPv4) its broadcast."""
        return ip.version == self.network.version and self.first <= int(ip) <= self.last

    def address(self, value: int) -> str:
        return str(ipaddress.ip_address(value) if self.network.version == 4 else ipaddress.IPv6Address(value))

    def candidates(self, rng: random.Random) -> Iterator[str]:
        """Every usable address once, in upstream's dynamic order: the upper band from a random start (wrapping
        inside it), then the lower band from a random start."""
        offset_address = self.first + self.range_offset
        upper = self.size - self.range_offset
        if upper > 0:
            start = rng.randrange(upper)
            for i in range(upper):
                yield self.address(offset_address + (start + i) % upper)
        if self.range_offset > 0:
            start = rng.randrange(self.range_offset)
            for i in range(self.range_offset):
                yield self.address(self.first + (start + i) % self.range_offset)


def parse_service_cidrs(value: str) -> list[ServiceCIDR]:
    """``--service-cluster-ip-range``: one CIDR, or two of different families (dual-stack), comma-separated."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not 1 <= len(parts) <= 2:
        raise ValueError("--service-cluster-ip-range must hold one CIDR, or two of different IP families")
    cidrs = [ServiceCIDR(p) for p in parts]
    if len(cidrs) == 2 and cidrs[0].family == cidrs[1].family:
        raise ValueError("--service-cluster-ip-range: the two CIDRs must be of different IP families")
    return cidrs


def _parse_ip(value: str) -> IPAddr | None:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        try:  # netutils.ParseIPSloppy: IPv4 with leading zeros
            return ipaddress.IPv4Address(".".join(str(int(p)) for p in value.split(".")))
        except ValueError:
            return None


class ClusterIPAllocator:
    """The service CIDRs of one cluster and the IPAddress objects allocated from them."""

    def __init__(
        self,
        store: Store,
        cidrs: list[ServiceCIDR],
        *,
        rng: random.Random | None = None,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.store = store
        self.cidrs = cidrs
        self.by_family: Mapping[str, ServiceCIDR] = {c.family: c for c in cidrs}
        self.default_family = cidrs[0].family
        self.rng = rng or random.Random()
        self.now = now
        self.taken: set[str] = set()

    @staticmethod
    def key(ip: str) -> str:
        return apimeta.object_key(IPADDRESS_PREFIX, ip, namespace=None)

    async def load(self) -> None:
        """Read the stored IPAddress names into ``taken`` (the restart path)."""
        result = await self.store.range(apimeta.collection_prefix(IPADDRESS_PREFIX))
        self.taken = {kv.key.rsplit("/", 1)[-1] for kv in result.kvs}

    def _object(self, ip: str, family: str, parent: Mapping[str, str] | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": ip,
            "uid": apimeta.new_uid(self.rng),
            "labels": {_FAMILY_LABEL: family, _MANAGED_LABEL: MANAGED_BY},
        }
        if self.now is not None:
            metadata["creationTimestamp"] = apimeta.format_time(self.now())
        spec: dict[str, Any] = {}
        if parent is not None:
            spec["parentRef"] = {"resource": "services", "namespace": parent["namespace"], "name": parent["name"]}
        return {"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": metadata, "spec": spec}

    async def _create(self, ip: str, family: str, parent: Mapping[str, str] | None) -> bool:
        """Create the IPAddress; False if it exists (taken by someone else)."""
        try:
            await self.store.create(self.key(ip), orjson.dumps(self._object(ip, family, parent)))
        except KeyExists:
            self.taken.add(ip)
            return False
        self.taken.add(ip)
        return True

    async def allocate(self, ip: str, parent: Mapping[str, str] | None, *, dry_run: bool = False) -> None:
        """Reserve ``ip`` (upstream ``MetaAllocator.AllocateService``); :class:`AllocationError` if it is not in
        a service CIDR or taken. A dry run only checks the range, as upstream's."""
        addr = _parse_ip(ip)
        cidr = next((c for c in self.cidrs if addr is not None and c.contains(addr)), None)
        if cidr is None or addr is None:
            raise AllocationError(ERR_MISMATCHED_NETWORK)
        if dry_run:
            return
        if not await self._create(str(addr), cidr.family, parent):
            raise AllocationError(ERR_ALLOCATED)

    async def allocate_next(self, family: str, parent: Mapping[str, str] | None, *, dry_run: bool = False) -> str:
        """A free address of ``family``, reserved (upstream ``allocateNextService``). A dry run answers the
        CIDR's network address without looking, as upstream's dry-run allocator does."""
        cidr = self.by_family[family]
        if dry_run:
            return str(cidr.network.network_address)
        for ip in cidr.candidates(self.rng):
            if ip in self.taken:
                continue
            self.taken.add(ip)  # claimed before the first await: concurrent requests skip it
            try:
                created = await self._create(ip, family, parent)
            except BaseException:
                self.taken.discard(ip)
                raise
            if created:
                return ip
        raise AllocationError(ERR_FULL)

    async def release(self, ip: str) -> None:
        """Delete the IPAddress of ``ip``; releasing a free address is a no-op (upstream ignores the error)."""
        addr = _parse_ip(ip)
        if addr is None:
            return
        name = str(addr)
        self.taken.discard(name)
        with contextlib.suppress(NotFound):
            await self.store.delete(self.key(name))

    def family_of(self, ip: str) -> str:
        addr = _parse_ip(ip)
        return "IPv6" if addr is not None and addr.version == 6 else "IPv4"
