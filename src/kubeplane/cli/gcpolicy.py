"""The cyclic garbage collector's settings for kubeplane's long-running processes.

CPython's default thresholds (700, 10, 10) run a young collection every 700 container allocations. A control
plane allocates a few hundred dicts and lists per object it decodes, copies or validates, so a young collection ran
every couple of objects, and every tenth one walked the middle generation too: in scheduler_perf's SchedulingBasic
(5,000 nodes, one process) the collector was a third of the wall time, charged to whatever allocated next
(``orjson.loads`` of a small pod measured 196 us in a profile). Almost nothing a control plane allocates is cyclic
garbage -- reference counting frees it -- so collecting rarely loses little memory and saves that time.

:func:`tune_for_control_plane` is called once by each component's process before it serves (``kubeplane up``,
``apiserver``, ``scheduler``, ``controller-manager``, ``kubelet``) and by the benchmarks that stand for them. The
simulation has its own, stricter policy (no automatic collection at all: ``kubeplane.sim.runner``).
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000
"""Container allocations (net of frees) between young collections: at most a few MB of cyclic garbage waits."""
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 10


def tune_for_control_plane() -> None:
    """Raise the thresholds and move what start-up allocated (modules, tables, compiled schemas) out of the
    collector's sight: ``gc.freeze`` puts it in the permanent generation, so full collections no longer walk it.
    Idempotent; the collector stays enabled, so cycles are still reclaimed."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
