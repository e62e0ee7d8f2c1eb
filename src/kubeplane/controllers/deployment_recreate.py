"""The Deployment's Recreate strategy (upstream ``pkg/controller/deployment/recreate.go``): scale every old
ReplicaSet to 0, wait until their pods are gone, then create or scale up the new one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kubeplane.api.views import is_pod_terminal, uid_of
from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.deployment_sync import DeploymentSync

__all__ = ["DeploymentRecreate"]


class DeploymentRecreate(DeploymentSync):
    """``rolloutRecreate``, over :class:`~.deployment_sync.DeploymentSync`."""

    async def _rollout_recreate(self, d: Obj, rs_list: Sequence[Obj], pod_map: Mapping[str, list[Obj]]) -> None:
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, False)
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        scaled_down = False
        for rs in du.filter_active_replica_sets(old_rss):
            scaled, _ = await self._scale_replica_set_and_record_event(rs, 0, d)
            scaled_down = scaled_down or scaled
        if scaled_down or self._old_pods_running(new_rs, old_rss, pod_map):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if new_rs is None:
            new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, True)
            assert new_rs is not None
            all_rss = [*old_rss, new_rs]
        await self._scale_replica_set_and_record_event(new_rs, du.spec_replicas(d), d)
        if du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup_deployment(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    @staticmethod
    def _old_pods_running(new_rs: Obj | None, old_rss: Sequence[Obj], pod_map: Mapping[str, list[Obj]]) -> bool:
        """Old ReplicaSets still report replicas, or an old pod is not Failed/Succeeded (Unknown counts as
        running: it may be)."""
        if du.status_count(old_rss, "replicas") > 0:
            return True
        new_uid = uid_of(new_rs) if new_rs is not None else None
        for rs_uid, pods in pod_map.items():
            if rs_uid == new_uid:
                continue
            for pod in pods:
                if not is_pod_terminal(pod):
                    return True
        return False
