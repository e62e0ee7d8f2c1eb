"""Controller history: a controller's past states recorded as ControllerRevisions (upstream
``pkg/controller/history/controller_history.go``).

A StatefulSet (and, through its own code in :mod:`.daemonset_history`, a DaemonSet) stores each distinct state
of its pod template as a ControllerRevision named ``<parent>-<hash>``, owned by the parent through a controller
reference, labelled with the template's labels (so the parent's selector finds them, as kubectl's ``rollout
history`` does) and ``controller.kubernetes.io/hash``. ``revision`` orders them; ``data`` is the strategic merge
patch that restores the parent's state (the template with ``$patch: replace``), which is what kubectl applies
for ``rollout undo``.

The hash (upstream ``HashControllerRevision``): Go's ``fnv.New32()`` — FNV-1, 32 bits (the brief said FNV-32a;
upstream's code is FNV-1 and this follows the code) — over ``data``'s raw JSON bytes, then, when a collision
count is given, its decimal digits; the sum printed in decimal and passed through ``rand.SafeEncodeString``.
The raw bytes are :func:`go_json` of ``data``: sorted keys, no spaces, ``<``, ``>``, ``&``, U+2028 and U+2029
escaped, exactly Go's ``json.Marshal`` of the ``map[string]interface{}`` upstream's ``getPatch`` builds, and
the template in it is :func:`go_template` (Go's typed encoding adds ``resources: {}`` to every container). So
for a template kubeplane stores as kube-apiserver would, ``data`` is byte for byte upstream's (kubectl's
``rollout undo`` compares those bytes to decide "skipped rollback", and it does skip), and so is the hash.
``data`` is also stored with its keys in sorted order, so the API server serves those same bytes.

Invariants: revisions are compared by data (:func:`equal_revision`), never by name; names only have to be
unique, and a name taken by different data bumps the collision count until one is free
(:meth:`History.create_controller_revision`). Nothing here mutates its arguments.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import controller_ref_of, meta_of
from kubeplane.client.errors import AlreadyExistsError, ConflictError, InvalidError, NotFoundError
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.controllers.controller_utils import new_controller_ref, safe_encode_string

__all__ = [
    "CONTROLLER_REVISION_HASH_LABEL",
    "History",
    "controller_revision_name",
    "equal_revision",
    "find_equal_revisions",
    "fnv32",
    "go_json",
    "go_template",
    "hash_controller_revision",
    "new_controller_revision",
    "next_revision",
    "revision_of",
    "sort_controller_revisions",
    "sorted_json",
]

log = logging.getLogger("kubeplane.controllers.history")

CONTROLLER_REVISION_HASH_LABEL: Final = "controller.kubernetes.io/hash"
"""Upstream ``ControllerRevisionHashLabel``: the hash of a revision's data."""

_FNV32_OFFSET_BASIS: Final = 0x811C9DC5
_FNV32_PRIME: Final = 0x01000193
_UPDATE_RETRIES: Final = 5
"""Upstream ``retry.DefaultBackoff`` allows 5 steps."""


def fnv32(data: bytes, seed: int = _FNV32_OFFSET_BASIS) -> int:
    """FNV-1, 32 bits (Go's ``hash/fnv.New32``): multiply, then xor. ``seed`` continues an earlier sum."""
    h = seed
    for byte in data:
        h = ((h * _FNV32_PRIME) & 0xFFFFFFFF) ^ byte
    return h


_GO_ESCAPES: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json(value: Any) -> bytes:
    """Go's ``json.Marshal`` of a decoded JSON value (maps with sorted keys, compact, HTML-escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in _GO_ESCAPES.items():
        if raw in text:
            text = text.replace(raw, escaped)
    return text.encode()


def go_template(template: Mapping[str, Any]) -> Obj:
    """A pod template as Go's ``json.Marshal`` of the typed ``PodTemplateSpec`` prints it: the zero value of
    the one non-pointer struct field that ``omitempty`` cannot drop is added — each container's ``resources:
    {}`` (``metadata.creationTimestamp`` is ``omitzero`` since apimachinery v0.33, so it is left out) — so
    :func:`go_json` of a patch built from it is the bytes upstream's ``getPatch`` (and kubectl's) produces for
    the same template."""
    out = copy.deepcopy(dict(template))
    out["metadata"] = dict(out["metadata"]) if isinstance(out.get("metadata"), Mapping) else {}
    spec = out.get("spec")
    if isinstance(spec, dict):
        for key in ("initContainers", "containers", "ephemeralContainers"):
            for container in spec.get(key) or ():
                if isinstance(container, dict):
                    container.setdefault("resources", {})
    return out


def sorted_json(value: Any) -> Any:
    """``value`` with every object's keys in sorted order (how Go marshals a map), so a serializer that keeps
    insertion order writes the same bytes as :func:`go_json`."""
    loaded: Any = json.loads(go_json(value))
    return loaded


def controller_revision_name(prefix: str, hash_: str) -> str:
    """Upstream ``ControllerRevisionName``: ``prefix-hash``, the prefix cut to 223 bytes so the name fits 253."""
    if len(prefix) > 223:
        prefix = prefix[:223]
    return f"{prefix}-{hash_}"


def hash_controller_revision(revision: Mapping[str, Any], probe: int | None) -> str:
    """Upstream ``HashControllerRevision`` (see the module docstring for the bytes hashed)."""
    data = revision.get("data")
    h = fnv32(go_json(data)) if data is not None else _FNV32_OFFSET_BASIS
    if probe is not None:
        h = fnv32(str(probe).encode(), h)
    return safe_encode_string(str(h))


def revision_of(revision: Mapping[str, Any]) -> int:
    value = revision.get("revision")
    return int(value) if isinstance(value, int) else 0


def new_controller_revision(
    parent: Mapping[str, Any],
    *,
    api_version: str,
    kind: str,
    template_labels: Mapping[str, str] | None,
    data: Obj,
    revision: int,
    collision_count: int | None,
) -> Obj:
    """Upstream ``NewControllerRevision``: owned by ``parent``, labelled with the template's labels and the
    hash, named ``<parent>-<hash>``."""
    labels = dict(template_labels or {})
    cr: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "labels": labels,
            "ownerReferences": [new_controller_ref(parent, api_version=api_version, kind=kind)],
        },
        "data": sorted_json(data),
        "revision": revision,
    }
    hash_ = hash_controller_revision(cr, collision_count)
    cr["metadata"]["name"] = controller_revision_name(str(meta_of(parent).get("name") or ""), hash_)
    labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return cr


def _label_hash(revision: Mapping[str, Any]) -> int | None:
    """The hash label as upstream reads it (``strconv.ParseInt(hs, 10, 32)``); None when it does not parse."""
    raw = (meta_of(revision).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
    if not isinstance(raw, str):
        return None
    value = apilabels.parse_int64(raw)
    if value is None or not -(2**31) <= value < 2**31:
        return None
    return value & 0xFFFFFFFF


def equal_revision(lhs: Mapping[str, Any] | None, rhs: Mapping[str, Any] | None) -> bool:
    """Upstream ``EqualRevision``: both None, or equal data (parsable, differing hash labels short-circuit)."""
    if lhs is None or rhs is None:
        return lhs is rhs
    lhs_hash, rhs_hash = _label_hash(lhs), _label_hash(rhs)
    if lhs_hash is not None and rhs_hash is not None and lhs_hash != rhs_hash:
        return False
    return go_json(lhs.get("data")) == go_json(rhs.get("data"))


def find_equal_revisions(revisions: Iterable[Obj], needle: Mapping[str, Any]) -> list[Obj]:
    """Upstream ``FindEqualRevisions``: those equal to ``needle``, in the order given."""
    return [r for r in revisions if equal_revision(r, needle)]


def sort_controller_revisions(revisions: Sequence[Obj]) -> list[Obj]:
    """Upstream ``SortControllerRevisions`` (stable): by revision, then creation time, then name."""
    return sorted(
        revisions,
        key=lambda r: (revision_of(r), str(meta_of(r).get("creationTimestamp") or ""), str(meta_of(r).get("name"))),
    )


def next_revision(revisions: Sequence[Mapping[str, Any]]) -> int:
    """Upstream ``nextRevision``: 1, or one more than the last of the sorted ``revisions``."""
    return revision_of(revisions[-1]) + 1 if revisions else 1


class History:
    """Upstream ``realHistory``: ControllerRevisions read from an informer's lister, written through ``client``.

    ``lister`` is the controllerrevisions informer's lister (``get(namespace, name)`` / ``list(namespace)``)."""

    def __init__(self, client: Client, lister: Any) -> None:
        self.client = client
        self.lister = lister
        self.resource = client.resource("controllerrevisions")

    def list_controller_revisions(self, parent: Mapping[str, Any], selector: apilabels.Selector) -> list[Obj]:
        """Those in the parent's namespace matching ``selector`` and owned by the parent or by no controller."""
        meta = meta_of(parent)
        owned = []
        for revision in self.lister.list(str(meta.get("namespace") or "")):
            if not selector.matches(meta_of(revision).get("labels") or {}):
                continue
            ref = controller_ref_of(revision)
            if ref is None or ref.get("uid") == meta.get("uid"):
                owned.append(revision)
        return owned

    async def create_controller_revision(
        self, parent: Mapping[str, Any], revision: Mapping[str, Any], collision_count: int
    ) -> tuple[Obj, int]:
        """Upstream ``CreateControllerRevision``: create under ``<parent>-<hash(data, collision_count)>``; a name
        already taken by the same data returns that revision, by other data bumps the count and tries again.
        Returns (the revision, the collision count now)."""
        namespace = str(meta_of(parent).get("namespace") or "")
        clone = copy.deepcopy(dict(revision))
        while True:
            hash_ = hash_controller_revision(revision, collision_count)
            clone["metadata"]["name"] = controller_revision_name(str(meta_of(parent).get("name") or ""), hash_)
            try:
                created = await self.client.create(self.resource, clone, namespace=namespace)
            except AlreadyExistsError:
                exists = await self.client.get(self.resource, clone["metadata"]["name"], namespace=namespace)
                if go_json(exists.get("data")) == go_json(clone.get("data")):
                    return exists, collision_count
                collision_count += 1
                continue
            return created, collision_count

    async def update_controller_revision(self, revision: Mapping[str, Any], new_revision: int) -> Obj:
        """Upstream ``UpdateControllerRevision``: set ``revision``, retrying conflicts on the lister's copy."""
        clone = copy.deepcopy(dict(revision))
        meta = meta_of(clone)
        for attempt in range(_UPDATE_RETRIES):
            if revision_of(clone) == new_revision:
                return clone
            clone["revision"] = new_revision
            try:
                return await self.client.update(self.resource, clone, namespace=meta.get("namespace"))
            except ConflictError:
                if attempt == _UPDATE_RETRIES - 1:
                    raise
                fresh = self.lister.get(meta.get("namespace"), meta.get("name"))
                if fresh is not None:
                    clone = copy.deepcopy(fresh)
                    meta = meta_of(clone)
        return clone

    async def delete_controller_revision(self, revision: Mapping[str, Any]) -> None:
        meta = meta_of(revision)
        await self.client.delete(self.resource, str(meta.get("name")), namespace=meta.get("namespace"))

    async def adopt_controller_revision(
        self, parent: Mapping[str, Any], revision: Mapping[str, Any], *, api_version: str, kind: str
    ) -> Obj:
        """Upstream ``AdoptControllerRevision``: a strategic-merge patch adding the parent as controller (with
        the revision's UID as precondition); a revision owned by a controller already is refused."""
        owner = controller_ref_of(revision)
        if owner is not None:
            raise RuntimeError(f"attempt to adopt revision owned by {owner}")
        meta = meta_of(revision)
        patch = {
            "metadata": {
                "ownerReferences": [new_controller_ref(parent, api_version=api_version, kind=kind)],
                "uid": meta.get("uid"),
            }
        }
        return await self.client.patch(
            self.resource,
            str(meta.get("name")),
            patch,
            patch_type=PatchType.STRATEGIC,
            namespace=meta_of(parent).get("namespace"),
        )

    async def release_controller_revision(self, parent: Mapping[str, Any], revision: Mapping[str, Any]) -> Obj | None:
        """Upstream ``ReleaseControllerRevision``: remove the parent's reference; a revision gone (NotFound) or
        no longer owned (Invalid) needs no release and gives None."""
        meta = meta_of(revision)
        patch = {
            "metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": str(meta_of(parent).get("uid") or "")}],
                "uid": meta.get("uid"),
            }
        }
        try:
            return await self.client.patch(
                self.resource,
                str(meta.get("name")),
                patch,
                patch_type=PatchType.STRATEGIC,
                namespace=meta.get("namespace"),
            )
        except (NotFoundError, InvalidError):
            return None
