"""Batch and gang workloads in a simulation: one record per Job, one per gang, and their percentiles.

* **Jobs** (:class:`JobObserver`, fed by the runner's Job informer): when each Job was created (simulated seconds
  from the start), the CronJob that owns it and the scheduled time it was created for
  (``batch.kubernetes.io/cronjob-scheduled-timestamp``), its ``status.startTime`` and ``status.completionTime``
  as the Job controller wrote them, how it finished (the true ``Complete``/``Failed`` condition) and when it was
  deleted (a CronJob's history limit, a TTL). A Job deleted during the run keeps its row: jobs.csv is every Job
  the run saw. **Job completion time** = completionTime - startTime, for Jobs that completed; its
  percentiles are ``job_completion_time_p50/p90/p99``.
* **Gangs** (:func:`gang_rows`): pods grouped by ``spec.schedulingGroup.podGroupName`` (v1.37's link from a pod
  to its scheduling.k8s.io PodGroup), per namespace. **Gang wait time** = the last of the group's pods bound -
  the first of them created, for groups whose every pod was bound; ``gang_wait_time_p50/p90/p99``.

Invariants: nothing here writes to the API or to the observer's event log, so ``event_log_hash`` of a run is
the same with or without these records; every time is rounded to the microsecond as in :mod:`.summary`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api.meta import parse_time
from kubeplane.api.views import annotations_of, controller_ref_of, mappings, meta_of, section, status_of

from .summary import percentile

if TYPE_CHECKING:
    from .clock import RealTimeClock, VirtualClock
    from .observer import PodRecord

__all__ = ["FIELDS", "JobObserver", "JobRecord", "gang_rows", "pod_group", "workload_summary"]

SCHEDULED_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"

FIELDS: Final = frozenset(
    {
        "jobs_created", "jobs_completed", "jobs_failed", "job_completion_time_p50", "job_completion_time_p90",
        "job_completion_time_p99", "gangs", "gangs_bound", "gang_wait_time_p50", "gang_wait_time_p90",
        "gang_wait_time_p99",
    }
)  # fmt: skip
"""The summary fields this module adds (a scenario's ``headline`` may name them)."""


def pod_group(pod: Mapping[str, Any]) -> str:
    """The PodGroup a pod belongs to (``spec.schedulingGroup.podGroupName``), or ``""``."""
    return str(section(pod, "spec", "schedulingGroup").get("podGroupName") or "")


@dataclass
class JobRecord:
    namespace: str
    name: str
    created: float
    owner: str = ""
    scheduled_for: str = ""
    started: float | None = None
    completed: float | None = None
    finished: str = ""
    deleted: float | None = None


class JobObserver:
    """Keeps a :class:`JobRecord` per Job from informer events; times are simulated seconds from the start."""

    def __init__(self, clock: VirtualClock | RealTimeClock) -> None:
        self.clock = clock
        self.jobs: dict[str, JobRecord] = {}

    def _sim_seconds(self, value: Any) -> float | None:
        """An RFC 3339 time of the run as simulated seconds from the start."""
        if not value:
            return None
        origin = self.clock.now() - self.clock.monotonic()
        return round(parse_time(str(value)).timestamp() - origin, 6)

    def job(self, _old: Mapping[str, Any] | None, job: Mapping[str, Any]) -> None:
        meta = meta_of(job)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        record = self.jobs.get(key)
        if record is None:
            ref = controller_ref_of(job)
            record = self.jobs[key] = JobRecord(
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or ""),
                created=round(self.clock.monotonic(), 6),
                owner=str(ref.get("name") or "") if ref is not None and ref.get("kind") == "CronJob" else "",
                scheduled_for=str(annotations_of(job).get(SCHEDULED_ANNOTATION) or ""),
            )
        status = status_of(job)
        record.started = self._sim_seconds(status.get("startTime"))
        record.completed = self._sim_seconds(status.get("completionTime"))
        record.finished = next(
            (
                str(c.get("type"))
                for c in mappings(status, "conditions")
                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
            ),
            "",
        )

    def job_deleted(self, job: Mapping[str, Any]) -> None:
        meta = meta_of(job)
        record = self.jobs.get(f"{meta.get('namespace')}/{meta.get('name')}")
        if record is not None and record.deleted is None:
            record.deleted = round(self.clock.monotonic(), 6)

    def rows(self) -> list[dict[str, Any]]:
        """jobs.csv: one row per Job in creation order (then namespace, name)."""
        out = []
        for r in sorted(self.jobs.values(), key=lambda r: (r.created, r.namespace, r.name)):
            duration = None
            if r.finished == "Complete" and r.started is not None and r.completed is not None:
                duration = round(r.completed - r.started, 6)
            out.append(
                {
                    "namespace": r.namespace,
                    "name": r.name,
                    "owner": r.owner,
                    "created": r.created,
                    "scheduled_for": r.scheduled_for,
                    "started": r.started,
                    "completed": r.completed,
                    "finished": r.finished,
                    "completion_time": duration,
                    "deleted": r.deleted,
                }
            )
        return out


def gang_rows(pods: Sequence[PodRecord]) -> list[dict[str, Any]]:
    """gangs.csv: one row per PodGroup that pods named, in order of its first pod's creation."""
    groups: dict[tuple[str, str], list[PodRecord]] = {}
    for pod in pods:
        if pod.group:
            groups.setdefault((pod.namespace, pod.group), []).append(pod)
    out = []
    for (namespace, name), members in groups.items():
        first = min(p.created for p in members)
        bound = [p.scheduled for p in members if p.scheduled is not None]
        all_bound = len(bound) == len(members)
        out.append(
            {
                "namespace": namespace,
                "group": name,
                "pods": len(members),
                "pods_bound": len(bound),
                "first_created": round(first, 6),
                "last_created": round(max(p.created for p in members), 6),
                "last_bound": round(max(bound), 6) if all_bound else None,
                "wait_time": round(max(bound) - first, 6) if all_bound else None,
            }
        )
    out.sort(key=lambda g: (g["first_created"], g["namespace"], g["group"]))
    return out


def workload_summary(jobs: Sequence[Mapping[str, Any]], gangs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary fields of :data:`FIELDS` (percentiles None when nothing qualifies)."""
    completion = [j["completion_time"] for j in jobs if j["completion_time"] is not None]
    waits = [g["wait_time"] for g in gangs if g["wait_time"] is not None]
    return {
        "jobs_created": len(jobs),
        "jobs_completed": sum(1 for j in jobs if j["finished"] == "Complete"),
        "jobs_failed": sum(1 for j in jobs if j["finished"] == "Failed"),
        "job_completion_time_p50": percentile(completion, 0.5),
        "job_completion_time_p90": percentile(completion, 0.9),
        "job_completion_time_p99": percentile(completion, 0.99),
        "gangs": len(gangs),
        "gangs_bound": len(waits),
        "gang_wait_time_p50": percentile(waits, 0.5),
        "gang_wait_time_p90": percentile(waits, 0.9),
        "gang_wait_time_p99": percentile(waits, 0.99),
    }
