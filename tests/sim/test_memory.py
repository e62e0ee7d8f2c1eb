"""summary.json's memory figures (kubeplane.sim.memory): per node, the resident set the cluster adds by the
first sample; per pod, what the peak adds after it; None where the process's peak predates the run."""

from __future__ import annotations

import pytest

from kubeplane.sim import memory
from kubeplane.sim.memory import MemoryProbe


@pytest.fixture
def readings(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The resident set and the peak the probe reads, set by the test."""
    now = {"rss": 0, "peak": 0}
    monkeypatch.setattr(memory, "rss_bytes", lambda: now["rss"])
    monkeypatch.setattr(memory, "peak_rss_bytes", lambda: now["peak"])
    return now


def test_figures_per_node_and_per_pod(readings: dict[str, int]) -> None:
    probe = MemoryProbe()
    readings.update(rss=100_000_000, peak=100_000_000)
    probe.begin()
    readings.update(rss=300_000_000, peak=300_000_000)
    probe.sampled(1000)
    readings.update(rss=900_000_000, peak=1_300_000_000)
    probe.sampled(2000)  # only the first sample counts
    assert probe.figures(pods=10_000) == {"bytes_per_node": 200_000, "bytes_per_pod": 100_000}


def test_a_peak_from_before_the_run_gives_no_per_pod_figure(readings: dict[str, int]) -> None:
    """An earlier, larger run in the same process (a sweep's worker): the run's own peak is not known."""
    probe = MemoryProbe()
    readings.update(rss=200_000_000, peak=2_000_000_000)
    probe.begin()
    readings.update(rss=300_000_000)
    probe.sampled(100)
    assert probe.figures(pods=50) == {"bytes_per_node": 1_000_000, "bytes_per_pod": None}


def test_no_sample_no_nodes_no_pods_give_none(readings: dict[str, int]) -> None:
    probe = MemoryProbe()
    readings.update(rss=100, peak=100)
    probe.begin()
    assert probe.figures(pods=0) == {"bytes_per_node": None, "bytes_per_pod": None}
    readings.update(rss=200, peak=300)
    probe.sampled(0)
    assert probe.figures(pods=0) == {"bytes_per_node": None, "bytes_per_pod": None}


def test_the_real_readings_are_of_this_process() -> None:
    assert memory.rss_bytes() > 0
    assert memory.peak_rss_bytes() >= memory.rss_bytes() // 2
