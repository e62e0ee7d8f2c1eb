"""Importing a script of tools/ or bench/ (not packages) in a test, by its path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_tool(name: str) -> ModuleType:
    """tools/NAME.py as the module NAME."""
    return load_script(name, ROOT / "tools" / f"{name}.py")


def load_script(name: str, path: Path) -> ModuleType:
    """The script at ``path`` as the module ``name``, registered in sys.modules first (dataclasses look their
    module up)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
