"""A real ``kubeplane apiserver`` process per test module, on 127.0.0.1 with a free port, and clients for it.

Tests talk to it only through the kubeconfig it writes (never ~/.kube/config). The process is stopped with
SIGTERM by its PID at the end of the module.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from kubeplane.client.kubeconfig import load_kubeconfig

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]


@dataclass
class Server:
    data_dir: Path
    process: subprocess.Popen[bytes]
    kubeconfig: Path
    address: str
    token: str
    log: Any = None

    @property
    def host(self) -> str:
        return urlsplit(self.address).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlsplit(self.address).port or 80

    def connection(self, timeout: float = 30) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def send(
        self, method: str, path: str, body: Any = None, *, token: str | None = "", accept: str | None = None
    ) -> tuple[int, bytes]:
        """One raw request: ``body`` sent as JSON, the bearer ``token`` (the admin token when empty, none when
        None), an ``Accept`` header when given; the status and the raw answer."""
        conn = self.connection()
        headers = {} if token is None else {"Authorization": f"Bearer {token or self.token}"}
        if accept is not None:
            headers["Accept"] = accept
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
        conn.close()
        return response.status, raw

    def stop(self) -> None:
        stop_process(self.process)
        if self.log is not None:
            self.log.close()


def stop_process(process: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM a process this test started (by its PID), SIGKILL it if it has not exited within ``timeout``."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def start_server(data_dir: Path, *extra: str, tls: bool = False, service_accounts: bool = False) -> Server:
    """Start an apiserver; plain HTTP unless ``tls`` (tests speak raw HTTP; TLS is the product default). Without
    ``service_accounts`` the ServiceAccount admission plugin is off, as in upstream's integration test servers:
    no controller manager runs here to create the ``default`` ServiceAccount it would wait for."""
    if not service_accounts:
        extra = ("--disable-admission-plugins=ServiceAccount", *extra)
    kubeconfig = data_dir / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    log = open(data_dir.parent / f"{data_dir.name}.log", "ab")  # noqa: SIM115 - kept for the process
    process = subprocess.Popen(
        [*KUBEPLANE, "apiserver", "--data-dir", str(data_dir), "--port", "0", "--tls" if tls else "--no-tls", *extra],
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait()
            log.close()
            raise RuntimeError(f"apiserver did not start: {(data_dir.parent / f'{data_dir.name}.log').read_text()}")
        time.sleep(0.05)
    config = load_kubeconfig(kubeconfig)
    assert config.token is not None
    return Server(data_dir, process, kubeconfig, config.server, config.token, log)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("apiserver") / "data")
    yield srv
    srv.stop()
    assert srv.process.returncode == 0, "apiserver did not shut down cleanly on SIGTERM"


@pytest.fixture(scope="module")
def api_client(server: Server) -> Iterator[Any]:
    from kubernetes import config

    client = config.new_client_from_config(config_file=str(server.kubeconfig))
    yield client
    client.close()
