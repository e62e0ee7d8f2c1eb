"""The CPU-heavy steps of a big request run on a worker thread, so the event loop keeps serving the others.

The server has one event loop: a request that computes for a second (validating, defaulting or patching an
object of tens of thousands of containers, building a Table of a big list) held every other request, /healthz
included, for that second -- and several such requests in a row for the sum. Steps that are pure computation
on the request's own objects (no store, no watch cache, no awaits) go through :func:`run`. For a request
marked heavy (its body at least :data:`HEAVY_BYTES`, or a Table of at least :data:`HEAVY_ITEMS` rows)
:func:`run` hands the step to :data:`_WORKER`, a single thread, and awaits it; Python's GIL then switches
between that thread and the loop every ``sys.getswitchinterval()`` (5 ms), so the loop answers within
milliseconds while the step runs. Every other request runs its steps inline: a thread hop costs tens of
microseconds, which small requests (the common case, whose steps take less) would pay for nothing.

One worker, not a pool: heavy steps queue behind each other instead of multiplying memory and GIL contention,
and the loop never waits for them. A step runs on a private copy the loop does not touch while it awaits; it
may read shared state only where a single dict lookup does (atomic under the GIL).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

HEAVY_BYTES = 256 * 1024
"""A request body at least this big makes its request heavy (kube-apiserver's 99th percentile of object sizes,
secure_serving.go's ``resourceBody99Percentile``: 256 KiB)."""

HEAVY_ITEMS = 500
"""A Table of at least this many rows is heavy (printing a row costs tens of microseconds)."""

_HEAVY: ContextVar[bool] = ContextVar("kubeplane_heavy_request", default=False)
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kubeplane-cpu")

P = ParamSpec("P")
T = TypeVar("T")


def note_body(size: int) -> None:
    """Called with the size of the body just read: a big one makes the rest of this request heavy. The mark is
    a context variable, so it stays with the request's task (uvicorn runs each request in its own)."""
    if size >= HEAVY_BYTES:
        _HEAVY.set(True)


def note_items(count: int) -> None:
    """Called with the number of objects about to be rendered (a list as a Table)."""
    if count >= HEAVY_ITEMS:
        _HEAVY.set(True)


def heavy() -> bool:
    return _HEAVY.get()


async def run(step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``step(*args, **kwargs)``: on the worker thread if this request is heavy, else inline."""
    if not _HEAVY.get():
        return step(*args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_WORKER, functools.partial(step, *args, **kwargs))
