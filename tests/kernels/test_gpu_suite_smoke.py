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
    assert any(c["kernel"] == "hybrid_attn" and c["case"].endswith("two loops")
               for c in res["checks"])
    timed = {t["impl"] for t in res["timings"] if "fwd_ms" in t}
    for row in ("local_attn (ours, bs512)", "linear_attn (ours, C64)", "hybrid_attn (ours, bs512)",
                "hybrid split (ours: local + linear + lerp)",
                "hybrid_attn (ours, bs512, two loops)", "SDPA flash dense causal",
                "SDPA block-diagonal 512", "FlexAttention block-512",
                "FlexAttention local halo 512", "FlexAttention sliding-window 1024"):
        assert row in timed
    assert any(t["impl"].startswith("grouped_mm triton") for t in res["timings"])
    steps = [a["step"] for a in res["annotate"]]
    assert res["annotate"][0]["genome"].startswith("Yersinia")
    assert steps[0].startswith("annotate_fasta, first call") and steps[-1].startswith(
        "genoctx annotate in a fresh process")
    assert any(s.startswith("write GFF3") for s in steps) and len(steps) >= 7
    (train,) = res["train"]  # training steps: the loss falls on real windows
    assert train["steps"] == 3 and train["last_loss"] < train["first_loss"]
    report = (tmp_path / "gpu_suite.md").read_text()
    assert "not a measurement" in report and "### Correctness" in report
    assert doc.read_bytes() == before  # a smoke run never writes the benchmarks document


def test_runs_merge_later_rows_over_earlier_ones():
    """``--from-json a.json,b.json``: b's rows replace a's rows of the same (impl, T); rows only
    a has stay; both commands are listed and a row without ``extra_gib`` shows '-'."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_suite", REPO / "benchmarks" / "gpu_suite.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)

    def run(cmd, rows, annotate=()):
        return {"meta": {"command": cmd, "date": "d", "wall_s": 1.0, "device": "card"},
                "checks": [], "timings": rows, "failures": [], "notes": [],
                "annotate": list(annotate), "train": []}

    a = run("python a", [{"group": "linear", "impl": "linear_attn (ours, C64)", "T": 1 << 20,
                          "fwd_ms": 9.0, "peak_gib": 19.3},
                         {"group": "alt", "impl": "fla", "T": 1 << 20, "fwd_ms": 40.0}],
            [{"genome": "g", "Mb": 1.0, "step": "old", "s": 60.0}])
    b = run("python b", [{"group": "linear", "impl": "linear_attn (ours, C64)", "T": 1 << 20,
                          "fwd_ms": 5.0, "peak_gib": 16.3, "extra_gib": 8.3}])
    merged = suite.merge_runs([a, b])
    rows = {r["impl"]: r for r in merged["timings"]}
    assert rows["linear_attn (ours, C64)"]["fwd_ms"] == 5.0 and rows["fla"]["fwd_ms"] == 40.0
    assert merged["annotate"] == a["annotate"]  # b has none: a's stay
    text = suite.render(merged)
    assert "`python a`" in text and "`python b`" in text
    assert "| 5.00 / 8.0 |" in text and "| 8.30 / 16.0 |" in text
    assert "linear 8.00x" in text  # fla against our newer row
