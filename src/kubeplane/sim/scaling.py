"""The autoscaler's decisions in a run, as a table: one row per scale-up, node removal and batch of pods no group
could help, read from the Events the cluster-autoscaler records (the observer sees every Event).

Rows (``scaling.csv``, the report's "Autoscaler events"): ``t`` (simulated seconds), ``group``, ``delta`` (nodes
added or removed), ``reason`` and ``detail``:

* ``TriggeredScaleUp``: a group grew. Upstream records ``ScaledUpGroup`` "Scale-up: group G size set to N instead
  of M (max: X)" on its status ConfigMap for each group it resized, then ``TriggeredScaleUp`` on each pod the
  scale-up is for; the row is the group's resize (``delta`` N - M) and ``detail`` counts the pods.
* ``ScaleDown`` / ``ScaleDownEmpty``: a node was removed (``delta`` -1), from the status ConfigMap's
  "Scale-down: node N removed with drain" / "Scale-down: empty node N removed"; ``group`` is the node's group
  (the provider's history), ``detail`` the node.
* ``ScaleDownFailed``: a removal that failed (``delta`` 0), its message as ``detail``.
* ``NotTriggerScaleUp``: pods no group could help, one row per instant and message (``delta`` 0, no group),
  ``detail`` "<n> pod(s): <upstream's message>". The recorder aggregates repeats of an Event, so a pod appears
  the first time it was not helped.

Invariants: built from what the observer kept, never from the API; recording these Events does not change the
run's event log (its hash), so scenarios keep their hashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["REASONS", "ScalingEvent", "scaling_rows"]

REASONS: Final = frozenset(
    {"ScaledUpGroup", "TriggeredScaleUp", "NotTriggerScaleUp", "ScaleDown", "ScaleDownEmpty", "ScaleDownFailed"}
)
"""The Event reasons the observer keeps for this table."""

_RESIZED = re.compile(r"^Scale-up: group (\S+) size set to (\d+) instead of (\d+)")
_REMOVED = re.compile(r"node (\S+) removed")


@dataclass(frozen=True, slots=True)
class ScalingEvent:
    """One autoscaler Event as the observer saw it: when, why, on what, and its message."""

    t: float
    reason: str
    kind: str
    name: str
    message: str

    @classmethod
    def of(cls, event: Mapping[str, Any], t: float) -> ScalingEvent:
        involved = event.get("involvedObject") or {}
        return cls(
            round(t, 6),
            str(event.get("reason") or ""),
            str(involved.get("kind") or ""),
            str(involved.get("name") or ""),
            str(event.get("message") or ""),
        )


def scaling_rows(events: Iterable[ScalingEvent], *, group_of: Mapping[str, str]) -> list[dict[str, Any]]:
    """The table (see the module docstring) in time order; ``group_of`` maps node names to their groups."""
    rows: list[dict[str, Any]] = []
    last_up: dict[str, Any] | None = None
    not_helped: dict[tuple[float, str], dict[str, Any]] = {}
    for event in events:
        if event.reason == "ScaledUpGroup" and (match := _RESIZED.match(event.message)):
            group, new, current = match.group(1), int(match.group(2)), int(match.group(3))
            last_up = {"t": event.t, "group": group, "delta": new - current, "reason": "TriggeredScaleUp", "pods": 0}
            rows.append(last_up)
        elif event.reason == "TriggeredScaleUp" and last_up is not None:
            last_up["pods"] += 1
        elif event.reason in ("ScaleDown", "ScaleDownEmpty") and event.kind == "ConfigMap":
            node = _node(event.message)
            rows.append({"t": event.t, "group": group_of.get(node, ""), "delta": -1, "reason": event.reason,
                         "detail": node})  # fmt: skip
        elif event.reason == "ScaleDownFailed":
            rows.append({"t": event.t, "group": group_of.get(event.name, ""), "delta": 0, "reason": event.reason,
                         "detail": f"{event.name}: {event.message}"})  # fmt: skip
        elif event.reason == "NotTriggerScaleUp":
            key = (event.t, event.message)
            if key not in not_helped:
                not_helped[key] = {"t": event.t, "group": "", "delta": 0, "reason": event.reason, "pods": 0,
                                   "message": event.message}  # fmt: skip
                rows.append(not_helped[key])
            not_helped[key]["pods"] += 1
    for row in rows:
        if "pods" in row:
            pods = row.pop("pods")
            message = row.pop("message", "")
            row["detail"] = f"{pods} pod(s)" + (f": {message}" if message else "")
    rows.sort(key=lambda r: r["t"])  # stable: same-instant rows keep the order they were recorded in
    return rows


def _node(message: str) -> str:
    match = _REMOVED.search(message)
    return match.group(1) if match else ""
