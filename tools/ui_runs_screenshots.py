"""Regenerate docs/ui.md's screenshots of the Runs view (runs-list.png, runs-run.png, runs-compare.png,
runs-autoscaling.png).

They are taken by the view's own browser tests (tests/ui/test_runs_view.py, test_runs_autoscaling.py) on the
outputs of real ``kubeplane sim run`` / ``sim compare`` runs of examples/sim/seeds-story.yaml and autoscaling.yaml,
when ``$KUBEPLANE_UI_SHOTS`` names a directory:

    PYTHONPATH=src .venv/bin/python tools/ui_runs_screenshots.py [--out docs/ui]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "ui")
    args = parser.parse_args()
    env = {**os.environ, "KUBEPLANE_UI_SHOTS": str(args.out.resolve())}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/ui/test_runs_view.py",
        "tests/ui/test_runs_autoscaling.py",
        "-q",
        "-p",
        "no:cacheprovider",
    ]
    raise SystemExit(subprocess.run(command, cwd=ROOT, env=env, timeout=900, check=False).returncode)


if __name__ == "__main__":
    main()
