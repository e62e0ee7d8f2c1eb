"""Pins metadata behaviour of kube-apiserver: name rules, generateName, UIDs, time wire forms, etcd keys."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import meta
from kubeplane.api.meta import NameRule
from kubeplane.api.validation.field import new_path

from .test_labels import LABEL_VALUE_MSG, NAME_PART_MSG

# --- path segment names (upstream api/validation/path/name_test.go) -----------------------------------------


@pytest.mark.parametrize(
    ("name", "prefix", "expected"),
    [
        pytest.param("", False, [], id="empty-is-not-this-rules-concern"),
        pytest.param("foo.bar.baz", False, [], id="valid"),
        pytest.param("sha256:ABCDEF012345@ABCDEF012345", False, [], id="valid-complex"),
        pytest.param("Iñtërnâtiônàlizætiøn", False, [], id="valid-extended-charset"),
        pytest.param(".", False, ["may not be '.'"], id="dot"),
        pytest.param(".test", False, [], id="dot-leading"),
        pytest.param(".", True, [], id="dot-prefix-ok"),
        pytest.param("..", False, ["may not be '..'"], id="dot-dot"),
        pytest.param("..test", False, [], id="dot-dot-leading"),
        pytest.param("..", True, [], id="dot-dot-prefix-ok"),
        pytest.param("foo/bar", False, ["may not contain '/'"], id="slash"),
        pytest.param("foo/bar", True, ["may not contain '/'"], id="slash-prefix"),
        pytest.param("foo%bar", False, ["may not contain '%'"], id="percent"),
        pytest.param("a/b%c", False, ["may not contain '/'", "may not contain '%'"], id="slash-and-percent"),
    ],
)
def test_path_segment_rule(name: str, prefix: bool, expected: list[str]) -> None:
    assert NameRule.PATH_SEGMENT.validate(name, prefix=prefix) == expected


@pytest.mark.parametrize(
    ("rule", "name", "prefix", "ok"),
    [
        pytest.param(NameRule.DNS_SUBDOMAIN, "my.pod-1", False, True, id="subdomain-dots-ok"),
        pytest.param(NameRule.DNS_SUBDOMAIN, "web-", False, False, id="subdomain-trailing-dash-bad-as-name"),
        pytest.param(NameRule.DNS_SUBDOMAIN, "web-", True, True, id="subdomain-trailing-dash-ok-as-prefix"),
        # upstream maskTrailingDash drops two characters: "a-.-" is checked as "a-a" and accepted
        pytest.param(NameRule.DNS_SUBDOMAIN, "a-.-", True, True, id="mask-quirk-drops-two-chars"),
        pytest.param(NameRule.DNS_SUBDOMAIN, "-", True, False, id="lone-dash-prefix-invalid"),
        pytest.param(NameRule.DNS_LABEL, "kube-system", False, True, id="label-ok"),
        pytest.param(NameRule.DNS_LABEL, "a.b", False, False, id="label-no-dots"),
        pytest.param(NameRule.DNS_LABEL, "ns-", True, True, id="label-prefix-trailing-dash"),
        pytest.param(NameRule.DNS1035_LABEL, "svc", False, True, id="1035-ok"),
        pytest.param(NameRule.DNS1035_LABEL, "1svc", False, False, id="1035-leading-digit"),
        pytest.param(NameRule.DNS1035_LABEL, "svc-", True, True, id="1035-prefix-trailing-dash"),
        pytest.param(NameRule.RBAC, "system:node", False, True, id="rbac-colons-ok"),
        pytest.param(NameRule.RBAC, ".", True, False, id="rbac-ignores-prefix-flag"),
        pytest.param(NameRule.PATH_SEGMENT, ".", True, True, id="path-segment-prefix-allows-dot"),
    ],
)
def test_name_rules(rule: NameRule, name: str, prefix: bool, ok: bool) -> None:
    assert (rule.validate(name, prefix=prefix) == []) is ok


def test_object_meta_names_messages() -> None:
    errs = meta.validate_object_meta_names(
        {"name": "A", "namespace": "Bad_NS", "generateName": "x_"}, rule=NameRule.DNS_LABEL, namespaced=True
    )
    assert [str(e) for e in errs] == [
        'metadata.generateName: Invalid value: "x_": ' + NameRule.DNS_LABEL.validate("x_", prefix=True)[0],
        'metadata.name: Invalid value: "A": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
        "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        'metadata.namespace: Invalid value: "Bad_NS": ' + NameRule.DNS_LABEL.validate("Bad_NS")[0],
    ]


@pytest.mark.parametrize(
    ("metadata", "namespaced", "expected"),
    [
        pytest.param({"name": "p", "namespace": "default"}, True, [], id="namespaced-ok"),
        pytest.param({"name": "n"}, False, [], id="cluster-ok"),
        pytest.param(
            {"namespace": "default"},
            True,
            ["metadata.name: Required value: name or generateName is required"],
            id="name-required",
        ),
        pytest.param({"name": "p"}, True, ["metadata.namespace: Required value"], id="namespace-required"),
        pytest.param(
            {"name": "n", "namespace": "x"},
            False,
            ["metadata.namespace: Forbidden: not allowed on this type"],
            id="namespace-forbidden-on-cluster-scoped",
        ),
    ],
)
def test_object_meta_required_and_forbidden(metadata: dict[str, object], namespaced: bool, expected: list[str]) -> None:
    errs = meta.validate_object_meta_names(metadata, rule=NameRule.DNS_SUBDOMAIN, namespaced=namespaced)
    assert [str(e) for e in errs] == expected


def test_labels_and_annotations() -> None:
    p = new_path("metadata", "labels")
    assert meta.validate_labels({"app": "web", "example.com/tier": ""}, p) == []
    errs = meta.validate_labels({"bad key!": "-v"}, p)
    assert [e.field for e in errs] == ["metadata.labels", "metadata.labels"]
    assert [e.bad_value for e in errs] == ["bad key!", "-v"]
    a = new_path("metadata", "annotations")
    assert meta.validate_annotations({"Example.com/Key": "x"}, a) == []  # keys are checked lower-cased
    big = {"k": "x" * meta.TOTAL_ANNOTATION_SIZE_LIMIT}
    assert [str(e) for e in meta.validate_annotations(big, a)] == [
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    ]


# --- generateName and UIDs (apiserver/pkg/storage/names) ----------------------------------------------------


def test_generate_name_appends_five_chars_from_upstream_alphabet() -> None:
    name = meta.generate_name("foo-", random.Random(1))
    assert name.startswith("foo-")
    assert re.fullmatch(r"foo-[bcdfghjklmnpqrstvwxz2456789]{5}", name)


def test_generate_name_truncates_base_to_58_bytes() -> None:
    name = meta.generate_name("x" * 100, random.Random(1))
    assert len(name) == 63
    assert name[:58] == "x" * 58


def test_generate_name_is_deterministic_with_seeded_rng() -> None:
    assert meta.generate_name("p-", random.Random(7)) == meta.generate_name("p-", random.Random(7))
    rng = random.Random(7)
    assert meta.generate_name("p-", rng) != meta.generate_name("p-", rng)


def test_uid_is_uuid4_and_seedable() -> None:
    uid = meta.new_uid(random.Random(3))
    parsed = uuid.UUID(uid)
    assert parsed.version == 4
    assert str(parsed) == uid
    assert uid == meta.new_uid(random.Random(3))
    assert uuid.UUID(meta.new_uid()).version == 4


# --- times (metav1.Time / MicroTime) ------------------------------------------------------------------------

T = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(T, "2026-01-02T03:04:05Z", id="time-truncates-fraction"),
        pytest.param(T.astimezone(timezone(timedelta(hours=2))), "2026-01-02T03:04:05Z", id="time-converted-to-utc"),
        pytest.param(0.0, "1970-01-01T00:00:00Z", id="epoch-float"),
    ],
)
def test_format_time(value: datetime | float, expected: str) -> None:
    assert meta.format_time(value) == expected


def test_format_micro_time_six_digits() -> None:
    assert meta.format_micro_time(T) == "2026-01-02T03:04:05.678901Z"
    assert meta.format_micro_time(T.replace(microsecond=0)) == "2026-01-02T03:04:05.000000Z"


def test_naive_datetime_rejected() -> None:
    with pytest.raises(ValueError, match="naive"):
        meta.format_time(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-01-02T03:04:05Z", T.replace(microsecond=0), id="z"),
        pytest.param("2026-01-02T05:04:05+02:00", T.replace(microsecond=0), id="offset-normalised-to-utc"),
        pytest.param("2026-01-02T03:04:05.678901234Z", T, id="fraction-accepted-truncated-to-micros"),
    ],
)
def test_parse_time(text: str, expected: datetime) -> None:
    got = meta.parse_time(text)
    assert got == expected
    assert got.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    ["2026-01-02 03:04:05Z", "2026-01-02T03:04:05", "2026-13-02T03:04:05Z", "2026-01-02T03:04:05+2:00", ""],
    ids=["space", "no-zone", "month-13", "short-offset", "empty"],
)
def test_parse_time_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="parsing time"):
        meta.parse_time(text)


def test_parse_micro_time_requires_six_digits() -> None:
    assert meta.parse_micro_time("2026-01-02T03:04:05.678901Z") == T
    with pytest.raises(ValueError, match="parsing time"):
        meta.parse_micro_time("2026-01-02T03:04:05Z")
    with pytest.raises(ValueError, match="parsing time"):
        meta.parse_micro_time("2026-01-02T03:04:05.678Z")


def test_time_round_trip() -> None:
    assert meta.format_micro_time(meta.parse_micro_time(meta.format_micro_time(T))) == meta.format_micro_time(T)


# --- storage keys -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "name", "namespace", "expected"),
    [
        pytest.param("pods", "web-0", "default", "/registry/pods/default/web-0", id="namespaced"),
        pytest.param("minions", "node-1", None, "/registry/minions/node-1", id="cluster-scoped-nodes"),
        pytest.param("services/specs", "kubernetes", "default", "/registry/services/specs/default/kubernetes",
                     id="services-specs"),
    ],
)  # fmt: skip
def test_object_key(prefix: str, name: str, namespace: str | None, expected: str) -> None:
    assert meta.object_key(prefix, name, namespace=namespace) == expected
    assert meta.split_key(expected, prefix) == (namespace, name)


@pytest.mark.parametrize(
    ("name", "namespace", "message"),
    [
        pytest.param("", "default", "Name parameter required.", id="empty-name"),
        pytest.param("a/b", "default", "Name parameter invalid", id="slash-in-name"),
        pytest.param("..", None, "may not be '..'", id="dotdot-name"),
        pytest.param("p", "", "Namespace parameter required.", id="empty-namespace-for-namespaced"),
        pytest.param("p", "a%b", "Namespace parameter invalid", id="percent-in-namespace"),
    ],
)
def test_object_key_rejects(name: str, namespace: str | None, message: str) -> None:
    with pytest.raises(meta.InvalidKeyError, match=re.escape(message)):
        meta.object_key("pods", name, namespace=namespace)


def test_collection_prefixes_end_in_slash() -> None:
    assert meta.collection_prefix("pods") == "/registry/pods/"
    assert meta.collection_prefix("pods", namespace="default") == "/registry/pods/default/"
    assert not meta.object_key("pods", "x", namespace="default2").startswith(
        meta.collection_prefix("pods", namespace="default")
    )
    assert meta.collection_prefix("pods", root="/kp") == "/kp/pods/"


@pytest.mark.parametrize("key", ["/registry/pods/", "/registry/pods/a/b/c", "/registry/nodes/x", "/registry/pods/a/"])
def test_split_key_rejects_non_object_keys(key: str) -> None:
    with pytest.raises(meta.InvalidKeyError):
        meta.split_key(key, "pods")


def test_validate_labels_formats_upstream_field_errors() -> None:
    """Upstream ValidateLabels: one error per message at metadata.labels, keys then values."""
    errs = meta.validate_labels({"ok": "fine", "-x": "v", "y": "a b"})
    assert [str(e) for e in errs] == [
        f'metadata.labels: Invalid value: "-x": {NAME_PART_MSG}',
        f'metadata.labels: Invalid value: "a b": {LABEL_VALUE_MSG}',
    ]
    assert meta.validate_labels({"app.kubernetes.io/name": "web", "empty": ""}) == []
    at = new_path("spec", "template", "metadata", "labels")
    assert str(meta.validate_labels({"a": "-"}, at)[0]).startswith("spec.template.metadata.labels: Invalid value")


@settings(max_examples=2000, deadline=None)
@given(
    whole=st.integers(min_value=0, max_value=2**33),
    fraction=st.one_of(
        st.floats(min_value=0.0, max_value=0.9999999, allow_nan=False),
        st.sampled_from([0.0, 0.5, 0.998999, 0.999, 0.9999994, 0.9999995, 0.9999996]),
    ),
    negative=st.booleans(),
)
def test_format_time_kept_seconds_are_strftime(whole: int, fraction: float, negative: bool) -> None:
    """metav1.Time's wire form (seconds truncated) is the same from the kept per-second texts as computed, also
    where the microsecond rounding of ``fromtimestamp`` carries into the next second, and twice in a row."""
    t = float(whole) + fraction
    t = -t if negative else t
    expected = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert meta.format_time(t) == expected
    assert meta.format_time(t) == expected


@settings(max_examples=1000, deadline=None)
@given(
    whole=st.integers(min_value=0, max_value=2**33),
    fraction=st.one_of(
        st.floats(min_value=0.0, max_value=0.9999999, allow_nan=False),
        st.sampled_from([0.0, 0.5, 0.999, 0.9999994, 0.9999995, 0.9999996]),
    ),
)
def test_format_micro_time_from_kept_seconds_is_strftime(whole: int, fraction: float) -> None:
    """metav1.MicroTime's wire form built on the kept per-second text equals strftime's, also where the
    microsecond rounding carries into the next second, and twice in a row (the text then kept)."""
    t = float(whole) + fraction
    expected = datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert meta.format_micro_time(t) == expected
    assert meta.format_micro_time(t) == expected
