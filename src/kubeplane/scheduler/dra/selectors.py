"""CEL selectors of DeviceClasses and requests, through :mod:`kubeplane.api.dra.cel` (compiled once per text).

Messages are upstream's ``selectorsMatch``: ``class C: selector #i: CEL compile error: ...`` and ``claim ns/name:
selector #i on device driver/pool/device: CEL runtime error: ...`` with ``cel.EnhanceRuntimeError``'s hint for a
missing key. A runtime error raises :class:`SelectorFailure` carrying that message and whether a class or the claim
owns the selector; the allocator decides what it means for the node.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.dra.cel import DeviceView, SelectorCompileError, SelectorRuntimeError, compile_selector

__all__ = ["OPTIONAL_HINT", "SelectorFailure", "device_view", "selectors_match"]

OPTIONAL_HINT = (
    ". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for "
    "optional fields"
)


class SelectorFailure(Exception):
    """A selector could not be evaluated: ``runtime`` False for a compile error; ``by_class`` for a class's."""

    def __init__(self, message: str, *, runtime: bool, by_class: bool) -> None:
        super().__init__(message)
        self.message = message
        self.runtime = runtime
        self.by_class = by_class


def enhance(message: str) -> str:
    """Upstream ``cel.EnhanceRuntimeError``: a missing key gets the optional-chaining hint."""
    if message.startswith("no such key") and OPTIONAL_HINT not in message:
        return message + OPTIONAL_HINT
    return message


def device_view(driver: str, device: Mapping[str, Any]) -> DeviceView:
    return DeviceView.from_api(driver, device)


def selectors_match(
    selectors: Sequence[Mapping[str, Any]],
    view: DeviceView,
    device_id: str,
    owner: str,
    *,
    by_class: bool,
) -> bool:
    """All ``selectors`` accept the device; ``owner`` is ``class NAME`` or ``claim ns/name``."""
    for i, selector in enumerate(selectors):
        expression = str((selector.get("cel") or {}).get("expression") or "")
        try:
            compiled = compile_selector(expression)
        except SelectorCompileError as exc:
            raise SelectorFailure(
                f"{owner}: selector #{i}: CEL compile error: {exc.message}", runtime=False, by_class=by_class
            ) from exc
        try:
            if not compiled.evaluate(view):
                return False
        except SelectorRuntimeError as exc:
            raise SelectorFailure(
                f"{owner}: selector #{i} on device {device_id}: CEL runtime error: {enhance(str(exc))}",
                runtime=True,
                by_class=by_class,
            ) from exc
    return True
