"""CustomResourceDefinitions served, and the custom resources they define (apiextensions-apiserver in-process).

* :class:`CRDStrategy`: the CRD kind (registry/customresourcedefinition/strategy.go): v1 defaults, validation
  (:mod:`kubeplane.api.crd.definition`), ``status.storedVersions`` started with the storage version on create
  and grown when the storage version changes, generation on spec changes, status split.
* :class:`CustomResourceStrategy`: one per served version (registry/customresource/strategy.go), with that
  version's schema: pruning and defaulting (upstream's request decoder for the version), validation with
  kube-openapi's messages and CEL rules (:mod:`kubeplane.api.crd.values`), generation, the status split when the
  version has the status subresource. A write at any version is stored in the storage version and answered as
  read back (:mod:`.conversion`: the stored version's defaults, the ``None`` conversion, the read version's
  pruning), as upstream's CRD storage codec answers it.
* :class:`CRDController`: what upstream runs as the naming, establishing and finalizer controllers, run here in
  the API server process, because what it changes is the server's own resource table: names accepted (conflicts
  with other CRDs of the group refused, ``NamesAccepted``), the versions registered in the table (served by the
  generic registry, listed by discovery and OpenAPI), ``Established``; on deletion (``deletionTimestamp`` set by
  the CRD's delete, with the finalizer ``customresourcecleanup.apiextensions.k8s.io``) every custom resource is
  deleted, the versions unregistered, then the finalizer removed. Work is queued by CRD name from the CRD
  strategy's write hooks, and at start for every stored CRD (restarts serve what is stored: the accepted ones
  are registered before the server answers).

"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from kubeplane.api import meta as apimeta
from kubeplane.api.crd import definition, values
from kubeplane.api.crd import prune as crdprune
from kubeplane.api.crd.resource import CRD_FINALIZER, CustomResourceInfo, resources_for, storage_version
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.smd import structural
from kubeplane.api.validation.field import ErrorList

from . import errors
from .strategies import Finish, Obj, Strategy
from .watchcache import WatchCache, decode

if TYPE_CHECKING:
    from .registry import Registry

log = logging.getLogger("kubeplane.apiserver")

GROUP = "apiextensions.k8s.io"
__all__ = ["CRDController", "CRDStrategy", "CustomResourceStrategy", "controller_of", "start", "stop"]


# -- the CRD kind -----------------------------------------------------------------------------------------------


class CRDStrategy(Strategy):
    def prepare_for_create(self, obj: Obj) -> None:
        definition.default_crd(obj)
        obj["metadata"]["generation"] = 1
        stored = storage_version(obj)
        obj["status"] = {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": [stored] if stored else []}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        definition.default_crd(new)
        super().prepare_for_update(new, old)
        stored = storage_version(new)
        status = new.setdefault("status", {"acceptedNames": {"plural": "", "kind": ""}})
        versions = list(status.get("storedVersions") or [])
        if stored and stored not in versions:
            status["storedVersions"] = [*versions, stored]

    def validate(self, obj: Obj) -> ErrorList:
        return definition.validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj) -> ErrorList:
        return definition.validate_crd_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> ErrorList:
        return definition.validate_crd_status_update(new, old)

    async def begin_create(self, registry: Registry, obj: Obj, *, dry_run: bool) -> Finish | None:
        return _enqueue_after(registry, obj, dry_run)

    async def begin_update(self, registry: Registry, new: Obj, old: Obj, *, dry_run: bool) -> Finish | None:
        return _enqueue_after(registry, new, dry_run)

    async def after_delete(self, registry: Registry, obj: Obj) -> None:
        controller_of(registry).enqueue(str(obj["metadata"]["name"]))


def _enqueue_after(registry: Registry, obj: Obj, dry_run: bool) -> Finish | None:
    if dry_run:
        return None
    name = str(obj["metadata"].get("name") or "")

    async def finish(stored: bool) -> None:
        if stored:
            controller_of(registry).enqueue(name)

    return finish


async def delete_crd(registry: Registry, info: ResourceInfo, name: str, *, dry_run: bool) -> Obj | None:
    """Upstream's CRD ``Delete`` (registry/customresourcedefinition/etcd.go): the first delete sets
    ``deletionTimestamp``, adds the cleanup finalizer and the ``Terminating`` condition, and leaves the rest to
    the finalizer controller. None when the CRD is already being deleted (the generic delete goes on)."""
    current = registry.get_cached(info, None, name)
    if current is None or current["metadata"].get("deletionTimestamp"):
        return None

    def mark(obj: Obj) -> Obj:
        meta = obj["metadata"]
        meta.setdefault("deletionTimestamp", apimeta.format_time(registry.now()))
        meta["deletionGracePeriodSeconds"] = 0
        finalizers = list(meta.get("finalizers") or [])
        if CRD_FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, CRD_FINALIZER]
        _set_condition(
            registry,
            obj,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        )
        return obj

    return await _write_status_and_meta(registry, info, name, mark, dry_run=dry_run)


async def _write_status_and_meta(
    registry: Registry, info: ResourceInfo, name: str, change: Any, *, dry_run: bool = False
) -> Obj:
    """A write that may change metadata and status at once (the storage layer's GuaranteedUpdate, as upstream's
    delete and finalizer do), bypassing the strategies' status split."""
    from .registry import MAX_RETRIES
    from .watchcache import encode

    key = info.key(name)
    for _ in range(MAX_RETRIES):
        kv = await registry.store.get(key)
        if kv is None:
            raise errors.not_found(info.group, info.plural, name)
        old = decode(kv)
        new = change(decode(kv))
        if dry_run:
            return registry._with_type(info, new)
        if registry.strategy(info).should_delete_during_update(new):
            try:
                await registry.store.delete(key, expected_mod_revision=kv.mod_revision)
            except Exception:
                continue
            controller_of(registry).enqueue(name)
            return registry._with_type(info, new)
        if new == old:
            return registry._with_type(info, new)
        try:
            stored = await registry.store.update(key, encode(new), expected_mod_revision=kv.mod_revision)
        except Exception:
            continue
        new["metadata"]["resourceVersion"] = str(stored.mod_revision)
        controller_of(registry).enqueue(name)
        return registry._with_type(info, new)
    raise errors.conflict(info.group, info.plural, name, "too many concurrent updates; try again")


def _set_condition(registry: Registry, crd: Obj, ctype: str, status: str, reason: str, message: str) -> None:
    """``SetCRDCondition``: lastTransitionTime moves only when the status does."""
    st = crd.setdefault("status", {})
    conditions = [c for c in st.get("conditions") or [] if isinstance(c, dict)]
    now = apimeta.format_time(registry.now())
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message)
            break
    else:
        conditions.append(
            {"type": ctype, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
        )
    st["conditions"] = conditions


# -- custom resources -------------------------------------------------------------------------------------------


class CustomResourceStrategy(Strategy):
    """One served version of a CRD with its own ``schema`` (upstream ``NewStrategy`` per version)."""

    def __init__(self, info: CustomResourceInfo, schema: Mapping[str, Any]) -> None:
        super().__init__(info)
        self.schema = schema
        self.tracks_generation = True

    def _shape(self, obj: Obj) -> None:
        pruned, _ = crdprune.prune(obj, self.schema)
        crdprune.apply_defaults(pruned, self.schema)
        obj.clear()
        obj.update(pruned)

    def prepare_for_create(self, obj: Obj) -> None:
        self._shape(obj)
        super().prepare_for_create(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self._shape(new)
        super().prepare_for_update(new, old)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        self._shape(new)
        super().prepare_for_status_update(new, old)

    def validate(self, obj: Obj) -> ErrorList:
        return values.validate_resource(obj, self.schema)

    def validate_update(self, new: Obj, old: Obj) -> ErrorList:
        return values.validate_resource(new, self.schema, old)

    def validate_status_update(self, new: Obj, old: Obj) -> ErrorList:
        return values.validate_resource(new, self.schema, old)


def _without_meta(obj: Obj) -> Obj:
    """The object as validated against its schema: ``metadata`` is ObjectMeta's, validated generically."""
    return {k: v for k, v in obj.items() if k != "metadata"}


# -- the controller ---------------------------------------------------------------------------------------------


def controller_of(registry: Registry) -> CRDController:
    controller = getattr(registry, "_crd_controller", None)
    if controller is None:
        controller = CRDController(registry)
        registry._crd_controller = controller  # type: ignore[attr-defined]
    assert isinstance(controller, CRDController)
    return controller


async def start(registry: Registry) -> None:
    """Register every stored CRD's accepted versions, then start the controller (called by Registry.start)."""
    await controller_of(registry).start()


async def stop(registry: Registry) -> None:
    await controller_of(registry).stop()


class CRDController:
    """Names, registration, establishment and cleanup of CRDs, one CRD name at a time from a queue."""

    RETRY_SECONDS = 0.5

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.info = registry.resource(GROUP, "customresourcedefinitions")
        self.registered: dict[str, list[CustomResourceInfo]] = {}
        self._fingerprints: dict[str, bytes] = {}
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._retries: set[asyncio.TimerHandle] = set()

    def enqueue(self, name: str) -> None:
        self._queue.put_nowait(name)

    async def start(self) -> None:
        cache = self.registry.cache(self.info)
        cache.sync()
        for key, obj in list(cache.items(self.info.collection_key())):
            del key
            if _accepted(obj) and not obj["metadata"].get("deletionTimestamp"):
                await self._register(obj)
            self.enqueue(str(obj["metadata"]["name"]))
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        for handle in self._retries:
            handle.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            name = await self._queue.get()
            try:
                done = await self.sync(name)
            except Exception:  # the controller must survive anything one CRD does
                log.exception("CRD controller: syncing %s failed", name)
                done = False
            if not done:
                loop = asyncio.get_running_loop()
                handle = loop.call_later(self.RETRY_SECONDS, self.enqueue, name)
                self._retries.add(handle)
                self._retries = {h for h in self._retries if not h.cancelled() and h.when() > loop.time()} | {handle}

    async def sync(self, name: str) -> bool:
        """One reconciliation; False to be retried (custom resources still being deleted)."""
        crd = await self.registry.get_live(self.info, None, name)
        if crd is None:
            await self._unregister(name)
            return True
        if crd["metadata"].get("deletionTimestamp"):
            return await self._finalize(crd)
        crd = await self._accept_names(crd)
        if not _accepted(crd):
            return True
        await self._register(crd)
        if not definition.is_established(crd):
            await self._status(
                name,
                lambda obj: _set_condition(
                    self.registry,
                    obj,
                    "Established",
                    "True",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                ),
            )
        return True

    async def _status(self, name: str, change: Any) -> Obj:
        def transform(obj: Obj) -> Obj:
            change(obj)
            return obj

        return await self.registry.guaranteed_update(self.info, None, name, transform, subresource="status")

    async def _accept_names(self, crd: Obj) -> Obj:
        """The naming controller: accepted names are the spec's unless another CRD of the group uses one."""
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        conflict = self._conflict(crd, names)
        status = crd.get("status") or {}
        accepted = status.get("acceptedNames") or {}

        def apply(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            if conflict is None:
                st["acceptedNames"] = names
                _set_condition(self.registry, obj, "NamesAccepted", "True", "NoConflicts", "no conflicts found")
                if not definition.is_established(obj):
                    _set_condition(
                        self.registry, obj, "Established", "False", "Installing", "the initial names have been accepted"
                    )
            else:
                reason, message = conflict
                _set_condition(self.registry, obj, "NamesAccepted", "False", reason, message)
                if not any(c.get("type") == "Established" for c in st.get("conditions") or []):
                    _set_condition(
                        self.registry, obj, "Established", "False", "NotAccepted", "not all names are accepted"
                    )

        if conflict is None and accepted == names and _condition(crd, "NamesAccepted") == "True":
            return crd
        return await self._status(str(crd["metadata"]["name"]), apply)

    def _conflict(self, crd: Obj, names: Mapping[str, Any]) -> tuple[str, str] | None:
        group = (crd.get("spec") or {}).get("group")
        me = crd["metadata"]["name"]
        cache = self.registry.cache(self.info)
        cache.sync()
        taken: dict[str, set[str]] = {"plural": set(), "singular": set(), "short": set(), "kind": set(), "list": set()}
        for _, other in cache.items(self.info.collection_key()):
            if other["metadata"]["name"] == me or (other.get("spec") or {}).get("group") != group:
                continue
            acc = (other.get("status") or {}).get("acceptedNames") or {}
            taken["plural"].add(acc.get("plural", ""))
            taken["singular"].add(acc.get("singular", ""))
            taken["short"].update(acc.get("shortNames") or ())
            taken["kind"].add(acc.get("kind", ""))
            taken["list"].add(acc.get("listKind", ""))
        every = taken["plural"] | taken["singular"] | taken["short"]
        if names.get("plural") in every:
            return "PluralConflict", f'"{names["plural"]}" is already in use'
        if names.get("singular") in every:
            return "SingularConflict", f'"{names["singular"]}" is already in use'
        for short in names.get("shortNames") or ():
            if short in every:
                return "ShortNamesConflict", f'"{short}" is already in use'
        kinds = taken["kind"] | taken["list"]
        if names.get("kind") in kinds:
            return "KindConflict", f'"{names["kind"]}" is already in use'
        if names.get("listKind") in kinds:
            return "ListKindConflict", f'"{names["listKind"]}" is already in use'
        return None

    async def _register(self, crd: Obj) -> None:
        name = str(crd["metadata"]["name"])
        infos = resources_for(crd)
        # what serving depends on: the spec (schemas, columns, subresources, versions) and the accepted names
        fingerprint = orjson.dumps([crd.get("spec"), (crd.get("status") or {}).get("acceptedNames")])
        if self._fingerprints.get(name) == fingerprint and all(
            self.registry.table.get(i.group, i.version, i.plural) is i for i in self.registered.get(name, [])
        ):
            return
        await self._unregister(name, keep_caches=True)
        self._fingerprints[name] = fingerprint
        for info in infos:
            if self.registry.table.get(info.group, info.version, info.plural) is not None:
                log.warning("CRD %s: %s %s is already served; not registered", name, info.group_resource, info.version)
                continue
            self.registry.table.register(info)
            prefix = info.collection_key()
            if prefix not in self.registry.caches:
                cache = WatchCache(
                    store=self.registry.store, prefix=prefix, watch_buffer=self.registry.cache_watch_buffer
                )
                self.registry.caches[prefix] = cache
                await cache.start()
            self.registry.custom_strategies[(info.group, info.version, info.plural)] = CustomResourceStrategy(
                info, info.schema
            )
            structural.register(self._owner(name), info.group, info.version, info.kind, info.schema)
        self.registered[name] = infos

    def _owner(self, name: str) -> str:
        """Who registers a CRD's apply types: this server's registry and the CRD (tests run several servers
        in one process)."""
        return f"{id(self.registry)}/{name}"

    async def _unregister(self, name: str, *, keep_caches: bool = False) -> None:
        self._fingerprints.pop(name, None)
        structural.unregister(self._owner(name))
        for info in self.registered.pop(name, []):
            self.registry.table.unregister(info.group, info.version, info.plural)
            self.registry.custom_strategies.pop((info.group, info.version, info.plural), None)
            prefix = info.collection_key()
            still_used = any(r.collection_key() == prefix for r in self.registry.table)
            if not keep_caches and not still_used and prefix in self.registry.caches:
                await self.registry.caches.pop(prefix).stop()

    async def _finalize(self, crd: Obj) -> bool:
        """The finalizer controller: delete every custom resource, then release the CRD."""
        name = str(crd["metadata"]["name"])
        if CRD_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            return True
        from .deletion import DeleteOptions, delete_object

        infos = self.registered.get(name) or resources_for(crd)
        remaining = 0
        if infos:
            info = self.registry.table.get(infos[0].group, infos[0].version, infos[0].plural) or infos[0]
            prefix = info.collection_key()
            for kv in (await self.registry.store.range(prefix)).kvs:
                obj = decode(kv)
                meta = obj["metadata"]
                remaining += 1
                if meta.get("deletionTimestamp"):
                    continue
                with contextlib.suppress(errors.APIError):
                    await delete_object(self.registry, info, meta.get("namespace"), meta["name"], DeleteOptions())
            remaining = len((await self.registry.store.range(prefix)).kvs)
        if remaining:
            await _write_status_and_meta(
                self.registry,
                self.info,
                name,
                lambda obj: _set_condition(
                    self.registry,
                    obj,
                    "Terminating",
                    "True",
                    "InstanceDeletionInProgress",
                    f"CustomResource deletion is in progress: {remaining} remaining",
                ),
            )
            return False
        await self._unregister(name)

        def release(obj: Obj) -> Obj:
            _set_condition(
                self.registry, obj, "Terminating", "True", "InstanceDeletionCompleted", "removed all instances"
            )
            meta = obj["metadata"]
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != CRD_FINALIZER]
            if not meta["finalizers"]:
                del meta["finalizers"]
            return obj

        with contextlib.suppress(errors.APIError):
            await _write_status_and_meta(self.registry, self.info, name, release)
        return True


def _accepted(crd: Mapping[str, Any]) -> bool:
    return _condition(crd, "NamesAccepted") == "True"


def _condition(crd: Mapping[str, Any], ctype: str) -> str:
    for c in (crd.get("status") or {}).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return str(c.get("status"))
    return ""
