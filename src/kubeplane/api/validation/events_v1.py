"""events.k8s.io/v1 Event validation, as kube-apiserver's ``ValidateEventCreate`` and ``ValidateEventUpdate``.

Upstream converts a v1 Event to the internal core Event before validating, so errors name the internal fields:
``note`` is reported as ``message``, ``regarding`` as ``involvedObject``, ``deprecatedCount`` as ``count``,
``deprecatedSource`` as ``source``. :func:`_event_view` does that conversion; the legacy rules it shares with
core/v1 Events are :func:`.events.legacy_validate_event`, and the stricter v1 rules (a series of at least two,
an ``eventTime``, a known ``type``, the deprecated fields unset) and the update's frozen fields are here.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader (no :func:`~.reader.finish`); an unparsable time is
      reported and reads as Go's zero time.
    * Frozen fields are compared on the internal view and a changed one is printed as Go prints it: object
      references as tagless structs, times in RFC 3339 (micro-time for ``eventTime``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field
from kubeplane.api.validation.common import IMMUTABLE_MSG
from kubeplane.api.validation.events import legacy_validate_event
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader

__all__ = ["validate_event", "validate_event_update"]

# (JSON member, internal Go field) of core.ObjectReference, in the Go struct's order.
_OBJECT_REFERENCE: Final = (
    ("kind", "Kind"), ("namespace", "Namespace"), ("name", "Name"), ("uid", "UID"), ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"), ("fieldPath", "FieldPath"),
)  # fmt: skip


def _go_object_reference(ref: Reader) -> dict[str, str]:
    """An internal ``core.ObjectReference`` as Go marshals it (field names, no tags)."""
    return {go: ref.string(member) for member, go in _OBJECT_REFERENCE}


def _event_view(obj: Mapping[str, Any], errs: ErrorList) -> dict[str, Any]:
    """A v1 Event read into upstream's internal field names, with the Go values errors print."""
    ev = NAMED_GROUPS.root(obj, errs)
    source = ev.child("deprecatedSource")
    series = ev.child("series") if ev.has("series") else None
    return {
        "involvedObject": _go_object_reference(ev.child("regarding")),
        "related": _go_object_reference(ev.child("related")) if ev.has("related") else None,
        "reason": ev.string("reason"),
        "message": ev.string("note"),
        "source": {"Component": source.string("component"), "Host": source.string("host")},
        "firstTimestamp": ev.time("deprecatedFirstTimestamp"),
        "lastTimestamp": ev.time("deprecatedLastTimestamp"),
        "count": ev.integer("deprecatedCount", None) or 0,
        "type": ev.string("type"),
        "eventTime": ev.time("eventTime", micro=True),
        "action": ev.string("action"),
        "reportingController": ev.string("reportingController"),
        "reportingInstance": ev.string("reportingInstance"),
        "series": None
        if series is None
        else (series.integer("count", None) or 0, series.time("lastObservedTime", micro=True)),
        "namespace": NAMED_GROUPS.root(obj, []).child("metadata").string("namespace"),
    }


def _legacy_validate_event(e: Mapping[str, Any], errs: ErrorList) -> None:
    """Upstream ``legacyValidateEvent`` on the internal view (lenient for events without ``eventTime``)."""
    legacy_validate_event(
        errs,
        namespace=e["namespace"],
        involved_namespace=e["involvedObject"]["Namespace"],
        new_style=e["eventTime"] is not None,
        controller_key="reportingController",
        read=e.__getitem__,
    )


def _validate_series(e: Mapping[str, Any], errs: ErrorList) -> None:
    """Upstream ``validateV1EventSeries``."""
    if e["series"] is not None:
        count, last_observed = e["series"]
        if count < 2:
            errs.append(field.invalid(field.new_path("series.count"), "", detail="should be at least 2"))
        if last_observed is None:
            errs.append(field.required(field.new_path("series.lastObservedTime")))


def validate_event(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEventCreate`` for events.k8s.io/v1: the legacy rules, then the strict ones."""
    errs: ErrorList = []
    e = _event_view(obj, errs)
    _legacy_validate_event(e, errs)
    _validate_series(e, errs)
    if e["eventTime"] is None:
        errs.append(field.required(field.new_path("eventTime")))
    if e["type"] not in ("Normal", "Warning"):
        errs.append(field.invalid(field.new_path("type"), "", detail=f"has invalid value: {e['type']}"))
    unset = (
        ("firstTimestamp", e["firstTimestamp"] is not None),
        ("lastTimestamp", e["lastTimestamp"] is not None),
        ("count", e["count"] != 0),
        ("source", any(e["source"].values())),
    )
    errs.extend(field.invalid(field.new_path(member), "", detail="needs to be unset") for member, bad in unset if bad)
    return errs


def _go_time(t: datetime | None, *, micro: bool) -> str | None:
    if t is None:
        return None
    return meta.format_micro_time(t) if micro else meta.format_time(t)


# Upstream's order, including its second "reason" check.
_EVENT_IMMUTABLE: Final = (
    "involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count", "reason", "type",
    "eventTime", "action", "related", "reportingController", "reportingInstance",
)  # fmt: skip


def validate_event_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateEventUpdate`` for events.k8s.io/v1: legacy rules, a changed series, frozen fields."""
    errs: ErrorList = []
    e, o = _event_view(new, errs), _event_view(old, [])
    _legacy_validate_event(e, errs)
    if e["series"] != o["series"]:
        _validate_series(e, errs)
    for member in _EVENT_IMMUTABLE:
        if e[member] != o[member]:
            value = e[member]
            if member in ("firstTimestamp", "lastTimestamp", "eventTime"):
                value = _go_time(value, micro=member == "eventTime")
            errs.append(field.invalid(field.new_path(member), value, detail=IMMUTABLE_MSG))
    return errs
