"""VolumeBinding's volume binder (upstream ``volumebinding/binder.go``, ``SchedulerVolumeBinder``).

How it fits the cycle, as upstream:

* PreFilter: :meth:`VolumeBinder.get_pod_volume_claims` splits the pod's PVCs into bound, unbound
  WaitForFirstConsumer ("delay binding") and unbound Immediate claims (a claim with ``spec.volumeName`` but not
  fully bound counts as Immediate), and lists the PVs of the delayed claims' classes.
* Filter (per node): :meth:`VolumeBinder.find_pod_volumes` checks bound PVs' node affinity, finds static PVs for the
  delayed claims (``FindMatchingVolume``, smallest first) and otherwise checks dynamic provisioning (class
  provisioner, ``allowedTopologies``, and ``CSIStorageCapacity`` when the CSIDriver has ``storageCapacity: true``).
* Reserve: :meth:`VolumeBinder.assume_pod_volumes` assumes the PV claimRefs and the PVCs' selected-node annotation
  in the assume caches; Unreserve reverts them.
* PreBind: :meth:`VolumeBinder.bind_pod_volumes` writes them to the API server and polls every second on the
  handle's clock (``wait.PollUntilContextTimeout``, first check after one interval) until the PV controller has
  bound every claim, or ``bindTimeoutSeconds`` pass.

Per-cycle reads (the delayed classes' PVs, bound PVs, StorageClasses, CSIDrivers, CSIStorageCapacities) are taken
once in PreFilter and kept in :class:`PodVolumeClaims`, so Filter on N nodes does not list the objects N times;
upstream reads its informer caches at each node, which within one cycle sees the same objects.
Not modelled: in-tree to CSI PV translation (``tryTranslatePVToCSI``; kubeplane runs no in-tree volume plugins).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api import labels
from kubeplane.api.labels import SelectorError
from kubeplane.api.volumes import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    NodeAffinityCache,
    claim_class,
    claim_key,
    find_matching_volume,
    get_bind_volume_to_claim,
    pod_claim_names,
    requested_storage,
    volume_class,
    volume_is_for_pod,
)
from kubeplane.client.errors import APIStatusError
from kubeplane.scheduler.plugins.volume_binding_assume_cache import (
    AssumeCache,
    AssumeCacheError,
    NotFoundInCache,
    pv_cache,
    pvc_cache,
)
from kubeplane.scheduler.plugins.volume_binding_helpers import (
    claim_storage_request,
    match_topology_selector_terms,
    pv_capacity,
)

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "BinderError",
    "BindingInfo",
    "DynamicProvision",
    "PodVolumeClaims",
    "PodVolumes",
    "VolumeBinder",
    "volume_limit",
]

ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) didn't match PersistentVolume's node affinity"
"""v1.37's ``ErrReasonNodeConflict`` (releases before it said "node(s) had volume node affinity conflict")."""
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
_POLL_INTERVAL: Final = 1.0


class BinderError(Exception):
    """An internal error of the binder (the plugin turns it into an ERROR status); ``str()`` is upstream's."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(str(_meta(obj).get("resourceVersion") or "0"))
    except ValueError:
        return 0


@dataclass(slots=True)
class BindingInfo:
    """A PVC and the static PV proposed for it (upstream ``BindingInfo``)."""

    pvc: Mapping[str, Any]
    pv: Mapping[str, Any]

    def storage_class_name(self) -> str:
        return str((self.pv.get("spec") or {}).get("storageClassName") or "")

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) in bytes (upstream ``StorageResource``)."""
        return claim_storage_request(self.pvc) or 0, pv_capacity(self.pv)


@dataclass(slots=True)
class DynamicProvision:
    """A PVC to provision and the CSIStorageCapacity that admitted it on the node, if one was checked."""

    pvc: Mapping[str, Any]
    node_capacity: Mapping[str, Any] | None = None


@dataclass(slots=True)
class PodVolumes:
    """What one node needs for the pod (upstream ``PodVolumes``); rewritten by AssumePodVolumes."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


@dataclass(slots=True)
class PodVolumeClaims:
    """The pod's claims by kind (upstream ``PodVolumeClaims``) and the objects Filter reads this cycle."""

    bound_claims: list[Mapping[str, Any]] = field(default_factory=list)
    unbound_claims_delay_binding: list[Mapping[str, Any]] = field(default_factory=list)
    unbound_claims_immediate: list[Mapping[str, Any]] = field(default_factory=list)
    unbound_volumes_delay_binding: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    pvs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    classes: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    drivers: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    capacities: dict[str, CapacityIndex] = field(default_factory=dict)
    """The CSIStorageCapacities by storage class, in list order, with their compiled topology and limit."""


def volume_limit(capacity: Mapping[str, Any]) -> int | None:
    """Upstream ``volumeLimit``: ``maximumVolumeSize`` when set, else ``capacity``; None when neither is."""
    from kubeplane.api.quantity import parse_value

    raw = capacity.get("maximumVolumeSize")
    if raw is None:
        raw = capacity.get("capacity")
    return None if raw is None else parse_value(raw)


@dataclass(frozen=True, slots=True)
class CompiledCapacity:
    """A CSIStorageCapacity with its ``nodeTopology`` compiled (None: it reaches no node, as upstream's
    ``nodeHasAccess`` for a nil or unparsable selector) and its :func:`volume_limit`."""

    obj: Mapping[str, Any]
    topology: labels.Selector | None
    limit: int | None


class CapacityIndex:
    """One class's CSIStorageCapacities, looked up by node in upstream's list order.

    Upstream scans every capacity for every node (its own TODO asks for "some kind of lookup structure"). Here a
    capacity whose ``nodeTopology`` is only ``matchLabels`` is filed under one of its (key, value) pairs, so a node
    considers only the capacities filed under its own labels plus those with other selectors; candidates are then
    checked in list order exactly as upstream, so the first fitting capacity is the same one.
    """

    def __init__(self, items: Sequence[CompiledCapacity]) -> None:
        self.items = list(items)
        self._by_label: dict[tuple[str, str], list[int]] = {}
        self._keys: set[str] = set()
        self._other: list[int] = []
        for i, c in enumerate(self.items):
            if c.topology is None:
                continue  # reaches no node
            topology = c.obj.get("nodeTopology") or {}
            match_labels = topology.get("matchLabels") or {}
            if match_labels and not topology.get("matchExpressions"):
                key = next(iter(match_labels))
                self._by_label.setdefault((key, str(match_labels[key])), []).append(i)
                self._keys.add(key)
            else:
                self._other.append(i)

    def candidates(self, node_labels: Mapping[str, str]) -> list[CompiledCapacity]:
        positions = list(self._other)
        for key in self._keys:
            value = node_labels.get(key)
            if value is not None:
                positions.extend(self._by_label.get((key, value), ()))
        positions.sort()
        return [self.items[i] for i in positions]


def compile_capacity(capacity: Mapping[str, Any]) -> CompiledCapacity:
    topology = capacity.get("nodeTopology")
    selector: labels.Selector | None = None
    if topology is not None:
        try:
            selector = labels.label_selector_as_selector(topology)
        except SelectorError:
            selector = None
    return CompiledCapacity(capacity, selector, volume_limit(capacity))


class VolumeBinder:
    """Upstream ``volumeBinder`` over the handle's object listers and client."""

    def __init__(self, handle: Handle, bind_timeout_seconds: float) -> None:
        self._handle = handle
        self.pv_cache: AssumeCache = pv_cache(handle.list_objects)
        self.pvc_cache: AssumeCache = pvc_cache(handle.list_objects)
        self.bind_timeout = bind_timeout_seconds
        self._affinity = NodeAffinityCache()
        self._compiled_capacities: dict[tuple[str, str, str], CompiledCapacity] = {}

    def _cluster(self, resource: str) -> dict[str, Mapping[str, Any]]:
        return {_name(o): o for o in self._handle.list_objects(resource, "")}

    # --- PreFilter -------------------------------------------------------------------------------------------

    def _is_pvc_bound(
        self, namespace: str, name: str, pvcs: Mapping[str, Mapping[str, Any]]
    ) -> tuple[bool, Mapping[str, Any]]:
        key = f"{namespace}/{name}"
        try:
            pvc = self.pvc_cache.get(key, pvcs)
        except AssumeCacheError as exc:
            raise BinderError(f'error getting PVC "{key}": {exc}') from exc
        return is_pvc_fully_bound(pvc), pvc

    def get_pod_volume_claims(self, pod: Mapping[str, Any]) -> PodVolumeClaims:
        """Upstream ``GetPodVolumeClaims``; raises :class:`BinderError`."""
        claims = PodVolumeClaims()
        namespace = str(_meta(pod).get("namespace") or "")
        pvcs = self.pvc_cache.api_objects()
        claims.classes = self._cluster("storageclasses")
        for name, is_ephemeral in pod_claim_names(pod):
            bound, pvc = self._is_pvc_bound(namespace, name, pvcs)
            if is_ephemeral and (error := volume_is_for_pod(pod, pvc)) is not None:
                raise BinderError(error)
            if bound:
                claims.bound_claims.append(pvc)
                continue
            delay = self._is_delay_binding_mode(pvc, claims.classes)
            if delay and not (pvc.get("spec") or {}).get("volumeName"):
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                claims.unbound_claims_immediate.append(pvc)
        pv_objects = self.pv_cache.api_objects()
        claims.pvs = {k: self.pv_cache.get(k, pv_objects) for k in pv_objects}
        for pvc in claims.unbound_claims_delay_binding:
            cls = claim_class(pvc)
            claims.unbound_volumes_delay_binding[cls] = [pv for pv in claims.pvs.values() if volume_class(pv) == cls]
        if claims.unbound_claims_delay_binding:
            claims.drivers = self._cluster("csidrivers")
            claims.capacities = self._capacities_by_class()
        return claims

    def _capacities_by_class(self) -> dict[str, CapacityIndex]:
        """The CSIStorageCapacities by class; each object version is compiled once (by namespace, name and
        resourceVersion), since Filter matches every one against every node."""
        by_class: dict[str, list[CompiledCapacity]] = {}
        seen: dict[tuple[str, str, str], CompiledCapacity] = {}
        for obj in self._handle.list_objects("csistoragecapacities", ""):
            meta = _meta(obj)
            key = (str(meta.get("namespace") or ""), _name(obj), str(meta.get("resourceVersion") or ""))
            compiled = self._compiled_capacities.get(key)
            if compiled is None or compiled.obj is not obj:
                compiled = compile_capacity(obj)
            seen[key] = compiled
            by_class.setdefault(str(obj.get("storageClassName") or ""), []).append(compiled)
        self._compiled_capacities = seen
        return {cls: CapacityIndex(items) for cls, items in by_class.items()}

    @staticmethod
    def _is_delay_binding_mode(pvc: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]]) -> bool:
        """Upstream ``IsDelayBindingMode``: the claim's class exists and is WaitForFirstConsumer."""
        name = claim_class(pvc)
        if not name:
            return False
        cls = classes.get(name)
        if cls is None:
            return False
        mode = cls.get("volumeBindingMode")
        if mode is None:
            raise BinderError(f'VolumeBindingMode not set for StorageClass "{name}"')
        return bool(mode == "WaitForFirstConsumer")

    # --- Filter ----------------------------------------------------------------------------------------------

    def find_pod_volumes(
        self, pod: Mapping[str, Any], claims: PodVolumeClaims, node_name: str, node_labels: Mapping[str, str]
    ) -> tuple[PodVolumes, list[str]]:
        """Upstream ``FindPodVolumes``: the node's PodVolumes and the reasons it does not fit (in upstream's
        order: node conflict, bind conflict, not enough space, PV missing). Raises :class:`BinderError`."""
        bound_satisfied = unbound_satisfied = sufficient_storage = bound_pvs_found = True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(claims, node_labels)
        if claims.unbound_claims_delay_binding:
            to_match: list[Mapping[str, Any]] = []
            to_provision: list[Mapping[str, Any]] = []
            fast_fail = False
            for claim in claims.unbound_claims_delay_binding:
                annotations = _meta(claim).get("annotations") or {}
                if ANN_SELECTED_NODE in annotations:
                    if annotations[ANN_SELECTED_NODE] != node_name:
                        unbound_satisfied = False
                        fast_fail = True
                        break
                    to_provision.append(claim)
                else:
                    to_match.append(claim)
            if not fast_fail:
                if to_match:
                    unbound_satisfied, static, unmatched = self._find_matching_volumes(claims, to_match, node_labels)
                    to_provision.extend(unmatched)
                if to_provision:
                    unbound_satisfied, sufficient_storage, dynamic = self._check_volume_provisions(
                        claims, to_provision, node_labels
                    )
        reasons: list[str] = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static, dynamic), reasons

    def _check_bound_claims(self, claims: PodVolumeClaims, node_labels: Mapping[str, str]) -> tuple[bool, bool]:
        """Upstream ``checkBoundClaims``: (node affinity satisfied, every bound PV exists)."""
        for pvc in claims.bound_claims:
            pv = claims.pvs.get(str((pvc.get("spec") or {}).get("volumeName") or ""))
            if pv is None:
                return True, False
            if self._affinity.check(pv, node_labels) is not None:
                return False, True
        return True, True

    def _find_matching_volumes(
        self, claims: PodVolumeClaims, to_bind: list[Mapping[str, Any]], node_labels: Mapping[str, str]
    ) -> tuple[bool, list[BindingInfo], list[Mapping[str, Any]]]:
        """Upstream ``findMatchingVolumes``: claims smallest request first, each PV used once."""
        ordered = sorted(to_bind, key=requested_storage)  # byPVCSize: Quantity.Cmp of the requests
        chosen: dict[str, Mapping[str, Any]] = {}
        bindings: list[BindingInfo] = []
        unbound: list[Mapping[str, Any]] = []
        found = True
        for pvc in ordered:
            pvs = claims.unbound_volumes_delay_binding.get(claim_class(pvc), [])
            try:
                pv = find_matching_volume(
                    pvc, pvs, node_labels=node_labels, excluded=chosen, delay_binding=True, affinity=self._affinity
                )
            except ValueError as exc:
                raise BinderError(str(exc)) from exc
            if pv is None:
                unbound.append(pvc)
                found = False
                continue
            chosen[_name(pv)] = pv
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unbound

    def _check_volume_provisions(
        self, claims: PodVolumeClaims, to_provision: list[Mapping[str, Any]], node_labels: Mapping[str, str]
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """Upstream ``checkVolumeProvisions``: (provisioning possible, storage sufficient, provisions)."""
        provisions: list[DynamicProvision] = []
        for claim in to_provision:
            class_name = claim_class(claim)
            if not class_name:
                raise BinderError(f'no class for claim "{claim_key(claim)}"')
            cls = claims.classes.get(class_name)
            if cls is None:
                raise BinderError(f'failed to find storage class "{class_name}"')
            provisioner = str(cls.get("provisioner") or "")
            if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(cls.get("allowedTopologies"), node_labels):
                return False, True, []
            sufficient, capacity = self._has_enough_capacity(claims, provisioner, claim, class_name, node_labels)
            if not sufficient:
                return True, False, []
            provisions.append(DynamicProvision(claim, capacity))
        return True, True, provisions

    @staticmethod
    def _has_enough_capacity(
        claims: PodVolumeClaims,
        provisioner: str,
        claim: Mapping[str, Any],
        class_name: str,
        node_labels: Mapping[str, str],
    ) -> tuple[bool, Mapping[str, Any] | None]:
        """Upstream ``hasEnoughCapacity``: only for CSI drivers with ``storageCapacity: true``; the first
        CSIStorageCapacity of the class that the node can reach and whose limit fits the request."""
        size = claim_storage_request(claim)
        if size is None:
            return True, None
        driver = claims.drivers.get(provisioner)
        if driver is None or not (driver.get("spec") or {}).get("storageCapacity"):
            return True, None
        index = claims.capacities.get(class_name)
        for capacity in index.candidates(node_labels) if index is not None else ():
            limit, topology = capacity.limit, capacity.topology
            if limit is not None and limit >= size and topology is not None and topology.matches(node_labels):
                return True, capacity.obj
        return False, None

    # --- Reserve / Unreserve ---------------------------------------------------------------------------------

    def are_pod_volumes_bound(self, pod: Mapping[str, Any]) -> bool:
        """Upstream ``arePodVolumesBound`` (a missing PVC counts as not bound)."""
        namespace = str(_meta(pod).get("namespace") or "")
        pvcs = self.pvc_cache.api_objects()
        for name, _ephemeral in pod_claim_names(pod):
            try:
                bound, _ = self._is_pvc_bound(namespace, name, pvcs)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, pod: Mapping[str, Any], node_name: str, volumes: PodVolumes) -> bool:
        """Upstream ``AssumePodVolumes``: True when every claim is bound already; otherwise assume the PVs'
        claimRefs and the PVCs' selected-node and rewrite ``volumes`` with the assumed objects. Raises
        :class:`BinderError` after reverting what it assumed."""
        if self.are_pod_volumes_bound(pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = get_bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except AssumeCacheError as exc:
                    self._revert_pvs(new_bindings)
                    raise BinderError(str(exc)) from exc
            new_bindings.append(BindingInfo(binding.pvc, new_pv))
        new_provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            clone: dict[str, Any] = copy.deepcopy(dict(provision.pvc))
            meta = clone.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), ANN_SELECTED_NODE: node_name}
            try:
                self.pvc_cache.assume(clone)
            except AssumeCacheError as exc:
                self._revert_pvs(new_bindings)
                self._revert_pvcs([p.pvc for p in new_provisions])
                raise BinderError(str(exc)) from exc
            new_provisions.append(DynamicProvision(clone))
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        """Upstream ``RevertAssumedPodVolumes``."""
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs([p.pvc for p in volumes.dynamic_provisions])

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(_name(b.pv))

    def _revert_pvcs(self, claims: Sequence[Mapping[str, Any]]) -> None:
        for c in claims:
            self.pvc_cache.restore(claim_key(c))

    # --- PreBind ---------------------------------------------------------------------------------------------

    async def bind_pod_volumes(self, pod: Mapping[str, Any], node_name: str, volumes: PodVolumes) -> None:
        """Upstream ``BindPodVolumes``: the API updates, then poll until bound; raises :class:`BinderError`."""
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions]
        await self._bind_api_update(bindings, claims)
        clock = self._handle.clock
        deadline = clock.monotonic() + self.bind_timeout
        while True:
            if clock.monotonic() + _POLL_INTERVAL > deadline:
                await clock.sleep(max(0.0, deadline - clock.monotonic()))
                raise BinderError("binding volumes: context deadline exceeded")
            await clock.sleep(_POLL_INTERVAL)
            try:
                if self.check_bindings(pod, node_name, bindings, claims):
                    return
            except BinderError as exc:
                raise BinderError(f"binding volumes: {exc}") from exc

    async def _bind_api_update(self, bindings: list[BindingInfo], claims: list[Mapping[str, Any]]) -> None:
        """Upstream ``bindAPIUpdate``: PV claimRefs first, then the PVCs' selected-node; what was not written
        is reverted in the caches when one update fails."""
        client = self._handle.client
        done_bindings = done_claims = 0
        try:
            if client is None:
                raise BinderError("cannot bind volumes: the scheduler has no client")
            pvs = client.resource("persistentvolumes")
            for binding in bindings:
                binding.pv = await client.update(pvs, dict(binding.pv))
                done_bindings += 1
            pvcs = client.resource("persistentvolumeclaims")
            for i, claim in enumerate(claims):
                claims[i] = await client.update(pvcs, dict(claim), namespace=str(_meta(claim).get("namespace") or ""))
                done_claims += 1
        except APIStatusError as exc:
            raise BinderError(exc.message) from exc
        except BinderError:
            raise
        except Exception as exc:  # a transport failure: the binding cycle's ERROR, as upstream's client error
            raise BinderError(str(exc)) from exc
        finally:
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs(claims[done_claims:])

    def _node_labels(self, node_name: str) -> Mapping[str, str]:
        factory = self._handle.informer_factory
        node: Mapping[str, Any] | None = None
        if factory is not None:
            node = factory.informer_for("nodes").lister().get(None, node_name)
        else:
            info = self._handle.snapshot_lister.get(node_name)
            node = info.node if info is not None else None
        if node is None:
            raise BinderError(f'failed to get node "{node_name}": node "{node_name}" not found')
        node_labels: Mapping[str, str] = _meta(node).get("labels") or {}
        return node_labels

    def _pod_exists(self, pod: Mapping[str, Any]) -> bool:
        factory = self._handle.informer_factory
        if factory is None:
            return True
        meta = _meta(pod)
        return factory.informer_for("pods").lister().get(meta.get("namespace") or "", str(meta.get("name"))) is not None

    def check_bindings(
        self, pod: Mapping[str, Any], node_name: str, bindings: list[BindingInfo], claims: list[Mapping[str, Any]]
    ) -> bool:
        """Upstream ``checkBindings``: True once every claim is fully bound (per the informers); False to keep
        waiting; :class:`BinderError` when the binding cannot complete (claimRef reset, provisioning failed,
        the PV does not fit the node, the pod is gone)."""
        node_labels = self._node_labels(node_name)
        if not self._pod_exists(pod):
            raise BinderError(f'pod does not exist any more: pods "{_meta(pod).get("name")}" not found')
        for binding in bindings:
            try:
                pv = self.pv_cache.get_api_obj(_name(binding.pv))
                pvc = self.pvc_cache.get_api_obj(claim_key(binding.pvc))
            except NotFoundInCache as exc:
                raise BinderError(f"failed to check binding: {exc}") from exc
            if _rv(binding.pv) > _rv(pv):
                return False
            if (error := self._affinity.check(pv, node_labels)) is not None:
                raise BinderError(f'pv "{_name(pv)}" node affinity doesn\'t match node "{node_name}": {error}')
            ref = (pv.get("spec") or {}).get("claimRef")
            if not ref or not ref.get("uid"):
                raise BinderError(f'ClaimRef got reset for pv "{_name(pv)}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in claims:
            try:
                pvc = self.pvc_cache.get_api_obj(claim_key(claim))
            except NotFoundInCache as exc:
                raise BinderError(f"failed to check provisioning pvc: {exc}") from exc
            if _rv(claim) > _rv(pvc):
                return False
            annotations = _meta(pvc).get("annotations")
            if annotations is None:
                raise BinderError(f'selectedNode annotation reset for PVC "{_name(pvc)}"')
            if annotations.get(ANN_SELECTED_NODE) != node_name:
                raise BinderError(f'provisioning failed for PVC "{_name(pvc)}"')
            volume_name = str((pvc.get("spec") or {}).get("volumeName") or "")
            if volume_name:
                try:
                    pv = self.pv_cache.get_api_obj(volume_name)
                except NotFoundInCache:
                    return False
                if (error := self._affinity.check(pv, node_labels)) is not None:
                    raise BinderError(f'pv "{volume_name}" node affinity doesn\'t match node "{node_name}": {error}')
            if not is_pvc_fully_bound(pvc):
                return False
        return True


def is_pvc_fully_bound(pvc: Mapping[str, Any]) -> bool:
    """Upstream ``isPVCFullyBound``: ``spec.volumeName`` set and the bind-completed annotation present."""
    return bool((pvc.get("spec") or {}).get("volumeName")) and ANN_BIND_COMPLETED in (
        _meta(pvc).get("annotations") or {}
    )
