"""A DaemonSet's revision history (upstream ``pkg/controller/daemon/update.go``: ``constructHistory``,
``cleanupHistory``, ``dedupCurHistories``, ``controlledHistories``, ``Match``, ``getPatch``, ``snapshot``).

Each distinct pod template of a DaemonSet is a ControllerRevision named ``<ds>-<hash>`` (``hash`` is
:func:`~.controller_utils.compute_hash` of the template and ``status.collisionCount``, as upstream's
``ComputeHash``), labelled with the template's labels plus ``controller-revision-hash: <hash>``, owned by the
set, whose ``data`` is upstream's ``getPatch`` (``{"spec": {"template": <template, "$patch": "replace">}}``).
The current revision is the one whose data equals the set's patch; its ``controller-revision-hash`` label is
what the controller stamps on pods. Revisions are claimed like pods (adopt matching orphans, release ours that
stopped matching), kept to ``revisionHistoryLimit`` old ones that no pod uses, and duplicates of the current
one are folded into the newest (relabelling pods first).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from kubeplane.api import labels as apilabels
from kubeplane.api.views import labels_of, meta_of, name_of, namespace_of, spec_of, status_of
from kubeplane.client.errors import AlreadyExistsError
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.controllers.controller_ref_manager import ControllerRevisionRefManager
from kubeplane.controllers.controller_utils import compute_hash, new_controller_ref
from kubeplane.controllers.daemonset_util import HASH_LABEL
from kubeplane.controllers.history import go_json, go_template, revision_of, sorted_json

__all__ = ["DaemonSetHistory", "get_patch", "match"]

log = logging.getLogger("kubeplane.controllers.daemonset")


def get_patch(ds: Mapping[str, Any]) -> Obj:
    """Upstream ``getPatch``: the patch restoring this template (kubectl's ``rollout undo`` applies it)."""
    template = go_template(spec_of(ds).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def match(ds: Mapping[str, Any], history: Mapping[str, Any]) -> bool:
    """Upstream ``Match``: the revision's data is this set's patch, byte for byte (as Go's JSON)."""
    return go_json(get_patch(ds)) == go_json(history.get("data"))


class DaemonSetHistory:
    """The history half of the DaemonSet controller; ``lister`` is the controllerrevisions informer's lister,
    ``can_adopt(ds)`` builds the fresh-read check, ``daemon_pods(ds)`` lists the set's pods (terminal ones too)."""

    def __init__(
        self,
        client: Client,
        lister: Any,
        can_adopt: Callable[[Obj], Callable[[], Awaitable[None]]],
        daemon_pods: Callable[[Obj], Sequence[Obj]],
    ) -> None:
        self.client = client
        self.lister = lister
        self.can_adopt = can_adopt
        self.daemon_pods = daemon_pods
        self.resource = client.resource("controllerrevisions")
        self.ds_resource = client.resource("daemonsets")
        self.pods = client.resource("pods")

    async def controlled_histories(self, ds: Obj) -> list[Obj]:
        """Upstream ``controlledHistories``: every revision of the namespace, claimed by selector."""
        selector = apilabels.label_selector_as_selector(spec_of(ds).get("selector"))
        manager = ControllerRevisionRefManager(
            self.client, ds, selector, api_version="apps/v1", kind="DaemonSet", can_adopt=self.can_adopt(ds)
        )
        return await manager.claim_controller_revisions(list(self.lister.list(namespace_of(ds))))

    async def construct_history(self, ds: Obj) -> tuple[Obj, list[Obj]]:
        """Upstream ``constructHistory``: (current revision, old revisions). Revisions missing the hash label get
        their name as label; the current one is created, or deduplicated and moved to the next number."""
        current: list[Obj] = []
        old: list[Obj] = []
        for claimed in await self.controlled_histories(ds):
            history = claimed
            if HASH_LABEL not in labels_of(history):
                to_update = copy.deepcopy(history)
                to_update["metadata"].setdefault("labels", {})[HASH_LABEL] = name_of(history)
                history = await self.client.update(self.resource, to_update, namespace=namespace_of(ds))
            (current if match(ds, history) else old).append(history)
        next_number = max((revision_of(h) for h in old), default=0) + 1
        if not current:
            return await self.snapshot(ds, next_number), old
        cur = await self.dedup_cur_histories(ds, current)
        if revision_of(cur) < next_number:
            to_update = copy.deepcopy(cur)
            to_update["revision"] = next_number
            cur = await self.client.update(self.resource, to_update, namespace=namespace_of(ds))
        return cur, old

    async def cleanup_history(self, ds: Obj, old: Sequence[Obj]) -> None:
        """Upstream ``cleanupHistory``: delete old revisions no pod uses, oldest first, beyond the limit."""
        limit = spec_of(ds).get("revisionHistoryLimit")
        to_kill = len(old) - (int(limit) if isinstance(limit, int) else 10)
        if to_kill <= 0:
            return
        live = {labels_of(p).get(HASH_LABEL) for p in self.daemon_pods(ds)}
        live.discard(None)
        for history in sorted(old, key=revision_of):
            if to_kill <= 0:
                break
            if labels_of(history).get(HASH_LABEL) in live:
                continue
            await self.client.delete(self.resource, name_of(history), namespace=namespace_of(ds))
            to_kill -= 1

    async def dedup_cur_histories(self, ds: Obj, histories: Sequence[Obj]) -> Obj:
        """Upstream ``dedupCurHistories``: keep the highest-numbered; relabel pods to it, delete the others."""
        if len(histories) == 1:
            return histories[0]
        keep = histories[0]
        for history in histories:
            if revision_of(history) >= revision_of(keep):
                keep = history
        keep_hash = labels_of(keep).get(HASH_LABEL)
        for history in histories:
            if name_of(history) == name_of(keep):
                continue
            for pod in self.daemon_pods(ds):
                if labels_of(pod).get(HASH_LABEL) != keep_hash:
                    patch = {"metadata": {"labels": {HASH_LABEL: keep_hash}}}
                    await self.client.patch(
                        self.pods, name_of(pod), patch, patch_type=PatchType.STRATEGIC, namespace=namespace_of(ds)
                    )
            await self.client.delete(self.resource, name_of(history), namespace=namespace_of(ds))
        return keep

    async def snapshot(self, ds: Obj, revision: int) -> Obj:
        """Upstream ``snapshot``: create the revision; a name taken by other data bumps the set's
        ``status.collisionCount`` (unless our count was stale) and raises to retry with the new hash."""
        collision_count = status_of(ds).get("collisionCount")
        hash_ = compute_hash(spec_of(ds).get("template") or {}, collision_count)
        name = f"{name_of(ds)}-{hash_}"
        template_labels = dict((spec_of(ds).get("template") or {}).get("metadata", {}).get("labels") or {})
        meta: Obj = {
            "name": name,
            "namespace": namespace_of(ds),
            "labels": {**template_labels, HASH_LABEL: hash_},
            "ownerReferences": [new_controller_ref(ds, api_version="apps/v1", kind="DaemonSet")],
        }
        if meta_of(ds).get("annotations"):
            meta["annotations"] = dict(meta_of(ds)["annotations"])
        body: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": meta,
            "data": sorted_json(get_patch(ds)),
            "revision": revision,
        }
        try:
            return await self.client.create(self.resource, body, namespace=namespace_of(ds))
        except AlreadyExistsError as outer:
            existing = await self.client.get(self.resource, name, namespace=namespace_of(ds))
            if match(ds, existing):
                return existing
            current = await self.client.get(self.ds_resource, name_of(ds), namespace=namespace_of(ds))
            current_count = status_of(current).get("collisionCount")
            if current_count != collision_count:
                raise RuntimeError(
                    f"found a stale collision count ({collision_count}, expected {current_count}) of DaemonSet "
                    f'"{name_of(ds)}" while processing; will retry until it is updated'
                ) from outer
            current.setdefault("status", {})["collisionCount"] = int(current_count or 0) + 1
            await self.client.update(self.ds_resource, current, namespace=namespace_of(ds), subresource="status")
            log.info("Found a hash collision for DaemonSet %s - bumping collisionCount to resolve it", name_of(ds))
            raise
