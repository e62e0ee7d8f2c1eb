"""The state one Job sync works on (upstream ``syncJobCtx``) and the pieces of the controller its parts share.

:class:`JobParts` is what :mod:`.job_manage` (creating and deleting pods) and :mod:`.job_status` (counting
finished pods, removing finalizers, writing the status) need from the controller; :class:`SyncJobCtx` is one
sync's view of one Job. ``job`` in it is a private deep copy (or the object the last status write returned),
never the informer's cached object, so the sync may change it in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.resources import ResourceInfo
from kubeplane.client.clock import Clock
from kubeplane.client.events import EventRecorder
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers.controller_utils import PodControl
from kubeplane.controllers.expectations import ControllerExpectations
from kubeplane.controllers.job_backoff import BackoffRecord, BackoffStore
from kubeplane.controllers.job_indexed import Intervals
from kubeplane.controllers.job_tracking import FinalizerExpectations

__all__ = ["JobParts", "PodMutator", "SyncJobCtx"]

PodMutator = Callable[[Obj, Obj, int | None], None]
"""``(job, pod, completion_index)``: changes a pod about to be created, in place (see
:attr:`JobParts.pod_mutators`)."""


@dataclass
class JobParts:
    client: Client
    jobs: ResourceInfo
    pod_control: PodControl
    recorder: EventRecorder
    clock: Clock
    expectations: ControllerExpectations
    finalizer_expectations: FinalizerExpectations
    backoff_store: BackoffStore
    enqueue_after: Callable[[str, float], None]
    """Look at a Job key again after a delay (at least the 1 s batching period for pod-failure backoff)."""
    pod_mutators: list[PodMutator] = field(default_factory=list)
    """Hooks run on every pod just before it is created, after the Job's own changes (completion index,
    hostname, finalizer): e.g. gang scheduling setting ``spec.schedulingGroup`` for a Job that references a
    Workload (``controllers/job_podgroups.py``)."""


@dataclass
class SyncJobCtx:
    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    key: str
    ready: int = 0
    terminating: int = 0
    succeeded: int = 0
    failed: int = 0
    finished_condition: Obj | None = None
    prev_succeeded_indexes: Intervals = field(default_factory=Intervals)
    succeeded_indexes: Intervals = field(default_factory=Intervals)
    failed_indexes: Intervals | None = None
    new_backoff_record: BackoffRecord = field(default_factory=lambda: BackoffRecord(""))
    expected_rm_finalizers: frozenset[str] = frozenset()
    uncounted_succeeded: set[str] = field(default_factory=set)
    uncounted_failed: set[str] = field(default_factory=set)
    pods_with_delayed_deletion_per_index: dict[int, Obj] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
