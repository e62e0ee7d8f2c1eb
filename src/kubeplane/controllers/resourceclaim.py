"""The resourceclaim controller (upstream ``pkg/controller/resourceclaim/controller.go``, v1.37, controller
``resourceclaim-controller``, events as component ``resource_claim``).

Two kinds of keys share one queue, as upstream: ``pod:<ns>/<name>`` and ``claim:<ns>/<name>``.

* **Pods** (``syncPod``): for each ``spec.resourceClaims[]`` entry with a ``resourceClaimTemplateName`` whose claim
  does not exist (or exists but is not controlled by the pod) a ResourceClaim is created from the template --
  ``generateName`` ``<pod>-<claim>-`` (both parts shortened proportionally to 57 characters), annotation
  ``resource.kubernetes.io/pod-claim-name: <claim>``, the template's labels and annotations, a controller
  ownerReference to the pod with ``blockOwnerDeletion`` -- and the names are written to
  ``status.resourceClaimStatuses`` of the pod. Before creating, a claim already owned by the pod with that
  annotation is adopted (the controller created it, then failed to write the pod status). A failure is a
  ``FailedResourceClaimCreation`` Warning on the pod and a retry. For a scheduled pod, an allocated claim not yet
  reserved for it gets the pod appended to ``status.reservedFor``.
* **Claims** (``syncClaim``): ``status.reservedFor`` pod entries whose pod is gone, replaced (another uid) or done
  (terminal phase, or deleted before being scheduled) are dropped. When that leaves no consumer and the claim
  carries ``resource.kubernetes.io/delete-protection`` its allocation is removed too (DRA deallocates as soon as the
  last consumer stops, so the next consumer may be placed anywhere), then the finalizer. A claim being deleted
  with no consumer loses allocation and finalizer likewise. An unreserved claim *generated for a pod* (controller
  ownerReference to a v1 Pod) whose pod is done or replaced is deleted -- the garbage collector would, but only
  once the pod object goes.

Why a pod seen deleted is remembered (``_deleted``, an LRU of 500 uids): a reservation for such a pod can be
dropped without asking the API server; a pod neither cached nor known deleted is looked up live first, since
removing a reservation the scheduler just made would let two pods share a device.

Departures: the pod status is written with a strategic-merge patch (merge key ``name``) instead of a forced
server-side apply by field manager ``ResourceClaimController`` -- the resulting ``resourceClaimStatuses`` are the
same; the controller's Prometheus metrics are not exported.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kubeplane.api.podclaims import (
    DELETE_PROTECTION_FINALIZER,
    ClaimNameError,
    can_be_reserved,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
    pod_claim_names,
    reserved_for,
)
from kubeplane.api.views import is_pod_terminal, meta_of, spec_of, status_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj, PatchType

from .base import Controller, ControllerContext, split_key
from .resourceclaim_create import claim_from_template, needs_admin_access

__all__ = [
    "CLAIM_POD_OWNER_INDEX",
    "POD_RESOURCE_CLAIM_ANNOTATION",
    "POD_RESOURCE_CLAIM_INDEX",
    "ResourceClaimController",
    "is_pod_done",
    "owning_pod",
]

log = logging.getLogger("kubeplane.controllers.resourceclaim")

POD_RESOURCE_CLAIM_INDEX: Final = "pod-resource-claim-index"
CLAIM_POD_OWNER_INDEX: Final = "claim-pod-owner-index"
POD_RESOURCE_CLAIM_ANNOTATION: Final = "resource.kubernetes.io/pod-claim-name"
CLAIM_KEY_PREFIX: Final = "claim:"
POD_KEY_PREFIX: Final = "pod:"
MAX_UID_CACHE_ENTRIES: Final = 500
MUTATION_TTL: Final = 3600.0
"""The mutation cache's time to live (upstream: one hour)."""


def _pod_claims(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in spec_of(pod).get("resourceClaims") or () if isinstance(c, Mapping)]


def pod_resource_claim_keys(pod: Obj) -> list[str]:
    """``podResourceClaimIndexFunc``: ``namespace/claim`` of every claim the pod references by now."""
    namespace = meta_of(pod).get("namespace") or ""
    return [f"{namespace}/{name}" for name, _ in pod_claim_names(pod)]


def owning_pod(claim: Mapping[str, Any]) -> tuple[str, str]:
    """``owningPod``: name and uid of the v1 Pod controlling the claim, ``("", "")`` if none."""
    for ref in meta_of(claim).get("ownerReferences") or ():
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("apiVersion") == "v1"
            and ref.get("kind") == "Pod"
        ):
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def claim_pod_owner_keys(claim: Obj) -> list[str]:
    """``claimPodOwnerIndexFunc``: the uid of the pod controlling the claim."""
    _, uid = owning_pod(claim)
    return [uid] if uid else []


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """``isPodDone``: terminal phase, or deleted before it was scheduled -- none of its containers runs or will."""
    phase = status_of(pod).get("phase")
    return phase in ("Succeeded", "Failed") or (
        bool(meta_of(pod).get("deletionTimestamp")) and not spec_of(pod).get("nodeName")
    )


def pod_needs_claims(pod: Mapping[str, Any], deleted: bool) -> tuple[bool, str]:
    """``podNeedsClaims``."""
    if deleted:
        return False, "pod got removed"
    if is_pod_terminal(pod):
        return False, "pod has terminated"
    if meta_of(pod).get("deletionTimestamp") and not spec_of(pod).get("nodeName"):
        return False, "pod got deleted before scheduling"
    return True, "pod might run"


class ResourceClaimController(Controller):
    name: ClassVar[str] = "resourceclaim-controller"
    workers: ClassVar[int] = 10  # kube-controller-manager runs it with 10 workers

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pods = ctx.client.resource("pods")
        self.claims = ctx.client.resource("resourceclaims")
        self.templates = ctx.client.resource("resourceclaimtemplates")
        self.recorder = ctx.recorder("resource_claim")
        self.admin_access_enabled = bool(self.options.get("admin_access_enabled", True))  # DRAAdminAccess: on
        pod_informer = ctx.informers.informer_for(self.pods)
        self.pod_lister = pod_informer.lister()
        self.pod_indexer = pod_informer.indexer
        if not self.pod_indexer.has_index(POD_RESOURCE_CLAIM_INDEX):
            pod_informer.add_indexers({POD_RESOURCE_CLAIM_INDEX: pod_resource_claim_keys})
        pod_informer.add_event_handler(
            on_add=lambda pod: self._enqueue_pod(pod, deleted=False),
            on_update=lambda _old, pod: self._enqueue_pod(pod, deleted=False),
            on_delete=lambda pod: self._enqueue_pod(pod, deleted=True),
        )
        claim_informer = ctx.informers.informer_for(self.claims)
        self.claim_lister = claim_informer.lister()
        self.claim_indexer = claim_informer.indexer
        if not self.claim_indexer.has_index(CLAIM_POD_OWNER_INDEX):
            claim_informer.add_indexers({CLAIM_POD_OWNER_INDEX: claim_pod_owner_keys})
        claim_informer.add_event_handler(
            on_add=lambda claim: self._enqueue_claim(claim, deleted=False),
            on_update=lambda _old, claim: self._enqueue_claim(claim, deleted=False),
            on_delete=lambda claim: self._enqueue_claim(claim, deleted=True),
        )
        self.template_lister = ctx.informers.informer_for(self.templates).lister()
        self._deleted: OrderedDict[str, None] = OrderedDict()
        self._created: dict[str, tuple[float, Obj]] = {}
        """The mutation cache: claims this controller created, by ``namespace/name``, until the informer has them."""

    # --- events --------------------------------------------------------------------------------------------

    def _remember_deleted(self, uid: str) -> None:
        self._deleted[uid] = None
        self._deleted.move_to_end(uid)
        while len(self._deleted) > MAX_UID_CACHE_ENTRIES:
            self._deleted.popitem(last=False)

    def _enqueue_pod(self, pod: Obj, *, deleted: bool) -> None:
        """``enqueuePod``: a pod done with its claims queues them (their reservations go); a pod that needs a
        claim created or reserved is queued itself."""
        extended = status_of(pod).get("extendedResourceClaimStatus")
        if not _pod_claims(pod) and not extended:
            return
        if deleted:
            self._remember_deleted(str(meta_of(pod).get("uid") or ""))
        needs_claims, _reason = pod_needs_claims(pod, deleted)
        if not needs_claims:
            namespace = meta_of(pod).get("namespace") or ""
            for name, _check in pod_claim_names(pod):
                self.enqueue_key(f"{CLAIM_KEY_PREFIX}{namespace}/{name}")
        needs_work, reason = self._pod_needs_work(pod)
        if needs_work:
            log.debug("enqueueing pod %s: %s", meta_of(pod).get("name"), reason)
            self.enqueue_key(f"{POD_KEY_PREFIX}{meta_of(pod).get('namespace') or ''}/{meta_of(pod).get('name')}")

    def _pod_needs_work(self, pod: Obj) -> tuple[bool, str]:
        """``podNeedsWork``."""
        if meta_of(pod).get("deletionTimestamp"):
            return False, "pod is deleted"
        if is_pod_terminal(pod):  # kubernetes/kubernetes#141276 (for #141274): a terminal pod only gets cleanup
            return False, "pod has terminated"
        namespace = str(meta_of(pod).get("namespace") or "")
        for pod_claim in _pod_claims(pod):
            try:
                name, check_owner = claim_name(pod, pod_claim)
            except ClaimNameError as exc:
                return True, str(exc)
            if name is None:
                return False, "claim is not needed"
            claim = self._get_claim(namespace, name)
            if claim is None:
                if pod_claim.get("resourceClaimTemplateName") is not None:
                    return True, "must create ResourceClaim from template"
                return False, "claim is missing and must be created by user"
            if check_owner and (err := is_for_pod(pod, claim)) is not None:
                return False, err
            if not spec_of(pod).get("nodeName"):
                continue
            if (
                status_of(claim).get("allocation") is not None
                and not is_reserved_for_pod(pod, claim)
                and can_be_reserved(claim)
            ):
                return True, f"need to reserve claim {namespace}/{name} for pod"
        return False, "nothing to do"

    def _enqueue_claim(self, claim: Obj, *, deleted: bool) -> None:
        """``enqueueResourceClaim``: the claim itself (unless deleted), then every known pod using it."""
        meta = meta_of(claim)
        key = f"{meta.get('namespace') or ''}/{meta.get('name')}"
        if not deleted:
            self.enqueue_key(CLAIM_KEY_PREFIX + key)
        for pod in self.pod_indexer.by_index(POD_RESOURCE_CLAIM_INDEX, key):
            self._enqueue_pod(pod, deleted=False)

    # --- the mutation cache --------------------------------------------------------------------------------

    def _get_claim(self, namespace: str, name: str) -> Obj | None:
        found = self.claim_lister.get(namespace, name)
        if found is not None:
            self._created.pop(f"{namespace}/{name}", None)
            return found
        created = self._created.get(f"{namespace}/{name}")
        if created is not None and self.clock.now() - created[0] < MUTATION_TTL:
            return created[1]
        return None

    def _claims_owned_by(self, pod: Obj) -> list[Obj]:
        uid = str(meta_of(pod).get("uid") or "")
        owned = list(self.claim_indexer.by_index(CLAIM_POD_OWNER_INDEX, uid))
        known = {(meta_of(c).get("namespace"), meta_of(c).get("name")) for c in owned}
        now = self.clock.now()
        for when, claim in self._created.values():
            ident = (meta_of(claim).get("namespace"), meta_of(claim).get("name"))
            if now - when < MUTATION_TTL and ident not in known and claim_pod_owner_keys(claim) == [uid]:
                owned.append(claim)
        return owned

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """``syncHandler``."""
        prefix, sep, rest = key.partition(":")
        if not sep:
            raise ValueError(f"unexpected key: {key}")
        namespace, name = split_key(rest)
        if prefix + ":" == POD_KEY_PREFIX:
            await self._sync_pod(namespace, name)
        elif prefix + ":" == CLAIM_KEY_PREFIX:
            await self._sync_claim(namespace, name)
        else:
            raise ValueError(f"unexpected key prefix: {prefix}:")

    async def _sync_pod(self, namespace: str, name: str) -> None:
        """``syncPod``."""
        pod = self.pod_lister.get(namespace, name)
        if pod is None or meta_of(pod).get("deletionTimestamp"):
            return
        if is_pod_terminal(pod):  # #141276: claims of a terminal pod are neither recreated nor reserved
            return
        new_pod_claims: dict[str, str] = {}
        for pod_claim in _pod_claims(pod):
            try:
                await self._handle_claim(pod, pod_claim, new_pod_claims)
            except Exception as exc:
                await self.recorder.event(
                    pod, "Warning", "FailedResourceClaimCreation", f"PodResourceClaim {pod_claim.get('name')}: {exc}"
                )
                raise RuntimeError(f"pod {namespace}/{name}, PodResourceClaim {pod_claim.get('name')}: {exc}") from exc
        if new_pod_claims:
            statuses = [{"name": k, "resourceClaimName": v} for k, v in new_pod_claims.items()]
            try:
                await self.client.patch(
                    self.pods,
                    name,
                    {"status": {"resourceClaimStatuses": statuses}},
                    patch_type=PatchType.STRATEGIC,
                    namespace=namespace,
                    subresource="status",
                )
            except Exception as exc:
                raise RuntimeError(f"update pod {namespace}/{name} ResourceClaimStatuses: {exc}") from exc
        if not spec_of(pod).get("nodeName"):
            return  # the scheduler deals with reservations
        for pod_claim in _pod_claims(pod):
            claim_ref, check_owner = claim_name(pod, pod_claim)
            if claim_ref is None:
                continue
            claim = self._get_claim(namespace, claim_ref)
            if claim is None:
                return
            if check_owner and (err := is_for_pod(pod, claim)) is not None:
                raise RuntimeError(err)
            if (
                status_of(claim).get("allocation") is not None
                and not is_reserved_for_pod(pod, claim)
                and can_be_reserved(claim)
            ):
                await self._reserve_for_pod(pod, claim)

    async def _handle_claim(self, pod: Obj, pod_claim: Mapping[str, Any], new_pod_claims: dict[str, str]) -> None:
        """``handleClaim``: raises with upstream's wording on failure."""
        namespace = str(meta_of(pod).get("namespace") or "")
        try:
            name, must_check_owner = claim_name(pod, pod_claim)
        except ClaimNameError as exc:
            if not exc.not_found:
                raise RuntimeError(f"checking for claim before creating it: {exc}") from exc
        else:
            if name is None:
                return
            existing = self._get_claim(namespace, name)
            if existing is not None:
                if not must_check_owner or is_for_pod(pod, existing) is None:
                    return
                log.info(
                    "claim %s/%s created for the pod is no longer owned by it, creating a new one", namespace, name
                )
        template_name = pod_claim.get("resourceClaimTemplateName")
        if template_name is None:
            return
        claim = self._find_pod_resource_claim(pod, pod_claim)
        if claim is None:
            template = self.template_lister.get(namespace, str(template_name))
            if template is None:
                raise RuntimeError(
                    f'resource claim template "{template_name}": resourceclaimtemplate.resource.k8s.io '
                    f'"{template_name}" not found'
                )
            if not self.admin_access_enabled and needs_admin_access(template):
                raise RuntimeError("admin access is requested, but the feature is disabled")
            wanted = claim_from_template(pod, pod_claim, template, POD_RESOURCE_CLAIM_ANNOTATION)
            try:
                claim = await self.client.create(self.claims, wanted, namespace=namespace)
            except Exception as exc:
                raise RuntimeError(f"create ResourceClaim {meta_of(wanted).get('name', '')}: {exc}") from exc
            self._created[f"{namespace}/{meta_of(claim).get('name')}"] = (self.clock.now(), claim)
        new_pod_claims[str(pod_claim.get("name"))] = str(meta_of(claim).get("name"))

    def _find_pod_resource_claim(self, pod: Obj, pod_claim: Mapping[str, Any]) -> Obj | None:
        """``findPodResourceClaim``: a claim controlled by the pod and annotated with this pod claim's name."""
        for claim in self._claims_owned_by(pod):
            annotations = meta_of(claim).get("annotations") or {}
            if annotations.get(POD_RESOURCE_CLAIM_ANNOTATION) == pod_claim.get("name"):
                return claim
        return None

    async def _reserve_for_pod(self, pod: Obj, claim: Obj) -> None:
        """``reserveForPod``: an update (not a patch), so a concurrent change makes it fail and retry."""
        pm = meta_of(pod)
        entry = {"resource": "pods", "name": pm.get("name"), "uid": pm.get("uid")}
        status = {**status_of(claim), "reservedFor": [*reserved_for(claim), entry]}
        try:
            await self.client.update(
                self.claims,
                {**claim, "status": status},
                namespace=meta_of(claim).get("namespace"),
                subresource="status",
            )
        except Exception as exc:
            cm = meta_of(claim)
            raise RuntimeError(f"reserve claim {cm.get('namespace')}/{cm.get('name')} for pod: {exc}") from exc

    async def _sync_claim(self, namespace: str, name: str) -> None:
        """``syncClaim``."""
        claim = self.claim_lister.get(namespace, name)
        if claim is None:
            return
        valid = [entry for entry in reserved_for(claim) if await self._keep_reservation(claim, entry)]
        finalizers = [str(f) for f in meta_of(claim).get("finalizers") or ()]
        protected = DELETE_PROTECTION_FINALIZER in finalizers
        if len(valid) < len(reserved_for(claim)):
            status: dict[str, Any] = {**status_of(claim), "reservedFor": valid}
            if not valid:
                status.pop("reservedFor")
                if protected:
                    status.pop("allocation", None)  # allocated by the scheduler: deallocate by clearing it
            claim = await self.client.update(
                self.claims, {**claim, "status": status}, namespace=namespace, subresource="status"
            )
            await self._drop_finalizer_if_unallocated(claim)
        elif protected and meta_of(claim).get("deletionTimestamp") and not valid:
            if status_of(claim).get("allocation") is not None:
                status = {k: v for k, v in status_of(claim).items() if k != "allocation"}
                claim = await self.client.update(
                    self.claims, {**claim, "status": status}, namespace=namespace, subresource="status"
                )
            await self._drop_finalizer_if_unallocated(claim, force=True)
        if not valid:
            await self._delete_if_owner_done(claim)

    async def _drop_finalizer_if_unallocated(self, claim: Obj, *, force: bool = False) -> None:
        finalizers = [str(f) for f in meta_of(claim).get("finalizers") or ()]
        if DELETE_PROTECTION_FINALIZER in finalizers and (force or status_of(claim).get("allocation") is None):
            finalizers.remove(DELETE_PROTECTION_FINALIZER)
            meta = {**meta_of(claim), "finalizers": finalizers}
            await self.client.update(self.claims, {**claim, "metadata": meta}, namespace=meta.get("namespace"))

    async def _keep_reservation(self, claim: Obj, entry: Mapping[str, Any]) -> bool:
        """A ``reservedFor`` entry stays while its pod may still run; non-pod consumers are not supported."""
        if entry.get("apiGroup") or entry.get("resource") != "pods":
            raise RuntimeError(f"unsupported ReservedFor entry: {dict(entry)}")
        uid = str(entry.get("uid") or "")
        if uid in self._deleted:
            return False
        namespace = str(meta_of(claim).get("namespace") or "")
        pod = self.pod_lister.get(namespace, str(entry.get("name") or ""))
        if pod is None:
            try:  # not in the cache yet? only the API server can say the pod is gone
                pod = await self.client.get(self.pods, str(entry.get("name") or ""), namespace=namespace)
            except NotFoundError:
                return False
            return meta_of(pod).get("uid") == uid
        return meta_of(pod).get("uid") == uid and not is_pod_done(pod)

    async def _delete_if_owner_done(self, claim: Obj) -> None:
        """An unreserved claim generated for a pod that is done (or was replaced) is deleted."""
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        namespace = str(meta_of(claim).get("namespace") or "")
        pod = self.pod_lister.get(namespace, pod_name)
        if pod is None:
            return  # perhaps not known *yet*: the garbage collector handles a pod that is truly gone
        if meta_of(pod).get("uid") != pod_uid or is_pod_done(pod):
            try:
                await self.client.delete(self.claims, str(meta_of(claim).get("name")), namespace=namespace)
            except NotFoundError:
                return
            except Exception as exc:
                raise RuntimeError(f"delete claim {namespace}/{meta_of(claim).get('name')}: {exc}") from exc
