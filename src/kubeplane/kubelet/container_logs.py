"""The log of one simulated container: what ``kubectl logs`` reads through the kubelet's ``/containerLogs``.

Upstream the runtime writes each container's stdout/stderr into a CRI log file per container instance
(``/var/log/pods/<ns>_<pod>_<uid>/<container>/<restartCount>.log``) and the kubelet reads it back
(``pkg/kubelet/kuberuntime/logs/logs.go`` ``ReadLogs``). A :class:`ContainerLog` is that set of files for a
simulated container: one :class:`LogInstance` per start, numbered by the restart count, each a list of
``(time, line)``. Only the current instance and the one before it are kept (the kubelet keeps the last dead
container, which is what ``--previous`` reads). Each instance keeps at most :data:`MAX_LINES` lines, oldest
dropped first (log rotation).

What a simulated container "prints" (documented in docs/kubelet.md):

* lifecycle lines the kubelet writes as it starts, signals and ends the container (:func:`started_line`, ...);
* the lines of the pod annotation ``sim.kubeplane.io/log`` (``sim.kubeplane.io/log.<container>`` for one
  container), written when the container starts and, with ``sim.kubeplane.io/log-every`` (a Go duration), again
  every that long while it runs.

:func:`read` follows ``ReadLogs``: ``tailLines`` first (the last N lines), then ``since`` (lines at or after a
time), ``timestamps`` prefixes each line with its time in RFC3339Nano with nine digits (``RFC3339NanoFixed``),
``limitBytes`` cuts the output after that many bytes (mid-line if so), and ``follow`` keeps writing new lines
until the instance ends (the container stopped) or the reader goes away.

Invariant: an instance once finished never gets another line; followers are woken on every append and on finish.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubeplane.api.durations import parse_duration
from kubeplane.api.views import annotations_of

MAX_LINES = 10_000
"""Lines kept per container instance (upstream rotates at containerLogMaxSize, 10Mi, keeping 5 files)."""
LOG_ANNOTATION = "sim.kubeplane.io/log"
LOG_EVERY_ANNOTATION = "sim.kubeplane.io/log-every"


def format_timestamp(ns: int) -> str:
    """Go's ``RFC3339NanoFixed`` in UTC: ``2026-11-28T06:40:00.123456789Z``."""
    seconds, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def started_line(name: str, image: str) -> str:
    return f"kubeplane: started container {name} (image {image}); it is simulated and runs no process"


def sigterm_line(name: str) -> str:
    return f"kubeplane: container {name} received SIGTERM"


def exited_line(name: str, code: int) -> str:
    return f"kubeplane: container {name} exited with code {code}"


def pod_lines(pod: Any, container: str) -> str | None:
    """The lines ``container`` of ``pod`` prints at start: ``sim.kubeplane.io/log.<container>``, else
    ``sim.kubeplane.io/log`` (one trailing newline dropped), else None."""
    annotations = annotations_of(pod)
    text = annotations.get(f"{LOG_ANNOTATION}.{container}", annotations.get(LOG_ANNOTATION))
    if text is None or text == "":
        return None
    text = str(text)
    return text[:-1] if text.endswith("\n") else text


def log_every(pod: Any) -> float | None:
    """Seconds between repeats of the pod's log lines (``sim.kubeplane.io/log-every``, a Go duration above
    zero), None when absent or not a positive duration."""
    text = annotations_of(pod).get(LOG_EVERY_ANNOTATION)
    if text is None:
        return None
    try:
        seconds = parse_duration(str(text).strip()) / 1e9
    except ValueError:
        return None
    return seconds if seconds > 0 else None


@dataclass(slots=True)
class LogInstance:
    """One run of a container: its lines (``(unix ns, text)``), how many were dropped, whether it ended."""

    lines: deque[tuple[int, str]] = field(default_factory=lambda: deque(maxlen=MAX_LINES))
    appended: int = 0
    finished: bool = False


class ContainerLog:
    """The log instances of one container (see the module docstring) and the followers waiting on them."""

    __slots__ = ("_waiters", "instances")

    def __init__(self) -> None:
        self.instances: dict[int, LogInstance] = {}
        self._waiters: list[asyncio.Future[None]] = []

    def open(self, restart_count: int) -> None:
        """A new run (restart ``restart_count``) starts: keep it and the one before it, drop older ones."""
        for old in [n for n in self.instances if n < restart_count - 1]:
            del self.instances[old]
        self.instances[restart_count] = LogInstance()
        self._wake()

    def write(self, restart_count: int, now: float, text: str) -> None:
        """Append ``text`` (one or more lines) to run ``restart_count``, if it is open and running."""
        instance = self.instances.get(restart_count)
        if instance is None or instance.finished:
            return
        ns = round(now * 1e9)
        for line in text.split("\n"):
            instance.lines.append((ns, line))
            instance.appended += 1
        self._wake()

    def finish(self, restart_count: int) -> None:
        instance = self.instances.get(restart_count)
        if instance is not None and not instance.finished:
            instance.finished = True
            self._wake()

    def close(self) -> None:
        """The container is gone (its pod left the node): every instance ends, followers stop."""
        for instance in self.instances.values():
            instance.finished = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def changed(self) -> None:
        """Wait for the next append, finish or new instance."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if not waiter.done() or waiter.cancelled():  # a follower cancelled while waiting leaves no trace
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The kubelet's view of ``PodLogOptions`` (validated by the API server and again by the kubelet)."""

    follow: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_ns: int | None = None


async def read(
    log: ContainerLog, restart_count: int, options: ReadOptions, write: Callable[[bytes], Awaitable[None]]
) -> None:
    """Write run ``restart_count``'s lines to ``write`` as ``ReadLogs`` does (module docstring)."""
    instance = log.instances.get(restart_count)
    if instance is None:
        return
    remaining = options.limit_bytes
    start = instance.appended - len(instance.lines)  # absolute index of the first line kept
    position = start
    if options.tail_lines is not None:
        position = max(instance.appended - options.tail_lines, start)
    while True:
        start = instance.appended - len(instance.lines)
        position = max(position, start)
        chunk: list[bytes] = []
        lines = instance.lines
        for index in range(position - start, len(lines)):
            ns, text = lines[index]
            if options.since_ns is not None and ns < options.since_ns:
                continue
            line = (f"{format_timestamp(ns)} {text}\n" if options.timestamps else text + "\n").encode()
            if remaining is not None:
                if len(line) >= remaining:
                    chunk.append(line[:remaining])
                    await write(b"".join(chunk))
                    return
                remaining -= len(line)
            chunk.append(line)
        position = instance.appended
        if chunk:
            await write(b"".join(chunk))
        if not options.follow or instance.finished:
            return
        await log.changed()
        current = log.instances.get(restart_count)
        if current is not instance:  # rotated away (two restarts while following): this run is over
            return
