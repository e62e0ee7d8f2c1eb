"""Plugins that judge a pod by its own state: PodLifeTime, RemoveFailedPods and
RemovePodsHavingTooManyRestarts (upstream ``podlifetime``, ``removefailedpods``,
``removepodshavingtoomanyrestarts``).

* **PodLifeTime** evicts pods older than ``maxPodLifeTimeSeconds`` and/or in one of ``states`` (a phase, a pod
  status reason, or a container's waiting/terminated reason), of ``ownerKinds``, with a matching condition or
  exit code; all pods of all nodes are collected, then evicted oldest first; a node limit skips only that pod.
* **RemoveFailedPods** evicts Failed pods at least ``minPodLifetimeSeconds`` old (default 3600), not owned by
  ``excludeOwnerKinds``, matching ``reasons`` (container waiting/terminated reasons and the pod's reason) and
  ``exitCodes`` when given.
* **RemovePodsHavingTooManyRestarts** evicts pods whose containers restarted at least ``podRestartThreshold``
  times in total (init containers with ``includingInitContainers``), in ``states`` when given (the phase or a
  container's waiting reason), most restarted first.

Each lists pods through the profile's Filter and PreEvictionFilter and its namespaces/label selector; ages are
taken on the injected clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.meta import parse_time
from kubeplane.api.views import meta_of, name_of, status_of
from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, TotalLimitError

from .common import StopPass, evict_on_node, pod_filter

Obj = Mapping[str, Any]
LIFETIME: Final = "PodLifeTime"
FAILED: Final = "RemoveFailedPods"
RESTARTS: Final = "RemovePodsHavingTooManyRestarts"
LIFETIME_STATES: Final = frozenset(
    {
        "Running", "Pending", "Succeeded", "Failed", "Unknown",
        "NodeAffinity", "NodeLost", "Shutdown", "UnexpectedAdmissionError",
        "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff", "CreateContainerConfigError",
        "ErrImagePull", "CreateContainerError", "InvalidImageName",
        "OOMKilled", "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun", "StartError",
    }
)  # fmt: skip
RESTART_STATES: Final = ("CrashLoopBackOff", "Running")


def _go_set(values: Sequence[str]) -> str:
    return "[" + " ".join(sorted(values)) + "]"


def _ns_error(namespaces: Namespaces | None) -> list[str]:
    if namespaces is not None and namespaces.include and namespaces.exclude:
        return ["only one of Include/Exclude namespaces can be set"]
    return []


def _age(pod: Obj, now: float) -> float:
    created = meta_of(pod).get("creationTimestamp")
    return now - parse_time(str(created)).timestamp() if created else 0.0


def _statuses(pod: Obj, key: str) -> list[Obj]:
    return list(status_of(pod).get(key) or ())


def _state_reasons(statuses: Sequence[Obj], *states: str) -> list[str]:
    out = []
    for cs in statuses:
        for state in states:
            reason = ((cs.get("state") or {}).get(state) or {}).get("reason")
            if reason:
                out.append(str(reason))
    return out


def _exit_codes(statuses: Sequence[Obj]) -> list[int]:
    out = []
    for cs in statuses:
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is not None:
            out.append(int(terminated.get("exitCode") or 0))
    return out


# --- PodLifeTime -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LifeTimeArgs:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    owner_kinds: Namespaces | None = None
    """``ownerKinds`` (include/exclude, the shape of namespaces)."""
    max_pod_lifetime_seconds: int | None = None
    states: tuple[str, ...] = ()
    conditions: tuple[Mapping[str, Any], ...] = ()
    exit_codes: tuple[int, ...] = ()
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False


def parse_lifetime_args(raw: Any) -> LifeTimeArgs:
    f = Fields(raw, "PodLifeTimeArgs")
    conditions = f._get("conditions") or []
    args = LifeTimeArgs(
        namespaces=f.namespaces(),
        label_selector=f.label_selector(),
        owner_kinds=f.namespaces("ownerKinds"),
        max_pod_lifetime_seconds=f.uint("maxPodLifeTimeSeconds"),
        states=f.strings("states") or (),
        conditions=tuple(c for c in conditions if isinstance(c, Mapping)),
        exit_codes=f.ints("exitCodes"),
        including_init_containers=f.boolean("includingInitContainers"),
        including_ephemeral_containers=f.boolean("includingEphemeralContainers"),
    )
    f.done()
    return args


def validate_lifetime(args: LifeTimeArgs) -> list[str]:
    errs = _ns_error(args.namespaces)
    if args.owner_kinds is not None and args.owner_kinds.include and args.owner_kinds.exclude:
        errs.append("only one of Include/Exclude ownerKinds can be set")
    if args.states and not set(args.states) <= LIFETIME_STATES:
        errs.append(f"states must be one of {_go_set(list(LIFETIME_STATES))}")
    for i, c in enumerate(args.conditions):
        if (
            not (c.get("type") or c.get("status") or c.get("reason"))
            and c.get("minTimeSinceLastTransitionSeconds") is None
        ):
            errs.append(
                f"conditions[{i}]: at least one of type, status, reason, or minTimeSinceLastTransitionSeconds "
                "must be set"
            )
    if args.max_pod_lifetime_seconds is None and not (args.states or args.conditions or args.exit_codes):
        errs.append(
            "at least one filtering criterion must be specified "
            "(maxPodLifeTimeSeconds, states, conditions, or exitCodes)"
        )
    return errs


class PodLifeTime:
    name = LIFETIME

    def __init__(self, args: LifeTimeArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.base = pod_filter(handle, namespaces=args.namespaces, label_selector=args.label_selector)

    def _matches(self, pod: Obj) -> bool:
        a, now = self.args, self.handle.now
        if not self.base(pod):
            return False
        if a.max_pod_lifetime_seconds is not None:
            age = _age(pod, now)
            if age < 0 or int(age) <= a.max_pod_lifetime_seconds:
                return False
        if a.states and not self._in_states(pod):
            return False
        kinds = [str(ref.get("kind")) for ref in podutil.owner_refs(pod)]
        if a.owner_kinds is not None:
            if a.owner_kinds.include and not any(k in a.owner_kinds.include for k in kinds):
                return False
            if not a.owner_kinds.include and a.owner_kinds.exclude and any(k in a.owner_kinds.exclude for k in kinds):
                return False
        if a.conditions and not self._condition_matches(pod):
            return False
        if a.exit_codes:
            codes = _exit_codes(_statuses(pod, "containerStatuses"))
            if a.including_init_containers:
                codes += _exit_codes(_statuses(pod, "initContainerStatuses"))
            if not set(codes) & set(a.exit_codes):
                return False
        return True

    def _in_states(self, pod: Obj) -> bool:
        states, status = set(self.args.states), status_of(pod)
        if str(status.get("phase") or "") in states or str(status.get("reason") or "") in states:
            return True
        keys = ["containerStatuses"]
        if self.args.including_init_containers:
            keys.append("initContainerStatuses")
        if self.args.including_ephemeral_containers:
            keys.append("ephemeralContainerStatuses")
        return any(r in states for k in keys for r in _state_reasons(_statuses(pod, k), "waiting", "terminated"))

    def _condition_matches(self, pod: Obj) -> bool:
        for f in self.args.conditions:
            for cond in status_of(pod).get("conditions") or ():
                if any(f.get(k) and cond.get(k) != f.get(k) for k in ("type", "status", "reason")):
                    continue
                minimum = f.get("minTimeSinceLastTransitionSeconds")
                if minimum is not None:
                    changed = cond.get("lastTransitionTime")
                    if not changed:
                        continue
                    idle = self.handle.now - parse_time(str(changed)).timestamp()
                    if idle < 0 or int(idle) < int(minimum):
                        continue
                return True
        return False

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        pods = [p for node in nodes for p in self.handle.pods_on_node(name_of(node)) if self._matches(p)]
        pods.sort(key=lambda p: str(meta_of(p).get("creationTimestamp") or ""))  # oldest first (RFC 3339 sorts)
        for pod in pods:
            try:
                await self.handle.evict(pod, strategy=LIFETIME)
            except TotalLimitError:
                return
            except EvictionLimitError:
                continue


# --- RemoveFailedPods --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FailedArgs:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    exclude_owner_kinds: tuple[str, ...] = ()
    min_pod_lifetime_seconds: int | None = 3600
    reasons: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = ()
    including_init_containers: bool = False


def parse_failed_args(raw: Any) -> FailedArgs:
    f = Fields(raw, "RemoveFailedPodsArgs")
    minimum = f.uint("minPodLifetimeSeconds")
    args = FailedArgs(
        namespaces=f.namespaces(),
        label_selector=f.label_selector(),
        exclude_owner_kinds=f.strings("excludeOwnerKinds") or (),
        min_pod_lifetime_seconds=3600 if minimum is None else minimum,  # upstream SetDefaults_RemoveFailedPodsArgs
        reasons=f.strings("reasons") or (),
        exit_codes=f.ints("exitCodes"),
        including_init_containers=f.boolean("includingInitContainers"),
    )
    f.done()
    return args


def validate_failed(args: FailedArgs) -> list[str]:
    return _ns_error(args.namespaces)


class RemoveFailedPods:
    name = FAILED

    def __init__(self, args: FailedArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.base = pod_filter(handle, namespaces=args.namespaces, label_selector=args.label_selector)

    def _can_evict(self, pod: Obj) -> bool:
        a = self.args
        if a.min_pod_lifetime_seconds is not None and int(_age(pod, self.handle.now)) < a.min_pod_lifetime_seconds:
            return False
        if a.exclude_owner_kinds and any(r.get("kind") in a.exclude_owner_kinds for r in podutil.owner_refs(pod)):
            return False
        if a.reasons:
            reasons = _state_reasons(_statuses(pod, "containerStatuses"), "waiting", "terminated")
            status = status_of(pod)
            if status.get("phase") == "Failed" and status.get("reason"):
                reasons.append(str(status["reason"]))
            if a.including_init_containers:
                reasons += _state_reasons(_statuses(pod, "initContainerStatuses"), "waiting", "terminated")
            if not set(reasons) & set(a.reasons):
                return False
        if a.exit_codes:
            codes = _exit_codes(_statuses(pod, "containerStatuses"))
            if a.including_init_containers:
                codes += _exit_codes(_statuses(pod, "initContainerStatuses"))
            if not set(codes) & set(a.exit_codes):
                return False
        return True

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        try:
            for node in nodes:
                pods = [
                    p
                    for p in self.handle.pods_on_node(name_of(node))
                    if podutil.phase(p) == "Failed" and self.base(p) and self._can_evict(p)
                ]
                await evict_on_node(self.handle, pods, strategy=FAILED)
        except StopPass:
            return


# --- RemovePodsHavingTooManyRestarts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestartsArgs:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    states: tuple[str, ...] = ()


def parse_restarts_args(raw: Any) -> RestartsArgs:
    f = Fields(raw, "RemovePodsHavingTooManyRestartsArgs")
    args = RestartsArgs(
        namespaces=f.namespaces(),
        label_selector=f.label_selector(),
        pod_restart_threshold=f.integer("podRestartThreshold") or 0,
        including_init_containers=f.boolean("includingInitContainers"),
        states=f.strings("states") or (),
    )
    f.done()
    return args


def validate_restarts(args: RestartsArgs) -> list[str]:
    errs = _ns_error(args.namespaces)
    if args.pod_restart_threshold < 1:
        errs.append("invalid PodsHavingTooManyRestarts threshold")
    if not set(args.states) <= set(RESTART_STATES):
        errs.append(f"states must be one of {_go_set(list(RESTART_STATES))}")
    return errs


def total_restarts(pod: Obj, *, init: bool) -> int:
    total = sum(int(cs.get("restartCount") or 0) for cs in _statuses(pod, "containerStatuses"))
    if init:
        total += sum(int(cs.get("restartCount") or 0) for cs in _statuses(pod, "initContainerStatuses"))
    return total


class RemovePodsHavingTooManyRestarts:
    name = RESTARTS

    def __init__(self, args: RestartsArgs, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.base = pod_filter(handle, namespaces=args.namespaces, label_selector=args.label_selector)

    def _matches(self, pod: Obj) -> bool:
        a = self.args
        if not self.base(pod) or total_restarts(pod, init=a.including_init_containers) < a.pod_restart_threshold:
            return False
        if not a.states:
            return True
        if podutil.phase(pod) in a.states:
            return True
        keys = ["containerStatuses", *(["initContainerStatuses"] if a.including_init_containers else [])]
        return any(r in a.states for k in keys for r in _state_reasons(_statuses(pod, k), "waiting"))

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        init = self.args.including_init_containers
        try:
            for node in nodes:
                pods = [p for p in self.handle.pods_on_node(name_of(node)) if self._matches(p)]
                pods.sort(key=lambda p: -total_restarts(p, init=init))
                await evict_on_node(self.handle, pods, strategy=RESTARTS)
        except StopPass:
            return
