"""A second ``kubeplane up`` on a data dir that a running cluster holds: one line on stderr, exit 1, and the
running cluster's files untouched (before, it removed the running cluster's kubeconfig and only then met the
store's lock). Upstream has no ``up``; the behaviour pinned is kubeplane's own (docs/up.md, "One data dir, one
cluster"), in the spirit of etcd's and kube-apiserver's refusal to share a data dir with a running member."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"
# What the running cluster itself keeps writing (its store); every other file must stay byte for byte, inode and
# mtime included.
STORE_FILES = {"store.db", "store.db-wal", "store.db-shm"}


def _snapshot(data: Path) -> dict[str, tuple[bytes, int, int] | None]:
    files = sorted(p for p in data.rglob("*") if p.is_file())
    return {
        p.relative_to(data).as_posix(): None
        if p.name in STORE_FILES
        else (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino)
        for p in files
    }


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        pytest.param(
            ["up", "--nodes", "1"], ["up", "--nodes", "1"],
            "error: {d} holds a running cluster (its store {d}/store.db is open in another process); "
            "stop that cluster (Ctrl-C) or pass another --data-dir",
            id="up-then-up: the store lock is checked before anything in the dir changes",
        ),
        pytest.param(
            ["up", "--nodes", "1", "--store", "memory"], ["up", "--nodes", "1"],
            "error: {d} holds a running cluster (another kubeplane up holds {d}/up.lock); "
            "stop that cluster (Ctrl-C) or pass another --data-dir",
            id="memory-store-up-then-up: up.lock covers stores without a file lock",
        ),
        pytest.param(
            ["apiserver"], ["up", "--store", "memory", "--processes"],
            "error: {d} holds a running cluster (its store {d}/store.db is open in another process); "
            "stop that cluster (Ctrl-C) or pass another --data-dir",
            id="apiserver-then-up: any store flag, any mode",
        ),
    ],
)  # fmt: skip
def test_a_second_up_on_a_held_data_dir_fails_with_one_line_and_touches_nothing(
    tmp_path: Path, first: list[str], second: list[str], message: str
) -> None:
    data = tmp_path / "data"
    kubeconfig = data / "kubeconfig"
    log = (tmp_path / "first.log").open("wb")
    running = subprocess.Popen([*KUBEPLANE, *first, "--data-dir", str(data), "--port", "0"], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 90
        while not kubeconfig.exists():
            assert running.poll() is None, (tmp_path / "first.log").read_text()
            assert time.monotonic() < deadline, "the first cluster did not come up within 90 s"
            time.sleep(0.1)
        before = _snapshot(data)

        # Its own session: if it ever started a cluster (--processes spawns children), all of it is stopped.
        second_up = subprocess.Popen(
            [*KUBEPLANE, *second, "--data-dir", str(data), "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        try:
            _out, err = second_up.communicate(timeout=60)
        finally:
            if second_up.poll() is None:
                os.killpg(second_up.pid, signal.SIGKILL)
                second_up.wait()
        assert second_up.returncode == 1
        assert err.splitlines() == [message.format(d=data)]
        assert _snapshot(data) == before
        assert running.poll() is None
        answer = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
             "get", "namespaces", "default", "-o", "name"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert (answer.returncode, answer.stdout.strip()) == (0, "namespace/default"), answer.stderr
    finally:
        os.kill(running.pid, signal.SIGTERM)
        code = running.wait(timeout=30)
        log.close()
    assert code == 0


@pytest.mark.parametrize(
    ("kubectl_beside", "on_path", "line"),
    [
        (True, False, "  {bin}/kubectl get nodes"),
        (False, True, "  kubectl get nodes"),
        (False, False, "  kubectl get nodes    # no kubectl found: `make kubectl` installs v1.37 as .venv/bin/kubectl"),
    ],
    ids=["venv-kubectl", "kubectl-on-path", "none: make run installs no kubectl"],
)
def test_the_ready_message_names_a_kubectl_that_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kubectl_beside: bool, on_path: bool, line: str
) -> None:
    from kubeplane.cli import up

    venv_bin, path_bin = tmp_path / "venv-bin", tmp_path / "path-bin"
    for directory, present in ((venv_bin, kubectl_beside), (path_bin, on_path)):
        directory.mkdir()
        if present:
            (directory / "kubectl").write_text("#!/bin/sh\n")
            (directory / "kubectl").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(path_bin))
    message = up._ready_message("https://127.0.0.1:6443", Path(".kubeplane/kubeconfig"), 3, "one process")
    assert message.splitlines()[3] == line.format(bin=venv_bin)
