"""The status ConfigMap (clusterstate/api/types.go): upstream's v1.30+ YAML fields, Go's time.String() form, and
lastTransitionTime moving only when a condition's status changes."""

from __future__ import annotations

import yaml

from kubeplane.autoscaler.status import LAST_UPDATED_ANNOTATION, GroupCounts, StatusWriter, go_time_string

T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def test_go_time_string() -> None:
    assert go_time_string(T0) == "2027-01-15 08:00:00 +0000 UTC"
    assert go_time_string(T0 + 0.25) == "2027-01-15 08:00:00.25 +0000 UTC"


def test_document_fields_and_transitions() -> None:
    writer = StatusWriter()
    group = GroupCounts(ready=1, not_started=2, target=3, min_size=1, max_size=5, upcoming=2)
    cm = writer.config_map(group, {"small": group}, T0, name="cluster-autoscaler-status", namespace="kube-system")
    doc = yaml.safe_load(cm["data"]["status"])
    assert cm["metadata"]["annotations"][LAST_UPDATED_ANNOTATION] == doc["time"] == "2027-01-15 08:00:00 +0000 UTC"
    assert doc["autoscalerStatus"] == "Running"
    assert doc["clusterWide"]["health"]["nodeCounts"] == {
        "registered": {"total": 3, "ready": 1, "notStarted": 2, "unready": {"total": 0, "resourceUnready": 0}},
        "longUnregistered": 0,
        "unregistered": 0,
    }
    assert doc["clusterWide"]["scaleUp"]["status"] == "InProgress"
    [entry] = doc["nodeGroups"]
    assert (entry["health"]["cloudProviderTarget"], entry["health"]["minSize"], entry["health"]["maxSize"]) == (3, 1, 5)
    assert entry["scaleDown"]["status"] == "NoCandidates"

    later = writer.document(GroupCounts(ready=3, target=3, candidates=1), {}, T0 + 60)
    assert later["clusterWide"]["scaleUp"]["status"] == "NoActivity"
    assert later["clusterWide"]["scaleUp"]["lastTransitionTime"] == "2027-01-15T08:01:00Z"
    assert later["clusterWide"]["health"]["lastTransitionTime"] == "2027-01-15T08:00:00Z"  # still Healthy
    assert later["clusterWide"]["scaleDown"]["status"] == "CandidatesPresent"
    assert later["clusterWide"]["scaleDown"]["candidates"] == 1


def test_unhealthy_past_upstream_unready_limits() -> None:
    """ok-total-unready-count 3 and max-total-unready-percentage 45: 4 of 5 unready is Unhealthy, 3 of 3 is not."""
    writer = StatusWriter()
    assert writer.document(GroupCounts(ready=1, unready=4), {}, T0)["clusterWide"]["health"]["status"] == "Unhealthy"
    assert writer.document(GroupCounts(unready=3), {}, T0)["clusterWide"]["health"]["status"] == "Healthy"
