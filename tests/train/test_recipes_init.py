"""`genoctx train --recipe annotation --init` an annotation export trains on from its head."""

import json
import subprocess
import sys

import torch
from safetensors.torch import load_file


def _train(tmp_path, data_root, out, *extra):
    args = [sys.executable, "-m", "genoctx", "train", "--recipe", "annotation", "--steps", "1",
            "--batch-size", "2", "--seq-len", "128", "--threads", "1", "--quiet",
            "--data-root", str(data_root), "--out", out, *extra]
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    export = tmp_path / out / "export"
    return load_file(str(export / "head.safetensors")), load_file(str(export / "model.safetensors"))


def test_init_from_an_annotation_export_keeps_its_head(tmp_path, data_root):
    head_a, model_a = _train(tmp_path, data_root, "a")
    # one step at a vanishing learning rate: what comes out is what went in
    head_b, model_b = _train(tmp_path, data_root, "b", "--init", "a/export", "--lr", "1e-30",
                             "--seed", "1", "--eukaryote-weight", "4")
    for k in head_a:
        torch.testing.assert_close(head_b[k], head_a[k], rtol=0, atol=1e-6, msg=k)
    for k in model_a:
        torch.testing.assert_close(model_b[k], model_a[k], rtol=0, atol=1e-6, msg=k)
    record = json.loads((tmp_path / "b" / "export" / "TRAINING.json").read_text())
    assert record["init"] == "a/export"
    assert record["eukaryote_weight"] == 4.0
    assert 0.25 < record["sample_shares"]["eukaryote"] < 0.35  # ~0.10 at weight 1
    # from a backbone-only checkpoint (an lm export) the head starts afresh
    (tmp_path / "lm").mkdir()
    for name in ("model.safetensors", "model.safetensors.sha256", "config.json"):
        (tmp_path / "lm" / name).write_bytes((tmp_path / "a" / "export" / name).read_bytes())
    head_c, _ = _train(tmp_path, data_root, "c", "--init", "lm", "--lr", "1e-30", "--seed", "1")
    assert any(not torch.allclose(head_c[k], head_a[k], atol=1e-3) for k in head_a)
