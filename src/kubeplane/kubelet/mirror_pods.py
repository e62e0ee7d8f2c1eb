"""Static pods and their mirror pods: upstream's file source (``pkg/kubelet/config/file.go``) and mirror client
(``pkg/kubelet/pod/mirror_client.go``) with the mirror-pod part of ``syncPod``.

With ``staticPodPath`` a node reads that directory every ``file_check_frequency`` (20 s): one static pod per
manifest (:mod:`kubeplane.kubelet.static_pods` parses them and names them ``<name>-<node>``). The kubelet runs a
static pod without admission (static pods are critical) and publishes a **mirror pod**, the API's view of it.

Invariants:

* ``SimNode.static`` holds the manifests read (config hash -> static pod), ``SimNode.static_runtimes`` the
  runtime of each that runs; a static pod runs once, however often its mirror pod is re-created: a new mirror
  pod (a new UID) takes over the runtime and its task.
* Deleting a mirror pod never stops its static pod: the mirror pod is deleted for good and created again. A
  mirror pod that is outdated (another config hash) is replaced; one whose manifest is gone (an orphan) is
  deleted. Removing the file stops the static pod and deletes its mirror pod.
* Every delete is for good (grace 0) with a UID precondition, so a newer mirror pod is never deleted by mistake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, MutableMapping

from kubeplane.api.views import is_being_deleted, name_of, namespace_of, uid_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import AlreadyExistsError
from kubeplane.client.interface import Client

from .pod_workers import PodWorkers
from .runtime import PodRuntime
from .state import FleetOptions, NodeClients, Obj, PodTasks, SimNode, delete_pod, shared_client
from .static_pods import load_static_pods, mirror_hash, mirror_pod
from .status_manager import StatusManager

log = logging.getLogger("kubeplane.kubelet.fleet")


class MirrorPods:
    """Runs each node's static pods and keeps their mirror pods in the API (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        options: FleetOptions,
        runtimes: MutableMapping[str, PodRuntime],
        tasks: PodTasks,
        workers: PodWorkers,
        status: StatusManager,
        pods_on_node: Callable[[str], Iterable[Obj]],
        node_client: NodeClients | None = None,
    ) -> None:
        """``pods_on_node(name)`` lists the pods the API shows bound to a node (the fleet's informer cache); a
        node's mirror pods are created and deleted with ``node_client(node)`` (the node's own identity)."""
        self._clock, self._options = clock, options
        self._node_client = node_client or shared_client(client)
        self._pods_res = client.resource("pods")
        self._runtimes, self._tasks, self._workers, self._status = runtimes, tasks, workers, status
        self._pods_on_node = pods_on_node

    async def run(self, sim: SimNode) -> None:
        """Read the node's manifest directory every ``file_check_frequency`` while the kubelet runs."""
        while True:
            if sim.running and sim.uid:
                try:
                    await self.sync(sim)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("kubelet %s: static pods: %s", sim.name, exc)
            await self._clock.sleep(self._options.file_check_frequency)

    async def sync(self, sim: SimNode) -> None:
        """Start the static pods of new manifests (through their mirror pods); stop those whose file is gone."""
        wanted = load_static_pods(sim.spec.static_pod_path, sim.name)
        for digest in list(sim.static):
            if digest not in wanted:
                del sim.static[digest]
                rt = sim.static_runtimes.pop(digest, None)
                if rt is not None:
                    sim.release(rt)
                    await delete_pod(
                        self._node_client(sim.name), self._pods_res, namespace=rt.namespace, name=rt.name, uid=rt.uid
                    )
        for digest, pod in wanted.items():
            if digest not in sim.static:
                sim.static[digest] = pod
                await self.ensure_mirror(sim, digest)

    async def ensure_mirror(self, sim: SimNode, digest: str) -> None:
        """Create the mirror pod of a static pod unless the API already shows a current one (upstream
        ``syncPod``: a mirror pod that is terminating or outdated is deleted and created again)."""
        pod = sim.static.get(digest)
        if pod is None:
            return
        name, namespace = name_of(pod), namespace_of(pod)
        for existing in self._pods_on_node(sim.name):
            if name_of(existing) == name and namespace_of(existing) == namespace:
                if mirror_hash(existing) == digest and not is_being_deleted(existing):
                    return
                await delete_pod(
                    self._node_client(sim.name), self._pods_res, namespace=namespace, name=name, uid=uid_of(existing)
                )
        with contextlib.suppress(AlreadyExistsError):  # the informer shows it soon; the next scan checks it
            await self._node_client(sim.name).create(
                self._pods_res, mirror_pod(pod, sim.name, sim.uid, self._clock.now()), namespace=namespace
            )

    def adopt_mirror(self, sim: SimNode, pod: Obj) -> PodRuntime | None:
        """A mirror pod appeared: run its static pod (once; a re-created mirror pod takes over the runtime)."""
        digest = mirror_hash(pod)
        if digest not in sim.static:
            if not is_being_deleted(pod):
                uid = uid_of(pod)
                orphan = delete_pod(
                    self._node_client(sim.name), self._pods_res, namespace=namespace_of(pod), name=name_of(pod), uid=uid
                )
                self._tasks.spawn(f"orphan {uid}", orphan)
            return None
        if is_being_deleted(pod):
            # deleting a mirror pod does not stop its static pod: delete it for good and create it again
            self.replace_mirror(sim, pod, digest)
            return None
        rt = sim.static_runtimes.get(digest)
        uid = uid_of(pod)
        if rt is None:
            rt = self._workers.new_runtime(sim, pod)
            rt.static_hash = digest
            sim.static_runtimes[digest] = rt
            sim.pods[rt.uid] = rt
            self._tasks.spawn(rt.uid, self._workers.run_pod(sim, rt))  # static pods are critical: admitted as is
            return rt
        old_uid = rt.uid
        self._runtimes.pop(old_uid, None)
        sim.pods.pop(old_uid, None)
        task = self._tasks.pop(old_uid)
        rt.uid, rt.pod = uid, pod
        self._runtimes[uid] = rt
        if rt.holding:
            sim.pods[uid] = rt
        if task is not None and not task.done():
            self._tasks.adopt(uid, task)
        self._status.mark_dirty(rt)
        return rt

    def replace_mirror(self, sim: SimNode, pod: Obj, digest: str) -> None:
        """The mirror pod got a deletionTimestamp: the static pod keeps running; delete the mirror pod for good and
        create it again."""
        self._tasks.spawn(f"mirror {digest}", self._replace_mirror(sim, pod, digest))

    def recreate_mirror(self, sim: SimNode, uid: str, digest: str) -> None:
        """The mirror pod of ``uid`` is gone from the API while its manifest stays: create it again."""
        self._tasks.spawn(f"mirror {uid}", self.ensure_mirror(sim, digest))

    async def _replace_mirror(self, sim: SimNode, pod: Obj, digest: str) -> None:
        await delete_pod(
            self._node_client(sim.name), self._pods_res, namespace=namespace_of(pod), name=name_of(pod), uid=uid_of(pod)
        )
        await self.ensure_mirror(sim, digest)
