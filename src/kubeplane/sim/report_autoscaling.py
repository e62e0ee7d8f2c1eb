"""The report's autoscaling part (docs/sim.md, "The report"): for runs with node groups or a descheduler, what
they did to the fleet, after the summary.

* "Autoscaling": cost, node-hours, nodes added and removed and the pending-time percentiles, one column per run
  (the figures a comparison of autoscaler settings is about, side by side);
* "Node groups": per group and run, node-hours, cost, nodes added, removed, peak and at the end;
* "Autoscaler events": per run, the table of :mod:`.scaling` (time, group, delta, reason, detail);
* "Descheduler evictions": evictions per plugin, one column per run.

Invariants: a run without node groups and without a descheduler adds nothing (its report is unchanged); every
text from the result is HTML-escaped; the same results give the same bytes.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .plots import Run

__all__ = ["COMPARED", "autoscaling_html"]

COMPARED: Final = (
    "cost", "node_hours", "nodes_added", "nodes_removed", "pending_time_p50", "pending_time_p90", "pending_time_p99",
    "descheduler_evictions",
)  # fmt: skip
"""The "Autoscaling" table's rows (those a run has)."""

_GROUP_FIELDS: Final = ("node_hours", "cost", "nodes_added", "nodes_removed", "nodes_peak", "nodes_at_end")
_EVENT_COLUMNS: Final = ("t", "group", "delta", "reason", "detail")

MetricTable = Callable[[Sequence[Run[Any]], Sequence[str]], str]


def autoscaling_html(runs: Sequence[Run[Any]], *, metric_table: MetricTable, fmt: Callable[[Any], str]) -> str:
    """The part (empty for runs without node groups or descheduler); ``metric_table`` renders metric rows with
    one column per run and ``fmt`` a value, as the rest of the report does."""
    summaries = [run.result.summary for run in runs]
    groups = any("node_groups" in s for s in summaries)
    desched = any("descheduler_evictions" in s for s in summaries)
    if not groups and not desched:
        return ""
    parts = [
        "<h2>Autoscaling</h2>" if groups else "<h2>Descheduling</h2>",
        metric_table(runs, [m for m in COMPARED if any(m in s for s in summaries)]),
    ]
    if groups:
        parts.append(_groups_table(runs, fmt))
        parts.append(_events_tables(runs, fmt))
    if desched:
        parts.append(_evictions_table(runs))
    return "".join(parts)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _header(runs: Sequence[Run[Any]], first: str) -> str:
    return f"<thead><tr><th>{_esc(first)}</th>" + "".join(f"<th>{_esc(r.label)}</th>" for r in runs) + "</tr></thead>"


def _groups_table(runs: Sequence[Run[Any]], fmt: Callable[[Any], str]) -> str:
    per_run: list[Mapping[str, Mapping[str, Any]]] = [run.result.summary.get("node_groups") or {} for run in runs]
    names = list(dict.fromkeys(name for groups in per_run for name in groups))
    rows = ['<h3>Node groups</h3><table class="node-groups">', _header(runs, "group / metric"), "<tbody>"]
    for name in names:
        for field in _GROUP_FIELDS:
            cells = "".join(f'<td class="num">{_esc(fmt(g.get(name, {}).get(field)))}</td>' for g in per_run)
            rows.append(f'<tr><td class="key">{_esc(name)} {_esc(field)}</td>{cells}</tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _events_tables(runs: Sequence[Run[Any]], fmt: Callable[[Any], str]) -> str:
    parts = []
    for run in runs:
        events: Sequence[Mapping[str, Any]] = getattr(run.result, "scaling", None) or []
        title = "Autoscaler events" + (f" — {run.label}" if len(runs) > 1 else "")
        if not events:
            parts.append(f'<h3>{_esc(title)}</h3><p class="note">The autoscaler recorded no scaling event.</p>')
            continue
        head = "".join(f"<th>{c if c != 't' else 'simulated time (s)'}</th>" for c in _EVENT_COLUMNS)
        rows = [f'<h3>{_esc(title)}</h3><table class="scaling-events"><thead><tr>{head}</tr></thead><tbody>']
        for event in events:
            delta = int(event.get("delta") or 0)
            cells = [
                f'<td class="num">{_esc(fmt(event.get("t")))}</td>',
                f'<td class="key">{_esc(event.get("group") or "—")}</td>',
                f'<td class="num">{_esc(f"{delta:+d}" if delta else "0")}</td>',
                f'<td class="key">{_esc(event.get("reason"))}</td>',
                f"<td>{_esc(event.get('detail') or '')}</td>",
            ]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        rows.append("</tbody></table>")
        parts.append("".join(rows))
    return "".join(parts)


def _evictions_table(runs: Sequence[Run[Any]]) -> str:
    per_run: list[Mapping[str, int]] = [run.result.summary.get("descheduler_evictions_by_plugin") or {} for run in runs]
    plugins = sorted({plugin for counts in per_run for plugin in counts})
    if not plugins:
        return '<h3>Descheduler evictions</h3><p class="note">The descheduler evicted no pod.</p>'
    rows = ['<h3>Descheduler evictions</h3><table class="descheduler-evictions">', _header(runs, "plugin"), "<tbody>"]
    for plugin in plugins:
        cells = "".join(f'<td class="num">{int(counts.get(plugin, 0)):,}</td>' for counts in per_run)
        rows.append(f'<tr><td class="key">{_esc(plugin)}</td>{cells}</tr>')
    rows.append("</tbody></table>")
    return "".join(rows)
