"""``kubeplane explain``'s ``autoscaler`` part: which node group would help a Pending pod, and when.

The autoscaler runs in its own process; what explain needs of it is published in the API:

* the node groups, in the ConfigMap :data:`GROUPS_CONFIGMAP` of the autoscaler's namespace (kube-system), written
  by :class:`~.loop.Autoscaler` when it starts (:func:`groups_config_map`). This is **kubeplane's addition**:
  upstream's ``cluster-autoscaler-status`` lists the groups' sizes but not their templates. ``data.nodeGroups``
  is a JSON list of ``{name, minSize, maxSize, provisioningDelay (seconds), pricePerHour, template}``, the
  template being the Node object scale-up simulates for the group (``provider.template_node``);
* the pod's events: ``TriggeredScaleUp`` (``pod triggered scale-up: [{small 1->2 (max: 3)}]``) and
  ``NotTriggerScaleUp`` (``pod didn't trigger scale-up: ...``), as upstream's autoscaler records them.

:func:`autoscaler_part` composes them with the same check the scale-up runs (:func:`.scaleup.template_probe`,
:func:`.scaleup.template_verdict`: the scheduler's PreFilter and Filter plugins on a fresh template node added to
the cluster as it is), so its "fits" is scale-up's verdict. Invariants: the answer is a plain JSON-able dict;
a group whose size (its labelled nodes) is at ``maxSize`` gets upstream's ``max node group size reached`` and
``helps`` false whatever its template says; an upcoming node is a node of a group the pod's latest
TriggeredScaleUp named that is not Ready yet, expected Ready at its creation (the scale-up registers it at once)
plus the group's provisioningDelay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.views import is_pod_terminal, labels_of, meta_of, name_of, namespace_of, spec_of
from kubeplane.autoscaler.drain import time_of
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, CloudProvider
from kubeplane.autoscaler.scaledown import is_node_ready
from kubeplane.autoscaler.scaleup import MAX_LIMIT_REACHED, template_probe, template_verdict
from kubeplane.autoscaler.simulator import ClusterSimulator
from kubeplane.scheduler.config import KubeSchedulerConfiguration

__all__ = [
    "GROUPS_CONFIGMAP",
    "PublishedGroup",
    "autoscaler_part",
    "groups_config_map",
    "published_groups",
    "render_part",
]

Obj = Mapping[str, Any]

GROUPS_CONFIGMAP = "kubeplane-autoscaler-node-groups"
"""kube-system ConfigMap where the autoscaler publishes its node groups (kubeplane's addition)."""

_SCALE_UP = re.compile(r"\{(\S+) (\d+)->(\d+) \(max: (\d+)\)\}")
"""One group of upstream's TriggeredScaleUp message (ScaleUpInfo's String: ``{group current->new (max: max)}``)."""


@dataclass(frozen=True, slots=True)
class PublishedGroup:
    """One node group as :data:`GROUPS_CONFIGMAP` publishes it; ``template`` is a Node object."""

    name: str
    min_size: int
    max_size: int
    provisioning_delay: float
    price_per_hour: float
    template: Obj


def groups_config_map(provider: CloudProvider, *, namespace: str) -> dict[str, Any]:
    """The ConfigMap publishing ``provider``'s groups in declaration order (module docstring)."""
    groups = [
        {
            "name": spec.name,
            "minSize": spec.min_size,
            "maxSize": spec.max_size,
            "provisioningDelay": spec.provisioning_delay,
            "pricePerHour": spec.price_per_hour,
            "template": provider.template_node(spec.name),
        }
        for spec in provider.node_groups()
    ]
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": GROUPS_CONFIGMAP, "namespace": namespace},
        "data": {"nodeGroups": json.dumps(groups, sort_keys=True)},
    }


def published_groups(config_map: Obj) -> list[PublishedGroup]:
    """The groups of a :data:`GROUPS_CONFIGMAP` ConfigMap; ValueError (one line) when it is malformed."""
    text = (config_map.get("data") or {}).get("nodeGroups")
    try:
        raw = json.loads(str(text))
        return [
            PublishedGroup(
                name=str(g["name"]),
                min_size=int(g["minSize"]),
                max_size=int(g["maxSize"]),
                provisioning_delay=float(g.get("provisioningDelay") or 0),
                price_per_hour=float(g.get("pricePerHour") or 0),
                template=dict(g["template"]),
            )
            for g in raw
        ]
    except (TypeError, ValueError, KeyError) as exc:
        raise ValueError(f"configmap {GROUPS_CONFIGMAP}: data.nodeGroups: not a list of node groups ({exc})") from None


def _latest(events: Sequence[Obj], pod: Obj, reason: str) -> Obj | None:
    """The pod's most recent event of ``reason`` (by lastTimestamp), matched by uid when both carry one."""
    uid = meta_of(pod).get("uid")
    ns, name = namespace_of(pod) or "default", name_of(pod)
    found: Obj | None = None
    for event in events:
        involved = event.get("involvedObject") or {}
        if event.get("reason") != reason or involved.get("kind", "Pod") != "Pod":
            continue
        if (involved.get("namespace") or "default", involved.get("name")) != (ns, name):
            continue
        if uid and involved.get("uid") and involved.get("uid") != uid:
            continue
        if found is None or (time_of(_when(event)) or 0) >= (time_of(_when(found)) or 0):
            found = event
    return found


def _when(event: Obj) -> Any:
    return event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp")


def autoscaler_part(
    pod: Obj,
    *,
    groups: Sequence[PublishedGroup],
    nodes: Sequence[Obj],
    pods: Sequence[Obj] = (),
    objects: Sequence[Obj] = (),
    events: Sequence[Obj] = (),
    config: KubeSchedulerConfiguration | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """``{"groups": [...], "triggered": ..., "upcoming": [...], "notTriggered": ...}`` for ``pod`` (module
    docstring); ``pods`` are the other pods (bound ones are placed), ``objects`` what plugins read."""
    live = [p for p in pods if not is_pod_terminal(p)]
    sim = ClusterSimulator(nodes, live, objects=objects, config=config, seed=seed)
    sizes: dict[str, int] = {}
    for node in nodes:
        owner = labels_of(node).get(NODE_GROUP_LABEL)
        if owner:
            sizes[owner] = sizes.get(owner, 0) + 1
    unbound = {**pod, "spec": {k: v for k, v in spec_of(pod).items() if k != "nodeName"}}
    out_groups = []
    for group in groups:
        probe, check = template_probe(sim, group.template, group.name)
        reasons = template_verdict(probe, unbound, check)
        size = sizes.get(group.name, 0)
        at_max = size >= group.max_size
        entry: dict[str, Any] = {
            "name": group.name,
            "size": size,
            "minSize": group.min_size,
            "maxSize": group.max_size,
            "provisioningDelay": group.provisioning_delay,
            "pricePerHour": group.price_per_hour,
            "fits": reasons is None,
            "helps": reasons is None and not at_max,
            "reasons": ([MAX_LIMIT_REACHED] if at_max else []) + (reasons or []),
        }
        out_groups.append(entry)
    out: dict[str, Any] = {"groups": out_groups, "triggered": None, "upcoming": [], "notTriggered": None}
    triggered = _latest(events, pod, "TriggeredScaleUp")
    not_triggered = _latest(events, pod, "NotTriggerScaleUp")
    if not_triggered is not None and (
        triggered is None or (time_of(_when(not_triggered)) or 0) > (time_of(_when(triggered)) or 0)
    ):
        out["notTriggered"] = {"message": str(not_triggered.get("message") or ""), "time": _when(not_triggered)}
    if triggered is None:
        return out
    message = str(triggered.get("message") or "")
    at = time_of(_when(triggered))
    scaled = [{"group": g, "from": int(a), "to": int(b), "max": int(m)} for g, a, b, m in _SCALE_UP.findall(message)]
    out["triggered"] = {"message": message, "time": _when(triggered), "groups": scaled}
    delays = {g.name: g.provisioning_delay for g in groups}
    for scale in scaled:
        group_name = str(scale["group"])
        delay = delays.get(group_name, 0.0)
        for node in sorted(nodes, key=lambda n: (time_of(meta_of(n).get("creationTimestamp")) or 0, name_of(n))):
            if labels_of(node).get(NODE_GROUP_LABEL) != group_name or is_node_ready(node):
                continue
            created = time_of(meta_of(node).get("creationTimestamp"))
            start = created if created is not None else at
            expected = format_time(start + delay) if start is not None else None
            out["upcoming"].append({"node": name_of(node), "group": group_name, "expectedReady": expected})
    return out


def render_part(part: Mapping[str, Any]) -> list[str]:
    """The part as lines for people (after explain's table)."""
    lines = ["autoscaler: node groups (kube-system/" + GROUPS_CONFIGMAP + ")"]
    for g in part.get("groups") or ():
        if g.get("helps"):
            verdict = "template fits"
        elif g.get("fits"):
            verdict = "template fits, but: " + ", ".join(g.get("reasons") or ())
        else:
            verdict = "template does not fit: " + ", ".join(g.get("reasons") or ())
        lines.append(f"  {g['name']} ({g['size']}/{g['maxSize']} nodes): {verdict}")
    triggered = part.get("triggered")
    if triggered:
        lines.append(f"  {triggered['message']} at {triggered['time']}")
        for up in part.get("upcoming") or ():
            lines.append(f"  upcoming node {up['node']} ({up['group']}): expected Ready at {up['expectedReady']}")
    not_triggered = part.get("notTriggered")
    if not_triggered:
        lines.append(f"  {not_triggered['message']} at {not_triggered['time']}")
    return lines
