"""The Runs view's data: ``kubeplane sim`` output directories found under one root, read as JSON for the charts.

A *run* directory holds ``summary.json`` (and ``timeseries.csv``, ``actions.csv``, ...: the files
:mod:`kubeplane.sim.report` writes); a *comparison* directory holds ``comparison.json`` and one run directory per
label. :func:`discover` walks the root (depth-bounded, symlinks never followed, a comparison's label directories
belong to it and are not listed again); :func:`load` reads one of them for the browser.

Invariants:

* Nothing outside the root is ever read. A run's id is its path relative to the root (``.`` for the root itself);
  :func:`resolve` refuses an id that is absolute, has a ``..`` or a backslash, is deeper than :data:`MAX_DEPTH`, or
  whose real path (symlinks resolved) leaves the root — before looking at whether it exists, so a refusal says
  nothing about what is outside.
* Bounded work per request: at most :data:`MAX_RUNS` directories listed, at most :data:`MAX_POINTS` samples per
  series (evenly thinned, the last sample kept; ``thinned`` says by how much) and :data:`MAX_FILE` bytes per file.
* The files are data, never code or markup: CSV cells become numbers (or None for empty / non-numeric cells of a
  numeric column), text stays text and the browser inserts it as text.
* The UI package may not import :mod:`kubeplane.sim` (tests/test_layering.py) except
  :mod:`kubeplane.sim.columns`, the column groups the report's plots use too; the files' names are the report's
  contract.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeplane.sim.columns import (
    ALLOCATION_COLUMNS,
    COUNTER_COLUMNS,
    ENDED_COLUMNS,
    GPU_COUNT_COLUMNS,
    GPU_PCT_COLUMNS,
    NODE_COLUMNS,
    NODE_GROUP_PREFIX,
    PHASE_COLUMNS,
    RAW_COLUMNS,
)

SUMMARY_JSON = "summary.json"
COMPARISON_JSON = "comparison.json"
TIMESERIES_CSV = "timeseries.csv"
ACTIONS_CSV = "actions.csv"
PODS_CSV = "pods.csv"
SCALING_CSV = "scaling.csv"
MAX_SCALING_ROWS = 1000
MAX_DEPTH = 6
"""How deep under the root run directories are looked for (and ids may point)."""
MAX_RUNS = 500
MAX_POINTS = 4000
MAX_FILE = 64 * 1024 * 1024

# kubeplane.sim.plots' groups (the same columns, same order): the charts the report draws, one per group.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Pods by phase", PHASE_COLUMNS),
    ("CPU and memory allocation (requested / allocatable)", ALLOCATION_COLUMNS),
    ("Nodes: total, Ready, and in use", NODE_COLUMNS),
    ("Cumulative scheduling attempts, preemptions and evictions", COUNTER_COLUMNS),
    ("Pods ended, cumulative, by how they ended", ENDED_COLUMNS),
    ("GPU allocation and fragmentation (%)", GPU_PCT_COLUMNS),
    ("Unallocated GPUs", GPU_COUNT_COLUMNS),
)
_KNOWN = frozenset(c for _, cols in GROUPS for c in cols) | frozenset(RAW_COLUMNS) | {"t"}


class RunsError(Exception):
    """A refusal for the browser: HTTP ``code``, Kubernetes Status ``reason`` and ``message``."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


@dataclass(frozen=True)
class Found:
    """One directory :func:`discover` found: ``kind`` is ``run`` or ``comparison``."""

    id: str
    kind: str
    path: Path


# --------------------------------------------------------------------------------------------------- discovery


def discover(root: Path) -> list[Found]:
    """Run and comparison directories under ``root`` (itself included), in path order, at most :data:`MAX_RUNS`.

    A comparison's label subdirectories are part of it (not listed); symlinked directories are not entered, so
    the walk stays inside the root and terminates."""
    base = root.resolve()
    found: list[Found] = []

    def walk(directory: Path, depth: int) -> None:
        if len(found) >= MAX_RUNS:
            return
        kind = _kind(directory)
        if kind is not None:
            rel = directory.relative_to(base).as_posix()
            found.append(Found(rel or ".", kind, directory))
            if kind == "comparison":
                return
        if depth >= MAX_DEPTH:
            return
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                walk(Path(entry.path), depth + 1)

    if base.is_dir():
        walk(base, 0)
    return found


def _kind(directory: Path) -> str | None:
    if _regular(directory / COMPARISON_JSON):
        return "comparison"
    if _regular(directory / SUMMARY_JSON):
        return "run"
    return None


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def resolve(root: Path, run_id: str) -> Found:
    """The run or comparison directory ``run_id`` names; :class:`RunsError` 400 for an id that points outside the
    root (checked lexically, then on the real path), 404 for one that is not a run directory."""
    base = root.resolve()
    parts = run_id.split("/") if run_id not in ("", ".") else []
    if (
        run_id.startswith("/")
        or "\\" in run_id
        or "\x00" in run_id
        or any(p in ("", ".", "..") for p in parts)
        or len(parts) > MAX_DEPTH
    ):
        raise RunsError(400, "BadRequest", f'invalid run id "{run_id}": not a path inside the runs directory')
    path = base.joinpath(*parts)
    if not path.resolve().is_relative_to(base):
        raise RunsError(400, "BadRequest", f'invalid run id "{run_id}": not a path inside the runs directory')
    kind = _kind(path) if path.is_dir() and (path == base or not path.is_symlink()) else None
    if kind is None:
        raise RunsError(404, "NotFound", f'run "{run_id}" not found')
    return Found(run_id if parts else ".", kind, path)


# --------------------------------------------------------------------------------------------------- reading


def listing(root: Path) -> dict[str, Any]:
    """``{"root", "runs": [{id, kind, scenario, labels, seeds, headline: {label: {metric: value}}}]}``; a
    directory whose JSON does not read is listed with its ``error``."""
    items: list[dict[str, Any]] = []
    for found in discover(root):
        try:
            summaries = _summaries(found)
        except RunsError as exc:
            items.append({"id": found.id, "kind": found.kind, "error": exc.message})
            continue
        items.append({"id": found.id, "kind": found.kind, **_identity(summaries), "headline": _headline(summaries)})
    return {"root": str(root), "truncated": len(items) >= MAX_RUNS, "runs": items}


def load(root: Path, run_id: str) -> dict[str, Any]:
    """One run or comparison for its view: identity, summaries per label, the time series per label (``t`` in
    simulated seconds and one list per numeric column), the scenario's actions, the autoscaler's events per label
    (``scaling.csv``, when a run has node groups) and the charts to draw."""
    found = resolve(root, run_id)
    summaries = _summaries(found)
    dirs = _label_dirs(found, list(summaries))
    series = {label: _timeseries(directory / TIMESERIES_CSV) for label, directory in dirs.items()}
    actions = _actions([directory / ACTIONS_CSV for directory in dirs.values()])
    scaling = {label: _scaling(directory / SCALING_CSV) for label, directory in dirs.items()}
    return {
        "id": found.id,
        "kind": found.kind,
        **_identity(summaries),
        "summaries": summaries,
        "series": series,
        "actions": actions,
        "scaling": {label: rows for label, rows in scaling.items() if rows is not None},
        "charts": charts(series, comparing=found.kind == "comparison"),
    }


def _summaries(found: Found) -> dict[str, dict[str, Any]]:
    if found.kind == "run":
        summary = _json(found.path / SUMMARY_JSON)
        return {str(summary.get("label") or "run"): summary}
    doc = _json(found.path / COMPARISON_JSON)
    raw = doc.get("summaries")
    if not isinstance(raw, dict):
        raise RunsError(422, "Invalid", f"{found.id}/{COMPARISON_JSON}: no summaries")
    return {str(label): s if isinstance(s, dict) else {} for label, s in raw.items()}


def _identity(summaries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    scenarios = list(dict.fromkeys(str(s.get("scenario", "")) for s in summaries.values()))
    return {
        "scenario": ", ".join(s for s in scenarios if s),
        "labels": list(summaries),
        "seeds": {label: s.get("seed") for label, s in summaries.items()},
    }


def _headline(summaries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for label, summary in summaries.items():
        names = summary.get("headline") if isinstance(summary.get("headline"), list) else []
        out[label] = {str(n): summary.get(str(n)) for n in names or []}
    return out


def _label_dirs(found: Found, labels: list[str]) -> dict[str, Path]:
    """Each label's run directory: the run itself, or the comparison's subdirectory whose summary names the label
    (the report writes sanitised directory names, so the label is read back from ``summary.json``)."""
    if found.kind == "run":
        return {labels[0]: found.path}
    by_label: dict[str, Path] = {}
    for entry in sorted(os.scandir(found.path), key=lambda e: e.name):
        sub = Path(entry.path)
        if entry.is_dir(follow_symlinks=False) and _regular(sub / SUMMARY_JSON):
            try:
                label = str(_json(sub / SUMMARY_JSON).get("label"))
            except RunsError:
                continue
            by_label.setdefault(label, sub)
    return {label: by_label[label] for label in labels if label in by_label}


def _read(path: Path) -> str | None:
    if not _regular(path):
        return None
    if path.stat().st_size > MAX_FILE:
        raise RunsError(422, "Invalid", f"{path.name} is larger than {MAX_FILE} bytes")
    return path.read_text(encoding="utf-8", errors="replace")


def _json(path: Path) -> dict[str, Any]:
    text = _read(path)
    try:
        doc = json.loads(text) if text is not None else None
    except ValueError as exc:
        raise RunsError(422, "Invalid", f"{path.parent.name}/{path.name}: {exc}") from None
    if not isinstance(doc, dict):
        raise RunsError(422, "Invalid", f"{path.parent.name}/{path.name}: not a JSON object")
    return doc


def _number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _timeseries(path: Path) -> dict[str, Any]:
    """``{"t": [...], "columns": {name: [...]}, "thinned": n}``: numeric columns only (a column with any
    non-empty, non-numeric cell is text and left out), at most :data:`MAX_POINTS` rows (every n-th, and the
    last)."""
    text = _read(path)
    if text is None:
        return {"t": [], "columns": {}, "thinned": 1}
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or "t" not in rows[0]:
        return {"t": [], "columns": {}, "thinned": 1}
    header, body = rows[0], [r for r in rows[1:] if r]
    step = max(1, math.ceil(len(body) / MAX_POINTS))
    kept = body[::step]
    if body and kept[-1] is not body[-1]:
        kept.append(body[-1])
    columns: dict[str, list[float | None]] = {}
    for index, name in enumerate(header):
        cells = [r[index] if index < len(r) else "" for r in kept]
        values = [_number(c) if c != "" else None for c in cells]
        if any(v is None and c != "" for v, c in zip(values, cells, strict=True)):
            continue  # text column
        columns[name] = values
    t = columns.pop("t", [])
    return {"t": t, "columns": columns, "thinned": step}


def _actions(paths: list[Path]) -> list[dict[str, Any]]:
    """The scenario's actions of every label's run, merged and numbered in time order (an action at the same time
    with the same label in several runs is one), as :func:`kubeplane.sim.plots.actions_of` numbers them."""
    seen: dict[tuple[float, str], dict[str, Any]] = {}
    for path in paths:
        text = _read(path)
        if text is None:
            continue
        for row in csv.DictReader(io.StringIO(text)):
            t = _number(row.get("t") or "")
            if t is None:
                continue
            label = row.get("label") or row.get("action") or "action"
            seen.setdefault(
                (t, label), {"t": t, "label": label, "action": row.get("action") or "", "ok": row.get("ok")}
            )
    ordered = sorted(seen.values(), key=lambda a: float(a["t"]))
    return [{"number": i + 1, **a} for i, a in enumerate(ordered)]


def _scaling(path: Path) -> list[dict[str, Any]] | None:
    """``scaling.csv`` (kubeplane.sim.scaling: ``t, group, delta, reason, detail``) as rows, ``t`` and ``delta``
    numbers; None without the file; at most :data:`MAX_SCALING_ROWS` rows (the first)."""
    text = _read(path)
    if text is None:
        return None
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        rows.append({
            "t": _number(row.get("t") or ""),
            "group": row.get("group") or "",
            "delta": _number(row.get("delta") or ""),
            "reason": row.get("reason") or "",
            "detail": row.get("detail") or "",
        })  # fmt: skip
        if len(rows) >= MAX_SCALING_ROWS:
            break
    return rows


# --------------------------------------------------------------------------------------------------- charts


def charts(series: dict[str, dict[str, Any]], *, comparing: bool) -> list[dict[str, Any]]:
    """What to draw: ``[{"id", "title", "lines": [{"name", "run", "column"}], "omitted": [zero columns]}]``.

    One chart per group of :data:`GROUPS` (then one per other numeric column) with a line per column for a run;
    for a comparison one chart per column with a line per label (the overlay). A column that is zero (or empty)
    at every sample of every run is not drawn and is named in ``omitted``, as the report's plots do."""
    present = list(dict.fromkeys(c for s in series.values() for c in s["columns"]))
    extra = [c for c in present if c not in _KNOWN]
    node_groups = tuple(c for c in extra if c.startswith(NODE_GROUP_PREFIX))  # one chart, as the report's plot
    groups = [*GROUPS]
    if node_groups:
        groups.append(("Nodes per node group", node_groups))
    groups += [(name, (name,)) for name in extra if name not in node_groups]
    out: list[dict[str, Any]] = []
    for title, columns in groups:
        here = [c for c in columns if c in present]
        if not here:
            continue
        drawn = [c for c in here if any(_nonzero(s["columns"].get(c)) for s in series.values())]
        omitted = [c for c in here if c not in drawn]
        if comparing:
            for column in drawn:
                lines = [{"name": label, "run": label, "column": column} for label in series]
                out.append(
                    {
                        "id": f"{_slug(title)}-{column}",
                        "title": f"{title}: {column}" if len(here) > 1 else title,
                        "lines": lines,
                    }
                )
            if omitted:
                out.append({"id": _slug(title), "title": title, "lines": [], "omitted": omitted})
            continue
        run = next(iter(series), "")
        lines = [{"name": c, "run": run, "column": c} for c in drawn]
        out.append({"id": _slug(title), "title": title, "lines": lines, "omitted": omitted})
    return out


def _nonzero(values: list[float | None] | None) -> bool:
    return any(v not in (None, 0) for v in values or [])


def _slug(title: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in title.lower()).strip("-")[:60]
