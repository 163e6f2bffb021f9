"""`genoctx train --recipe annotation --init` an annotation export trains on from its head."""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file


def _train(tmp_path, data_root, out, *extra):
    args = [sys.executable, "-m", "genoctx", "train", "--recipe", "annotation", "--steps", "1",
            "--batch-size", "2", "--seq-len", "128", "--threads", "1", "--quiet",
            "--data-root", str(data_root), "--out", out, *extra]
    res = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                         check=False)
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
    # what a resume compares before reading the corpus is what the corpus read lists
    from genoctx.train import corpus as corpus_mod

    assert record["data_files"] == corpus_mod.file_lines(corpus_mod.annotation_files(data_root),
                                                         data_root)
    assert record["eukaryote_weight"] == 4.0
    assert 0.25 < record["sample_shares"]["eukaryote"] < 0.35  # ~0.10 at weight 1
    # from a backbone-only checkpoint (an lm export) the head starts afresh
    (tmp_path / "lm").mkdir()
    for name in ("model.safetensors", "model.safetensors.sha256", "config.json"):
        (tmp_path / "lm" / name).write_bytes((tmp_path / "a" / "export" / name).read_bytes())
    head_c, _ = _train(tmp_path, data_root, "c", "--init", "lm", "--lr", "1e-30", "--seed", "1")
    assert any(not torch.allclose(head_c[k], head_a[k], atol=1e-3) for k in head_a)


def _cli(tmp_path, *args):
    """``genoctx train`` of this tree (not another installed copy) at the smallest size."""
    import os
    from pathlib import Path

    base = [sys.executable, "-m", "genoctx", "train", "--steps", "2", "--batch-size", "2",
            "--seq-len", "128", "--threads", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(base + [str(a) for a in args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env=env, check=False)


def test_a_resume_with_another_init_or_data_root_is_refused(tmp_path, data_root):
    """The weights a run started from and the files it reads are settings a resume must keep:
    another --init (or none) or a --data-root whose manifest lists other files was resumed
    silently, and the run record then described only the last invocation."""
    root2 = tmp_path / "root2"  # the same data, one pretraining genome left out of its manifest
    root2.mkdir()
    for p in data_root.iterdir():
        if p.name != "MANIFEST.tsv":
            (root2 / p.name).symlink_to(p)
    rows = (data_root / "MANIFEST.tsv").read_text().splitlines(keepends=True)
    (root2 / "MANIFEST.tsv").write_text("".join(
        r for r in rows if not r.startswith("genomes/unannotated/Klebs_HS11286")))

    def refused(run, setting, *args):
        state = (tmp_path / run / "state" / "state.safetensors").read_bytes()
        log = (tmp_path / run / "loss.csv").read_text()
        res = _cli(tmp_path, *args, "--out", run)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, res.stderr[-3000:]
        assert f"other settings ({setting} " in lines[0], lines[0]
        assert (tmp_path / run / "state" / "state.safetensors").read_bytes() == state
        assert (tmp_path / run / "loss.csv").read_text() == log

    lm = ["--recipe", "lm"]
    assert _cli(tmp_path, *lm, "--data-root", data_root, "--stop-after", "1",
                "--out", "lm").returncode == 0
    refused("lm", "data_files_sha256", *lm, "--data-root", root2)
    # the run's own data root resumes it (one more step: the rest of the run adds nothing)
    assert _cli(tmp_path, *lm, "--data-root", data_root, "--stop-after", "2",
                "--out", "lm").returncode == 0

    ann = ["--recipe", "annotation", "--data-root", data_root]
    assert _cli(tmp_path, *ann, "--init", "lm/export", "--stop-after", "1",
                "--out", "ann").returncode == 0
    refused("ann", "init_sha256", *ann)  # the same command without --init
    record = json.loads((tmp_path / "ann" / "run.json").read_text())
    assert record["init"] == "lm/export" and len(record["init_sha256"]) == 64
    from genoctx.train import corpus as corpus_mod  # what a resume compares before reading

    lm_record = json.loads((tmp_path / "lm" / "run.json").read_text())
    assert lm_record["data_files"] == corpus_mod.file_lines(corpus_mod.lm_files(data_root),
                                                            data_root)
    assert record["cwd"] == str(tmp_path)  # what the relative paths of its command are under


def test_a_missing_init_is_refused_before_the_data_is_read(tmp_path, cli):
    """It was refused only after the whole annotation corpus was read and guarded (tens of
    seconds); now before any data: a missing data root is not even looked at."""
    code, _, err = cli(["train", "--recipe", "annotation", "--init", tmp_path / "nope",
                        "--data-root", tmp_path / "no-data", "--out", tmp_path / "run"])
    assert code == 2 and f"model checkpoint {tmp_path / 'nope'} not found" in err, err
    assert not (tmp_path / "run").exists()


def test_the_recorded_command_reruns_as_given(monkeypatch):
    """The command in run.json (and TRAINING.json, ship's README) was the arguments joined by
    spaces: `--out "runs/my run"` and a data root with an "&" did not rerun."""
    import shlex

    from genoctx.train.loop import command_line

    args = ["train", "--recipe", "lm", "--out", "runs/my run", "--data-root", "/data/a&b"]
    monkeypatch.setattr(sys, "argv", ["/usr/bin/genoctx", *args])
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    line = command_line()
    assert line.startswith("genoctx train ") and shlex.split(line)[1:] == args


def test_a_resume_with_other_data_is_refused_before_the_data_is_read(tmp_path, data_root,
                                                                     monkeypatch):
    """The refusal above came only after the whole corpus was read and guarded (seconds here,
    minutes on more data): the files' digests are now compared before any record is read."""
    from safetensors.torch import save_file

    from genoctx.errors import InputError
    from genoctx.train import corpus as corpus_mod
    from genoctx.train import recipes
    from genoctx.train.loop import STATE_META

    state = tmp_path / "run" / "state"
    state.mkdir(parents=True)
    meta = {"step": 1, "param_groups": [], "settings": {"data_files_sha256": "0" * 64}}
    save_file({"x": torch.zeros(1)}, str(state / "state.safetensors"),
              metadata={STATE_META: json.dumps(meta)})

    def read(*_, **__):
        raise AssertionError("the corpus was read before the settings were compared")

    monkeypatch.setattr(corpus_mod, "lm_corpus", read)
    monkeypatch.setattr(corpus_mod, "annotation_corpus", read)
    for name, run in (("lm", lambda r: recipes.run_lm(r, data_root, tmp_path / "run", quiet=True)),
                      ("annotation", lambda r: recipes.run_annotation(
                          r, data_root, tmp_path / "run", None, quiet=True))):
        with pytest.raises(InputError, match=r"other settings \(data_files_sha256 '000000000000…"):
            run(recipes.get_recipe(name, steps=2))
