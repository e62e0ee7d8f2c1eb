"""The Job controller's pure logic, in tables after upstream's unit tests: pod failure policy matching
(``pod_failure_policy_test.go`` TestMatchPodFailurePolicy), success policy (``success_policy_test.go``
TestMatchSuccessPolicy), index intervals (``indexed_job_utils_test.go`` TestCalculateSucceededIndexes,
TestIntervalsHaveIndex, TestFirstPendingIndexes, TestParseIndexesFromString, TestPodGenerateNameWithIndex) and
the pod-failure backoff (``backoff_utils_test.go`` TestNewBackoffRecord, TestGetRemainingBackoffTime)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_backoff import BackoffRecord, BackoffStore, remaining_time_for_failures
from kubeplane.controllers.job_indexed import (
    Intervals,
    completion_index,
    first_pending_indexes,
    parse_indexes,
    pod_generate_name_with_index,
    succeeded_indexes,
)
from kubeplane.controllers.job_manage import active_pods_for_removal
from kubeplane.controllers.job_pod_failure_policy import match_pod_failure_policy
from kubeplane.controllers.job_success_policy import match_success_policy
from kubeplane.controllers.job_util import COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER

T0 = 1_800_000_000.0


def failed_pod(
    *,
    codes: Sequence[tuple[str, int | None]] = (),
    init: Sequence[tuple[str, int]] = (),
    conditions: Sequence[tuple[str, str]] = (),
) -> Obj:
    def statuses(items: Any) -> list[Obj]:
        out = []
        for name, code in items:
            state = {} if code is None else {"terminated": {"exitCode": code}}
            out.append({"name": name, "state": state})
        return out

    status: Obj = {"phase": "Failed", "containerStatuses": statuses(codes)}
    if init:
        status["initContainerStatuses"] = statuses(init)
    if conditions:
        status["conditions"] = [{"type": t, "status": s} for t, s in conditions]
    return {"metadata": {"namespace": "default", "name": "mypod"}, "status": status}


def exit_rule(action: str, op: str, values: list[int], container: str | None = None) -> Obj:
    req: Obj = {"operator": op, "values": values}
    if container is not None:
        req["containerName"] = container
    return {"action": action, "onExitCodes": req}


def cond_rule(action: str, cond_type: str = "DisruptionTarget", status: str = "True") -> Obj:
    return {"action": action, "onPodConditions": [{"type": cond_type, "status": status}]}


MAIN2 = failed_pod(codes=[("main-container", 2)])


@pytest.mark.parametrize(
    ("case", "rules", "pod", "want_message", "want_count", "want_action"),
    [
        ("unknown action for rule matching by exit codes - skip rule with unknown action",
         [exit_rule("UnknownAction", "In", [1, 2]), exit_rule("FailJob", "In", [2, 3])], MAIN2,
         "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
         True, "FailJob"),
        ("unknown action for rule matching by pod conditions - skip rule with unknown action",
         [cond_rule("UnkonwnAction"), cond_rule("Ignore")], failed_pod(conditions=[("DisruptionTarget", "True")]),
         None, False, "Ignore"),
        ("unknown operator - rule with unknown action is skipped for onExitCodes",
         [exit_rule("Ignore", "UnknownOperator", [1, 2]), exit_rule("FailJob", "In", [2, 3])], MAIN2,
         "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
         True, "FailJob"),
        ("ignore rule matched for exit codes", [exit_rule("Ignore", "In", [1, 2, 3])], MAIN2, None, False, "Ignore"),
        ("FailJob rule matched for exit codes", [exit_rule("FailJob", "In", [1, 2, 3])], MAIN2,
         "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 0",
         True, "FailJob"),
        ("successful containers are skipped by the rules", [exit_rule("FailJob", "NotIn", [111])],
         failed_pod(init=[("init-container", 0)], codes=[("main-container", 111), ("suppport-container", 0)]),
         None, True, None),
        ("FailIndex rule matched for exit codes; JobBackoffLimitPerIndex enabled",
         [exit_rule("FailIndex", "In", [1, 2, 3])], MAIN2, None, True, "FailIndex"),
        ("pod failure policy with NotIn operator and value 0", [exit_rule("FailJob", "NotIn", [0])],
         failed_pod(codes=[("main-container", 1), ("suppport-container", 0)]),
         "Container main-container for pod default/mypod failed with exit code 1 matching FailJob rule at index 0",
         True, "FailJob"),
        ("second jobfail rule matched for exit codes",
         [exit_rule("Count", "In", [1, 2, 3]), exit_rule("FailJob", "In", [4, 5, 6])],
         failed_pod(codes=[("main-container", 6)]),
         "Container main-container for pod default/mypod failed with exit code 6 matching FailJob rule at index 1",
         True, "FailJob"),
        ("count rule matched for exit codes", [exit_rule("Count", "In", [1, 2, 3])],
         failed_pod(codes=[("foo", None), ("bar", 2)]), None, True, "Count"),
        ("FailIndex rule matched for pod conditions; JobBackoffLimitPerIndex enabled", [cond_rule("FailIndex")],
         failed_pod(conditions=[("DisruptionTarget", "True")]), None, True, "FailIndex"),
        ("ignore rule matched for pod conditions", [cond_rule("Ignore")],
         failed_pod(conditions=[("DisruptionTarget", "True")]), None, False, "Ignore"),
        ("ignore rule matches by the status=False", [cond_rule("Ignore", status="False")],
         failed_pod(conditions=[("DisruptionTarget", "False")]), None, False, "Ignore"),
        ("FailJob rule matched for pod conditions", [cond_rule("FailJob")],
         failed_pod(conditions=[("DisruptionTarget", "True")]),
         "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0", True, "FailJob"),
        ("no rule matched", [exit_rule("FailJob", "In", [5])], MAIN2, None, True, None),
        ("exit code rule for another container does not match", [exit_rule("FailJob", "In", [2], container="other")],
         MAIN2, None, True, None),
        ("init container exit code matches", [exit_rule("FailJob", "In", [3])], failed_pod(init=[("setup", 3)]),
         "Container setup for pod default/mypod failed with exit code 3 matching FailJob rule at index 0",
         True, "FailJob"),
    ],
)  # fmt: skip
def test_match_pod_failure_policy(
    case: str, rules: list[Obj], pod: Obj, want_message: str | None, want_count: bool, want_action: str | None
) -> None:
    got = match_pod_failure_policy({"rules": rules}, pod)
    assert (got.fail_job_message, got.count_failed, got.action) == (want_message, want_count, want_action), case


def test_match_pod_failure_policy_no_policy_counts() -> None:
    """TestMatchPodFailurePolicy "no policy rules"."""
    got = match_pod_failure_policy(None, MAIN2)
    assert (got.fail_job_message, got.count_failed, got.action) == (None, True, None)


@pytest.mark.parametrize(
    ("case", "rules", "completions", "succeeded", "want"),
    [
        ("successPolicy is null", None, 10, "0-3", ("", False)),
        ("any rules are nothing", [], 10, "0-3", ("", False)),
        ("rules.succeededIndexes is invalid format", [{"succeededIndexes": "invalid-form"}], 10, "0-3", ("", False)),
        ("rules.succeededIndexes is specified; succeededIndexes matched rules",
         [{"succeededIndexes": "0-2"}], 10, "0-3", ("Matched rules at index 0", True)),
        ("rules.succeededIndexes is specified; succeededIndexes didn't match rules",
         [{"succeededIndexes": "3"}], 10, "0-2", ("", False)),
        ("rules.succeededCount is specified; succeededIndexes matched rules",
         [{"succeededCount": 2}], 10, "0-3", ("Matched rules at index 0", True)),
        ("rules.succeededCount is specified; succeededIndexes didn't match rules",
         [{"succeededCount": 4}], 10, "0-2", ("", False)),
        ("multiple rules; rules.succeededIndexes is specified; succeededIndexes met one of rules",
         [{"succeededIndexes": "9"}, {"succeededIndexes": "7"}], 10, "0-7", ("Matched rules at index 1", True)),
        ("rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules",
         [{"succeededIndexes": "3-6", "succeededCount": 2}], 10, "0,4,5", ("Matched rules at index 0", True)),
        ("rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes didn't match rules",
         [{"succeededIndexes": "3-6", "succeededCount": 3}], 10, "0,4,5", ("", False)),
        ("succeededIndexes is empty", [{"succeededCount": 1}], 10, "", ("", False)),
    ],
)  # fmt: skip
def test_match_success_policy(
    case: str, rules: list[Obj] | None, completions: int, succeeded: str, want: tuple[str, bool]
) -> None:
    policy = None if rules is None else {"rules": rules}
    assert match_success_policy(policy, completions, parse_indexes(succeeded, completions)) == want, case


@pytest.mark.parametrize(
    ("text", "completions", "want"),
    [
        ("", 10, ""),
        ("0-2,5", 10, "0-2,5"),
        ("1,2", 10, "1,2"),
        ("0-1,2-3", 10, "0-3"),  # adjacent intervals merge
        ("3-10", 5, "3,4"),  # clipped below completions
        ("7,8", 5, ""),  # stops at the first index past completions
        ("a,2", 5, "2"),  # corrupted interval ignored
    ],
)
def test_parse_indexes_from_string(text: str, completions: int, want: str) -> None:
    """TestParseIndexesFromString; String() writes two adjacent indexes as "a,b", three or more as "a-c"."""
    assert str(parse_indexes(text, completions)) == want


def test_intervals_have_index_and_total() -> None:
    """TestIntervalsHaveIndex."""
    ivs = parse_indexes("0-3,6,8-9", 20)
    assert [i for i in range(12) if ivs.has(i)] == [0, 1, 2, 3, 6, 8, 9]
    assert ivs.total() == 7
    assert str(ivs.with_ordered_indexes([4, 5, 7])) == "0-9"


def _indexed_pod(ix: int | str | None, phase: str, finalizer: bool = True) -> Obj:
    meta: Obj = {"name": f"p{ix}", "annotations": {} if ix is None else {COMPLETION_INDEX_ANNOTATION: str(ix)}}
    if finalizer:
        meta["finalizers"] = [JOB_TRACKING_FINALIZER]
    return {"metadata": meta, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("case", "prev", "pods", "want_prev", "want"),
    [
        ("1 new succeeded index", "", [(2, "Succeeded")], "", "2"),
        ("new succeeded indexes merge with the previous (5 is out of range)", "0-2",
         [(3, "Succeeded"), (5, "Succeeded"), (4, "Failed")], "0-2", "0-3"),
        ("pods without finalizer were counted already", "0", [(1, "Succeeded", False)], "0", "0"),
        ("invalid and out-of-range indexes are ignored", "",
         [("x", "Succeeded"), (7, "Succeeded"), (None, "Succeeded")], "", ""),
    ],
)  # fmt: skip
def test_calculate_succeeded_indexes(case: str, prev: str, pods: list[Any], want_prev: str, want: str) -> None:
    """TestCalculateSucceededIndexes (completions 5)."""
    job = {"spec": {"completions": 5, "completionMode": "Indexed"}, "status": {"completedIndexes": prev}}
    got_prev, got = succeeded_indexes(job, [_indexed_pod(*p) for p in pods], 5)
    assert (str(got_prev), str(got)) == (want_prev, want), case


@pytest.mark.parametrize(
    ("case", "count", "completions", "non_pending", "want"),
    [
        ("cnt greater than completions", 5, 3, "", [0, 1, 2]),
        ("cnt less than completions", 2, 5, "", [0, 1]),
        ("first pods active", 2, 5, "0,1", [2, 3]),
        ("last pods active or succeeded", 2, 3, "1,2", [0]),
        ("mixed", 3, 10, "0,2,5-6", [1, 3, 4]),
        ("with failed indexes", 3, 10, "3-4,8-9", [0, 1, 2]),
    ],
)
def test_first_pending_indexes(case: str, count: int, completions: int, non_pending: str, want: list[int]) -> None:
    """TestFirstPendingIndexes (active, succeeded and failed indexes merged into the non-pending intervals)."""
    assert first_pending_indexes(count, completions, parse_indexes(non_pending, completions)) == want, case


def test_completion_index_parsing() -> None:
    """getCompletionIndex: strconv.Atoi syntax, negatives and garbage are unknown."""
    assert completion_index({"metadata": {"annotations": {COMPLETION_INDEX_ANNOTATION: "3"}}}) == 3
    for bad in ("-1", "a", "1_0", " 2", ""):
        assert completion_index({"metadata": {"annotations": {COMPLETION_INDEX_ANNOTATION: bad}}}) == -1
    assert completion_index({"metadata": {}}) == -1


def test_pod_generate_name_with_index() -> None:
    """TestPodGenerateNameWithIndex: ``<job>-<index>-``, the job name cut to fit a generated name."""
    assert pod_generate_name_with_index("pi", 3) == "pi-3-"
    long = "a" * 60
    got = pod_generate_name_with_index(long, 12)
    assert got.endswith("-12-")
    assert len(got) == 58


def _finished_at(phase: str, at: float) -> Obj:
    stamp = apimeta.format_time(at)
    return {
        "metadata": {"creationTimestamp": apimeta.format_time(T0 - 100)},
        "status": {"phase": phase, "containerStatuses": [{"state": {"terminated": {"finishedAt": stamp}}}]},
    }


@pytest.mark.parametrize(
    ("case", "old", "succeeded", "failed", "want"),
    [
        ("Empty backoff record with no latest failure", (0, None), [], [], (0, None)),
        ("Empty backoff record with one latest failure", (0, None), [], [T0 - 1], (1, T0 - 1)),
        ("Empty backoff record with one latest failure and one latest success",
         (0, None), [T0 - 2], [T0 - 1], (1, T0 - 1)),
        ("Empty backoff record with one latest failure and one latest success, latest success later",
         (0, None), [T0 - 1], [T0 - 2], (0, None)),
        ("Backoff record with one latest failure", (2, T0 - 10), [], [T0 - 1], (3, T0 - 1)),
        ("Backoff record with one latest failure and one latest success",
         (2, T0 - 10), [T0 - 2], [T0 - 1], (1, T0 - 1)),
        ("Backoff record with one latest success", (2, T0 - 10), [T0 - 1], [], (0, None)),
        ("Backoff record with two latest failures after the latest success",
         (2, T0 - 10), [T0 - 5], [T0 - 6, T0 - 3, T0 - 1], (2, T0 - 1)),
    ],
)  # fmt: skip
def test_new_backoff_record(
    case: str,
    old: tuple[int, float | None],
    succeeded: list[float],
    failed: list[float],
    want: tuple[int, float | None],
) -> None:
    """TestNewBackoffRecord."""
    store = BackoffStore()
    if old != (0, None):
        store.update(BackoffRecord("job", *old))
    got = store.new_record(
        "job", [_finished_at("Succeeded", t) for t in succeeded], [_finished_at("Failed", t) for t in failed]
    )
    assert (got.failures_after_last_success, got.last_failure_time) == want, case


@pytest.mark.parametrize(
    ("case", "failures", "since_failure", "want"),
    [
        ("no failures", 0, 0.0, 0.0),
        ("one failure; no wait", 1, 10.0, 0.0),
        ("one failure; must wait", 1, 5.0, 5.0),
        ("two failures; doubled", 2, 5.0, 15.0),
        ("six failures; 320s", 6, 20.0, 300.0),
        ("many failures; capped at MaxJobPodFailureBackOff", 20, 0.0, 600.0),
    ],
)
def test_get_remaining_backoff_time(case: str, failures: int, since_failure: float, want: float) -> None:
    """TestGetRemainingBackoffTime: 10 s doubling per consecutive failure, capped (upstream's 10 min)."""
    assert remaining_time_for_failures(T0, failures, T0 - since_failure) == want, case


def test_intervals_default_is_empty() -> None:
    assert str(Intervals()) == ""
    assert Intervals().total() == 0


def _active(name: str, ix: int | None, *, ready: bool = False, node: str = "") -> Obj:
    meta: Obj = {"name": name, "uid": name, "annotations": {} if ix is None else {COMPLETION_INDEX_ANNOTATION: str(ix)}}
    status: Obj = {"phase": "Running" if node else "Pending"}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def test_active_pods_for_removal_indexed_duplicates() -> None:
    """TestControllerSyncJob "indexed job repeated completion index" / "indexed job with indexes outside of
    range" / "indexed job with some pods deleted, podReplacementPolicy ...": of repeated indexes all but the most
    advanced pod go, index-less and out-of-range pods go, then the least advanced of the rest."""
    job = {"spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3}}
    pods = [
        _active("a0", 0, ready=True, node="n"),
        _active("b0", 0),
        _active("c1", 1, node="n"),
        _active("d5", 5, ready=True, node="n"),
        _active("e", None, ready=True, node="n"),
        _active("f2", 2),
    ]
    names = sorted(p["metadata"]["name"] for p in active_pods_for_removal(job, pods, 0))
    assert names == ["b0", "d5", "e"]
    names = [p["metadata"]["name"] for p in active_pods_for_removal(job, pods, 4)]
    assert sorted(names[:3]) == ["b0", "d5", "e"]
    assert names[3] == "f2"  # unscheduled before scheduled


def test_active_pods_for_removal_non_indexed_order() -> None:
    """activePodsForRemoval: not ready < ready, unscheduled < scheduled, pending < running."""
    job = {"spec": {"completions": 3}}
    pods = [_active("ready", None, ready=True, node="n"), _active("pending", None), _active("running", None, node="n")]
    assert [p["metadata"]["name"] for p in active_pods_for_removal(job, pods, 2)] == ["pending", "running"]
