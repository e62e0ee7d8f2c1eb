"""Pins the nesting-depth limit and the walks it keeps inside Python's stack.

Upstream: Go ``encoding/json``'s scanner (``sigs.k8s.io/json``'s copy, ``internal/golang/encoding/json/
scanner.go``: ``maxNestingDepth`` 10000, "invalid character '{' exceeded max depth"), and ``summarizeData`` in
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go``. kubeplane's limit is lower (orjson's encoder,
see the module); the properties below hold the helpers to a recursive reference, and the last tests run every
recursive walk of request data at the limit with a stack already deeper than the server's.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.api import gofmt, jsondepth, patch, protobuf, schema, strategicpatch, typed
from kubeplane.api.jsondepth import MAX_DEPTH, compact_prefix, raw_too_deep, summarize, syntax_error, too_deep
from kubeplane.api.validation import common
from kubeplane.api.validation import pods as pod_validation

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=40,
)


def nest(levels: int, opener: str = "{") -> Any:
    value: Any = {} if opener == "{" else []
    for _ in range(levels - 1):
        value = {"a": value} if opener == "{" else [value]
    return value


def reference_depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(reference_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(reference_depth, value), default=0)
    return 0


def reference_first_too_deep(value: Any, limit: int, depth: int = 0) -> str | None:
    """Document order, as Go's scanner meets the brackets."""
    if not isinstance(value, dict | list):
        return None
    if depth + 1 > limit:
        return "{" if isinstance(value, dict) else "["
    for child in value.values() if isinstance(value, dict) else value:
        found = reference_first_too_deep(child, limit, depth + 1)
        if found is not None:
            return found
    return None


def test_the_limit_is_what_orjson_stores_inside_the_deepest_envelope() -> None:
    """MAX_DEPTH + ENVELOPE_DEPTH levels encode, one more does not: the constants match the installed orjson."""
    assert MAX_DEPTH == jsondepth.ORJSON_MAX_DEPTH - jsondepth.ENVELOPE_DEPTH == 250
    orjson.dumps(nest(MAX_DEPTH + jsondepth.ENVELOPE_DEPTH))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(nest(MAX_DEPTH + jsondepth.ENVELOPE_DEPTH + 1))
    assert jsondepth.UPSTREAM_MAX_DEPTH == 10000


def test_too_deep_counts_containers_and_names_the_bracket() -> None:
    assert too_deep(nest(MAX_DEPTH)) is None
    assert too_deep(nest(MAX_DEPTH + 1)) == "{"
    assert too_deep(nest(MAX_DEPTH + 1, "[")) == "["
    assert too_deep("x") is None
    assert too_deep({}, 0) == "{"
    assert too_deep(1, 0) is None
    assert too_deep({"a": [1]}, 2) is None
    assert too_deep({"a": [[1]]}, 2) == "["
    # the first container past the limit in document order, not the deepest or the last
    assert too_deep({"x": {"y": [1]}, "z": {"w": {"v": 1}}}, 2) == "["
    assert syntax_error("[") == "invalid character '[' exceeded max depth"
    # orjson refuses integers past 64 bits: the walk decides
    assert too_deep({"a": [2**70]}) is None
    assert too_deep({"a": [[2**70]]}, 2) == "["


def test_too_deep_takes_any_depth() -> None:
    assert too_deep(nest(100_000)) == "{"
    assert raw_too_deep(b"[" * 100_000 + b"]" * 100_000) == (MAX_DEPTH, "[")


@given(JSON, st.integers(0, 6))
def test_too_deep_agrees_with_a_recursive_reference(value: Any, limit: int) -> None:
    assert too_deep(value, limit) == reference_first_too_deep(value, limit)
    assert (too_deep(value, limit) is None) == (reference_depth(value) <= limit)


@given(JSON, st.integers(0, 6))
def test_raw_too_deep_agrees_on_the_text(value: Any, limit: int) -> None:
    text = json.dumps(value)
    found = raw_too_deep(text.encode(), limit)
    assert (found[1] if found else None) == too_deep(value, limit)
    if found:
        assert text.encode()[found[0] : found[0] + 1].decode() == found[1]


def test_raw_too_deep_skips_brackets_in_strings() -> None:
    assert raw_too_deep(b'{"a":"[[[{{{\\"[[["}', 1) is None
    assert raw_too_deep(b'{"a\\\\":[1]}', 1) == (7, "[")


def test_summarize_is_upstreams_summarize_data() -> None:
    assert summarize(b"") == "<empty>"
    assert summarize(b'{"a":1}') == '{"a":1}'
    assert summarize(b"{" + b"x" * 29) == "{" + "x" * 29
    assert summarize(b"{" + b"x" * 30) == "{" + "x" * 29 + " ..."
    assert summarize(b"[1]") == "5b315d"
    assert summarize(b"[" * 31) == "5b" * 30 + " ..."


@given(JSON, st.integers(0, 80))
def test_compact_prefix_is_sorted_compact_json(value: Any, size: int) -> None:
    assert compact_prefix(value, size) == orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()[:size]


def test_compact_prefix_takes_any_depth() -> None:
    assert compact_prefix(nest(100_000), 12) == '{"a":{"a":{"'


# --- every recursive walk of request data, at the limit, with the stack already used --------------------------

SERVER_FRAMES = 100
"""Frames already on the stack when a handler runs: 23 measured under uvicorn (patch_object), taken 4x."""


def _deep_pod(depth: int) -> dict[str, Any]:
    """A pod nested ``depth`` deep in its managedFields (level 5 on) and ``depth`` deep in an unknown field."""
    entry = {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": nest(depth - 4)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "managedFields": [entry]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "unknown": nest(depth - 1),
    }


def _with_frames(frames: int, run: Callable[[], Any]) -> Any:
    return run() if frames <= 0 else _with_frames(frames - 1, run)


LIMIT_POD = _deep_pod(MAX_DEPTH)
OTHER_POD = _deep_pod(MAX_DEPTH - 1)
TEXT = json.dumps(LIMIT_POD)
FIELDS_V1 = orjson.dumps(nest(MAX_DEPTH - 4))
WALKS: dict[str, Callable[[], Any]] = {
    "strategic-merge-patch": lambda: strategicpatch.strategic_merge_patch(OTHER_POD, LIMIT_POD, kind=("", "Pod")),
    "merge-patch": lambda: patch.json_merge_patch(OTHER_POD, LIMIT_POD),
    "create-merge-patch": lambda: patch.create_merge_patch(OTHER_POD, LIMIT_POD),
    "json-patch-test": lambda: patch.json_patch(LIMIT_POD, [{"op": "test", "path": "", "value": LIMIT_POD}]),
    "json-patch-replace": lambda: patch.json_patch(OTHER_POD, [{"op": "replace", "path": "", "value": LIMIT_POD}]),
    "strict-field-errors": lambda: schema.strict_field_errors(TEXT, group="", version="v1", kind="Pod"),
    "duplicate-fields": lambda: schema.duplicate_fields(TEXT),
    "prune-unknown": lambda: schema.prune_unknown(LIMIT_POD, group="", version="v1", kind="Pod"),
    "unknown-fields": lambda: schema.unknown_fields(LIMIT_POD, group="", version="v1", kind="Pod"),
    "typed-decode": lambda: typed.decode_with_unknown(LIMIT_POD, group="", version="v1", kind="Pod"),
    "typed-from-unstructured": lambda: typed.decode(LIMIT_POD, group="", version="v1", kind="Pod", unstructured=True),
    "go-sprint-v": lambda: gofmt.sprint_v(LIMIT_POD),
    "validate-pod": lambda: pod_validation.validate_pod(LIMIT_POD),
    "spec-diff": lambda: common.spec_diff(LIMIT_POD, OTHER_POD, "spec"),
    "deepcopy": lambda: copy.deepcopy(LIMIT_POD),
    "equality": lambda: LIMIT_POD == OTHER_POD,
    "json-dumps": lambda: json.dumps(LIMIT_POD),
    "protobuf-fields-v1": lambda: protobuf.decode_message(
        b"\x0a" + bytes([len(FIELDS_V1) & 0x7F | 0x80, len(FIELDS_V1) >> 7]) + FIELDS_V1,
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
    ),
}


@pytest.mark.parametrize("walk", list(WALKS), ids=list(WALKS))
def test_every_walk_of_request_data_runs_at_the_limit(walk: str) -> None:
    """The depth check at the entry is what bounds these walks: at MAX_DEPTH each finishes with
    ``SERVER_FRAMES`` frames already used (Python's limit: 1000)."""
    assert sys.getrecursionlimit() >= 1000
    assert too_deep(LIMIT_POD) is None
    assert too_deep(_deep_pod(MAX_DEPTH + 1)) == "{"
    _with_frames(SERVER_FRAMES, WALKS[walk])


RECURSIVE_MESSAGES = frozenset(
    {
        "k8s.io.api.scheduling.v1alpha3.CompositePodGroupTemplate",
        "k8s.io.api.scheduling.v1beta1.CompositePodGroupTemplate",
    }
)
"""Messages upstream defines in terms of themselves (a Workload's composite template holds composite templates)."""


def test_protobuf_messages_nest_only_as_deep_as_their_tables() -> None:
    """The protobuf decoder recurses once per embedded message; apart from upstream's recursive messages the
    tables have no cycle, so no body drives it deeper than the longest chain (upstream's gogo decoders have no
    limit of their own), and the recursive ones stop at MAX_MESSAGE_DEPTH (next test)."""
    tables = protobuf.load_tables().messages
    longest: dict[str, int] = {}

    def chain(message: str, seen: frozenset[str]) -> int:
        assert message not in seen, f"cycle through {message}"
        if message not in longest:
            fields = tables.get(message, {})
            longest[message] = 1 + max(
                (
                    chain(f.type, seen | {message})
                    for f in fields.values()
                    if f.type in tables and f.type not in RECURSIVE_MESSAGES
                ),
                default=0,
            )
        return longest[message]

    assert max(chain(message, frozenset()) for message in tables) < 20
    assert protobuf.MAX_MESSAGE_DEPTH < 100


def _length_delimited(number: int, payload: bytes) -> bytes:
    size, out = len(payload), bytearray([number << 3 | 2])
    while size >= 0x80:
        out.append(size & 0x7F | 0x80)
        size >>= 7
    out.append(size)
    return bytes(out) + payload


@pytest.mark.parametrize("message", sorted(RECURSIVE_MESSAGES))
def test_protobuf_recursive_message_past_the_depth_limit_is_a_nesting_error(message: str) -> None:
    field = next(n for n, f in protobuf.load_tables().messages[message].items() if f.type == message)
    body = b""
    for _ in range(protobuf.MAX_MESSAGE_DEPTH + 5):
        body = _length_delimited(field, body)
    with pytest.raises(protobuf.NestingError):
        protobuf.decode_message(body, message)
    shallow = b""
    for _ in range(3):
        shallow = _length_delimited(field, shallow)
    assert protobuf.decode_message(shallow, message)


def test_protobuf_raw_json_too_deep_for_orjson_is_a_nesting_error() -> None:
    raw = b"[" * 2000 + b"]" * 2000
    body = b"\x0a" + bytes([len(raw) & 0x7F | 0x80, len(raw) >> 7]) + raw
    with pytest.raises(protobuf.NestingError) as info:
        protobuf.decode_message(body, "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1")
    assert (info.value.bracket, str(info.value)) == ("[", "invalid character '[' exceeded max depth")
