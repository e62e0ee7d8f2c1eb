"""``--store etcd`` of bench/store_bench.py and bench/apiserver_bench.py runs end to end at ``--quick`` size.

etcd is not among store_bench's default backends (it starts a 3-member cluster), so test_benches_run.py's
default ``--quick`` runs stay etcd-free; these tests run the etcd paths on their own: each bench starting its own
cluster, and apiserver_bench on a cluster given with ``--etcd-servers`` (twice on the same cluster, which only
works if every run writes under a fresh prefix). Figures are not asserted (benchmarks measure; tests do not
time); that every figure is printed, positive and labelled with the etcd store is, and so is the watch phase
delivering every event to every watcher (no event lost through the etcd feed).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.store.etcd_cluster import running_cluster

BENCH = Path(__file__).resolve().parents[2] / "bench"

STORE_METRICS = {
    "writes_per_s",
    "concurrent_writes_per_s",
    "cas_updates_per_s",
    "range_reads_per_s",
    "past_range_reads_per_s",
    "fanout_events_per_s",
}
APISERVER_METRICS = {
    "creates_per_s",
    "gets_per_s",
    "list_1000_per_s",
    "watch_events_per_s",
    "watch_writes_per_s",
    "authorized_gets_per_s",
    "authorization_overhead_pct",
}


def run_bench(script: str, *args: str) -> list[dict[str, Any]]:
    result = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert lines, "the bench printed nothing"
    for line in lines:
        assert {"bench", "metric", "value", "unit"} <= set(line), line
        assert isinstance(line["value"], int | float), line
        if not line["metric"].endswith("overhead_pct"):  # a difference of two rates: below zero in the noise
            assert line["value"] > 0, line
        assert line["quick"] is True
    return lines


def check_apiserver_lines(lines: list[dict[str, Any]]) -> None:
    assert {line["metric"] for line in lines} == APISERVER_METRICS
    assert all(line["store"] == "etcd" for line in lines)
    (watch,) = [line for line in lines if line["metric"] == "watch_events_per_s"]
    assert watch["delivered"] == watch["n"] * watch["watchers"], watch


def test_store_bench_etcd_starts_its_own_cluster() -> None:
    lines = run_bench("store_bench.py", "--backend", "etcd")
    assert {line["metric"] for line in lines} == STORE_METRICS
    assert all(line["backend"] == "etcd" and line["etcd_endpoints"] == 3 for line in lines)
    assert sorted(line["watchers"] for line in lines if line["metric"] == "fanout_events_per_s") == [1, 10, 100]


def test_apiserver_bench_etcd_starts_its_own_cluster() -> None:
    check_apiserver_lines(run_bench("apiserver_bench.py", "--store", "etcd"))


def test_apiserver_bench_on_an_existing_cluster_twice(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "etcd") as cluster:
        servers = ",".join(cluster.endpoints)
        for _ in range(2):
            check_apiserver_lines(run_bench("apiserver_bench.py", "--store", "etcd", "--etcd-servers", servers))
        keys = cluster.etcdctl("get", "--prefix", "--keys-only", "/kubeplane-bench-").split()
    prefixes = {key.split("/")[1] for key in keys}
    assert len(prefixes) == 2, prefixes  # one fresh prefix per run, both in the cluster given
    for prefix in prefixes:
        assert f"/{prefix}/pods/watched/w-000000" in keys


def test_etcd_servers_without_store_etcd_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / "apiserver_bench.py"), "--quick", "--etcd-servers", "http://127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--etcd-servers needs --store etcd" in result.stderr
