"""schedule_one's pure parts: numFeasibleNodesToFind and the FitError message (upstream schedule_one_test.go
TestNumFeasibleNodesToFind and framework/types_test.go TestFitError_Error)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kubeplane.scheduler.framework.diagnosis import Diagnosis, fit_error_message
from kubeplane.scheduler.framework.interface import Code, Status
from kubeplane.scheduler.schedule_one import SchedulingCycle


@pytest.mark.parametrize(
    ("global_pct", "profile_pct", "nodes", "want"),
    [
        pytest.param(None, None, 10, 10, id="not set percentageOfNodesToScore and nodes number not more than 50"),
        pytest.param(40, None, 10, 10, id="set percentageOfNodesToScore and nodes number not more than 50"),
        pytest.param(None, None, 1000, 420, id="not set percentageOfNodesToScore and nodes number more than 50"),
        pytest.param(40, None, 1000, 400, id="set percentageOfNodesToScore and nodes number more than 50"),
        pytest.param(None, None, 6000, 300, id="not set percentageOfNodesToScore and nodes number more than 50*125"),
        pytest.param(40, None, 6000, 2400, id="set percentageOfNodesToScore and nodes number more than 50*125"),
        pytest.param(None, 40, 1000, 400, id="profile percentage wins over the global default"),
        pytest.param(50, 40, 1000, 400, id="profile percentage wins over the global one"),
        pytest.param(None, None, 5000, 500, id="5000 nodes: adaptive 10%"),
        pytest.param(1, None, 1000, 100, id="never fewer than minFeasibleNodesToFind"),
    ],
)
def test_num_feasible_nodes_to_find(global_pct: int | None, profile_pct: int | None, nodes: int, want: int) -> None:
    algo = SchedulingCycle(rng=random.Random(0), percentage_of_nodes_to_score=global_pct)
    assert algo.num_feasible_nodes_to_find(profile_pct, nodes) == want


def _st(code: Code, *reasons: str) -> Status:
    return Status(code, reasons)


@pytest.mark.parametrize(
    ("num_nodes", "diagnosis", "want"),
    [
        pytest.param(
            3,
            Diagnosis(
                node_to_status={
                    "master": _st(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)"),
                    "node01": _st(Code.UNSCHEDULABLE, "Insufficient cpu"),
                    "node02": _st(Code.UNSCHEDULABLE, "Insufficient cpu"),
                }
            ),
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu.",
            id="the issue's example: reasons counted and sorted",
        ),
        pytest.param(
            2,
            Diagnosis(
                node_to_status={"n1": _st(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")},
                absent_nodes_status=_st(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [X]"),
            ),
            "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
            "1 node(s) didn't satisfy plugin(s) [X].",
            id="absent nodes counted with the absent status",
        ),
        pytest.param(
            3,
            Diagnosis(
                pre_filter_msg="prefilter says no", absent_nodes_status=_st(Code.UNSCHEDULABLE, "prefilter says no")
            ),
            "0/3 nodes are available: prefilter says no.",
            id="a PreFilter rejection replaces the histogram",
        ),
        pytest.param(
            1,
            Diagnosis(
                node_to_status={"n1": _st(Code.UNSCHEDULABLE, "Insufficient cpu")},
                post_filter_msg="preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            ),
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod..",
            id="PostFilter message appended as upstream",
        ),
    ],
)
def test_fit_error_message(num_nodes: int, diagnosis: Diagnosis, want: str) -> None:
    assert fit_error_message(num_nodes, diagnosis) == want


def test_select_index_breaks_ties_with_the_seeded_rng() -> None:
    totals = np.array([5, 9, 9, 1, 9], np.int64)
    picks = {SchedulingCycle(rng=random.Random(seed)).select_index(totals) for seed in range(50)}
    assert picks == {1, 2, 4}
    again = [SchedulingCycle(rng=random.Random(7)).select_index(totals) for _ in range(3)]
    assert len(set(again)) == 1
