"""The simulated container runtime of one pod, and the pod status the kubelet reports for it.

A :class:`PodRuntime` is what a kubelet knows about a pod it admitted: the simulated containers' states, the
sandbox IP, the phase. :meth:`PodRuntime.status_patch` renders it as the status part the kubelet owns, in
upstream's shape (``pkg/kubelet/kubelet_pods.go`` ``generateAPIPodStatus``, ``pkg/kubelet/status``):

* ``phase``: Pending until every regular container has started, Running while any runs, Succeeded when all
  exited 0 and will not restart, Failed otherwise (``getPhase``);
* conditions ``PodReadyToStartContainers`` (sandbox ready), ``Initialized`` (init containers done),
  ``ContainersReady`` and ``Ready`` (every container ready), and ``PodScheduled`` only when the pod lacks it (a
  pod bound by hand); ``lastTransitionTime`` changes only when a condition's status changes;
* ``containerStatuses`` / ``initContainerStatuses`` with ``state`` (exactly one of waiting/running/terminated),
  ``lastState``, ``ready``, ``started``, ``restartCount``, ``image``, ``imageID``, ``containerID``;
* ``hostIP``/``hostIPs``, ``podIP``/``podIPs``, ``startTime``.

The patch is a strategic merge patch: conditions merge by ``type`` (a condition's unset ``reason``/``message``
are sent as ``null`` so a recovered condition loses the old explanation); container status lists have no
merge key upstream and are replaced whole.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.pods import is_restartable_init_container, observed_generation, with_observed_generation
from kubeplane.api.views import TERMINAL_PHASES, PodView

from .container_logs import ContainerLog, exited_line, started_line

Obj = dict[str, Any]

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


def normalize_image(image: str) -> str:
    """containerd's full reference: ``nginx`` -> ``docker.io/library/nginx:latest``."""
    name, digest = image, ""
    if "@" in name:
        name, digest = name.split("@", 1)
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if rest else f"docker.io/library/{name}"
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def image_id(image: str) -> str:
    """A stable digest reference for a simulated image (``repo@sha256:...``)."""
    full = normalize_image(image)
    repo = full.split("@", 1)[0].rsplit(":", 1)[0] if "@" not in full else full.split("@", 1)[0]
    return f"{repo}@sha256:{hashlib.sha256(full.encode()).hexdigest()}"


@dataclass(slots=True)
class ContainerRuntime:
    """One simulated container; ``state`` is the wire-form state map (one key)."""

    name: str
    image: str
    init: bool = False
    sidecar: bool = False
    state: Obj = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: Obj = field(default_factory=dict)
    restart_count: int = 0
    container_id: str = ""
    started: bool = False
    exit_code: int | None = None
    started_at: float = 0.0
    """Unix time of the current run's start (the resource metrics' container_start_time_seconds)."""
    log: ContainerLog = field(default_factory=ContainerLog)
    """What the container printed, per run (:mod:`~kubeplane.kubelet.container_logs`): each start opens a run,
    each exit ends it."""
    process: bool = False
    """It runs as a real process (:mod:`~kubeplane.kubelet.process_runtime`): its log holds only what the
    process prints, not the simulated runtime's lines."""

    @property
    def running(self) -> bool:
        return "running" in self.state

    @property
    def terminated(self) -> bool:
        return "terminated" in self.state

    @property
    def ready(self) -> bool:
        """No probes are simulated: a running container is ready (upstream: ready once started without a
        readiness probe)."""
        return self.running

    def start(self, uid: str, now: float) -> None:
        self.container_id = (
            "containerd://" + hashlib.sha256(f"{uid}/{self.name}/{self.restart_count}".encode()).hexdigest()
        )
        self.state = {"running": {"startedAt": format_time(now)}}
        self.started = True
        self.started_at = now
        self.exit_code = None
        self.log.open(self.restart_count)
        if not self.process:
            self.log.write(self.restart_count, now, started_line(self.name, self.image))

    def terminate(self, exit_code: int, now: float, reason: str | None = None) -> None:
        started = self.state.get("running", {}).get("startedAt")
        terminated: Obj = {"exitCode": exit_code, "reason": reason or ("Completed" if exit_code == 0 else "Error")}
        if started:
            terminated["startedAt"] = started
        terminated["finishedAt"] = format_time(now)
        if self.container_id:
            terminated["containerID"] = self.container_id
        self.state = {"terminated": terminated}
        self.started = False
        self.exit_code = exit_code
        if not self.process:
            self.log.write(self.restart_count, now, exited_line(self.name, exit_code))
        self.log.finish(self.restart_count)

    def wait_restart(self, reason: str, message: str) -> None:
        """After an exit that will be restarted: the exit becomes ``lastState``, the container waits."""
        self.last_state = self.state
        self.restart_count += 1
        self.state = {"waiting": {"reason": reason, "message": message}}

    def status(self) -> Obj:
        out: Obj = {
            "name": self.name,
            "state": dict(self.state),
            "lastState": dict(self.last_state),
            "ready": self.ready,
            "restartCount": self.restart_count,
            "image": normalize_image(self.image) if self.container_id else self.image,
            "imageID": image_id(self.image) if self.container_id else "",
            "started": self.started,
        }
        if self.container_id:
            out["containerID"] = self.container_id
        return out


def _condition(type_: str, status: bool, now: str, reason: str = "", message: str = "") -> Obj:
    """A pod condition for a strategic merge patch: ``reason``/``message`` are ``null`` when unset so a condition
    that recovers loses the old explanation (the merge by ``type`` would keep it otherwise)."""
    return {
        "type": type_,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
        "reason": reason or None,
        "message": message or None,
    }


@dataclass(slots=True)
class PodRuntime:
    """What the kubelet runs for one pod (see the module docstring). ``holding`` is true while the pod counts
    against the node (admitted and not terminal)."""

    uid: str
    namespace: str
    name: str
    node: str
    pod: Obj
    host_ip: str
    start_time: str
    containers: list[ContainerRuntime]
    init_containers: list[ContainerRuntime]
    pod_ip: str = ""
    sandbox_ready: bool = False
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    holding: bool = True
    terminating: bool = False
    delete_requested: bool = False
    extra_conditions: list[Obj] = field(default_factory=list)
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (status, lastTransitionTime)
    static_hash: str = ""
    memory_usage: int | None = None
    """The simulated memory usage (bytes), computed once by the eviction manager."""
    rejected: bool = False
    """Rejected at admission (or found terminal): the status is only phase, reason and message."""

    @classmethod
    def for_pod(cls, pod: Mapping[str, Any], host_ip: str, now: float) -> PodRuntime:
        view = PodView(pod)
        meta = view.meta
        return cls(
            uid=meta.uid,
            namespace=meta.namespace,
            name=str(meta["name"]),
            node=view.node_name,
            pod=dict(pod),
            host_ip=host_ip,
            start_time=format_time(now),
            containers=[ContainerRuntime(c["name"], c.get("image", "")) for c in view.containers],
            init_containers=[
                ContainerRuntime(c["name"], c.get("image", ""), init=True, sidecar=is_restartable_init_container(c))
                for c in view.init_containers
            ],
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    def all_containers(self) -> list[ContainerRuntime]:
        return [*self.init_containers, *self.containers]

    def _transition(self, type_: str, status: bool, now: str) -> str:
        text = "True" if status else "False"
        previous = self.transitions.get(type_)
        if previous is None or previous[0] != text:
            self.transitions[type_] = (text, now)
            return now
        return previous[1]

    def conditions(self, now: float) -> list[Obj]:
        stamp = format_time(now)
        succeeded = self.phase == "Succeeded"
        regular = self.containers
        pending_init = [c.name for c in self.init_containers if not c.sidecar and not c.terminated]
        init_failed = any(c.exit_code for c in self.init_containers if not c.sidecar and c.terminated)
        initialized = (not pending_init and not init_failed) or succeeded
        unready = [c.name for c in regular if not c.ready] + [
            c.name for c in self.init_containers if c.sidecar and not c.ready
        ]
        all_ready = not unready and not self.terminal
        out = []
        sandbox = self.sandbox_ready and not self.terminal
        out.append(
            _condition(
                "PodReadyToStartContainers", sandbox, self._transition("PodReadyToStartContainers", sandbox, stamp)
            )
        )
        incomplete = f"containers with incomplete status: [{' '.join(pending_init)}]"
        when_initialized = self._transition("Initialized", initialized, stamp)
        if initialized:
            reason = "PodCompleted" if succeeded and self.init_containers else ""
            out.append(_condition("Initialized", True, when_initialized, reason))
        else:
            out.append(_condition("Initialized", False, when_initialized, "ContainersNotInitialized", incomplete))
        for type_ in ("ContainersReady", "Ready"):
            when = self._transition(type_, all_ready, stamp)
            if all_ready:
                out.append(_condition(type_, True, when))
            elif succeeded:
                out.append(_condition(type_, False, when, "PodCompleted"))
            elif type_ == "Ready" and not initialized:
                out.append(_condition(type_, False, when, "ContainersNotInitialized", incomplete))
            else:
                names = unready or [c.name for c in regular]
                out.append(_condition(type_, False, when, "ContainersNotReady",
                                      f"containers with unready status: [{' '.join(names)}]"))  # fmt: skip
        return out

    def status_patch(self, now: float) -> Obj:
        """The kubelet-owned part of ``status`` as a strategic merge patch (module docstring)."""
        generation = observed_generation(self.pod)
        status: Obj = {"observedGeneration": generation} if generation else {}
        status["phase"] = self.phase
        conditions = self.conditions(now)
        existing = {c.get("type"): c for c in PodView(self.pod).conditions}
        scheduled = existing.get("PodScheduled")
        if scheduled is None:
            stamp = self.transitions.setdefault("PodScheduled", ("True", self.start_time))[1]
            conditions.insert(0, _condition("PodScheduled", True, stamp))
        elif generation and scheduled.get("observedGeneration") != generation:
            # upstream's kubelet reports PodScheduled too, so its observedGeneration follows the pod's; the
            # condition merges by type, so the rest of it (the binding's) stays
            conditions.insert(0, {"type": "PodScheduled", "observedGeneration": generation})
        if generation:
            conditions = [with_observed_generation(c, self.pod) for c in conditions]
        status["conditions"] = conditions + self.extra_conditions
        status["hostIP"] = self.host_ip
        status["hostIPs"] = [{"ip": self.host_ip}]
        if self.pod_ip:
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
        status["startTime"] = self.start_time
        if self.init_containers:
            status["initContainerStatuses"] = [c.status() for c in self.init_containers]
        status["containerStatuses"] = [c.status() for c in self.containers]
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        return {"metadata": {"uid": self.uid}, "status": status} if self.uid else {"status": status}

    def rejected_patch(self) -> Obj:
        """What the kubelet writes for a pod it rejects (upstream ``rejectPod``): phase, reason, message."""
        generation = observed_generation(self.pod)  # upstream SetPodStatus stamps every status it is given
        status: Obj = {"observedGeneration": generation} if generation else {}
        status["phase"] = self.phase
        if self.reason:
            status["reason"] = self.reason
        if self.message:
            status["message"] = self.message
        return {"status": status}


class IPAllocator:
    """Pod IPs from a node's podCIDR, lowest free first, from the second host address (the first is the
    bridge's gateway, as flannel's ``cni0``). Released addresses are reused."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.ip_network(cidr, strict=False)
        self._next = 2
        self._free: list[int] = []
        self._used: set[int] = set()

    def allocate(self) -> str:
        import heapq

        while self._free:
            offset = heapq.heappop(self._free)
            if offset not in self._used:
                self._used.add(offset)
                return str(self.network.network_address + offset)
        if self._next >= self.network.num_addresses - 1:
            raise RuntimeError(f"pod CIDR {self.network} is exhausted")
        while self._next in self._used:
            self._next += 1
        offset = self._next
        self._next += 1
        self._used.add(offset)
        return str(self.network.network_address + offset)

    def reserve(self, ip: str) -> bool:
        """Mark an address in use (a pod found running at start-up); False if it is not in this CIDR."""
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return False
        if address not in self.network:
            return False
        self._used.add(int(address) - int(self.network.network_address))
        return True

    def release(self, ip: str) -> None:
        import heapq

        try:
            offset = int(ipaddress.ip_address(ip)) - int(self.network.network_address)
        except ValueError:
            return
        if offset in self._used:
            self._used.discard(offset)
            heapq.heappush(self._free, offset)
