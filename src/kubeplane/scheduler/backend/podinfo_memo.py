"""PodInfos kept between snapshots built from plain pod objects (explain, what-if, the web UI's pod view and Try).

:meth:`Snapshot.from_objects <kubeplane.scheduler.backend.snapshot.Snapshot.from_objects>` makes a
:class:`~kubeplane.scheduler.framework.types.PodInfo` per bound pod, and deriving what a PodInfo caches (effective
requests, non-zero requests, host ports, PVC references, affinity) is most of a snapshot's cost: at 50,000 pods,
seconds. The scheduler's own cache keeps its PodInfos from event to event; offline snapshots had nothing to keep
them in. A what-if question builds a snapshot per verified candidate and the UI builds one per pod view, each
from the same pods, so they share one memo.

Invariants:

* A PodInfo depends only on its pod object, so it is reused only for an object that is the same: the same
  ``metadata.uid`` and ``metadata.resourceVersion`` (a stored object's version names its content), and the same
  ``spec.nodeName`` and ``spec.priority`` (the two fields explain itself fills in or clears on copies). Objects
  without a uid or a resourceVersion (files given to ``kubeplane explain``) are never memoised.
* A PodInfo is read-only once built (its cached properties are derived once), so sharing one between snapshots
  cannot change any answer; NodeInfos hold references to PodInfos, never copies they mutate.
* Bounded: :meth:`rotate` starts a new generation; an entry not used since the previous rotation is dropped at
  the next one, so the memo holds at most the pods of the last two generations.
* Lookups and rotations from several threads are safe under the GIL (single dict operations); a race only costs a
  PodInfo built twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.views import meta_of, spec_of
from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["PodInfoMemo"]

_Key = tuple[str, str, str, Any]


class PodInfoMemo:
    """``pod_info(pod)``: the PodInfo for ``pod``, reused while the same stored version is seen."""

    def __init__(self) -> None:
        self._current: dict[_Key, PodInfo] = {}
        self._previous: dict[_Key, PodInfo] = {}
        self.built = 0
        """PodInfos constructed (not reused) since this memo was made: what tests and benches read."""

    def rotate(self) -> None:
        """Start a generation: what was not used since the previous call is forgotten at the next one."""
        self._previous, self._current = self._current, {}

    def pod_info(self, pod: Mapping[str, Any]) -> PodInfo:
        meta = meta_of(pod)
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not uid or not version:
            self.built += 1
            return PodInfo(pod)
        spec = spec_of(pod)
        key: _Key = (str(uid), str(version), str(spec.get("nodeName") or ""), spec.get("priority"))
        info = self._current.get(key)
        if info is None:
            info = self._previous.pop(key, None)
            if info is None:
                info = PodInfo(pod)
                self.built += 1
            self._current[key] = info
        return info

    def __len__(self) -> int:
        return len(self._current) + len(self._previous)
