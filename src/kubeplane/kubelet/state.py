"""What the fleet's managers share: the options, one simulated kubelet's state, pod tasks, events, the final delete.

The managers (:mod:`.node_status`, :mod:`.pod_workers`, :mod:`.status_manager`, :mod:`.eviction_manager`,
:mod:`.device_manager`, :mod:`.mirror_pods`) each own one job, as upstream's kubelet (``pkg/kubelet``) is a set of
small managers; this module holds the state they all read, so none needs a pointer to the whole
:class:`~kubeplane.kubelet.fleet.Fleet`.

Invariants:

* :class:`SimNode` is one kubelet's state. ``pods`` holds exactly the runtimes that count against the node
  (``PodRuntime.holding``); ``gpus`` holds the devices of pods in ``pods`` (the device manager's accounting);
  ``stopped_by`` is empty exactly when the kubelet runs.
* :class:`PodTasks` holds at most one live task per key (a pod UID, or ``"mirror <hash>"`` ...): spawning under
  a key cancels the task it replaces, and a finished task removes itself only if it is still the one registered.
* :class:`NodeEvents` gives every node its own recorder (source ``kubelet``, host the node), created on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeplane.api.durations import parse_duration
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import annotations_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.client.events import EventRecorder
from kubeplane.client.interface import Client

from . import eviction
from .config import NodeSpec
from .node import sorted_images
from .runtime import IPAllocator, PodRuntime, normalize_image

log = logging.getLogger("kubeplane.kubelet.fleet")

Obj = dict[str, Any]

DURATION_ANNOTATION = "sim.kubeplane.io/duration"
EXIT_CODE_ANNOTATION = "sim.kubeplane.io/exit-code"
SHUTDOWN_ANNOTATION = "sim.kubeplane.io/shutdown-duration"
HEARTBEAT_ANNOTATION = "sim.kubeplane.io/heartbeat"


@dataclass
class FleetOptions:
    """Timings (upstream defaults) and the simulated delays of container start-up."""

    status_update_frequency: float = 10.0
    status_report_frequency: float = 300.0
    lease_renew_interval: float = 10.0
    eviction_monitoring_period: float = 10.0
    pressure_transition_period: float = eviction.PRESSURE_TRANSITION_PERIOD
    file_check_frequency: float = 20.0
    sandbox_delay: float = 0.0
    pull_delay: float = 0.5
    create_delay: float = 0.0
    start_delay: float = 0.0
    shutdown_delay: float | None = None
    """Seconds a container takes to exit after SIGTERM, for nodes whose config does not say; None:
    :data:`~kubeplane.kubelet.termination.DEFAULT_STOP_TIME`. The grace period bounds it (then SIGKILL)."""
    batch_run_time: float = 5.0
    """Seconds a container of a restartPolicy Never/OnFailure pod without ``sim.kubeplane.io/duration`` runs
    before it exits 0, for nodes whose config does not say (``batchRunTime``; ``--batch-run-time``)."""
    pulled_image_size: int = 100 * 2**20
    status_workers: int = 16
    cheap_leases: bool = True
    """Renew Leases written as the trusted in-process caller by one compare-and-put of the object the full update
    would store (:mod:`~kubeplane.kubelet.lease_writer`); False: every renewal a full API update."""
    register_concurrency: int = 16
    kubelet_api: bool = False
    """Serve the kubelet API (container logs, resource metrics) on one loopback port for the whole fleet
    (:mod:`~kubeplane.kubelet.kubelet_server`); ``kubeplane up`` and ``kubeplane kubelet`` turn it on."""
    kubelet_api_port: int = 0
    """Its port (0: a free one); every node advertises it in ``daemonEndpoints``."""
    real_processes: bool = False
    """Run containers of kubeplane's own image as real kubeplane processes
    (:mod:`~kubeplane.kubelet.process_runtime`); ``kubeplane up`` and ``kubeplane kubelet`` turn it on."""
    run_dir: Path | None = None
    """Where those pods' files go; None: a temporary directory the fleet removes when it stops."""
    state_dir: Path | None = None
    """The kubelets' root directory (upstream ``--root-dir``): each node's DRA checkpoint is
    ``<state_dir>/<node>/dra_manager_state``; ``kubeplane up`` uses ``DATA_DIR/kubelet``. None: nothing persists."""


def seconds(text: str) -> float | None:
    """A Go duration (``"1m30s"``) or plain seconds (``"90"``) in seconds; None when it is neither."""
    try:
        return parse_duration(text.strip()) / 1e9
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def annotation(obj: Mapping[str, Any], key: str) -> str | None:
    value = annotations_of(obj).get(key)
    return None if value is None else str(value)


@dataclass(eq=False)
class SimNode:
    """One simulated kubelet's state (see the module docstring for its invariants)."""

    spec: NodeSpec
    node: Obj | None = None
    uid: str = ""
    ips: IPAllocator = field(init=False)
    images: dict[str, Obj] = field(default_factory=dict)  # normalized name -> node.status.images entry
    pods: dict[str, PodRuntime] = field(default_factory=dict)  # uid -> runtime holding resources
    stopped_by: set[str] = field(default_factory=set)  # "api", "annotation", "config"
    booting: bool = False  # registered NotReady until Fleet.mark_ready (a cloud's node being provisioned)
    memory_pressure: bool = False
    pressure_seen_at: float = float("-inf")
    last_report: float = float("-inf")
    reported: tuple[Any, ...] = ()
    full_report_due: bool = True
    lease: Obj | None = None
    recorder: EventRecorder | None = None
    held: set[str] = field(default_factory=set)  # uids whose writes wait for the node to come back
    static: dict[str, Obj] = field(default_factory=dict)  # config hash -> static pod
    static_runtimes: dict[str, PodRuntime] = field(default_factory=dict)  # config hash -> runtime
    thresholds: list[eviction.Threshold] = field(default_factory=list)
    gpus: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)  # uid -> (milli, devices)

    def __post_init__(self) -> None:
        """What follows from the spec: the IP pool, the images, the eviction thresholds, a configured stop."""
        self.ips = IPAllocator(self.spec.pod_cidr)
        try:
            self.thresholds = eviction.parse_thresholds(self.spec.eviction_hard or eviction.DEFAULT_EVICTION_HARD)
        except ValueError as exc:
            raise ValueError(f"node {self.spec.name}: evictionHard: {exc}") from None
        if not self.spec.heartbeat:
            self.stopped_by.add("config")
        for entry in self.spec.images:
            for name in entry["names"]:
                self.images[normalize_image(name)] = dict(entry)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def running(self) -> bool:
        return not self.stopped_by

    def has_image(self, image: str) -> bool:
        return normalize_image(image) in self.images

    def image_list(self) -> list[Obj]:
        unique = {id(e): e for e in self.images.values()}
        return sorted_images(list(unique.values()))

    def release(self, rt: PodRuntime) -> None:
        """The pod stops counting against the node: its resources, GPU devices and IP are free again."""
        if self.pods.pop(rt.uid, None) is not None and rt.pod_ip and rt.pod_ip != self.spec.address:
            self.ips.release(rt.pod_ip)
        self.gpus.pop(rt.uid, None)
        rt.holding = False


class PodTasks:
    """The fleet's per-pod tasks by key (upstream's pod workers run one goroutine per pod)."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def spawn(self, key: str, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` under ``key``, cancelling the live task it replaces."""
        old = self._tasks.get(key)
        if old is not None and not old.done():
            old.cancel()
        task = asyncio.get_running_loop().create_task(coro, name=f"kubelet pod {key}")
        self._tasks[key] = task
        task.add_done_callback(functools.partial(self._done, key))

    def pop(self, key: str) -> asyncio.Task[None] | None:
        """Take the task of ``key`` out of the registry (not cancelled)."""
        return self._tasks.pop(key, None)

    def cancel(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def adopt(self, key: str, task: asyncio.Task[None]) -> None:
        """Register a live task under a new key (a mirror pod re-created under another UID)."""
        self._tasks[key] = task

    def all(self) -> Iterable[asyncio.Task[None]]:
        return list(self._tasks.values())

    def clear(self) -> None:
        self._tasks.clear()

    def _done(self, key: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
        if not task.cancelled() and task.exception() is not None:
            log.error("kubelet pod task %s failed", key, exc_info=task.exception())


NodeClients = Callable[[str], Client]
"""The client a node's kubelet writes with, by node name: its own identity (``system:node:<name>`` in
``system:nodes``), as each real kubelet has its own credentials; the fleet's shared informers read with the fleet's
client instead."""


def shared_client(client: Client) -> NodeClients:
    """Every node writing with ``client`` (no per-node identity: tests, clusters without authorization)."""
    return lambda _node: client


class NodeEvents:
    """Events through each node's own recorder (source ``kubelet``, host the node name), written with the node's
    client."""

    def __init__(
        self, client: Client, *, clock: Clock, rng: random.Random, node_client: NodeClients | None = None
    ) -> None:
        self._client, self._clock, self._rng = client, clock, rng
        self._node_client = node_client or shared_client(client)

    def pod(self, sim: SimNode, obj: Obj, type_: str, reason: str, message: str, field_path: str = "") -> None:
        """Record an Event about a pod (or, with ``kind: Node``, the node) through the node's recorder."""
        if sim.recorder is None:
            sim.recorder = EventRecorder(
                self._node_client(sim.name), component="kubelet", host=sim.name, clock=self._clock, rng=self._rng
            )
        ref = obj if obj.get("kind") == "Node" else {"apiVersion": "v1", "kind": "Pod", "metadata": obj["metadata"]}
        sim.recorder.record(ref, type_, reason, message, field_path=field_path)

    def node(self, sim: SimNode, type_: str, reason: str, message: str) -> None:
        """An Event about the Node (upstream's node reference uses the node name as its UID)."""
        self.pod(sim, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": sim.name, "uid": sim.name}},
                 type_, reason, message)  # fmt: skip


async def delete_pod(client: Client, pods: ResourceInfo, *, namespace: str, name: str, uid: str) -> None:
    """Delete a pod for good (grace 0) if it is still the one of ``uid`` (a UID precondition); gone is fine."""
    with contextlib.suppress(NotFoundError, ConflictError):
        await client.delete(
            pods, name, namespace=namespace, grace_period_seconds=0, preconditions={"uid": uid} if uid else None
        )


async def delay(clock: Clock, seconds: float) -> None:
    if seconds > 0:
        await clock.sleep(seconds)
