"""``kubeplane.api.pods`` against upstream pod resource semantics.

Cases come from ``k8s.io/component-helpers/resource/helpers_test.go`` (TestPodResourceRequests,
TestPodResourceLimits), the scheduler's NodeInfo/scorer non-zero requests (``calculateResource``,
``getNonMissingContainerRequests``, ``GetNonzeroRequests``) and ``qos_test.go``; each id names the upstream
behaviour it pins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubeplane.api.pods import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    NON_ZERO_DEFAULTS,
    QOSClass,
    get_nonzero_requests,
    is_pod_level_requests_set,
    is_pod_level_resources_set,
    pod_limits,
    pod_nonzero_requests,
    pod_qos_class,
    pod_requests,
)
from kubeplane.api.quantity import QuantityError

Gi = 1024**3
Mi = 1024**2
JSON = dict[str, Any]


def ctr(
    name: str = "c",
    *,
    requests: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    sidecar: bool = False,
) -> JSON:
    """A container as the API serialises it; ``sidecar`` sets ``restartPolicy: Always``."""
    container: JSON = {"name": name, "image": "pause"}
    resources: JSON = {}
    if requests is not None:
        resources["requests"] = dict(requests)
    if limits is not None:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def pod(
    *containers: JSON,
    init: Sequence[JSON] = (),
    overhead: Mapping[str, Any] | None = None,
    resources: Mapping[str, Any] | None = None,
    status: Mapping[str, Any] | None = None,
) -> JSON:
    spec: JSON = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if resources is not None:
        spec["resources"] = dict(resources)
    result: JSON = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    if status is not None:
        result["status"] = dict(status)
    return result


def cpu(value: str) -> JSON:
    return {"cpu": value}


SIDECAR_CHAIN = [
    ctr("init-1", requests=cpu("5")),
    ctr("restartable-init-1", requests=cpu("1"), sidecar=True),
    ctr("restartable-init-2", requests=cpu("2"), sidecar=True),
    ctr("init-2", requests=cpu("5")),
    ctr("restartable-init-3", requests=cpu("3"), sidecar=True),
]

# (id naming the upstream behaviour, pod, keyword options, expected requests in natural units)
REQUEST_CASES: list[tuple[str, JSON, dict[str, Any], dict[str, int]]] = [
    ("larger-init-container-wins", pod(ctr(requests=cpu("1")), init=[ctr("i", requests=cpu("4"))]), {}, {"cpu": 4000}),
    (
        "containers-summed-beat-init",
        pod(ctr("a", requests=cpu("2")), ctr("b", requests=cpu("3")), init=[ctr("i", requests=cpu("2"))]),
        {},
        {"cpu": 5000},
    ),
    (
        "overhead-excluded",
        pod(ctr("a", requests=cpu("2")), ctr("b", requests=cpu("3")), overhead=cpu("1")),
        {"exclude_overhead": True},
        {"cpu": 5000},
    ),
    (
        "overhead-added-even-without-container-request",
        pod(ctr("a", requests=cpu("2")), ctr("b", requests=cpu("3")), overhead={"cpu": "1", "memory": "1Gi"}),
        {},
        {"cpu": 6000, "memory": Gi},
    ),
    (
        "restartable-init-container-adds-to-containers",
        pod(ctr(requests=cpu("1")), init=[ctr("s", requests=cpu("1"), sidecar=True)]),
        {},
        {"cpu": 2000},
    ),
    (
        "multiple-restartable-init-containers-max(5,3+2+1+1)",
        pod(ctr(requests=cpu("1")), init=[SIDECAR_CHAIN[0], SIDECAR_CHAIN[1], SIDECAR_CHAIN[2], SIDECAR_CHAIN[4]]),
        {},
        {"cpu": 7000},
    ),
    (
        "init-container-counts-only-sidecars-started-before-it(5+1+2)",
        pod(ctr(requests=cpu("1")), init=SIDECAR_CHAIN),
        {},
        {"cpu": 8000},
    ),
    (
        "restartable-init-init-and-regular(10+200)",
        pod(
            ctr(requests=cpu("100")),
            init=[ctr("s", requests=cpu("10"), sidecar=True), ctr("i", requests=cpu("200"))],
        ),
        {},
        {"cpu": 210000},
    ),
    (
        "sum-exact-before-rounding-to-millicores",
        pod(ctr("a", requests=cpu("500u")), ctr("b", requests=cpu("500u"))),
        {},
        {"cpu": 1},
    ),
    (
        "natural-units-per-resource",
        pod(
            ctr(
                requests={
                    "cpu": "1.5",
                    "memory": "1.5Gi",
                    "ephemeral-storage": "1G",
                    "nvidia.com/gpu": 2,
                    "hugepages-2Mi": "4Mi",
                }
            )
        ),
        {},
        {"cpu": 1500, "memory": 1536 * Mi, "ephemeral-storage": 10**9, "nvidia.com/gpu": 2, "hugepages-2Mi": 4 * Mi},
    ),
    ("explicit-zero-request-is-kept", pod(ctr(requests=cpu("0"))), {}, {"cpu": 0}),
    (
        "converted-once-rounding-away-from-zero",
        pod(ctr(requests={"cpu": "1500u", "memory": "0.5"})),
        {},
        {"cpu": 2, "memory": 1},
    ),
    ("no-requests-no-keys", pod(ctr(), ctr("d")), {}, {}),
    (
        "pod-level-requests-replace-aggregate-per-resource",
        pod(
            ctr(requests={"cpu": "1", "memory": "100Mi"}),
            resources={"requests": {"cpu": "2"}},
        ),
        {},
        {"cpu": 2000, "memory": 100 * Mi},
    ),
    (
        "pod-level-requests-then-overhead",
        pod(ctr(requests=cpu("1")), resources={"requests": cpu("2")}, overhead=cpu("250m")),
        {},
        {"cpu": 2250},
    ),
    (
        "pod-level-unsupported-resource-ignored",
        pod(ctr(requests={"ephemeral-storage": "1Gi"}), resources={"requests": {"ephemeral-storage": "5Gi"}}),
        {},
        {"ephemeral-storage": Gi},
    ),
    (
        "pod-level-feature-gate-off",
        pod(ctr(requests=cpu("1")), resources={"requests": cpu("2")}),
        {"pod_level_resources": False},
        {"cpu": 1000},
    ),
    (
        "non-missing-defaults-per-container",
        pod(ctr("a"), ctr("b", requests=cpu("0"))),
        {"non_missing": NON_ZERO_DEFAULTS},
        {"cpu": 100, "memory": 400 * Mi},
    ),
    (
        "non-missing-defaults-apply-to-init-and-sidecars",
        pod(ctr(requests=cpu("50m")), init=[ctr("s", sidecar=True), ctr("i")]),
        {"non_missing": NON_ZERO_DEFAULTS},
        {"cpu": 200, "memory": 400 * Mi},
    ),
]


@pytest.mark.parametrize(
    ("case", "options", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_pod_requests(case: JSON, options: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_requests(case, **options) == expected


def _resized(*, spec: str, allocated: str | None = None, actual: str | None = None, infeasible: bool = False) -> JSON:
    status: JSON = {"name": "c"}
    if allocated is not None:
        status["allocatedResources"] = cpu(allocated)
    if actual is not None:
        status["resources"] = {"requests": cpu(actual)}
    conditions = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}] if infeasible else []
    return pod(ctr(requests=cpu(spec)), status={"containerStatuses": [status], "conditions": conditions})


STATUS_CASES = [
    ("resized-up-not-yet-allocated-uses-spec", _resized(spec="4", allocated="2"), True, 4000),
    ("resized-down-keeps-allocated-until-actuated", _resized(spec="1", allocated="2", actual="2"), True, 2000),
    ("resized-infeasible-ignores-spec", _resized(spec="4", allocated="2", infeasible=True), True, 2000),
    ("resized-infeasible-but-status-not-used", _resized(spec="4", allocated="2", infeasible=True), False, 4000),
    (
        "aggregate-is-max-of-sums-not-sum-of-maxes",
        pod(
            ctr("c1", requests=cpu("1")),
            ctr("c2", requests=cpu("2")),
            status={"containerStatuses": [
                {"name": "c1", "allocatedResources": cpu("2")},
                {"name": "c2", "allocatedResources": cpu("1")},
            ]},
        ),
        True,
        3000,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "use_status", "milli_cpu"), [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES]
)
def test_pod_requests_with_status_resources(case: JSON, use_status: bool, milli_cpu: int) -> None:
    assert pod_requests(case, use_status_resources=use_status) == {"cpu": milli_cpu}


def _limits(*specs: tuple[str, Mapping[str, Any] | None, bool]) -> list[JSON]:
    return [ctr(name, limits=limits, sidecar=sidecar) for name, limits, sidecar in specs]


LIMIT_CASES: list[tuple[str, JSON, dict[str, Any], dict[str, int]]] = [
    ("larger-init-container-wins", pod(ctr(limits=cpu("1")), init=[ctr("i", limits=cpu("4"))]), {}, {"cpu": 4000}),
    (
        "containers-summed-beat-init",
        pod(ctr("a", limits=cpu("2")), ctr("b", limits=cpu("3")), init=[ctr("i", limits=cpu("2"))]),
        {},
        {"cpu": 5000},
    ),
    (
        "overhead-excluded",
        pod(ctr("a", limits=cpu("2")), ctr("b", limits=cpu("3")), overhead=cpu("1")),
        {"exclude_overhead": True},
        {"cpu": 5000},
    ),
    (
        "overhead-added-only-to-non-zero-limits",
        pod(ctr("a", limits=cpu("2")), ctr("b", limits=cpu("3")), overhead={"cpu": "1", "memory": "1Gi"}),
        {},
        {"cpu": 6000},
    ),
    ("no-limited-containers-no-limits", pod(ctr()), {}, {}),
    ("overhead-not-added-to-explicit-zero-limit", pod(ctr(limits=cpu("0")), overhead=cpu("1")), {}, {"cpu": 0}),
    (
        "one-limited-one-unlimited-container",
        pod(ctr("a", limits={"cpu": "2", "memory": "2Gi"}), ctr("b")),
        {},
        {"cpu": 2000, "memory": 2 * Gi},
    ),
    (
        "one-limited-one-unlimited-init-container",
        pod(
            ctr(limits={"cpu": "1", "memory": "1Gi"}),
            init=_limits(("i1", {"cpu": "2", "memory": "2Gi"}, False), ("i2", None, False)),
        ),
        {},
        {"cpu": 2000, "memory": 2 * Gi},
    ),
    (
        "init-container-counts-only-sidecars-started-before-it(5+1+2)",
        pod(
            ctr(limits=cpu("1")),
            init=_limits(
                ("init-1", cpu("5"), False),
                ("s1", cpu("1"), True),
                ("s2", cpu("2"), True),
                ("init-2", cpu("5"), False),
                ("s3", cpu("3"), True),
            ),
        ),
        {},
        {"cpu": 8000},
    ),
    (
        "pod-level-limits-replace-aggregate",
        pod(ctr(limits={"cpu": "1", "memory": "1Gi"}), resources={"limits": cpu("4")}),
        {},
        {"cpu": 4000, "memory": Gi},
    ),
    (
        "pod-level-limits-plus-overhead",
        pod(ctr(), resources={"limits": cpu("4")}, overhead=cpu("1")),
        {},
        {"cpu": 5000},
    ),
    (
        "pod-level-feature-gate-off",
        pod(ctr(limits=cpu("1")), resources={"limits": cpu("4")}),
        {"pod_level_resources": False},
        {"cpu": 1000},
    ),
    (
        "pod-scaled-up-spec-above-actuated",
        pod(
            ctr(limits={"memory": "2Gi"}),
            status={"containerStatuses": [{"name": "c", "resources": {"limits": {"memory": "1Gi"}}}]},
        ),
        {"use_status_resources": True},
        {"memory": 2 * Gi},
    ),
    (
        "pod-scaled-down-actuated-above-spec",
        pod(
            ctr(limits={"memory": "1Gi"}),
            status={"containerStatuses": [{"name": "c", "resources": {"limits": {"memory": "2Gi"}}}]},
        ),
        {"use_status_resources": True},
        {"memory": 2 * Gi},
    ),
]


@pytest.mark.parametrize(("case", "options", "expected"), [c[1:] for c in LIMIT_CASES], ids=[c[0] for c in LIMIT_CASES])
def test_pod_limits(case: JSON, options: dict[str, Any], expected: dict[str, int]) -> None:
    assert pod_limits(case, **options) == expected


DEFAULT_PAIR = (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST)

# NodeInfo.NonZeroRequested: (milli_cpu, memory).
NONZERO_CASES: list[tuple[str, JSON, dict[str, Any], tuple[int, int]]] = [
    ("no-requests-count-100m-and-200Mi", pod(ctr()), {}, DEFAULT_PAIR),
    ("defaults-per-container", pod(ctr("a"), ctr("b")), {}, (200, 400 * Mi)),
    ("cpu-set-memory-defaulted", pod(ctr(requests=cpu("500m"))), {}, (500, 200 * Mi)),
    ("explicit-zero-is-not-missing", pod(ctr(requests=cpu("0"))), {}, (0, 200 * Mi)),
    (
        "init-container-defaults-then-max",
        pod(ctr(requests={"cpu": "1", "memory": "1Gi"}), init=[ctr("i")]),
        {},
        (1000, Gi),
    ),
    (
        "sidecar-and-init-defaulted-in-the-sidecar-formula",
        pod(ctr(requests=cpu("50m")), init=[ctr("s", sidecar=True), ctr("i")]),
        {},
        (200, 400 * Mi),
    ),
    ("overhead-added-to-defaults", pod(ctr(), overhead=cpu("10m")), {}, (110, 200 * Mi)),
    (
        "pod-level-requests-default-only-missing-resources",
        pod(ctr("a"), ctr("b"), resources={"requests": cpu("1")}),
        {},
        (1000, 400 * Mi),
    ),
    (
        "pod-level-requests-memory-present-in-containers",
        pod(ctr("a", requests={"memory": "1Gi"}), ctr("b"), resources={"requests": cpu("1")}),
        {},
        (1000, Gi),
    ),
    (
        "pod-level-requests-no-cpu-default-when-some-container-sets-cpu",
        pod(ctr("a", requests=cpu("1")), ctr("b"), resources={"requests": {"memory": "1Gi"}}),
        {},
        (1000, Gi),
    ),
    (
        "pod-level-requests-overhead-counts-as-present",
        pod(ctr(), resources={"requests": cpu("1")}, overhead={"memory": "64Mi"}),
        {},
        (1000, 64 * Mi),
    ),
    (
        "pod-level-feature-gate-off-defaults-every-container",
        pod(ctr("a"), ctr("b"), resources={"requests": cpu("1")}),
        {"pod_level_resources": False},
        (200, 400 * Mi),
    ),
]


@pytest.mark.parametrize(
    ("case", "options", "expected"), [c[1:] for c in NONZERO_CASES], ids=[c[0] for c in NONZERO_CASES]
)
def test_pod_nonzero_requests(case: JSON, options: dict[str, Any], expected: tuple[int, int]) -> None:
    assert pod_nonzero_requests(case, **options) == expected


def test_scorer_non_missing_defaults_ignore_pod_level_presence() -> None:
    """resource_allocation.go: the scorer always passes both defaults; pod-level values still override."""
    case = pod(ctr("a"), ctr("b"), resources={"requests": cpu("1")})
    assert pod_requests(case, non_missing=NON_ZERO_DEFAULTS) == {"cpu": 1000, "memory": 400 * Mi}
    assert dict(NON_ZERO_DEFAULTS) == {"cpu": 100, "memory": 200 * 1024 * 1024}


GET_NONZERO_CASES: list[tuple[str, Mapping[str, Any] | None, tuple[int, int]]] = [
    ("nil-list-is-zero", None, (0, 0)),
    ("empty-list-gets-defaults", {}, DEFAULT_PAIR),
    ("explicit-zero-kept", {"cpu": "0", "memory": "0"}, (0, 0)),
    ("set-values-used", {"cpu": "250m", "memory": "1Gi"}, (250, Gi)),
]


@pytest.mark.parametrize(
    ("requests", "expected"), [c[1:] for c in GET_NONZERO_CASES], ids=[c[0] for c in GET_NONZERO_CASES]
)
def test_get_nonzero_requests(requests: Mapping[str, Any] | None, expected: tuple[int, int]) -> None:
    assert get_nonzero_requests(requests) == expected


def test_pod_level_set_predicates() -> None:
    assert not is_pod_level_requests_set(pod(ctr()))
    assert not is_pod_level_requests_set(pod(ctr(), resources={"requests": {"ephemeral-storage": "1Gi"}}))
    assert is_pod_level_requests_set(pod(ctr(), resources={"requests": {"hugepages-1Gi": "1Gi"}}))
    assert is_pod_level_resources_set(pod(ctr(), resources={"limits": cpu("1")}))
    assert not is_pod_level_requests_set(pod(ctr(), resources={"limits": cpu("1")}))


def test_invalid_quantity_in_pod_raises() -> None:
    with pytest.raises(QuantityError, match="1Gb"):
        pod_requests(pod(ctr(requests={"memory": "1Gb"})))


G, B, BE = QOSClass.GUARANTEED, QOSClass.BURSTABLE, QOSClass.BEST_EFFORT
GUARANTEED_RES = {"cpu": "100m", "memory": "100Mi"}

QOS_CASES: list[tuple[str, JSON, dict[str, Any], QOSClass]] = [
    ("no-resources-best-effort", pod(ctr(), ctr("d")), {}, BE),
    ("only-non-qos-resources-best-effort", pod(ctr(requests={"ephemeral-storage": "1Gi", "x.io/y": 1})), {}, BE),
    ("requests-equal-limits-guaranteed", pod(ctr(requests=GUARANTEED_RES, limits=GUARANTEED_RES)), {}, G),
    (
        "all-containers-guaranteed",
        pod(ctr("a", requests=GUARANTEED_RES, limits=GUARANTEED_RES), ctr("b", limits={"cpu": "1", "memory": "1Gi"})),
        {},
        G,
    ),
    ("limits-only-requests-defaulted-guaranteed", pod(ctr(limits=GUARANTEED_RES)), {}, G),
    ("requests-only-burstable", pod(ctr(requests=GUARANTEED_RES)), {}, B),
    ("requests-below-limits-burstable", pod(ctr(requests=GUARANTEED_RES, limits={"cpu": "1", "memory": "1Gi"})), {}, B),
    ("cpu-guaranteed-memory-unset-burstable", pod(ctr(requests=cpu("1"), limits=cpu("1"))), {}, B),
    ("guaranteed-and-best-effort-containers-burstable", pod(ctr("a", limits=GUARANTEED_RES), ctr("b")), {}, B),
    ("best-effort-init-with-guaranteed-containers-burstable", pod(ctr(limits=GUARANTEED_RES), init=[ctr("i")]), {}, B),
    ("guaranteed-init-and-containers", pod(ctr(limits=GUARANTEED_RES), init=[ctr("i", limits=GUARANTEED_RES)]), {}, G),
    (
        "sidecar-counts-like-init",
        pod(ctr(limits=GUARANTEED_RES), init=[ctr("s", requests=cpu("1"), sidecar=True)]),
        {},
        B,
    ),
    (
        "extended-and-hugepages-ignored",
        pod(ctr(limits={**GUARANTEED_RES, "hugepages-2Mi": "4Mi", "x.io/gpu": 1}, requests={"x.io/gpu": 1})),
        {},
        G,
    ),
    ("zero-limits-best-effort", pod(ctr(limits={"cpu": "0", "memory": "0"})), {}, BE),
    (
        "status-qos-class-is-ignored",
        pod(ctr(limits=GUARANTEED_RES), status={"qosClass": "BestEffort"}),
        {},
        G,
    ),
    (
        "pod-level-guaranteed-overrides-best-effort-containers",
        pod(ctr(), resources={"requests": GUARANTEED_RES, "limits": GUARANTEED_RES}),
        {},
        G,
    ),
    ("pod-level-limits-only-requests-default-to-limits", pod(ctr(), resources={"limits": GUARANTEED_RES}), {}, G),
    (
        "pod-level-requests-default-to-container-aggregate",
        pod(ctr(requests={"cpu": "50m", "memory": "50Mi"}), resources={"limits": GUARANTEED_RES}),
        {},
        B,
    ),
    (
        "pod-level-requests-only-burstable",
        pod(ctr(limits=GUARANTEED_RES), resources={"requests": GUARANTEED_RES}),
        {},
        B,
    ),
    ("pod-level-cpu-only-burstable", pod(ctr(), resources={"limits": cpu("1")}), {}, B),
    (
        # defaultHugePagePodLimits adds a pod-level hugepages limit, which makes defaultPodRequests copy the
        # containers' cpu request to the pod level: cpu request without limit is Burstable
        "pod-level-hugepage-limit-defaulting-triggers-request-defaulting",
        pod(
            ctr(requests=cpu("100m"), limits={"hugepages-2Mi": "2Mi"}),
            resources={"requests": {"hugepages-1Gi": "1Gi"}},
        ),
        {},
        B,
    ),
    (
        "pod-level-hugepage-request-only-best-effort",
        pod(ctr(requests=cpu("100m")), resources={"requests": {"hugepages-1Gi": "1Gi"}}),
        {},
        BE,
    ),
    ("pod-level-empty-resources-best-effort", pod(ctr(limits=GUARANTEED_RES), resources={}), {}, BE),
    (
        "pod-level-feature-gate-off-uses-containers",
        pod(ctr(limits=GUARANTEED_RES), resources={"requests": cpu("1")}),
        {"pod_level_resources": False},
        G,
    ),
]


@pytest.mark.parametrize(("case", "options", "expected"), [c[1:] for c in QOS_CASES], ids=[c[0] for c in QOS_CASES])
def test_pod_qos_class(case: JSON, options: dict[str, Any], expected: QOSClass) -> None:
    assert pod_qos_class(case, **options) is expected


def test_helpers_do_not_mutate_the_pod() -> None:
    import copy

    case = pod(ctr(limits=GUARANTEED_RES), init=[ctr("i")], resources={"limits": GUARANTEED_RES}, overhead=cpu("1"))
    before = copy.deepcopy(case)
    pod_requests(case)
    pod_limits(case)
    pod_nonzero_requests(case)
    pod_qos_class(case)
    assert case == before
