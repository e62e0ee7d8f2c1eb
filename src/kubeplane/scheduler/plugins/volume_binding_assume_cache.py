"""The PV and PVC assume caches of VolumeBinding (upstream ``pkg/scheduler/util/assumecache`` and
``volumebinding``'s ``PVAssumeCache``/``PVCAssumeCache``), over ``Handle.list_objects``.

Upstream keeps, per object, the informer's version (``apiObj``) and the latest version (``latestObj``): the
informer's, or one the scheduler assumed in memory (Reserve's PV claimRef or PVC selected-node). Here the informer
side is whatever ``list_objects`` returns now (live: the scheduler's informers; offline: the cluster file) and the
cache holds only the assumed overlay. Invariants, as upstream:

* an informer object whose resourceVersion is newer than the assumed one replaces it (the overlay entry is
  dropped when seen to be stale: "an informer update always overrides the latest object pointer");
* :meth:`AssumeCache.assume` refuses an object older than the latest one (``... is out of sync``) and an object
  the informer does not have (``could not find <description> "<key>"``);
* :meth:`AssumeCache.restore` drops the overlay (Unreserve, or a failed API update);
* :meth:`AssumeCache.get` / :meth:`AssumeCache.list` return latest objects, :meth:`AssumeCache.get_api_obj` the
  informer's.

The scheduling thread and the binding tasks share one event loop, so no locking is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.api.volumes import claim_key, volume_class

__all__ = ["AssumeCache", "AssumeCacheError", "NotFoundInCache", "list_pvs", "pv_cache", "pvc_cache"]

ObjectLister = Callable[[str, str], Sequence[Mapping[str, Any]]]


class AssumeCacheError(Exception):
    """An assume-cache failure; ``str()`` is upstream's message."""


class NotFoundInCache(AssumeCacheError):
    """Upstream ``NotFoundError``: ``could not find <type> "<key>"``."""

    def __init__(self, description: str, key: str) -> None:
        super().__init__(f'could not find {description} "{key}"')


def _version(obj: Mapping[str, Any], description: str, key: str) -> int:
    raw = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    try:
        return int(raw)
    except ValueError:
        raise AssumeCacheError(
            f'error parsing ResourceVersion "{raw}" for {description} "{key}": strconv.ParseInt: parsing '
            f'"{raw}": invalid syntax'
        ) from None


def _pv_key(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


class AssumeCache:
    """Assumed objects of one resource over the informer's view (module docstring)."""

    def __init__(self, list_objects: ObjectLister, resource: str, description: str, key: Callable[..., str]) -> None:
        self._list_objects = list_objects
        self._resource = resource
        self.description = description
        self._key = key
        self._assumed: dict[str, Mapping[str, Any]] = {}

    def api_objects(self) -> dict[str, Mapping[str, Any]]:
        """The informer's objects by key (one list per call: callers that look up many keys keep the dict)."""
        return {self._key(o): o for o in self._list_objects(self._resource, "")}

    def _latest(self, key: str, api: Mapping[str, Any]) -> Mapping[str, Any]:
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        try:
            if _version(api, self.description, key) > _version(assumed, self.description, key):
                del self._assumed[key]  # the informer caught up (or moved past): its object wins
                return api
        except AssumeCacheError:
            return api
        return assumed

    def get(self, key: str, api_objects: Mapping[str, Mapping[str, Any]] | None = None) -> Mapping[str, Any]:
        """The latest object under ``key``; raises :class:`NotFoundInCache`."""
        api = (api_objects if api_objects is not None else self.api_objects()).get(key)
        if api is None:
            self._assumed.pop(key, None)
            raise NotFoundInCache(self.description, key)
        return self._latest(key, api)

    def get_api_obj(self, key: str) -> Mapping[str, Any]:
        """The informer's object under ``key``; raises :class:`NotFoundInCache`."""
        api = self.api_objects().get(key)
        if api is None:
            raise NotFoundInCache(self.description, key)
        return api

    def list(self, api_objects: Mapping[str, Mapping[str, Any]] | None = None) -> list[Mapping[str, Any]]:
        """Every latest object."""
        objs = api_objects if api_objects is not None else self.api_objects()
        return [self._latest(k, o) for k, o in objs.items()]

    def assume(self, obj: Mapping[str, Any]) -> None:
        """Upstream ``Assume``: ``obj`` becomes the latest version in memory only."""
        key = self._key(obj)
        latest = self.get(key)
        new_version = _version(obj, self.description, key)
        stored = _version(latest, self.description, key)
        if new_version < stored:
            raise AssumeCacheError(
                f'{self.description} "{key}" is out of sync (stored: {stored}, assume: {new_version})'
            )
        self._assumed[key] = obj

    def restore(self, key: str) -> None:
        """Upstream ``Restore``: the informer's version is the latest again (no-op when nothing is assumed)."""
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed


def pv_cache(list_objects: ObjectLister) -> AssumeCache:
    """Upstream ``NewPVAssumeCache`` (description ``v1.PersistentVolume``, key: name)."""
    return AssumeCache(list_objects, "persistentvolumes", "v1.PersistentVolume", _pv_key)


def pvc_cache(list_objects: ObjectLister) -> AssumeCache:
    """Upstream ``NewPVCAssumeCache`` (description ``v1.PersistentVolumeClaim``, key: namespace/name)."""
    return AssumeCache(list_objects, "persistentvolumeclaims", "v1.PersistentVolumeClaim", claim_key)


def list_pvs(cache: AssumeCache, storage_class: str) -> list[Mapping[str, Any]]:
    """Upstream ``PVAssumeCache.ListPVs``: the latest PVs of a storage class (the cache's class index)."""
    return [pv for pv in cache.list() if volume_class(pv) == storage_class]
