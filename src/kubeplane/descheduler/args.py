"""Decoding a plugin's ``args`` (and the policy's own fields) from the policy's JSON/YAML, with the messages of
Go's decoder.

Upstream decodes each ``pluginConfig[].args`` strictly into the plugin's Go struct (``serializer.EnableStrict``
in ``pkg/api/v1alpha2/conversion.go``): an unknown field is ``strict decoding error: unknown field "x"`` and a
value of the wrong JSON type is ``json: cannot unmarshal string into Go struct field
RemoveFailedPodsArgs.minPodLifetimeSeconds of type uint``. :class:`Fields` reads one object that way, collecting
the errors, so a plugin's ``parse_args`` is a list of typed reads. Shared argument types (``Namespaces``,
``PriorityThreshold``) live here too (upstream ``pkg/api/types.go``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api.durations import parse_duration
from kubeplane.api.labels import SelectorError, label_selector_as_selector
from kubeplane.api.typed import go_json_type
from kubeplane.api.validation.field import aggregate_text

__all__ = ["ArgsError", "Fields", "Namespaces", "PriorityThreshold"]


class ArgsError(ValueError):
    """Arguments that cannot be decoded or are invalid; ``errors`` are upstream's messages, in order."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(aggregate_text(errors))
        self.errors = errors


@dataclass(frozen=True, slots=True)
class Namespaces:
    """``include`` / ``exclude`` namespace lists (upstream ``api.Namespaces``); empty tuples mean "not set"."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def admits(self, namespace: str) -> bool:
        """Upstream ``podutil.Options`` namespace filtering: included when a list is given, never excluded."""
        if self.include and namespace not in self.include:
            return False
        return not (self.exclude and namespace in self.exclude)


@dataclass(frozen=True, slots=True)
class PriorityThreshold:
    """``priorityThreshold``: a ``value`` or the ``name`` of a PriorityClass whose value is the threshold."""

    value: int | None = None
    name: str = ""


class Fields:
    """Typed reads of one decoded object, each unknown field and type mismatch recorded as Go reports it.

    ``struct`` is the Go type's name used in messages; call :meth:`done` after the reads to add the unknown
    fields (``strict=True``) and raise :class:`ArgsError` if anything was wrong.
    """

    def __init__(
        self, raw: Any, struct: str, *, strict: bool = True, errors: list[str] | None = None, path: str = ""
    ) -> None:
        self.struct = struct
        self.path = path
        """The field path of a nested object (``namespaces.``): unknown fields are reported under it, as Go's
        strict decoder names them (``unknown field "namespaces.includes"``)."""
        self.strict = strict
        self.errors: list[str] = [] if errors is None else errors
        self.seen: set[str] = set()
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            self.errors.append(f"json: cannot unmarshal {go_json_type(raw)} into Go value of type {struct}")
            raw = {}
        self.raw: Mapping[str, Any] = raw

    def _get(self, name: str) -> Any:
        self.seen.add(name)
        return self.raw.get(name)

    def _wrong(self, name: str, value: Any, go_type: str) -> None:
        # ``value`` is never None (every read returns its default first) and, decoded from YAML or JSON, a map
        # is a dict: so go_json_type names every value this sees as Go's decoder does.
        self.errors.append(
            f"json: cannot unmarshal {go_json_type(value)} into Go struct field {self.struct}.{name} of type {go_type}"
        )

    def present(self, name: str) -> bool:
        return self.raw.get(name) is not None

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self._get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            self._wrong(name, value, "bool")
            return default
        return value

    def integer(self, name: str, *, go_type: str = "int32", unsigned: bool = False) -> int | None:
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            self._wrong(name, value, go_type)
            return None
        if unsigned and value < 0:
            self.errors.append(
                f"json: cannot unmarshal number {int(value)} into Go struct field "
                f"{self.struct}.{name} of type {go_type}"
            )
            return None
        return int(value)

    def uint(self, name: str) -> int | None:
        return self.integer(name, go_type="uint", unsigned=True)

    def number(self, name: str) -> float | None:
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._wrong(name, value, "float64")
            return None
        return float(value)

    def string(self, name: str, default: str = "") -> str:
        value = self._get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            self._wrong(name, value, "string")
            return default
        return value

    def strings(self, name: str) -> tuple[str, ...] | None:
        """A list of strings; None when absent (upstream's nil slice, which some plugins tell from empty)."""
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self._wrong(name, value, "[]string")
            return None
        return tuple(value)

    def ints(self, name: str) -> tuple[int, ...]:
        value = self._get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            self._wrong(name, value, "[]int32")
            return ()
        return tuple(value)

    def mapping(self, name: str, go_type: str) -> Mapping[str, Any] | None:
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self._wrong(name, value, go_type)
            return None
        return value

    def duration(self, name: str) -> float | None:
        """A ``metav1.Duration`` (a Go duration string), in seconds."""
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            self._wrong(name, value, "v1.Duration")
            return None
        try:
            return parse_duration(value) / 1e9
        except ValueError as exc:
            self.errors.append(str(exc))
            return None

    def namespaces(self, name: str = "namespaces") -> Namespaces | None:
        raw = self.mapping(name, "api.Namespaces")
        if raw is None:
            return None
        sub = Fields(raw, "Namespaces", errors=self.errors, path=f"{self.path}{name}.")
        result = Namespaces(sub.strings("include") or (), sub.strings("exclude") or ())
        sub.done(raise_errors=False)
        return result

    def label_selector(self, name: str = "labelSelector") -> Mapping[str, Any] | None:
        """A ``metav1.LabelSelector``, checked as ``LabelSelectorAsSelector`` checks it."""
        raw = self.mapping(name, "v1.LabelSelector")
        if raw is None:
            return None
        try:
            label_selector_as_selector(raw)
        except SelectorError as exc:
            self.errors.append(str(exc))
            return None
        return raw

    def done(self, *, raise_errors: bool = True) -> None:
        if self.strict:
            for key in self.raw:
                if key not in self.seen and key not in ("apiVersion", "kind"):
                    self.errors.append(f'strict decoding error: unknown field "{self.path}{key}"')
        if raise_errors and self.errors:
            raise ArgsError(list(self.errors))
