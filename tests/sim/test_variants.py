"""``kubeplane sim compare --autoscaler A --autoscaler B`` / ``--descheduler``: variant files (kubeplane.sim.variants)
replace the scenario's section, are labelled by file name, fail in one line before any run, and give one
side-by-side report (least-waste and price differ in cost on the autoscaling example)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.sim import Scenario
from kubeplane.sim.scenario import ScenarioError
from kubeplane.sim.variants import apply_variant, load_variant

SIM = Path(__file__).resolve().parents[2] / "examples" / "sim"


def _write(path: Path, doc: object) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_variant_replaces_the_section_whole(tmp_path: Path) -> None:
    variant = load_variant(_write(tmp_path / "fast.yaml", {"autoscaler": {"expander": "price"}}), "autoscaler")
    applied = apply_variant(Scenario.load(SIM / "autoscaling.yaml"), variant)
    assert (variant.label, applied.autoscaler) == ("fast", {"expander": "price"})  # no merge with the scenario's


def test_a_descheduler_variant_resolves_its_policy_file_next_to_it(tmp_path: Path) -> None:
    scenario = Scenario.load(SIM / "descheduler.yaml")
    assert scenario.descheduler is not None
    policy = yaml.safe_load((SIM / "descheduler.yaml").read_text())["descheduler"]["policy"]
    _write(tmp_path / "policy.yaml", policy)
    path = _write(tmp_path / "every-5m.yaml", {"descheduler": {"policyFile": "policy.yaml", "interval": "5m"}})
    applied = apply_variant(scenario, load_variant(path, "descheduler"))
    assert applied.descheduler is not None
    assert applied.descheduler.interval == 300
    assert applied.descheduler.policy == scenario.descheduler.policy


@pytest.mark.parametrize(
    ("kind", "doc", "message"),
    [
        ("autoscaler", {"expander": "price"}, "expected the section autoscaler:"),
        ("autoscaler", {"autoscaler": {"expander": "price"}, "seed": 2}, "unknown field(s) seed"),
        ("autoscaler", {"autoscaler": ["price"]}, "autoscaler: expected a mapping"),
        ("autoscaler", {"autoscaler": {"expandr": "price"}}, "flag provided but not defined: -expandr"),
        ("autoscaler", {"autoscaler": {"expander": "cheapest"}}, "cheapest"),
        ("descheduler", {"descheduler": {"interval": "1m"}}, "descheduler:"),
    ],
    ids=[
        "no-section",
        "other-fields",
        "not-a-mapping",
        "upstream-flag-provided-but-not-defined",
        "upstream-unknown-expander",
        "descheduler-without-policy",
    ],
)
def test_bad_variants_fail_in_one_line(tmp_path: Path, kind: str, doc: object, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load_variant(_write(tmp_path / "v.yaml", doc), kind)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_autoscaler_variant_needs_node_groups() -> None:
    variant = load_variant(SIM / "expander-price.yaml", "autoscaler")
    with pytest.raises(ScenarioError, match=r"declares no cluster\.nodeGroups"):
        apply_variant(Scenario.load(SIM / "descheduler.yaml"), variant)


def test_compare_least_waste_and_price_differ_in_cost(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = ["sim", "compare", str(SIM / "autoscaling.yaml"), "--autoscaler", str(SIM / "expander-least-waste.yaml"),
            "--autoscaler", str(SIM / "expander-price.yaml"), "--until", "1h10m", "--out", str(out)]  # fmt: skip
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 0, got.output
    doc = json.loads((out / "comparison.json").read_text())
    assert doc["labels"] == ["expander-least-waste", "expander-price"]
    least, price = (doc["summaries"][label] for label in doc["labels"])
    # least-waste gives the midday peak one large node, price five small ones: different cost, one report
    assert least["node_groups"]["large"]["nodes_added"] == 1
    assert price["node_groups"]["large"]["nodes_added"] == 0
    assert least["cost"] != price["cost"]
    report = (out / "report.html").read_text()
    assert '<table class="autoscaling">' in report
    assert "Autoscaler events — expander-price" in report
    assert (out / "expander-price" / "scaling.csv").read_text().startswith("t,group,delta,reason,detail\n")


def test_compare_descheduler_variants(tmp_path: Path) -> None:
    scenario = yaml.safe_load((SIM / "descheduler.yaml").read_text())["descheduler"]
    on = _write(tmp_path / "evicting.yaml", {"descheduler": scenario})
    off = _write(tmp_path / "dry-run.yaml", {"descheduler": {**scenario, "dryRun": True}})
    out = tmp_path / "cmp"
    args = ["sim", "compare", str(SIM / "descheduler.yaml"), "--descheduler", str(on), "--descheduler", str(off),
            "--until", "4m", "--out", str(out)]  # fmt: skip
    got = CliRunner().invoke(app, args)
    assert got.exit_code == 0, got.output
    summaries = json.loads((out / "comparison.json").read_text())["summaries"]
    # RemovePodsViolatingNodeTaints at the 3m pass: the two web pods of node01; dry-run counts, evicts nothing
    assert summaries["evicting"]["descheduler_evictions_by_plugin"] == {"RemovePodsViolatingNodeTaints": 2}
    assert summaries["evicting"]["pods_evicted"] == 2
    assert summaries["dry-run"]["pods_evicted"] == 0
    assert '<table class="descheduler-evictions">' in (out / "report.html").read_text()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--autoscaler", "A"], "give at least two --autoscaler files to compare"),
        (["--autoscaler", "A", "--config", "B"], "give the variants to compare of one kind"),
        ([], "give the variants to compare of one kind"),
    ],
    ids=["one-variant", "two-kinds", "none"],
)
def test_compare_flag_errors(tmp_path: Path, extra: list[str], message: str) -> None:
    paths = [str(tmp_path / a) if a in ("A", "B") else a for a in extra]
    got = CliRunner().invoke(app, ["sim", "compare", str(SIM / "autoscaling.yaml"), *paths])
    assert got.exit_code == 1
    assert f"error: {message}" in got.output


def test_compare_a_bad_variant_fails_before_running(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", {"autoscaler": {"expandr": "price"}})
    args = ["sim", "compare", str(SIM / "autoscaling.yaml"), "--autoscaler", str(bad), "--autoscaler", str(bad)]
    got = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "o")])
    assert got.exit_code == 1
    assert "flag provided but not defined: -expandr" in got.output
    assert not (tmp_path / "o").exists()
