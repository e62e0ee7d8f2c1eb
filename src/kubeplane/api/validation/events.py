"""Event validation common to both Event APIs: upstream's ``legacyValidateEvent``, and the core/v1 Event.

Upstream validates a core/v1 Event with ``legacyValidateEvent`` alone and an events.k8s.io/v1 Event with the
same function followed by stricter rules (:mod:`.events_v1`). The legacy rules are written once here, over the
values each API has read: the event's and the involved object's namespace, whether the event is new-style (has
an ``eventTime``), and a reader for the reporting controller, instance, action, reason and message.

Invariants
    * An old-style event (no ``eventTime``, from an old client) only has to be in the involved object's
      namespace (or ``default``); a new-style one must also name who reported it, within upstream's length
      limits.
    * Paths are the internal Event's field names, as upstream reports them; core/v1 JSON calls the reporting
      controller ``reportingComponent`` and upstream names that path after the request's version, so core/v1
      errors say ``reportingComponent`` and events.k8s.io ones ``reportingController``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each, utf8_len
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import CORE_V1, finish

__all__ = ["legacy_validate_event", "validate_event", "validate_event_update"]

_MISMATCH = "does not match event.namespace"


def legacy_validate_event(
    errs: ErrorList,
    *,
    namespace: str,
    involved_namespace: str,
    new_style: bool,
    controller_key: str,
    read: Callable[[str], str],
) -> None:
    """Upstream ``legacyValidateEvent``; ``read(name)`` gives the event's string field ``name`` (the
    reporting controller under ``controller_key``, then ``reportingInstance``, ``action``, ``reason``,
    ``message``), read only for a new-style event."""
    ns_path = field.new_path("involvedObject", "namespace")
    if not new_style:
        if (not involved_namespace and namespace not in ("", "default")) or (
            involved_namespace and namespace != involved_namespace
        ):
            errs.append(field.invalid(ns_path, involved_namespace, detail=_MISMATCH))
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            errs.append(field.invalid(ns_path, involved_namespace, detail=_MISMATCH))
        controller = read(controller_key)
        if not controller:
            errs.append(field.required(field.new_path(controller_key)))
        errs.extend(invalid_each(field.new_path(controller_key), controller, names.is_qualified_name(controller)))
        for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128), ("message", 1024)):
            value = read(key)
            if key != "message" and not value:
                errs.append(field.required(field.new_path(key)))
            if utf8_len(value) > limit:
                errs.append(field.invalid(field.new_path(key), "", detail=f"can have at most {limit} characters"))
    errs.extend(invalid_each(field.new_path("namespace"), namespace, names.is_dns1123_subdomain(namespace)))


def validate_event(event: Mapping[str, Any]) -> ErrorList:
    """A core/v1 Event: upstream's ``legacyValidateEvent``, all that applies to core/v1 (the strict
    events.k8s.io/v1 rules do not)."""
    errs: ErrorList = []
    root = CORE_V1.root(event, errs)
    legacy_validate_event(
        errs,
        namespace=root.child("metadata").string("namespace"),
        involved_namespace=root.child("involvedObject").string("namespace"),
        new_style=root.has("eventTime"),
        controller_key="reportingComponent",
        read=root.string,
    )
    return finish(errs)


def validate_event_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """A core/v1 Event update: only the legacy rules, on create and update alike."""
    return validate_event(new)
