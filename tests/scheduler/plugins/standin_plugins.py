"""Out-of-tree plugins for the tests: no-op stand-ins (a PreFilter + Filter, a Filter), and shapes the loader must
accept (typed factory, plain mapping args) or refuse (not a plugin, no return annotation, wrong NAME)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, PreFilterExtensions, PreFilterResult, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo


class StandinPreFilter:
    """No-op PreFilter + Filter (a stand-in with the shape of the seed's CheckCSIStorageCapacity)."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.args = args

    def name(self) -> str:
        return "StandinPreFilter"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class StandinFilter:
    """No-op Filter (a stand-in with the shape of the seed's LvmVolumeCapacity); keeps its plain-mapping args."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.args = dict(args)

    def name(self) -> str:
        return "StandinFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


@dataclass(frozen=True)
class Selector:
    key: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelGateArgs:
    """Exercises every supported annotation."""

    label: str
    mode: Literal["Require", "Forbid"] = "Require"
    weight: float = 1.0
    max_pods: int | None = None
    enabled: bool = True
    selectors: list[Selector] = field(default_factory=list)
    extra: dict[str, int] = field(default_factory=dict)
    renamed: str = field(default="", metadata={"json": "otherName"})

    def __post_init__(self) -> None:
        if not self.label:
            raise ValueError("label must not be empty")


class LabelGate:
    """Filter: nodes must carry (``Require``) or lack (``Forbid``) the label ``args.label``."""

    def __init__(self, args: LabelGateArgs) -> None:
        self.args = args

    def name(self) -> str:
        return "LabelGate"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        has = self.args.label in node.labels
        if has == (self.args.mode == "Require"):
            return None
        return Status.unschedulable(f"node(s) {'lack' if self.args.mode == 'Require' else 'have'} {self.args.label}")


def new_label_gate(args: LabelGateArgs, handle: Handle) -> LabelGate:
    """A factory: typed args from the first parameter's annotation, the class from the return annotation."""
    return LabelGate(args)


def untyped_factory(args, handle):  # type: ignore[no-untyped-def]
    """A factory the loader must refuse: no return annotation, so its class is unknown."""
    return LabelGate(args)


class NotAPlugin:
    """Has no name() and no extension point."""


class Misnamed(StandinFilter):
    """Declares a NAME other than the one it is registered under."""

    NAME = "SomethingElse"


NOT_A_CLASS = 42
