"""RemoveDuplicates (upstream ``removeduplicates``, a Balance plugin): spreads pods of one owner with the same
images so that no node runs more than its share.

Per node, pods (through the profile's Filter and PreEvictionFilter, ``namespaces``) are keyed by
namespace/owner kind/owner name/image for every owner and container; a pod whose sorted keys equal an earlier
pod's on the same node is a *duplicate* (the first stays). Per owner (and image set), the target nodes are the
nodes where at least one distinct placement shape of its duplicates (tolerations, required node affinity,
nodeSelector) fits by NoSchedule/NoExecute taints and node selector, counted only when more than one node fits;
with fewer than two target nodes nothing moves. Otherwise the share is ceil(owner's pods / target nodes) and a
node holding more than that evicts its duplicates beyond the share. Owners of ``excludeOwnerKinds`` are left
alone. Owners and nodes are visited in the order first seen (upstream iterates Go maps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.views import name_of, namespace_of, spec_of
from kubeplane.descheduler import podutil
from kubeplane.descheduler.args import Fields, Namespaces
from kubeplane.descheduler.framework import EvictionLimitError, Handle, NodeLimitError, TotalLimitError
from kubeplane.descheduler.nodefit import active_pods_on, pod_matches_node_selector, tolerates_node_taints

from .common import pod_filter

Obj = Mapping[str, Any]
NAME: Final = "RemoveDuplicates"


@dataclass(frozen=True, slots=True)
class Args:
    namespaces: Namespaces | None = None
    exclude_owner_kinds: tuple[str, ...] = ()


def parse_args(raw: Any) -> Args:
    f = Fields(raw, "RemoveDuplicatesArgs")
    args = Args(f.namespaces(), f.strings("excludeOwnerKinds") or ())
    f.done()
    return args


def validate(args: Args) -> list[str]:
    if args.namespaces is not None and args.namespaces.include and args.namespaces.exclude:
        return ["only one of Include/Exclude namespaces can be set"]
    return []


OwnerKey = tuple[str, str, str, str]


def _shape(pod: Obj) -> tuple[Any, ...]:
    spec = spec_of(pod)
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    return (repr(spec.get("tolerations") or []), repr(affinity), repr(spec.get("nodeSelector") or {}))


class RemoveDuplicates:
    name = NAME

    def __init__(self, args: Args, handle: Handle) -> None:
        self.args, self.handle = args, handle
        self.filter = pod_filter(handle, namespaces=args.namespaces)

    def _targets(self, pods_by_node: Mapping[str, Sequence[Obj]], nodes: Sequence[Obj]) -> int:
        shapes: dict[tuple[Any, ...], Obj] = {}
        for pods in pods_by_node.values():
            for pod in pods:
                shapes.setdefault(_shape(pod), pod)
        targets: set[str] = set()
        for pod in shapes.values():
            matching = [
                name_of(n) for n in nodes if tolerates_node_taints(pod, n) and pod_matches_node_selector(pod, n)
            ]
            if len(matching) > 1:
                targets.update(matching)
        return len(targets)

    async def balance(self, nodes: Sequence[Obj]) -> None:
        duplicates: dict[OwnerKey, dict[str, list[Obj]]] = {}
        occurrences: dict[OwnerKey, int] = {}
        excluded = set(self.args.exclude_owner_kinds)
        for node in nodes:
            seen: set[tuple[str, ...]] = set()
            for pod in active_pods_on(self.handle.pods_on_node, name_of(node)):
                if not self.filter(pod):
                    continue
                refs = podutil.owner_refs(pod)
                if not refs or any(r.get("kind") in excluded for r in refs):
                    continue
                images = sorted(str(c.get("image") or "") for c in spec_of(pod).get("containers") or ())
                owners = [(namespace_of(pod), str(r.get("kind")), str(r.get("name")), "#".join(images)) for r in refs]
                for owner in owners:
                    occurrences[owner] = occurrences.get(owner, 0) + 1
                keys = tuple(sorted(f"{o[0]}/{o[1]}/{o[2]}/{image}" for o in owners for image in images))
                if keys in seen:
                    for owner in owners:
                        duplicates.setdefault(owner, {}).setdefault(name_of(node), []).append(pod)
                else:
                    seen.add(keys)
        for owner, by_node in duplicates.items():
            targets = self._targets(by_node, nodes)
            if targets < 2:
                continue
            share = math.ceil(occurrences[owner] / targets)
            for pods in by_node.values():
                if len(pods) + 1 <= share:
                    continue
                for pod in pods[share - 1 :]:
                    try:
                        await self.handle.evict(pod, strategy=NAME)
                    except NodeLimitError:
                        break
                    except TotalLimitError:
                        return
                    except EvictionLimitError:
                        continue
