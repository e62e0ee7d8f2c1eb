"""How each pod of a simulation ended: completed, evicted, preempted, deleted, rejected — or still running or
pending when the run stopped.

Kubernetes records *who* ended a pod on the pod itself, and this module reads nothing else (the objects the
informers deliver, plus the pods the simulation itself evicted through the Eviction API):

* **preempted** — the scheduler's preemption: the victim gets the ``DisruptionTarget`` condition with reason
  ``PreemptionByScheduler`` before its deletion (upstream ``Executor.PreemptPod``; the ``Preempted`` event
  follows).
* **evicted** — three sources, one meaning (the pod was pushed off a node it was running on):
  the kubelet's eviction manager (phase Failed, reason ``Evicted``, condition reason ``TerminationByKubelet``),
  the taint eviction controller (condition reason ``DeletionByTaintManager``, then a graceful delete) and the
  Eviction API (upstream's registry adds the condition reason ``EvictionByEvictionAPI``; kubeplane's API server
  does not yet, so a pod the scenario's ``drain`` evicted counts as evicted by the runner's word).
* **deleted** — a deletion without a disruption condition before the pod finished: the scenario's trace
  deletions, a ReplicaSet scaling down or rolling out, pod garbage collection of a removed node
  (``DeletionByPodGC``: the node is gone, nothing was evicted from a running node).
* **completed** — phase Succeeded or Failed reached by the pod itself, after it ran (a job that ran its
  duration, a container that exited).
* **rejected** — phase Failed without ever running: the kubelet refused the pod at admission
  (``UnexpectedAdmissionError``, ``OutOfcpu``, node pressure...). Kept apart from *completed* because such a pod
  never ran: it is what a scheduler that ignores a resource produces (the openb examples' default scheduler).
* **running**, **pending** — not ended at the end of the run, by its last phase (Running, or Pending: not bound,
  or bound and not started yet).

Invariant: a pod's end is decided once, at its *end moment* — the first time it is seen terminal, marked for
deletion (``deletionTimestamp``) or gone — from what the pod carries then. A pod that succeeded and was deleted
afterwards stays completed; a pod marked for deletion that then exits 0 (phase Succeeded after SIGTERM, as the
kubelet reports a graceful stop) stays deleted or evicted. Every pod has exactly one end, so the ends of a run add
up to its pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.views import TERMINAL_PHASES, status_of

COMPLETED: Final = "completed"
EVICTED: Final = "evicted"
PREEMPTED: Final = "preempted"
DELETED: Final = "deleted"
REJECTED: Final = "rejected"
RUNNING: Final = "running"
PENDING: Final = "pending"

ENDED: Final = (COMPLETED, EVICTED, PREEMPTED, DELETED, REJECTED)
"""The ends a pod reaches during a run, in the order outputs list them."""
ENDS: Final = (*ENDED, RUNNING, PENDING)
"""Every value of pods.csv's ``end`` column."""

DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
EVICTION_REASONS: Final = frozenset({"TerminationByKubelet", "DeletionByTaintManager", "EvictionByEvictionAPI"})
"""``DisruptionTarget`` reasons that mean an eviction (upstream ``v1.PodReason*``)."""
KUBELET_EVICTED: Final = "Evicted"
"""``status.reason`` of a pod the kubelet evicted (and of one it rejected for node pressure, which never ran)."""
TERMINAL: Final = TERMINAL_PHASES
"""The terminal pod phases: :data:`kubeplane.api.views.TERMINAL_PHASES`, re-exported for the observer's records."""


def disruption_reason(pod: Mapping[str, Any]) -> str:
    """The reason of the pod's ``DisruptionTarget=True`` condition, or ``""``."""
    for condition in status_of(pod).get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == DISRUPTION_TARGET:
            return str(condition.get("reason") or "") if condition.get("status") == "True" else ""
    return ""


@dataclass(frozen=True, slots=True)
class EndEvidence:
    """What a pod carried at its end moment. ``by_deletion``: the moment was a deletion (marked or gone), not a
    terminal phase; ``ran``: it had been seen Running."""

    by_deletion: bool
    phase: str
    disruption: str
    status_reason: str
    ran: bool

    @classmethod
    def of(cls, pod: Mapping[str, Any], *, by_deletion: bool, ran: bool) -> EndEvidence:
        status = pod.get("status") or {}
        return cls(
            by_deletion=by_deletion,
            phase=str(status.get("phase") or "Pending"),
            disruption=disruption_reason(pod),
            status_reason=str(status.get("reason") or ""),
            ran=ran,
        )


def classify(evidence: EndEvidence | None, *, phase: str, api_evicted: bool = False) -> str:
    """The pod's end (one of :data:`ENDS`): ``evidence`` from its end moment (None if it never ended), ``phase``
    its last phase, ``api_evicted`` whether the simulation evicted it through the Eviction API."""
    if evidence is None:
        return PENDING if phase == "Pending" else RUNNING
    if evidence.disruption == PREEMPTION_BY_SCHEDULER:
        return PREEMPTED
    if evidence.disruption in EVICTION_REASONS or api_evicted:
        return EVICTED
    if evidence.status_reason == KUBELET_EVICTED and evidence.ran:
        return EVICTED
    if evidence.by_deletion:
        return DELETED
    if evidence.disruption:  # DeletionByPodGC: the node went away; the pod is deleted next
        return DELETED
    if not evidence.ran and evidence.phase == "Failed":
        return REJECTED
    return COMPLETED
