"""Table printers of batch/v1 Job and CronJob, as upstream ``pkg/printers/internalversion/printers.go``
(``printJob``, ``printCronJob`` and their column definitions) at v1.37.

Job: NAME, STATUS, COMPLETIONS, DURATION, AGE, and wide CONTAINERS, IMAGES, SELECTOR. STATUS is the first of
Complete, Failed, Terminating (a deletionTimestamp), Suspended, FailureTarget whose condition is True, else
Running. COMPLETIONS is ``succeeded/completions``, or for a Job without completions ``succeeded/1`` (``of
<parallelism>`` added when parallelism is above 1). DURATION is empty before ``startTime``, the time since it
while running, and ``completionTime - startTime`` once complete.

CronJob: NAME, SCHEDULE, TIMEZONE (``<none>``), SUSPEND (``True``/``False``, ``<unset>``), ACTIVE (the number of
active jobs), LAST SCHEDULE (``<none>`` or an age), AGE, and wide CONTAINERS, IMAGES, SELECTOR (the job
template's). Pure functions of the object and ``now``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.labels import format_label_selector
from kubeplane.api.views import items, mappings, meta_of, name_of, section

from .printers_workloads import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Obj,
    Printer,
    age,
    epoch,
    human_duration,
    layout_container_cells,
    since,
)

__all__ = ["BATCH_PRINTERS", "cron_job_row", "job_row"]

_CONTAINERS: Final = Column("Containers", "string", "Names of each container in the template.", priority=1)
_IMAGES: Final = Column("Images", "string", "Images referenced by each container in the template.", priority=1)
_JOB_SELECTOR: Final = Column(
    "Selector", "string", "A label query over pods that should match the pod count.", priority=1
)

JOB_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Status", "string", "Status of the job."),
    Column("Completions", "string", "The number of pods which reached phase Succeeded."),
    Column("Duration", "string", "Time required to complete the job."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _JOB_SELECTOR,
)

CRONJOB_COLUMNS: Final = (
    NAME_COLUMN,
    Column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    Column(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    Column(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started "
        "executions.",
    ),
    Column("Active", "integer", "A list of pointers to currently running jobs."),
    Column("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE_COLUMN,
    _CONTAINERS,
    _IMAGES,
    _JOB_SELECTOR,
)

_STATUS_ORDER: Final = ("Complete", "Failed")
_AFTER_TERMINATING: Final = ("Suspended", "FailureTarget")


def _has_condition(status: Mapping[str, Any], kind: str) -> bool:
    """Upstream ``hasJobCondition``: a condition of that type with status True."""
    return any(c.get("type") == kind and c.get("status") == "True" for c in mappings(status, "conditions"))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def job_status(obj: Obj) -> str:
    """The STATUS cell (see the module docstring)."""
    status = section(obj, "status")
    for kind in _STATUS_ORDER:
        if _has_condition(status, kind):
            return kind
    if meta_of(obj).get("deletionTimestamp"):
        return "Terminating"
    for kind in _AFTER_TERMINATING:
        if _has_condition(status, kind):
            return kind
    return "Running"


def job_completions(obj: Obj) -> str:
    spec, status = section(obj, "spec"), section(obj, "status")
    succeeded = _int(status.get("succeeded")) or 0
    completions = _int(spec.get("completions"))
    if completions is not None:
        return f"{succeeded}/{completions}"
    parallelism = _int(spec.get("parallelism")) or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def job_duration(obj: Obj, now: float) -> str:
    status = section(obj, "status")
    start = epoch(status.get("startTime"))
    if start is None:
        return ""
    completion = epoch(status.get("completionTime"))
    return human_duration((now if completion is None else completion) - start)


def _template_cells(pod_template: Mapping[str, Any]) -> list[Any]:
    names, images = layout_container_cells(items(section(pod_template, "spec"), "containers"))
    return [names, images]


def job_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printJob``."""
    spec = section(obj, "spec")
    return [
        name_of(obj),
        job_status(obj),
        job_completions(obj),
        job_duration(obj, now),
        age(obj, now),
        *_template_cells(section(spec, "template")),
        format_label_selector(spec.get("selector")),
    ]


def _bool_ptr(value: object) -> str:
    """Upstream ``printBoolPtr``."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return "<unset>"


def cron_job_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printCronJob``."""
    spec, status = section(obj, "spec"), section(obj, "status")
    last = status.get("lastScheduleTime")
    time_zone = spec.get("timeZone")
    job_spec = section(spec, "jobTemplate", "spec")
    return [
        name_of(obj),
        str(spec.get("schedule") or ""),
        time_zone if isinstance(time_zone, str) else "<none>",
        _bool_ptr(spec.get("suspend")),
        len(items(status, "active")),
        "<none>" if last is None else since(epoch(last), now),
        age(obj, now),
        *_template_cells(section(job_spec, "template")),
        format_label_selector(job_spec.get("selector")),
    ]


BATCH_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("batch", "Job"): Printer(JOB_COLUMNS, job_row),
    ("batch", "CronJob"): Printer(CRONJOB_COLUMNS, cron_job_row),
}
