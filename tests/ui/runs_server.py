"""Fixtures of the Runs view's tests: real ``kubeplane sim`` outputs, and an API server with the UI over them.

The outputs are written by the CLI itself (``kubeplane sim run`` and ``sim compare`` as subprocesses, short
``--until``), so the view is tested on exactly what users browse. The server is the API server of
``kubeplane.apiserver.server.run_apiserver`` (memory store, TLS, port 0 on 127.0.0.1) with
``ServerConfig(ui=mount(runs_dir=...))``, run in a thread of this process and stopped through its ``stop`` event
(bounded join) — the way ``kubeplane up`` builds it, without the cluster's components, which the Runs view does not
need.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kubeplane.apiserver.server import ServerConfig, run_apiserver
from kubeplane.client.kubeconfig import load_kubeconfig
from kubeplane.ui import mount

ROOT = Path(__file__).resolve().parents[2]
KUBEPLANE = Path(sys.executable).parent / "kubeplane"
SCENARIO = ROOT / "examples" / "sim" / "seeds-story.yaml"
LEAST = ROOT / "examples" / "sim" / "least-allocated.yaml"
MOST = ROOT / "examples" / "sim" / "most-allocated.yaml"
UNTIL = "15m"
"""Past the scenario's first two actions (scale at 5m, taint at 10m): short, with markers to draw."""


def kubeplane(*args: str, cwd: Path) -> str:
    done = subprocess.run([str(KUBEPLANE), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def write_runs(root: Path) -> None:
    """``root/story`` (a run) and ``root/nested/compare`` (a comparison of two configurations, labels
    least-allocated and most-allocated), both of the seeds' story to 15 minutes."""
    kubeplane("sim", "run", str(SCENARIO), "--out", str(root / "story"), "--until", UNTIL, cwd=root)
    kubeplane(
        "sim", "compare", str(SCENARIO), "--config", str(LEAST), "--config", str(MOST),
        "--out", str(root / "nested" / "compare"), "--until", UNTIL, cwd=root,
    )  # fmt: skip


@contextmanager
def serving(data_dir: Path, runs_dir: Path | None) -> Iterator[tuple[str, str]]:
    """An API server with the UI (``runs_dir`` given to ``mount``); yields (address, admin token)."""
    ready = threading.Event()
    found: dict[str, object] = {}

    def on_ready(address: str, kubeconfig: Path) -> None:
        found["address"], found["kubeconfig"] = address, kubeconfig
        ready.set()

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        found["stop"] = lambda: loop.call_soon_threadsafe(stop.set)
        config = ServerConfig(data_dir=data_dir, port=0, store="memory", ui=mount(runs_dir=runs_dir))
        await run_apiserver(config, on_ready=on_ready, stop=stop)

    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # reported by the fixture
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="ui-runs-apiserver", daemon=True)
    thread.start()
    assert ready.wait(60), "the API server did not start within 60 s"
    assert not errors, errors
    config = load_kubeconfig(Path(str(found["kubeconfig"])))
    assert config.token is not None
    try:
        yield str(found["address"]), config.token
    finally:
        stop = found["stop"]
        assert callable(stop)
        stop()
        thread.join(30)
        assert not thread.is_alive(), "the API server did not stop within 30 s"
        assert not errors, errors
