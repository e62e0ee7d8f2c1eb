"""The example plugins' entry points as ``examples/scheduler-plugins/pyproject.toml`` declares them.

Entry points come from an installed distribution's metadata, written when ``make venv`` (``pip install -e
examples/scheduler-plugins``) ran: a venv installed before the pyproject gained an entry point does not list it,
and ``kubeplane`` then says ``plugin "..." does not exist``. The tests compare the two to say so plainly.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from kubeplane.scheduler.plugins.out_of_tree import ENTRY_POINT_GROUP

__all__ = ["PYPROJECT", "REINSTALL", "declared_entry_points", "installed_entry_points"]

PYPROJECT = Path(__file__).resolve().parents[2] / "examples" / "scheduler-plugins" / "pyproject.toml"
REINSTALL = "make venv (or .venv/bin/pip install --no-deps -e examples/scheduler-plugins)"


def declared_entry_points() -> dict[str, str]:
    """``plugin name -> "module:Attr"`` of the pyproject's ``kubeplane.scheduler.plugins`` group."""
    data = tomllib.loads(PYPROJECT.read_text())
    return dict(data["project"]["entry-points"][ENTRY_POINT_GROUP])


def installed_entry_points() -> dict[str, str]:
    """The same group as the installed ``kubeplane-example-plugins`` metadata lists it."""
    eps = importlib.metadata.distribution("kubeplane-example-plugins").entry_points
    return {ep.name: ep.value for ep in eps if ep.group == ENTRY_POINT_GROUP}
