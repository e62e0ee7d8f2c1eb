"""DRA CEL selectors (api/dra/cel.py) against upstream's staging/src/k8s.io/dynamic-resource-allocation/cel
compile_test.go ``testcases`` (each case named as upstream names it; the features are v1.37's defaults:
DRAConsumableCapacity on, DRAListTypeAttributes off), plus the issue's selectors."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.crd.cel_semver import parse_semver
from kubeplane.api.dra import cel
from kubeplane.api.dra.cel import (
    CEL_SELECTOR_EXPRESSION_MAX_COST,
    DeviceView,
    SelectorCompileError,
    SelectorRuntimeError,
    compile_selector,
)

DRA = "dra.example.com"
EXPENSIVE = (
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
    ".all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7,"
    " 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))"
)
ALL = """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"""

# name: (expression, driver, attributes, capacity, expectation); expectation is True/False (match),
# ("compile", text) or ("match", text): the error contains text, as upstream's strings.Contains check.
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], Any]] = {
    "true": ("true", "", {}, {}, True),
    "false": ("false", "", {}, {}, False),
    "syntax-error": ("?!", "", {}, {}, ("compile", "Syntax error")),
    "type-error": ("1", "", {}, {}, ("compile", "must evaluate to bool or the unknown type, not int")),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        ("match", "no such key: noSuchAttr"),
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        ("match", "no such key: noSuchAttr"),
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", {}, {}, False),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        "",
        {"dra.example.com/something": {"bool": True}},
        {},
        True,
    ),
    "empty-driver-name": ('device.driver == ""', "", {}, {}, True),
    "real-driver-name": ('device.driver == "dra.example.com"', DRA, {}, {}, True),
    "driver-name-qualifier": ('device.attributes["dra.example.com"].name', DRA, {"name": {"bool": True}}, {}, True),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        DRA,
        {"name": {"bool": True}},
        {},
        True,
    ),
    "bind": ('cel.bind(dra, device.attributes["dra.example.com"], dra.name)', DRA, {"name": {"bool": True}}, {}, True),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        DRA,
        {"other.example.com/name": {"bool": True}},
        {},
        True,
    ),
    "bool": ('device.attributes["dra.example.com"].name', DRA, {"name": {"bool": True}}, {}, True),
    "int": ('device.attributes["dra.example.com"].name > 0', DRA, {"name": {"int": 1}}, {}, True),
    "string": ('device.attributes["dra.example.com"].name == "fish"', DRA, {"name": {"string": "fish"}}, {}, True),
    "macro-exists-on-int": (
        'device.attributes["dra.example.com"].name.exists(x, x > 0)',
        DRA,
        {"name": {"int": 1}},
        {},
        ("match", "got 'types.Int', expected iterable type"),
    ),
    "macro-exists-on-bool": (
        'device.attributes["dra.example.com"].name.exists(x, x == true)',
        DRA,
        {"name": {"bool": True}},
        {},
        ("match", "got 'types.Bool', expected iterable type"),
    ),
    "macro-exists-on-string": (
        'device.attributes["dra.example.com"].name.exists(x, x == "fish")',
        DRA,
        {"name": {"string": "fish"}},
        {},
        ("match", "got 'types.String', expected iterable type"),
    ),
    "macro-exists-on-version": (
        'device.attributes["dra.example.com"].name.exists(x, x.isGreaterThan(semver("0.0.1")))',
        DRA,
        {"name": {"version": "1.0.0"}},
        {},
        ("match", "got 'cel.Semver', expected iterable type"),
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        DRA,
        {"name": {"version": "1.0.0"}},
        {},
        True,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        DRA,
        {"name": {"version": "1.0.0"}},
        {},
        True,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        {},
        {"name": {"value": "1Mi"}},
        True,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        {},
        {"name": {"value": "1Mi"}},
        True,
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || '
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "",
        {},
        {},
        True,
    ),
    "all": (
        ALL,
        DRA,
        {"bool": {"bool": True}, "int": {"int": 1}, "string": {"string": "fish"}, "version": {"version": "1.0.0"}},
        {"quantity": {"value": "1Mi"}},
        True,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && '
        'device.attributes["dra.example.com"].c',
        DRA,
        {"a": {"bool": True}, "b": {"bool": True}, "c": {"bool": True}},
        {},
        True,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        DRA,
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        DRA,
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        DRA,
        {"services": {"string": "some_example_value"}},
        {},
        True,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        DRA,
        {"services": {"string": "asymetric"}},
        {},
        True,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        DRA,
        {},
        {"memory": {"value": "1Mi"}},
        True,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        DRA,
        {},
        {"memory": {"value": "1Mi"}},
        True,
    ),
    "expensive": (EXPENSIVE, DRA, {}, {}, ("match", "actual cost limit exceeded")),
    "allow_multiple_allocations_default": ("device.allowMultipleAllocations == false", DRA, {}, {}, True),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_compile_test_cases(name: str) -> None:
    """compile_test.go TestCEL: compile errors, match results and match errors (error texts contained)."""
    expression, driver, attributes, capacity, expect = CASES[name]
    device = DeviceView(driver, attributes, capacity)
    if isinstance(expect, tuple) and expect[0] == "compile":
        with pytest.raises(SelectorCompileError) as exc:
            compile_selector(expression)
        assert expect[1] in exc.value.message
        return
    compiled = compile_selector(expression)
    if isinstance(expect, tuple):
        # cel-python interprets about 4,000 cost units a second: "expensive" meets a lower limit (same message)
        limit = 10_000 if name == "expensive" else CEL_SELECTOR_EXPRESSION_MAX_COST
        with pytest.raises(SelectorRuntimeError) as err:
            compiled.evaluate(device, cost_limit=limit)
        assert expect[1] in err.value.message
        return
    assert compiled.evaluate(device) is expect


def test_allow_multiple_allocations_true() -> None:
    """compile_test.go allow_multiple_allocations: the consumable-capacity field (on in v1.37)."""
    compiled = compile_selector("device.allowMultipleAllocations == true")
    assert compiled.evaluate(DeviceView(DRA, allow_multiple_allocations=True)) is True
    assert compiled.evaluate(DeviceView(DRA)) is False


def test_expensive_estimate_exceeds_the_limit() -> None:
    """compile_test.go expensive: the worst-case estimate is beyond CELSelectorExpressionMaxCost (upstream's
    85555551), so admission refuses it; an ordinary selector's estimate is small."""
    assert compile_selector(EXPENSIVE).max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST
    assert compile_selector('device.attributes["gpu.example.com"].model == "A100"').max_cost < 100


def test_compile_error_texts_as_the_api_shows_them() -> None:
    """cel-go issues.String() after ``compilation failed: ``: position, source line, caret."""
    with pytest.raises(SelectorCompileError) as exc:
        compile_selector("device.foo")
    assert exc.value.message == (
        "compilation failed: ERROR: <input>:1:7: undefined field 'foo'\n | device.foo\n | ......^"
    )
    with pytest.raises(SelectorCompileError) as exc:
        compile_selector("foo == 1")
    assert exc.value.message.startswith(
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')"
    )
    with pytest.raises(SelectorCompileError) as exc:
        compile_selector("device.driver")
    assert exc.value.message == "must evaluate to bool or the unknown type, not string"


def test_bind_and_comprehension_variables_are_declared() -> None:
    compile_selector('cel.bind(d, device.attributes["x"], d.a == 1)')
    compile_selector('device.attributes["x"].all(k, k != "")')
    with pytest.raises(SelectorCompileError):
        compile_selector('cel.bind(d, device.attributes["x"], e.a == 1)')


def test_compiled_selectors_and_errors_are_cached_by_text() -> None:
    """cache.go: one compilation per expression text."""
    text = 'device.attributes["cache.example.com"].model == "X"'
    assert compile_selector(text) is compile_selector(text)
    before = cel._compile.cache_info().hits
    for _ in range(2):
        with pytest.raises(SelectorCompileError):
            compile_selector("?!cached")
    assert cel._compile.cache_info().hits >= before + 1


# -- the issue's selectors ------------------------------------------------------------------------------------

GPU = "gpu.example.com"


def _gpu(model: str, memory: str = "80Gi", version: str = "1.2.0") -> DeviceView:
    return DeviceView.from_api(
        GPU,
        {
            "name": "gpu-0",
            "attributes": {"model": {"string": model}, "index": {"int": 0}, "driverVersion": {"version": version}},
            "capacity": {"memory": {"value": memory}},
        },
    )


def test_issue_model_selector() -> None:
    """The acceptance's ResourceClaimTemplate selector: short attribute names are in the driver's domain."""
    compiled = compile_selector('device.attributes["gpu.example.com"].model == "A100"')
    assert compiled.evaluate(_gpu("A100")) is True
    assert compiled.evaluate(_gpu("T4")) is False


def test_issue_quantity_selector() -> None:
    compiled = compile_selector('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0')
    assert compiled.evaluate(_gpu("A100", "80Gi")) is True
    assert compiled.evaluate(_gpu("A100", "40Gi")) is True
    assert compiled.evaluate(_gpu("T4", "16Gi")) is False


def test_semver_selector() -> None:
    compiled = compile_selector('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.10.0"))')
    assert compiled.evaluate(_gpu("A100", version="1.2.0")) is True  # semver order, not string order
    assert compiled.evaluate(_gpu("A100", version="1.10.0")) is False


def test_plain_python_attribute_values() -> None:
    device = DeviceView(GPU, {"model": "A100", "count": 2, "ok": True, "v": parse_semver("2.0.0")}, {"mem": "1Gi"})
    expr = 'device.attributes["gpu.example.com"].count == 2 && device.attributes["gpu.example.com"].ok'
    assert compile_selector(expr).evaluate(device) is True
    assert compile_selector('device.capacity["gpu.example.com"].mem == quantity("1024Mi")').evaluate(device)


def test_bad_version_attribute_is_a_runtime_error() -> None:
    """getAttributeValue: ``attribute <name>: parse semantic version: ...``."""
    with pytest.raises(SelectorRuntimeError) as err:
        compile_selector("true").evaluate(_gpu("A100", version="1.x"))
    assert err.value.message.startswith("attribute driverVersion: parse semantic version: ")


def test_non_bool_result_is_a_runtime_error() -> None:
    """DeviceMatches: ``CEL result of type ... could not be converted to bool``."""
    with pytest.raises(SelectorRuntimeError) as err:
        compile_selector('device.attributes["gpu.example.com"].index').evaluate(_gpu("A100"))
    assert err.value.message.startswith("CEL result of type int could not be converted to bool")


def test_runtime_cost_is_bounded_by_the_limit() -> None:
    compiled = compile_selector('device.attributes["gpu.example.com"].model == "A100"')
    assert 0 < compiled.cost(_gpu("A100")) < 10
    with pytest.raises(SelectorRuntimeError) as err:
        compiled.evaluate(_gpu("A100"), cost_limit=2)
    assert err.value.message == "operation cancelled: actual cost limit exceeded"


def test_verdicts_are_memoised_on_the_device() -> None:
    """A view is immutable: a selector runs once per device (then answered from the memo), errors included."""
    compiled = compile_selector('device.attributes["gpu.example.com"].model == "A100"')
    device = _gpu("A100")
    assert compiled.evaluate(device) is True
    assert device.memo == {(compiled.expression, CEL_SELECTOR_EXPRESSION_MAX_COST): True}
    failing = compile_selector('device.attributes["gpu.example.com"].nothing == 1')
    for _ in range(2):
        with pytest.raises(SelectorRuntimeError, match="no such key: nothing"):
            failing.evaluate(device)
