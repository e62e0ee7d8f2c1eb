"""Named asynchronous operations with exponential backoff on failure (upstream ``goroutinemap.GoRoutineMap``
with ``exponentialBackOffOnError``), which the PV controller uses for provisioning, deleting and recycling.

Invariants: at most one operation of a name runs at a time (a second :meth:`Operations.run` while it runs is
skipped, as upstream's ``AlreadyExists``); after a failure the name may not start again until its backoff has
passed (500 ms, doubling to 2 min 2 s, upstream ``exponentialbackoff``), measured on the injected clock; a
success clears the backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final

from kubeplane.client.clock import Clock

__all__ = ["Operations"]

log = logging.getLogger("kubeplane.controllers.pv_controller")

INITIAL_DURATION_BEFORE_RETRY: Final = 0.5
MAX_DURATION_BEFORE_RETRY: Final = 122.0


class Operations:
    """See the module docstring."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._running: dict[str, asyncio.Task[None]] = {}
        self._backoff: dict[str, tuple[float, float]] = {}  # name -> (last error time, duration)
        self.hook: Callable[[str], None] | None = None
        """Tests: called with the name before an operation starts (upstream ``preOperationHook``)."""

    def is_running(self, name: str) -> bool:
        return name in self._running

    def run(self, name: str, operation: Callable[[], Awaitable[None]]) -> bool:
        """Start ``operation`` as a task unless one of this name runs or is backing off; True when started."""
        if name in self._running:
            log.debug("Operation is already running, skipping: %s", name)
            return False
        backoff = self._backoff.get(name)
        if backoff is not None and self._clock.monotonic() < backoff[0] + backoff[1]:
            log.debug("Operation postponed due to exponential backoff: %s", name)
            return False
        if self.hook is not None:
            self.hook(name)
        task = asyncio.get_running_loop().create_task(self._run(name, operation), name=f"pv-op-{name}")
        self._running[name] = task
        return True

    async def _run(self, name: str, operation: Callable[[], Awaitable[None]]) -> None:
        try:
            await operation()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            previous = self._backoff.get(name)
            duration = (
                INITIAL_DURATION_BEFORE_RETRY if previous is None else min(previous[1] * 2, MAX_DURATION_BEFORE_RETRY)
            )
            self._backoff[name] = (self._clock.monotonic(), duration)
            log.info("operation %s failed (no retries permitted for %.1fs): %s", name, duration, exc)
        else:
            self._backoff.pop(name, None)
        finally:
            self._running.pop(name, None)

    async def wait_idle(self) -> None:
        """Wait until no operation runs (tests; shutdown)."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def cancel_all(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
