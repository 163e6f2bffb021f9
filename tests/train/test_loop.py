"""The training loop is deterministic and resumes to the same result."""

from pathlib import Path

import numpy as np
import torch
import pytest
from safetensors.torch import load_file

from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel
from genoctx.train import corpus as corpus_mod
from genoctx.train.loop import LoopConfig, lr_at, train_loop
from genoctx.tokenize import nucleotide as nt

SMALL = dict(d_model=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
             num_experts=4, top_k=2, expert_dim=32)


def _run(run_dir, example_fasta, steps, total):
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", nt.encode(seq))])
    sampler = corpus_mod.WindowSampler(corpus, 256, seed=0)
    torch.manual_seed(0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    cfg = LoopConfig(steps=total, lr=1e-3, warmup=2, log_every=1, ckpt_every=1)

    def step(_):
        ids, _ = sampler.sample(2)
        return model.lm_loss(torch.from_numpy(ids))

    if steps < total:  # simulate an interruption after `steps`
        class Stop(Exception):
            pass

        def interrupted(i):
            if i == steps:
                raise Stop
            return step(i)

        try:
            train_loop(model, interrupted, sampler, run_dir, cfg, title="t", quiet=True)
        except Stop:
            pass
        torch.manual_seed(123)  # a resumed process starts from another RNG state
        model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
        sampler.set_state(np.random.default_rng(99).bit_generator.state)
    return train_loop(model, step, sampler, run_dir, cfg, title="t", quiet=True), model


def test_resume_matches_uninterrupted_run(tmp_path, example_fasta):
    res_a, model_a = _run(tmp_path / "a", example_fasta, 4, 4)
    res_b, model_b = _run(tmp_path / "b", example_fasta, 2, 4)
    for (k, va), (_, vb) in zip(model_a.state_dict().items(), model_b.state_dict().items()):
        assert torch.equal(va, vb), k
    assert res_a.final_loss == res_b.final_loss
    rows = (tmp_path / "b" / "loss.csv").read_text().splitlines()
    assert len(rows) == 5  # header + 4 steps
    elapsed = [float(r.split(",")[2]) for r in rows[1:]]
    assert elapsed == sorted(elapsed)  # the clock counts on across the resume
    assert (tmp_path / "b" / "loss.png").stat().st_size > 0
    state = load_file(str(tmp_path / "b" / "state" / "state.safetensors"))
    assert any(k.startswith("opt.") for k in state)


def test_a_time_limit_stops_saves_and_resumes_to_the_same_result(tmp_path, example_fasta):
    """Past its time limit a run ends after the step under way, with that step logged and its
    state saved; run again without the limit, it reaches the uninterrupted run's weights."""
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", nt.encode(seq))])

    def run(run_dir, time_limit):
        sampler = corpus_mod.WindowSampler(corpus, 256, seed=0)
        torch.manual_seed(0)
        model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
        cfg = LoopConfig(steps=3, lr=1e-3, warmup=2, log_every=10, ckpt_every=10,
                         time_limit=time_limit)

        def step(_):
            ids, _ = sampler.sample(2)
            return model.lm_loss(torch.from_numpy(ids))

        return train_loop(model, step, sampler, run_dir, cfg, title="t", quiet=True), model

    whole, model_a = run(tmp_path / "a", None)
    first, _ = run(tmp_path / "b", 1e-9)  # out of time as soon as the first step ends
    assert (whole.steps, first.steps) == (3, 1)
    rows = (tmp_path / "b" / "loss.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["step", "1"]
    resumed, model_b = run(tmp_path / "b", None)
    assert resumed.steps == 3
    for (k, va), (_, vb) in zip(model_a.state_dict().items(), model_b.state_dict().items()):
        assert torch.equal(va, vb), k
    with pytest.raises(ValueError, match="positive"):
        run(tmp_path / "c", 0)


def test_a_peer_out_of_time_stops_this_process_too(tmp_path, example_fasta):
    """The stop is decided over all processes: when another one is past the limit (its flag
    averaged in), this one stops at the same step although its own clock is not."""
    from genoctx.train.distributed import DataParallel

    class PeerLate(DataParallel):
        def mean(self, values):  # a second process whose time ran out: flags 0 and 1 averaged
            return {k: (torch.tensor(0.5) if k == "t" else v) for k, v in values.items()}

    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", nt.encode(seq))])
    sampler = corpus_mod.WindowSampler(corpus, 256, seed=0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    cfg = LoopConfig(steps=3, lr=1e-3, warmup=1, log_every=10, ckpt_every=10, time_limit=1e6)

    def step(_):
        ids, _ = sampler.sample(2)
        return model.lm_loss(torch.from_numpy(ids))

    res = train_loop(model, step, sampler, tmp_path / "r", cfg, title="t", quiet=True,
                     dp=PeerLate())
    assert res.steps == 1


def test_learning_rate_schedule():
    cfg = LoopConfig(steps=100, lr=1.0, warmup=10, min_lr_ratio=0.1)
    assert lr_at(0, cfg) == 0.1 and lr_at(9, cfg) == 1.0
    assert abs(lr_at(99, cfg) - 0.1) < 1e-3
    assert all(lr_at(i, cfg) >= lr_at(i + 1, cfg) for i in range(10, 99))


def _tiny_run(run_dir, example_fasta, steps=2, **cfg_kw):
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", nt.encode(seq))])
    sampler = corpus_mod.WindowSampler(corpus, 256, seed=0)
    torch.manual_seed(0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    cfg = LoopConfig(**{"steps": steps, "lr": 1e-3, "warmup": 1, "log_every": 1,
                        "ckpt_every": 1, **cfg_kw})

    def step(_):
        ids, _ = sampler.sample(2)
        return model.lm_loss(torch.from_numpy(ids))

    return train_loop(model, step, sampler, run_dir, cfg, title="t", quiet=True,
                      settings={"seq_len": 256})


def test_a_resume_with_other_settings_is_refused(tmp_path, example_fasta):
    from genoctx.errors import InputError

    _tiny_run(tmp_path / "r", example_fasta, steps=2, stop_after=1)
    before = (tmp_path / "r" / "loss.csv").read_text()
    with pytest.raises(InputError, match=r"other settings \(lr 0.001 → 0.002; seed 0 → 7\)"):
        _tiny_run(tmp_path / "r", example_fasta, steps=2, seed=7, lr=2e-3)
    assert (tmp_path / "r" / "loss.csv").read_text() == before
    assert _tiny_run(tmp_path / "r", example_fasta, steps=2).steps == 2  # same settings: on


def _rewrite_state(state_dir, metadata):
    """Write state.safetensors again with other header metadata (None: none)."""
    from safetensors.torch import save_file

    tensors = load_file(str(state_dir / "state.safetensors"))
    save_file(tensors, str(state_dir / "state.safetensors"), metadata=metadata)


@pytest.mark.parametrize("damage, message", [
    (lambda s: _rewrite_state(s, {"genoctx_state": '{"step": 1'}), "state.safetensors is damaged"),
    (lambda s: _rewrite_state(s, {"genoctx_state": '{"sampler": 1}'}),
     "state.safetensors is damaged"),
    (lambda s: (s / "state.safetensors").write_bytes(b"\0" * 10), "cannot be read"),
    (lambda s: _rewrite_state(s, None), "holds no training metadata"),
    (lambda s: (s / "state.safetensors").rename(s / "state.json"), "state.safetensors is missing"),
])
def test_a_damaged_state_is_one_clear_error(tmp_path, example_fasta, damage, message):
    from genoctx.errors import InputError

    _tiny_run(tmp_path / "r", example_fasta, steps=2, stop_after=1)
    damage(tmp_path / "r" / "state")
    with pytest.raises(InputError, match=message):
        _tiny_run(tmp_path / "r", example_fasta, steps=2)


def test_a_stop_while_the_state_is_written_keeps_a_whole_state(tmp_path, example_fasta,
                                                               monkeypatch):
    """The state was two files (tensors, then step/sampler/RNG state) renamed one after the
    other: a stop between the renames (Ctrl-C, SIGTERM, a kill) left step-3 weights beside the
    step-2 sampler, and the resume trained steps 3-4 again on top of them without a word. Stopped
    after any one rename into state/, a resume now reaches the uninterrupted run's weights."""
    import os

    real_replace, renames = os.replace, []

    def counted(src, dst, *a, **k):
        real_replace(src, dst, *a, **k)
        renames.extend([dst] if Path(dst).parent.name == "state" else [])

    monkeypatch.setattr(os, "replace", counted)
    _tiny_run(tmp_path / "whole", example_fasta, steps=4)
    monkeypatch.setattr(os, "replace", real_replace)
    want = load_file(str(tmp_path / "whole" / "state" / "state.safetensors"))
    for stop_at in range(1, len(renames)):  # each save's renames (the last save's need none)
        calls = []

        def replace_then_stop(src, dst, *a, stop_at=stop_at, calls=calls, **k):
            real_replace(src, dst, *a, **k)
            if Path(dst).parent.name == "state":
                calls.append(dst)
                if len(calls) == stop_at:
                    raise KeyboardInterrupt

        run = tmp_path / f"stop{stop_at}"
        monkeypatch.setattr(os, "replace", replace_then_stop)
        with pytest.raises(KeyboardInterrupt):
            _tiny_run(run, example_fasta, steps=4)
        monkeypatch.setattr(os, "replace", real_replace)
        assert _tiny_run(run, example_fasta, steps=4).steps == 4
        got = load_file(str(run / "state" / "state.safetensors"))
        for k in want:
            if k.startswith("model."):
                assert torch.equal(got[k], want[k]), (stop_at, k)
        assert (run / "loss.csv").read_text().count("\n") == 5, stop_at


def test_a_torn_state_of_an_earlier_version_is_refused(tmp_path, example_fasta):
    """A state written before (tensors in state.safetensors, the step and sampler in state.json)
    still resumes when both files are of one step, and is refused when they are not."""
    import json

    from safetensors import safe_open

    from genoctx.errors import InputError

    def as_old(state_dir, step=None):  # the two-file layout of an earlier genoctx
        with safe_open(str(state_dir / "state.safetensors"), "pt") as fh:
            header = fh.metadata() or {}
        meta = json.loads(header.get("genoctx_state") or (state_dir / "state.json").read_text())
        if step is not None:
            meta["step"] = step
        _rewrite_state(state_dir, None)
        (state_dir / "state.json").write_text(json.dumps(meta))

    for name in ("torn", "whole"):
        _tiny_run(tmp_path / name, example_fasta, steps=3, stop_after=2)
    as_old(tmp_path / "torn" / "state", step=1)
    before = (tmp_path / "torn" / "loss.csv").read_text()
    with pytest.raises(InputError, match=r"state.json says step 1 but state.safetensors holds "
                                         r"the weights of step 2"):
        _tiny_run(tmp_path / "torn", example_fasta, steps=3)
    assert (tmp_path / "torn" / "loss.csv").read_text() == before
    as_old(tmp_path / "whole" / "state")
    assert _tiny_run(tmp_path / "whole", example_fasta, steps=3).steps == 3
    assert not (tmp_path / "whole" / "state" / "state.json").exists()  # one file from now on


def test_a_finished_run_or_a_foreign_log_is_not_overwritten(tmp_path, example_fasta):
    """A folder with run.json (or export/) but no state/ is a finished run: refused, not
    trained over. A loss.csv that is not genoctx's is refused too."""
    from genoctx.errors import InputError

    done = tmp_path / "done"
    done.mkdir()
    (done / "run.json").write_text("{}")
    (done / "loss.csv").write_text("step,lr,elapsed_s,loss\n1,1e-3,0.1,1.0\n")
    with pytest.raises(InputError, match="holds a finished run \\(run.json\\)"):
        _tiny_run(done, example_fasta)
    assert (done / "loss.csv").read_text().endswith("1,1e-3,0.1,1.0\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "loss.csv").write_text("epoch,val_loss\n1,0.5\n")
    with pytest.raises(InputError, match="not a genoctx loss log"):
        _tiny_run(other, example_fasta)
    assert (other / "loss.csv").read_text() == "epoch,val_loss\n1,0.5\n"


def test_a_second_run_on_a_busy_folder_stops_at_once(tmp_path, example_fasta):
    fcntl = pytest.importorskip("fcntl")
    from genoctx.errors import InputError

    run_dir = tmp_path / "r"
    run_dir.mkdir()
    with open(run_dir / ".lock", "w") as fh:  # as a run in progress holds it
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InputError, match="another genoctx train is running in"):
            _tiny_run(run_dir, example_fasta)
    assert not (run_dir / "loss.csv").exists()
    assert _tiny_run(run_dir, example_fasta).steps == 2  # free again


@pytest.mark.parametrize("ckpt_every, saved", [(2, "saved at step 2"), (10, "no state was saved")])
def test_ctrl_c_leaves_the_loss_plot_and_says_where_a_rerun_resumes(tmp_path, example_fasta,
                                                                    capsys, ckpt_every, saved):
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    corpus = corpus_mod.Corpus([corpus_mod.Record("pPCP1", nt.encode(seq))])
    sampler = corpus_mod.WindowSampler(corpus, 256, seed=0)
    torch.manual_seed(0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    cfg = LoopConfig(steps=5, lr=1e-3, warmup=2, log_every=1, ckpt_every=ckpt_every)

    def step(i):
        if i == 3:
            raise KeyboardInterrupt
        ids, _ = sampler.sample(2)
        return model.lm_loss(torch.from_numpy(ids))

    with pytest.raises(KeyboardInterrupt):
        train_loop(model, step, sampler, tmp_path, cfg, title="t", quiet=True)
    err = capsys.readouterr().err
    assert "training stopped at step 3 of 5" in err and saved in err
    assert (tmp_path / "loss.png").stat().st_size > 0
    assert len((tmp_path / "loss.csv").read_text().splitlines()) == 4  # header + 3 steps
    assert not (tmp_path / "run.json").exists()


def test_sigterm_stops_a_training_run_as_ctrl_c_does(tmp_path, data_root):
    """What a scheduler sends at a job's time limit (and `scancel`, `kill`): the run says where
    it stopped, draws its loss plot and exits 143; before, it died at once with neither."""
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "genoctx", "train", "--recipe", "lm", "--steps", "100000",
         "--batch-size", "2", "--seq-len", "128", "--threads", "1", "--quiet",
         "--data-root", str(data_root), "--out", str(run)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not (run / "loss.csv").is_file() and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        assert (run / "loss.csv").is_file(), proc.communicate(timeout=60)[1][-2000:]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-2000:]
    assert "training stopped at step" in err and err.rstrip().endswith("genoctx: stopped (SIGTERM)")
    assert (run / "loss.png").stat().st_size > 0 and not (run / "run.json").exists()


def test_a_resume_rewrites_the_loss_log_whole_or_not_at_all(tmp_path, monkeypatch):
    """Resuming drops the rows logged after the saved step. The log was deleted and written
    again row by row: a run stopped in between (Ctrl-C, a scheduler's kill) lost its loss log,
    and another process reading it could see it missing or half written."""
    import csv

    from genoctx.train import loop

    log = tmp_path / "loss.csv"
    rows = [{"step": s, "lr": "1.000e-03", "elapsed_s": f"{s / 10:.1f}", "loss": f"{3 - s / 100:.5f}"}
            for s in range(10, 110, 10)]
    for r in rows:
        loop._append_csv(log, r)
    before = log.read_text()
    real_open = open

    def failing_open(path, mode="r", *a, **k):  # the rewrite is stopped part-way
        fh = real_open(path, mode, *a, **k)
        if "w" in mode or "a" in mode:
            fh.write("step,lr")
            raise KeyboardInterrupt
        return fh

    monkeypatch.setattr("builtins.open", failing_open)
    with pytest.raises(KeyboardInterrupt):
        loop._truncate_csv(log, 50)
    monkeypatch.undo()
    assert log.read_text() == before and len(list(tmp_path.iterdir())) == 1  # no stray copy
    assert loop._truncate_csv(log, 50) == 5.0
    with open(log, newline="") as fh:
        assert [int(r["step"]) for r in csv.DictReader(fh)] == [10, 20, 30, 40, 50]
    assert loop._truncate_csv(log, 5) == 0.0 and not log.exists()


def test_a_run_stopped_off_the_log_grid_logs_the_steps_of_an_uninterrupted_one(tmp_path,
                                                                               example_fasta):
    """--stop-after (or --time-limit) logs the step it stops at, whatever log_every says; the
    resumed run drops that row, so its loss.csv has the rows of a run that never stopped (the
    audit found the extra row kept)."""
    _tiny_run(tmp_path / "a", example_fasta, steps=6, log_every=2)
    _tiny_run(tmp_path / "b", example_fasta, steps=6, log_every=2, stop_after=3)
    steps_b = [r.split(",")[0] for r in (tmp_path / "b" / "loss.csv").read_text().splitlines()]
    assert steps_b == ["step", "2", "3"]
    _tiny_run(tmp_path / "b", example_fasta, steps=6, log_every=2)

    def drop_times(path):
        rows = [r.split(",") for r in path.read_text().splitlines()]
        i = rows[0].index("elapsed_s")
        return [r[:i] + r[i + 1:] for r in rows]

    assert drop_times(tmp_path / "b" / "loss.csv") == drop_times(tmp_path / "a" / "loss.csv")
    assert [r[0] for r in drop_times(tmp_path / "b" / "loss.csv")] == ["step", "2", "4", "6"]
