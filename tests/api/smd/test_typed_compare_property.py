"""``typed.compare`` (structured-merge-diff ``TypedValue.Compare``) held to a plain transcription of the walk: every
entry of either side compared through ``_compare_entry``, no shortcut for entries equal on both sides. The fast
walk skips equal entries before the call and visits entries in another order; the added, modified and removed
sets must be the same on random pods (typed by the Pod schema: associative lists, sets, atomic and deduced
values) and random edits of them."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.smd import schema, typed
from kubeplane.api.smd.schema import DEDUCED, Atom

POD = schema.type_of("", "v1", "Pod")


def _reference_children(lhs: Any, rhs: Any, atom: Atom, out: typed.Comparison) -> None:
    if (lhs is typed.MISSING or typed._granular_map(lhs, atom)) and (
        rhs is typed.MISSING or typed._granular_map(rhs, atom)
    ):
        left = {} if lhs is typed.MISSING else lhs
        right = {} if rhs is typed.MISSING else rhs
        for key in left.keys() | right.keys():
            _reference_entry(
                left.get(key, typed.MISSING), right.get(key, typed.MISSING), typed._field(atom, key)[0], ("f", key), out
            )
        return
    elem = atom.elem or DEDUCED
    left_items = {} if lhs is typed.MISSING else {typed.item_element(i, atom): i for i in reversed(lhs)}
    right_items = {} if rhs is typed.MISSING else {typed.item_element(i, atom): i for i in reversed(rhs)}
    for pe in left_items.keys() | right_items.keys():
        _reference_entry(left_items.get(pe, typed.MISSING), right_items.get(pe, typed.MISSING), elem, pe, out)


def _reference_entry(lhs: Any, rhs: Any, atom: Atom, pe: Any, out: typed.Comparison) -> None:
    if lhs is not typed.MISSING and rhs is not typed.MISSING and lhs == rhs:
        return
    some = rhs if lhs is typed.MISSING else lhs
    other = lhs if lhs is typed.MISSING else rhs
    granular = (typed._granular_map(some, atom) or typed._granular_list(some, atom)) and (
        other is typed.MISSING or type(other) is type(some)
    )
    if not granular:
        target = out.added if lhs is typed.MISSING else out.removed if rhs is typed.MISSING else out.modified
        target.members.add(pe)
        return
    if lhs is typed.MISSING:
        out.added.members.add(pe)
    elif rhs is typed.MISSING:
        out.removed.members.add(pe)
    sub = typed.Comparison()
    _reference_children(lhs, rhs, atom, sub)
    for mine, theirs in ((out.added, sub.added), (out.modified, sub.modified), (out.removed, sub.removed)):
        if theirs.members or theirs.children:
            mine.children[pe] = theirs


def _reference(lhs: Any, rhs: Any) -> typed.Comparison:
    out = typed.Comparison()
    if lhs != rhs:
        _reference_children(lhs, rhs, POD, out)
    return out


_SCALARS = st.sampled_from(["a", "b", "", 0, 1, True, None, 2.5])
_CONDITION = st.fixed_dictionaries(
    {"type": st.sampled_from(["Ready", "PodScheduled", "Initialized"])},
    optional={"status": st.sampled_from(["True", "False"]), "reason": _SCALARS, "lastProbeTime": st.none()},
)
_CONTAINER_STATUS = st.fixed_dictionaries(
    {"name": st.sampled_from(["c1", "c2"])},
    optional={
        "ready": st.booleans(),
        "state": st.one_of(
            st.just({"running": {"startedAt": "t"}}), st.just({"terminated": {"exitCode": 0}}), st.just({})
        ),
        "image": _SCALARS,
    },
)
_STATUS = st.fixed_dictionaries(
    {},
    optional={
        "phase": _SCALARS,
        "conditions": st.one_of(st.lists(_CONDITION, max_size=4), _SCALARS),
        "containerStatuses": st.lists(_CONTAINER_STATUS, max_size=3),
        "podIPs": st.lists(st.fixed_dictionaries({"ip": st.sampled_from(["10.0.0.1", "fd00::1"])}), max_size=2),
        "hostIP": _SCALARS,
        "extra": st.dictionaries(st.sampled_from(["x", "y"]), _SCALARS, max_size=2),
    },
)
_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "nodeName": _SCALARS,
        "containers": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from(["c1", "c2"])},
                optional={
                    "image": _SCALARS,
                    "ports": st.lists(
                        st.fixed_dictionaries(
                            {"containerPort": st.sampled_from([80, 443])},
                            optional={"protocol": st.sampled_from(["TCP", "UDP"])},
                        ),
                        max_size=2,
                    ),
                    "args": st.lists(_SCALARS, max_size=2),
                },
            ),
            max_size=3,
        ),
        "nodeSelector": st.dictionaries(st.sampled_from(["k1", "k2"]), _SCALARS, max_size=2),
        "tolerations": st.lists(st.dictionaries(st.sampled_from(["key", "effect"]), _SCALARS), max_size=2),
    },
)
_POD = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod")},
    optional={
        "metadata": st.fixed_dictionaries(
            {"name": st.just("p")},
            optional={"labels": st.dictionaries(st.sampled_from(["a", "b"]), _SCALARS, max_size=2)},
        ),
        "spec": _SPEC,
        "status": st.one_of(_STATUS, _SCALARS),
    },
)


def _paths(s: Any) -> list[Any]:
    return list(s.paths())


@settings(max_examples=600, deadline=None)
@given(lhs=_POD, rhs=_POD, shared=st.sampled_from(["none", "spec", "status", "copy"]))
def test_compare_is_the_plain_walk(lhs: dict[str, Any], rhs: dict[str, Any], shared: str) -> None:
    """Compare: added, modified and removed as the plain walk finds them, for unrelated pods, pods sharing a
    subtree by identity (a status write keeps the stored spec) and equal copies."""
    if shared == "copy":
        rhs = copy.deepcopy(lhs)
    elif shared in lhs:
        rhs = {**rhs, shared: lhs[shared]}
    fast, plain = typed.compare(lhs, rhs, POD), _reference(lhs, rhs)
    for name in ("added", "modified", "removed"):
        assert _paths(getattr(fast, name)) == _paths(getattr(plain, name)), name


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["Ready", "PodScheduled", "Initialized", "ContainersReady"]), unique=True),
    st.data(),
)
def test_paired_lists_are_the_plain_walk(types: list[str], data: st.DataObject) -> None:
    """The shape ``typed._paired`` takes (a kubelet's conditions before and after its write: same types, same
    order, some changed) and its near misses (reordered, one added, one dropped, a duplicate): the plain walk's
    sets either way."""
    lhs = [{"type": t, "status": data.draw(st.sampled_from(["True", "False"]))} for t in types]
    rhs = [dict(c, status=data.draw(st.sampled_from(["True", "False"]))) for c in lhs]
    edit = data.draw(st.sampled_from(["none", "reverse", "append", "drop", "duplicate"]))
    if edit == "reverse":
        rhs.reverse()
    elif edit == "append":
        rhs.append({"type": "example.com/New", "status": "True"})
    elif edit == "drop" and rhs:
        rhs.pop(0)
    elif edit == "duplicate" and rhs:
        rhs.append(dict(rhs[0], status="Unknown"))
    left, right = {"status": {"conditions": lhs}}, {"status": {"conditions": rhs}}
    got, want = typed.compare(left, right, POD), _reference(left, right)
    for name in ("added", "modified", "removed"):
        assert _paths(getattr(got, name)) == _paths(getattr(want, name)), name


def test_paired_engages_on_same_order_unique_keys() -> None:
    status = typed._field(POD, "status")[0]
    conditions = typed._field(status, "conditions")[0]
    same = [{"type": "Ready"}, {"type": "Initialized"}]
    assert typed._paired(same, [dict(c, status="True") for c in same], conditions)
    assert not typed._paired(same, list(reversed(same)), conditions)
    assert not typed._paired(same + same[:1], same + same[:1], conditions)  # a duplicate key
    assert not typed._paired([{"type": 1}], [{"type": 1}], conditions)  # not a string
