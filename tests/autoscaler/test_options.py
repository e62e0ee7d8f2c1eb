"""AutoscalerOptions: cluster-autoscaler's flag names and defaults (config/flags/flags.go) and Go flag errors."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.autoscaler.options import AutoscalerOptions, OptionsError

DEFAULTS = [
    ("scan_interval", 10.0),
    ("expander", "least-waste"),
    ("max_nodes_total", 0),
    ("balance_similar_node_groups", False),
    ("scale_down_enabled", True),
    ("scale_down_delay_after_add", 600.0),
    ("scale_down_delay_after_delete", 0.0),
    ("scale_down_delay_after_failure", 180.0),
    ("scale_down_unneeded_time", 600.0),
    ("scale_down_unready_time", 1200.0),
    ("scale_down_utilization_threshold", 0.5),
    ("scale_down_gpu_utilization_threshold", 0.5),
    ("max_empty_bulk_delete", 10),
    ("max_graceful_termination_sec", 600),
    ("skip_nodes_with_system_pods", True),
    ("skip_nodes_with_local_storage", True),
    ("skip_nodes_with_custom_controller_pods", True),
    ("new_pod_scale_up_delay", 0.0),
    ("max_node_provision_time", 900.0),
    ("max_pod_eviction_time", 120.0),
    ("expendable_pods_priority_cutoff", -10),
    ("status_config_map_name", "cluster-autoscaler-status"),
]


@pytest.mark.parametrize(("field", "value"), DEFAULTS, ids=[f"flags.go default {f}" for f, _ in DEFAULTS])
def test_defaults(field: str, value: Any) -> None:
    assert getattr(AutoscalerOptions(), field) == value


def test_from_flags_durations_and_types() -> None:
    o = AutoscalerOptions.from_flags(
        {
            "scan-interval": "1m30s",
            "scale-down-unneeded-time": 60,
            "expander": "priority,random",
            "balance-similar-node-groups": "true",
            "max-nodes-total": "7",
        }
    )
    assert (o.scan_interval, o.scale_down_unneeded_time, o.max_nodes_total) == (90.0, 60.0, 7)
    assert o.balance_similar_node_groups is True
    assert o.expanders() == ("priority", "random")


def test_from_args_forms() -> None:
    o = AutoscalerOptions.from_args(
        [
            "--scan-interval=20s",
            "--expander",
            "most-pods",
            "--scale-down-enabled=false",
            "--balance-similar-node-groups",
        ]
    )
    assert (o.scan_interval, o.expander, o.scale_down_enabled, o.balance_similar_node_groups) == (
        20.0,
        "most-pods",
        False,
        True,
    )


ERRORS = [
    ({"scan-interval": "ten"}, 'invalid value "ten" for flag -scan-interval: parse error'),
    ({"no-such-flag": "1"}, "flag provided but not defined: -no-such-flag"),
    ({"max-nodes-total": "1.5"}, 'invalid value "1.5" for flag -max-nodes-total: parse error'),
    ({"scale-down-enabled": "yes"}, 'invalid value "yes" for flag -scale-down-enabled: parse error'),
    (
        {"expander": "grpc"},
        "Expander grpc not supported, available values: random, most-pods, least-waste, price, priority",
    ),
]


@pytest.mark.parametrize(
    ("flags", "message"),
    ERRORS,
    ids=["go flag parse error", "undefined flag", "int flag", "bool flag", "unknown expander"],
)
def test_errors_are_one_line(flags: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionsError) as info:
        AutoscalerOptions.from_flags(flags)
    assert str(info.value) == message


def test_args_missing_value() -> None:
    with pytest.raises(OptionsError, match="flag needs an argument: -scan-interval"):
        AutoscalerOptions.from_args(["--scan-interval"])
