"""Validation of a device's binding conditions and consumable capacity (resource.k8s.io/v1), as kube-apiserver's
``pkg/apis/resource/validation/validation.go`` (v1.37) checks them; :mod:`.resource_dra` calls in here.

Two beta features, both on in v1.37:

* DRADeviceBindingConditions: a ResourceSlice device's (and an allocation result's) ``bindingConditions`` and
  ``bindingFailureConditions`` (``validateDeviceBindingParameters``): at most 4 of each (a longer list is
  ``Too many`` and its entries are not checked further, upstream's DoS short-circuit), each a qualified name
  (``ValidateLabelName``), no repeats within a list, no entry in both, and one list only with the other.
  ``bindsToNode`` is a plain bool upstream does not validate.
* DRAConsumableCapacity: a capacity's ``requestPolicy`` only on a device with ``allowMultipleAllocations: true``
  (else ``Forbidden``), at most one of ``validValues`` / ``validRange``, either of them needing a ``default``;
  ``validValues`` sorted, at most 10, unique (by whole-unit value), each at most the capacity and containing the
  default; ``validRange.min`` required and at most the capacity, ``min <= default <= max <= capacity``,
  ``min + step <= capacity``, and default and max ``min + n*step`` (``validateRequestPolicy*``).
  The step arithmetic is on whole units (``Quantity.Value()``: rounded away from zero, saturated to int64); a
  step above MaxInt64 and a negative min with a step are refused first (upstream's guards against its int64
  arithmetic dividing by zero); a zero step, where Go would divide by zero, is reported as "not a multiple"
  rather than failing the request.
* DRAFractionalCapacityRange (beta, on): a range with a fractional ``min``, ``max`` or ``step``
  (:mod:`kubeplane.api.dra.capacity_range`) is checked in thousandths: its default, min, max and step must each
  be a whole number of thousandths within the milli-value range (else ``validRange.<field>: Invalid value:
  "<q>": value cannot be represented as a milli value``, the range's other rules then skipped) and the step
  rule is ``(value - min) % step == 0`` on milli values; ``validValues`` are de-duplicated by exact value (not
  whole units, which would merge ``100m`` and ``200m``). A ``validRange`` equal to the stored object's (same
  device and capacity) is not re-checked, so objects stored before the gate stay updatable.
* a ``shareID`` (allocation result, device status) is a UUID in RFC 4122 normalized form (``validateUID``).

The request-policy rule is the one implementation: the simulated driver's node config
(``kubelet/dra/sharing.py``) calls :func:`capacity_errors` too, so a config loads iff the API accepts its slice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.dra import capacity_range as milli_
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import invalid_each
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import Reader

__all__ = [
    "BINDING_CONDITIONS_MAX_SIZE",
    "BINDING_FAILURE_CONDITIONS_MAX_SIZE",
    "CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS",
    "binding_parameters",
    "capacity_errors",
    "capacity_policy",
    "share_id",
]

BINDING_CONDITIONS_MAX_SIZE: Final = 4
BINDING_FAILURE_CONDITIONS_MAX_SIZE: Final = 4
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: Final = 10
INT64_MAX: Final = 2**63 - 1
_RFC4122: Final = (
    "uid must be in RFC 4122 normalized form, "
    "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters"
)
_HEX: Final = re.compile(r"^[0-9a-fA-F]*$")


# --- binding conditions ----------------------------------------------------------------------------------------


def _condition_list(r: Reader, key: str, maximum: int) -> list[str]:
    """``validateSlice(..., ValidateLabelName, ...)``: Too many short-circuits the per-item checks."""
    conditions = r.strings(key)
    if len(conditions) > maximum:
        r.errs.append(field.too_many(r.at(key), actual=len(conditions), maximum=maximum))
    else:
        for i, condition in enumerate(conditions):
            r.errs.extend(invalid_each(r.at(key).index(i), condition, names.is_qualified_name(condition)))
    return conditions


def binding_parameters(r: Reader) -> None:
    """``validateDeviceBindingParameters`` for a slice device or an allocation result ``r``."""
    conditions = _condition_list(r, "bindingConditions", BINDING_CONDITIONS_MAX_SIZE)
    failures = _condition_list(r, "bindingFailureConditions", BINDING_FAILURE_CONDITIONS_MAX_SIZE)
    seen: set[str] = set()
    for i, condition in enumerate(conditions):
        if condition in seen:
            r.errs.append(field.duplicate(r.at("bindingConditions").index(i), condition))
        seen.add(condition)
    seen_failures: set[str] = set()
    for i, condition in enumerate(failures):
        path = r.at("bindingFailureConditions").index(i)
        if condition in seen_failures:
            r.errs.append(field.duplicate(path, condition))
        seen_failures.add(condition)
        if condition in seen:
            detail = "bindingFailureConditions must not overlap with bindingConditions"
            r.errs.append(field.invalid(path, condition, detail=detail))
    # The rejected value is the other list as Go holds it: nil (absent) prints null, an empty list [].
    if not conditions and failures:
        detail = "bindingConditions are required to use bindingFailureConditions"
        r.errs.append(field.invalid(r.at("bindingConditions"), _as_given(r, "bindingConditions"), detail=detail))
    if not failures and conditions:
        detail = "bindingFailureConditions are required to use bindingConditions"
        value = _as_given(r, "bindingFailureConditions")
        r.errs.append(field.invalid(r.at("bindingFailureConditions"), value, detail=detail))


def _as_given(r: Reader, key: str) -> Any:
    value = r.raw(key)
    return value if isinstance(value, list) else None


# --- consumable capacity ---------------------------------------------------------------------------------------


def _parse(raw: object, path: Path, errs: ErrorList) -> Quantity | None:
    """A quantity in the policy; an unparsable one is reported as the Reader reports quantities."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        errs.append(field.invalid(path, raw, detail="quantities must match the regular expression"))
        return None
    try:
        return Quantity.parse(raw)
    except QuantityError as exc:
        errs.append(field.invalid(path, raw, detail=str(exc).rsplit(": ", 1)[-1]))
        return None


def capacity_policy(entry: Reader, path: Path, multi: bool, *, old_policy: object = None) -> None:
    """A slice device's capacity ``entry`` (``{value, requestPolicy}``) at ``path`` (``capacity[<name>]``, the map
    key in brackets as upstream's ``Key``): ``validateMultiAllocatableDeviceCapacity``
    when the device has ``allowMultipleAllocations: true`` (``multi``), else ``validateSingleAllocatable...``.
    ``old_policy``: the stored object's policy of the same device and capacity (an update), else None.
    The value itself is checked by the caller; an unparsable one leaves the policy's bounds unchecked."""
    entry.errs.extend(
        capacity_errors(
            entry.raw("value"), entry.raw("requestPolicy"), path.child("requestPolicy"), multi, old_policy=old_policy
        )
    )


def capacity_errors(
    value: object,
    policy: object,
    path: Path,
    multi: bool,
    *,
    old_policy: object = None,
    fractional: bool | None = None,
) -> ErrorList:
    """The errors of request policy ``policy`` (raw JSON, at ``path``) of a capacity of ``value``; ``fractional``
    is the DRAFractionalCapacityRange gate (None: the server's, :data:`~kubeplane.api.dra.capacity_range.
    FRACTIONAL_CAPACITY_RANGE`)."""
    errs: ErrorList = []
    if fractional is None:
        fractional = milli_.FRACTIONAL_CAPACITY_RANGE
    if policy is None:
        return errs
    if not multi:
        return [field.forbidden(path, "allowMultipleAllocations must be true")]
    total = _parse(value, path, []) if value is not None else None
    if total is None or not isinstance(policy, Mapping):
        return errs
    values, valid_range = policy.get("validValues") or [], policy.get("validRange")
    if values and valid_range is not None:
        detail = 'exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time'
        return [field.forbidden(path, detail)]
    if not values and valid_range is None:
        return errs
    kind = "validValues" if values else "validRange"
    if policy.get("default") is None:
        return [field.required(path.child("default"), f"required when {kind} is defined")]
    default = _parse(policy["default"], path.child("default"), errs)
    if default is None:
        return errs
    if values:
        errs.extend(_valid_values(default, total, values, path.child("validValues"), fractional=fractional))
    elif isinstance(valid_range, Mapping):
        old_range = old_policy.get("validRange") if isinstance(old_policy, Mapping) else None
        if _same_range(valid_range, old_range):
            return errs  # unchanged from the stored object: not re-checked
        errs.extend(_valid_range(default, total, valid_range, path.child("validRange"), fractional=fractional))
    return errs


def _same_range(new: Mapping[str, Any], old: object) -> bool:
    """Whether ``old`` is the same range as ``new`` (by value: ``1Ki`` equals ``1024``)."""
    if not isinstance(old, Mapping):
        return False
    for key in ("min", "max", "step"):
        a, b = new.get(key), old.get(key)
        if (a is None) != (b is None):
            return False
        here = field.new_path(key)
        if a is not None and _parse(a, here, []) != _parse(b, here, []):
            return False
    return True


def _valid_values(default: Quantity, total: Quantity, raw: object, path: Path, *, fractional: bool) -> ErrorList:
    """``validateRequestPolicyValidValues``."""
    errs: ErrorList = []
    items = raw if isinstance(raw, list) else []
    parsed = [_parse(item, path.index(i), errs) for i, item in enumerate(items)]
    options = [q for q in parsed if q is not None]
    if len(options) != len(items):
        return errs
    for i in range(len(options) - 1):
        if options[i] > options[i + 1]:
            errs.append(
                field.invalid(path.index(i + 1), str(options[i + 1]), detail="values must be sorted in ascending order")
            )
    found = False
    if len(options) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
        # validateSet returns before visiting the items, so upstream reports the default as not found too.
        errs.append(field.too_many(path, actual=len(options), maximum=CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS))
    else:
        for i, option in enumerate(options):
            if option > total:
                errs.append(
                    field.invalid(path.index(i), str(option), detail=f"option is larger than capacity value: {total}")
                )
            found = found or option == default
        keys: set[str] = set()
        for i, option in enumerate(options):
            # quantityKey: the exact value with the gate on, else strconv.FormatInt(item.Value(), 10)
            key = milli_.decimal_key(option) if fractional else str(_int64(option))
            if key in keys:
                errs.append(field.duplicate(path.index(i), key))
            keys.add(key)
    if not found:
        errs.append(
            field.invalid(path, str(default), detail="default value is not valid according to the requestPolicy")
        )
    return errs


def _milli_errors(bounds: Mapping[str, Quantity | None], path: Path) -> ErrorList:
    """A fractional range's values that cannot be counted in thousandths, in upstream's order."""
    errs: ErrorList = []
    for name, q in bounds.items():
        if q is not None and not milli_.is_milli_representable(q):
            detail = "value cannot be represented as a milli value"
            errs.append(field.invalid(path.child(name), str(q), detail=detail))
    return errs


def _valid_range(
    default: Quantity, total: Quantity, raw: Mapping[str, Any], path: Path, *, fractional: bool
) -> ErrorList:
    """``validateRequestPolicyRange``: whole-unit step arithmetic, or milli-unit for a fractional range."""
    errs: ErrorList = []
    if raw.get("min") is None:
        return [field.required(path.child("min"), "required when validRange is defined")]
    lo = _parse(raw["min"], path.child("min"), errs)
    hi = _parse(raw["max"], path.child("max"), errs) if raw.get("max") is not None else None
    step = _parse(raw["step"], path.child("step"), errs) if raw.get("step") is not None else None
    if lo is None or errs:
        return errs
    milli = fractional and any(q is not None and q.milli_value() % 1000 != 0 for q in (lo, hi, step))
    if milli:
        errs = _milli_errors({"default": default, "min": lo, "max": hi, "step": step}, path)
        if errs:
            return errs
    if lo > total:
        errs.append(field.invalid(path.child("min"), str(lo), detail=f"min is larger than capacity value: {total}"))
    if default < lo:
        errs.append(field.invalid(path.child("min"), str(default), detail=f"default is less than min: {lo}"))
    if hi is not None:
        if lo > hi:
            errs.append(field.invalid(path.child("max"), str(lo), detail=f"min is larger than max: {hi}"))
        if hi > total:
            errs.append(field.invalid(path.child("max"), str(hi), detail=f"max is larger than capacity value: {total}"))
        if default > hi:
            errs.append(field.invalid(path.child("max"), str(default), detail=f"default is more than max: {hi}"))
    if step is not None:
        added = lo + step
        if added > total:
            detail = f"one step {added} is larger than capacity value: {total}"
            errs.append(field.invalid(path.child("step"), str(step), detail=detail))
        if _int64(step) != step.value():
            detail = f"must not be larger than {INT64_MAX}"
            errs.append(field.invalid(path.child("step"), str(step), detail=detail))
            return errs
        if lo.sign() < 0:
            errs.append(field.invalid(path.child("min"), str(lo), detail="must be greater than or equal to 0"))
            return errs
        for value in (default, hi):
            if value is not None and not _on_step(value, lo, step, milli=milli):
                detail = f"value is not a multiple of a given step ({step}) from ({lo})"
                errs.append(field.invalid(path.child("step"), str(value), detail=detail))
    return errs


def _on_step(value: Quantity, lo: Quantity, step: Quantity, *, milli: bool) -> bool:
    """``validateRequestPolicyRangeStep``: ``(value - min) % step == 0`` on whole units, or on thousandths for a
    fractional range (Go's ``%`` and Python's agree on zero remainders whatever the signs)."""
    if milli:
        divisor = step.milli_value()
        return divisor != 0 and (value.milli_value() - lo.milli_value()) % divisor == 0
    divisor = _int64(step)
    return divisor != 0 and (_int64(value) - _int64(lo)) % divisor == 0


def _int64(q: Quantity) -> int:
    """Go's ``Quantity.Value()``: whole units rounded away from zero, saturated to the int64 range."""
    return max(-INT64_MAX - 1, min(INT64_MAX, q.value()))


# --- share IDs -------------------------------------------------------------------------------------------------


def _uuid_error(uid: str) -> str | None:
    """github.com/google/uuid ``Validate``'s error text, None when ``uid`` parses."""
    text = uid
    if len(text) == 36 + 9:
        if text[:9].lower() != "urn:uuid:":
            return f"invalid urn prefix: {field.go_quote(text[:9])}"
        text = text[9:]
    elif len(text) == 36 + 2:
        if text[0] != "{" or text[-1] != "}":
            return "invalid bracketed UUID format"
        text = text[1:-1]
    elif len(text) == 32:
        return None if _HEX.match(text) else "invalid UUID format"
    elif len(text) != 36:
        return f"invalid UUID length: {len(text)}"
    if any(text[i] != "-" for i in (8, 13, 18, 23)) or not _HEX.match(text.replace("-", "")) or text.count("-") != 4:
        return "invalid UUID format"
    return None


def share_id(r: Reader) -> None:
    """``validateUID`` of ``r``'s optional ``shareID`` (an allocation result or a device status)."""
    uid = r.opt_string("shareID")
    if uid is None:
        return
    error = _uuid_error(uid)
    if error is not None:
        r.errs.append(field.invalid(r.at("shareID"), uid, detail=f"error validating uid: {error}"))
    elif len(uid) != 36 or uid != uid.lower():
        r.errs.append(field.invalid(r.at("shareID"), uid, detail=_RFC4122))
