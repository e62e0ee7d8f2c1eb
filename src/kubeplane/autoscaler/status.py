"""The ``cluster-autoscaler-status`` ConfigMap (cluster-autoscaler's clusterstate/api/types.go and
clusterstate/utils/status.go), rewritten every loop.

``data.status`` is the YAML document of upstream's ``ClusterAutoscalerStatus`` (v1.30+ format): ``time``,
``autoscalerStatus`` (``Running``), ``clusterWide`` (``health`` with node counts, ``scaleUp``, ``scaleDown``)
and one ``nodeGroups`` entry per group (``health`` with ``cloudProviderTarget``/``minSize``/``maxSize``,
``scaleUp``, ``scaleDown`` with ``candidates``). Every condition keeps ``lastProbeTime`` (this loop) and
``lastTransitionTime`` (when its status last changed). The annotation
``cluster-autoscaler.kubernetes.io/last-updated`` carries the same time as ``time``, in Go's
``time.Time.String()`` form as upstream writes it.

Health is ``Unhealthy`` when more than ``ok-total-unready-count`` (3) nodes and more than 45 % of them are
NotReady (upstream's defaults); node counts: ``ready``, ``notStarted`` (upcoming: registered, not yet Ready),
``unready`` (NotReady, not upcoming), ``beingDeleted`` (tainted ToBeDeletedByClusterAutoscaler).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import yaml

from kubeplane.api.meta import format_time

__all__ = ["LAST_UPDATED_ANNOTATION", "GroupCounts", "StatusWriter", "go_time_string", "healthy", "summed"]

LAST_UPDATED_ANNOTATION = "cluster-autoscaler.kubernetes.io/last-updated"
OK_TOTAL_UNREADY_COUNT = 3
MAX_TOTAL_UNREADY_PERCENTAGE = 45.0


def go_time_string(t: float) -> str:
    """Go's ``time.Time.String()`` for a UTC time: ``2006-01-02 15:04:05.999999999 +0000 UTC``."""
    dt = datetime.fromtimestamp(t, UTC)
    frac = f"{dt.microsecond:06d}".rstrip("0")
    return dt.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "") + " +0000 UTC"


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """One group's (or the cluster's) node counts and activity this loop."""

    ready: int = 0
    not_started: int = 0
    unready: int = 0
    being_deleted: int = 0
    target: int = 0
    min_size: int = 0
    max_size: int = 0
    upcoming: int = 0
    candidates: int = 0

    @property
    def total(self) -> int:
        return self.ready + self.not_started + self.unready


def healthy(c: GroupCounts) -> bool:
    """Upstream IsClusterHealthy with its default flags: not more than ``ok-total-unready-count`` (3) unready
    nodes, or not more than ``max-total-unready-percentage`` (45) percent of them."""
    return not (c.unready > OK_TOTAL_UNREADY_COUNT and c.unready * 100 > MAX_TOTAL_UNREADY_PERCENTAGE * max(c.total, 1))


class StatusWriter:
    """Builds the status document and remembers when each condition's status changed."""

    def __init__(self) -> None:
        self._since: dict[tuple[str, str], tuple[str, float]] = {}

    def _condition(self, where: str, kind: str, status: str, now: float) -> dict[str, Any]:
        previous = self._since.get((where, kind))
        since = previous[1] if previous is not None and previous[0] == status else now
        self._since[(where, kind)] = (status, since)
        return {"status": status, "lastProbeTime": format_time(now), "lastTransitionTime": format_time(since)}

    def document(self, cluster: GroupCounts, groups: Mapping[str, GroupCounts], now: float) -> dict[str, Any]:
        def counts(c: GroupCounts) -> dict[str, Any]:
            registered: dict[str, Any] = {
                "total": c.total,
                "ready": c.ready,
                "notStarted": c.not_started,
            }
            if c.being_deleted:
                registered["beingDeleted"] = c.being_deleted
            registered["unready"] = {"total": c.unready, "resourceUnready": 0}
            return {"registered": registered, "longUnregistered": 0, "unregistered": 0}

        def scale_down(where: str, c: GroupCounts) -> dict[str, Any]:
            status = "CandidatesPresent" if c.candidates else "NoCandidates"
            out = self._condition(where, "scaleDown", status, now)
            if c.candidates:
                out = {"status": status, "candidates": c.candidates, **{k: v for k, v in out.items() if k != "status"}}
            return out

        health = self._condition("", "health", "Healthy" if healthy(cluster) else "Unhealthy", now)
        doc: dict[str, Any] = {
            "time": go_time_string(now),
            "autoscalerStatus": "Running",
            "clusterWide": {
                "health": {"status": health["status"], "nodeCounts": counts(cluster), **_times(health)},
                "scaleUp": self._condition("", "scaleUp", "InProgress" if cluster.upcoming else "NoActivity", now),
                "scaleDown": scale_down("", cluster),
            },
        }
        entries = []
        for name, c in groups.items():
            h = self._condition(name, "health", "Healthy" if healthy(c) else "Unhealthy", now)
            entries.append(
                {
                    "name": name,
                    "health": {
                        "status": h["status"],
                        "nodeCounts": counts(c),
                        "cloudProviderTarget": c.target,
                        "minSize": c.min_size,
                        "maxSize": c.max_size,
                        **_times(h),
                    },
                    "scaleUp": self._condition(name, "scaleUp", "InProgress" if c.upcoming else "NoActivity", now),
                    "scaleDown": scale_down(name, c),
                }
            )
        if entries:
            doc["nodeGroups"] = entries
        return doc

    def config_map(
        self, cluster: GroupCounts, groups: Mapping[str, GroupCounts], now: float, *, name: str, namespace: str
    ) -> dict[str, Any]:
        """The ConfigMap object to write."""
        doc = self.document(cluster, groups, now)
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": {LAST_UPDATED_ANNOTATION: doc["time"]},
            },
            "data": {"status": yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)},
        }


def _times(condition: Mapping[str, Any]) -> dict[str, Any]:
    return {"lastProbeTime": condition["lastProbeTime"], "lastTransitionTime": condition["lastTransitionTime"]}


def summed(groups: Sequence[GroupCounts]) -> GroupCounts:
    """The cluster-wide counts of these groups (nodes no group owns are added by the caller)."""
    return GroupCounts(
        ready=sum(g.ready for g in groups),
        not_started=sum(g.not_started for g in groups),
        unready=sum(g.unready for g in groups),
        being_deleted=sum(g.being_deleted for g in groups),
        upcoming=sum(g.upcoming for g in groups),
        candidates=sum(g.candidates for g in groups),
    )
