"""Tests of kubeplane.gpu. ``OPENB`` is the openb trace packaged with kubeplane (``src/kubeplane/gpu/data/openb``):
the tests read it unconditionally, so a missing file fails them (never a skip)."""

from kubeplane.gpu.openb import DATA_DIR

OPENB = DATA_DIR
