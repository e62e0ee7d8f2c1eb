"""DynamicResources: schedules pods with ResourceClaims and allocates their devices (upstream
``plugins/dynamicresources/dynamicresources.go``, v1.37), with the structured allocator of
:mod:`kubeplane.scheduler.dra`.

* PreEnqueue: every claim exists, is not being deleted and (generated) belongs to the pod -- else
  UnschedulableAndUnresolvable with upstream's reason.
* PreFilter: SKIP without claims (the fast path for pods without DRA); "resourceclaim in use" when an allocated claim
  cannot take another consumer; "resource claim ns/name is in the process of being allocated" while in flight;
  "request R: device class C does not exist" (Unschedulable: a DeviceClass event can fix it); else the allocator
  over every slice, DeviceClass and the allocated state (informer claims with in-flight allocations substituted).
* Filter: allocated claims' nodeSelector, and their binding conditions (failed, or not ready past the binding
  timeout) ("resourceclaim not available on the node"); pending claims through the
  allocator ("cannot allocate all claims"; per-node allocator failures with their message; fatal ones as Error).
* PostFilter: deallocate one unavailable claim not reserved by another pod ("deallocation of ResourceClaim
  completed"), as upstream.
* Score/NormalizeScore: firstAvailable preference, ``8 - index`` per allocated subrequest, normalised to 0..100.
* Reserve/Unreserve: the node's allocation goes in flight (the next pod's allocator sees its devices as in use) /
  comes out again.
* PreBind: writes allocation (and finalizer, and ``allocationTimestamp`` with binding conditions on) and adds the
  pod to ``reservedFor`` through the API, then waits for devices' binding conditions up to the args'
  ``bindingTimeout`` (:mod:`.dynamic_resources_binding`); offline (``handle.client`` None) the in-memory state is
  the result. Unreserve takes the pod out of the ``reservedFor`` of claims PreBind reserved.
* Extended resources backed by DRA (DRAExtendedResource, on in v1.37): a pod whose extended-resource requests a
  DeviceClass serves gets one more claim, last in ``StateData.claims``, handled as upstream does in each phase
  (:mod:`.dynamic_resources_extended`): per node its requests, allocated with the pod's other claims; created
  through the API in PreBind and named in ``pod.status.extendedResourceClaimStatus``; deleted again by Unreserve,
  or by PostFilter when a former cycle left it behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from kubeplane.api.nodeaffinity import NodeSelector, new_node_selector
from kubeplane.scheduler.dra.allocated import gather_allocated_state
from kubeplane.scheduler.dra.allocator import AllocationError, Allocator, FailedOnNode
from kubeplane.scheduler.dra.features import Features, features_from_gates, gate
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    ClusterEventWithHint,
    Code,
    CycleState,
    NodeScore,
    NodeToStatus,
    PostFilterResult,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.plugins.dynamic_resources_binding import (
    BINDING_TIMEOUT_DEFAULT_SECONDS,
    BindingFailedError,
    is_claim_ready_for_binding,
    is_claim_timeout,
)
from kubeplane.scheduler.plugins.dynamic_resources_claims import (
    ClaimError,
    InFlight,
    can_be_reserved,
    is_reserved_for_pod,
    pod_claims,
)
from kubeplane.scheduler.plugins.dynamic_resources_extended import (
    ExtendedState,
    create_claim,
    delete_claim,
    filter_extended,
    has_requests,
    is_special,
    patch_pod_status,
    pre_filter_extended,
)
from kubeplane.scheduler.plugins.dynamic_resources_hints import events_to_register
from kubeplane.scheduler.plugins.dynamic_resources_prebind import (
    allocation_timestamp,
    binding_timeout_from_args,
    remove_reservation,
    wait_for_binding,
)
from kubeplane.scheduler.plugins.helper import default_normalize_score, default_normalize_vector

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["FINALIZER", "NAME", "STATE_KEY", "DynamicResources", "StateData", "new"]

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME
FINALIZER: Final = "resource.kubernetes.io/delete-protection"
FIRST_AVAILABLE_MAX = 8
"""resourceapi.FirstAvailableDeviceRequestMaxSize."""
ASSUME_EXTENDED_CLAIM_SECONDS = 120.0
"""Upstream ``AssumeExtendedResourceTimeoutDefaultSeconds``."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _kobj(obj: Mapping[str, Any]) -> str:
    return f"{_meta(obj).get('namespace')}/{_meta(obj).get('name')}"


@dataclass(slots=True)
class StateData:
    """Upstream ``stateData``, shared by clones (Filter on each node writes its allocation)."""

    claims: list[Mapping[str, Any]] = field(default_factory=list)
    available_on: list[NodeSelector | None] = field(default_factory=list)
    allocator: Allocator | None = None
    to_allocate: list[int] = field(default_factory=list)
    node_allocations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    allocations: dict[int, dict[str, Any]] = field(default_factory=dict)
    """claim index -> allocation set by Reserve, written by PreBind."""
    extended: ExtendedState | None = None
    """The special claim for extended resources backed by DRA (at ``claims[extended.index]``), if any."""

    def clone(self) -> StateData:
        return self


class DynamicResources:
    def __init__(
        self,
        handle: Handle,
        features: Features,
        binding_timeout: float = BINDING_TIMEOUT_DEFAULT_SECONDS,
        extended_resource: bool = True,
    ) -> None:
        self._handle = handle
        self.features = features
        self.binding_timeout = binding_timeout
        """The args' ``bindingTimeout`` in seconds (Filter's timeout check and PreBind's wait)."""
        self.stopping = asyncio.Event()
        """Set by :meth:`cancel_waits` when the scheduler stops: PreBind waits end as upstream's cancelled
        context ends them, so stopping never waits out a binding timeout."""
        self.extended_resource = extended_resource
        """The DRAExtendedResource gate."""
        self.in_flight = InFlight()
        self._tasks: set[asyncio.Task[None]] = set()

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return events_to_register(self)

    # --- lookups ---------------------------------------------------------------------------------------------

    def lookup_claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        for claim in self._handle.list_objects("resourceclaims", namespace):
            if _meta(claim).get("name") == name:
                return claim
        return None

    def pod_claims(self, pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [c for _, c in pod_claims(pod, self.lookup_claim)]

    # --- PreEnqueue / PreFilter ------------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not (pod.pod.get("spec") or {}).get("resourceClaims"):
            return None
        try:
            self.pod_claims(pod.pod)
        except ClaimError as exc:
            return Status.unresolvable(str(exc))
        return None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = StateData()
        state.write(STATE_KEY, s)
        claims: list[Mapping[str, Any]] = []
        if (pod.pod.get("spec") or {}).get("resourceClaims"):
            try:
                claims = self.pod_claims(pod.pod)
            except ClaimError as exc:
                return None, Status.unresolvable(str(exc))
        ext, ext_claim = pre_filter_extended(self._handle, pod, self.extended_resource)
        if ext is not None and ext_claim is not None:
            ext.index = len(claims)
            claims = [*claims, ext_claim]
            s.extended = ext
        if not claims:
            return None, Status.skip()
        for index, claim in enumerate(claims):
            status = claim.get("status") or {}
            allocation = status.get("allocation")
            if allocation and not can_be_reserved(claim) and not is_reserved_for_pod(pod.pod, claim):
                return None, Status.unresolvable("resourceclaim in use")
            selector: NodeSelector | None = None
            if allocation:
                if allocation.get("nodeSelector") is not None:
                    try:
                        selector = new_node_selector(allocation["nodeSelector"])
                    except ValueError as exc:
                        return None, Status.from_error(exc)
            else:
                s.to_allocate.append(index)
                if self.in_flight.has(str(_meta(claim).get("uid") or "")):
                    return None, Status.unresolvable(
                        f"resource claim {_kobj(claim)} is in the process of being allocated"
                    )
                bad = None if ext is not None and index == ext.index else self._validate_requests(claim)
                if bad is not None:
                    return None, bad
            s.available_on.append(selector)
        s.claims = claims
        if s.to_allocate:
            classes = {str(_meta(c).get("name")): c for c in self._handle.list_objects("deviceclasses", "")}
            informer = self._handle.list_objects("resourceclaims", "")
            allocated = gather_allocated_state(self.in_flight.overlay(informer, self._handle.clock.monotonic()))
            s.allocator = Allocator(self.features, allocated, classes, self._handle.list_objects("resourceslices", ""))
        return None, None

    def _validate_requests(self, claim: Mapping[str, Any]) -> Status | None:
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
            name = str(request.get("name"))
            if request.get("exactly") is not None:
                bad = self._validate_class(str(request["exactly"].get("deviceClassName") or ""), name)
            elif request.get("firstAvailable"):
                if not self.features.prioritized_list:
                    return Status.unresolvable(
                        f"resource claim {_kobj(claim)}, request {name}: has subrequests, but the DRAPrioritizedList "
                        "feature is disabled"
                    )
                bad = None
                for sub in request["firstAvailable"]:
                    bad = bad or self._validate_class(
                        str(sub.get("deviceClassName") or ""), f"{name}/{sub.get('name')}"
                    )
            else:
                return Status.unresolvable(f"resource claim {_kobj(claim)}, request {name}: unknown request type")
            if bad is not None:
                return bad
        return None

    def _validate_class(self, class_name: str, request_name: str) -> Status | None:
        if not class_name:
            return Status.from_error(f"request {request_name}: unsupported request type")
        if not any(_meta(c).get("name") == class_name for c in self._handle.list_objects("deviceclasses", "")):
            return Status.unschedulable(f"request {request_name}: device class {class_name} does not exist")
        return None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    # --- Filter ----------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return Status.from_error("not found")
        if not s.claims:
            return None
        ext = s.extended
        node_claim: dict[str, Any] | None = None
        mappings: list[dict[str, str]] = []
        if ext is not None:
            node_claim, mappings, bad = filter_extended(ext, s.claims[ext.index], pod, node)
            if bad is not None:
                return bad
            if node_claim is None and ext.index == 0:
                return None  # no claims of its own, its extended resources all from device plugins here
        node_obj = node.node or {"metadata": {"name": node.name}}
        unavailable = [i for i, sel in enumerate(s.available_on) if sel is not None and not sel.matches(node_obj)]
        if self.features.device_binding_and_status:
            unavailable += self._not_ready_for_binding(s, unavailable)
        allocations: list[dict[str, Any]] | None = None
        if s.allocator is not None:
            pending = [
                node_claim if node_claim is not None and ext is not None and i == ext.index else s.claims[i]
                for i in s.to_allocate
            ]
            try:
                allocations = s.allocator.allocate(node_obj, pending)
            except FailedOnNode as exc:
                return Status.unresolvable(str(exc))
            except AllocationError as exc:
                return Status.from_error(exc)
            if allocations is None or len(allocations) != len(pending):
                return Status.unresolvable("cannot allocate all claims")
        if unavailable:
            s.unavailable.update(unavailable)
            return Status.unresolvable("resourceclaim not available on the node")
        if allocations is not None:
            s.node_allocations[node.name] = allocations
            if ext is not None and node_claim is not None:
                ext.node_claims[node.name] = (node_claim, mappings)
        return None

    def _not_ready_for_binding(self, s: StateData, unavailable: list[int]) -> list[int]:
        """Upstream Filter's binding check: allocated claims whose binding failed, or which are not ready and
        timed out (they are unavailable on every node; PostFilter deallocates one)."""
        out: list[int] = []
        for index, claim in enumerate(s.claims):
            if index in unavailable or not (claim.get("status") or {}).get("allocation"):
                continue
            try:
                ready = is_claim_ready_for_binding(claim)
            except BindingFailedError:
                out.append(index)
                continue
            if not ready and is_claim_timeout(claim, self._handle.clock.now(), self.binding_timeout):
                out.append(index)
        return out

    # --- PostFilter ------------------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return None, Status.from_error("not found")
        if not s.claims:
            return None, Status(Code.UNSCHEDULABLE, ("no new claims to deallocate",))
        uid = _meta(pod.pod).get("uid")
        ext = s.extended
        for index in sorted(s.unavailable):
            claim = s.claims[index]
            if ext is not None and index == ext.index:
                if not is_special(claim):
                    break  # deleted below
                continue
            reserved = (claim.get("status") or {}).get("reservedFor") or ()
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == uid):
                self._deallocate(claim)
                return None, Status(Code.UNSCHEDULABLE, ("deallocation of ResourceClaim completed",))
        if ext is not None and not is_special(s.claims[ext.index]):
            # Left by a former cycle (allocated or reserved then): delete it and retry anew.
            self._delete_extended(s.claims[ext.index])
            return None, Status(Code.UNSCHEDULABLE, ("deletion of ResourceClaim completed",))
        return None, Status(Code.UNSCHEDULABLE, ("still not schedulable",))

    def _deallocate(self, claim: Mapping[str, Any]) -> None:
        """UpdateStatus with allocation, reservedFor and devices cleared; PostFilter is synchronous here, so the
        write is a task on the scheduler's loop (offline, without a client, nothing is written)."""
        client = self._handle.client
        if client is None:
            return
        status = {
            k: v for k, v in (claim.get("status") or {}).items() if k not in ("allocation", "reservedFor", "devices")
        }
        body = {**claim, "status": status}
        ns = str(_meta(claim).get("namespace") or "")
        self.in_background(
            lambda: client.update(client.resource("resourceclaims"), body, namespace=ns, subresource="status")
        )

    def _delete_extended(self, claim: Mapping[str, Any]) -> None:
        """Upstream ``deleteClaim`` from the synchronous PostFilter/Unreserve: a task on the scheduler's loop
        (offline nothing is written). Failures are left to the next cycle, which finds the claim again."""
        client = self._handle.client
        if client is None:
            return
        self.in_flight.forget(str(_meta(claim).get("uid") or ""))
        self.in_background(lambda: delete_claim(client, claim))

    def in_background(self, write: Callable[[], Awaitable[Any]]) -> None:
        """Run ``write()`` as a task on the scheduler's loop, for the synchronous points (PostFilter, Unreserve)
        that must write through the API. A failure is dropped: the next cycle finds the claim as it is and acts
        again. Without a running loop (offline) nothing runs; the tasks are kept until done."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return

        async def run() -> None:
            with contextlib.suppress(Exception):
                await write()

        self._tasks.add(task := loop.create_task(run()))
        task.add_done_callback(self._tasks.discard)

    # --- Score -----------------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData) or not s.claims:
            return 0, None
        return self._score_node(s, node.name), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`score` for ``rows``: all zeros for a pod without claims (upstream's Score returns 0 for it on
        every node; here without a per-node call, so pods without claims keep their speed)."""
        out: IntArray = np.zeros(len(rows), np.int64)
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData) or not s.claims:
            return out
        for i, row in enumerate(rows.tolist()):
            out[i] = self._score_node(s, table.names[row])
        return out

    def _score_node(self, s: StateData, node_name: str) -> int:
        allocations = s.node_allocations.get(node_name)
        if allocations is None:
            return 0
        score = 0
        for k, index in enumerate(s.to_allocate):
            allocated = {r.get("request") for r in (allocations[k].get("devices") or {}).get("results") or ()}
            for req in ((s.claims[index].get("spec") or {}).get("devices") or {}).get("requests") or ():
                if req.get("exactly") is not None:
                    continue
                for i, sub in enumerate(req.get("firstAvailable") or ()):
                    if f"{req.get('name')}/{sub.get('name')}" in allocated:
                        score += FIRST_AVAILABLE_MAX - i
        return score

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """:meth:`normalize_score` over the array :meth:`score_vector` returned."""
        return default_normalize_vector(MAX_NODE_SCORE, False, scores)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData) or not s.claims:
            return None  # every score is 0, which normalising leaves 0
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # --- Reserve / Unreserve ---------------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return Status.from_error("not found")
        if not s.claims or not s.to_allocate:
            return None
        ext = s.extended
        allocations = s.node_allocations.get(node_name)
        if not allocations:
            if ext is not None and s.to_allocate == [ext.index]:
                return None  # only the extended-resource claim, which device plugins serve on this node
            return Status.from_error("claim allocation not found for node")
        if len(allocations) != len(s.to_allocate):
            return Status.from_error(
                f"internal error, have {len(allocations)} allocations, {len(s.to_allocate)} claims to allocate, "
                f"want {len(s.to_allocate)} claims"
            )
        for k, index in enumerate(s.to_allocate):
            claim = dict(s.claims[index])
            if ext is not None and index == ext.index:
                node_claim = ext.node_claims.get(node_name)
                if node_claim is None:
                    continue  # device plugins serve its resources on this node
                claim = dict(node_claim[0])
            meta = dict(_meta(claim))
            if FINALIZER not in (meta.get("finalizers") or ()):
                meta["finalizers"] = [*(meta.get("finalizers") or ()), FINALIZER]
            claim["metadata"] = meta
            claim["status"] = {**(claim.get("status") or {}), "allocation": allocations[k]}
            s.allocations[index] = allocations[k]
            self.in_flight.signal(str(meta.get("uid") or _kobj(claim)), claim)
            if ext is not None and index == ext.index:
                ext.reserved = claim
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return
        for claim in s.claims:
            self.in_flight.remove(str(_meta(claim).get("uid") or _kobj(claim)))
        ext = s.extended
        if ext is not None:
            self.in_flight.remove(ext.template_uid)
            if not is_special(s.claims[ext.index]):
                self._delete_extended(s.claims[ext.index])
        # the special claim is deleted above: only the others leave reservedFor
        remove_reservation(self, [c for i, c in enumerate(s.claims) if ext is None or i != ext.index], pod.pod)

    # --- PreBind ---------------------------------------------------------------------------------------------

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Upstream ``PreBindPreFlight``: SKIP for a pod without claims (the special extended-resource claim
        counts), else Success -- PreBind has claims to handle."""
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return Status.from_error("not found")
        return None if s.claims else Status.skip()

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, StateData):
            return Status.from_error("not found")
        client = self._handle.client
        ext = s.extended
        for index, claim in enumerate(s.claims):
            if is_reserved_for_pod(pod.pod, claim):
                continue
            key = str(_meta(claim).get("uid") or _kobj(claim))
            allocation = s.allocations.get(index)
            extended = ext is not None and index == ext.index
            if extended and allocation is None and not has_requests(claim):
                continue  # its extended resources come from device plugins on this node
            try:
                if client is not None:
                    if extended:
                        await self._bind_extended(client, s, node_name, pod.pod)
                    else:
                        s.claims[index] = await self._bind_claim(client, claim, allocation, pod.pod)
            except Exception as exc:
                self.in_flight.remove(key)
                return Status.from_error(exc)
            if allocation is not None and client is not None:
                if extended:
                    self.in_flight.remove(key)
                    until = self._handle.clock.monotonic() + ASSUME_EXTENDED_CLAIM_SECONDS
                    self.in_flight.assume_created(str(_meta(s.claims[index]).get("uid")), s.claims[index], until)
                else:
                    self.in_flight.assume(key, s.claims[index])
        if client is None or not self.features.device_binding_and_status:
            return None
        return await wait_for_binding(self, s.claims, pod.pod, node_name)

    async def _bind_extended(self, client: Any, s: StateData, node_name: str, pod: Mapping[str, Any]) -> None:
        """Upstream ``bindClaim`` for the special claim: create it (a former cycle's has a name already), bind
        it as any claim, then name it in the pod's ``status.extendedResourceClaimStatus``. ``s.claims`` holds
        the created claim as soon as it exists, so Unreserve deletes it when a later step fails."""
        ext = s.extended
        assert ext is not None
        index = ext.index
        node_claim, mappings = ext.node_claims.get(node_name) or (None, [])
        claim = s.claims[index]
        if is_special(claim):
            if node_claim is None:
                raise RuntimeError(f"extended resource claim not found for node {node_name}")
            claim = s.claims[index] = await create_claim(client, node_claim)
        s.claims[index] = await self._bind_claim(client, claim, s.allocations.get(index), pod)
        await patch_pod_status(client, pod, s.claims[index], mappings)

    async def _bind_claim(
        self, client: Any, claim: Mapping[str, Any], allocation: Mapping[str, Any] | None, pod: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        resource = client.resource("resourceclaims")
        ns = str(_meta(claim).get("namespace") or "")
        current: dict[str, Any] = dict(await client.get(resource, str(_meta(claim).get("name")), namespace=ns))
        if _meta(current).get("deletionTimestamp") is not None:
            raise RuntimeError(f"claim {_kobj(claim)} got deleted in the meantime")
        status = dict(current.get("status") or {})
        if allocation is not None:
            if status.get("allocation"):
                raise RuntimeError(f"claim {_kobj(claim)} got allocated elsewhere in the meantime")
            meta = dict(_meta(current))
            if FINALIZER not in (meta.get("finalizers") or ()):
                meta["finalizers"] = [*(meta.get("finalizers") or ()), FINALIZER]
                current = dict(await client.update(resource, {**current, "metadata": meta}, namespace=ns))
            status["allocation"] = allocation
        ref = {"resource": "pods", "name": _meta(pod).get("name"), "uid": _meta(pod).get("uid")}
        status["reservedFor"] = [*(status.get("reservedFor") or ()), ref]
        if self.features.device_binding_and_status and status.get("allocation"):
            status["allocation"] = allocation_timestamp(status["allocation"], self._handle.clock)
        try:
            updated: Mapping[str, Any] = await client.update(
                resource, {**current, "status": status}, namespace=ns, subresource="status"
            )
        except Exception as exc:
            what = "allocation and reservation" if allocation is not None else "reservation"
            raise RuntimeError(f"add {what} to claim {_kobj(claim)}: {exc}") from exc
        return updated

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def cancel_waits(self) -> None:
        """The scheduler is stopping: end PreBind's binding-condition waits (``context canceled``)."""
        self.stopping.set()


def new(args: Mapping[str, Any], handle: Handle) -> DynamicResources:
    """Upstream ``New``: the allocator's features from ``handle.extra["feature_gates"]`` (v1.37 defaults)."""
    gates = handle.extra.get("feature_gates")
    table = gates if isinstance(gates, Mapping) else None
    return DynamicResources(
        handle, features_from_gates(table), binding_timeout_from_args(args), gate(table, "DRAExtendedResource")
    )
