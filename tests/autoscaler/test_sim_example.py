"""examples/sim/autoscaler.yaml end to end (the scheduler, the controllers, kubelets booting on the virtual clock,
the FleetProvider and this core): the figures docs/autoscaler.md quotes."""

from __future__ import annotations

from pathlib import Path

from kubeplane.sim import Scenario, run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "autoscaler.yaml"


def test_the_autoscaler_example_gives_the_figures_of_autoscaler_md() -> None:
    result = run(Scenario.load(EXAMPLE))
    summary = result.summary
    # the 10 s loop after the pods turn unschedulable asks for two "small" nodes (least-waste: two 2-cpu nodes
    # waste less than one 8-cpu node); Ready 2 min later, the pods bind; the Deployment shrinks at 15 min and the
    # two empty nodes go after 5 min unneeded, gone a minute later
    assert summary["node_groups"]["small"] == {
        "nodes_added": 2,
        "nodes_removed": 2,
        "node_hours": 1.366667,
        "cost": 0.136667,
        "nodes_at_end": 1,
        "nodes_peak": 3,
    }
    assert summary["node_groups"]["large"]["nodes_added"] == 0
    assert summary["scheduling_latency_p50"] == 130.0
    sizes = [(row["t"], row["nodes_group_small"]) for row in result.timeseries]
    changes = [(t, n) for i, (t, n) in enumerate(sizes) if i == 0 or sizes[i - 1][1] != n]
    assert changes == [(0.0, 1), (10.0, 3), (1270.0, 1)]
