"""The notebooks run top to bottom (nbclient, CPU) and are committed without outputs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
TIMEOUT_S = 300  # per cell; each notebook takes well under 90 s on an idle CPU core

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (test extra)")


def test_the_three_notebooks_are_there():
    assert NAMES == ["01-quickstart.ipynb", "02-variant-effects.ipynb", "03-benchmarks.ipynb"]


@pytest.mark.parametrize("name", NAMES)
def test_committed_without_outputs(name):
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, \
                f"{name}: strip outputs before committing (jupyter nbconvert --clear-output)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_runs_top_to_bottom(name, data_root, monkeypatch):
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (test extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (test extra)")
    monkeypatch.setenv("GENOCTX_DATA_ROOT", str(data_root))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    book = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = nbclient.NotebookClient(book, timeout=TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - start
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    images = [o for c in book.cells if c.cell_type == "code" for o in c.outputs
              if "image/png" in o.get("data", {})]
    assert images, f"{name} drew no figure"
    print(f"{name}: {wall:.1f} s")
