"""How long a simulated container runs and how it exits: the annotations of ``docs/kubelet.md``.

A run is one start of a pod's containers (run 0, then one more per restart). :func:`plan_run` decides, from the
pod alone, whether that run ends and how:

* ``sim.kubeplane.io/fail-exit-code: "<code>"`` makes a run *fail*: after ``sim.kubeplane.io/fail-after``
  (a Go duration or seconds; default: the run time below) its containers exit with that code (a non-zero
  integer; upstream's reason ``Error``). ``sim.kubeplane.io/fail-runs: "<N>"`` limits failing to the first N
  runs, so a pod with restartPolicy OnFailure and ``fail-runs: "2"`` fails twice, is restarted with upstream's
  back-off, and then succeeds. Without ``fail-runs`` every run fails. (With restartPolicy Never every pod has
  only run 0: a Job's replacement pods are new pods that fail again.)
* Otherwise ``sim.kubeplane.io/duration`` runs that long, whatever the restart policy; without it a pod with
  restartPolicy Never or OnFailure -- a batch pod, e.g. one a Job created -- runs the node's batch run time
  (node config ``batchRunTime``, ``kubeplane kubelet --batch-run-time``; default 5 s). Either exits with
  ``sim.kubeplane.io/exit-code`` (default 0, reason ``Completed``), so ``kubectl create job hello
  --image=busybox -- echo hi`` completes as on a real cluster.
* Otherwise (restartPolicy Always, no annotation) the run never ends.

Malformed values are ignored (logged by the caller) rather than failing the pod: a simulation knob, not API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .state import DURATION_ANNOTATION, EXIT_CODE_ANNOTATION, annotation, seconds

__all__ = [
    "FAIL_AFTER_ANNOTATION",
    "FAIL_EXIT_CODE_ANNOTATION",
    "FAIL_RUNS_ANNOTATION",
    "KNOBS",
    "RunPlan",
    "plan_run",
    "well_formed",
]

FAIL_EXIT_CODE_ANNOTATION: Final = "sim.kubeplane.io/fail-exit-code"
FAIL_AFTER_ANNOTATION: Final = "sim.kubeplane.io/fail-after"
FAIL_RUNS_ANNOTATION: Final = "sim.kubeplane.io/fail-runs"
KNOBS: Final = (FAIL_EXIT_CODE_ANNOTATION, FAIL_AFTER_ANNOTATION, FAIL_RUNS_ANNOTATION)
BATCH_POLICIES: Final = frozenset({"Never", "OnFailure"})


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One run: its containers exit ``exit_code`` after ``seconds``."""

    seconds: float
    exit_code: int


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def _seconds(text: str | None) -> float | None:
    value = seconds(text) if text is not None else None
    return value if value is not None and value >= 0 else None


def plan_run(pod: Mapping[str, Any], run: int, batch_run_time: float) -> RunPlan | None:
    """How run ``run`` (0-based) of ``pod`` ends; None when it runs until the pod is deleted."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    policy = (spec or {}).get("restartPolicy") or "Always"
    duration = _seconds(annotation(pod, DURATION_ANNOTATION))
    run_time = duration if duration is not None else (batch_run_time if policy in BATCH_POLICIES else None)
    fail_code = _int(annotation(pod, FAIL_EXIT_CODE_ANNOTATION))
    fail_runs = _int(annotation(pod, FAIL_RUNS_ANNOTATION))
    if fail_code and (fail_runs is None or run < fail_runs):
        after = _seconds(annotation(pod, FAIL_AFTER_ANNOTATION))
        wait = after if after is not None else run_time if run_time is not None else batch_run_time
        return RunPlan(wait, fail_code)
    if run_time is None:
        return None
    return RunPlan(run_time, _int(annotation(pod, EXIT_CODE_ANNOTATION)) or 0)


def well_formed(key: str, text: str) -> bool:
    """Whether an annotation's value is of its form (durations for ``duration``/``fail-after``, integers for the
    rest); a malformed one is ignored by :func:`plan_run`."""
    if key in (DURATION_ANNOTATION, FAIL_AFTER_ANNOTATION):
        return _seconds(text) is not None
    return _int(text) is not None
