"""Pod lifecycle on a node: upstream's pod workers (``pkg/kubelet/pod_workers.go``) with the parts of
``kubelet.go``/``kuberuntime`` they drive: admit, start the sandbox and the containers, run to completion or
restart, and terminate.

* **Admission** (:mod:`~kubeplane.kubelet.admission`): a rejected pod becomes Failed with upstream's reason and a
  Warning event; an admitted pod holds its resources (and GPU devices) on the node from then on.
* **Start** (``SyncPod``): a pod with claim volumes first waits until they are attached and mounted
  (:mod:`~kubeplane.kubelet.volume_manager`; ContainerCreating meanwhile), then the sandbox (pod IP from the
  node's podCIDR, the node's address for hostNetwork), then
  each init container and each container: Pulling/Pulled (skipped when the image is on the node and the policy
  allows), Created, Started; then Running.
* **Run to completion**: a pod annotated ``sim.kubeplane.io/duration`` exits after that long with
  ``sim.kubeplane.io/exit-code``; a batch pod (restartPolicy Never/OnFailure) without it after the node's batch
  run time; the ``sim.kubeplane.io/fail-*`` annotations make runs fail (:mod:`~kubeplane.kubelet.sim_exits`).
  By restartPolicy the pod then ends Succeeded/Failed or restarts with upstream's back-off (immediately, then
  10 s doubling to 5 min; ``CrashLoopBackOff``).
* **Termination** (``killPod``): Killing, wait for the containers to exit within the grace period, write the
  terminal status, then the status manager deletes the pod for good.
* **Adoption**: a pod already running on the node when the fleet starts (a restarted ``kubeplane up``) is taken
  as running (its IP reserved, its devices kept), without events or admission.

Invariants: one task per pod UID at a time (:class:`~kubeplane.kubelet.state.PodTasks`; termination cancels the
start-up or run task it replaces); every change of a runtime is followed by ``StatusManager.mark_dirty``; a pod
stops holding resources (``SimNode.release``) exactly when it is terminal or its termination finished. All waiting
is on the injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from kubeplane.api.durations import format_duration
from kubeplane.api.meta import parse_time
from kubeplane.api.views import PodView, spec_of
from kubeplane.client.clock import Clock

from . import admission, container_logs, sim_exits, termination
from .device_manager import DeviceManager
from .dra.manager import FAILED_PREPARE_REASON, DRAManager, pod_uses_dra
from .node import registration_node
from .pod_files import MountError
from .process_image import START_ERROR_EXIT_CODE, StartError
from .process_runtime import ProcessRuntime
from .runtime import ContainerRuntime, PodRuntime, normalize_image
from .state import (
    DURATION_ANNOTATION,
    EXIT_CODE_ANNOTATION,
    SHUTDOWN_ANNOTATION,
    FleetOptions,
    NodeEvents,
    Obj,
    PodTasks,
    SimNode,
    annotation,
    delay,
    seconds,
)
from .status_manager import StatusManager
from .volume_manager import VolumeManager, has_claims

log = logging.getLogger("kubeplane.kubelet.fleet")

BACKOFF_INITIAL, BACKOFF_MAX = 10.0, 300.0  # upstream container restart back-off
MOUNT_RETRY = 2.0  # seconds between volume set-up attempts (upstream's volume manager retries with back-off)


def _default_pull_policy(image: str) -> str:
    """The API server's default: Always for ``:latest`` or no tag, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


class PodWorkers:
    """Admits, runs and terminates the fleet's pods (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock,
        options: FleetOptions,
        runtimes: MutableMapping[str, PodRuntime],
        tasks: PodTasks,
        status: StatusManager,
        devices: DeviceManager,
        events: NodeEvents,
        volumes: VolumeManager | None = None,
        dra: DRAManager | None = None,
        processes: ProcessRuntime | None = None,
    ) -> None:
        self._clock, self._options, self._runtimes = clock, options, runtimes
        self._tasks, self._status, self._devices, self._events = tasks, status, devices, events
        self._volumes = volumes
        self._dra = dra
        self._processes = processes

    def new_runtime(self, sim: SimNode, pod: Obj) -> PodRuntime:
        """A fresh runtime for ``pod`` on ``sim``, known to the fleet (and the status manager) from now on.
        With a process runtime, its regular containers of kubeplane's image are marked to run as processes."""
        rt = PodRuntime.for_pod(pod, sim.spec.address, self._clock.now())
        if self._processes is not None:
            for c in rt.containers:
                c.process = self._processes.runs(c.image)
        self._runtimes[rt.uid] = rt
        return rt

    # --- admission and the lifecycle ----------------------------------------------------------------------------

    def admit(self, sim: SimNode, pod: Obj) -> None:
        """Admit ``pod`` against what the node runs (upstream ``canAdmitPod``) and start it, or reject it."""
        node = sim.node or registration_node(sim.spec, self._clock.now(), [])
        admitted = [r.pod for r in sim.pods.values() if r.holding]
        result = admission.admit_pod(
            pod, node, admitted, under_memory_pressure=sim.memory_pressure, gpu_idle=self._devices.idle(sim, node)
        )
        rt = self.new_runtime(sim, pod)
        if not result.admit:
            rt.phase, rt.reason, rt.message, rt.holding, rt.rejected = (
                "Failed",
                result.reason,
                result.message,
                False,
                True,
            )
            self._events.pod(sim, pod, "Warning", result.reason, result.message)
            self._status.mark_dirty(rt)
            return
        sim.pods[rt.uid] = rt
        self._devices.hold(sim, pod, result.devices)
        self._status.mark_dirty(rt)
        self._tasks.spawn(rt.uid, self.run_pod(sim, rt))

    async def run_pod(self, sim: SimNode, rt: PodRuntime) -> None:
        """Sandbox, init containers, containers, Running; then run to completion if the pod says how long."""
        pod = rt.pod
        if self._volumes is not None and has_claims(pod):  # upstream SyncPod: WaitForAttachAndMount first
            await self._volumes.wait_for_attach_and_mount(sim, rt)
            pod = rt.pod
        if self._dra is not None and pod_uses_dra(pod):  # kuberuntime SyncPod: PrepareDynamicResources first
            await self._dra.wait_for_prepare(
                sim.name,
                lambda: rt.pod,
                lambda msg: self._events.pod(sim, rt.pod, "Warning", FAILED_PREPARE_REASON, msg),
            )
            pod = rt.pod
        spec = spec_of(pod)
        await delay(self._clock, self._options.sandbox_delay)
        rt.pod_ip = sim.spec.address if spec.get("hostNetwork") else sim.ips.allocate()
        rt.sandbox_ready = True
        if any(c.process for c in rt.containers):
            await self._set_up_files(sim, rt)
        containers = {c["name"]: c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
        for c in rt.init_containers:
            await self._start_container(sim, rt, c, containers[c.name], "initContainers")
            if not c.sidecar:
                c.terminate(0, self._clock.now())
            self._status.mark_dirty(rt)
        for c in rt.containers:
            await self._start_container(sim, rt, c, containers[c.name], "containers")
        rt.phase = "Running"
        self._status.mark_dirty(rt)
        every = container_logs.log_every(pod)
        del pod  # not held for the run's length: the version the pod started with (the runtime has the latest)
        if every is None:
            await self._run(sim, rt, containers)
            return
        ticker = asyncio.ensure_future(self._repeat_logs(rt, every))
        try:
            await self._run(sim, rt, containers)
            await ticker  # a pod that runs until deleted keeps printing until its task is cancelled
        finally:
            ticker.cancel()

    async def _run(self, sim: SimNode, rt: PodRuntime, containers: Mapping[str, Mapping[str, Any]]) -> None:
        if any(c.process for c in rt.containers):
            await self._run_processes(sim, rt, containers)
            return
        for key in (DURATION_ANNOTATION, EXIT_CODE_ANNOTATION, *sim_exits.KNOBS):
            text = annotation(rt.pod, key)
            if text is not None and not sim_exits.well_formed(key, text):
                log.warning("pod %s: ignoring bad %s %r", rt.key, key, text)
        await self._run_to_completion(sim, rt, containers)

    async def _repeat_logs(self, rt: PodRuntime, every: float) -> None:
        """``sim.kubeplane.io/log-every``: each running container prints its lines again every ``every`` s
        (a container that is not running at a tick skips it), until the pod is terminal."""
        while not rt.terminal:
            await self._clock.sleep(every)
            now = self._clock.now()
            for c in rt.all_containers():
                lines = container_logs.pod_lines(rt.pod, c.name)
                if c.running and lines is not None:
                    c.log.write(c.restart_count, now, lines)

    async def _start_container(
        self, sim: SimNode, rt: PodRuntime, c: ContainerRuntime, container: Mapping[str, Any], kind: str
    ) -> None:
        pod = rt.pod
        path = f"spec.{kind}{{{c.name}}}"
        policy = container.get("imagePullPolicy") or _default_pull_policy(c.image)
        present = sim.has_image(c.image)
        if policy == "Always" or (policy == "IfNotPresent" and not present):
            self._events.pod(sim, pod, "Normal", "Pulling", f'Pulling image "{c.image}"', path)
            started = self._clock.monotonic()
            await delay(self._clock, 0.0 if present else self._options.pull_delay)
            took = format_duration(round((self._clock.monotonic() - started) * 1000) * 1_000_000)
            size = self._pull(sim, c.image)
            message = (
                f'Successfully pulled image "{c.image}" in {took} ({took} including waiting). Image size: {size} bytes.'
            )
            self._events.pod(sim, pod, "Normal", "Pulled", message, path)
        else:
            message = f'Container image "{c.image}" already present on machine and can be accessed by the pod'
            self._events.pod(sim, pod, "Normal", "Pulled", message, path)
        await delay(self._clock, self._options.create_delay)
        self._events.pod(sim, pod, "Normal", "Created", f"Created container: {c.name}", path)
        await delay(self._clock, self._options.start_delay)
        c.start(rt.uid, self._clock.now())
        if c.process:
            await self._start_process(sim, rt, c, container, path)
            return
        lines = container_logs.pod_lines(pod, c.name)
        if lines is not None:
            c.log.write(c.restart_count, self._clock.now(), lines)
        self._events.pod(sim, pod, "Normal", "Started", f"Started container {c.name}", path)

    def _pull(self, sim: SimNode, image: str) -> int:
        """The image is on the node from now on (and in ``status.images`` from the next report)."""
        key = normalize_image(image)
        entry = sim.images.get(key)
        if entry is None:
            names = [key.split("@")[0]]
            entry = sim.images[key] = {"names": names, "sizeBytes": self._options.pulled_image_size}
        return int(entry.get("sizeBytes", 0))

    async def _run_to_completion(
        self, sim: SimNode, rt: PodRuntime, containers: Mapping[str, Mapping[str, Any]]
    ) -> None:
        """Each run ends as :func:`~kubeplane.kubelet.sim_exits.plan_run` says; by restartPolicy the pod then ends
        Succeeded/Failed or its containers restart with upstream's back-off."""
        # the pod as it was when the run began, kept for the run's length (minutes): what the run reads of it
        # (spec, annotations, the metadata its BackOff events refer to), not that version's status
        pod = {key: value for key, value in rt.pod.items() if key != "status"}
        policy = spec_of(pod).get("restartPolicy") or "Always"
        batch_run_time = sim.spec.batch_run_time
        if batch_run_time is None:
            batch_run_time = self._options.batch_run_time
        while True:
            run = rt.containers[0].restart_count if rt.containers else 0
            plan = sim_exits.plan_run(pod, run, batch_run_time)
            if plan is None:
                return
            code = plan.exit_code
            await delay(self._clock, plan.seconds)
            now = self._clock.now()
            for c in rt.containers:
                c.terminate(code, now)
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                rt.phase = "Succeeded" if code == 0 else "Failed"
                for sidecar in rt.init_containers:
                    if sidecar.running:
                        sidecar.terminate(0, now)
                sim.release(rt)
                self.unprepare(sim, rt)
                self._status.mark_dirty(rt)
                return
            restarts = rt.containers[0].restart_count if rt.containers else 0
            backoff = 0.0 if restarts == 0 else min(BACKOFF_INITIAL * 2 ** (restarts - 1), BACKOFF_MAX)
            pod_ref = f"{rt.name}_{rt.namespace}({rt.uid})"
            for c in rt.containers:
                wait = format_duration(int(backoff * 1e9))
                c.wait_restart(
                    "CrashLoopBackOff", f"back-off {wait} restarting failed container={c.name} pod={pod_ref}"
                )
                if backoff:
                    message = f"Back-off restarting failed container {c.name} in pod {pod_ref}"
                    self._events.pod(sim, pod, "Warning", "BackOff", message, f"spec.containers{{{c.name}}}")
            self._status.mark_dirty(rt)
            await delay(self._clock, backoff)
            for c in rt.containers:
                await self._start_container(sim, rt, c, containers[c.name], "containers")
            self._status.mark_dirty(rt)

    # --- containers that run as real processes (kubelet/process_runtime.py) ------------------------------------

    async def _set_up_files(self, sim: SimNode, rt: PodRuntime) -> None:
        """The pod's volumes on disk; while one cannot be set up (a missing ConfigMap), a ``FailedMount``
        Warning and a retry every :data:`MOUNT_RETRY` s, the containers waiting in ContainerCreating."""
        assert self._processes is not None
        while True:
            try:
                await self._processes.set_up(rt)
                return
            except MountError as exc:
                self._events.pod(sim, rt.pod, "Warning", "FailedMount", str(exc))
            await self._clock.sleep(MOUNT_RETRY)

    async def _start_process(
        self, sim: SimNode, rt: PodRuntime, c: ContainerRuntime, container: Mapping[str, Any], path: str
    ) -> None:
        """Start ``c``'s process, or end the run with upstream's ``StartError`` (exit code 128) and a
        ``Failed`` Warning when it cannot start."""
        assert self._processes is not None
        try:
            await self._processes.start(rt, c, container)
        except StartError as exc:
            c.terminate(START_ERROR_EXIT_CODE, self._clock.now(), "StartError")
            c.state["terminated"]["message"] = str(exc)
            self._events.pod(sim, rt.pod, "Warning", "Failed", f"Error: {exc}", path)
            return
        self._events.pod(sim, rt.pod, "Normal", "Started", f"Started container {c.name}", path)

    async def _run_processes(self, sim: SimNode, rt: PodRuntime, containers: Mapping[str, Mapping[str, Any]]) -> None:
        """Each real container runs until its process exits, then restarts by the pod's restartPolicy with
        upstream's per-container back-off; once every regular container has ended for good the pod is
        Succeeded (all exited 0) or Failed. Simulated containers of the same pod run until it is deleted."""
        await asyncio.gather(*(self._watch_process(sim, rt, c, containers[c.name]) for c in rt.containers if c.process))
        if not all(c.terminated for c in rt.containers):
            return
        now = self._clock.now()
        rt.phase = "Succeeded" if all(c.exit_code == 0 for c in rt.containers) else "Failed"
        for sidecar in rt.init_containers:
            if sidecar.running:
                sidecar.terminate(0, now)
        sim.release(rt)
        self.unprepare(sim, rt)
        self._status.mark_dirty(rt)

    async def _watch_process(
        self, sim: SimNode, rt: PodRuntime, c: ContainerRuntime, container: Mapping[str, Any]
    ) -> None:
        assert self._processes is not None
        policy = spec_of(rt.pod).get("restartPolicy") or "Always"
        while True:
            if c.running:
                code = await self._processes.wait(rt.uid, c.name)
                c.terminate(code, self._clock.now())
                self._status.mark_dirty(rt)
            code = c.exit_code or 0
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                return
            restarts = c.restart_count
            backoff = 0.0 if restarts == 0 else min(BACKOFF_INITIAL * 2 ** (restarts - 1), BACKOFF_MAX)
            pod_ref = f"{rt.name}_{rt.namespace}({rt.uid})"
            wait = format_duration(int(backoff * 1e9))
            c.wait_restart("CrashLoopBackOff", f"back-off {wait} restarting failed container={c.name} pod={pod_ref}")
            if backoff:
                message = f"Back-off restarting failed container {c.name} in pod {pod_ref}"
                self._events.pod(sim, rt.pod, "Warning", "BackOff", message, f"spec.containers{{{c.name}}}")
            self._status.mark_dirty(rt)
            await delay(self._clock, backoff)
            await self._start_container(sim, rt, c, container, "containers")
            self._status.mark_dirty(rt)

    async def _resume_processes(self, sim: SimNode, rt: PodRuntime) -> None:
        """An adopted pod whose real containers were running: their processes ended with the previous fleet, so
        each is terminated as upstream reports a running container the runtime no longer knows
        (``ContainerStatusUnknown``, exit code 137) and restarted by the pod's restartPolicy."""
        await self._set_up_files(sim, rt)
        now = self._clock.now()
        for c in rt.containers:
            if c.process and c.running:
                c.terminate(termination.EXIT_CODE_SIGKILL, now, "ContainerStatusUnknown")
                c.state["terminated"]["message"] = "The container could not be located when the pod was terminated"
        self._status.mark_dirty(rt)
        spec = spec_of(rt.pod)
        await self._run_processes(sim, rt, {c["name"]: c for c in spec.get("containers") or []})

    def adopt_running(self, sim: SimNode, pod: Obj) -> PodRuntime:
        """A pod this node ran before the fleet (re)started: take its reported state as the truth."""
        rt = self.new_runtime(sim, pod)
        view = PodView(pod)
        status = view.status
        rt.start_time = status.get("startTime") or rt.start_time
        rt.pod_ip = status.get("podIP") or ""
        if rt.pod_ip and rt.pod_ip != sim.spec.address:
            sim.ips.reserve(rt.pod_ip)
        rt.sandbox_ready = bool(rt.pod_ip)
        rt.phase = status.get("phase") or "Pending"
        by_name = {s.get("name"): s for s in [*view.init_container_statuses, *view.container_statuses]}
        for c in rt.all_containers():
            found = by_name.get(c.name) or {}
            if found.get("state"):
                c.state = {k: v for k, v in found["state"].items() if v is not None}
            c.last_state = found.get("lastState") or {}
            c.restart_count = int(found.get("restartCount") or 0)
            c.container_id = found.get("containerID") or ""
            c.started = bool(found.get("started"))
            if c.running:
                with contextlib.suppress(ValueError):
                    c.started_at = parse_time(c.state["running"].get("startedAt") or "").timestamp()
            if c.running:  # what it printed before the fleet restarted is lost; new lines go to a fresh run
                c.log.open(c.restart_count)
        for cond in status.get("conditions") or []:
            if cond.get("type") and cond.get("lastTransitionTime"):
                rt.transitions[cond["type"]] = (cond.get("status", ""), cond["lastTransitionTime"])
        for c in rt.all_containers():
            if (image := c.image) and c.container_id:
                self._pull(sim, image)
        if not rt.terminal:
            sim.pods[rt.uid] = rt
            self._devices.adopt(sim, pod)
            if any(not c.running for c in rt.containers) and rt.phase != "Running":
                self._tasks.spawn(rt.uid, self.run_pod(sim, rt))  # it never finished starting: start it again
            elif any(c.process and c.running for c in rt.containers):
                self._tasks.spawn(rt.uid, self._resume_processes(sim, rt))  # their processes ended with the fleet
        else:
            rt.holding = False
        return rt

    def unprepare(self, sim: SimNode, rt: PodRuntime) -> None:
        """The pod is done with its DRA claims (upstream ``SyncTerminatedPod``: ``UnprepareDynamicResources``)."""
        if self._dra is not None:
            self._dra.unprepare(sim.name, rt.pod)

    # --- termination -------------------------------------------------------------------------------------------

    def begin_termination(self, sim: SimNode, rt: PodRuntime) -> None:
        """The pod got a deletionTimestamp: stop whatever its task does and kill it gracefully."""
        rt.terminating = True
        self._tasks.cancel(rt.uid)
        self._tasks.spawn(rt.uid, self._terminate(sim, rt))

    async def _terminate(self, sim: SimNode, rt: PodRuntime) -> None:
        """Graceful termination (upstream ``killPod``): Killing, each container exits its stop time after SIGTERM
        (after its preStop hook) or is killed at the end of the grace period (:mod:`~kubeplane.kubelet.termination`),
        then the terminal status is written and the status manager deletes the pod for good."""
        pod = rt.pod
        running = [c for c in rt.all_containers() if c.running]
        if running:
            for c in running:
                path = f"spec.{'initContainers' if c.init else 'containers'}{{{c.name}}}"
                self._events.pod(sim, pod, "Normal", "Killing", f"Stopping container {c.name}", path)
                if not c.process:  # a real process prints what it does on SIGTERM itself
                    c.log.write(c.restart_count, self._clock.now(), container_logs.sigterm_line(c.name))
            killing = asyncio.gather(*(self._stop_process(rt, c) for c in running if c.process))
            simulated = [c for c in running if not c.process]
            stops = self._stops(sim, rt, simulated)
            started = self._clock.monotonic()
            times = sorted({s.at for s in stops.values()})
            for at in times:  # containers stop in parallel: each at its own time
                await delay(self._clock, started + at - self._clock.monotonic())
                now = self._clock.now()
                for c in simulated:
                    if stops[c.name].at == at:
                        c.terminate(stops[c.name].exit_code, now)
                if at != times[-1]:
                    self._status.mark_dirty(rt)
            await killing
        if not rt.terminal:
            exited_zero = all(c.exit_code == 0 for c in rt.containers if c.terminated) and all(
                c.terminated for c in rt.containers
            )
            rt.phase = "Succeeded" if exited_zero and running else "Failed"
        sim.release(rt)
        self.unprepare(sim, rt)
        rt.delete_requested = True
        self._status.mark_dirty(rt)

    async def _stop_process(self, rt: PodRuntime, c: ContainerRuntime) -> None:
        """A real container's kill (upstream ``killContainer``): its preStop sleep on the clock (bounded by the
        grace period), then SIGTERM with the rest of the grace period (at least 2 s) before SIGKILL."""
        assert self._processes is not None
        grace = termination.grace_period(rt.pod)
        spec = spec_of(rt.pod)
        specs = {x.get("name"): x for x in spec.get("containers") or []}
        hook = min(termination.pre_stop_sleep(specs.get(c.name) or {}), grace) if grace > 0 else 0.0
        await delay(self._clock, hook)
        code = await self._processes.stop(rt.uid, c.name, max(grace - hook, termination.MINIMUM_GRACE_PERIOD))
        c.terminate(code, self._clock.now())

    def _stops(
        self, sim: SimNode, rt: PodRuntime, running: list[ContainerRuntime]
    ) -> dict[str, termination.ContainerStop]:
        """When and how each running container ends (see :mod:`~kubeplane.kubelet.termination`)."""
        pod = rt.pod
        text = annotation(pod, SHUTDOWN_ANNOTATION)
        pod_setting = None if text is None else seconds(text)
        if text is not None and pod_setting is None:
            log.warning("pod %s: ignoring bad %s %r", rt.key, SHUTDOWN_ANNOTATION, text)
        stop = termination.stop_time(
            pod_setting=pod_setting, node_setting=sim.spec.shutdown_delay, fleet_setting=self._options.shutdown_delay
        )
        grace = termination.grace_period(pod)
        spec = spec_of(pod)
        specs = {c.get("name"): c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
        return {
            c.name: termination.container_stop(
                grace=grace, pre_stop=termination.pre_stop_sleep(specs.get(c.name) or {}), stop=stop
            )
            for c in running
        }
