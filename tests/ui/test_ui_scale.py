"""The cluster view renders only the tiles in view (issue 24: "render only what is visible"), checked on a
1,000-node / 5,000-pod memory-store cluster loaded in-process (bench/ui_cluster.py, the one bench/ui_bench.py
measures at 5,000 / 50,000). Nothing here is timed: the DOM stays bounded whatever the cluster's size, scrolling
shows other nodes, every pod reaches the page (the informer's paged list, client-go's reflector: limit=5000 then
continue), and a pod view opens. The figures are bench/ui_bench.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import login

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from ui_cluster import big_cluster

NODES, PODS = 1000, 5000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with big_cluster(tmp_path_factory.mktemp("big"), NODES, PODS) as (address, token, _):
        yield address, token


def test_the_cluster_view_renders_only_visible_tiles(browser: Any, big: tuple[str, str]) -> None:
    address, token = big
    page = login(browser, address, token)
    try:
        summary = f"{NODES} of {NODES} nodes · {PODS} pods · {PODS // 50} pending"
        page.wait_for_function("s => document.querySelector('#cluster-summary').textContent === s", arg=summary)
        tiles = page.eval_on_selector_all("#node-grid .tile", "ts => ts.map(t => t.dataset.node)")
        assert 0 < len(tiles) <= 40  # a 1400x900 viewport shows a few rows of 300px tiles, plus one row each side
        assert tiles[0] == "node-00000"
        assert page.evaluate("() => document.getElementsByTagName('*').length") < 3000
        # every tile's data: node-00001 holds pods 1, 1001, 2001, 3001, 4001 (bench/ui_cluster.py round-robin)
        assert page.get_attribute("#node-grid .tile[data-node='node-00001'] .pod-marks", "aria-label") == (
            "pods: 5 Running"
        )
        page.evaluate("() => { const g = document.querySelector('#node-grid'); g.scrollTop = g.scrollHeight / 2; }")
        page.wait_for_function("() => !document.querySelector(\"#node-grid .tile[data-node='node-00000']\")")
        middle = page.eval_on_selector_all("#node-grid .tile", "ts => ts.map(t => t.dataset.node)")
        assert 0 < len(middle) <= 40
        assert all("node-00400" <= n <= "node-00600" for n in middle), middle
        # the pending list is capped too: 100 rows and a count of the rest
        assert page.eval_on_selector_all("#pending-pods li[data-pod]", "ls => ls.length") == PODS // 50
        page.click("#pending-pods li[data-pod] a")
        page.wait_for_selector("#cycle-table", timeout=120_000)
        assert "Fits nowhere" in page.inner_text("#verdict")
        assert page.console_errors == []
    finally:
        page.context.close()
