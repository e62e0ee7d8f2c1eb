"""Drain rules, cases from cluster-autoscaler's utils/drain/drain_test.go and simulator/drain_test.go (and the
rules/*/rule_test.go tables): which pods are moved, skipped, or block the node, with upstream's messages."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.autoscaler.drain import (
    BlockingReason,
    DrainOptions,
    Outcome,
    drainability,
    pods_to_move,
)
from tests.autoscaler.objects import pdb_object, pod_object

NOW = 1_800_000_000.0
DS_OWNER = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid", "controller": True}
JOB_OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j-uid", "controller": True}
CUSTOM_OWNER = {"apiVersion": "x.io/v1", "kind": "Custom", "name": "c", "uid": "c-uid", "controller": True}

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], DrainOptions, Outcome, BlockingReason | None, str]] = [
    ("replicated pod (ReplicaSet) is moved", pod_object("p"), [], DrainOptions(), Outcome.DRAIN, None, ""),
    ("Job pod is moved", pod_object("p", owner=JOB_OWNER), [], DrainOptions(), Outcome.DRAIN, None, ""),
    ("DaemonSet pod is skipped", pod_object("p", owner=DS_OWNER), [], DrainOptions(), Outcome.SKIP, None, ""),
    (
        "mirror pod is skipped",
        pod_object("p", owner=None, annotations={"kubernetes.io/config.mirror": "x"}),
        [],
        DrainOptions(),
        Outcome.SKIP,
        None,
        "",
    ),
    (
        "naked pod blocks: NotReplicated",
        pod_object("p", owner=None),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.NOT_REPLICATED,
        "default/p is not replicated",
    ),
    (
        "custom controller pod blocks with skip-nodes-with-custom-controller-pods",
        pod_object("p", owner=CUSTOM_OWNER),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.NOT_REPLICATED,
        "default/p is not replicated",
    ),
    (
        "custom controller pod moves without skip-nodes-with-custom-controller-pods",
        pod_object("p", owner=CUSTOM_OWNER),
        [],
        DrainOptions(skip_nodes_with_custom_controller_pods=False),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "safe-to-evict=true overrides not replicated",
        pod_object("p", owner=None, annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}),
        [],
        DrainOptions(),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "safe-to-evict=false blocks",
        pod_object("p", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.NOT_SAFE_TO_EVICT_ANNOTATION,
        "pod annotated as not safe to evict present: p",
    ),
    (
        "kube-system pod without PDB blocks",
        pod_object("p", namespace="kube-system"),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.UNMOVABLE_KUBE_SYSTEM_POD,
        "non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: p",
    ),
    (
        "kube-system pod with a PDB allowing disruption moves",
        pod_object("p", namespace="kube-system", labels={"app": "dns"}),
        [pdb_object("b", labels={"app": "dns"}, allowed=1, namespace="kube-system")],
        DrainOptions(),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "kube-system pod moves without skip-nodes-with-system-pods",
        pod_object("p", namespace="kube-system"),
        [],
        DrainOptions(skip_nodes_with_system_pods=False),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "emptyDir blocks: local storage",
        pod_object("p", volumes=[{"name": "scratch", "emptyDir": {}}]),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.LOCAL_STORAGE_REQUESTED,
        "pod with local storage present: p",
    ),
    (
        "hostPath blocks: local storage",
        pod_object("p", volumes=[{"name": "h", "hostPath": {"path": "/x"}}]),
        [],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.LOCAL_STORAGE_REQUESTED,
        "pod with local storage present: p",
    ),
    (
        "memory-backed emptyDir is not local storage",
        pod_object("p", volumes=[{"name": "m", "emptyDir": {"medium": "Memory"}}]),
        [],
        DrainOptions(),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "local volume named in safe-to-evict-local-volumes moves",
        pod_object(
            "p",
            volumes=[{"name": "scratch", "emptyDir": {}}],
            annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "scratch"},
        ),
        [],
        DrainOptions(),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "local storage moves without skip-nodes-with-local-storage",
        pod_object("p", volumes=[{"name": "scratch", "emptyDir": {}}]),
        [],
        DrainOptions(skip_nodes_with_local_storage=False),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "PDB with no disruptions allowed blocks",
        pod_object("p", labels={"app": "web"}),
        [pdb_object("b", labels={"app": "web"}, allowed=0)],
        DrainOptions(),
        Outcome.BLOCK,
        BlockingReason.NOT_ENOUGH_PDB,
        "not enough pod disruption budget to move default/p",
    ),
    (
        "PDB of another namespace does not apply",
        pod_object("p", labels={"app": "web"}),
        [pdb_object("b", labels={"app": "web"}, allowed=0, namespace="other")],
        DrainOptions(),
        Outcome.DRAIN,
        None,
        "",
    ),
    (
        "terminal naked pod is drainable, not moved",
        pod_object("p", owner=None, phase="Succeeded"),
        [],
        DrainOptions(),
        Outcome.DRAINABLE,
        None,
        "",
    ),
]


@pytest.mark.parametrize(
    ("pod", "pdbs", "options", "outcome", "reason", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_drainability(
    pod: dict[str, Any],
    pdbs: list[dict[str, Any]],
    options: DrainOptions,
    outcome: Outcome,
    reason: BlockingReason | None,
    message: str,
) -> None:
    status = drainability(pod, pdbs=pdbs, options=options, now=NOW)
    assert (status.outcome, status.reason, status.message) == (outcome, reason, message)


def test_long_terminating_pod_is_skipped() -> None:
    pod = pod_object("p", owner=None)
    pod["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"
    pod["spec"]["terminationGracePeriodSeconds"] = 30
    deleted = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    assert drainability(pod, pdbs=[], options=DrainOptions(), now=deleted + 61).outcome is Outcome.SKIP
    assert drainability(pod, pdbs=[], options=DrainOptions(), now=deleted + 59).outcome is Outcome.BLOCK


def test_pdb_budget_is_shared_by_the_node_pods() -> None:
    """RemainingPdbTracker: one disruption allowed covers one of two pods of the budget, not both."""
    pdbs = [pdb_object("b", labels={"app": "web"}, allowed=1)]
    one = [pod_object("a", labels={"app": "web"})]
    two = [*one, pod_object("b", labels={"app": "web"})]
    move, _, blocking = pods_to_move(one, pdbs=pdbs, options=DrainOptions(), now=NOW)
    assert blocking is None
    assert [p["metadata"]["name"] for p in move] == ["a"]
    _, _, blocking = pods_to_move(two, pdbs=pdbs, options=DrainOptions(), now=NOW)
    assert blocking is not None
    assert blocking.message == "not enough pod disruption budget to move default/b"


def test_pods_to_move_splits_daemonset_and_terminal_pods() -> None:
    pods = [pod_object("web"), pod_object("ds", owner=DS_OWNER), pod_object("done", owner=None, phase="Failed")]
    move, evict, blocking = pods_to_move(pods, pdbs=[], options=DrainOptions(), now=NOW)
    assert blocking is None
    assert [p["metadata"]["name"] for p in move] == ["web"]
    assert [p["metadata"]["name"] for p in evict] == ["done"]
