"""``kubeplane ui``'s flags: every mistake is one line on stderr and exit code 1, and no kubeconfig is read that
``--kubeconfig`` did not name (not ``$KUBECONFIG``, not ~/.kube/config: DESIGN.md decision 4, stricter here
because a UI would silently act on whatever cluster it found). The serving itself is tested in a browser in
tests/ui/test_standalone.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
"""


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["ui", *args], env=env)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "error: give --kubeconfig FILE (a cluster's API), --runs DIR (simulation runs), or both"),
        (("--runs", "/nonexistent-dir"), "error: --runs /nonexistent-dir: not a directory"),
        (("--kubeconfig", "/nonexistent.yaml"), "error: kubeconfig /nonexistent.yaml does not exist"),
        (("--runs", ".", "--context", "x"), "error: --context needs --kubeconfig"),
        (("--runs", ".", "--port", "70000"), "error: --port must be between 0 and 65535, not 70000"),
        (("--runs", ".", "--address", "localhost"), "error: --address must be an IP address, not 'localhost'"),
    ],
    ids=["nothing-to-serve", "runs-missing", "kubeconfig-missing", "context-alone", "port", "address"],
)
def test_bad_flags_are_one_line_errors(args: tuple[str, ...], message: str) -> None:
    code, output = _run(*args)
    assert code == 1
    assert output.strip() == message


def test_a_kubeconfig_that_is_not_one_and_an_unknown_context_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just a list\n")
    code, output = _run("--kubeconfig", str(bad))
    assert (code, output.strip()) == (1, f"error: {bad} is not a kubeconfig")
    good = tmp_path / "kubeconfig"
    good.write_text(KUBECONFIG)
    code, output = _run("--kubeconfig", str(good), "--context", "nope")
    assert (code, output.strip()) == (1, f"error: {good}: no context named 'nope'")


def test_no_kubeconfig_is_found_by_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$KUBECONFIG, ~/.kube/config and ./.kubeplane/kubeconfig all exist: without --kubeconfig none is used."""
    for path in (tmp_path / "env.yaml", tmp_path / ".kube" / "config", tmp_path / ".kubeplane" / "kubeconfig"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(KUBECONFIG)
    monkeypatch.chdir(tmp_path)
    code, output = _run(env={"KUBECONFIG": str(tmp_path / "env.yaml"), "HOME": str(tmp_path)})
    assert code == 1
    assert output.strip().startswith("error: give --kubeconfig FILE")


def test_the_address_taken_is_a_one_line_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, output = _run("--runs", str(tmp_path), "--port", str(port), "--data-dir", str(tmp_path / "s"))
    assert code == 1
    assert output.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_a_bad_scheduler_configuration_is_one_line_naming_the_field(tmp_path: Path) -> None:
    """kube-scheduler --config's validation (the field path of the problem), on one line."""
    config = tmp_path / "sched.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: ''\n"
    )
    code, output = _run("--runs", str(tmp_path), "--scheduler-config", str(config))
    assert code == 1
    assert len(output.strip().splitlines()) == 1
    assert output.startswith(f"error: invalid scheduler configuration {config}: ")
    assert "profiles[0].schedulerName" in output
    code, output = _run("--runs", str(tmp_path), "--scheduler-config", str(tmp_path / "none.yaml"))
    assert (code, output.strip()) == (
        1,
        f"error: invalid scheduler configuration {tmp_path / 'none.yaml'}: {tmp_path / 'none.yaml'}: no such file",
    )
