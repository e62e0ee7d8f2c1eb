"""The PV controller's own caches (upstream ``index.go`` and ``storeObjectUpdate`` in ``pv_controller_base.go``).

Why the controller keeps caches besides the informers: binding writes four objects (PV spec, PV status, PVC
spec, PVC status) and their watch events come back in any order. The controller stores every object it writes
here at once, and :func:`store_object_update` drops an informer event older than what is stored, so a sync never
acts on a version it has already replaced (it would only earn a conflict). The same resourceVersion passes, so
periodic resyncs still sync.

:class:`VolumeIndex` keeps volumes by their access-mode set (upstream ``persistentVolumeOrderedIndex``):
:meth:`VolumeIndex.find_best_match_for_claim` searches the sets that contain every requested mode, fewest modes
first, so a claim gets the volume closest to what it asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api.views import meta_of, spec_of
from kubeplane.api.volumes import find_matching_volume
from kubeplane.client.interface import Obj

__all__ = [
    "ObjectStore",
    "VolumeIndex",
    "access_modes_as_string",
    "access_modes_from_string",
    "store_object_update",
]

_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)


def access_modes_as_string(modes: Iterable[str]) -> str:
    """Upstream ``v1helper.GetAccessModesAsString``: ``RWO,ROX,RWX,RWOP`` order, duplicates dropped."""
    have = set(modes)
    return ",".join(short for mode, short in _MODES if mode in have)


def access_modes_from_string(text: str) -> list[str]:
    """Upstream ``v1helper.GetAccessModesFromString``."""
    shorts = {part.strip() for part in text.split(",")}
    return [mode for mode, short in _MODES if short in shorts]


def _key(obj: Mapping[str, Any]) -> str:
    meta = meta_of(obj)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def _rv(obj: Mapping[str, Any], what: str) -> int:
    text = str(meta_of(obj).get("resourceVersion") or "")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f'error parsing ResourceVersion "{text}" of {what} "{_key(obj)}"') from None


class ObjectStore:
    """A key -> object map (upstream ``cache.Store`` with ``MetaNamespaceKeyFunc``)."""

    def __init__(self) -> None:
        self.items: dict[str, Obj] = {}

    def get(self, key: str) -> Obj | None:
        return self.items.get(key)

    def put(self, obj: Obj) -> None:
        self.items[_key(obj)] = obj

    def delete(self, key: str) -> None:
        self.items.pop(key, None)

    def list(self) -> list[Obj]:
        return list(self.items.values())


def store_object_update(store: ObjectStore, obj: Obj, what: str) -> bool:
    """Upstream ``storeObjectUpdate``: store ``obj`` unless the cached version is newer; True when stored
    (the object is new or not older), False for an old version that must be ignored."""
    old = store.get(_key(obj))
    if old is None:
        store.put(obj)
        return True
    if _rv(old, what) > _rv(obj, what):
        return False
    store.put(obj)
    return True


class VolumeIndex(ObjectStore):
    """Volumes indexed by access-mode set (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._by_modes: dict[str, dict[str, None]] = {}
        self._modes_of: dict[str, str] = {}

    def put(self, obj: Obj) -> None:
        key = _key(obj)
        self._unindex(key)
        super().put(obj)
        modes = access_modes_as_string(spec_of(obj).get("accessModes") or ())
        self._modes_of[key] = modes
        self._by_modes.setdefault(modes, {})[key] = None

    def delete(self, key: str) -> None:
        self._unindex(key)
        super().delete(key)

    def _unindex(self, key: str) -> None:
        modes = self._modes_of.pop(key, None)
        if modes is not None:
            bucket = self._by_modes.get(modes, {})
            bucket.pop(key, None)
            if not bucket:
                self._by_modes.pop(modes, None)

    def list_by_access_modes(self, modes: Sequence[str]) -> list[Obj]:
        """Upstream ``listByAccessModes``: volumes whose mode set is exactly ``modes`` (unsorted)."""
        return [self.items[k] for k in self._by_modes.get(access_modes_as_string(modes), {})]

    def all_possible_matching_access_modes(self, requested: Sequence[str]) -> list[list[str]]:
        """Upstream ``allPossibleMatchingAccessModes``: every indexed mode set containing all of ``requested``,
        fewest modes first (ties in index order, which upstream leaves to map iteration)."""
        wanted = set(requested)
        out = [access_modes_from_string(k) for k in self._by_modes if wanted <= set(access_modes_from_string(k))]
        out.sort(key=len)
        return out

    def find_best_match_for_claim(self, claim: Mapping[str, Any], delay_binding: bool) -> Obj | None:
        """Upstream ``findBestMatchForClaim`` / ``findByClaim``."""
        for modes in self.all_possible_matching_access_modes(spec_of(claim).get("accessModes") or ()):
            best = find_matching_volume(claim, self.list_by_access_modes(modes), delay_binding=delay_binding)
            if best is not None:
                return dict(best)
        return None
