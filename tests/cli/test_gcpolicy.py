"""The control plane's collector policy (kubeplane.cli.gcpolicy): what it sets and that every component's process
applies it before serving."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeplane.cli import gcpolicy

SRC = Path(__file__).parents[2] / "src" / "kubeplane"


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


@pytest.mark.usefixtures("restored_gc")
def test_the_policy_raises_the_thresholds_freezes_start_up_and_keeps_the_collector_on() -> None:
    gc.set_threshold(700, 10, 10)
    gcpolicy.tune_for_control_plane()
    assert gc.get_threshold() == (gcpolicy.YOUNG_THRESHOLD, gcpolicy.MIDDLE_THRESHOLD, gcpolicy.OLD_THRESHOLD)
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


@pytest.mark.usefixtures("restored_gc")
def test_cycles_are_still_collected_under_the_policy() -> None:
    gcpolicy.tune_for_control_plane()
    collected = []

    class Node:
        def __del__(self) -> None:
            collected.append(True)

    a, b = Node(), Node()
    a.peer, b.peer = b, a  # type: ignore[attr-defined]
    del a, b
    gc.collect()
    assert collected == [True, True]


@pytest.mark.parametrize(
    ("module", "call_before"),
    [
        ("cli/component.py", "asyncio.run(main())"),  # scheduler, controller-manager, kubelet
        ("cli/main.py", "uvloop.run(run_apiserver(config, on_ready=ready))"),  # apiserver
        ("cli/up.py", "uvloop.run(run_apiserver(config, on_ready=ready, attach=attach))"),  # up
    ],
)
def test_every_component_process_applies_the_policy_before_it_serves(module: str, call_before: str) -> None:
    text = (SRC / module).read_text()
    assert "tune_for_control_plane()" in text
    assert text.index("tune_for_control_plane()") < text.index(call_before)
