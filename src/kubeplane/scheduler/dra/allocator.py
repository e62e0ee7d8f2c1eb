"""The structured-parameters allocator (upstream ``internal/incubating/allocator_incubating.go``, v1.37's variant).

``Allocator(features, allocated, classes, slices).allocate(node, claims)`` searches, for one node, devices for every
request of every claim: claims in order, requests in order, devices in pool/slice/device order, each candidate
checked for "in use", selectors (class first, then request), consumable capacity, counters, taints and constraints,
backtracking on failure; the first complete solution wins (upstream has no scoring inside the allocator). Devices
of one request are tried as combinations, not permutations (a start location). A request with ``firstAvailable``
tries its subrequests in order. Results are AllocationResult dicts (:mod:`.result`).

Outcomes: a list with one AllocationResult per claim; ``None`` when the claims cannot be allocated on the node;
:class:`FailedOnNode` for a node-local failure upstream wraps in ``ErrFailedAllocationOnNode`` (invalid pools);
:class:`AllocationError` for a problem with a claim or class that aborts the scheduling attempt (unknown class,
feature disabled, CEL compile errors, a DeviceClass selector's runtime error).

kubeplane's one deliberate difference: a runtime error of a *claim's* own selector on one device is
:class:`FailedOnNode` (that node is rejected with the error as its reason, other nodes go on) -- the issue's
"an expression that fails at runtime on one device is reported, not fatal". Upstream v1.37 returns it as a plain
error (Filter Error, the attempt is aborted); a class's selector error stays fatal as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.dra.cel import DeviceView
from kubeplane.api.quantity import Quantity
from kubeplane.scheduler.dra import capacity as cap
from kubeplane.scheduler.dra.allocated import AllocatedState, DeviceID
from kubeplane.scheduler.dra.constraints import Constraint, DistinctAttribute, MatchAttribute
from kubeplane.scheduler.dra.features import Features
from kubeplane.scheduler.dra.pools import Pool, PoolError, gather_pools, node_matches
from kubeplane.scheduler.dra.requests import Request, exact, sub_request
from kubeplane.scheduler.dra.result import DeviceResult, build_results
from kubeplane.scheduler.dra.selectors import SelectorFailure, device_view, selectors_match
from kubeplane.scheduler.dra.taints import taint_prevents_allocation

__all__ = ["ALLOCATION_RESULTS_MAX_SIZE", "AllocationError", "Allocator", "FailedOnNode"]

ALLOCATION_RESULTS_MAX_SIZE = 32
"""resourceapi.AllocationResultsMaxSize."""


class AllocationError(Exception):
    """Fatal for the scheduling attempt (Filter returns Error)."""


class FailedOnNode(Exception):
    """Only this node fails (upstream ``ErrFailedAllocationOnNode``); the message is the node's reason."""


class _Exceeded(Exception):
    """errAllocationResultMaxSizeExceeded: backtrack further."""


def _kobj(claim: Mapping[str, Any]) -> str:
    meta = claim.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


@dataclass(slots=True)
class _Candidate:
    device_id: DeviceID
    device: Mapping[str, Any]
    slice: Mapping[str, Any]
    pool: Pool


@dataclass(slots=True)
class _RequestData:
    request: Request
    parent: str | None
    device_class: Mapping[str, Any] | None
    num_devices: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)
    selected_sub: int = 0

    @property
    def full_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


class Allocator:
    """Reusable across nodes for one pod's claims (PreFilter builds it, Filter calls :meth:`allocate`)."""

    def __init__(
        self,
        features: Features,
        allocated: AllocatedState,
        classes: Mapping[str, Mapping[str, Any]],
        slices: Sequence[Mapping[str, Any]],
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.slices = list(slices)
        self.on_node: dict[str, list[Mapping[str, Any]]] = {}
        self.shared: list[Mapping[str, Any]] = []
        for s in self.slices:
            node_name = (s.get("spec") or {}).get("nodeName") or ""
            if node_name:
                self.on_node.setdefault(node_name, []).append(s)
            else:
                self.shared.append(s)
        self._views: dict[tuple[str, int], DeviceView] = {}
        self.allocate_one_calls = 0

    def allocate(self, node: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
        node_name = str((node.get("metadata") or {}).get("name") or "")
        try:
            pools = gather_pools(self.on_node.get(node_name, []) + self.shared, node, self.features, self.slices)
        except PoolError as exc:
            raise AllocationError(f"gather pool information: {exc}") from exc
        run = _Run(self, node, node_name, list(claims), pools)
        return run.run()

    def view(self, driver: str, device: Mapping[str, Any]) -> DeviceView:
        key = (driver, id(device))
        v = self._views.get(key)
        if v is None:
            v = self._views[key] = device_view(driver, device)
        return v


class _Run:
    """One ``Allocate`` call (upstream's ``allocator``): single-threaded search state."""

    def __init__(
        self,
        alloc: Allocator,
        node: Mapping[str, Any],
        node_name: str,
        claims: list[Mapping[str, Any]],
        pools: list[Pool],
    ) -> None:
        self.a = alloc
        self.f = alloc.features
        self.node = node
        self.node_name = node_name
        self.claims = claims
        self.pools = pools
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.matches: dict[tuple[DeviceID, int, int, int], bool] = {}
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, dict[str, Quantity]] = {}
        self.consumed_counters: dict[str, dict[str, dict[str, Quantity]]] = {}
        self.available_counters: dict[str, dict[str, dict[str, Quantity]]] = {}
        self.results: list[list[DeviceResult]] = [[] for _ in claims]

    # --- setup ---------------------------------------------------------------------------------------------

    def _class(self, claim: Mapping[str, Any], request: Request) -> Mapping[str, Any]:
        for i, selector in enumerate(request.selectors):
            if not (selector.get("cel") or {}).get("expression"):
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {request.name}, selector #{i}: CEL expression empty "
                    "(unsupported selector type?)"
                )
        if not self.f.admin_access and request.has_admin_access:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request.name}: admin access is requested, but the feature is disabled"
            )
        if not request.device_class_name:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request.name}: missing device class name (unsupported request type?)"
            )
        device_class = self.a.classes.get(request.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request.name}: could not retrieve device class "
                f'{request.device_class_name}: deviceclass.resource.k8s.io "{request.device_class_name}" not found'
            )
        return device_class

    def _validate(self, ci: int, ri: int, si: int, request: Request, parent: str | None) -> _RequestData:
        claim = self.claims[ci]
        data = _RequestData(request, parent, None)
        data.device_class = self._class(claim, request)
        if request.allocation_mode == "ExactCount":
            data.num_devices = request.count
        elif request.allocation_mode == "All":
            for pool in self.pools:
                if pool.is_incomplete:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently being updated"
                    )
                if pool.is_invalid:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request.name}: asks for all devices, but resource pool "
                        f"{pool.pool_id} is currently invalid"
                    )
                for s in pool.slices:
                    for device in (s.get("spec") or {}).get("devices") or ():
                        cand = _Candidate((pool.driver, pool.name, str(device.get("name"))), device, s, pool)
                        if not self._selectable((ci, ri, si), data, cand):
                            continue
                        if self.f.consumable_capacity and not self._fits_capacity(request, cand):
                            continue
                        data.all_devices.append(cand)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request.name}: unsupported count mode {request.allocation_mode}"
            )
        return data

    def _setup(self) -> None:
        for ci, claim in enumerate(self.claims):
            devices = (claim.get("spec") or {}).get("devices") or {}
            min_total = 0
            for ri, raw in enumerate(devices.get("requests") or ()):
                subs = raw.get("firstAvailable") or ()
                name = str(raw.get("name") or "")
                if subs and not self.f.prioritized_list:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {name}: has subrequests, but the DRAPrioritizedList feature "
                        "is disabled"
                    )
                if not self.f.consumable_capacity:
                    if (raw.get("exactly") or {}).get("capacity") is not None:
                        raise AllocationError(
                            f"claim {_kobj(claim)}, request {name}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled"
                        )
                    for sub in subs:
                        if sub.get("capacity") is not None:
                            raise AllocationError(
                                f"claim {_kobj(claim)}, subrequest {sub.get('name')}: has capacity requests, but the "
                                "DRAConsumableCapacity feature is disabled"
                            )
                if subs:
                    least = min(
                        self._store((ci, ri, si), self._validate(ci, ri, si, sub_request(sub), name)).num_devices
                        for si, sub in enumerate(subs)
                    )
                    min_total += least
                else:
                    min_total += self._store((ci, ri, 0), self._validate(ci, ri, 0, exact(raw), None)).num_devices
            if min_total > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_kobj(claim)}: number of requested devices {min_total} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[Constraint] = []
            for i, c in enumerate(devices.get("constraints") or ()):
                requests = frozenset(c.get("requests") or ())
                if c.get("matchAttribute"):
                    constraints.append(MatchAttribute(requests, str(c["matchAttribute"])))
                elif c.get("distinctAttribute"):
                    constraints.append(DistinctAttribute(requests, str(c["distinctAttribute"])))
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            self.constraints.append(constraints)

    def _store(self, key: tuple[int, int, int], data: _RequestData) -> _RequestData:
        self.request_data[key] = data
        return data

    # --- the search ----------------------------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]] | None:
        self._setup()
        try:
            done = self._one(0, 0, 0, 0, False, (0, 0, 0))
        except _Exceeded:
            done = False
        if not done:
            for pool in self.pools:
                if pool.is_invalid:
                    raise FailedOnNode("invalid resource pools were encountered")
            return None
        return build_results(self.claims, self.results, self.request_data, self.node_name, self.f)

    def _one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: tuple[int, int, int]) -> bool:
        self.a.allocate_one_calls += 1
        if ci >= len(self.claims):
            return True
        requests = ((self.claims[ci].get("spec") or {}).get("devices") or {}).get("requests") or ()
        if ri >= len(requests):
            try:
                return self._one(ci + 1, 0, 0, 0, False, (0, 0, 0))
            except _Exceeded:
                return False
        key = (ci, ri, si)
        data = self.request_data[key]
        if not in_sub and data.parent is not None:
            all_exceeded = True
            sub = 0
            while (ci, ri, sub) in self.request_data:
                try:
                    ok = self._one(ci, ri, sub, 0, True, (0, 0, 0))
                except _Exceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.request_data[(ci, ri, 0)].selected_sub = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _Exceeded
            return False
        request = data.request
        do_all = request.allocation_mode == "All"
        if do_all and not data.all_devices:
            return False
        if di >= data.num_devices:
            return self._one(ci, ri + 1, 0, 0, False, (0, 0, 0))
        if len(self.results[ci]) + data.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            raise _Exceeded
        if do_all:
            cand = data.all_devices[di]
            # The capacity check at setup saw the device alone; earlier requests of this search may have consumed
            # some of it since (upstream case "...-allocation-mode-all-allocating-insufficient": no allocation).
            if self.f.consumable_capacity and not self._fits_capacity(request, cand):
                return False
            undo = self._allocate_device(ci, ri, si, cand, must=True)
            if undo is None:
                return False
            try:
                done = self._one(ci, ri, si, di + 1, in_sub, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done
        for pi in range(start[0], len(self.pools)):
            pool = self.pools[pi]
            if pool.is_incomplete or pool.is_invalid:
                continue
            slice_start = start[1] if pi == start[0] else 0
            for sli in range(slice_start, len(pool.slices)):
                s = pool.slices[sli]
                devices = (s.get("spec") or {}).get("devices") or ()
                dev_start = start[2] if (pi, sli) == start[:2] else 0
                for dvi in range(dev_start, len(devices)):
                    device = devices[dvi]
                    device_id = (pool.driver, pool.name, str(device.get("name")))
                    if request.admin_access and ci in self.allocating.get(device_id, ()):
                        continue
                    if not request.admin_access and self._in_use(device_id):
                        continue
                    cand = _Candidate(device_id, device, s, pool)
                    if not self._selectable(key, data, cand):
                        continue
                    if self.f.consumable_capacity and not self._fits_capacity(request, cand):
                        continue
                    undo = self._allocate_device(ci, ri, si, cand, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._one(ci, ri, si, di + 1, in_sub, (pi, sli, dvi + 1))
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    # --- checks --------------------------------------------------------------------------------------------

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.allocated_devices or bool(self.allocating.get(device_id))

    def _selectable(self, key: tuple[int, int, int], data: _RequestData, cand: _Candidate) -> bool:
        device = cand.device
        if not self.f.device_binding_and_status and device.get("bindingConditions"):
            return False
        mkey = (cand.device_id, *key)
        cached = self.matches.get(mkey)
        if cached is not None:
            return cached
        view = self.a.view(cand.pool.driver, device)
        device_id = "/".join(cand.device_id)
        try:
            if data.device_class is not None:
                selectors = (data.device_class.get("spec") or {}).get("selectors") or ()
                name = (data.device_class.get("metadata") or {}).get("name")
                if not selectors_match(selectors, view, device_id, f"class {name}", by_class=True):
                    self.matches[mkey] = False
                    return False
            if not selectors_match(
                data.request.selectors, view, device_id, f"claim {_kobj(self.claims[key[0]])}", by_class=False
            ):
                self.matches[mkey] = False
                return False
        except SelectorFailure as exc:
            if exc.runtime and not exc.by_class:
                raise FailedOnNode(exc.message) from exc
            raise AllocationError(exc.message) from exc
        spec = cand.slice.get("spec") or {}
        if spec.get("perDeviceNodeSelection"):
            try:
                ok = node_matches(
                    self.node,
                    str(device.get("nodeName") or ""),
                    bool(device.get("allNodes")),
                    device.get("nodeSelector"),
                )
            except PoolError as exc:
                raise AllocationError(str(exc)) from exc
            if not ok:
                self.matches[mkey] = False
                return False
        self.matches[mkey] = True
        return True

    def _fits_capacity(self, request: Request, cand: _Candidate) -> bool:
        before = self.a.allocated.aggregated_capacity.get(cand.device_id, {})
        allocating = self.allocating_capacity.get(cand.device_id, {})
        fractional = self.f.fractional_capacity_range
        return cap.fits_capacity(request.capacity, cand.device, before, allocating, fractional=fractional)

    def _counters_ok(self, cand: _Candidate) -> bool:
        pool = cand.pool
        available = self.available_counters.get(pool.pool_id)
        if available is None:
            available = {}
            for cs in pool.counter_sets():
                available[str(cs.get("name"))] = {
                    n: Quantity.parse(c.get("value", "0")) for n, c in (cs.get("counters") or {}).items()
                }
            for s in pool.slices:
                for device in (s.get("spec") or {}).get("devices") or ():
                    if not self.a.allocated.is_allocated((pool.driver, pool.name, str(device.get("name")))):
                        continue
                    for use in device.get("consumesCounters") or ():
                        counters = available.get(str(use.get("counterSet")), {})
                        for n, c in (use.get("counters") or {}).items():
                            if n in counters:
                                counters[n] = counters[n] - Quantity.parse(c.get("value", "0"))
            self.available_counters[pool.pool_id] = available
        consumed = self.consumed_counters.setdefault(pool.pool_id, {})
        self._add_counters(consumed, cand.device, 1)
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for n, value in counters.items():
                if value < used.get(n, Quantity(0)):
                    self._add_counters(consumed, cand.device, -1)
                    return False
        return True

    @staticmethod
    def _add_counters(consumed: dict[str, dict[str, Quantity]], device: Mapping[str, Any], sign: int) -> None:
        for use in device.get("consumesCounters") or ():
            counters = consumed.setdefault(str(use.get("counterSet")), {})
            for n, c in (use.get("counters") or {}).items():
                q = Quantity.parse(c.get("value", "0"))
                counters[n] = counters.get(n, Quantity(0)) + (q if sign > 0 else -q)

    def _allocate_device(self, ci: int, ri: int, si: int, cand: _Candidate, *, must: bool) -> Any:
        """Upstream ``allocateDevice``: the rollback function, or None when the device cannot be used."""
        data = self.request_data[(ci, ri, si)]
        request = data.request
        device = cand.device
        multi = self.f.consumable_capacity and bool(device.get("allowMultipleAllocations"))
        if not multi and request.admin_access and ci in self.allocating.get(cand.device_id, ()):
            return None
        if not request.admin_access and self._in_use(cand.device_id):
            return None
        consumes = bool(device.get("consumesCounters"))
        if not self.f.partitionable_devices and consumes:
            return None
        skip_counters = multi and (
            cand.device_id in self.a.allocated.aggregated_capacity or cand.device_id in self.allocating_capacity
        )
        counted = False
        if not skip_counters and consumes:
            if not self._counters_ok(cand):
                return None
            counted = True
        base, sub = (data.parent, request.name) if data.parent else (request.name, "")
        if self.f.device_taints and taint_prevents_allocation(device, request.tolerations):
            if counted:
                self._add_counters(self.consumed_counters[cand.pool.pool_id], device, -1)
            return None
        constraints = self.constraints[ci]
        for i, c in enumerate(constraints):
            if not c.add(base, sub, device, cand.pool.driver):
                if must:
                    raise AllocationError(
                        f"claim {_kobj(self.claims[ci])}, request {request.name}: cannot add device "
                        f"{'/'.join(cand.device_id)} because a claim constraint would not be satisfied"
                    )
                for prev in constraints[:i]:
                    prev.remove(base, sub, device, cand.pool.driver)
                if counted:
                    self._add_counters(self.consumed_counters[cand.pool.pool_id], device, -1)
                return None
        if not multi:
            self.allocating.setdefault(cand.device_id, set()).add(ci)
        consumed: dict[str, Quantity] = {}
        share = False
        if self.f.consumable_capacity and multi:
            fractional = self.f.fractional_capacity_range
            consumed = cap.consumed_capacity(request.capacity, device.get("capacity") or {}, fractional=fractional)
            share = True
            mine = self.allocating_capacity.setdefault(cand.device_id, {})
            for n, q in consumed.items():
                mine[n] = mine.get(n, Quantity(0)) + q
        self.results[ci].append(
            DeviceResult(request.name, data.parent or "", cand.device_id, device, cand.slice, share, consumed, request)
        )
        n_before = len(self.results[ci]) - 1

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub, device, cand.pool.driver)
            if multi:
                mine = self.allocating_capacity.get(cand.device_id, {})
                for n, q in consumed.items():
                    mine[n] = mine[n] - q
                if all(v.is_zero() for v in mine.values()):
                    self.allocating_capacity.pop(cand.device_id, None)
            else:
                self.allocating.get(cand.device_id, set()).discard(ci)
            if counted:
                self._add_counters(self.consumed_counters[cand.pool.pool_id], device, -1)
            del self.results[ci][n_before:]

        return undo
