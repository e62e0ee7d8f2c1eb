"""The garbage collector: deletes objects whose owners are gone, and carries out cascading deletion (upstream
``pkg/controller/garbagecollector``).

The graph
    One informer per monitored resource feeds an in-memory graph of ``metadata.ownerReferences``: a node per
    UID, holding its owners (the references as the object states them) and its dependents (nodes whose
    references name its UID). A reference to a UID no informer has shown creates a *virtual* node for the owner,
    with the coordinates the reference gives; virtual nodes are verified with a live GET (upstream's "virtual"
    node check) and removed by a *virtual delete* when the owner does not exist or has another UID. Graph
    updates happen synchronously inside the informer handlers, so they are atomic on the event loop (upstream's
    ``processGraphChanges`` queue has no job here).

Monitored resources
    What :func:`monitored_resources` returns: every resource of the client's resource table that supports
    ``delete``, ``list`` and ``watch`` (upstream ``GetDeletableResources``), minus :data:`IGNORED_RESOURCES`
    (upstream ``DefaultIgnoredResources``: core and ``events.k8s.io`` events), one per storage prefix (two API
    groups serving the same stored objects would make two nodes of one UID). On the built-in table that is:
    namespaces, nodes, pods, configmaps, secrets, services, serviceaccounts, endpoints, persistentvolumes,
    persistentvolumeclaims, replicationcontrollers, deployments, replicasets, daemonsets, statefulsets, leases,
    priorityclasses, poddisruptionbudgets, storageclasses, csinodes, roles, clusterroles, rolebindings and
    clusterrolebindings. ``options["garbagecollector"]["resources"]`` (resource names) replaces the list.

Work items
    The base class's one work queue carries two kinds of key: ``delete:<uid>`` (upstream ``attemptToDelete``)
    and ``orphan:<uid>`` (``attemptToOrphan``). Nodes are looked up by UID when a key is processed, so a key
    always acts on the current graph.

Behaviour (upstream's, in its order)
    * **Background**: a dependent whose owners are all *dangling* (not found, or found with another UID --
      always checked with a live GET or the absent-owner cache, never from the informers alone) is deleted with
      propagationPolicy Background (Orphan or Foreground if the dependent already carries that finalizer),
      with a UID precondition. A dependent with a solid owner only loses its dangling references.
    * **Foreground**: an owner with ``deletionTimestamp`` and the ``foregroundDeletion`` finalizer is
      *deleting dependents*: its dependents are deleted (with Foreground when they have dependents
      themselves), and once no dependent with ``blockOwnerDeletion: true`` remains in the graph the finalizer
      is removed, so the API server deletes the owner.
    * **Orphan**: an owner with ``deletionTimestamp`` and the ``orphan`` finalizer has its reference removed
      from every dependent, then the finalizer removed.

Restart safety: nothing but caches lives in memory. A restarted collector lists everything again; add
events for owners already being deleted replay the foreground/orphan transitions, and references to owners
deleted while it was down become virtual nodes whose live GET finds them gone.

Left out: the periodic resync of monitors against discovery (the table is read once at construction),
``OwnerRefInvalidNamespace`` events, the graph dump endpoint, metrics, and the "bad child -> good parent"
identity-mismatch repair beyond queueing the dependents that disagree.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kubeplane.api.resources import ResourceInfo, ResourceTable, default_table
from kubeplane.api.views import section
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.controllers.base import Controller, ControllerContext

__all__ = [
    "IGNORED_RESOURCES",
    "GarbageCollector",
    "ObjectIdentity",
    "monitored_resources",
    "resource_table",
]

log = logging.getLogger(__name__)

FINALIZER_ORPHAN = "orphan"
"""``metav1.FinalizerOrphanDependents``."""
FINALIZER_FOREGROUND = "foregroundDeletion"
"""``metav1.FinalizerDeleteDependents``."""

IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})
"""(group, plural) never monitored (upstream ``DefaultIgnoredResources``): events are many, short-lived and
never owners."""

ABSENT_OWNER_CACHE_SIZE = 500
"""Upstream's ``absentOwnerCache`` size."""

_DELETE, _ORPHAN = "delete:", "orphan:"


def resource_table(client: Client) -> ResourceTable:
    """The resource table ``client`` serves from: ``HTTPClient.table``, ``LocalClient.registry.table``, else the
    built-in table. (The Client protocol has no accessor for it; this is the one place that looks.)"""
    for holder in (client, getattr(client, "registry", None)):
        table = getattr(holder, "table", None)
        if isinstance(table, ResourceTable):
            return table
    return default_table()


def monitored_resources(client: Client, names: Iterable[str] | None = None) -> list[ResourceInfo]:
    """The resources the collector watches (see the module docstring): ``names`` resolved through ``client``, or
    every deletable/listable/watchable resource of its table minus :data:`IGNORED_RESOURCES`, one per storage
    prefix, in table order."""
    if names is not None:
        candidates = [client.resource(n) for n in names]
    else:
        candidates = [
            r
            for r in resource_table(client)
            if {"delete", "list", "watch"} <= set(r.verbs) and (r.group, r.plural) not in IGNORED_RESOURCES
        ]
    seen: set[str] = set()
    out: list[ResourceInfo] = []
    for info in candidates:
        if info.storage_prefix not in seen:
            seen.add(info.storage_prefix)
            out.append(info)
    return out


@dataclass(frozen=True, slots=True)
class ObjectIdentity:
    """An object's coordinates (upstream ``objectReference``: an owner reference plus a namespace)."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    @classmethod
    def of_reference(cls, ref: Mapping[str, Any], namespace: str) -> ObjectIdentity:
        return cls(
            str(ref.get("apiVersion") or ""),
            str(ref.get("kind") or ""),
            str(ref.get("name") or ""),
            str(ref.get("uid") or ""),
            namespace,
        )

    def __str__(self) -> str:
        ns = f"Namespace={self.namespace}, " if self.namespace else ""
        return f"[{self.api_version}/{self.kind}, {ns}Name={self.name}, UID={self.uid}]"


@dataclass(eq=False)
class _Node:
    """One object in the graph. ``virtual`` until an informer shows the object (upstream ``!isObserved``)."""

    identity: ObjectIdentity
    owners: list[Mapping[str, Any]] = field(default_factory=list)
    dependents: set[str] = field(default_factory=set)  # UIDs
    being_deleted: bool = False
    deleting_dependents: bool = False
    virtual: bool = False
    resource: ResourceInfo | None = None
    refs_seen: Any = None
    """The ``metadata.ownerReferences`` value ``owners`` was last read from: an update carrying the very same
    (unchanged, shared read-only) list has the same owners, so a Lease renewal is judged without a comparison."""

    def blocking_dependents(self, graph: Mapping[str, _Node]) -> list[_Node]:
        """Dependents whose reference to this node has ``blockOwnerDeletion: true`` (upstream
        ``blockingDependents``)."""
        out = []
        for uid in self.dependents:
            dep = graph.get(uid)
            if dep is None:
                continue
            if any(r.get("uid") == self.identity.uid and r.get("blockOwnerDeletion") is True for r in dep.owners):
                out.append(dep)
        return out


def _owner_refs(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs = section(obj, "metadata").get("ownerReferences") or []
    return [r for r in refs if isinstance(r, Mapping) and r.get("uid")]


def _being_deleted(obj: Mapping[str, Any] | None) -> bool:
    return obj is not None and bool(section(obj, "metadata").get("deletionTimestamp"))


def _has_finalizer(obj: Mapping[str, Any] | None, finalizer: str) -> bool:
    return obj is not None and finalizer in (section(obj, "metadata").get("finalizers") or [])


def starts_waiting_for_dependents(old: Mapping[str, Any] | None, new: Mapping[str, Any], finalizer: str) -> bool:
    """Whether ``new`` just began deleting with ``finalizer`` (upstream ``startsWaitingForDependentsOrphaned``
    / ``...Deleted``); ``old`` None (a first sighting, e.g. after a restart) counts as a transition."""
    if not (_being_deleted(new) and _has_finalizer(new, finalizer)):
        return False
    return not (_being_deleted(old) and _has_finalizer(old, finalizer))


def references_diffs(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[tuple[Mapping[str, Any], Mapping[str, Any]]]]:
    """(added, removed, changed (old, new)) owner references, matched by UID (upstream ``referencesDiffs``)."""
    old_by_uid = {str(r["uid"]): r for r in old}
    new_by_uid = {str(r["uid"]): r for r in new}
    added = [r for uid, r in new_by_uid.items() if uid not in old_by_uid]
    removed = [r for uid, r in old_by_uid.items() if uid not in new_by_uid]
    changed = [(old_by_uid[uid], r) for uid, r in new_by_uid.items() if uid in old_by_uid and old_by_uid[uid] != r]
    return added, removed, changed


class _Requeue(Exception):
    """Look at the key again with backoff (upstream ``requeueItem`` without an error)."""


class _NamespacedOwnerOfClusterScopedError(Exception):
    """Cluster-scoped objects cannot refer to namespaced owners; retrying cannot help (upstream
    ``namespacedOwnerOfClusterScopedObjectErr``)."""


class GarbageCollector(Controller):
    """See the module docstring."""

    name: ClassVar[str] = "garbagecollector"
    workers: ClassVar[int] = 20  # upstream --concurrent-gc-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.graph: dict[str, _Node] = {}
        self._absent_owners: OrderedDict[ObjectIdentity, None] = OrderedDict()
        names = self.options.get("resources")
        self.resources = monitored_resources(self.client, names)
        for info in self.resources:
            informer = ctx.informers.informer_for(info)
            informer.add_event_handler(
                on_add=lambda obj, info=info: self._observe(info, None, obj),
                on_update=lambda old, new, info=info: self._observe(info, old, new),
                on_delete=lambda obj, info=info: self._observe_delete(info, obj),
            )

    # --- queue -----------------------------------------------------------------------------------------

    def _attempt_to_delete(self, node: _Node) -> None:
        self.enqueue_key(_DELETE + node.identity.uid)

    def _attempt_to_orphan(self, node: _Node) -> None:
        self.enqueue_key(_ORPHAN + node.identity.uid)

    # --- the graph (upstream GraphBuilder.processGraphChanges) -----------------------------------------

    @staticmethod
    def _identity(info: ResourceInfo, obj: Mapping[str, Any]) -> ObjectIdentity:
        meta = section(obj, "metadata")
        return ObjectIdentity(
            info.api_version, info.kind, str(meta.get("name") or ""), str(meta.get("uid") or ""),
            str(meta.get("namespace") or ""),
        )  # fmt: skip

    def _observe(self, info: ResourceInfo, old: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> None:
        """An add or update from an informer."""
        if old is not None and self._unchanged(info, obj):
            return
        identity = self._identity(info, obj)
        if not identity.uid:
            return
        node = self.graph.get(identity.uid)
        if node is not None and node.virtual:
            if node.identity != identity:
                # dependents that named this owner by other coordinates may be wrong: let them be re-checked
                for dep_uid in node.dependents:
                    dep = self.graph.get(dep_uid)
                    if dep is not None and not self._refers_as(dep, identity):
                        self._attempt_to_delete(dep)
                node.identity = identity
            node.virtual = False
        refs = _owner_refs(obj)
        refs_seen = section(obj, "metadata").get("ownerReferences")
        if node is None:
            node = _Node(
                identity=identity,
                owners=refs,
                being_deleted=_being_deleted(obj),
                deleting_dependents=_being_deleted(obj) and _has_finalizer(obj, FINALIZER_FOREGROUND),
                resource=info,
            )
            node.refs_seen = refs_seen
            self.graph[identity.uid] = node
            self._add_dependent_to_owners(node, refs)
        else:
            node.resource = info
            node.refs_seen = refs_seen
            added, removed, changed = references_diffs(node.owners, refs)
            if added or removed or changed:
                self._add_unblocked_owners_to_delete_queue(removed, changed)
                node.owners = refs
                self._add_dependent_to_owners(node, added)
                self._remove_dependent_from_owners(node, removed)
            if _being_deleted(obj):
                node.being_deleted = True
        self._process_transitions(old, obj, node)

    def _unchanged(self, info: ResourceInfo, obj: Mapping[str, Any]) -> bool:
        """Whether an update of ``obj`` changes nothing the graph holds: a known, real node of the same resource,
        not being deleted, with the same owner references (upstream's ``referencesDiffs`` empty and no deletion
        transition; a Lease renewal, a status write)."""
        meta = section(obj, "metadata")
        node = self.graph.get(str(meta.get("uid") or ""))
        if (
            node is None
            or node.virtual
            or node.resource is not info
            or node.being_deleted
            or meta.get("deletionTimestamp")
            or node.identity.name != meta.get("name")
        ):
            return False
        refs = meta.get("ownerReferences")
        if refs is node.refs_seen:
            return True
        if _owner_refs(obj) != node.owners:
            return False
        node.refs_seen = refs  # the same owners: the writer's next update likely carries this very list
        return True

    @staticmethod
    def _refers_as(dep: _Node, identity: ObjectIdentity) -> bool:
        for ref in dep.owners:
            if ref.get("uid") == identity.uid:
                return ObjectIdentity.of_reference(ref, identity.namespace) == identity
        return False

    def _add_dependent_to_owners(self, node: _Node, refs: Iterable[Mapping[str, Any]]) -> None:
        """Link ``node`` under each owner, creating (and queueing for verification) virtual owners."""
        for ref in refs:
            uid = str(ref["uid"])
            owner = self.graph.get(uid)
            if owner is None:
                owner = _Node(identity=ObjectIdentity.of_reference(ref, node.identity.namespace), virtual=True)
                self.graph[uid] = owner
                self._attempt_to_delete(owner)
            owner.dependents.add(node.identity.uid)

    def _remove_dependent_from_owners(self, node: _Node, refs: Iterable[Mapping[str, Any]]) -> None:
        for ref in refs:
            owner = self.graph.get(str(ref["uid"]))
            if owner is not None:
                owner.dependents.discard(node.identity.uid)

    def _add_unblocked_owners_to_delete_queue(
        self, removed: list[Mapping[str, Any]], changed: list[tuple[Mapping[str, Any], Mapping[str, Any]]]
    ) -> None:
        """Owners deleting their dependents may be unblocked by a removed or unblocked reference."""
        for ref in removed:
            if ref.get("blockOwnerDeletion") is True:
                owner = self.graph.get(str(ref["uid"]))
                if owner is not None:
                    self._attempt_to_delete(owner)
        for old_ref, new_ref in changed:
            if old_ref.get("blockOwnerDeletion") is True and new_ref.get("blockOwnerDeletion") is not True:
                owner = self.graph.get(str(new_ref["uid"]))
                if owner is not None:
                    self._attempt_to_delete(owner)

    def _process_transitions(self, old: Mapping[str, Any] | None, new: Mapping[str, Any], node: _Node) -> None:
        if starts_waiting_for_dependents(old, new, FINALIZER_ORPHAN):
            self._attempt_to_orphan(node)
            return
        if starts_waiting_for_dependents(old, new, FINALIZER_FOREGROUND):
            node.deleting_dependents = True
            node.being_deleted = True
            for dep_uid in node.dependents:
                dep = self.graph.get(dep_uid)
                if dep is not None:
                    self._attempt_to_delete(dep)
            self._attempt_to_delete(node)

    def _observe_delete(self, info: ResourceInfo, obj: Mapping[str, Any]) -> None:
        """A delete from an informer."""
        identity = self._identity(info, obj)
        node = self.graph.get(identity.uid)
        if node is not None:
            self._remove_node(node, identity)

    def _virtual_delete(self, identity: ObjectIdentity) -> None:
        """The live API says ``identity`` does not exist (upstream's virtual delete event)."""
        node = self.graph.get(identity.uid)
        if node is None:
            return
        if node.identity == identity or node.virtual:
            matching = [d for d in self._dependents(node) if self._refers_as(d, identity)]
            if node.virtual and len(matching) < len(node.dependents):
                # some dependents name this UID with other coordinates: keep the node for them
                self._mark_absent(identity)
                for dep in matching:
                    self._attempt_to_delete(dep)
                if node.identity == identity:
                    other = next((d for d in self._dependents(node) if d not in matching), None)
                    ref = next((r for r in other.owners if r.get("uid") == identity.uid), None) if other else None
                    if ref is not None and other is not None:
                        node.identity = ObjectIdentity.of_reference(ref, other.identity.namespace)
                        self.queue.add_rate_limited(_DELETE + identity.uid)
                return
            self._remove_node(node, identity)
            return
        # an observed node with other coordinates: the absent object is not this one
        self._mark_absent(identity)
        for dep in self._dependents(node):
            if self._refers_as(dep, identity):
                self._attempt_to_delete(dep)

    def _dependents(self, node: _Node) -> list[_Node]:
        return [d for d in (self.graph.get(uid) for uid in node.dependents) if d is not None]

    def _remove_node(self, node: _Node, identity: ObjectIdentity) -> None:
        """Drop ``node``; its dependents are re-checked and owners deleting dependents may now finish."""
        self.graph.pop(node.identity.uid, None)
        self._remove_dependent_from_owners(node, node.owners)
        if node.dependents:
            self._mark_absent(identity)
        for dep in self._dependents(node):
            self._attempt_to_delete(dep)
        for ref in node.owners:
            owner = self.graph.get(str(ref["uid"]))
            if owner is not None and owner.deleting_dependents:
                self._attempt_to_delete(owner)

    # --- absent owner cache --------------------------------------------------------------------------------

    def _mark_absent(self, identity: ObjectIdentity) -> None:
        self._absent_owners[identity] = None
        self._absent_owners.move_to_end(identity)
        while len(self._absent_owners) > ABSENT_OWNER_CACHE_SIZE:
            self._absent_owners.popitem(last=False)

    def _known_absent(self, identity: ObjectIdentity) -> bool:
        if identity in self._absent_owners:
            self._absent_owners.move_to_end(identity)
            return True
        return False

    # --- API access ----------------------------------------------------------------------------------------

    def _resource_of(self, node_or_identity: _Node | ObjectIdentity) -> ResourceInfo:
        """The resource serving an identity (upstream's REST mapping); raises KeyError for unknown kinds."""
        if isinstance(node_or_identity, _Node):
            if node_or_identity.resource is not None:
                return node_or_identity.resource
            identity = node_or_identity.identity
        else:
            identity = node_or_identity
        group = identity.api_version.rpartition("/")[0] if "/" in identity.api_version else ""
        info = self.client.resource(f"{identity.kind}.{group}" if group else identity.kind)
        if info.group != group or info.kind != identity.kind:
            raise KeyError(f"unable to map {identity.api_version}/{identity.kind} to a served resource")
        return info

    async def _get(self, info: ResourceInfo, identity: ObjectIdentity) -> Obj:
        namespace = identity.namespace if info.namespaced else None
        return await self.client.get(info, identity.name, namespace=namespace)

    async def _latest(self, info: ResourceInfo, node: _Node) -> Obj | None:
        """The live object of ``node``; None when it is gone or was replaced by another with the same name."""
        try:
            latest = await self._get(info, node.identity)
        except NotFoundError:
            return None
        return latest if section(latest, "metadata").get("uid") == node.identity.uid else None

    async def _patch_refs(self, node: _Node, remove_uids: set[str]) -> None:
        """Remove the references to ``remove_uids`` from ``node``'s object (a JSON merge patch pinned to the
        resourceVersion read, as upstream's ``deleteOwnerRefJSONMergePatch``); gone objects are skipped."""
        info = self._resource_of(node)
        latest = await self._latest(info, node)
        if latest is None:
            return
        refs = [r for r in section(latest, "metadata").get("ownerReferences") or [] if r.get("uid") not in remove_uids]
        if len(refs) == len(section(latest, "metadata").get("ownerReferences") or []):
            return
        patch = {
            "metadata": {
                "ownerReferences": refs or None,
                "resourceVersion": section(latest, "metadata")["resourceVersion"],
            }
        }
        namespace = node.identity.namespace if info.namespaced else None
        try:
            await self.client.patch(info, node.identity.name, patch, patch_type=PatchType.MERGE, namespace=namespace)
        except NotFoundError:
            return

    async def _remove_finalizer(self, node: _Node, finalizer: str) -> None:
        """Remove ``finalizer`` from the owner, retrying conflicts a few times (upstream ``removeFinalizer``)."""
        info = self._resource_of(node)
        namespace = node.identity.namespace if info.namespaced else None
        for _ in range(5):  # retry.DefaultBackoff steps
            latest = await self._latest(info, node)
            if latest is None:
                return
            finalizers = list(section(latest, "metadata").get("finalizers") or [])
            if finalizer not in finalizers:
                return
            remaining = [f for f in finalizers if f != finalizer]
            patch = {
                "metadata": {
                    "finalizers": remaining or None,
                    "resourceVersion": section(latest, "metadata")["resourceVersion"],
                }
            }
            try:
                await self.client.patch(info, node.identity.name, patch, namespace=namespace)
                return
            except NotFoundError:
                return
            except ConflictError:
                continue
        raise _Requeue(f"updateMaxRetries(5) has reached. The garbage collector will retry later for owner {node}")

    async def _delete(self, node: _Node, policy: str) -> None:
        info = self._resource_of(node)
        namespace = node.identity.namespace if info.namespaced else None
        log.info("garbagecollector: deleting %s with propagationPolicy %s", node.identity, policy)
        try:
            await self.client.delete(
                info,
                node.identity.name,
                namespace=namespace,
                propagation_policy=policy,
                preconditions={"uid": node.identity.uid},
            )
        except NotFoundError:
            return

    # --- workers -------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        if key.startswith(_ORPHAN):
            node = self.graph.get(key[len(_ORPHAN) :])
            if node is not None:
                await self._attempt_to_orphan_item(node)
            return
        node = self.graph.get(key.removeprefix(_DELETE))
        if node is None:
            return  # deleted (really or virtually) since it was queued
        await self._attempt_to_delete_item(node)
        if node.virtual and self.graph.get(node.identity.uid) is node:
            # not yet seen by an informer: keep checking, so a virtual node never sticks (upstream #56121)
            raise _Requeue(f"item {node.identity} hasn't been observed via informer yet")

    async def _attempt_to_orphan_item(self, owner: _Node) -> None:
        """Remove ``owner``'s reference from every dependent, then its ``orphan`` finalizer."""
        errors = []
        for dep in self._dependents(owner):
            try:
                await self._patch_refs(dep, {owner.identity.uid})
            except Exception as exc:
                errors.append(f"orphaning {dep.identity} failed, {exc}")
        if errors:
            raise _Requeue(f"failed to orphan dependents of owner {owner.identity}, got errors: {'; '.join(errors)}")
        await self._remove_finalizer(owner, FINALIZER_ORPHAN)

    async def _attempt_to_delete_item(self, item: _Node) -> None:
        """Upstream ``attemptToDeleteItem``: delete ``item`` iff its live object has only dangling owners (or
        owners deleting dependents), finish an owner whose dependents are gone, verify virtual nodes."""
        if item.being_deleted and not item.deleting_dependents:
            return  # a one-way trip: its final deletion will re-queue what depends on it
        try:
            info = self._resource_of(item)
        except KeyError as exc:
            raise _Requeue(str(exc)) from None
        latest = await self._latest(info, item)
        if latest is None:
            self._virtual_delete(item.identity)
            return
        if item.deleting_dependents:
            await self._process_deleting_dependents(item)
            return
        refs = _owner_refs(latest)
        if not refs:
            return
        classified = await self._classify_references(item, refs)
        if classified is None:
            return  # a cluster-scoped object naming a namespaced owner: retrying cannot help
        solid, dangling, waiting = classified
        if solid:
            if dangling or waiting:
                await self._patch_refs(item, {str(r["uid"]) for r in (*dangling, *waiting)})
            return
        if waiting and item.dependents:
            for dep in self._dependents(item):
                if dep.deleting_dependents:
                    # a possible cycle: make this item's references non-blocking before deleting it in foreground
                    await self._unblock_owner_references(item)
                    break
            await self._delete(item, "Foreground")
            return
        if _has_finalizer(latest, FINALIZER_ORPHAN):
            policy = "Orphan"
        elif _has_finalizer(latest, FINALIZER_FOREGROUND):
            policy = "Foreground"
        else:
            policy = "Background"
        await self._delete(item, policy)

    async def _process_deleting_dependents(self, item: _Node) -> None:
        """An owner deleting its dependents: done (finalizer removed) when no blocking dependent is left in the
        graph, else its blocking dependents that are not deleting dependents themselves are queued."""
        blocking = item.blocking_dependents(self.graph)
        if not blocking:
            await self._remove_finalizer(item, FINALIZER_FOREGROUND)
            return
        for dep in blocking:
            if not dep.deleting_dependents:
                self._attempt_to_delete(dep)

    async def _unblock_owner_references(self, item: _Node) -> None:
        info = self._resource_of(item)
        latest = await self._get(info, item.identity)
        refs = [
            {**r, "blockOwnerDeletion": False} if r.get("blockOwnerDeletion") is True else dict(r)
            for r in section(latest, "metadata").get("ownerReferences") or []
        ]
        patch = {
            "metadata": {"ownerReferences": refs, "resourceVersion": section(latest, "metadata")["resourceVersion"]}
        }
        namespace = item.identity.namespace if info.namespaced else None
        await self.client.patch(info, item.identity.name, patch, namespace=namespace)

    async def _classify_references(
        self, item: _Node, refs: list[Mapping[str, Any]]
    ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[Mapping[str, Any]]] | None:
        """(solid, dangling, waiting for dependents deletion), each owner checked live (upstream
        ``classifyReferences``/``isDangling``); None if ``item`` is cluster-scoped and names a namespaced owner."""
        solid: list[Mapping[str, Any]] = []
        dangling: list[Mapping[str, Any]] = []
        waiting: list[Mapping[str, Any]] = []
        for ref in refs:
            try:
                owner = await self._live_owner(item, ref)
            except _NamespacedOwnerOfClusterScopedError:
                log.info("garbagecollector: %s is cluster-scoped, but refers to a namespaced owner %s", item, ref)
                return None
            if owner is None:
                dangling.append(ref)
            elif _being_deleted(owner) and _has_finalizer(owner, FINALIZER_FOREGROUND):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _live_owner(self, item: _Node, ref: Mapping[str, Any]) -> Obj | None:
        """The owner's live object, None when it is dangling (absent or another UID)."""
        cluster_key = ObjectIdentity.of_reference(ref, "")
        namespaced_key = ObjectIdentity.of_reference(ref, item.identity.namespace)
        if self._known_absent(cluster_key) or self._known_absent(namespaced_key):
            return None
        try:
            info = self._resource_of(cluster_key)
        except KeyError as exc:
            raise _Requeue(str(exc)) from None
        if info.namespaced and not item.identity.namespace:
            raise _NamespacedOwnerOfClusterScopedError
        key = namespaced_key if info.namespaced else cluster_key
        try:
            owner = await self._get(info, key)
        except NotFoundError:
            self._mark_absent(key)
            return None
        if section(owner, "metadata").get("uid") != key.uid:
            self._mark_absent(key)
            return None
        return owner
