"""Variants of a scenario for ``kubeplane sim compare`` (docs/sim.md, "Comparing autoscaler and descheduler
settings"): the same scenario and seed with another ``autoscaler:`` or ``descheduler:`` section.

A variant file holds one section, as a scenario would::

    autoscaler: {expander: price, scale-down-unneeded-time: 10m}     # --autoscaler FILE
    descheduler: {policyFile: policy.yaml, interval: 2m}           # --descheduler FILE (paths: the file's folder)

It replaces the scenario's section of that name whole (no merging: what a file says is what the run uses), and
is labelled by its file name. A variant is checked when it is loaded (the autoscaler's flags by
``AutoscalerOptions.from_flags``, the descheduler's section by the scenario's own parser), so a typo fails in one
line before any run starts.

Invariants: a variant changes nothing but its section; the same variant file gives the same run (the sections
are plain data, passed to worker processes as such).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .descheduling import parse_descheduler
from .scenario import Scenario, ScenarioError, read_yaml, seconds

__all__ = ["KINDS", "Variant", "apply_variant", "load_any_variant", "load_variant"]

KINDS: Final = ("autoscaler", "descheduler")
"""The sections a variant file may hold (and the ``compare`` flags of the same names)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Variant:
    """One variant: its ``kind`` (a :data:`KINDS` entry), the section as written, the folder its relative paths
    are resolved against, and its label (the file's stem)."""

    kind: str
    section: Mapping[str, Any]
    base: Path
    label: str


def load_variant(path: Path, kind: str) -> Variant:
    """The ``kind`` section of ``path``; a one-line :class:`ScenarioError` for a missing or bad section."""
    if kind not in KINDS:
        raise ScenarioError(f"unknown variant kind {kind!r}: expected one of {', '.join(KINDS)}")
    where = f"--{kind} "
    data = read_yaml(path, where=where)
    if not isinstance(data, Mapping) or kind not in data:
        raise ScenarioError(f"{where}{path}: expected the section {kind}:")
    unknown = sorted(str(k) for k in data if k != kind)
    if unknown:
        raise ScenarioError(f"{where}{path}: unknown field(s) {', '.join(unknown)} (a variant holds {kind}: only)")
    section = data[kind]
    if not isinstance(section, Mapping):
        raise ScenarioError(f"{where}{path}: {kind}: expected a mapping")
    variant = Variant(kind, dict(section), path.resolve().parent, path.stem)
    _check(variant, where=f"{where}{path}: ")
    return variant


def load_any_variant(path: Path) -> Variant:
    """The variant of ``path``, of the kind its one section names (``sim sweep``'s ``variants``)."""
    data = read_yaml(path, where="variant ")
    kinds = [k for k in KINDS if isinstance(data, Mapping) and k in data]
    if len(kinds) != 1:
        raise ScenarioError(f"variant {path}: expected one section, {' or '.join(f'{k}:' for k in KINDS)}")
    return load_variant(path, kinds[0])


def apply_variant(scenario: Scenario, variant: Variant) -> Scenario:
    """``scenario`` with the variant's section in place of its own."""
    if variant.kind == "autoscaler":
        if not scenario.node_groups:
            raise ScenarioError(f"--autoscaler {variant.label}: the scenario declares no cluster.nodeGroups")
        return dataclasses.replace(scenario, autoscaler=dict(variant.section), autoscaler_enabled=True)
    spec = parse_descheduler(variant.section, variant.base, seconds=seconds, error=ScenarioError)
    return dataclasses.replace(scenario, descheduler=spec)


def _check(variant: Variant, *, where: str) -> None:
    if variant.kind == "descheduler":
        try:
            parse_descheduler(variant.section, variant.base, seconds=seconds, error=ScenarioError)
        except ScenarioError as exc:
            raise ScenarioError(f"{where}{exc}") from None
        return
    from .autoscaling import load_autoscaler

    try:
        load_autoscaler()[1].from_flags(variant.section)
    except ValueError as exc:
        raise ScenarioError(f"{where}autoscaler: {exc}") from None
