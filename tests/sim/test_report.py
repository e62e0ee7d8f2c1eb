"""Simulation reports: data files round-trip, the HTML report is self-contained, escaped and byte-for-byte
deterministic, and comparisons put every label side by side."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubeplane.sim.report import render_html, write_comparison, write_outputs

IMG = '<img src="data:image/png;base64,'
# pods by phase, cpu/memory allocation, nodes, cumulative counters, extended allocation, other series, CDFs.
FULL_FIGURES = 7


@dataclass
class FakeResult:
    """The runner's SimResult shape, built here so the report does not depend on the runner."""

    scenario: str = "seeds"
    label: str = "run"
    seed: int = 7
    summary: dict[str, Any] = field(default_factory=dict)
    timeseries: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)


def make_result(label: str = "run", factor: int = 1, scenario: str = "seeds", samples: int = 12) -> FakeResult:
    timeseries: list[dict[str, Any]] = []
    for i in range(samples):
        row: dict[str, Any] = {
            "t": i * 60.0,
            "pods_pending": max(0, 10 - i * factor),
            "pods_running": min(i * factor, 8),
            "pods_succeeded": i // 2,
            "pods_failed": i // 6,
            "nodes_ready": 3 if i < 6 else 2,
            "nodes_total": 3,
            "cpu_requested_m": 500 * i,
            "cpu_allocatable_m": 12000,
            "memory_requested_bytes": 2**28 * i,
            "memory_allocatable_bytes": 3 * 2**33,
            "cpu_allocation": 500 * i / 12000,
            "memory_allocation": 2**28 * i / (3 * 2**33),
            "scheduling_attempts": 3 * i * factor,
            "preemptions": i // 4,
            "evictions": i // 5,
            "example.com/foo_allocation": i / (2 * samples),
            "queue_depth": (i * 7) % 5,
        }
        if i == samples - 1:
            row["late_column"] = 1.5  # first seen in the last row: header gets it last, earlier rows empty
        timeseries.append(row)
    pods: list[dict[str, Any]] = []
    for i in range(20):
        scheduled = i % 5 != 4
        pods.append(
            {
                "namespace": "default",
                "name": f"web-{i}",
                "node": f"node-{i % 3}" if scheduled else None,
                "created": float(i),
                "scheduled": i + 0.25 * factor if scheduled else None,
                "running": i + 1.0 if scheduled else None,
                "finished": None,
                "phase": "Running" if scheduled else "Pending",
                "scheduling_latency": 0.25 * factor * (1 + i % 3) if scheduled else None,
                "pending_time": 0.5 * factor * (1 + i % 4) if scheduled else 600.0 - i,
                "reason": None if scheduled else "Unschedulable",
            }
        )
    summary: dict[str, Any] = {
        "sim_seconds": 660.0,
        "wall_seconds": 0.125,
        "pods_created": 20,
        "pods_scheduled": 16 * factor,
        "pods_pending_at_end": 4,
        "preemptions": 2,
        "nodes": 3,
        "event_log_hash": f"sha256:{'ab' * 8}{factor}",
        "scheduling_latency_p99": 0.0123456,
        "cpu_allocation_mean": 0.731,
    }
    return FakeResult(scenario, label, 7, summary, timeseries, pods)


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[FakeResult, dict[str, Path]]:
    result = make_result()
    return result, write_outputs(result, tmp_path_factory.mktemp("single") / "out")


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[FakeResult], dict[str, Path]]:
    results = [make_result("LeastAllocated", 1), make_result("MostAllocated", 2)]
    return results, write_comparison(results, tmp_path_factory.mktemp("cmp"))


def test_write_outputs_writes_the_four_files(single: tuple[FakeResult, dict[str, Path]]) -> None:
    _, paths = single
    assert sorted(paths) == ["pods", "report", "summary", "timeseries"]
    assert {p.name for p in paths.values()} == {"summary.json", "timeseries.csv", "pods.csv", "report.html"}
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths.values())


def test_summary_json_carries_identity_then_summary(single: tuple[FakeResult, dict[str, Path]]) -> None:
    result, paths = single
    doc = json.loads(paths["summary"].read_text(encoding="utf-8"))
    assert list(doc)[:3] == ["scenario", "label", "seed"]
    assert doc == {"scenario": "seeds", "label": "run", "seed": 7, **result.summary}


def test_timeseries_csv_round_trips(single: tuple[FakeResult, dict[str, Path]]) -> None:
    result, paths = single
    header, rows = read_csv(paths["timeseries"])
    assert header == [*result.timeseries[0], "late_column"]
    assert len(rows) == len(result.timeseries)
    for original, row in zip(result.timeseries, rows, strict=True):
        for key, value in original.items():
            assert type(value)(row[key]) == value, key
    assert rows[0]["late_column"] == ""
    assert float(rows[-1]["late_column"]) == 1.5


def test_pods_csv_round_trips_with_none_as_empty(single: tuple[FakeResult, dict[str, Path]]) -> None:
    result, paths = single
    header, rows = read_csv(paths["pods"])
    assert header == list(result.pods[0])
    for original, row in zip(result.pods, rows, strict=True):
        for key, value in original.items():
            if value is None:
                assert row[key] == ""
            elif isinstance(value, float):
                assert float(row[key]) == value
            else:
                assert row[key] == str(value)


def test_report_is_self_contained_and_shows_summary_and_plots(single: tuple[FakeResult, dict[str, Path]]) -> None:
    _, paths = single
    page = paths["report"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>kubeplane simulation — seeds</title>" in page
    assert "<dt>Seed</dt><dd>7</dd>" in page
    assert "<dt>Label</dt><dd>run</dd>" in page
    # summary values, formatted for a person
    for metric, shown in [
        ("sim_seconds", "660"),
        ("wall_seconds", "0.125"),
        ("pods_scheduled", "16"),
        ("event_log_hash", "sha256:abababababababab1"),
        ("scheduling_latency_p99", "0.01235"),
        ("cpu_allocation_mean", "0.731"),
    ]:
        assert re.search(rf'<td class="key">{metric}</td><td[^>]*>{re.escape(shown)}</td>', page), metric
    assert page.count(IMG) == FULL_FIGURES
    for alt in [
        "Pods by phase over time",
        "CPU and memory allocation",
        "Cumulative scheduling attempts, preemptions and evictions",
        "Distribution of scheduling latency and pending time (CDF)",
        "Extended resource allocation",
    ]:
        assert f'alt="{alt}' in page
    assert '<td class="key">Pending: Unschedulable</td><td class="num">4</td>' in page
    # one file: no script, no external stylesheet or image
    assert "<script" not in page
    assert "<link" not in page
    assert not re.search(r'src="(?!data:image/png;base64,)', page)


def test_embedded_images_are_pngs_without_software_or_dates(single: tuple[FakeResult, dict[str, Path]]) -> None:
    import base64

    _, paths = single
    page = paths["report"].read_text(encoding="utf-8")
    for encoded in re.findall(r'data:image/png;base64,([A-Za-z0-9+/=]+)"', page):
        png = base64.b64decode(encoded)
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert b"Software" not in png
        assert b"matplotlib" not in png.lower()
        assert b"tIME" not in png


def test_identical_inputs_give_identical_bytes(
    tmp_path: Path,
    single: tuple[FakeResult, dict[str, Path]],
    comparison: tuple[list[FakeResult], dict[str, Path]],
) -> None:
    again = write_outputs(make_result(), tmp_path / "single")
    assert again.keys() == single[1].keys()
    for key, path in again.items():
        assert path.read_bytes() == single[1][key].read_bytes(), key
    again = write_comparison([make_result("LeastAllocated", 1), make_result("MostAllocated", 2)], tmp_path / "cmp")
    assert again.keys() == comparison[1].keys()
    for key, path in again.items():
        assert path.read_bytes() == comparison[1][key].read_bytes(), key


def _phase_only(pending: list[int]) -> FakeResult:
    return FakeResult(timeseries=[{"t": float(i), "pods_pending": n} for i, n in enumerate(pending)])


def test_different_data_gives_different_plots() -> None:
    """Guards the determinism test against a report that ignores its input."""
    a = render_html([_phase_only([3, 2, 1, 0])])
    b = render_html([_phase_only([3, 3, 3, 3])])
    assert a.count(IMG) == b.count(IMG) == 1
    assert re.findall(r'base64,([^"]+)"', a) != re.findall(r'base64,([^"]+)"', b)


def test_comparison_puts_labels_side_by_side(comparison: tuple[list[FakeResult], dict[str, Path]]) -> None:
    results, paths = comparison
    page = paths["report"].read_text(encoding="utf-8")
    assert "<th>metric</th><th>LeastAllocated</th><th>MostAllocated</th>" in page
    assert "<dt>Labels</dt><dd>LeastAllocated, MostAllocated</dd>" in page
    assert re.search(r'<td class="key">pods_scheduled</td><td class="num">16</td><td class="num">32</td>', page)
    assert page.count(IMG) == FULL_FIGURES

    doc = json.loads(paths["comparison_json"].read_text(encoding="utf-8"))
    assert doc["labels"] == ["LeastAllocated", "MostAllocated"]
    assert doc["seeds"] == {"LeastAllocated": 7, "MostAllocated": 7}
    for result in results:
        assert doc["summaries"][result.label] == {
            "scenario": "seeds",
            "label": result.label,
            "seed": 7,
            **result.summary,
        }

    header, rows = read_csv(paths["comparison_csv"])
    assert header == ["metric", "LeastAllocated", "MostAllocated"]
    by_metric = {row["metric"]: row for row in rows}
    assert by_metric["pods_scheduled"] == {"metric": "pods_scheduled", "LeastAllocated": "16", "MostAllocated": "32"}
    assert [row["metric"] for row in rows][:3] == ["scenario", "label", "seed"]


def test_comparison_writes_each_runs_data_in_its_own_directory(
    comparison: tuple[list[FakeResult], dict[str, Path]],
) -> None:
    results, paths = comparison
    for result in results:
        for name in ("summary", "timeseries", "pods"):
            path = paths[f"{result.label}/{name}"]
            assert path.parent.name == result.label
            assert path.is_file()
        _, rows = read_csv(paths[f"{result.label}/timeseries"])
        assert [float(r["scheduling_attempts"]) for r in rows] == [
            float(r["scheduling_attempts"]) for r in result.timeseries
        ]
    assert not any(p.name == "report.html" for k, p in paths.items() if "/" in k)


def test_repeated_and_unsafe_labels_stay_distinct(tmp_path: Path) -> None:
    results = [FakeResult(label="a/b"), FakeResult(label="a/b"), FakeResult(label="..")]
    paths = write_comparison(results, tmp_path)
    doc = json.loads(paths["comparison_json"].read_text(encoding="utf-8"))
    assert doc["labels"] == ["a/b", "a/b #2", ".."]
    dirs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert dirs == ["a_b", "a_b_2", "run"]
    assert all(p.resolve().is_relative_to(tmp_path.resolve()) for p in paths.values())


def test_all_text_is_escaped(tmp_path: Path) -> None:
    result = make_result(label=r"_x & <b>$\nosuchcommand{$</b>", scenario='<script>alert("x")</script>', samples=4)
    result.timeseries = [{"t": row["t"], "pods_pending": row["pods_pending"]} for row in result.timeseries]
    result.summary["note"] = "<img src=x onerror=alert(1)>"
    result.summary["<key>"] = 1
    result.pods[4]["reason"] = "<i>Unschedulable</i>"
    page = write_outputs(result, tmp_path)["report"].read_text(encoding="utf-8")
    # pods by phase, and the CDFs whose legend carries the label (invalid mathtext, a leading "_")
    assert page.count(IMG) == 2
    assert "<script" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert r"_x &amp; &lt;b&gt;$\nosuchcommand{$&lt;/b&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert '<td class="key">&lt;key&gt;</td>' in page
    assert "Pending: &lt;i&gt;Unschedulable&lt;/i&gt;" in page
    assert "<b>" not in page
    assert "<i>" not in page
    assert page.count("<img ") == page.count(IMG)  # the only images are ours


def test_plots_only_what_is_there(tmp_path: Path) -> None:
    result = FakeResult(
        timeseries=[{"t": float(i), "pods_pending": 3 - i, "pods_running": i} for i in range(4)],
        pods=[{"name": "p", "phase": "Pending", "scheduling_latency": None, "pending_time": None}],
    )
    page = write_outputs(result, tmp_path)["report"].read_text(encoding="utf-8")
    assert page.count(IMG) == 1
    assert 'alt="Pods by phase over time"' in page


def test_empty_result_still_reports(tmp_path: Path) -> None:
    result = FakeResult(summary={"sim_seconds": float("nan"), "pods_created": 0})
    paths = write_outputs(result, tmp_path)
    page = paths["report"].read_text(encoding="utf-8")
    assert IMG not in page
    assert "No time-series samples were recorded." in page
    assert json.loads(paths["summary"].read_text(encoding="utf-8"))["sim_seconds"] is None
    assert paths["timeseries"].read_text(encoding="utf-8") == "\n"


def test_no_results_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one result"):
        write_comparison([], tmp_path)
    with pytest.raises(ValueError, match="at least one result"):
        render_html([])


def test_only_comparisons_are_titled_as_such(
    single: tuple[FakeResult, dict[str, Path]], comparison: tuple[list[FakeResult], dict[str, Path]]
) -> None:
    assert "— comparison</title>" in comparison[1]["report"].read_text(encoding="utf-8")
    assert "— comparison" not in single[1]["report"].read_text(encoding="utf-8")


def test_importing_the_report_module_does_not_import_matplotlib() -> None:
    code = "import sys, kubeplane.sim, kubeplane.sim.report; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


# --- layout: the comparison tables fit a 1280-px window; the headline comes first ------------------------------


def _wide_comparison() -> list[FakeResult]:
    """Four runs with long labels (configuration file names) and long values (hashes, a scenario path)."""
    results = []
    for i in range(4):
        result = make_result(f"a-very-long-scheduler-configuration-name-{i}-most-allocated-with-gpu-share", i + 1)
        result.summary["event_log_hash"] = f"{i}" * 64
        result.summary["scenario_file"] = "/".join(["examples", "sim", "some-directory"] * 6) + ".yaml"
        results.append(result)
    return results


def test_long_values_wrap_instead_of_widening_the_page() -> None:
    """The CSS that lets every table cell break a long word (overflow-wrap:anywhere lowers the min-content
    width, so an auto-layout table shrinks to the body's 1100 px instead of overflowing a 1280-px window)."""
    page = render_html(_wide_comparison())
    css = re.search(r"<style>(.*?)</style>", page, re.S)
    assert css
    rule = re.search(r"([^}]*)\{overflow-wrap:anywhere[^}]*\}", css.group(1))
    assert rule
    assert {"th", "td", "dd", "figcaption"} <= set(rule.group(1).split(","))
    assert "max-width:1100px" in css.group(1)
    assert "table{max-width:100%}" in css.group(1)
    assert "figure img{max-width:100%" in css.group(1)
    assert '<td class="key">event_log_hash</td><td>' + "0" * 64 + "</td>" in page


def _chromium() -> str | None:
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"):
        found = shutil.which(name)
        if found:
            return found
    return None


def test_the_comparison_page_is_no_wider_than_a_1280_px_window(tmp_path: Path) -> None:
    """Laid out by a real browser (Debian's chromium, installed by `make test`): never skipped."""
    assert _chromium() is not None, "headless chromium is missing: `make chromium` installs it"
    page = render_html(_wide_comparison())
    probe = "<script>document.title = 'scrollWidth=' + document.documentElement.scrollWidth;</script>"
    path = tmp_path / "report.html"
    path.write_text(page.replace("</body>", probe + "</body>"), encoding="utf-8")
    done = subprocess.run(
        [str(_chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2000", "--dump-dom", path.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    width = re.search(r"scrollWidth=(\d+)", done.stdout)
    assert width, done.stdout[-500:]
    assert int(width.group(1)) <= 1280


def test_the_headline_comes_first_and_is_not_repeated() -> None:
    result = make_result()
    result.summary = {"headline": ["pods_scheduled", "preemptions"], **result.summary}
    page = render_html([result])
    headline = page.index("<h2>Headline</h2>")
    assert headline < page.index("<h2>Summary</h2>")
    table = page[headline : page.index("</table>", headline)]
    assert re.findall(r'<td class="key">([^<]+)</td>', table) == ["pods_scheduled", "preemptions"]
    assert '<td class="key">headline</td>' not in page
    assert "<h2>Headline</h2>" not in render_html([make_result()])
