"""Where a sweep's cells run: a local process pool (the default) or a Ray cluster (``kubeplane[ray]``).

An executor maps one picklable, module-level function over a list of picklable inputs and returns the outputs
in input order. That is all a sweep asks of it (:mod:`kubeplane.sim.sweep`), so an executor never changes a
result: each cell is a pure function of its input, and the sweep writes the outputs in the cells' order whatever
order they finished in.

Invariants:

* Ray is imported only when a :class:`RayExecutor` runs, so kubeplane works without the extra; without it the
  executor raises :class:`ExecutorError` with a one-line message saying how to install it.
* A :class:`RayExecutor` connects to an existing cluster (``ray.init(address=...)``) and disconnects when done:
  it never starts or stops a cluster, and with ``address`` a ``ray://`` URL it works from a machine outside it.
  The cluster's workers import kubeplane themselves (the function travels by reference), so they must run the
  same kubeplane version as the driver for the results to be the same.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import os
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

RAY_MISSING = "--ray-address needs Ray, which is not installed: pip install 'kubeplane[ray]'"


class ExecutorError(RuntimeError):
    """The executor cannot run at all (Ray missing, the cluster unreachable): a one-line message."""


class Executor(Protocol):
    """Runs ``fn`` over ``items``; returns the outputs in the order of ``items``."""

    name: str

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]: ...


class ProcessPool:
    """A local ``concurrent.futures`` process pool of ``workers`` processes (default: one per core, at most one
    per item). Processes, not threads: a simulation is CPU-bound Python and owns its event loop."""

    name = "process-pool"

    def __init__(self, workers: int | None = None) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.workers = workers

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        if not items:
            return []
        workers = max(1, min(len(items), self.workers or os.cpu_count() or 1))
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(fn, item) for item in items]
            return [future.result() for future in futures]


class RayExecutor:
    """One Ray task per item (one CPU each) on the cluster at ``address`` (``HOST:PORT`` of the head's GCS,
    ``ray://HOST:10001`` through Ray Client, or ``auto``)."""

    name = "ray"

    def __init__(self, address: str) -> None:
        if not address:
            raise ValueError("the Ray address is empty")
        self.address = address

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        if _loopback(self.address):
            # Ray swaps a loopback node address for the machine's own unless this is set (read when ray is first
            # imported); a head started with it on 127.0.0.1 is reachable only by a driver that sets it too.
            os.environ.setdefault(RAY_LOOPBACK_ENV, "0")
        ray = _import_ray()
        try:
            ray.init(address=self.address, logging_level="WARNING", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExecutorError(f"cannot connect to the Ray cluster at {self.address}: {first}") from None
        try:
            task = ray.remote(num_cpus=1, max_retries=0)(fn)
            refs = [task.remote(item) for item in items]
            results: list[Out] = ray.get(refs)
            return results
        finally:
            ray.shutdown()


RAY_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch (ray_constants.ENABLE_RAY_CLUSTER) that, at 0, keeps a node on its loopback address."""


def _loopback(address: str) -> bool:
    host = address.removeprefix("ray://").rpartition(":")[0] or address
    return host in ("127.0.0.1", "localhost", "[::1]", "::1")


def _import_ray() -> Any:
    try:
        return importlib.import_module("ray")  # by name: mypy need not know the optional extra
    except ImportError:
        raise ExecutorError(RAY_MISSING) from None


def executor(*, workers: int | None = None, ray_address: str | None = None) -> Executor:
    """The executor the options name: Ray when ``ray_address`` is given, else the process pool."""
    if ray_address is not None:
        return RayExecutor(ray_address)
    return ProcessPool(workers)
