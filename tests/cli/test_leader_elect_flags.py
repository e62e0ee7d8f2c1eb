"""``--leader-elect`` as upstream's components take it (a pflag bool: ``--leader-elect``, ``--leader-elect=true``,
``--leader-elect=false``), plus ``--no-leader-elect`` (hidden in the help, named in ``--leader-elect``'s text);
not given, the configuration file's value or upstream's default (true) applies."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from kubeplane.cli import main as cli_main
from kubeplane.cli.component import LeaderElectionFlags


@pytest.mark.parametrize("command", ["scheduler", "controller-manager"])
@pytest.mark.parametrize(
    ("args", "want"),
    [
        ([], None),
        (["--leader-elect"], True),
        (["--leader-elect=true"], True),
        (["--leader-elect=false"], False),
        (["--no-leader-elect"], False),
    ],
    ids=["absent: the file's or upstream's default", "bare flag", "=true", "=false", "--no- form"],
)
def test_leader_elect_flag_forms(
    monkeypatch: pytest.MonkeyPatch, command: str, args: list[str], want: bool | None
) -> None:
    seen: list[LeaderElectionFlags] = []

    def capture(**kwargs: Any) -> None:
        seen.append(kwargs["leader_election"])

    monkeypatch.setattr("kubeplane.cli.scheduling.run_scheduler", capture)
    monkeypatch.setattr("kubeplane.cli.controller_manager.run_controller_manager", capture)
    monkeypatch.setattr(sys, "argv", ["kubeplane", command, *args, "--leader-elect-lease-duration", "20s"])
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    assert exit_info.value.code == 0
    assert [(f.leader_elect, f.lease_duration) for f in seen] == [(want, "20s")]
