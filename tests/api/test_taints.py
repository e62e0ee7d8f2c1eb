"""Pins taint/toleration semantics: ToleratesTaint, FindMatchingUntoleratedTaint, kubectl parsing, validation.

Cases follow upstream's toleration_test.go, component-helpers' helpers_test.go, kubectl's taint utils tests
and core validation tests; the compiled form is held to the dict reference by a property test.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import taints as tt
from kubeplane.api.taints import CompiledTolerations, Taint, TaintSpecError
from kubeplane.api.validation.field import new_path

T = dict[str, Any]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param({"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
                     {"key": "foo", "effect": "NoSchedule"}, True, id="same-key-effect-exists-taint-no-value"),
        pytest.param({"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
                     {"key": "foo", "value": "bar", "effect": "NoSchedule"}, True, id="exists-matches-any-value"),
        pytest.param({"operator": "Exists", "effect": "NoSchedule"},
                     {"key": "foo", "value": "bar", "effect": "NoSchedule"}, True, id="empty-key-exists-all-keys"),
        pytest.param({"operator": "Exists"},
                     {"key": "foo", "value": "bar", "effect": "NoExecute"}, True, id="exists-tolerates-all"),
        pytest.param({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"},
                     {"key": "foo", "value": "bar", "effect": "NoSchedule"}, True, id="equal-same-value"),
        pytest.param({"key": "foo", "value": "bar", "effect": "NoSchedule"},
                     {"key": "foo", "value": "bar", "effect": "NoSchedule"}, True, id="empty-operator-means-equal"),
        pytest.param({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"},
                     {"key": "foo", "value": "baz", "effect": "NoSchedule"}, False, id="equal-different-values"),
        pytest.param({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute"},
                     {"key": "foo", "value": "bar", "effect": "NoSchedule"}, False, id="different-effects"),
        pytest.param({"key": "foo", "operator": "Equal", "value": "bar"},
                     {"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}, True, id="empty-effect-matches-all"),
        pytest.param({"key": "foo", "operator": "Exists"},
                     {"key": "other", "effect": "NoSchedule"}, False, id="different-keys"),
        pytest.param({"operator": "Equal", "value": "bar"},
                     {"key": "any", "value": "bar", "effect": "NoSchedule"}, True, id="empty-key-equal-matches-value"),
        pytest.param({"key": "foo", "operator": "Gt", "value": "1"},
                     {"key": "foo", "value": "2", "effect": "NoSchedule"}, False, id="unknown-operator-never-matches"),
        pytest.param({"key": "foo", "operator": "Equal"},
                     {"key": "foo", "effect": "NoSchedule"}, True, id="equal-empty-values"),
    ],
)  # fmt: skip
def test_toleration_tolerates_taint(toleration: T, taint: T, expected: bool) -> None:
    assert tt.toleration_tolerates_taint(toleration, taint) is expected
    assert CompiledTolerations([toleration]).tolerates(Taint.from_dict(taint)) is expected


def _no_schedule_or_execute(t: Any) -> bool:
    return bool(t.get("effect") in ("NoSchedule", "NoExecute"))


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        pytest.param([], [], None, id="empty-taints"),
        pytest.param([{"key": "a", "effect": "NoSchedule"}], [], 0, id="untolerated-noschedule"),
        pytest.param([{"key": "a", "effect": "PreferNoSchedule"}], [], None, id="filter-excludes-prefer"),
        pytest.param(
            [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}],
            [{"key": "a", "operator": "Exists"}],
            1,
            id="first-untolerated-returned",
        ),
        pytest.param(
            [{"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}],
            [{"operator": "Exists"}],
            None,
            id="all-tolerated",
        ),
    ],
)
def test_find_matching_untolerated_taint(taints: list[T], tolerations: list[T], expected: int | None) -> None:
    got = tt.find_matching_untolerated_taint(taints, tolerations, include=_no_schedule_or_execute)
    assert got is (None if expected is None else taints[expected])
    compiled = CompiledTolerations(tolerations).find_untolerated(
        [Taint.from_dict(t) for t in taints], include=lambda t: t.effect in ("NoSchedule", "NoExecute")
    )
    assert compiled == (None if expected is None else Taint.from_dict(taints[expected]))


def test_find_without_filter_and_count() -> None:
    taints = [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]
    assert tt.find_matching_untolerated_taint(taints, []) is taints[0]
    c = CompiledTolerations([{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert c.count_untolerated([Taint.from_dict(t) for t in taints], effect="PreferNoSchedule") == 1
    assert c.count_untolerated([Taint.from_dict(t) for t in taints], effect="NoSchedule") == 0


def test_match_taint_and_to_string() -> None:
    assert tt.match_taint({"key": "k", "value": "1", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"})
    assert not tt.match_taint({"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoExecute"})
    assert tt.taint_to_string({"key": "k", "value": "v", "effect": "NoSchedule"}) == "k=v:NoSchedule"
    assert tt.taint_to_string({"key": "k", "effect": "NoSchedule"}) == "k:NoSchedule"
    assert str(Taint("k", "NoSchedule", "v")) == "k=v:NoSchedule"


def test_taint_record_round_trip() -> None:
    d = {"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2026-01-02T03:04:05Z"}
    assert Taint.from_dict(d).to_dict() == d
    assert list(Taint("k", "NoSchedule").to_dict()) == ["key", "effect"]  # value omitted when empty


# --- property: compiled form agrees with the reference ---------------------------------------------------------

_keys = st.sampled_from(["", "a", "b", "example.com/c"])
_values = st.sampled_from(["", "x", "y"])
_effects = st.sampled_from(["", "NoSchedule", "PreferNoSchedule", "NoExecute"])
_ops = st.sampled_from(["", "Equal", "Exists", "Lt"])
_toleration = st.fixed_dictionaries({"key": _keys, "operator": _ops, "value": _values, "effect": _effects})
_taint = st.fixed_dictionaries({"key": _keys, "value": _values, "effect": _effects})


@settings(max_examples=400, deadline=None)
@given(tolerations=st.lists(_toleration, max_size=4), taint_list=st.lists(_taint, max_size=4))
def test_compiled_matches_reference(tolerations: list[T], taint_list: list[T]) -> None:
    compiled = CompiledTolerations(tolerations)
    for taint in taint_list:
        assert compiled.tolerates(Taint.from_dict(taint)) == tt.tolerations_tolerate_taint(tolerations, taint)


# --- kubectl taint parsing -------------------------------------------------------------------------------------

QNAME_EQ_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        pytest.param(["foo=abc"], f"invalid taint spec: foo=abc, {QNAME_EQ_MSG}", id="key-value-without-effect"),
        pytest.param(["foo=abc=xyz:NoSchedule"], "invalid taint spec: foo=abc=xyz:NoSchedule", id="two-equals"),
        pytest.param(["foo=abc:xyz:NoSchedule"], "invalid taint spec: foo=abc:xyz:NoSchedule", id="two-colons"),
        pytest.param(["foo"], "invalid taint spec: foo", id="adding-needs-effect"),
        pytest.param(
            ["foo=abc:invalid_effect"],
            "invalid taint effect: invalid_effect, unsupported taint effect",
            id="bad-effect-add",
        ),
        pytest.param(
            ["foo:invalid_effect-"],
            "invalid taint effect: invalid_effect, unsupported taint effect",
            id="bad-effect-del",
        ),
        pytest.param(
            ["foo=abc:NoSchedule", "foo=abc:NoSchedule"],
            "duplicated taints with the same key and effect: {foo abc NoSchedule <nil>}",
            id="duplicate-key-effect",
        ),
        pytest.param(
            ["foo=-bad:NoSchedule"],
            "invalid taint spec: foo=-bad:NoSchedule, a valid label must be an empty string or consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            id="bad-value",
        ),
        pytest.param([""], f"invalid taint spec: , name part must be non-empty; {QNAME_EQ_MSG}", id="empty-spec"),
    ],
)
def test_parse_taints_errors(specs: list[str], message: str) -> None:
    with pytest.raises(TaintSpecError) as exc:
        tt.parse_taints(specs)
    assert str(exc.value) == message


def test_parse_taints_add_and_remove() -> None:
    add, remove = tt.parse_taints(
        ["foo=abc:NoSchedule", "baz:NoSchedule", "foobar=:NoSchedule", "foo=abc:NoExecute",
         "bar:NoSchedule-", "qux=x:NoSchedule-", "dedicated-"]
    )  # fmt: skip
    assert add == [
        Taint("foo", "NoSchedule", "abc"),
        Taint("baz", "NoSchedule"),
        Taint("foobar", "NoSchedule"),
        Taint("foo", "NoExecute", "abc"),
    ]
    assert remove == [Taint("bar", "NoSchedule"), Taint("qux", "NoSchedule"), Taint("dedicated", "")]


@pytest.mark.parametrize(
    ("old", "add", "remove", "overwrite", "op", "new", "errors"),
    [
        pytest.param([], ["a=1:NoSchedule"], [], False, "tainted", ["a=1:NoSchedule"], [], id="add"),
        pytest.param(
            ["a=1:NoSchedule"], ["a=2:NoSchedule"], [], True, "modified", ["a=2:NoSchedule"], [], id="overwrite"
        ),
        pytest.param(
            ["a:NoSchedule", "b:NoSchedule"], [], ["a:NoSchedule"], False, "untainted", ["b:NoSchedule"], [],
            id="remove-by-key-effect",
        ),
        pytest.param(
            ["a:NoSchedule", "a:NoExecute", "b:NoSchedule"], [], ["a:"], False, "untainted", ["b:NoSchedule"], [],
            id="remove-all-effects-of-key",
        ),
        pytest.param([], [], ["zz:NoSchedule"], False, "untainted", [], ['taint "zz:NoSchedule" not found'],
                     id="remove-missing"),
        pytest.param(["b:NoSchedule"], ["a:NoSchedule"], ["b:NoSchedule"], False, "modified", ["a:NoSchedule"], [],
                     id="add-and-remove"),
    ],
)  # fmt: skip
def test_reorganize_taints(
    *, old: list[str], add: list[str], remove: list[str], overwrite: bool, op: str, new: list[str], errors: list[str]
) -> None:
    got_op, got_new, got_errors = tt.reorganize_taints(
        [tt.parse_taint(s) for s in old],
        add=[tt.parse_taint(s) for s in add],
        remove=[tt.parse_taint(s.rstrip(":")) if s.endswith(":") else tt.parse_taint(s) for s in remove],
        overwrite=overwrite,
    )
    assert (got_op, [str(t) for t in got_new], got_errors) == (op, new, errors)


# --- API validation --------------------------------------------------------------------------------------------


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_validate_taints() -> None:
    p = new_path("spec", "taints")
    assert tt.validate_taints([{"key": "a", "value": "b", "effect": "NoSchedule"}], p) == []
    assert _msgs(tt.validate_taints([{"key": "a", "effect": ""}], p)) == ["spec.taints[0].effect: Required value"]
    assert _msgs(tt.validate_taints([{"key": "a", "effect": "NoScheduleNoAdmit"}], p)) == [
        'spec.taints[0].effect: Unsupported value: "NoScheduleNoAdmit": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"'
    ]
    dup = [{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "a", "value": "2", "effect": "NoSchedule"}]
    assert _msgs(tt.validate_taints(dup, p)) == [
        'spec.taints[1]: Duplicate value: {"key":"a","value":"2","effect":"NoSchedule"}: taints must be unique '
        "by key and effect pair"
    ]
    bad = _msgs(tt.validate_taints([{"key": "-a", "value": "-b", "effect": "NoExecute"}], p))
    assert bad[0] == f'spec.taints[0].key: Invalid value: "-a": {QNAME_EQ_MSG}'
    assert bad[1].startswith('spec.taints[0].value: Invalid value: "-b": a valid label must be an empty string')
    assert len(bad) == 2


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        pytest.param({"key": "a", "operator": "Exists", "effect": "NoSchedule"}, [], id="ok-exists"),
        pytest.param({"operator": "Exists"}, [], id="ok-match-everything"),
        pytest.param({"key": "a", "value": "b", "effect": "NoExecute", "tolerationSeconds": 30}, [], id="ok-seconds"),
        pytest.param({"value": "b"}, [
            'spec.tolerations[0].operator: Invalid value: "": operator must be Exists when `key` is empty, which '
            'means "match all values and all keys"'], id="empty-key-needs-exists"),
        pytest.param({"key": "a", "operator": "Exists", "tolerationSeconds": 30}, [
            "spec.tolerations[0].effect: Invalid value: \"\": effect must be 'NoExecute' when `tolerationSeconds` "
            "is set"], id="seconds-need-noexecute"),
        pytest.param({"key": "a", "operator": "Exists", "value": "v"}, [
            'spec.tolerations[0].operator: Invalid value: {"key":"a","operator":"Exists","value":"v"}: value must '
            "be empty when `operator` is 'Exists'"], id="exists-with-value"),
        pytest.param({"key": "a", "operator": "Lt", "value": "1"}, [
            'spec.tolerations[0].operator: Unsupported value: "Lt": supported values: "Equal", "Exists"'],
            id="lt-not-supported-in-this-version"),
        pytest.param({"key": "a", "operator": "Exists", "effect": "Bogus"}, [
            'spec.tolerations[0].effect: Unsupported value: "Bogus": supported values: "NoSchedule", '
            '"PreferNoSchedule", "NoExecute"'], id="bad-effect"),
    ],
)  # fmt: skip
def test_validate_tolerations(toleration: T, expected: list[str]) -> None:
    assert _msgs(tt.validate_tolerations([toleration], new_path("spec", "tolerations"))) == expected


def test_validate_toleration_bad_value_reported_on_operator_path() -> None:
    (err,) = tt.validate_tolerations([{"key": "a", "value": "-x"}], new_path("tolerations"))
    assert err.field == "tolerations[0].operator"  # upstream's path quirk
    assert err.bad_value == "-x"
