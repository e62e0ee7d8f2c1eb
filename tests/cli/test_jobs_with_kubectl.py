"""Issue 25's Job acceptance with real kubectl against separate ``kubeplane`` processes (apiserver, scheduler,
controller-manager, kubelet; the fixture of :mod:`tests.cli.test_controllers_with_kubectl`): an Indexed Job of
completions 5, parallelism 2 runs at most 2 pods at a time and completes indexes 0-4 (``kubectl wait
--for=condition=complete``); a Job whose pod exits 3 exhausts backoffLimit 0 with upstream's reason and message;
a podFailurePolicy FailJob rule fails a Job at once. Pods finish through the simulated kubelet's
``sim.kubeplane.io/duration`` / ``sim.kubeplane.io/exit-code`` annotations. Selectors are set by hand
(``manualSelector``): generating them is the Job API's defaulting."""

from __future__ import annotations

import json
import time
from typing import Any

from tests.apiserver.conftest import Server
from tests.cli.test_controllers_with_kubectl import cluster

__all__ = ["cluster"]


def job_yaml(name: str, spec: dict[str, Any], *, duration: str = "1s", exit_code: int = 0) -> str:
    labels = {"job-name": name}
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": {
                        "sim.kubeplane.io/duration": duration,
                        "sim.kubeplane.io/exit-code": str(exit_code),
                    },
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            },
            **spec,
        },
    }
    return json.dumps(body)


def test_indexed_job_and_failures_with_kubectl(cluster: tuple[Server, Any]) -> None:
    _server, kubectl = cluster
    kubectl(
        "apply", "-f", "-", stdin=job_yaml("idx", {"completions": 5, "parallelism": 2, "completionMode": "Indexed"})
    )
    most_active = 0
    deadline = time.monotonic() + 60
    while True:
        job = json.loads(kubectl("get", "job", "idx", "-o", "json"))
        most_active = max(most_active, int(job.get("status", {}).get("active") or 0))
        pods = json.loads(kubectl("get", "pods", "-l", "job-name=idx", "-o", "json"))["items"]
        running = [p for p in pods if p.get("status", {}).get("phase") in ("Pending", "Running")]
        most_active = max(most_active, len([p for p in running if not p["metadata"].get("deletionTimestamp")]))
        if any(c["type"] == "Complete" for c in job.get("status", {}).get("conditions") or ()):
            break
        assert time.monotonic() < deadline, job.get("status")
        time.sleep(0.2)
    kubectl("wait", "--for=condition=complete", "job/idx", "--timeout=30s")
    assert most_active <= 2
    assert job["status"]["completedIndexes"] == "0-4"
    assert job["status"]["succeeded"] == 5
    pods = json.loads(kubectl("get", "pods", "-l", "job-name=idx", "-o", "json"))["items"]
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2", "3", "4"]
    assert {p["spec"]["hostname"] for p in pods} == {f"idx-{i}" for i in range(5)}

    kubectl("apply", "-f", "-", stdin=job_yaml("fails", {"backoffLimit": 0}, exit_code=3))
    kubectl("wait", "--for=condition=failed", "job/fails", "--timeout=60s")
    job = json.loads(kubectl("get", "job", "fails", "-o", "json"))
    [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )
    events = kubectl("get", "events", "--field-selector", "involvedObject.name=fails")
    assert "BackoffLimitExceeded" in events

    rule = {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [3]}}
    kubectl("apply", "-f", "-", stdin=job_yaml("policy", {"podFailurePolicy": {"rules": [rule]}}, exit_code=3))
    kubectl("wait", "--for=condition=failed", "job/policy", "--timeout=60s")
    job = json.loads(kubectl("get", "job", "policy", "-o", "json"))
    [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed["reason"] == "PodFailurePolicy"
    assert failed["message"].startswith("Container main for pod default/policy-")
    assert failed["message"].endswith("failed with exit code 3 matching FailJob rule at index 0")
