"""Training recipes, run as ``genoctx train --recipe NAME``.

* ``lm`` — nucleotide language-model pretraining of the ``tiny`` flavour on the train and
  pretrain-only genomes (next-token cross-entropy + router losses).
* ``annotation`` — the per-base annotation head (:mod:`genoctx.heads.annotation`) on train-role
  annotations, fine-tuning the backbone from an ``lm`` run (``--init``); ``--init`` an
  annotation export (``genoctx/weights``, say) trains on from its backbone and head.

Every input file passes the leakage guard (:mod:`genoctx.train.corpus`). A run directory ends
with ``export/``: the checkpoint that ``--model PATH`` (or, copied to ``genoctx/weights``, the
embedded default) loads, with ``TRAINING.json`` recording the command, every input file's sha256
and the settings. Under ``torchrun`` the recipes train data-parallel
(:mod:`genoctx.train.distributed`): ``--batch-size`` is the global batch, split over the
processes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from genoctx.errors import InputError
from genoctx.heads.annotation import (
    HEAD_WEIGHTS,
    AnnotationHead,
    AnnotationHeadConfig,
    load_annotation_model,
)
from genoctx.heads.classes import IGNORE_INDEX, NUM_CLASSES
from genoctx.io.atomic import atomic_path
from genoctx.model import checkpoint
from genoctx.model.model import BOS_ID, GenoCtxModel
from genoctx.train import corpus as corpus_mod
from genoctx.train.distributed import DataParallel, from_env
from genoctx.train.loop import LoopConfig, command_line, refuse_other_settings, train_loop


@dataclass(kw_only=True)
class Recipe:
    name: str
    flavour: str = "tiny"
    seq_len: int = 2048
    batch_size: int = 8
    eukaryote_weight: float = 1.0  # annotation: sampling weight of the eukaryote records
    loop: LoopConfig


RECIPES: dict[str, Recipe] = {
    "lm": Recipe(name="lm", seq_len=1024, batch_size=8,
                 loop=LoopConfig(steps=120, lr=3e-3, warmup=20, ckpt_every=20)),
    "annotation": Recipe(name="annotation", seq_len=1024, batch_size=4,
                         loop=LoopConfig(steps=400, lr=1e-3, warmup=30, ckpt_every=20)),
}


LM_WEIGHT = 0.5  # the annotation recipe keeps training the language model on the same passes


# the options checked by get_recipe: (name on the command line, test, what it must be)
_CHECKS = {
    "steps": ("--steps", lambda v: v >= 1, "at least 1"),
    "batch_size": ("--batch-size", lambda v: v >= 1, "at least 1"),
    "seq_len": ("--seq-len", lambda v: v >= 2, "at least 2 bases"),
    "lr": ("--lr", lambda v: math.isfinite(v) and v > 0, "a positive number"),
    "seed": ("--seed", lambda v: v >= 0, "0 or more"),
    "threads": ("--threads", lambda v: v >= 1, "at least 1"),
    "stop_after": ("--stop-after", lambda v: v >= 1, "at least 1"),
    "time_limit": ("--time-limit", lambda v: math.isfinite(v) and v > 0,
                   "a positive number of seconds"),
    "eukaryote_weight": ("--eukaryote-weight", lambda v: math.isfinite(v) and v > 0,
                         "a positive number"),
}


def get_recipe(name: str, **overrides) -> Recipe:
    """The recipe ``name`` with ``overrides`` (None: the recipe's own value), each checked
    (:class:`InputError` names a bad one before any data is read)."""
    if name not in RECIPES:
        raise InputError(f"unknown recipe {name!r}; choose one of {', '.join(RECIPES)}")
    for key, value in overrides.items():
        if value is not None and key in _CHECKS:
            flag, ok, want = _CHECKS[key]
            if not ok(value):
                raise InputError(f"{flag} must be {want}, got {value}")
    r = RECIPES[name]
    loop_over = {k: v for k, v in overrides.items() if k in LoopConfig.__dataclass_fields__ and v is not None}
    rec_over = {k: v for k, v in overrides.items() if k in Recipe.__dataclass_fields__ and v is not None}
    return replace(r, loop=replace(r.loop, **loop_over), **rec_over)


def embed_and_lm(model: GenoCtxModel, tokens_BT: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Differentiable :meth:`GenoCtxModel.embed` plus the LM loss of the same two passes.

    Returns ``(embed [B, T, 2D] = [h_fwd, h_rc], lm_loss)``: the forward and reverse-complement
    passes that build the embedding are also next-token predictions, so the language-model
    objective costs nothing extra and keeps the backbone a language model while the head trains.
    """
    from genoctx.tokenize.nucleotide import reverse_complement

    B = tokens_BT.shape[0]
    seqs = torch.cat([tokens_BT, reverse_complement(tokens_BT, dim=1)], 0)  # [2B, T]
    inp = torch.cat([torch.full_like(seqs[:, :1], BOS_ID), seqs], 1)        # [2B, T+1]
    h = model.hidden_train(inp)                                              # [2B, T+1, D]
    logits = model.lm_head(h[:, :-1])
    lm = F.cross_entropy(logits.float().flatten(0, 1), seqs.flatten())
    h = h[:, 1:]
    return torch.cat([h[:B], h[B:].flip(1)], -1), lm


class AnnotationModel(torch.nn.Module):
    """Backbone + annotation head: ``tokens [B, T] -> (logits [B, T, NUM_CLASSES], lm_loss)``."""

    def __init__(self, backbone: GenoCtxModel, head: AnnotationHead):
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, tokens_BT: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        emb, lm = embed_and_lm(self.backbone, tokens_BT)
        return self.head(emb), lm


def _write_run_record(run_dir: Path, recipe: Recipe, corpus, extra: dict,
                      dp: DataParallel | None = None) -> None:
    dp = dp or DataParallel()
    record = {
        "recipe": recipe.name, "command": command_line(), "cwd": os.getcwd(),
        "flavour": recipe.flavour,
        "seq_len": recipe.seq_len, "batch_size": recipe.batch_size, "processes": dp.world,
        "device": dp.device, "batch_per_process": recipe.batch_size // dp.world,
        "loop": asdict(recipe.loop),
        "steps_done": recipe.loop.steps if recipe.loop.stop_after is None
        else min(recipe.loop.steps, recipe.loop.stop_after),
        "corpus_tokens": corpus.num_tokens, "data_files": corpus.files,
        "torch": torch.__version__, "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    record = {k: None if isinstance(v, float) and not math.isfinite(v) else v  # valid JSON
              for k, v in record.items()}
    with atomic_path(run_dir / "run.json") as tmp:
        tmp.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n")


def _settings(recipe: Recipe, files: list[dict], init: dict | None = None) -> dict:
    """What a resumed run must share with its start, beside the loop's schedule and seed: the
    recipe's shape, the weights it started from (``init``: :func:`_init_digests`) and the input
    files it reads (``data_files_sha256``: :func:`data_files_digest`). A resume with another
    ``--init`` or ``--data-root`` was accepted, and its run record then named only the last
    invocation's init and files. ``files`` are the corpus's (:attr:`Corpus.files`, or
    :func:`genoctx.train.corpus.file_lines` before it is read)."""
    init = init or {}
    return {"recipe": recipe.name, "flavour": recipe.flavour, "seq_len": recipe.seq_len,
            "batch_size": recipe.batch_size, "eukaryote_weight": recipe.eukaryote_weight,
            "init_sha256": init.get("model_sha256"),
            "init_head_sha256": init.get("head_sha256"),
            "data_files_sha256": data_files_digest(files)}


def _refuse_other_settings(recipe: Recipe, run_dir: Path, dp: DataParallel, rels: list[str],
                           data_root, init: dict | None = None) -> None:
    """A resume of ``run_dir`` with other settings (another --init or data root among them) is
    refused before the corpus is read: it took as long as reading and guarding every file."""
    settings = _settings(recipe, corpus_mod.file_lines(rels, data_root), init)
    dp.first_decides(lambda: refuse_other_settings(run_dir, recipe.loop, settings))


def data_files_digest(files: list[dict]) -> str:
    """sha256 of the corpus's input files in the order read (each path and its sha256)."""
    text = "".join(f"{f['path']}\t{f['sha256']}\n" for f in files)
    return hashlib.sha256(text.encode()).hexdigest()


def _init_digests(init) -> dict:
    """The sha256 of the ``--init`` checkpoint's weights (``model_sha256``, and ``head_sha256``
    for an annotation export), each checked against its ``.sha256`` file."""
    from genoctx.io.dataroot import sha256_file

    directory = checkpoint.resolve_checkpoint(init)
    digests = {"model_sha256": checkpoint.verify_digest(directory)}
    if (directory / HEAD_WEIGHTS).is_file():
        digests["head_sha256"] = sha256_file(directory / HEAD_WEIGHTS)
    return digests


def run_lm(recipe: Recipe, data_root, run_dir: Path, quiet: bool = False,
           device: str = "cpu") -> Path:
    """Pretrain the backbone on ``device``; returns the export directory (written by the first
    process)."""
    dp = from_env(device)
    mine = dp.rows(recipe.batch_size)  # this process's share of every batch (checked first)
    _refuse_other_settings(recipe, run_dir, dp, corpus_mod.lm_files(data_root), data_root)
    corpus = corpus_mod.lm_corpus(data_root)
    torch.manual_seed(recipe.loop.seed)
    model = GenoCtxModel.from_config(recipe.flavour, backend="auto").to(dp.device)
    sampler = corpus_mod.WindowSampler(corpus, recipe.seq_len, seed=recipe.loop.seed)

    def step(_: int) -> dict:
        ids, _ = sampler.sample(recipe.batch_size)  # the whole batch: one sampler stream
        return model.lm_loss(torch.from_numpy(ids[mine]).to(dp.device))

    res = train_loop(model, step, sampler, run_dir, recipe.loop, title="lm pretraining",
                     quiet=quiet, dp=dp, settings=_settings(recipe, corpus.files))
    export = run_dir / "export"
    if dp.main:
        model.eval().save_pretrained(export)
        _write_run_record(run_dir, recipe, corpus,
                          {"final_loss": res.final_loss, "wall_s": res.wall_s,
                           "steps_done": res.steps}, dp)
        shutil.copy(run_dir / "run.json", export / "TRAINING.json")
    dp.barrier()
    return export


def run_annotation(recipe: Recipe, data_root, run_dir: Path, init: Path | None,
                   quiet: bool = False, device: str = "cpu") -> Path:
    """Train the annotation head (and fine-tune the backbone) on train-role annotations, on
    ``device``."""
    dp = from_env(device)
    mine = dp.rows(recipe.batch_size)
    init_digests = _init_digests(init) if init is not None else None
    _refuse_other_settings(recipe, run_dir, dp, corpus_mod.annotation_files(data_root),
                           data_root, init_digests)
    corpus = corpus_mod.annotation_corpus(data_root, recipe.eukaryote_weight)
    torch.manual_seed(recipe.loop.seed)
    if init is not None and (checkpoint.resolve_checkpoint(init) / HEAD_WEIGHTS).is_file():
        # an annotation export (`embedded`, say): train on from its backbone and head, both
        # read through their sha256 checks
        backbone, head = load_annotation_model(init, backend="auto")
    else:
        if init is not None:
            backbone = GenoCtxModel.from_pretrained(init, backend="auto")
        else:
            backbone = GenoCtxModel.from_config(recipe.flavour, backend="auto")
        head = AnnotationHead(AnnotationHeadConfig(in_dim=2 * backbone.config.d_model))
    model = AnnotationModel(backbone, head).to(dp.device)
    sampler = corpus_mod.WindowSampler(corpus, recipe.seq_len, seed=recipe.loop.seed)
    weights = class_weights(corpus).to(dp.device)

    def step(_: int) -> dict:
        ids, labels = sampler.sample(recipe.batch_size)
        logits, lm = model(torch.from_numpy(ids[mine]).to(dp.device))
        ce = weighted_ce(logits, torch.from_numpy(labels[mine]).to(dp.device), weights, dp)
        aux = backbone.aux_loss()
        return {"loss": ce + LM_WEIGHT * lm + aux, "ce": ce, "lm": lm, "aux": aux}

    res = train_loop(model, step, sampler, run_dir, recipe.loop, title="annotation head",
                     quiet=quiet, dp=dp, settings=_settings(recipe, corpus.files, init_digests))
    export = run_dir / "export"
    from genoctx.heads.annotation import save_annotation_model

    if dp.main:
        save_annotation_model(export, backbone.eval(), head.eval())
        _write_run_record(run_dir, recipe, corpus,
                          {"final_loss": res.final_loss, "wall_s": res.wall_s,
                           "steps_done": res.steps, "init": str(init) if init else None,
                           # what ship checks an --lm-run against (the init's weights)
                           "init_sha256": init_digests and init_digests["model_sha256"],
                           "eukaryote_weight": recipe.eukaryote_weight,
                           "sample_shares": corpus_mod.sample_shares(corpus)}, dp)
        shutil.copy(run_dir / "run.json", export / "TRAINING.json")
    dp.barrier()
    return export


def weighted_ce(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor,
                dp) -> torch.Tensor:
    """Class-weighted cross-entropy of this process's rows, the global batch's weighted mean
    once the processes' gradients are averaged (``dp``): the weight sum is the global one, so
    every process's loss is ``world · sum(w·l) / global sum(w)``. Bases without a label
    (``IGNORE_INDEX``) weigh nothing; a global batch without any gives 0, not NaN (a window
    wholly inside an unlabelled stretch, or every row of one process, divided 0 by 0 and
    stopped the run at the same step on every rerun).

    With one process and labelled bases this is ``F.cross_entropy(..., weight=weights,
    ignore_index=IGNORE_INDEX)`` itself, so one-process runs are as before to the bit."""
    flat_logits, flat_labels = logits.flatten(0, 1), labels.flatten()
    kept = flat_labels != IGNORE_INDEX
    den = dp.total(weights[flat_labels[kept]].sum())
    if dp.world == 1 and float(den) > 0:
        return F.cross_entropy(flat_logits, flat_labels, weight=weights,
                               ignore_index=IGNORE_INDEX)
    per_base = F.cross_entropy(flat_logits, flat_labels, weight=weights,
                               ignore_index=IGNORE_INDEX, reduction="none")
    return per_base.sum() * dp.world / den.clamp_min(torch.finfo(torch.float32).tiny)


def class_weights(corpus) -> torch.Tensor:
    """Inverse square-root class frequencies (rare RNA classes still count), mean 1."""
    counts = np.zeros(NUM_CLASSES, dtype=np.float64)
    for r in corpus.records:
        y = r.labels[r.labels != IGNORE_INDEX]
        counts += np.bincount(y, minlength=NUM_CLASSES)[:NUM_CLASSES]
    # both strands are sampled: fold each class with its reverse-complement partner
    from genoctx.heads.classes import RC_PERMUTATION

    counts = counts + counts[list(RC_PERMUTATION)]
    w = 1.0 / np.sqrt(np.maximum(counts, 1.0))
    w[counts == 0] = 0.0
    w = w / w[w > 0].mean()
    return torch.tensor(w, dtype=torch.float32)
