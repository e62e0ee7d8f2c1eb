"""``Framework.run_pre_bind_pre_flights`` and ``will_wait_on_permit``, pinned to upstream v1.37
``framework/runtime/framework_test.go`` ``TestPreBindPreFlightPlugins``: Success when one or more PreBind plugins
succeed, Skip when all skip (and with no PreBind plugin at all), the first error wrapped as
``running PreBindPreFlight "X": ...``, any other code refused as unsupported; skipping plugins recorded so that
PreBind passes them by."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, Status
from kubeplane.scheduler.framework.registry import Registry, extension_points_of
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo

POD = PodInfo({"metadata": {"name": "p", "namespace": "default", "uid": "u1"}, "spec": {"containers": []}})


class FakePreBind:
    """A PreBind plugin whose PreBindPreFlight returns the configured code (args: name, code)."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self._name = str(args["name"])
        self.code = Code(args.get("code", Code.SUCCESS))
        self.bound: list[str] = []

    def name(self) -> str:
        return self._name

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if self.code == Code.SUCCESS:
            return None
        if self.code == Code.ERROR:
            return Status.from_error("injected")
        return Status(self.code, ("injected",))

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.bound.append(node_name)
        return None


class PreBindWithoutPreFlight:
    def name(self) -> str:
        return "old"

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None


def _framework(codes: dict[str, Code]) -> Framework:
    registry = Registry()
    for name in codes:
        registry.register(name, FakePreBind)
    return Framework(
        profile_name="p",
        points={"preBind": [(name, 0) for name in codes]},
        plugin_args={name: {"name": name, "code": code} for name, code in codes.items()},
        registry=registry,
        handle=Handle(clock=FakeClock()),
    )


@pytest.mark.parametrize(
    ("codes", "want_code", "want_message", "want_skipped"),
    [
        pytest.param({}, Code.SKIP, "", set(), id="Skip when there's no PreBind Plugin"),
        pytest.param(
            {"a": Code.SKIP, "b": Code.SKIP},
            Code.SKIP,
            "",
            {"a", "b"},
            id="Skip when all PreBindPreFlight returns Skip",
        ),
        pytest.param(
            {"a": Code.SKIP, "b": Code.SUCCESS},
            Code.SUCCESS,
            "",
            {"a"},
            id="Success when PreBindPreFlight returns Success",
        ),
        pytest.param(
            {"a": Code.SUCCESS, "b": Code.SUCCESS},
            Code.SUCCESS,
            "",
            set(),
            id="Success when every PreBindPreFlight returns Success",
        ),
        pytest.param(
            {"a": Code.SUCCESS, "b": Code.ERROR},
            Code.ERROR,
            'running PreBindPreFlight "b": injected',
            set(),
            id="Error when PreBindPreFlight returns Error",
        ),
        pytest.param(
            {"a": Code.UNSCHEDULABLE},
            Code.ERROR,
            'PreBindPreFlight a returned "Unschedulable", which is unsupported. '
            "It is supposed to return Success, Skip, or Error status",
            set(),
            id="Error when PreBindPreFlight returns Unschedulable",
        ),
    ],
)
def test_run_pre_bind_pre_flights(
    codes: dict[str, Code], want_code: Code, want_message: str, want_skipped: set[str]
) -> None:
    fwk = _framework(codes)
    state = CycleState()
    status = fwk.run_pre_bind_pre_flights(state, POD, "node-a")
    code = Code.SUCCESS if status is None else status.code
    assert code == want_code
    assert (status.message() if status is not None else "") == want_message
    assert state.skip_pre_bind_plugins == want_skipped


async def test_pre_bind_passes_the_skipping_plugins_by() -> None:
    fwk = _framework({"a": Code.SKIP, "b": Code.SUCCESS})
    state = CycleState()
    fwk.run_pre_bind_pre_flights(state, POD, "node-a")
    assert await fwk.run_pre_bind_plugins(state, POD, "node-a") is None
    a, b = fwk.pre_bind_plugins
    assert isinstance(a, FakePreBind)
    assert isinstance(b, FakePreBind)
    assert (a.bound, b.bound) == ([], ["node-a"])


def test_a_plugin_without_pre_flight_is_no_pre_bind_plugin() -> None:
    """Upstream's PreBindPlugin interface includes PreBindPreFlight: without it a plugin does not implement it."""
    assert extension_points_of(FakePreBind) == {"preBind"}
    assert extension_points_of(PreBindWithoutPreFlight) == frozenset()


def test_will_wait_on_permit_only_for_a_waiting_pod() -> None:
    fwk = _framework({})
    assert not fwk.will_wait_on_permit(POD)
    fwk.waiting_pods[POD.uid] = object()  # type: ignore[assignment]
    assert fwk.will_wait_on_permit(POD)
