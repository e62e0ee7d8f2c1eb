"""FitError's message (upstream framework/types.go ``FitError.Error``): ``0/N nodes are available:`` then the sorted
``count reason`` histogram, the PreFilter message instead of it when there is one, and the PostFilter message.
The scheduler reads it twice per failure, so FitError keeps it while the diagnosis's parts are unchanged; these
cases pin that a later change (PostFilter's message, another rejected node) still shows."""

from __future__ import annotations

from kubeplane.scheduler.framework.diagnosis import Diagnosis, FitError
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.framework.types import PodInfo

POD = PodInfo({"kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u"}, "spec": {}})


def test_message_counts_reasons_then_follows_the_post_filter_message() -> None:
    cpu = Status.unschedulable("Insufficient cpu")
    diagnosis = Diagnosis(node_to_status={"a": cpu, "b": cpu, "c": Status.unresolvable("node(s) were unschedulable")})
    err = FitError(POD, 4, diagnosis)
    assert str(err) == "0/4 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    assert str(err) == "0/4 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    diagnosis.post_filter_msg = "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod"
    assert str(err).endswith(
        " 2 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod."
    )
    diagnosis.node_to_status["d"] = cpu
    assert str(err).startswith("0/4 nodes are available: 1 node(s) were unschedulable, 3 Insufficient cpu.")


def test_pre_filter_message_replaces_the_histogram() -> None:
    diagnosis = Diagnosis(node_to_status={"a": Status.unschedulable("Insufficient cpu")})
    err = FitError(POD, 2, diagnosis)
    assert str(err) == "0/2 nodes are available: 1 Insufficient cpu."
    diagnosis.pre_filter_msg = "pod has unbound immediate PersistentVolumeClaims"
    assert str(err) == "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
