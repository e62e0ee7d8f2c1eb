"""List and watch: selectors, pagination and resourceVersion semantics of kube-apiserver.

List
    Without ``limit`` (and with resourceVersion unset or "0") the list comes from the watch cache after a sync,
    so it is consistent. With ``limit`` or ``continue`` it pages over the store at one revision: the first
    page fixes the revision, and the continue token carries it with the next key, so every page comes from one
    snapshot; a token whose revision was compacted is 410 Expired. With selectors a page is filled up to
    ``limit`` matching items, as upstream does.
Watch
    resourceVersion unset or "0": synthetic ADDED events for the current objects, then changes. N: every change
    after N (410 Expired if the store no longer has it). Bookmarks carry the current revision. What a watch
    starts with (current objects, or the ring's changes after N) is the watcher's interval, a snapshot of
    references turned into events as they are sent (see :mod:`kubeplane.apiserver.watchcache`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api import fields as apifields
from kubeplane.api import labels as apilabels
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.field import Error as FieldError
from kubeplane.api.validation.field import forbidden, new_path, not_supported
from kubeplane.api.views import labels_of
from kubeplane.store.interface import Compacted, FutureRevision, KeyValue
from kubeplane.store.watch import StoreWatch

from . import continuation, errors, params
from .registry import Registry
from .watchcache import CacheWatcher, Obj, WatchCache, WatchEvent, decode, to_watch_event

Matcher = Callable[[str, Obj], bool]

CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of "
    "the results. Continuing with the provided token results in an inconsistent list - objects that were "
    "created, modified, or deleted between the time the first chunk was returned and now may show up in the "
    "list."
)


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: str = ""
    field_selector: str = ""
    limit: int = 0
    continue_token: str = ""
    resource_version: str = ""
    resource_version_match: str = ""
    send_initial_events: bool | None = None  # only to be refused: a list cannot send initial events

    def validate(self) -> None:
        """Upstream ``ValidateListOptions`` for a list (422 Invalid ListOptions)."""
        validate_list_options(
            resource_version=self.resource_version,
            resource_version_match=self.resource_version_match,
            continue_token=self.continue_token,
            send_initial_events=self.send_initial_events,
            watch=False,
        )


INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def validate_list_options(
    *,
    resource_version: str,
    resource_version_match: str,
    continue_token: str,
    send_initial_events: bool | None,
    watch: bool,
) -> None:
    """Upstream ``ValidateListOptions`` (list and watch): 422 Invalid ``ListOptions`` with field causes."""
    errs: list[FieldError] = []
    rvm = new_path("resourceVersionMatch")
    if watch:
        if send_initial_events is not None and resource_version_match != "NotOlderThan":
            errs.append(forbidden(rvm, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if resource_version_match:
            if send_initial_events is None:
                errs.append(
                    forbidden(rvm, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
                )
            if resource_version_match != "NotOlderThan":
                errs.append(not_supported(rvm, resource_version_match, supported=["NotOlderThan", ""]))
    else:
        if resource_version_match:
            if not resource_version:
                errs.append(forbidden(rvm, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            if continue_token:
                errs.append(forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
            if resource_version_match not in ("Exact", "NotOlderThan"):
                errs.append(not_supported(rvm, resource_version_match, supported=["Exact", "NotOlderThan", ""]))
            if resource_version_match == "Exact" and resource_version == "0":
                errs.append(forbidden(rvm, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if send_initial_events is not None:
            errs.append(forbidden(new_path("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
    if errs:
        raise errors.invalid("meta.k8s.io", "ListOptions", "", errs)


def compile_matcher(info: ResourceInfo, options: ListOptions) -> Matcher | None:
    """None when nothing is filtered; else (key, obj) -> bool. Bad selectors are 400 BadRequest."""
    try:
        label = apilabels.parse(options.label_selector) if options.label_selector else None
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    try:
        field = apifields.parse_selector_for_kind(info.kind, options.field_selector) if options.field_selector else None
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    if label is None and field is None:
        return None
    kind, namespaced = info.kind, info.namespaced

    def matches(_key: str, obj: Obj) -> bool:
        if label is not None and not label.matches(labels_of(obj)):
            return False
        return field is None or field.matches(apifields.selectable_fields(kind, obj, namespaced=namespaced))

    return matches


def _parse_rv(value: str) -> int:
    return params.parse_resource_version(value)


async def list_objects(registry: Registry, info: ResourceInfo, namespace: str | None, options: ListOptions) -> Obj:
    matcher = compile_matcher(info, options)
    if not options.continue_token:  # with one, the token is decoded first (and a resourceVersion refused)
        _parse_rv(options.resource_version)
    prefix = info.collection_key(namespace)
    if options.limit > 0 or options.continue_token or options.resource_version_match == "Exact":
        return await _list_from_store(registry, info, prefix, matcher, options)
    cache = registry.cache(info)
    cache.sync()
    cache.check_ready()  # re-initialising: 429, not stale objects (upstream cacher GetList)
    items = [registry._with_type(info, obj) for key, obj in cache.items(prefix) if matcher is None or matcher(key, obj)]
    return _list_object(info, items, cache.revision, continue_token="", remaining=None)


async def _list_from_store(
    registry: Registry, info: ResourceInfo, prefix: str, matcher: Matcher | None, options: ListOptions
) -> Obj:
    store = registry.store
    if options.continue_token:
        revision, start = continuation.decode(options.continue_token)
        if options.resource_version not in ("", "0"):  # upstream storage.ValidateListOptions
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        if revision < 0:  # upstream: a negative revision continues at the newest one
            revision = store.revision
        start_key = prefix + start
    else:
        start_key = None
        if options.resource_version and options.resource_version != "0" and options.resource_version_match == "Exact":
            revision = _parse_rv(options.resource_version)
        else:
            revision = store.revision
    items: list[Obj] = []
    limit = options.limit
    more, remaining = False, None
    while True:
        try:
            page = await store.range(prefix, revision=revision, limit=limit, start_key=start_key)
        except Compacted:
            if options.continue_token:
                raise errors.gone(CONTINUE_EXPIRED) from None
            raise errors.gone(f"too old resource version: {revision} ({store.compacted_revision})") from None
        except FutureRevision:  # etcd3 store GetList: NewTooLargeResourceVersionError(withRev, current, 0)
            raise errors.too_large_resource_version(revision, store.revision) from None
        for kv in page.kvs:
            obj = decode(kv)
            if matcher is None or matcher(kv.key, obj):
                items.append(registry._with_type(info, obj))
        more = page.more
        if page.kvs:
            start_key = page.kvs[-1].key + "\x00"
        if matcher is None:
            remaining = page.count - len(page.kvs) if more else None
        if not more or limit <= 0 or len(items) >= limit:
            break
    token = continuation.encode(revision, start_key[len(prefix) :]) if more and start_key else ""
    return _list_object(info, items, revision, continue_token=token, remaining=remaining)


def _list_object(
    info: ResourceInfo, items: list[Obj], revision: int, *, continue_token: str, remaining: int | None
) -> Obj:
    metadata: dict[str, Any] = {"resourceVersion": str(revision)}
    if continue_token:
        metadata["continue"] = continue_token
    if remaining:
        metadata["remainingItemCount"] = remaining
    return {"kind": info.list_kind, "apiVersion": info.api_version, "metadata": metadata, "items": items}


@dataclass(frozen=True, slots=True)
class WatchOptions:
    label_selector: str = ""
    field_selector: str = ""
    resource_version: str = ""
    allow_bookmarks: bool = False
    timeout_seconds: float | None = None
    send_initial_events: bool | None = None  # WatchList: current objects, then an initial-events-end bookmark
    resource_version_match: str = ""
    buffer_bytes: int | None = None
    """The byte budget of the watcher's queue (the HTTP server's setting); None: bounded in count only."""

    def validate(self) -> None:
        """Upstream ``ValidateListOptions`` for a watch (422 Invalid ListOptions)."""
        validate_list_options(
            resource_version=self.resource_version,
            resource_version_match=self.resource_version_match,
            continue_token="",
            send_initial_events=self.send_initial_events,
            watch=True,
        )


def bookmark_event(info: ResourceInfo, revision: int) -> Obj:
    """A BOOKMARK event at ``revision`` (an object of the resource's kind with only its resourceVersion)."""
    return {
        "type": "BOOKMARK",
        "object": {"kind": info.kind, "apiVersion": info.api_version, "metadata": {"resourceVersion": str(revision)}},
    }


def open_watch(registry: Registry, info: ResourceInfo, namespace: str | None, options: WatchOptions) -> CacheWatcher:
    """Register a watcher; what it starts with (synthetic ADDED or replay) is its interval when it returns."""
    list_options = ListOptions(label_selector=options.label_selector, field_selector=options.field_selector)
    matcher = compile_matcher(info, list_options)
    after = _parse_rv(options.resource_version)
    prefix = info.collection_key(namespace)
    watcher = CacheWatcher(
        key_prefix=prefix,
        matches=matcher,
        budget=options.buffer_bytes,
        resource=f"{info.plural}.{info.group}" if info.group else info.plural,
        identifier=f"key: {prefix!r}, labels: {options.label_selector!r}, fields: {options.field_selector!r}",
    )
    cache = registry.cache(info)
    cache.sync()
    cache.check_ready()  # re-initialising: 429 before anything else (upstream cacher Watch)
    if options.send_initial_events is not None:
        return _watch_list(info, cache, watcher, matcher, prefix, initial=options.send_initial_events)
    if options.resource_version in ("", "0"):
        cache.sync()
        watcher.start_with(_current(cache, prefix, matcher))
        cache.add_watcher(watcher, after=cache.revision)
        return watcher
    if after < registry.store.compacted_revision:
        raise errors.gone(f"too old resource version: {after} ({registry.store.compacted_revision})")
    if cache.add_watcher(watcher, after=after):
        return watcher
    # Older than the cache's ring but still in the store: a dedicated store watch feeds this watcher.
    source = registry.store.watch(prefix, start_revision=after + 1)
    assert isinstance(source, StoreWatch)
    watcher._source = source
    asyncio.get_running_loop().create_task(_pump(source, watcher))
    return watcher


def _current(cache: WatchCache, prefix: str, matcher: Matcher | None) -> Iterator[WatchEvent]:
    """Synthetic ADDED events of the objects under ``prefix`` now: the snapshot is taken here (a list of the
    stored KeyValues, nothing decoded), each object is decoded (and matched: a snapshot's object never changes)
    as the watcher reaches it, so an interval costs its references, not its decoded objects."""
    return _added(cache, cache.stored_items(prefix), matcher)


def _added(cache: WatchCache, snapshot: list[tuple[str, KeyValue]], matcher: Matcher | None) -> Iterator[WatchEvent]:
    for key, kv in snapshot:
        obj = cache.object_at(key, kv)
        if matcher is None or matcher(key, obj):
            yield WatchEvent("ADDED", key, kv.mod_revision, obj, None)


def _watch_list(
    info: ResourceInfo,
    cache: WatchCache,
    watcher: CacheWatcher,
    matcher: Matcher | None,
    prefix: str,
    *,
    initial: bool,
) -> CacheWatcher:
    """WatchList (sendInitialEvents): with true, every current object as ADDED, then a BOOKMARK annotated
    ``k8s.io/initial-events-end: "true"`` at the snapshot's revision, then changes; with false, changes only.
    The cache is fresh (synced), which satisfies any resourceVersion with resourceVersionMatch=NotOlderThan."""
    cache.sync()
    if initial:
        bookmark = {
            "kind": info.kind,
            "apiVersion": info.api_version,
            "metadata": {"resourceVersion": str(cache.revision), "annotations": {INITIAL_EVENTS_END: "true"}},
        }
        end = WatchEvent("BOOKMARK", "", cache.revision, bookmark, None)
        watcher.start_with(_current(cache, prefix, matcher), end_bookmark=end)
    cache.add_watcher(watcher, after=cache.revision)
    return watcher


PUMP_BATCH = 100
"""Events taken from a dedicated store watch at a time; each is offered only once the watcher's queue has room
(:meth:`CacheWatcher.wait_for_room`), so catching up from an old revision never overflows a watcher that reads."""


async def _pump(source: StoreWatch, watcher: CacheWatcher) -> None:
    try:
        while not watcher.closed:
            batch = await source.next_batch(PUMP_BATCH)
            if not batch:
                break
            for event in batch:
                if not await watcher.wait_for_room():
                    return
                watcher.offer(to_watch_event(event))
    except Exception:
        pass
    finally:
        watcher.close()


def list_options(query: Mapping[str, str]) -> ListOptions:
    """ListOptions decoded as upstream's parameter codec (:mod:`kubeplane.apiserver.params`): a malformed limit or
    timeoutSeconds is a 400 with strconv's message; a negative limit pages nothing (upstream pages only when > 0)."""
    parsed = params.parse_int64(query["limit"]) if "limit" in query else 0
    if "timeoutSeconds" in query:
        params.parse_int64(query["timeoutSeconds"])
    send_initial = query.get("sendInitialEvents")
    return ListOptions(
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        limit=max(parsed, 0),
        continue_token=query.get("continue", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        send_initial_events=None if send_initial is None else params.go_bool(send_initial),
    )
