"""Data-parallel training over torch.distributed (gloo, CPU): processes launched by torchrun."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from genoctx.errors import InputError
from genoctx.model.config import get_config
from genoctx.model.model import GenoCtxModel
from genoctx.tokenize import nucleotide as nt
from genoctx.train import corpus as corpus_mod
from genoctx.train.distributed import DataParallel, from_env

# no load-balance term: it is computed per process, every other term is a mean over tokens
SMALL = dict(d_model=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
             num_experts=8, top_k=2, expert_dim=32, aux_loss_coef=0.0)


def _torchrun(args: list[str], cwd, n: int = 2) -> subprocess.CompletedProcess:
    # --standalone: a rendezvous on this machine at a free port
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           str(n), *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


def _batch(example_fasta, size: int = 4) -> np.ndarray:
    seq = b"".join(example_fasta.read_bytes().split(b"\n")[1:])
    sampler = corpus_mod.WindowSampler(corpus_mod.Corpus([corpus_mod.Record("p", nt.encode(seq))]),
                                       128, seed=3)
    return sampler.sample(size)[0]


def test_synced_gradients_are_those_of_the_whole_batch(tmp_path, example_fasta):
    """Two processes, each with half of a batch: after sync_grads every parameter's gradient
    is the one process's gradient on the whole batch. A gradient that is None on every
    process (an expert no token reached) stays None."""
    ids = _batch(example_fasta)
    np.save(tmp_path / "ids.npy", ids)
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(f"""
        import numpy as np, torch
        from safetensors.torch import save_file
        from genoctx.model.config import get_config
        from genoctx.model.model import GenoCtxModel
        from genoctx.train.distributed import from_env, shutdown
        dp = from_env()
        torch.manual_seed(0)
        model = GenoCtxModel.from_config(get_config("tiny", **{SMALL!r}), backend="torch")
        ids = np.load({str(tmp_path / "ids.npy")!r})
        model.lm_loss(torch.from_numpy(ids[dp.rows(len(ids))]))["loss"].backward()
        dp.sync_grads(model.parameters())
        grads = {{k: p.grad for k, p in model.named_parameters() if p.grad is not None}}
        save_file(grads, {str(tmp_path)!r} + f"/grads{{dp.rank}}.safetensors")
        # None on every process stays None (the optimiser skips it); None on one counts as 0
        params = list(model.parameters())
        for p in params:
            p.grad = torch.full_like(p, float(dp.rank + 1))
        params[0].grad = None
        if dp.rank == 1:
            params[1].grad = None
        dp.sync_grads(params)
        assert params[0].grad is None
        assert torch.all(params[1].grad == 0.5) and torch.all(params[2].grad == 1.5)
        shutdown()
    """))
    res = _torchrun([str(script)], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    torch.manual_seed(0)
    model = GenoCtxModel.from_config(get_config("tiny", **SMALL), backend="torch")
    model.lm_loss(torch.from_numpy(ids))["loss"].backward()
    want = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    for rank in (0, 1):
        got = load_file(str(tmp_path / f"grads{rank}.safetensors"))
        assert set(got) == set(want)
        for k in want:
            torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-6, msg=k)
    # the gradients really come from both halves: one half alone gives others
    model.zero_grad(set_to_none=True)
    model.lm_loss(torch.from_numpy(ids[:2]))["loss"].backward()
    half = {k: p.grad for k, p in model.named_parameters() if p.grad is not None}
    assert any(not torch.allclose(half[k], want[k], atol=1e-5) for k in want if k in half)


def test_train_under_torchrun_follows_the_one_process_run(tmp_path, data_root):
    """`torchrun -m genoctx train` on two processes, each with half of every batch: the logged
    language-model loss follows the one-process run's, only the first process writes, and
    the run record says how it ran."""
    args = ["train", "--recipe", "lm", "--steps", "3", "--batch-size", "4", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root)]
    one = subprocess.run([sys.executable, "-m", "genoctx", *args, "--out", "one"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert one.returncode == 0, one.stderr[-3000:]
    two = _torchrun(["-m", "genoctx", *args, "--out", "two"], tmp_path)
    assert two.returncode == 0, two.stderr[-3000:]
    assert two.stdout.count("checkpoint written") == 1  # the first process speaks for all
    rows = {run: (tmp_path / run / "loss.csv").read_text().splitlines() for run in ("one", "two")}
    assert len(rows["two"]) == 2  # header + the last step, written once
    head = rows["one"][0].split(",")
    lm = {run: float(r[-1].split(",")[head.index("lm")]) for run, r in rows.items()}
    assert lm["two"] == pytest.approx(lm["one"], abs=2e-3)
    record = json.loads((tmp_path / "two" / "export" / "TRAINING.json").read_text())
    assert record["processes"] == 2 and record["batch_per_process"] == 2
    assert record["command"].startswith("torchrun --nnodes 1 --nproc_per_node 2 -m genoctx train")
    one_w = load_file(str(tmp_path / "one" / "export" / "model.safetensors"))
    two_w = load_file(str(tmp_path / "two" / "export" / "model.safetensors"))
    assert max((one_w[k] - two_w[k]).abs().max().item() for k in one_w) < 5e-3
    # a batch that does not split over the processes: a clear error, before any work
    odd = [("3" if a == "4" else a) for a in args]  # --batch-size 3
    bad = _torchrun(["-m", "genoctx", *odd, "--out", "bad"], tmp_path)
    assert bad.returncode != 0 and "multiple of the process count" in bad.stdout + bad.stderr
    assert not (tmp_path / "bad" / "export").exists()


def test_what_the_first_process_refuses_stops_every_process_with_its_message(tmp_path,
                                                                              data_root):
    """A folder with a finished run, or held by another run, is checked by the first process
    alone; the others used to die in their next collective call with ~60 lines from gloo
    ("Connection closed by peer") under the real message."""
    import fcntl

    args = ["-m", "genoctx", "train", "--recipe", "lm", "--steps", "2", "--batch-size", "2",
            "--seq-len", "128", "--threads", "1", "--quiet", "--data-root", str(data_root)]
    done = tmp_path / "done"
    done.mkdir()
    (done / "run.json").write_text("{}")
    busy = tmp_path / "busy"
    busy.mkdir()
    with open(busy / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        for folder, message in ((done, "holds a finished run"), (busy, "another genoctx train")):
            res = _torchrun([*args, "--out", str(folder)], tmp_path)
            err = res.stdout + res.stderr
            assert res.returncode != 0 and err.count(message) == 2, err[-3000:]
            # each process stops on the message itself (torchrun then prints its own summary,
            # which may show the second one as stopped by it if it had not exited yet)
            assert "Connection closed" not in err and "[rank1]" not in err


def test_one_process_without_torchrun(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dp = from_env()
    assert dp == DataParallel() and dp.main and dp.rows(3) == slice(0, 3)
    with pytest.raises(InputError, match="multiple"):
        DataParallel(1, 2).rows(3)
    assert DataParallel(1, 4).rows(8) == slice(2, 4)


def test_a_run_resumes_on_another_number_of_processes(tmp_path, data_root):
    """The sampler stream and the state are global: two steps on two processes, resumed on one
    process, reach the one-process run (its loss to the load-balance term's difference)."""
    args = ["train", "--recipe", "lm", "--steps", "4", "--batch-size", "2", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root)]
    first = _torchrun(["-m", "genoctx", *args, "--stop-after", "2", "--out", "run"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    for out in ("run", "one"):
        res = subprocess.run([sys.executable, "-m", "genoctx", *args, "--out", out],
                             cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
    rows = {out: (tmp_path / out / "loss.csv").read_text().splitlines() for out in ("run", "one")}
    # the row logged at the stop (step 2, off the log grid) is dropped on resume: the log has
    # the rows of the run that never stopped
    assert [r.split(",")[0] for r in rows["run"]] == [r.split(",")[0] for r in rows["one"]] \
        == ["step", "4"]
    head = rows["one"][0].split(",")
    lm = {out: float(r[-1].split(",")[head.index("lm")]) for out, r in rows.items()}
    assert lm["run"] == pytest.approx(lm["one"], abs=2e-3)


def test_a_time_limit_stops_a_run_of_two_processes_and_exports_it(tmp_path, data_root):
    """Out of time after the first step, both processes stop there (the run ends rather than
    hanging on a collective one of them skipped), and the export's record says how many steps
    were done."""
    args = ["train", "--recipe", "lm", "--steps", "4", "--batch-size", "2", "--seq-len", "128",
            "--threads", "1", "--quiet", "--data-root", str(data_root), "--time-limit", "1e-9",
            "--out", "run"]
    res = _torchrun(["-m", "genoctx", *args], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    record = json.loads((tmp_path / "run" / "export" / "TRAINING.json").read_text())
    assert record["steps_done"] == 1 and record["loop"]["time_limit"] == 1e-9
    rows = (tmp_path / "run" / "loss.csv").read_text().splitlines()
    assert [r.split(",")[0] for r in rows] == ["step", "1"]


def _ce_case(seed: int = 0):
    """Logits [4, 64, C], labels with an all-unlabelled row, class weights."""
    from genoctx.heads.classes import IGNORE_INDEX, NUM_CLASSES

    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 64, NUM_CLASSES, generator=g)
    labels = torch.randint(0, NUM_CLASSES, (4, 64), generator=g)
    labels[1] = IGNORE_INDEX  # a window wholly inside an unlabelled stretch
    labels[3, :40] = IGNORE_INDEX
    weights = torch.rand(NUM_CLASSES, generator=g) + 0.5
    return logits, labels, weights


def test_annotation_loss_is_the_global_weighted_mean_and_never_nan(tmp_path):
    """Each process's class-weighted loss, averaged as sync_grads averages gradients, is the
    one-process loss of the whole batch (it was a mean of per-process means, up to 31% off),
    and a process whose rows are all unlabelled gives 0, not NaN (NaN stopped runs)."""
    import torch.nn.functional as F

    from genoctx.heads.classes import IGNORE_INDEX
    from genoctx.train.recipes import weighted_ce

    logits, labels, weights = _ce_case()
    one = DataParallel()
    whole = weighted_ce(logits, labels, weights, one)
    assert torch.equal(whole, F.cross_entropy(logits.flatten(0, 1), labels.flatten(),
                                              weight=weights, ignore_index=IGNORE_INDEX))
    x = logits[1:2].clone().requires_grad_()
    alone = weighted_ce(x, labels[1:2], weights, one)
    alone.backward()
    assert alone.item() == 0.0 and torch.all(x.grad == 0)
    from safetensors.torch import save_file

    save_file({"logits": logits, "labels": labels, "weights": weights}, str(tmp_path / "case.st"))
    script = tmp_path / "ce.py"
    script.write_text(textwrap.dedent(f"""
        from safetensors.torch import load_file, save_file
        from genoctx.train.distributed import from_env, shutdown
        from genoctx.train.recipes import weighted_ce
        dp = from_env()
        case = load_file({str(tmp_path / "case.st")!r})
        mine = dp.rows(4)  # rank 1 holds the unlabelled row
        x = case["logits"][mine].clone().requires_grad_()
        loss = weighted_ce(x, case["labels"][mine], case["weights"], dp)
        loss.backward()
        grad = x.grad / dp.world  # as sync_grads averages the parameters' gradients
        save_file({{"loss": loss.detach().reshape(1), "grad": grad}},
                  {str(tmp_path)!r} + f"/ce{{dp.rank}}.safetensors")
        shutdown()
    """))
    res = _torchrun([str(script)], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = [load_file(str(tmp_path / f"ce{r}.safetensors")) for r in (0, 1)]
    x = logits.clone().requires_grad_()
    F.cross_entropy(x.flatten(0, 1), labels.flatten(), weight=weights,
                    ignore_index=IGNORE_INDEX).backward()
    torch.testing.assert_close((got[0]["loss"] + got[1]["loss"]) / 2, whole.reshape(1))
    torch.testing.assert_close(torch.cat([got[0]["grad"], got[1]["grad"]]), x.grad)
