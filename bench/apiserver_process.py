"""A ``kubeplane apiserver`` process for benchmarks: started on a free loopback port, stopped by its PID.

Benchmarks drive the server from their own process, so the load generator never shares an event loop (or a
GIL) with the server it measures.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_apiserver(*extra: str) -> Iterator[Path]:
    """Yield the kubeconfig of a fresh apiserver (sqlite store in a temporary dir) once it answers."""
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-") as tmp:
        data = Path(tmp) / "data"
        log_path = Path(tmp) / "apiserver.log"
        with log_path.open("wb") as log:
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kubeplane.cli.main",
                    "apiserver",
                    "--data-dir",
                    str(data),
                    "--port",
                    "0",
                    *extra,
                ],
                stdout=log,
                stderr=log,
            )
            try:
                kubeconfig = data / "kubeconfig"
                deadline = time.monotonic() + 30
                while not kubeconfig.exists():
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"apiserver did not start: {log_path.read_text()}")
                    time.sleep(0.05)
                yield kubeconfig
            finally:
                os.kill(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
