"""Real kubectl v1.37 against a kubeplane apiserver for batch/v1: ``kubectl create job`` (also ``--from=cronjob``),
``kubectl create cronjob``, ``kubectl get jobs,cronjobs`` (and ``-o wide``), and the Job strategy's defaults,
generated selector, validation errors and delete policy as kube-apiserver answers them.

Pins: pkg/registry/batch/job/strategy.go (generateSelector, PrepareForCreate, DefaultGarbageCollectionPolicy),
pkg/apis/batch/v1/defaults.go (SetDefaults_Job, SetDefaults_CronJob), pkg/apis/batch/validation (ValidateJob,
ValidateCronJobCreate), pkg/printers/internalversion/printers.go (printJob, printCronJob) and kubectl's
staging/src/k8s.io/kubectl/pkg/cmd/create/create_job.go and create_cronjob.go.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("kubectl-batch")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


def test_create_job_defaults_and_generated_selector(kubectl: Kubectl) -> None:
    """create_job.go builds a Never-restarting template; the server defaults it (SetDefaults_Job) and generates
    the selector and the four labels (generateSelector), which the defaulter copies into the Job's labels."""
    out = kubectl("create", "job", "hello", "--image=busybox", "--", "echo", "hi")
    assert out.stdout.strip() == "job.batch/hello created"
    job = kubectl.json("get", "job", "hello")
    uid = job["metadata"]["uid"]
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"]) == ("NonIndexed", False)
    assert (spec["podReplacementPolicy"], spec["manualSelector"]) == ("TerminatingOrFailed", False)
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    expected = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "hello",
        "controller-uid": uid,
        "job-name": "hello",
    }
    assert spec["template"]["metadata"]["labels"] == expected
    assert job["metadata"]["labels"] == expected
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["metadata"]["generation"] == 1


def test_create_cronjob_and_job_from_it(kubectl: Kubectl) -> None:
    """create_cronjob.go, SetDefaults_CronJob, and ``create job --from=cronjob/x`` (the job template copied, an
    ownerReference to the CronJob and the ``cronjob.kubernetes.io/instantiate: manual`` annotation)."""
    out = kubectl("create", "cronjob", "c", "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
    assert out.stdout.strip() == "cronjob.batch/c created"
    cj = kubectl.json("get", "cronjob", "c")
    spec = cj["spec"]
    assert (spec["schedule"], spec["concurrencyPolicy"]) == ("*/5 * * * *", "Allow")
    assert spec["suspend"] is False
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert "completions" not in spec["jobTemplate"]["spec"]  # SetDefaults_Job is the Job kind's only
    assert spec["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    kubectl("create", "job", "c-manual", "--from=cronjob/c")
    job = kubectl.json("get", "job", "c-manual")
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
    assert job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == job["metadata"]["uid"]


def test_get_jobs_and_cronjobs_columns(kubectl: Kubectl) -> None:
    """printJob/printCronJob columns through kubectl's Table rendering, plain and wide."""
    kubectl("create", "job", "cols", "--image=busybox", "--", "true")
    kubectl("create", "cronjob", "cols-cj", "--image=busybox", "--schedule=@hourly", "--", "true")
    lines = kubectl("get", "jobs,cronjobs").stdout.splitlines()
    header = lines[0].split()
    assert header == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    row = next(line.split() for line in lines if line.startswith("job.batch/cols "))
    assert row[1:3] == ["Running", "0/1"]
    cj_header = next(line for line in lines if line.startswith("NAME") and "SCHEDULE" in line).split()
    assert cj_header == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    cj_row = next(line.split() for line in lines if line.startswith("cronjob.batch/cols-cj "))
    assert cj_row[1:6] == ["@hourly", "<none>", "False", "0", "<none>"]
    wide = kubectl("get", "job", "cols", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    cells = wide[1].split()  # DURATION is empty before startTime, so the row has one cell fewer when split
    assert cells[-3:-1] == ["cols", "busybox"]
    assert cells[-1].startswith("batch.kubernetes.io/controller-uid=")
    cj_wide = kubectl("get", "cronjob", "cols-cj", "-o", "wide").stdout.splitlines()
    assert cj_wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert cj_wide[1].split()[-3:] == ["cols-cj", "busybox", "<none>"]


def test_invalid_job_and_cronjob_are_422_with_upstream_messages(kubectl: Kubectl) -> None:
    """ValidateJob's restartPolicy rule and ValidateCronJobCreate's schedule parse error and 52-character name
    limit, as kubectl prints the 422."""
    bad_job = """
apiVersion: batch/v1
kind: Job
metadata: {name: always}
spec:
  template:
    spec:
      restartPolicy: Always
      containers: [{name: c, image: busybox}]
"""
    out = kubectl("apply", "-f", "-", stdin=bad_job, check=False)
    assert out.returncode != 0
    assert 'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"' in out.stderr
    out = kubectl("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *", check=False)
    assert out.returncode != 0
    assert 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61' in out.stderr
    name = "x" * 53
    out = kubectl("create", "cronjob", name, "--image=busybox", "--schedule=@daily", check=False)
    assert f'metadata.name: Invalid value: "{name}": must be no more than 52 characters' in out.stderr


def test_job_template_is_immutable_and_delete_without_policy_orphans(kubectl: Kubectl) -> None:
    """ValidateJobSpecUpdate (template immutable) and the Job strategy's DefaultGarbageCollectionPolicy:
    batch/v1 OrphanDependents, so a DELETE without propagationPolicy leaves the Job held by ``orphan``."""
    kubectl("create", "job", "frozen", "--image=busybox", "--", "true")
    out = kubectl("set", "image", "job/frozen", "frozen=busybox:2", check=False)
    assert out.returncode != 0
    assert "spec.template: Invalid value" in out.stderr
    assert "field is immutable" in out.stderr
    kubectl("label", "job", "frozen", "team=a")  # metadata stays mutable
    # Raw DELETE without a body: the strategy's default policy applies (kubectl itself sends Background).
    kubectl("delete", "--raw", "/apis/batch/v1/namespaces/default/jobs/frozen")
    job = kubectl.json("get", "job", "frozen")
    assert job["metadata"]["finalizers"] == ["orphan"]
    assert job["metadata"].get("deletionTimestamp")
    kubectl("create", "job", "gone", "--image=busybox", "--", "true")
    kubectl("delete", "job", "gone")  # Background: no finalizer, gone at once
    assert kubectl("get", "job", "gone", check=False).returncode != 0
