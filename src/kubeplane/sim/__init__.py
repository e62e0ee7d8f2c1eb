"""Simulation mode: the real control plane on a virtual clock (docs/sim.md).

The Python API mirrors ``kubeplane sim run``::

    import kubeplane.sim

    result = kubeplane.sim.run("examples/sim/seeds-story.yaml", seed=1)   # a SimResult
    pandas.DataFrame(result.pods)                                          # plain records
    result.write("out/")                                                   # the CLI's four files

Invariant: ``import kubeplane.sim`` stays light. The scenario parser and the clock are small, but the runner
imports the whole control plane (API server, controllers, scheduler, kubelet fleet) and the report imports
matplotlib when it draws; so every name here is resolved on first use (PEP 562 module ``__getattr__``), and a
notebook pays for the control plane only when it runs something.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .clock import VirtualClock
    from .runner import Progress, SimResult, run, simulate
    from .scenario import Scenario, ScenarioError

# name -> the submodule that defines it
_EXPORTS = {
    "Scenario": "scenario",
    "ScenarioError": "scenario",
    "VirtualClock": "clock",
    "Progress": "runner",
    "SimResult": "runner",
    "run": "runner",
    "simulate": "runner",
}

__all__ = ["Progress", "Scenario", "ScenarioError", "SimResult", "VirtualClock", "run", "simulate"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
