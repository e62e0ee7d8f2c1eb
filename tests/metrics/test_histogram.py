"""FastHistogram against prometheus_client.Histogram: the same observations give the same exposition text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from kubeplane.metrics.histogram import FastHistogram
from kubeplane.metrics.scheduler import (
    BINDING_CONDITIONS_BUCKETS,
    EXTENSION_POINT_BUCKETS,
    PLUGIN_BUCKETS,
    SCHEDULING_BUCKETS,
    VICTIMS_BUCKETS,
)

BUCKET_SETS = {
    "scheduling": SCHEDULING_BUCKETS,
    "extension_point": EXTENSION_POINT_BUCKETS,
    "plugin": PLUGIN_BUCKETS,
    "victims": VICTIMS_BUCKETS,
    "binding_conditions": BINDING_CONDITIONS_BUCKETS,
    "with_inf": (0.5, 1.0, math.inf),
}
LABELS = ("point", "status")
VALUES = st.sampled_from([("PreFilter", "Success"), ("Score", "Success"), ("PreFilter", "Unschedulable")])
AMOUNTS = st.one_of(
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
    st.sampled_from([0.0, 1e-5, 0.001, 1.0, 2.0, 64.0, 0.0001 * 2**11, math.inf]),  # exactly on a bound
)


def _pair(
    buckets: tuple[float, ...], labels: tuple[str, ...]
) -> tuple[CollectorRegistry, Histogram, CollectorRegistry, FastHistogram]:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    ref = Histogram("x_seconds", "help text", list(labels), buckets=buckets, registry=theirs)
    fast = FastHistogram("x_seconds", "help text", labels, buckets=buckets, registry=ours)
    return theirs, ref, ours, fast


@pytest.mark.parametrize("name", sorted(BUCKET_SETS), ids=lambda n: f"prometheus-client-Histogram-{n}-buckets")
@settings(max_examples=40, deadline=None)
@given(observations=st.lists(st.tuples(VALUES, AMOUNTS), max_size=60))
def test_labelled_exposition_equals_prometheus_client(
    name: str, observations: list[tuple[tuple[str, str], float]]
) -> None:
    theirs, ref, ours, fast = _pair(BUCKET_SETS[name], LABELS)
    for labels, amount in observations:
        ref.labels(*labels).observe(amount)
        fast.labels(*labels).observe(amount)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()
    # and the sample values tests read through the registry
    for labels, _ in observations:
        query = dict(zip(LABELS, labels, strict=True))
        for suffix in ("_count", "_sum"):
            assert ours.get_sample_value("x_seconds" + suffix, query) == theirs.get_sample_value(
                "x_seconds" + suffix, query
            )


@settings(max_examples=40, deadline=None)
@given(amounts=st.lists(AMOUNTS, max_size=40))
def test_unlabelled_exposition_equals_prometheus_client(amounts: list[float]) -> None:
    theirs, ref, ours, fast = _pair(VICTIMS_BUCKETS, ())
    for amount in amounts:
        ref.observe(amount)
        fast.observe(amount)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()


def test_nan_counts_in_the_sum_only_as_prometheus_client() -> None:
    theirs, ref, ours, fast = _pair(VICTIMS_BUCKETS, ())
    for amount in (1.0, math.nan, 3.0):
        ref.observe(amount)
        fast.observe(amount)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()


def test_an_unused_labelled_family_exposes_only_its_header() -> None:
    theirs, _ref, ours, _fast = _pair(PLUGIN_BUCKETS, LABELS)
    assert generate_latest(ours).decode() == generate_latest(theirs).decode()


def test_registering_a_name_twice_is_refused_as_prometheus_client() -> None:
    registry = CollectorRegistry()
    FastHistogram("x_seconds", "help", (), buckets=(1.0,), registry=registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        FastHistogram("x_seconds", "help", (), buckets=(1.0,), registry=registry)


def test_wrong_label_count_and_unsorted_buckets_are_refused() -> None:
    fast = FastHistogram("x_seconds", "help", LABELS, buckets=(1.0,), registry=None)
    with pytest.raises(ValueError, match="expected 2 label values"):
        fast.labels("PreFilter")
    with pytest.raises(ValueError, match="a labelled histogram"):
        fast.observe(1.0)
    with pytest.raises(ValueError, match="sorted"):
        FastHistogram("y_seconds", "help", (), buckets=(2.0, 1.0), registry=None)
