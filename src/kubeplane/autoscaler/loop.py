"""The autoscaler's loop (cluster-autoscaler's core/static_autoscaler.go ``RunOnce``), every ``scan-interval``
on the injected clock.

It list-watches the API like every component (one SharedInformer per resource: nodes, pods, PDBs and what the
scheduler's Filter plugins read) and reaches the cloud only through the :class:`~.provider.CloudProvider`. One
loop (:meth:`Autoscaler.run_once`):

1. the cluster as the scheduler sees it (:class:`~.simulator.ClusterSimulator`), with every *upcoming* node
   (asked for, not yet ready: Ready condition not True or still tainted not-ready/unreachable, for less than
   ``max-node-provision-time``) replaced by its group's template node under its own name: room that is coming;
2. scale-up (:mod:`.scaleup`): unschedulable pods not fitting anywhere there -> the chosen group(s) grown by
   ``provider.increase_size``; events ``TriggeredScaleUp`` / ``NotTriggerScaleUp`` on the pods and
   ``ScaledUpGroup`` on the status ConfigMap;
3. scale-down (:mod:`.scaledown`), unless the loop scaled up or scale-down is disabled: unneeded nodes are
   tracked every loop; deletions start only outside the cooldowns (``scale-down-delay-after-add`` since the last
   scale-up, ``-after-delete`` since the last deletion, ``-after-failure`` since the last failure) and run as
   tasks (:mod:`.actuation`);
4. the ``cluster-autoscaler-status`` ConfigMap (:mod:`.status`).

At start it publishes its node groups (templates, sizes, provisioningDelay) in the ConfigMap
``kubeplane-autoscaler-node-groups`` for ``kubeplane explain`` (:mod:`.explaining`; kubeplane's addition).

A cluster with more than 3 unready nodes that are also more than 45 % of its nodes is not autoscaled (upstream's
IsClusterHealthy): the loop only writes the status, ``Unhealthy``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import is_pod_terminal, meta_of, name_of
from kubeplane.autoscaler.actuation import Actuator
from kubeplane.autoscaler.drain import time_of
from kubeplane.autoscaler.expanders import PRIORITY_CONFIGMAP, PriorityError, parse_priorities
from kubeplane.autoscaler.explaining import GROUPS_CONFIGMAP, groups_config_map
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import CloudProvider, NodeGroupError
from kubeplane.autoscaler.scaledown import (
    ScaleDownPlan,
    UnneededTracker,
    is_being_deleted,
    is_node_ready,
    plan_scale_down,
    select_for_deletion,
)
from kubeplane.autoscaler.scaleup import (
    ScaleUpPlan,
    filter_out_schedulable,
    not_triggered_message,
    plan_scale_up,
    unschedulable_pods,
    upcoming_node,
)
from kubeplane.autoscaler.simulator import ClusterSimulator, pod_key
from kubeplane.autoscaler.status import GroupCounts, StatusWriter, healthy, summed
from kubeplane.client.clock import Clock
from kubeplane.client.errors import APIStatusError, NotFoundError
from kubeplane.client.events import EventRecorder
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Client
from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.config import KubeSchedulerConfiguration

__all__ = ["Autoscaler", "LoopResult"]

log = logging.getLogger(__name__)

_PLUGIN_OBJECTS = {
    "namespaces": "Namespace",
    "services": "Service",
    "replicasets": "ReplicaSet",
    "statefulsets": "StatefulSet",
    "replicationcontrollers": "ReplicationController",
    "poddisruptionbudgets": "PodDisruptionBudget",
    "priorityclasses": "PriorityClass",
}
"""Resources the scheduler's plugins read through ``list_objects`` (their kinds, as explain's objects carry)."""


@dataclass
class LoopResult:
    """What one loop decided (for tests and the simulator's reports)."""

    scale_up: ScaleUpPlan = field(default_factory=ScaleUpPlan)
    scale_down: ScaleDownPlan = field(default_factory=ScaleDownPlan)
    deleting: list[str] = field(default_factory=list)
    """Nodes whose deletion this loop started."""


class Autoscaler:
    """cluster-autoscaler over ``client`` and ``provider`` (module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        provider: CloudProvider,
        options: AutoscalerOptions,
        clock: Clock,
        rng: random.Random,
        scheduler_config: KubeSchedulerConfiguration | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.client, self.provider, self.options = client, provider, options
        self.clock, self.rng, self.scheduler_config = clock, rng, scheduler_config
        self.informers = SharedInformerFactory(client, clock=clock, rng=random.Random(rng.random()))
        self._own_recorder = recorder is None
        self.recorder = recorder or EventRecorder(client, component="cluster-autoscaler", clock=clock)
        self.actuator = Actuator(client, provider=provider, recorder=self.recorder, clock=clock, options=options)
        self.unneeded = UnneededTracker()
        self.status = StatusWriter()
        self.last_scale_up: float | None = None
        self._memo = PodInfoMemo()
        self._started = False
        self._stopping = asyncio.Event()

    async def start(self) -> None:
        """Start the informers and wait for their first lists."""
        if self._started:
            return
        for resource in ("nodes", "pods", *_PLUGIN_OBJECTS):
            self.informers.informer_for(resource)
        self.informers.start()
        await self.informers.wait_for_cache_sync()
        try:
            await self._publish_groups()
        except APIStatusError as exc:  # explain then has no autoscaler part; scaling does not depend on it
            log.warning("cannot publish the node groups ConfigMap: %s", exc)
        self._started = True

    async def _publish_groups(self) -> None:
        """Create or replace the node groups' ConfigMap ``kubeplane explain`` reads (:mod:`.explaining`)."""
        cm = groups_config_map(self.provider, namespace=self.options.namespace)
        resource = self.client.resource("configmaps")
        try:
            current = await self.client.get(resource, GROUPS_CONFIGMAP, namespace=self.options.namespace)
        except NotFoundError:
            await self.client.create(resource, cm, namespace=self.options.namespace)
            return
        await self.client.update(resource, {**current, "data": cm["data"]}, namespace=self.options.namespace)

    async def run(self) -> None:
        """RunOnce every scan-interval until :meth:`stop`."""
        await self.start()
        while not self._stopping.is_set():
            try:
                await self.run_once()
            except (APIStatusError, NodeGroupError) as exc:
                log.warning("autoscaler loop failed: %s", exc)
            await self.clock.sleep(self.options.scan_interval)

    async def stop(self) -> None:
        self._stopping.set()
        await self.actuator.stop()
        await self.informers.stop()
        if self._own_recorder:
            await self.recorder.close()

    # --- one loop ------------------------------------------------------------------------------------------

    def _objects(self) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = []
        for resource, kind in _PLUGIN_OBJECTS.items():
            out.extend({**o, "kind": kind} for o in self.informers.lister_for(resource).list())
        return out

    def _upcoming(self, nodes: Mapping[str, Mapping[str, Any]], now: float) -> dict[str, str]:
        """Upcoming node name -> group: a group's node not yet registered, or registered and not ready
        (:func:`is_node_ready`) for less than ``max-node-provision-time`` since its creation (upstream's
        NotStarted nodes); a node unready for longer is an unready node, not room to come."""
        out: dict[str, str] = {}
        for spec in self.provider.node_groups():
            for name in self.provider.nodes(spec.name):
                node = nodes.get(name)
                if node is None:
                    out[name] = spec.name
                    continue
                if is_node_ready(node):
                    continue
                created = time_of(meta_of(node).get("creationTimestamp"))
                if created is None or now - created < self.options.max_node_provision_time:
                    out[name] = spec.name
        return out

    async def _priorities(self) -> list[tuple[int, list[re.Pattern[str]]]]:
        """The priority expander's table: the ``cluster-autoscaler-priority-expander`` ConfigMap as upstream; without
        that ConfigMap, the groups' own ``priority`` fields (each matching its group's name exactly)."""
        if "priority" not in self.options.expanders():
            return []
        try:
            cm = await self.client.get(
                self.client.resource("configmaps"), PRIORITY_CONFIGMAP, namespace=self.options.namespace
            )
            return parse_priorities(str((cm.get("data") or {}).get("priorities") or ""))
        except NotFoundError:
            pass
        except PriorityError as exc:
            log.warning("priority expander: %s", exc)
            return []
        table: dict[int, list[re.Pattern[str]]] = {}
        for spec in self.provider.node_groups():
            prio = spec.extra.get("priority")
            if isinstance(prio, int):
                table.setdefault(prio, []).append(re.compile(f"^{re.escape(spec.name)}$"))
        return sorted(table.items(), key=lambda item: -item[0])

    async def run_once(self) -> LoopResult:
        now = self.clock.now()
        result = LoopResult()
        nodes = {name_of(n): n for n in self.informers.lister_for("nodes").list()}
        pods = self.informers.lister_for("pods").list()
        objects = self._objects()
        pdbs = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
        upcoming = self._upcoming(nodes, now)
        real = [n for name, n in nodes.items() if name not in upcoming]
        # the scheduler's cache holds no terminal pods (its informer lists Succeeded/Failed pods out)
        live = [p for p in pods if not is_pod_terminal(p)]
        base = ClusterSimulator(real, live, objects=objects, config=self.scheduler_config, memo=self._memo)
        with_upcoming = base.fork()
        for name, group in upcoming.items():
            with_upcoming.add_node(upcoming_node(self.provider, group, name))
        for pod in live:  # pods already bound to an upcoming node (DaemonSets) keep their place
            bound = (pod.get("spec") or {}).get("nodeName")
            if bound in upcoming:
                with_upcoming.add_pod(pod, str(bound))
        total_nodes = len(set(nodes) | set(upcoming))

        unready = sum(1 for name, n in nodes.items() if name not in upcoming and not is_node_ready(n))
        if not healthy(GroupCounts(ready=len(nodes) - len(set(nodes) & set(upcoming)) - unready, unready=unready)):
            # upstream: "Cluster is not ready for autoscaling": no scale-up, no scale-down, unneeded times reset
            log.warning("cluster is not ready for autoscaling: %d of %d nodes unready", unready, len(nodes))
            self.unneeded.update([], now)
            if self.options.write_status_configmap:
                await self._write_status(nodes, upcoming, result, now)
            return result
        pending = unschedulable_pods(pods, now=now, options=self.options)
        remaining = filter_out_schedulable(with_upcoming, pending) if pending else []
        if remaining:
            result.scale_up = plan_scale_up(
                with_upcoming,
                remaining,
                provider=self.provider,
                options=self.options,
                rng=self.rng,
                total_nodes=total_nodes,
                priorities=await self._priorities(),
            )
            await self._execute_scale_up(result.scale_up)
        scaled_up = bool(result.scale_up.infos)
        if scaled_up:
            self.last_scale_up = now

        if self.options.scale_down_enabled and not scaled_up:
            plan = plan_scale_down(
                base,
                real,
                provider=self.provider,
                options=self.options,
                pdbs=pdbs,
                now=now,
                previous=set(self.unneeded.since),
            )
            for name in self.actuator.deleting:
                plan.unneeded.pop(name, None)
            self.unneeded.update(list(plan.unneeded), now)
            result.scale_down = plan
            if not self._in_cooldown(now):
                removals = select_for_deletion(
                    plan,
                    self.unneeded,
                    provider=self.provider,
                    options=self.options,
                    now=now,
                    deleting=self.actuator.deleting_per_group(),
                )
                for removal in removals:
                    self.unneeded.drop(removal.node)
                self.actuator.start(removals)
                result.deleting = [r.node for r in removals]
        else:
            self.unneeded.update([], now)
        if self.options.write_status_configmap:
            await self._write_status(nodes, upcoming, result, now)
        return result

    def _in_cooldown(self, now: float) -> bool:
        o = self.options
        return (
            (self.last_scale_up is not None and now < self.last_scale_up + o.scale_down_delay_after_add)
            or (
                self.actuator.last_delete is not None
                and now < self.actuator.last_delete + o.scale_down_delay_after_delete
            )
            or (
                self.actuator.last_failure is not None
                and now < self.actuator.last_failure + o.scale_down_delay_after_failure
            )
        )

    def _status_ref(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.options.status_config_map_name, "namespace": self.options.namespace},
        }

    async def _execute_scale_up(self, plan: ScaleUpPlan) -> None:
        ref = self._status_ref()
        done = []
        for info in plan.infos:
            message = f"setting group {info.group} size to {info.new} instead of {info.current} (max: {info.max_size})"
            self.recorder.record(ref, "Normal", "ScaledUpGroup", f"Scale-up: {message}")
            try:
                await self.provider.increase_size(info.group, info.new - info.current)
            except NodeGroupError as exc:
                self.recorder.record(
                    ref, "Warning", "FailedToScaleUpGroup", f"Scale-up failed for group {info.group}: {exc}"
                )
                continue
            done.append(info)
            self.recorder.record(
                ref,
                "Normal",
                "ScaledUpGroup",
                f"Scale-up: group {info.group} size set to {info.new} instead of {info.current} (max: {info.max_size})",
            )
        if done:
            message = "pod triggered scale-up: [" + " ".join(str(i) for i in done) + "]"
            for pod in plan.triggered:
                self.recorder.record(pod, "Normal", "TriggeredScaleUp", message)
        else:
            plan.awaiting = plan.triggered + plan.awaiting
            plan.triggered = []
        plan.infos = done
        if plan.error:
            return
        for pod in plan.remaining:
            self.recorder.record(
                pod, "Normal", "NotTriggerScaleUp", not_triggered_message(plan.reasons.get(pod_key(pod), {}))
            )

    async def _write_status(
        self, nodes: Mapping[str, Mapping[str, Any]], upcoming: Mapping[str, str], result: LoopResult, now: float
    ) -> None:
        groups: dict[str, GroupCounts] = {}
        for spec in self.provider.node_groups():
            names = self.provider.nodes(spec.name)
            registered = [nodes[n] for n in names if n in nodes]
            ready = sum(1 for n in registered if is_node_ready(n) and name_of(n) not in upcoming)
            not_started = sum(1 for n in registered if name_of(n) in upcoming)
            groups[spec.name] = GroupCounts(
                ready=ready,
                not_started=not_started,
                unready=len(registered) - ready - not_started,
                being_deleted=sum(1 for n in registered if is_being_deleted(n)),
                target=self.provider.target_size(spec.name),
                min_size=spec.min_size,
                max_size=spec.max_size,
                upcoming=sum(1 for g in upcoming.values() if g == spec.name),
                candidates=sum(1 for r in result.scale_down.unneeded.values() if r.group == spec.name),
            )
        cluster = summed(list(groups.values()))
        owned = {n for spec in self.provider.node_groups() for n in self.provider.nodes(spec.name)}
        others = [n for name, n in nodes.items() if name not in owned]
        extra_ready = sum(1 for n in others if is_node_ready(n))
        cluster = GroupCounts(
            ready=cluster.ready + extra_ready,
            not_started=cluster.not_started,
            unready=cluster.unready + len(others) - extra_ready,
            being_deleted=cluster.being_deleted,
            upcoming=cluster.upcoming,
            candidates=cluster.candidates,
        )
        cm = self.status.config_map(
            cluster, groups, now, name=self.options.status_config_map_name, namespace=self.options.namespace
        )
        resource = self.client.resource("configmaps")
        try:
            current = await self.client.get(resource, cm["metadata"]["name"], namespace=self.options.namespace)
        except NotFoundError:
            await self.client.create(resource, cm, namespace=self.options.namespace)
            return
        meta = {**current["metadata"], "annotations": {**(current["metadata"].get("annotations") or {}),
                                                        **cm["metadata"]["annotations"]}}  # fmt: skip
        await self.client.update(
            resource, {**current, "metadata": meta, "data": cm["data"]}, namespace=self.options.namespace
        )
