"""Tests of kubeplane.gpu. ``OPENB`` is the openb trace beside the project (``../shared/data/openb``, as in CI);
tests that read it carry ``needs_trace``."""

from pathlib import Path

import pytest

OPENB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "openb"
needs_trace = pytest.mark.skipif(
    not (OPENB / "openb_pod_list_default.csv").exists(), reason=f"the openb trace is not beside the project ({OPENB})"
)
