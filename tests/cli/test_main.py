"""The kubeplane command: help, and one-line errors with a non-zero exit for what a user can get wrong."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app

runner = CliRunner()


def test_help_lists_the_apiserver_command() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "apiserver" in result.output
    sub = runner.invoke(app, ["apiserver", "--help"])
    assert sub.exit_code == 0
    for flag in ("--data-dir", "--port", "--store", "--tls", "--event-ttl"):
        assert flag in sub.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "etcd3"], "error: --store must be sqlite, memory or etcd, not 'etcd3'"),
        (["--port", "70000"], "error: --port must be between 0 and 65535, not 70000"),
    ],
    ids=["unknown-store", "port-out-of-range"],
)
def test_bad_flags_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["apiserver", "--data-dir", str(tmp_path), *args])
    assert result.exit_code == 1
    assert result.output.strip() == message


def test_a_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "kubeplane.cli.main", "apiserver", "--data-dir", str(tmp_path), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert "Traceback" not in result.stderr
