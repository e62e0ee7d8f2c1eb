"""The Deployment's RollingUpdate strategy (upstream ``pkg/controller/deployment/rolling.go``): grow the new
ReplicaSet while the total stays within replicas+maxSurge, shrink old ones (unhealthy replicas first) while
available replicas stay at least replicas-maxUnavailable.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.base import key_of
from kubeplane.controllers.deployment_sync import DeploymentSync

__all__ = ["DeploymentRolling"]


class DeploymentRolling(DeploymentSync):
    """``rolloutRolling`` and its reconcile steps, over :class:`~.deployment_sync.DeploymentSync`."""

    async def _rollout_rolling(self, d: Obj, rs_list: Sequence[Obj]) -> None:
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, True)
        assert new_rs is not None
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        if await self._reconcile_new_replica_set(all_rss, new_rs, d):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if await self._reconcile_old_replica_sets(all_rss, du.filter_active_replica_sets(old_rss), new_rs, d):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup_deployment(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    async def _reconcile_new_replica_set(self, all_rss: Sequence[Obj | None], new_rs: Obj, d: Obj) -> bool:
        replicas = du.spec_replicas(d)
        current = du.spec_replicas(new_rs)
        if current == replicas:
            return False
        if current > replicas:
            return (await self._scale_replica_set_and_record_event(new_rs, replicas, d))[0]
        target = du.new_rs_new_replicas(d, all_rss, new_rs)
        return (await self._scale_replica_set_and_record_event(new_rs, target, d))[0]

    async def _reconcile_old_replica_sets(
        self, all_rss: Sequence[Obj | None], old_rss: list[Obj], new_rs: Obj, d: Obj
    ) -> bool:
        """Scale old ReplicaSets down as far as availability allows: at most
        ``all - (replicas - maxUnavailable) - unavailable-in-new``, unhealthy replicas first."""
        if du.replica_count(old_rss) == 0:
            return False
        min_available = du.spec_replicas(d) - du.max_unavailable(d)
        new_unavailable = du.spec_replicas(new_rs) - du.status_int(new_rs, "availableReplicas")
        max_scaled_down = du.replica_count(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = await self._cleanup_unhealthy_replicas(old_rss, d, max_scaled_down)
        scaled = await self._scale_down_old_replica_sets_for_rolling_update([*old_rss, new_rs], old_rss, d)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy_replicas(self, old_rss: list[Obj], d: Obj, max_cleanup: int) -> tuple[list[Obj], int]:
        """Scale away old replicas that are not available (oldest ReplicaSets first), at most ``max_cleanup``:
        they cost no availability and would otherwise block the rollout."""
        old_rss = du.by_creation_timestamp(old_rss)
        total = 0
        for i, rs in enumerate(old_rss):
            if total >= max_cleanup:
                break
            replicas = du.spec_replicas(rs)
            available = du.status_int(rs, "availableReplicas")
            if replicas in (0, available):
                continue
            count = min(max_cleanup - total, replicas - available)
            new_count = replicas - count
            if new_count > replicas:
                raise ValueError(
                    f"when cleaning up unhealthy replicas, got invalid request to scale down "
                    f"{key_of(rs)} {replicas} -> {new_count}"
                )
            _, old_rss[i] = await self._scale_replica_set_and_record_event(rs, new_count, d)
            total += count
        return old_rss, total

    async def _scale_down_old_replica_sets_for_rolling_update(
        self, all_rss: Sequence[Obj | None], old_rss: Sequence[Obj], d: Obj
    ) -> int:
        min_available = du.spec_replicas(d) - du.max_unavailable(d)
        available = du.status_count(all_rss, "availableReplicas")
        if available <= min_available:
            return 0
        to_scale_down = available - min_available
        total = 0
        for rs in du.by_creation_timestamp(old_rss):
            if total >= to_scale_down:
                break
            replicas = du.spec_replicas(rs)
            if replicas == 0:
                continue
            count = min(replicas, to_scale_down - total)
            await self._scale_replica_set_and_record_event(rs, replicas - count, d)
            total += count
        return total
