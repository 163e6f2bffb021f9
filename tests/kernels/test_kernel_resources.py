"""The local, hybrid and linear attention kernels and the MoE grouped matmul compile for Hopper
(sm_90) and Blackwell (sm_100) to that target's own tensor-core MMA, not to a trap, with the
tiles genoctx launches them with.

The compile runs here, without a GPU (Triton's ahead-of-time compile with its own ptxas), in a
subprocess: the test session's TRITON_INTERPRET=1 turns ``triton.jit`` into the interpreter.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "kernel_resources.py"


def test_kernels_compile_to_native_mma_on_hopper_and_blackwell():
    triton = pytest.importorskip("triton")
    bin_dir = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    if not all((bin_dir / tool).exists() for tool in ("ptxas", "cuobjdump")):
        pytest.skip("this triton wheel ships no ptxas / cuobjdump")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, str(SCRIPT), "--targets", "90,100", "--no-write",
                          "--check"], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = [line for line in run.stdout.splitlines() if line.startswith("| ")][1:]  # no header
    assert len(rows) == 2 * 18  # 18 kernel variants, two targets
    assert "FAIL" not in run.stdout


def test_blackwell_gets_its_own_dkdv_tiles(monkeypatch):
    """On sm_100 the hybrid dk/dv kernel takes the tiles that compile there (its Hopper 64x128
    tiles compile to a trap); Hopper and unknown devices keep the Hopper defaults."""
    from genoctx.kernels import _triton_utils as tu

    monkeypatch.setattr(tu, "interpreting", lambda: False)
    kw = {"block_size": 512, "head_dim": 64}
    hopper = tu.tile_config("hybrid_bwd_dkdv", **kw, arch=90)
    assert (hopper.block_m, hopper.block_n) == (64, 128)
    assert tu.tile_config("hybrid_bwd_dkdv", **kw, arch=None) == hopper
    assert tu.tile_config("hybrid_bwd_dkdv", **kw, arch=100) == tu.Tiles(64, 64, 8, 2)
    assert tu.tile_config("local_fwd", **kw, arch=100) == tu.tile_config("local_fwd", **kw)
    assert tu.cuda_arch("cpu") is None
