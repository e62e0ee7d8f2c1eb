"""``kubeplane --version`` and every command's ``--help`` at 80 columns (the width of a default terminal).

Pinned: each help renders with no line wider than 80 characters and nothing cut off (rich marks a cut with
"…"), for the root command and every subcommand found by walking the command tree, so a command added later is
checked too. ``--version``/``-V`` follow typer's eager-option convention and print the distribution's version."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import kubeplane
from kubeplane.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 80


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every visible command under ``command`` (typer's own click: groups have ``commands``)."""
    found = [path]
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        if not sub.hidden:
            found.extend(_commands(sub, (*path, name)))
    return found


COMMANDS = _commands(typer.main.get_command(app))


def test_the_walk_finds_every_command_group() -> None:
    assert {("up",), ("explain",), ("store", "watch"), ("sim", "fgd-repro"), ("controller-manager",)} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "kubeplane")
def test_help_fits_80_columns_and_nothing_is_cut(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": None})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("Usage: kubeplane" in line for line in lines)
    too_long = [line for line in lines if len(line) > WIDTH]
    assert not too_long, "\n".join(too_long)
    cut = [line for line in lines if "…" in line]
    assert not cut, "\n".join(cut)


def test_root_help_through_the_installed_command() -> None:
    """The same check through the real entry point (a subprocess, as a user runs it)."""
    env = {**os.environ, "COLUMNS": str(WIDTH)}
    env.pop("TERMINAL_WIDTH", None)
    out = subprocess.run(
        [sys.executable, "-m", "kubeplane.cli.main", "scheduler", "--help"],
        capture_output=True, text=True, env=env, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert "--leader-elect-resource-namespace" in out
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    assert "…" not in out


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_distribution_version(flag: str) -> None:
    result = CliRunner().invoke(app, [flag])
    assert result.exit_code == 0
    assert result.output == f"kubeplane {importlib.metadata.version('kubeplane')}\n"


def test_the_versions_agree() -> None:
    """pyproject.toml, the installed metadata and ``kubeplane.__version__`` name one version."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert importlib.metadata.version("kubeplane") == declared == kubeplane.__version__
