"""The watch cache's decoded changes, made from the store's bytes and decoded only when someone reads them.

A stored object costs its bytes (shared with the store: the very ``KeyValue`` it keeps) until a consumer needs
it decoded; the decoded dict is 3 to 5 times larger. So a :class:`WatchEvent` made from a store event keeps the
event's ``KeyValue`` objects and decodes ``obj`` (and ``prev``) at the first read, then keeps the result for as long
as the event itself lives: every watcher that queued the event reads the same object and every HTTP watcher
the same encoded line (:meth:`WatchEvent.frame`). Decoded objects are :class:`Decoded` dicts, which the cache
can reference weakly (a plain dict cannot be), so it finds an object a consumer still holds without keeping it
alive itself.

Invariant: decoding is a pure function of the stored bytes and the revision given as ``resourceVersion``
(``load``): an object decoded twice is equal, key order included, so when one is decoded is unobservable.

Equal parts are shared (:class:`SharedParts`): a decoded object's managed-fields sets (``fieldsV1``, most of
a Pod's or a Node's decoded size: a nested dict per field) and the members of its ``spec`` and ``status`` are
replaced by an equal object decoded before, when one with the same encoding exists, so the versions of an
object and objects made from one template (a Deployment's pods, a node pool's Nodes, one recorder's Events)
hold one copy of what they have in common. Equal by encoding means equal with key order, so sharing is
unobservable too, as long as nobody mutates a decoded object (the rule for every object the cache hands out).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import orjson

from kubeplane.apiserver.http.gojson import escape_html
from kubeplane.store.interface import Event as StoreEvent
from kubeplane.store.interface import EventType, KeyValue

Obj = dict[str, Any]
FRAME_OVERHEAD = 64
"""What a watch line adds to the stored value: ``{"type":"MODIFIED","object":``, the resourceVersion, ``}\\n``."""


class Decoded(dict[str, Any]):
    """A decoded stored object: a dict (nothing tells it from one but its type) that can be weakly referenced.
    Shared read-only, as every object the watch cache hands out: never mutate it."""

    __slots__ = ("__weakref__",)

    def __copy__(self) -> Obj:
        """A copy is the caller's to mutate: a plain dict (``copy.copy`` would otherwise take the slow path of
        a subclass and make another Decoded)."""
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Obj:
        """As :meth:`__copy__`, deep: what ``copy.deepcopy`` makes of a plain dict."""
        return {key: copy.deepcopy(value, memo) for key, value in self.items()}


def decode(kv: KeyValue) -> Obj:
    """A stored object with ``metadata.resourceVersion`` set from the key's mod_revision."""
    obj: Obj = orjson.loads(kv.value)
    obj["metadata"]["resourceVersion"] = str(kv.mod_revision)
    return obj


def load(kv: KeyValue, revision: int) -> Decoded:
    """``kv``'s object as a :class:`Decoded` with ``resourceVersion`` ``revision`` (last in its metadata, as
    :func:`decode` puts it): the mod revision, or a delete's revision for the last state of a DELETED event.
    Its parts are shared with equal ones decoded before (:data:`SHARED`)."""
    obj = Decoded(orjson.loads(kv.value))
    obj["metadata"]["resourceVersion"] = str(revision)
    SHARED.share(obj)
    return obj


_EMPTY: Obj = {}
"""The one empty dict every shared managed-fields set uses for its leaves (``{"f:name": {}}``); never mutated."""
_CONTAINERS = (dict, list)
_META_MEMBERS = ("labels", "annotations", "ownerReferences", "finalizers")
_digest: Callable[[bytes], int] = hash
"""How :class:`SharedParts` keys an encoding (a module attribute so tests can make every key collide)."""


class SharedParts:
    """Decoded parts by their encoding, so equal parts of decoded objects are one object (see the module
    docstring). An entry is keyed by the hash of its encoding only (the encodings themselves would cost as much
    as the parts they share) and a hit is checked by encoding the entry again, so a collision shares nothing.
    Bounded: past ``limit`` entries a table starts again (what was shared stays shared; parts decoded later are
    shared among themselves).

    Invariant: a part is replaced only by an entry whose encoding equals the part's, so by an equal part with
    key order included; nobody mutates an entry (it is part of objects the cache hands out)."""

    __slots__ = ("_fields", "_members", "limit")

    def __init__(self, limit: int = 16_384) -> None:
        self.limit = limit
        self._fields: dict[int, Obj] = {}
        self._members: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self._fields) + len(self._members)

    def share(self, obj: Obj) -> None:
        """Replace, in place, ``obj``'s managed-fields sets, its labels, annotations and owner references, its
        spec (or, when no equal spec was decoded before, the spec's members) and the members of its status with
        the equal parts decoded before (``obj`` is freshly decoded: nobody else holds it yet)."""
        meta = obj["metadata"]
        entries = meta.get("managedFields")
        if entries:
            for entry in entries:
                fields = entry.get("fieldsV1")
                if fields:
                    entry["fieldsV1"] = self._fieldset(fields)
        self._members_of(meta, _META_MEMBERS)
        spec = obj.get("spec")
        if type(spec) is dict and spec:
            shared = self._member(spec)
            if shared is spec:  # new: its members may still be shared (a pod's containers, once bound)
                self._members_of(spec, spec)
            else:
                obj["spec"] = shared
        status = obj.get("status")
        if type(status) is dict:
            self._members_of(status, status)

    def _members_of(self, parent: Obj, names: Iterable[str]) -> None:
        for name in names:
            value = parent.get(name)
            if value and type(value) in _CONTAINERS:
                shared = self._member(value)
                if shared is not value:
                    parent[name] = shared  # a value for an existing key: the dict's size is unchanged

    def _member(self, value: Any) -> Any:
        """The entry equal to ``value`` (a non-empty dict or list), or ``value`` itself, now an entry."""
        found, digest = _lookup(self._members, value)
        if found is not None:
            return found
        _keep(self._members, digest, value, self.limit)
        return value

    def _fieldset(self, node: Obj) -> Obj:
        """The shared equal of a managed-fields set (or one of its nested sets), its own members shared first
        when it is new: two sets differing in one field (a pod's IP) share the rest."""
        found, digest = _lookup(self._fields, node)
        if found is not None:
            return cast(Obj, found)
        for name, child in node.items():
            if type(child) is dict:
                node[name] = self._fieldset(child) if child else _EMPTY
        _keep(self._fields, digest, node, self.limit)
        return node


def _lookup(table: Mapping[int, Any], value: Any) -> tuple[Any, int]:
    """``(entry, digest)``: the entry of ``table`` equal to ``value`` (checked by encoding it: a digest collision
    finds nothing) or None, and ``value``'s digest, the key it would be kept under."""
    key = orjson.dumps(value)
    digest = _digest(key)
    found = table.get(digest)
    if found is not None and (found is value or orjson.dumps(found) == key):
        return found, digest
    return None, digest


def _keep(table: dict[int, Any], digest: int, value: Any, limit: int) -> None:
    """Keep ``value`` under ``digest``; a table holding ``limit`` entries starts again first (a colliding digest
    replaces its entry without that)."""
    if digest not in table and len(table) >= limit:
        table.clear()
    table[digest] = value


SHARED = SharedParts()
"""The process's table: every watch cache shares through it (objects of one resource share parts with each
other only in practice, as their encodings differ across resources)."""


def encode(obj: Obj) -> bytes:
    """What the store keeps: the object without resourceVersion (the revision is the store's own), right-sized
    (:func:`tight`: a stored value lives for minutes, in the store's history and the watch cache's ring)."""
    meta = obj["metadata"]
    rv = meta.pop("resourceVersion", None)
    try:
        return tight(orjson.dumps(obj))
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


def tight(data: bytes) -> bytes:
    """``data`` in a bytes object of its own size. ``orjson.dumps`` returns its output in the buffer it grew
    while writing, which it does not shrink: a 700-byte Lease occupies some 8 kB, a 6 kB Pod 64 kB (the part
    never written partly resident). Kept for long, a copy (a memcpy, cheaper than the dump) is far smaller."""
    return memoryview(data).tobytes()


_NEWLINE = orjson.OPT_APPEND_NEWLINE


class WatchEvent:
    """A change: ``obj`` is the new state (for DELETED, the last state with the delete's revision), ``prev`` the
    previous state (None for ADDED). Both are given, or decoded at their first read from the ``KeyValue`` they
    come from (:meth:`stored`) and then kept while the event lives.

    ``size`` is the length of the event's watch line as estimated from the stored value (what the event costs in
    a watcher's byte budget, known without encoding it); 0 for events made by a watcher itself."""

    __slots__ = (
        "__weakref__",
        "_added",
        "_deleted",
        "_frame",
        "_obj",
        "_obj_kv",
        "_obj_revision",
        "_presented",
        "_prev",
        "_prev_kv",
        "key",
        "revision",
        "size",
        "type",
    )

    def __init__(self, type: str, key: str, revision: int, obj: Obj | None, prev: Obj | None, size: int = 0) -> None:
        """An event of decoded objects (``obj`` None only from :meth:`stored`). ``type``: ADDED, MODIFIED,
        DELETED, or BOOKMARK for WatchList's initial-events-end marker."""
        self.type = type
        self.key = key
        self.revision = revision
        self.size = size
        self._obj = obj
        self._prev = prev
        self._obj_kv: KeyValue | None = None
        self._obj_revision = 0
        self._prev_kv: KeyValue | None = None
        self._frame: bytes | None = None
        self._presented: dict[str, bytes] | None = None
        self._added: WatchEvent | None = None
        self._deleted: WatchEvent | None = None

    @classmethod
    def stored(
        cls,
        type: str,
        key: str,
        revision: int,
        *,
        source: KeyValue,
        source_revision: int,
        prev_kv: KeyValue | None,
        obj: Obj | None = None,
        prev: Obj | None = None,
        size: int = 0,
    ) -> WatchEvent:
        """An event decoded on demand: ``obj`` from ``source`` at ``source_revision``, ``prev`` from ``prev_kv``
        (each unless given already decoded, equal to what decoding gives)."""
        event = cls(type, key, revision, obj, prev, size)
        event._obj_kv = source
        event._obj_revision = source_revision
        event._prev_kv = prev_kv
        return event

    @property
    def obj(self) -> Obj:
        obj = self._obj
        if obj is None:
            kv = self._obj_kv
            assert kv is not None
            obj = self._obj = load(kv, self._obj_revision)
        return obj

    @property
    def prev(self) -> Obj | None:
        prev = self._prev
        if prev is None and self._prev_kv is not None:
            kv = self._prev_kv
            prev = self._prev = load(kv, kv.mod_revision)
        return prev

    @property
    def has_prev(self) -> bool:
        """Whether there is a previous state (known without decoding it)."""
        return self._prev is not None or self._prev_kv is not None

    @property
    def decoded(self) -> Obj | None:
        """``obj`` if it was decoded (or given) already, else None: nothing is decoded."""
        return self._obj

    def __repr__(self) -> str:
        return f"WatchEvent({self.type}, {self.key!r}, {self.revision})"

    def frame(self) -> bytes:
        """The watch line ``{"type":...,"object":...}\\n``, encoded once and shared by every watcher, with Go's
        HTML-safe escaping as every other response (kube-apiserver's watch encoder is ``json.Encoder`` too);
        right-sized (:func:`tight`): it waits in the queues of watchers that have not sent it yet."""
        if self._frame is None:
            self._frame = tight(escape_html(orjson.dumps({"type": self.type, "object": self.obj}, option=_NEWLINE)))
        return self._frame

    def presented_frame(self, present: Callable[[Obj], Obj], view: str = "") -> bytes:
        """The watch line of the object as ``present`` shows it, encoded once per ``view`` (events.k8s.io/v1's
        view of a stored core Event; a custom resource at one served version with its schema)."""
        if self._presented is None:
            self._presented = {}
        line = self._presented.get(view)
        if line is None:
            line = tight(escape_html(orjson.dumps({"type": self.type, "object": present(self.obj)}, option=_NEWLINE)))
            self._presented[view] = line
        return line

    def as_added(self) -> WatchEvent:
        """This change for a watcher whose selector the object enters: an ADDED of the new state."""
        if self.type == "ADDED":
            return self
        if self._added is None:
            self._added = WatchEvent("ADDED", self.key, self.revision, self.obj, None, self.size)
        return self._added

    def as_deleted(self) -> WatchEvent:
        """This change for a watcher whose selector the object leaves: as upstream's ``convertToWatchEvent``, a
        DELETED of the previous state carrying this event's resourceVersion."""
        if self._deleted is None:
            prev = self.prev
            base = prev if prev is not None else self.obj
            last = {**base, "metadata": {**base["metadata"], "resourceVersion": str(self.revision)}}
            self._deleted = WatchEvent("DELETED", self.key, self.revision, last, prev, self.size)
        return self._deleted


def to_watch_event(event: StoreEvent, cached: Obj | None = None, decoded: Obj | None = None) -> WatchEvent:
    """The change, decoded on demand. ``cached``: the object the cache holds for the key, taken as the previous
    state (not decoded again) when it is ``prev_kv``'s revision, so consecutive events of a key share that
    object. ``decoded``: the new state already decoded (equal to ``load(event.kv, ...)``), for a put."""
    prev_kv = event.prev_kv
    prev: Obj | None = None
    if cached is not None and prev_kv is not None:
        prev = cached if cached["metadata"]["resourceVersion"] == str(prev_kv.mod_revision) else None
    if event.type is EventType.DELETE:
        assert prev_kv is not None
        size = len(prev_kv.value) + FRAME_OVERHEAD
        return WatchEvent.stored(
            "DELETED", event.kv.key, event.revision, source=prev_kv, source_revision=event.revision,
            prev_kv=prev_kv, prev=prev, size=size,
        )  # fmt: skip
    kind = "ADDED" if prev_kv is None else "MODIFIED"
    kv = event.kv
    size = len(kv.value) + FRAME_OVERHEAD
    return WatchEvent.stored(
        kind, kv.key, event.revision, source=kv, source_revision=kv.mod_revision, prev_kv=prev_kv, obj=decoded,
        prev=prev, size=size,
    )  # fmt: skip
