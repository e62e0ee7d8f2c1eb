"""ControllerRef management: which objects a controller owns (upstream ``pkg/controller/controller_ref_manager.go``).

A controller claims the objects (pods, ReplicaSets, ControllerRevisions) it should own. An object owned by
another controller is ignored; one owned by us that no longer matches the selector is released (unless we are
being deleted); a live orphan that matches is adopted by a strategic-merge patch of its ownerReferences
(``controller: true``, ``blockOwnerDeletion: true``) after a fresh GET confirms the owner is not being deleted.
:class:`BaseControllerRefManager` holds the claim/adopt/release rules once; :class:`PodControllerRefManager`
supplies how pods are patched, and :class:`ReplicaSetControllerRefManager` and
:class:`ControllerRevisionRefManager` only name their kind and resource.
"""

from __future__ import annotations

__all__ = [
    "BaseControllerRefManager",
    "ControllerRevisionRefManager",
    "PodControllerRefManager",
    "ReplicaSetControllerRefManager",
    "recheck_deletion_timestamp",
]

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from kubeplane.api import labels as apilabels
from kubeplane.api.views import controller_ref_of, meta_of
from kubeplane.client.errors import InvalidError, NotFoundError
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.controllers.controller_utils import AggregateError, PodControl, error_message, new_controller_ref

log = logging.getLogger("kubeplane.controllers")


def recheck_deletion_timestamp(
    get_object: Callable[[], Awaitable[Mapping[str, Any]]],
) -> Callable[[], Awaitable[None]]:
    """A ``can_adopt`` check that reads the owner fresh and refuses if it is being deleted (upstream
    ``RecheckDeletionTimestamp``): the lister may not show a deletion that already started, and adopting then
    would race the garbage collector."""

    async def check() -> None:
        try:
            obj = await get_object()
        except Exception as exc:
            raise RuntimeError(f"can't recheck DeletionTimestamp: {error_message(exc)}") from exc
        meta = meta_of(obj)
        if meta.get("deletionTimestamp"):
            raise RuntimeError(
                f"{meta.get('namespace') or ''}/{meta.get('name') or ''} has just been deleted at "
                f"{meta.get('deletionTimestamp')}"
            )

    return check


class BaseControllerRefManager:
    """Claims objects of one resource for one controller object (upstream ``BaseControllerRefManager``).

    The rules (upstream ``ClaimObject``), the same for every resource:

    * Owned by another controller: ignored. Owned by us: kept while ``match`` holds, else released (unless we
      are being deleted: our objects are then left alone for the garbage collector).
    * An orphan is adopted when it matches, neither it nor we are being deleted, and it is in our namespace.
      ``can_adopt`` (at most once per manager, before the first adoption) raises to refuse, e.g. when a fresh
      read shows we were deleted or replaced.
    * NotFound while adopting or releasing means the object is gone: not claimed, not an error. A release
      refused as Invalid (the UID precondition: the object was replaced) is not an error either. Any other
      failure is collected, the rest are still processed, and all are raised together as
      :class:`AggregateError` (the caller retries the whole sync).

    Every patch carries the object's UID, so it can never hit a namesake created in the meantime. Subclasses
    say only how their resource is patched (:meth:`_patch`) and which object a claim reports after an
    adoption (:meth:`_adopted`). A manager lives for one sync.
    """

    object_kind: ClassVar[str] = ""
    """The claimed objects' kind, for messages (``can't adopt <kind> ...``)."""

    def __init__(
        self,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
        finalizers: Sequence[str] = (),
    ) -> None:
        self.controller = controller
        self.selector = selector
        self.api_version, self.kind = api_version, kind
        self._can_adopt = can_adopt
        self._can_adopt_result: BaseException | None = None
        self._can_adopt_done = False
        self.finalizers = list(finalizers)

    async def can_adopt(self) -> None:
        """Run the ``can_adopt`` check once and remember its outcome (upstream ``CanAdopt`` with ``sync.Once``)."""
        if not self._can_adopt_done:
            self._can_adopt_done = True
            try:
                await self._can_adopt()
            except Exception as exc:
                self._can_adopt_result = exc
        if self._can_adopt_result is not None:
            raise self._can_adopt_result

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        """A strategic-merge patch of one claimed object; returns the patched object."""
        raise NotImplementedError

    def _adopted(self, original: Obj, patched: Obj) -> Obj:
        """The object a claim reports after adopting ``original`` (the adoption patch returned ``patched``)."""
        return original

    def selector_matches(self, obj: Mapping[str, Any]) -> bool:
        return self.selector.matches(meta_of(obj).get("labels") or {})

    async def claim_objects(self, objs: Iterable[Obj], match: Callable[[Obj], bool]) -> list[Obj]:
        """The objects this controller owns after adopting and releasing (see the class docstring)."""
        claimed: list[Obj] = []
        errors: list[BaseException] = []
        for obj in objs:
            try:
                kept = await self.claim_object(obj, match)
            except Exception as exc:
                errors.append(exc)
                continue
            if kept is not None:
                claimed.append(kept)
        if errors:
            raise AggregateError(errors)
        return claimed

    async def claim_object(self, obj: Obj, match: Callable[[Obj], bool]) -> Obj | None:
        """Upstream ``ClaimObject``: the object as claimed (see :meth:`_adopted`), or None if not ours."""
        ref = controller_ref_of(obj)
        owner_meta = meta_of(self.controller)
        being_deleted = bool(owner_meta.get("deletionTimestamp"))
        if ref is not None:
            if ref.get("uid") != owner_meta.get("uid"):
                return None  # owned by someone else
            if match(obj):
                return obj  # ours and matching; fine even while we are being deleted (no action needed)
            if being_deleted:
                return None
            try:
                await self.release(obj)
            except NotFoundError:
                return None
            return None
        # An orphan.
        if being_deleted or not match(obj):
            return None
        if meta_of(obj).get("deletionTimestamp"):
            return None
        namespace = owner_meta.get("namespace") or ""
        if namespace and namespace != meta_of(obj).get("namespace"):
            return None
        try:
            patched = await self.adopt(obj)
        except NotFoundError:
            return None
        return self._adopted(obj, patched)

    async def adopt(self, obj: Obj) -> Obj:
        """Make this controller the object's controller; returns the patched object. The API server refuses a
        second controller reference."""
        meta = meta_of(obj)
        try:
            await self.can_adopt()
        except Exception as exc:
            raise RuntimeError(
                f"can't adopt {self.object_kind} {meta.get('namespace')}/{meta.get('name')} ({meta.get('uid')}): "
                f"{error_message(exc)}"
            ) from exc
        patch_meta: Obj = {
            "ownerReferences": [new_controller_ref(self.controller, api_version=self.api_version, kind=self.kind)],
            "uid": meta.get("uid"),
        }
        if self.finalizers:
            patch_meta["finalizers"] = list(self.finalizers)
        return await self._patch(
            str(meta.get("namespace") or ""), str(meta.get("name") or ""), {"metadata": patch_meta}
        )

    async def release(self, obj: Obj) -> None:
        """Remove this controller's reference from the object (upstream ``ReleasePod`` / ``ReleaseReplicaSet``).
        An object that is gone, or whose UID no longer matches (Invalid), needs no release."""
        meta = meta_of(obj)
        log.debug(
            "patching %s %s/%s to remove its controllerRef to %s %s",
            self.object_kind,
            meta.get("namespace"),
            meta.get("name"),
            self.kind,
            meta_of(self.controller).get("name"),
        )
        patch_meta: Obj = {
            "ownerReferences": [{"$patch": "delete", "uid": str(meta_of(self.controller).get("uid") or "")}],
            "uid": meta.get("uid"),
        }
        if self.finalizers:
            patch_meta["$deleteFromPrimitiveList/finalizers"] = list(self.finalizers)
        try:
            await self._patch(str(meta.get("namespace") or ""), str(meta.get("name") or ""), {"metadata": patch_meta})
        except (NotFoundError, InvalidError):
            return


class PodControllerRefManager(BaseControllerRefManager):
    """Claims pods (upstream ``PodControllerRefManager``); patches go through :class:`PodControl`. Claimed pods
    are reported as the caller passed them (the cached objects), as upstream's ``ClaimPods``."""

    object_kind: ClassVar[str] = "Pod"

    def __init__(
        self,
        pod_control: PodControl,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
        finalizers: Sequence[str] = (),
    ) -> None:
        super().__init__(
            controller, selector, api_version=api_version, kind=kind, can_adopt=can_adopt, finalizers=finalizers
        )
        self.pod_control = pod_control

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        return await self.pod_control.patch_pod(namespace, name, patch)

    async def claim_pods(self, pods: Iterable[Obj], *filters: Callable[[Obj], bool]) -> list[Obj]:
        """The pods this controller owns after adopting and releasing; a pod matches when the selector and every
        filter accept it. Raises :class:`AggregateError` if any adoption or release failed."""

        def match(pod: Obj) -> bool:
            return self.selector_matches(pod) and all(f(pod) for f in filters)

        return await self.claim_objects(pods, match)

    async def adopt_pod(self, pod: Obj) -> None:
        await self.adopt(pod)

    async def release_pod(self, pod: Obj) -> None:
        await self.release(pod)


class _OwnedKindRefManager(BaseControllerRefManager):
    """Claims objects of one kind (``resource``) by selector, adopting with a strategic merge patch. Adopted
    objects are reported as the adoption patch returned them (fresher than the cache: the controller updates them
    next and would otherwise conflict on the resourceVersion)."""

    resource_name: ClassVar[str]

    def __init__(
        self,
        client: Client,
        controller: Mapping[str, Any],
        selector: apilabels.Selector,
        *,
        api_version: str,
        kind: str,
        can_adopt: Callable[[], Awaitable[None]],
    ) -> None:
        super().__init__(controller, selector, api_version=api_version, kind=kind, can_adopt=can_adopt)
        self.client = client
        self.resource = client.resource(self.resource_name)

    async def _patch(self, namespace: str, name: str, patch: Mapping[str, Any]) -> Obj:
        return await self.client.patch(
            self.resource, name, dict(patch), patch_type=PatchType.STRATEGIC, namespace=namespace
        )

    def _adopted(self, original: Obj, patched: Obj) -> Obj:
        return patched


class ReplicaSetControllerRefManager(_OwnedKindRefManager):
    """Claims ReplicaSets for a Deployment (upstream ``ReplicaSetControllerRefManager``)."""

    object_kind: ClassVar[str] = "ReplicaSet"
    resource_name: ClassVar[str] = "replicasets"

    async def claim_replica_sets(self, rs_list: Iterable[Obj]) -> list[Obj]:
        """The ReplicaSets this Deployment owns after adopting and releasing (selector match only)."""
        return await self.claim_objects(rs_list, self.selector_matches)


class ControllerRevisionRefManager(_OwnedKindRefManager):
    """Claims ControllerRevisions for a DaemonSet or StatefulSet (upstream
    ``ControllerRevisionControllerRefManager``)."""

    object_kind: ClassVar[str] = "ControllerRevision"
    resource_name: ClassVar[str] = "controllerrevisions"

    async def claim_controller_revisions(self, revisions: Iterable[Obj]) -> list[Obj]:
        return await self.claim_objects(revisions, self.selector_matches)
