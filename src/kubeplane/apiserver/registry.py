"""The generic registry: Kubernetes REST semantics for every resource of the table, over one Store.

One code path serves every kind (upstream's ``genericregistry.Store``); per-kind behaviour comes from
:mod:`kubeplane.apiserver.strategies`, defaulting from :mod:`kubeplane.api.defaults`, admission from
:mod:`kubeplane.apiserver.admission`. Objects are plain dicts in wire format. Invariants:

* The store keeps each object without ``resourceVersion``; every object returned carries the store revision
  of its last change as its resourceVersion (decimal string).
* Reads without a resourceVersion are consistent: served from the resource's watch cache after
  :meth:`WatchCache.sync`, so a client always reads its own writes.
* Updates are compare-and-put on the mod revision read; a stale client resourceVersion is 409 Conflict, a
  race with another writer without client precondition is retried (GuaranteedUpdate).
* Objects handed out may be shared with the cache: callers must not mutate them (writes copy first).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import orjson

from kubeplane.api import defaults as apidefaults
from kubeplane.api import meta as apimeta
from kubeplane.api.crd.resource import CustomResourceInfo
from kubeplane.api.resources import ResourceInfo, ResourceTable, default_table
from kubeplane.api.validation.field import Error as FieldError
from kubeplane.api.validation.field import ErrorList, Path, invalid, new_path
from kubeplane.store.interface import Conflict, KeyExists, Store

from . import admission, conversion, errors, fieldmanager, offload
from .auth.authorizer import AlwaysAllow, Authorizer
from .service_alloc import DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_CIDR, ServiceAllocators
from .strategies import Strategy, strategy_for
from .tokens import TokenIssuer
from .watchcache import CACHE_WATCH_BUFFER, Obj, WatchCache, decode, encode

MAX_RETRIES = 16
BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
BOOTSTRAP_PRIORITY_CLASSES = (("system-node-critical", 2000001000), ("system-cluster-critical", 2000000000))


def deep_copy(obj: Obj) -> Obj:
    result: Obj = orjson.loads(orjson.dumps(obj))
    return result


class Registry:
    def __init__(
        self,
        *,
        store: Store,
        table: ResourceTable | None = None,
        now: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        service_cidr: str = DEFAULT_SERVICE_CIDR,
        node_port_range: str = DEFAULT_NODE_PORT_RANGE,
        token_issuer: TokenIssuer | None = None,
        service_account_admission: bool = False,
        cache_watch_buffer: int = CACHE_WATCH_BUFFER,
    ) -> None:
        """``token_issuer``: signs and verifies ServiceAccount tokens (None: a key in memory on first use).
        ``service_account_admission``: run the ServiceAccount admission plugin on pod creates (on in
        ``kubeplane apiserver`` and ``up``; off for registries built in-process, as upstream's test servers run
        without it, since nothing creates the ``default`` ServiceAccount there). ``cache_watch_buffer``: the
        buffer of each watch cache's store watch (tests make it small to overflow it)."""
        self.store = store
        self.token_issuer = token_issuer
        self.service_account_admission = service_account_admission
        self.cache_watch_buffer = cache_watch_buffer
        self.authorizer: Authorizer = AlwaysAllow()
        """Who may do what (``--authorization-mode``): the server sets it (``auth.modes.build_authorizer``) when it
        authenticates requests; the transports ask it for every request that has a user."""
        self.table = table or default_table()
        self.now = now
        self.rng = rng or random.Random()
        self.service_allocators = ServiceAllocators(
            store, service_cidr=service_cidr, node_port_range=node_port_range, rng=self.rng, now=now
        )
        self.caches: dict[str, WatchCache] = {}
        self.strategies: dict[tuple[str, str], Strategy] = {}
        self.custom_strategies: dict[tuple[str, str, str], Strategy] = {}
        """Custom resources' strategies by (group, version, plural): each version has its schema (apiserver/crds.py)."""
        for info in self.table:
            prefix = info.collection_key()
            if prefix not in self.caches:
                self.caches[prefix] = WatchCache(store=store, prefix=prefix, watch_buffer=cache_watch_buffer)
            strategy = self.strategies[(info.group, info.plural)] = strategy_for(info)
            strategy.now = now

    async def start(self) -> None:
        for cache in self.caches.values():
            await cache.start()
        from .services import repair_allocations  # services builds on this module

        await repair_allocations(self)
        await self._bootstrap()
        from . import crds  # crds builds on this module

        await crds.start(self)

    async def stop(self) -> None:
        from . import crds

        await crds.stop(self)
        for cache in list(self.caches.values()):
            await cache.stop()

    def strategy(self, info: ResourceInfo) -> Strategy:
        custom = self.custom_strategies.get((info.group, info.version, info.plural))
        return custom if custom is not None else self.strategies[(info.group, info.plural)]

    def cache(self, info: ResourceInfo) -> WatchCache:
        return self.caches[info.collection_key()]

    def resource(self, group: str, plural: str) -> ResourceInfo:
        for info in self.table:
            if info.group == group and info.plural == plural:
                return info
        raise KeyError(f"{plural}.{group}")

    async def _bootstrap(self) -> None:
        namespaces = self.resource("", "namespaces")
        for name in BOOTSTRAP_NAMESPACES:
            if self.cache(namespaces).objects.get(namespaces.key(name)) is None:
                await self.create(namespaces, None, {"metadata": {"name": name}})
        priority_classes = self.resource("scheduling.k8s.io", "priorityclasses")
        for name, value in BOOTSTRAP_PRIORITY_CLASSES:
            if self.cache(priority_classes).objects.get(priority_classes.key(name)) is None:
                pc = {"metadata": {"name": name}, "value": value, "description": "Used for system critical pods."}
                await self.create(priority_classes, None, pc)

    # -- reads -------------------------------------------------------------------------------------------------

    def get_cached(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        cache = self.cache(info)
        cache.sync()
        return cache.objects.get(info.key(name, namespace))

    async def get_live(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj | None:
        """The object as the store has it now, bypassing the watch cache (which may lag behind the store)."""
        kv = await self.store.get(info.key(name, namespace))
        return None if kv is None else decode(kv)

    async def get(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj:
        obj = self.get_cached(info, namespace, name)
        if not self.cache(info).ready:  # upstream's delegator sends a Get to storage while the cache is not ready
            obj = await self.get_live(info, namespace, name)
        if obj is None:
            raise errors.not_found(info.group, info.plural, name)
        return self._with_type(info, obj)

    def _with_type(self, info: ResourceInfo, obj: Obj) -> Obj:
        """A stored object as ``info`` presents it (custom resources: read through their CRD's schemas)."""
        if conversion.presents(info):
            return conversion.from_storage(info, obj)
        if obj.get("apiVersion") == info.api_version and obj.get("kind") == info.kind:
            return obj
        return {"apiVersion": info.api_version, "kind": info.kind, **obj}

    def storage_resource(self, info: ResourceInfo) -> ResourceInfo:
        """The resource whose form is stored for ``info``: itself, except for cohabiting versions (events.k8s.io
        Events are stored as core Events; a multi-version built-in's versions as its storage version's row). A
        custom resource's versions share one key, each written through its own strategy: itself."""
        if isinstance(info, CustomResourceInfo) or not conversion.converts(info):
            return info
        if info.group == "events.k8s.io":
            return self.resource("", "events")
        return self.table.get(info.group, conversion.storage_version(info), info.plural) or info

    def _written(self, info: CustomResourceInfo, stored: Obj) -> Obj:
        """A custom resource just written, as read back. At the storage version the write already pruned and
        defaulted it with the very schema reading applies, so reading back changes nothing and is skipped."""
        if info.version == info.storage_version or not info.storage_version:
            return stored
        return self._with_type(info, stored)

    @staticmethod
    def _stored(info: ResourceInfo, obj: Obj) -> Obj:
        """``obj`` in the form written to storage: a custom resource in its CRD's storage version."""
        return conversion.stored_custom(info, obj) if isinstance(info, CustomResourceInfo) else obj

    # -- create ------------------------------------------------------------------------------------------------

    def _check_body(self, info: ResourceInfo, namespace: str | None, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request(f"the body of the request was not a {info.kind} object")
        api_version = body.get("apiVersion")
        if api_version not in (None, "", info.api_version):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({info.api_version})"
            )
        kind = body.get("kind")
        if kind not in (None, "", info.kind):
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({info.kind})")
        metadata = body.get("metadata")
        if metadata is None:
            metadata = body["metadata"] = {}
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata: expected an object")
        obj = {"apiVersion": info.api_version, "kind": info.kind, **body}
        if info.namespaced:
            given = metadata.get("namespace")
            if given not in (None, "") and given != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            obj["metadata"] = {**metadata, "namespace": namespace}
        else:
            obj["metadata"] = {k: v for k, v in metadata.items() if k != "namespace"}
        return obj

    def _validate_meta(self, info: ResourceInfo, obj: Obj) -> ErrorList:
        metadata = obj["metadata"]
        path = new_path("metadata")
        errs = apimeta.validate_object_meta_names(metadata, rule=info.name_rule, namespaced=info.namespaced, path=path)
        labels = metadata.get("labels")
        if labels is not None:
            if isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values()):
                errs.extend(apimeta.validate_labels(labels, path.child("labels")))
            else:
                errs.append(_type_error(path.child("labels"), labels, "map of strings"))
        annotations = metadata.get("annotations")
        if annotations is not None:
            if isinstance(annotations, dict) and all(isinstance(v, str) for v in annotations.values()):
                errs.extend(apimeta.validate_annotations(annotations, path.child("annotations")))
            else:
                errs.append(_type_error(path.child("annotations"), annotations, "map of strings"))
        return errs

    async def create(
        self, info: ResourceInfo, namespace: str | None, body: Any, *, dry_run: bool = False, manager: str | None = None
    ) -> Obj:
        """``manager``: the field manager whose Update entry records the created fields (None: not tracked, for
        the server's own objects and for a create-on-apply, whose entries are already set)."""
        if conversion.converts(info):
            storage = self.storage_resource(info)
            stored = conversion.to_storage(info, storage, self._check_body(info, namespace, body))
            return self._with_type(
                info, await self.create(storage, namespace, stored, dry_run=dry_run, manager=manager)
            )
        obj = self._check_body(info, namespace, body)
        metadata = obj["metadata"]
        for system in ("resourceVersion", "uid", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"):
            metadata.pop(system, None)
        metadata["uid"] = apimeta.new_uid(self.rng)
        metadata["creationTimestamp"] = apimeta.format_time(self.now())
        strategy = self.strategy(info)
        await offload.run(_prepare_for_create, strategy, obj)
        if manager is not None:
            await offload.run(lambda: fieldmanager.track_update(info, None, obj, manager, now=self.now()))
        await admission.admit_create(self, info, obj)
        generate = not metadata.get("name") and metadata.get("generateName")
        if generate:
            metadata["name"] = apimeta.generate_name(str(metadata["generateName"]), self.rng)
        finish = await strategy.begin_create(self, obj, dry_run=dry_run)  # upstream BeginCreate (allocations)
        done = False
        try:
            done = await self._validate_and_store(
                info, namespace, obj, strategy, generate=bool(generate), dry_run=dry_run
            )
        finally:
            if finish is not None:
                await finish(done)
        if isinstance(info, CustomResourceInfo):  # the answer is what storage gives back (read form)
            return self._written(info, self._stored(info, obj))
        return obj

    async def _validate_and_store(
        self, info: ResourceInfo, namespace: str | None, obj: Obj, strategy: Strategy, *, generate: bool, dry_run: bool
    ) -> bool:
        """Validate ``obj`` and create it (fresh generated names on collisions); True once stored, or validated
        on a dry run."""
        metadata = obj["metadata"]
        errs = await offload.run(lambda: self._validate_meta(info, obj) or strategy.validate(obj))
        if errs:
            raise errors.invalid(info.group, info.kind, str(metadata.get("name") or ""), errs)
        if dry_run:
            return True
        for _ in range(MAX_RETRIES if generate else 1):
            try:
                kv = await self.store.create(info.key(metadata["name"], namespace), encode(self._stored(info, obj)))
            except KeyExists:
                if generate:  # upstream GenerateNameRetries: a fresh suffix, a few times
                    metadata["name"] = apimeta.generate_name(str(metadata["generateName"]), self.rng)
                    continue
                raise errors.already_exists(info.group, info.plural, metadata["name"]) from None
            metadata["resourceVersion"] = str(kv.mod_revision)
            return True
        raise errors.already_exists(info.group, info.plural, metadata["name"])

    # -- update ------------------------------------------------------------------------------------------------

    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str | None = None,
    ) -> Obj:
        obj = self._check_body(info, namespace, body)
        if conversion.converts(info):
            obj = conversion.to_storage(info, self.storage_resource(info), obj)
        given = obj["metadata"].get("name")
        if given not in (None, "") and given != name:
            raise errors.bad_request(f"the name of the object ({given}) does not match the name on the URL ({name})")
        obj["metadata"]["name"] = name
        precondition = obj["metadata"].get("resourceVersion") or None
        return await self.guaranteed_update(
            info,
            namespace,
            name,
            lambda _old: obj,
            precondition=str(precondition) if precondition else None,
            subresource=subresource,
            dry_run=dry_run,
            manager=manager,
            track_subresource=subresource or "",
        )

    async def guaranteed_update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        transform: Callable[[Obj], Obj],
        *,
        precondition: str | None = None,
        subresource: str | None = None,
        dry_run: bool = False,
        manager: str | None = None,
        track_subresource: str = "",
        private_result: bool = False,
        copy_on_write: bool = False,
    ) -> Obj:
        """Read, transform, prepare, validate and compare-and-put; retry races unless the client pinned a
        resourceVersion (upstream's GuaranteedUpdate). ``transform`` sees and returns ``info``'s own form.
        ``manager``: whose Update entry records the change (None: not tracked); ``track_subresource``: the
        subresource that entry names (status, scale). ``private_result``: every container of what ``transform``
        returns is either from the private copy it was handed or made by it for this attempt (a strategic merge
        patch copies its patch), so the result needs no copy of its own before it is prepared in place; without
        it the result is copied, since it may share containers with a body a retry hands out again.

        ``copy_on_write`` (status writes of built-in kinds only; see :meth:`_updated`): ``transform`` is handed
        the object decoded from the store itself, changes none of it, and returns an object whose containers are
        either its own or the old object's ones it did not change (shared by identity), so nothing is copied
        whole and the comparisons after it find the untouched parts by identity."""
        if conversion.converts(info):
            storage = self.storage_resource(info)

            def in_storage_form(old: Obj) -> Obj:
                return conversion.to_storage(info, storage, transform(conversion.from_storage(info, old)))

            updated = await self.guaranteed_update(
                storage,
                namespace,
                name,
                in_storage_form,
                precondition=precondition,
                subresource=subresource,
                dry_run=dry_run,
                manager=manager,
                track_subresource=track_subresource,
            )
            return self._with_type(info, updated)
        key = info.key(name, namespace)
        strategy = self.strategy(info)
        for _ in range(MAX_RETRIES):
            current = await self.store.get(key)
            if current is None:
                raise errors.not_found(info.group, info.plural, name)
            if precondition is not None and precondition != str(current.mod_revision):
                raise errors.conflict(info.group, info.plural, name, errors.OPTIMISTIC_LOCK)
            old = decode(current)
            custom = isinstance(info, CustomResourceInfo)
            seen = self._with_type(info, old) if custom else old  # upstream decodes (defaults, converts) the old
            new = await offload.run(
                self._updated,
                info,
                name,
                strategy,
                transform,
                seen,
                subresource,
                manager,
                track_subresource,
                private_result and not custom,
                copy_on_write and not custom and subresource == "status",
            )
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
            await admission.admit_update(self, info, new, old, subresource)
            if custom:
                new = self._stored(info, new)
            if new == old or (dry_run and subresource == "status"):
                return self._written(info, new) if isinstance(info, CustomResourceInfo) else new
            finish = None if subresource == "status" else await strategy.begin_update(self, new, old, dry_run=dry_run)
            stored = False
            try:
                if dry_run:
                    return self._written(info, new) if isinstance(info, CustomResourceInfo) else new
                if strategy.should_delete_during_update(new):  # e.g. the last finalizer went: delete (upstream)
                    await self._remove(info, key, current.mod_revision, new)
                    stored = True
                    return self._written(info, new) if isinstance(info, CustomResourceInfo) else new
                try:
                    kv = await self.store.update(key, encode(new), expected_mod_revision=current.mod_revision)
                except Conflict:
                    if precondition is not None:
                        raise errors.conflict(info.group, info.plural, name, errors.OPTIMISTIC_LOCK) from None
                    continue
                stored = True
            finally:
                if finish is not None:
                    await finish(stored)
            new["metadata"]["resourceVersion"] = str(kv.mod_revision)
            return self._written(info, new) if isinstance(info, CustomResourceInfo) else new
        raise errors.conflict(info.group, info.plural, name, "too many concurrent updates; try again")

    def _updated(
        self,
        info: ResourceInfo,
        name: str,
        strategy: Strategy,
        transform: Callable[[Obj], Obj],
        old: Obj,
        subresource: str | None,
        manager: str | None = None,
        track_subresource: str = "",
        private_result: bool = False,
        copy_on_write: bool = False,
    ) -> Obj:
        """The update's new object: transformed, prepared, defaulted and validated (pure computation on copies, so
        a heavy request runs it off the event loop). ``private_result``: see :meth:`guaranteed_update`.

        ``copy_on_write`` (a status write): ``old`` is this attempt's own decode of the stored object, so it is
        not copied; the transform's result shares with it what the patch did not reach. Nothing below changes a
        shared container: ``metadata`` is made this object's own before the system fields are kept (and the
        status strategy then builds a new one from ``old``'s), the status strategy shares ``old``'s spec already
        on the generic path too, and defaulting writes into a shared container only values equal to what is
        there (every stored object was defaulted when written, and defaulting is idempotent), as the generic
        path relies on for the spec. So the result equals the generic path's, and ``old`` stays as stored."""
        if copy_on_write:
            new = transform(old)
            if new is old:
                new = dict(old)
            old_meta: Obj = old["metadata"]
            if new.get("metadata") is old_meta:
                new["metadata"] = dict(old_meta)
        else:
            new = transform(deep_copy(old))
            if not private_result:
                new = deep_copy(new)
        self._keep_system_metadata(new, old)
        if subresource == "status":
            sent = new["metadata"].get("managedFields")
            strategy.prepare_for_status_update(new, old)
            if sent is not None:  # ResetObjectMetaForStatus keeps the request's managedFields (an apply's)
                new["metadata"]["managedFields"] = sent
        else:
            strategy.prepare_for_update(new, old)
        apidefaults.apply_defaults(new)
        if manager is not None:
            fieldmanager.track_update(info, old, new, manager, subresource=track_subresource, now=self.now())
        # metadata is validated on status updates too: upstream's Validate*StatusUpdate begin with
        # ValidateObjectMetaUpdate (a status write may change labels and annotations)
        if subresource == "status":
            errs = self._validate_meta(info, new) or strategy.validate_status_update(new, old)
        else:
            errs = self._validate_meta(info, new) or strategy.validate_update(new, old)
        if errs:
            raise errors.invalid(info.group, info.kind, name, errs)
        return new

    def _keep_system_metadata(self, new: Obj, old: Obj) -> None:
        """Fields only the server sets survive any update (upstream FillObjectMetaSystemFields/immutables)."""
        meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
        for key in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        meta["name"] = old_meta["name"]
        if "namespace" in old_meta:
            meta["namespace"] = old_meta["namespace"]
        new["apiVersion"], new["kind"] = old.get("apiVersion"), old.get("kind")

    async def _remove(self, info: ResourceInfo, key: str, mod_revision: int, obj: Obj) -> None:
        try:
            await self.store.delete(key, expected_mod_revision=mod_revision)
        except Conflict:
            raise errors.conflict(info.group, info.plural, key.rsplit("/", 1)[-1], errors.OPTIMISTIC_LOCK) from None
        await self.strategy(info).after_delete(self, obj)


def _prepare_for_create(strategy: Strategy, obj: Obj) -> None:
    strategy.prepare_for_create(obj)
    apidefaults.apply_defaults(obj)


def _type_error(path: Path, value: Any, expected: str) -> FieldError:
    return invalid(path, value, detail=f"must be a {expected}")
