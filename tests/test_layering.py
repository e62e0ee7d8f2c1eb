"""The layering contract of DESIGN.md, checked on the source: a package never imports a layer above it.

Walks every module under ``src/kubeplane`` with ``ast`` (no import side effects), resolves relative imports,
and compares each ``kubeplane.*`` import with the table below. Third-party imports of ``api/`` and
``store/`` are limited as well, so the pure layers stay pure.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kubeplane"

# package -> kubeplane packages it may import (itself always allowed).
ALLOWED: dict[str, frozenset[str]] = {
    "api": frozenset(),
    "store": frozenset(),
    "metrics": frozenset(),
    "apiserver": frozenset({"api", "store", "metrics"}),
    "client": frozenset({"api"}),
    "controllers": frozenset({"api", "client", "metrics"}),
    "scheduler": frozenset({"api", "client", "metrics"}),
    "kubelet": frozenset({"api", "client", "metrics"}),
    # GPUs: the scheduler plugins, the openb trace (kubelet node specs) and the FGD replay.
    "gpu": frozenset({"api", "client", "metrics", "scheduler", "kubelet"}),
    # cluster-autoscaler: the scheduler's plugins simulate placements; its simulated cloud runs kubelets.
    "autoscaler": frozenset({"api", "client", "metrics", "scheduler", "kubelet"}),
    # the descheduler: the scheduler's helpers for "would the pod fit elsewhere" (its NodeFit).
    "descheduler": frozenset({"api", "client", "metrics", "scheduler"}),
    "sim": frozenset(
        {
            "api",
            "store",
            "metrics",
            "apiserver",
            "client",
            "controllers",
            "scheduler",
            "kubelet",
            "gpu",
            "autoscaler",
            "descheduler",
        }
    ),
    # the web UI: explain/what-if and the scheduler's configuration; the API only through the ASGI app it is given
    "ui": frozenset({"api", "scheduler"}),
    "cli": frozenset(
        {
            "api",
            "store",
            "metrics",
            "apiserver",
            "client",
            "controllers",
            "scheduler",
            "kubelet",
            "sim",
            "gpu",
            "ui",
            "autoscaler",
            "descheduler",
        }
    ),
}
# single modules of a higher package that lower ones may import: they depend on api alone (checked below).
SHARED_MODULES: dict[str, frozenset[str]] = {
    "kubeplane.gpu.model": frozenset({"kubelet"}),  # the kubelet accounts GPUs by device as the scheduler does
    "kubeplane.sim.columns": frozenset({"ui"}),  # the Runs view charts the report's column groups
    "kubeplane.client.tls": frozenset({"ui"}),  # the UI's proxy trusts another cluster's server as the client does
}
# single modules with a wider allowance than their package (DESIGN.md: "local.py alone may import apiserver";
# and store, for the in-memory store of LocalClient.in_memory). docs/architecture.md states the same; a test
# below holds the two together.
MODULE_EXCEPTIONS: dict[str, frozenset[str]] = {
    "kubeplane.client.local": frozenset({"api", "apiserver", "store"}),
}
# third-party distributions a pure layer may use beyond the standard library.
THIRD_PARTY: dict[str, frozenset[str]] = {
    # celpy: CRD CEL rules (api/crd/cel.py), pure Python; yaml: YAML decoded as go-yaml v2 does (api/yamlio.py)
    "api": frozenset({"orjson", "msgspec", "celpy", "yaml"}),
    "store": frozenset({"orjson", "aetcd", "grpc"}),  # grpc: the channel under aetcd's etcd v3 stubs
    "metrics": frozenset({"prometheus_client", "aiohttp"}),  # aiohttp: the /metrics endpoint's server
}
MAX_MODULE_LINES = 800
"""No module in src/ is longer (STYLE.md: split by responsibility); generated tables are data files, not code."""


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Absolute names of every import in ``path``, relative imports resolved against its package."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def _violations() -> list[str]:
    problems: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        module = _module_name(path)
        parts = module.split(".")
        if len(parts) < 2:
            continue  # kubeplane/__init__.py
        package = parts[1]
        if package not in ALLOWED:
            problems.append(f"{module}: package {package!r} is not in the layering table of DESIGN.md")
            continue
        allowed = ALLOWED[package] | MODULE_EXCEPTIONS.get(module, frozenset()) | {package}
        for line, name in _imports(path):
            top = name.split(".")[0]
            if top == "kubeplane":
                target = name.split(".")[1] if "." in name else ""
                shared = any(
                    (name == m or name.startswith(m + ".")) and package in users for m, users in SHARED_MODULES.items()
                )
                if target and target not in allowed and target != "__version__" and not shared:
                    problems.append(f"{path.relative_to(SRC.parent)}:{line}: {package} may not import {name}")
            elif (
                package in THIRD_PARTY
                and top not in sys.stdlib_module_names
                and top not in THIRD_PARTY[package]
                and top != "__future__"
            ):
                problems.append(f"{path.relative_to(SRC.parent)}:{line}: {package} may not depend on {top!r}")
    return problems


def test_no_layer_imports_a_layer_above_it() -> None:
    assert _violations() == []


def test_shared_modules_depend_on_api_alone() -> None:
    for module in SHARED_MODULES:
        path = SRC.parent / (module.replace(".", "/") + ".py")
        imported = {name.split(".")[1] for _, name in _imports(path) if name.startswith("kubeplane.")}
        assert imported <= {"api"}, (module, imported)


@pytest.mark.parametrize(
    ("package", "source", "expect"),
    [
        ("store", "from kubeplane.api import quantity\n", "store may not import kubeplane.api"),
        ("api", "from ..store import interface\n", "api may not import kubeplane.store"),
        ("api", "import numpy\n", "api may not depend on 'numpy'"),
        ("metrics", "import numpy\n", "metrics may not depend on 'numpy'"),
    ],
    ids=["store-imports-api", "api-imports-store-relative", "api-imports-numpy", "metrics-imports-numpy"],
)
def test_checker_catches_violations(
    package: str, source: str, expect: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The check itself would fail on a real violation (guards against a checker that sees nothing)."""
    fake = tmp_path / "kubeplane"
    (fake / package).mkdir(parents=True)
    (fake / package / "__init__.py").write_text("")
    (fake / package / "bad.py").write_text(source)
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert any(expect in p for p in _violations())


def test_metrics_third_party_imports_are_checked() -> None:
    """metrics/ sits below every component: it may use prometheus-client and aiohttp, nothing else."""
    assert "metrics" in THIRD_PARTY


def test_architecture_doc_states_what_client_local_may_import() -> None:
    """docs/architecture.md's layering table and MODULE_EXCEPTIONS say the same about client/local.py."""
    doc = (SRC.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    row = next(line for line in doc.splitlines() if line.startswith("| `client/`"))
    allowed = MODULE_EXCEPTIONS["kubeplane.client.local"] - ALLOWED["client"]
    assert allowed == {"apiserver", "store"}
    assert "`client/local.py` alone may import apiserver and store" in row, row


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(path.relative_to(SRC.parent)): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
