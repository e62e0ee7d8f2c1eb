"""The openb trace shipped inside the package (``kubeplane.gpu.openb.DATA_DIR``): every file the experiment, the
examples and the tests read is there, ``fgd-repro`` finds it with no flag, and a missing file is a one-line error,
never a silent skip or a partial experiment."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.gpu import repro
from kubeplane.gpu.openb import DATA_DIR, load_nodes, load_pods

# The FGD artifact's published lists (FGD-EXPERIMENT.md §1.1): row counts pin that the copy is whole.
ROWS = (
    ("openb_node_list_gpu_node.csv", 1213),
    ("openb_node_list_all_node.csv", 1523),
    ("openb_pod_list_default.csv", 8152),
)


@pytest.mark.parametrize(
    "name",
    [*repro.DATA_FILES, "openb_node_list_all_node.csv", "README.md", "FGD-EXPERIMENT.md"],
)
def test_every_file_of_the_trace_is_packaged(name: str) -> None:
    """The node lists, the default pod list and its three variants, the reference, the notes and the README."""
    path = DATA_DIR / name
    assert path.is_file(), f"{path} is missing: the openb trace must ship with kubeplane"
    assert path.stat().st_size > 0


@pytest.mark.parametrize(("name", "rows"), ROWS, ids=[name for name, _ in ROWS])
def test_the_packaged_lists_are_whole(name: str, rows: int) -> None:
    loader = load_nodes if "node_list" in name else load_pods
    assert len(loader(DATA_DIR / name)) == rows


def test_the_readme_names_the_source_and_the_paper_to_cite() -> None:
    readme = (DATA_DIR / "README.md").read_text()
    assert "alibaba/clusterdata" in readme
    assert "Beware of Fragmentation" in readme
    assert "Cite that paper" in readme


def test_find_data_dir_defaults_to_the_packaged_trace() -> None:
    assert repro.find_data_dir() == DATA_DIR


def test_a_missing_packaged_file_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial = tmp_path / "openb"
    shutil.copytree(DATA_DIR, partial)
    (partial / "openb_pod_list_gpushare40.csv").unlink()
    monkeypatch.setattr(repro, "DATA_DIR", partial)
    with pytest.raises(FileNotFoundError, match=r"incomplete: openb_pod_list_gpushare40\.csv missing in"):
        repro.find_data_dir()
    got = CliRunner().invoke(app, ["sim", "fgd-repro", "--seeds", "42", "--policies", "FGD", "--jobs", "1"])
    assert got.exit_code == 1
    assert len(got.output.strip().splitlines()) == 1
    assert got.output.startswith("error: the packaged openb trace is incomplete")


def test_fgd_repro_runs_from_the_packaged_trace_without_flags() -> None:
    """What a fresh clone runs first: no --data, the trace found in the package, the reference's checks pass."""
    got = CliRunner().invoke(app, ["sim", "fgd-repro", "--seeds", "42", "--policies", "FGD", "--jobs", "1"])
    assert got.exit_code == 0, got.output
    assert "5/5 checks pass" in got.output
