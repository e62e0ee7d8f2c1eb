"""The repository holds everything its commands, examples and tests read: no path leads out of the checkout to
data beside it (the openb trace is package data, ``src/kubeplane/gpu/data/openb``; the upstream conformance cases
are in ``tests/scheduler/conformance``). A fresh clone with nothing beside it runs them all."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "tests", "examples", "bench", "docs", "tools", "README.md", "Makefile", ".ci")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ""}  # not the trace CSVs: data only
# A path out of the checkout to the data once kept beside it, in the directory named below: the parent-relative
# path, a pathlib join onto it, or its data/ and conformance/ subdirectories. (The name is assembled so that this
# file does not itself spell such a path.)
_BESIDE = "sha" + "red"
OUTSIDE = re.compile(rf"\.\./{_BESIDE}\b|/\s*\"{_BESIDE}\"|{_BESIDE}/data\b|{_BESIDE}/conformance\b")


def _files() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    return sorted(p for p in found if "__pycache__" not in p.parts and p != Path(__file__).resolve())


def test_the_scan_sees_the_repository() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert {"Makefile", "README.md", "examples/sim/openb-fgd.yaml", "src/kubeplane/gpu/repro.py"} <= names


def test_no_path_leads_outside_the_checkout() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _files()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not hits, "paths outside the repository:\n" + "\n".join(hits)
