"""How a simulated container stops: upstream's ``killContainer`` (``pkg/kubelet/kuberuntime/kuberuntime_container.go``)
timed for a process that exits some time after SIGTERM. Pure: the pod workers apply it on the injected clock.

Upstream, for each running container of a pod being deleted (all containers in parallel):

1. the grace period is the pod's ``deletionGracePeriodSeconds`` (``terminationGracePeriodSeconds`` unless the
   delete request gave another);
2. a preStop hook runs first, bounded by the grace period, and its time is taken from it (only when the grace
   period is above 0). Of the hooks only the ``sleep`` action has a duration here; ``exec`` and ``httpGet`` hooks
   have nothing to run and take no time;
3. the runtime sends SIGTERM and waits what is left of the grace period, but never less than
   ``minimumGracePeriodInSeconds`` (2 s), then sends SIGKILL.

The simulated process exits its **stop time** after SIGTERM: the pod's ``sim.kubeplane.io/shutdown-duration``
annotation, else the node config's ``shutdownDelay``, else the fleet's ``--shutdown-delay``, else
:data:`DEFAULT_STOP_TIME` (half a second, so ``kubectl delete pod`` and ``kubectl drain`` take about a second as
with real processes, not the whole grace period).

Exit codes (a choice, documented in docs/kubelet.md): a process that stops within its window handles SIGTERM and
exits 0 (reason ``Completed``), as well-behaved servers do; upstream would report 143 (reason ``Error``) for a
process that dies of the signal unhandled. A process still running at the end of its window is killed: exit 137
(128 + SIGKILL), reason ``Error``. The pod then ends ``Succeeded`` when every container exited 0, else ``Failed``.

Invariant: a container's exit is never later than its preStop time plus its (floored) remaining grace period.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api.views import meta_of, section

DEFAULT_STOP_TIME = 0.5
"""Seconds a simulated container takes to exit after SIGTERM when nothing configures it."""
MINIMUM_GRACE_PERIOD = 2.0
"""Upstream ``minimumGracePeriodInSeconds``: SIGTERM always gets this long before SIGKILL."""
DEFAULT_GRACE_PERIOD = 30.0
EXIT_CODE_CLEAN = 0
EXIT_CODE_SIGKILL = 137


@dataclass(frozen=True, slots=True)
class ContainerStop:
    """When (seconds after the kill began) and how one container ends."""

    at: float
    exit_code: int


def stop_time(*, pod_setting: float | None, node_setting: float | None, fleet_setting: float | None) -> float:
    """The stop time of a pod's containers: the most specific setting given, else :data:`DEFAULT_STOP_TIME`."""
    for value in (pod_setting, node_setting, fleet_setting):
        if value is not None:
            return max(value, 0.0)
    return DEFAULT_STOP_TIME


def grace_period(pod: Mapping[str, Any]) -> float:
    """The pod's grace period for this deletion: ``metadata.deletionGracePeriodSeconds`` (set by the API server
    on a graceful delete), 30 s when absent."""
    value = meta_of(pod).get("deletionGracePeriodSeconds", DEFAULT_GRACE_PERIOD)
    return float(value or 0)


def pre_stop_sleep(container: Mapping[str, Any]) -> float:
    """Seconds the container's preStop hook takes: its ``sleep`` action's seconds, 0 for any other hook."""
    sleep = section(container, "lifecycle", "preStop", "sleep")
    try:
        return max(float(sleep.get("seconds") or 0), 0.0)
    except (TypeError, ValueError):
        return 0.0


def container_stop(*, grace: float, pre_stop: float, stop: float) -> ContainerStop:
    """Upstream ``killContainer`` for a process that exits ``stop`` seconds after SIGTERM: the preStop hook
    (bounded by ``grace``, skipped when ``grace`` is 0), then SIGTERM with what is left of the grace period
    (at least :data:`MINIMUM_GRACE_PERIOD`), then SIGKILL."""
    hook = min(pre_stop, grace) if grace > 0 else 0.0
    window = max(grace - hook, MINIMUM_GRACE_PERIOD)
    if stop < window:
        return ContainerStop(at=hook + stop, exit_code=EXIT_CODE_CLEAN)
    return ContainerStop(at=hook + window, exit_code=EXIT_CODE_SIGKILL)
