"""Regenerate docs/ui/pod-autoscaler.png: the pod view of a Pending pod the autoscaler is scaling up for (explain's
``autoscaler`` part), on ``kubeplane up --node-groups`` (the cluster of tests/cli/test_explain_autoscaler.py:
groups ``small`` and ``tainted``; started on port 0 of 127.0.0.1, stopped by its PID), in headless Chromium.

    PYTHONPATH=src .venv/bin/python tools/ui_autoscaler_screenshot.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright
    from tests.cli.test_explain_autoscaler import scaled_up_cluster

    from kubeplane.client.kubeconfig import load_kubeconfig

    chromium = shutil.which(os.environ.get("KUBEPLANE_CHROMIUM", "") or "chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as tmp, scaled_up_cluster(Path(tmp)) as cluster:
        config = load_kubeconfig(cluster.kubeconfig)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_context(ignore_https_errors=True, viewport={"width": 1400, "height": 900}).new_page()
            page.goto(f"{config.server}/ui/")
            page.wait_for_url("**/ui/login")
            page.fill("#token", str(config.token))
            page.click("button[type=submit]")
            page.wait_for_selector("#cluster-summary")
            page.goto(f"{config.server}/ui/#/pod/default/{cluster.pending}")
            page.wait_for_selector("#autoscaler-upcoming")
            page.screenshot(path=str(args.out / "pod-autoscaler.png"), full_page=True)
            browser.close()
    print(args.out / "pod-autoscaler.png")


if __name__ == "__main__":
    main()
