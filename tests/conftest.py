"""Shared fixtures. TRITON_INTERPRET must be set before anything imports triton."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from genoctx.io.dataroot import default_data_root  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "data" / "examples"


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The shared real-data folder; tests that need it skip with a reason when it is absent."""
    root = default_data_root()
    if root is None:
        pytest.skip("real data folder (../shared/data or $GENOCTX_DATA_ROOT) is not present")
    return root


@pytest.fixture(scope="session")
def example_fasta() -> Path:
    return EXAMPLES / "Yersinia_pestis_pPCP1_NC_005816.fna"


@pytest.fixture(scope="session")
def example_genbank() -> Path:
    return EXAMPLES / "Yersinia_pestis_pPCP1_NC_005816.gb"


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process: ``code, out, err = cli(["tokenize", ...])``."""
    from genoctx.cli.app import run

    def _run(argv):
        code = run([str(a) for a in argv])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return _run
