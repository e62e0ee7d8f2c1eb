"""What a simulation costs in memory: summary.json's ``bytes_per_node`` and ``bytes_per_pod``.

Resident-set figures of the process running the simulation (the whole control plane and fleet live in it), so
the allocator's slack is included:

* ``bytes_per_node``: the resident set at the first sample (the nodes registered, the informers synced: what
  the cluster costs before the workload) minus the resident set when the run started (interpreter, imports),
  divided by the nodes at the first sample;
* ``bytes_per_pod``: the peak resident set minus that first sample, divided by the pods created: everything the
  workload costs per pod, its share of the store, the watch caches, the informers, Events and the observer's
  records included.

The peak is the process's (``getrusage``'s ``ru_maxrss``): when the process had been larger before the run (an
earlier run in the same process, e.g. a sweep's worker) and the run never passes that, the run's own peak is not
known and ``bytes_per_pod`` is None rather than wrong. Like ``wall_seconds``, the figures differ from run to run
and are never part of the event-log hash.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

FIELDS = ("bytes_per_node", "bytes_per_pod")
"""The summary fields this module adds."""


def rss_bytes() -> int:
    """The process's current resident set in bytes (Linux ``/proc/self/statm``; 0 where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0
    return pages * resource.getpagesize()


def peak_rss_bytes() -> int:
    """The process's peak resident set in bytes (``ru_maxrss``, which Linux gives in kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclass(slots=True)
class MemoryProbe:
    """Readings taken at the run's start (:meth:`begin`) and first sample (:meth:`sampled`); 0 until taken."""

    before: int = 0
    peak_before: int = 0
    started: int = 0
    nodes: int = 0

    def begin(self) -> None:
        self.before = rss_bytes()
        self.peak_before = peak_rss_bytes()

    def sampled(self, nodes: int) -> None:
        """At every sample: the first one's resident set and node count are kept."""
        if not self.started:
            self.started = rss_bytes()
            self.nodes = nodes

    def figures(self, *, pods: int) -> dict[str, int | None]:
        """``bytes_per_node`` and ``bytes_per_pod`` (see the module docstring), None where not known."""
        per_node = per_pod = None
        if self.started and self.before and self.nodes:
            per_node = round((self.started - self.before) / self.nodes)
        peak = peak_rss_bytes()
        if self.started and pods and peak > self.peak_before:
            per_pod = round((peak - self.started) / pods)
        return {"bytes_per_node": per_node, "bytes_per_pod": per_pod}
