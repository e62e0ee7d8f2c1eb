"""Pod groups as the scheduler sees them (upstream ``fwk.PodGroupManager`` / ``PodGroupState``, v1.37).

A pod belongs to the group ``<namespace>/<spec.schedulingGroup.podGroupName>``. A group's state is derived on
demand from two sources the scheduler already keeps, so it can never disagree with them:

* the pod informer's lister: every non-terminal pod of the group (``all_pods_count``), and which are bound
  (``spec.nodeName`` set);
* the scheduler cache: which unbound pods are *assumed* (they passed Reserve and sit at Permit or in binding).

``scheduled_pods_count`` = bound + assumed: the number GangScheduling's Permit compares with ``minCount``. The
PodGroup objects come from the scheduler's ``podgroups`` informer (:meth:`PodGroupManager.pod_group`).

Why derived rather than tracked: the scheduler's event handlers and assume/forget paths would each need a hook,
and a missed hook would strand a gang; a derivation costs one namespace scan per PreEnqueue/Permit of a grouped
pod (ungrouped pods never ask).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import is_pod_terminal, meta_of, spec_of
from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["PodGroupManager", "PodGroupState", "pod_group_name"]

PodLister = Callable[[str], Sequence[Mapping[str, Any]]]
"""``namespace -> pods`` (the scheduler's pod informer cache)."""
AssumedCheck = Callable[[PodInfo], bool]
PodGroupGetter = Callable[[str, str], Mapping[str, Any] | None]


def pod_group_name(pod: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod belongs to (``spec.schedulingGroup.podGroupName``), or None."""
    group = spec_of(pod).get("schedulingGroup")
    if not isinstance(group, Mapping):
        return None
    name = group.get("podGroupName")
    return name if isinstance(name, str) and name else None


@dataclass
class PodGroupState:
    """One group's pods at one moment: all (non-terminal), assumed (unbound, in the cache) and bound ones."""

    unscheduled: list[PodInfo] = field(default_factory=list)
    assumed: list[PodInfo] = field(default_factory=list)
    bound: list[PodInfo] = field(default_factory=list)

    def all_pods_count(self) -> int:
        return len(self.unscheduled) + len(self.assumed) + len(self.bound)

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.bound)

    def assumed_pods(self) -> dict[str, PodInfo]:
        return {p.uid: p for p in self.assumed}

    def unscheduled_pods(self) -> list[PodInfo]:
        return list(self.unscheduled)


def _no_pods(namespace: str) -> Sequence[Mapping[str, Any]]:
    return ()


def _never_assumed(pod: PodInfo) -> bool:
    return False


def _no_groups(namespace: str, name: str) -> Mapping[str, Any] | None:
    return None


@dataclass
class PodGroupManager:
    """Reads PodGroups and derives their states; the scheduler (or explain, from a cluster file) wires the
    sources in. An unwired manager knows no groups."""

    list_pods: PodLister = _no_pods
    is_assumed: AssumedCheck = _never_assumed
    get_pod_group: PodGroupGetter = _no_groups

    def pod_group(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.get_pod_group(namespace, name)

    def state(self, namespace: str, name: str) -> PodGroupState:
        state = PodGroupState()
        for pod in self.list_pods(namespace):
            if pod_group_name(pod) != name or is_pod_terminal(pod) or meta_of(pod).get("deletionTimestamp"):
                continue
            info = PodInfo(pod)
            if spec_of(pod).get("nodeName"):
                state.bound.append(info)
            elif self.is_assumed(info):
                state.assumed.append(info)
            else:
                state.unscheduled.append(info)
        return state
