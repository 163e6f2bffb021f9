"""The GPU suite's own code, run on the CPU: ``benchmarks/gpu_suite.py --smoke``.

A lent GPU has minutes, not hours; a bug in the suite (a shape, an API call, the report) must show
here. The smoke run takes every section through the Triton interpreter at tiny sizes, fp32, and
exits non-zero on any recorded failure or failed check.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_gpu_suite_runs_every_section_on_the_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "TRITON_INTERPRET": "1"}
    doc = REPO / "docs" / "benchmarks.md"
    before = doc.read_bytes()
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_suite.py"), "--smoke"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    res = json.loads((tmp_path / "gpu_suite.json").read_text())
    assert res["failures"] == []
    assert res["checks"] and all(c["ok"] for c in res["checks"])
    assert {c["kernel"] for c in res["checks"]} == {
        "linear_attn", "local_attn", "hybrid_attn", "block_topk", "moe", "moe_permute"}
    timed = {t["impl"] for t in res["timings"] if "fwd_ms" in t}
    for row in ("local_attn (ours, bs512)", "linear_attn (ours, C64)", "hybrid_attn (ours, bs512)",
                "SDPA flash dense causal", "SDPA block-diagonal 512", "FlexAttention block-512",
                "FlexAttention local halo 512", "FlexAttention sliding-window 1024"):
        assert row in timed
    assert any(t["impl"].startswith("grouped_mm triton") for t in res["timings"])
    assert len(res["annotate"]) == 4 and res["annotate"][0]["genome"].startswith("Yersinia")
    (train,) = res["train"]  # training steps: the loss falls on real windows
    assert train["steps"] == 3 and train["last_loss"] < train["first_loss"]
    report = (tmp_path / "gpu_suite.md").read_text()
    assert "not a measurement" in report and "### Correctness" in report
    assert doc.read_bytes() == before  # a smoke run never writes the benchmarks document
