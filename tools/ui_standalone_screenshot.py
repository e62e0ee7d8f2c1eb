"""Regenerate docs/ui/runs-only.png: ``kubeplane ui --runs DIR`` (no cluster) after logging in with its printed
token, in headless Chromium. The process is started on port 0 of 127.0.0.1 and stopped by its PID.

    PYTHONPATH=src .venv/bin/python tools/ui_standalone_screenshot.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which(os.environ.get("KUBEPLANE_CHROMIUM", "") or "chromium") or "/usr/bin/chromium"
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        runs, log = Path(tmp) / "runs", Path(tmp) / "ui.log"
        runs.mkdir()
        with log.open("wb") as out:
            command = [sys.executable, "-m", "kubeplane.cli.main", "ui", "--runs", str(runs), "--port", "0"]
            process = subprocess.Popen([*command, "--data-dir", str(Path(tmp) / "state")], stdout=out, stderr=out)
        try:
            deadline = time.monotonic() + 60
            pattern = r"^web UI: (https://\S+)/ui/\n.*^log in with the token: (\S+)$"
            while not (found := re.search(pattern, log.read_text(), re.M | re.S)):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(log.read_text())
                time.sleep(0.05)
            base, token = found.group(1), found.group(2)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
                page = browser.new_context(ignore_https_errors=True, viewport={"width": 1000, "height": 320}).new_page()
                page.goto(f"{base}/ui/login")
                page.fill("#token", token)
                page.click("button[type=submit]")
                page.wait_for_url("**/ui/")
                page.goto(f"{base}/ui/#/cluster")
                page.wait_for_selector("#noapi-message")
                page.screenshot(path=str(args.out / "runs-only.png"))
                browser.close()
        finally:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
    print(args.out / "runs-only.png")


if __name__ == "__main__":
    main()
