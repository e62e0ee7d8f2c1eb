"""The namespace controller: empties a deleted namespace, then releases its ``kubernetes`` finalizer (upstream
``pkg/controller/namespace`` and its ``deletion`` package).

A namespace with ``deletionTimestamp`` is looked at 5 s after each event (upstream
``namespaceDeletionGracePeriod``: HA API servers and etcd members catch up on last-minute creations first).
Each sync, on the *live* namespace:

1. Gone, or not being deleted: nothing to do. Phase not ``Terminating``: set it through ``status``.
2. ``spec.finalizers`` empty: finalized already, nothing to do.
3. Every namespaced resource of the client's resource table that supports ``delete`` is emptied: each object
   deleted with propagationPolicy Background (the Client protocol has no deletecollection, so this is
   upstream's per-item fallback), then listed again. Pods give an estimate, the longest
   ``terminationGracePeriodSeconds`` of non-terminal pods unless that long has passed since the namespace's
   deletion; objects held by finalizers give 15 s; objects left with neither are an error (retried).
4. The conditions ``NamespaceDeletionDiscoveryFailure``, ``NamespaceDeletionGroupVersionParsingFailure``,
   ``NamespaceDeletionContentFailure``, ``NamespaceContentRemaining`` and ``NamespaceFinalizersRemaining`` are
   brought up to date with upstream's reasons and messages (written through ``status`` only when they
   changed; a failed write is logged, not retried).
5. Content remains: look again after ``estimate / 2 + 1`` seconds. Errors: retry with backoff (5 ms doubling,
   capped at 60 s as upstream's ``nsControllerRateLimiter``). Otherwise ``kubernetes`` is removed from
   ``spec.finalizers`` through ``namespaces/<name>/finalize`` and the API server deletes the namespace.

Restart safety: every decision is made from the live namespace and live lists; a restarted controller sees
the terminating namespace in its first list and starts over, which is idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kubeplane.api import meta as apimeta
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import is_being_deleted, is_pod_terminal, meta_of, spec_of, status_of
from kubeplane.client.errors import APIStatusError, ConflictError, NotFoundError
from kubeplane.client.flowcontrol import TokenBucketConfig
from kubeplane.client.interface import Obj
from kubeplane.client.workqueue import (
    BucketRateLimiter,
    ExponentialBackoffConfig,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
)
from kubeplane.controllers.base import Controller, ControllerContext
from kubeplane.controllers.garbagecollector import resource_table

__all__ = [
    "CONDITION_TYPES",
    "FINALIZER_KUBERNETES",
    "ContentTotals",
    "NamespaceController",
    "ResourcesRemainingError",
    "deletion_conditions",
    "update_conditions",
]

log = logging.getLogger(__name__)

FINALIZER_KUBERNETES = "kubernetes"
"""``v1.FinalizerKubernetes``: the token this controller owns in ``spec.finalizers``."""
NAMESPACE_DELETION_GRACE_PERIOD = 5.0
FINALIZER_ESTIMATE_SECONDS = 15
"""Assumed wait for objects held by finalizers (upstream ``finalizerEstimateSeconds``)."""

CONDITION_TYPES: tuple[str, ...] = (
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
)
_OK_MESSAGES = {
    "NamespaceDeletionDiscoveryFailure": "All resources successfully discovered",
    "NamespaceDeletionGroupVersionParsingFailure": "All legacy kube types successfully parsed",
    "NamespaceDeletionContentFailure": "All content successfully deleted, may be waiting on finalization",
    "NamespaceContentRemaining": "All content successfully removed",
    "NamespaceFinalizersRemaining": "All content successfully removed",
}
_OK_REASONS = {
    "NamespaceDeletionDiscoveryFailure": "ResourcesDiscovered",
    "NamespaceDeletionGroupVersionParsingFailure": "ParsedGroupVersions",
    "NamespaceDeletionContentFailure": "ContentDeleted",
    "NamespaceContentRemaining": "ContentRemoved",
    "NamespaceFinalizersRemaining": "ContentRemoved",
}


class ResourcesRemainingError(Exception):
    """Content remains; look again after ``estimate / 2 + 1`` seconds (upstream's error of that name)."""

    def __init__(self, estimate: int) -> None:
        self.estimate = estimate
        super().__init__(f"some content remains in the namespace, estimate {estimate} seconds before it is removed")


class _ContentRemainsError(Exception):
    """Objects without finalizers outlived their estimate: an error that still counts what remains."""

    def __init__(self, message: str, estimate: int, remaining: int) -> None:
        super().__init__(message)
        self.estimate, self.remaining = estimate, remaining


@dataclass
class ContentTotals:
    """What remains after one pass: instances per resource (``plural.group``) and per finalizer."""

    by_resource: dict[str, int] = field(default_factory=dict)
    by_finalizer: dict[str, int] = field(default_factory=dict)


def _gvr(info: ResourceInfo) -> str:
    """Go's ``GroupVersionResource.String()``, which upstream's error messages print."""
    return f"{info.group}/{info.version}, Resource={info.plural}"


def deletion_conditions(
    totals: ContentTotals, content_errors: list[str], now: str, *, discovery_error: str | None = None
) -> list[dict[str, Any]]:
    """The failing conditions of one pass (upstream ``namespaceConditionUpdater``); types not listed are ok."""
    out: list[dict[str, Any]] = []

    def add(ctype: str, reason: str, message: str) -> None:
        out.append({"type": ctype, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message})

    if discovery_error is not None:
        add("NamespaceDeletionDiscoveryFailure", "DiscoveryFailed", discovery_error)
    remaining = sorted(f"{r} has {n} resource instances" for r, n in totals.by_resource.items() if n)
    if remaining:
        add("NamespaceContentRemaining", "SomeResourcesRemain", f"Some resources are remaining: {', '.join(remaining)}")
    by_finalizer = sorted(f"{f} in {n} resource instances" for f, n in totals.by_finalizer.items() if n)
    if by_finalizer:
        add(
            "NamespaceFinalizersRemaining",
            "SomeFinalizerRemain",
            f"Some finalizers are remaining: {', '.join(by_finalizer)}",
        )
    if content_errors:
        msgs = sorted(content_errors)
        add(
            "NamespaceDeletionContentFailure",
            "ContentDeletionFailed",
            f"Failed to delete all resource types, {len(msgs)} remaining: {', '.join(msgs)}",
        )
    return out


def update_conditions(status: dict[str, Any], new: list[dict[str, Any]], now: str) -> bool:
    """Bring ``status.conditions`` in line with ``new`` (the ok variant for every type not in it); True if
    anything changed. ``lastTransitionTime`` moves only when a status flips (upstream ``updateConditions``)."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    changed = False
    for ctype in CONDITION_TYPES:
        want = next((c for c in new if c["type"] == ctype), None) or {
            "type": ctype,
            "status": "False",
            "lastTransitionTime": now,
            "reason": _OK_REASONS[ctype],
            "message": _OK_MESSAGES[ctype],
        }
        have = next((c for c in conditions if c.get("type") == ctype), None)
        if have is None:
            conditions.append(dict(want))
            changed = True
        elif any(have.get(k) != want[k] for k in ("status", "message", "reason")):
            if have.get("status") != want["status"]:
                have["lastTransitionTime"] = now
            have.update(status=want["status"], reason=want["reason"], message=want["message"])
            changed = True
    return changed


def namespace_rate_limiter(clock: Any) -> MaxOfRateLimiter[Hashable]:
    """Upstream ``nsControllerRateLimiter``: per item 5 ms doubling to 60 s (a namespace is retried at least
    every minute), overall 10 qps / burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter[Hashable](ExponentialBackoffConfig(base_delay=0.005, max_delay=60.0)),
        BucketRateLimiter(clock=clock, config=TokenBucketConfig(qps=10.0, burst=100)),
    )


class NamespaceController(Controller):
    """See the module docstring. Options: ``deletion_grace_period`` (seconds, default 5)."""

    name: ClassVar[str] = "namespace"
    workers: ClassVar[int] = 10  # upstream --concurrent-namespace-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.queue = RateLimitingQueue(clock=ctx.clock, rate_limiter=namespace_rate_limiter(ctx.clock))
        self.grace = float(self.options.get("deletion_grace_period", NAMESPACE_DELETION_GRACE_PERIOD))
        self.namespaces = ctx.client.resource("namespaces")
        self.pods = ctx.client.resource("pods")
        informer = ctx.informers.informer_for(self.namespaces)
        self.lister = informer.lister()
        informer.add_event_handler(on_add=self._on_namespace, on_update=lambda _old, new: self._on_namespace(new))

    def _on_namespace(self, ns: Mapping[str, Any]) -> None:
        if meta_of(ns).get("deletionTimestamp"):
            self.enqueue_after(ns, self.grace)

    def deletable_resources(self) -> list[ResourceInfo]:
        """Namespaced resources that support ``delete`` (upstream filters discovery the same way), each at its
        first version (``ServerPreferredNamespacedResources``: one version per group and resource, so v1beta1
        PodGroups, not their v1alpha3 view of the same objects too)."""
        out: dict[tuple[str, str], ResourceInfo] = {}
        for r in resource_table(self.client):
            if r.namespaced and "delete" in r.verbs:
                out.setdefault((r.group, r.plural), r)
        return list(out.values())

    async def sync(self, key: str) -> None:
        if self.lister.get(None, key) is None:
            log.info("Namespace has been deleted: %s", key)
            return
        try:
            await self.delete(key)
        except ResourcesRemainingError as remaining:
            wait = remaining.estimate // 2 + 1
            log.info("Content remaining in namespace %s, waiting %d seconds", key, wait)
            self.enqueue_after(key, float(wait))

    async def delete(self, name: str) -> None:
        """Upstream ``namespacedResourcesDeleter.Delete``; raises :class:`ResourcesRemainingError` to wait."""
        try:
            ns = await self.client.get(self.namespaces, name)
        except NotFoundError:
            return
        if not is_being_deleted(ns):
            return
        try:
            ns = await self._retry_on_conflict(ns, self._ensure_terminating)
        except NotFoundError:
            return
        if not is_being_deleted(ns):
            return
        if not spec_of(ns).get("finalizers"):
            return  # finalized already
        estimate = await self.delete_all_content(ns)
        if estimate > 0:
            raise ResourcesRemainingError(estimate)
        try:
            await self._retry_on_conflict(ns, self._finalize)
        except NotFoundError:
            return

    async def _retry_on_conflict(self, ns: Obj, fn: Any) -> Obj:
        """Run ``fn(ns)``; on a conflict re-read and run again, refusing a namespace whose UID changed."""
        latest = ns
        while True:
            try:
                result: Obj = await fn(latest)
                return result
            except ConflictError:
                previous = latest
                latest = await self.client.get(self.namespaces, previous["metadata"]["name"])
                if meta_of(latest).get("uid") != meta_of(previous).get("uid"):
                    raise RuntimeError("namespace uid has changed across retries") from None

    async def _ensure_terminating(self, ns: Obj) -> Obj:
        if status_of(ns).get("phase") == "Terminating":
            return ns
        updated = {**ns, "status": {**(ns.get("status") or {}), "phase": "Terminating"}}
        return await self.client.update(self.namespaces, updated, subresource="status")

    async def _finalize(self, ns: Obj) -> Obj:
        """Remove our token from ``spec.finalizers`` through ``namespaces/<name>/finalize``."""
        remaining = sorted({f for f in spec_of(ns).get("finalizers") or [] if f != FINALIZER_KUBERNETES})
        body = {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": remaining}}
        try:
            return await self.client.update(self.namespaces, body, subresource="finalize")
        except NotFoundError:
            return ns

    async def delete_all_content(self, ns: Obj) -> int:
        """Delete everything in ``ns``; the estimate of seconds until what remains is gone (0: nothing left).
        Updates the deletion conditions; raises if any resource could not be emptied."""
        name = ns["metadata"]["name"]
        deleted_at = apimeta.parse_time(ns["metadata"]["deletionTimestamp"]).timestamp()
        errors: list[str] = []
        totals = ContentTotals()
        estimate = 0
        for info in self.deletable_resources():
            try:
                gvr_estimate, remaining, finalizers = await self._delete_all_of(info, name, deleted_at)
            except _ContentRemainsError as exc:  # counted, and an error: retried with backoff
                errors.append(str(exc))
                gvr_estimate, remaining, finalizers = exc.estimate, exc.remaining, {}
            except Exception as exc:  # hold on to it and carry on with the other resources, as upstream
                errors.append(str(exc))
                continue
            estimate = max(estimate, gvr_estimate)
            if remaining:
                totals.by_resource[f"{info.plural}.{info.group}"] = remaining
                for finalizer, count in finalizers.items():
                    totals.by_finalizer[finalizer] = totals.by_finalizer.get(finalizer, 0) + count
        now = apimeta.format_time(self.clock.now())
        status = dict(ns.get("status") or {})
        status["conditions"] = [dict(c) for c in status.get("conditions") or []]
        if update_conditions(status, deletion_conditions(totals, errors, now), now):
            await self._write_conditions(ns, status)
        if errors:
            raise RuntimeError("; ".join(errors))
        return estimate

    async def _write_conditions(self, ns: Obj, status: dict[str, Any]) -> None:
        name = ns["metadata"]["name"]
        try:
            await self.client.update(self.namespaces, {**ns, "status": status}, subresource="status")
        except Exception as exc:
            log.warning("couldn't update status condition for namespace %r: %s", name, exc)

    async def _delete_all_of(
        self, info: ResourceInfo, namespace: str, deleted_at: float
    ) -> tuple[int, int, dict[str, int]]:
        """Upstream ``deleteAllContentForGroupVersionResource``: (estimate, instances left, finalizer counts)."""
        estimate = await self._estimate_graceful_termination(info, namespace, deleted_at)
        await self._delete_each_item(info, namespace)
        items = await self._list(info, namespace)
        if items is None:
            return estimate, 0, {}  # cannot be listed: nothing to verify
        if not items:
            return 0, 0, {}
        finalizers: dict[str, int] = {}
        for item in items:
            for finalizer in meta_of(item).get("finalizers") or []:
                finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
        if estimate:
            return estimate, len(items), finalizers
        if finalizers:
            return FINALIZER_ESTIMATE_SECONDS, len(items), finalizers
        raise _ContentRemainsError(
            f"unexpected items still remain in namespace: {namespace} for gvr: {_gvr(info)}", estimate, len(items)
        )

    async def _list(self, info: ResourceInfo, namespace: str) -> list[Obj] | None:
        """The objects of ``info`` in ``namespace``; None if the resource cannot be listed (404/405)."""
        if "list" not in info.verbs:
            return None
        try:
            listed = await self.client.list(info, namespace=namespace)
        except APIStatusError as exc:
            if exc.code in (404, 405):
                return None
            raise
        items: list[Obj] = listed.get("items") or []
        return items

    async def _delete_each_item(self, info: ResourceInfo, namespace: str) -> None:
        for item in await self._list(info, namespace) or []:
            try:
                await self.client.delete(
                    info, item["metadata"]["name"], namespace=namespace, propagation_policy="Background"
                )
            except APIStatusError as exc:
                if exc.code not in (404, 405):
                    raise

    async def _estimate_graceful_termination(self, info: ResourceInfo, namespace: str, deleted_at: float) -> int:
        """Pods: the longest grace period of non-terminal pods, 0 once that long has passed since the namespace
        was deleted; other resources: 0."""
        if (info.group, info.plural) != ("", "pods"):
            return 0
        estimate = 0
        for pod in (await self.client.list(self.pods, namespace=namespace)).get("items") or []:
            if is_pod_terminal(pod):
                continue
            grace = spec_of(pod).get("terminationGracePeriodSeconds")
            if isinstance(grace, int) and grace > estimate:
                estimate = grace
        return 0 if self.clock.now() - deleted_at >= estimate else estimate
