"""RemovePodsViolatingNodeTaints (upstream ``removepodsviolatingnodetaints``): evicts pods that do not tolerate
a NoSchedule taint of their node (and PreferNoSchedule ones with ``includePreferNoSchedule``), a taint added
after they were placed. ``includedTaints``/``excludedTaints`` name taints as ``key`` or ``key=value``; with
``includedTaints`` unset every taint counts. Pods are listed through the profile's Filter and PreEvictionFilter
and the namespaces/label selector of the args."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.taints import find_matching_untolerated_taint
from kubeplane.api.views import name_of, spec_of
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import Handle
from kubeplane.descheduler.nodefit import active_pods_on

from .common import StopPass, evict_on_node, pod_filter

Obj = Mapping[str, Any]
NAME: Final = "RemovePodsViolatingNodeTaints"


@dataclass(frozen=True, slots=True)
class Args:
    namespaces: Namespaces | None = None
    label_selector: Mapping[str, Any] | None = None
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()
    included_taints: tuple[str, ...] | None = None


def parse_args(raw: Any) -> Args:
    f = Fields(raw, "RemovePodsViolatingNodeTaintsArgs")
    args = Args(
        namespaces=f.namespaces(),
        label_selector=f.label_selector(),
        include_prefer_no_schedule=f.boolean("includePreferNoSchedule"),
        excluded_taints=f.strings("excludedTaints") or (),
        included_taints=f.strings("includedTaints"),
    )
    f.done()
    return args


def validate(args: Args) -> list[str]:
    errs = []
    if args.namespaces is not None and args.namespaces.include and args.namespaces.exclude:
        errs.append("only one of Include/Exclude namespaces can be set")
    if args.excluded_taints and args.included_taints:
        errs.append("either includedTaints or excludedTaints can be set, but not both")
    return errs


def _named(taint: Obj, names: set[str]) -> bool:
    key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
    return key in names or (value != "" and f"{key}={value}" in names)


class RemovePodsViolatingNodeTaints:
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.filter = pod_filter(handle, namespaces=args.namespaces, label_selector=args.label_selector)
        effects = {"NoSchedule", "PreferNoSchedule"} if args.include_prefer_no_schedule else {"NoSchedule"}
        included = None if args.included_taints is None else set(args.included_taints)
        excluded = set(args.excluded_taints)

        def counts(taint: Obj) -> bool:
            return (
                taint.get("effect") in effects
                and not _named(taint, excluded)
                and (included is None or _named(taint, included))
            )

        self.counts = counts

    async def deschedule(self, nodes: Sequence[Obj]) -> None:
        try:
            for node in nodes:
                taints = spec_of(node).get("taints") or ()
                victims = [
                    pod
                    for pod in active_pods_on(self.handle.pods_on_node, name_of(node))
                    if self.filter(pod)
                    and find_matching_untolerated_taint(
                        taints, spec_of(pod).get("tolerations") or (), include=self.counts
                    )
                    is not None
                ]
                await evict_on_node(self.handle, victims, strategy=NAME)
        except StopPass:
            return
