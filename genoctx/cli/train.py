"""``genoctx train``: run a training recipe (language model, annotation head)."""

from __future__ import annotations

from pathlib import Path

import typer


def train(
    recipe: str = typer.Option(..., "--recipe", help="Recipe: lm (pretraining) or annotation (head)."),
    data_root: Path | None = typer.Option(None, "--data-root", help="Data folder with MANIFEST.tsv "
                                          "(default: $GENOCTX_DATA_ROOT or ../shared/data)."),
    out: Path = typer.Option(Path("runs/train"), "--out", help="Run directory (resumed if it exists)."),
    init: Path | None = typer.Option(None, "--init", help="Checkpoint to start from (annotation: "
                                     "the lm run's export/ directory, or an annotation export "
                                     "to train on with its head)."),
    steps: int | None = typer.Option(None, "--steps", help="Optimisation steps (recipe default)."),
    batch_size: int | None = typer.Option(None, "--batch-size", help="Windows per step (over "
                                          "all processes under torchrun)."),
    seq_len: int | None = typer.Option(None, "--seq-len", help="Bases per training window."),
    lr: float | None = typer.Option(None, "--lr", help="Peak learning rate."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (recipe default 0)."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for torch."),
    stop_after: int | None = typer.Option(None, "--stop-after", help="Stop (and export) after "
                                          "this many steps of the --steps schedule; rerunning "
                                          "with a larger value resumes."),
    time_limit: float | None = typer.Option(None, "--time-limit", help="Stop (and export) once "
                                            "this many seconds of training have passed, as a "
                                            "job's wall-clock limit asks; rerunning resumes."),
    eukaryote_weight: float | None = typer.Option(None, "--eukaryote-weight", help="annotation: "
                                                  "draw windows from the eukaryote chunks this "
                                                  "many times as often (default 1; 4 makes about "
                                                  "three windows in ten eukaryotic)."),
    device: str = typer.Option("auto", "--device", help="auto (cuda when available), cpu or "
                               "cuda; under torchrun, cuda is each process's own GPU."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or notes."),
) -> None:
    """Train a recipe on the train-role data; validation/benchmark files are refused.

    Example: genoctx train --recipe lm --out runs/lm && genoctx train --recipe annotation
    --init runs/lm/export --out runs/annotation

    Data-parallel over processes (torch.distributed; tested on one machine): torchrun
    --nproc_per_node 2 -m genoctx train --recipe lm --batch-size 8 --threads 1 --out runs/lm
    (--batch-size is the global batch, split over the processes; the first one writes).
    """
    import torch

    from genoctx.errors import InputError
    from genoctx.model.device import resolve_device
    from genoctx.train import recipes

    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give the run's folder (made when missing)")
    r = recipes.get_recipe(recipe, steps=steps, batch_size=batch_size, seq_len=seq_len, lr=lr,
                           seed=seed, threads=threads, stop_after=stop_after,
                           time_limit=time_limit, eukaryote_weight=eukaryote_weight)
    if r.loop.steps <= r.loop.warmup and not quiet:  # lr_at: no peak, so no decay either
        typer.echo(f"note: --steps {r.loop.steps} is within the {r.name} recipe's warm-up of "
                   f"{r.loop.warmup} steps: the learning rate rises to "
                   f"{r.loop.lr * r.loop.steps / r.loop.warmup:.2g} of --lr {r.loop.lr:g} and "
                   "never decays", err=True)
    if eukaryote_weight is not None and r.name != "annotation":
        raise InputError("--eukaryote-weight applies to the annotation recipe only")
    if init is not None and r.name != "annotation":
        raise InputError("--init applies to the annotation recipe only (lm pretraining starts "
                         "from random weights)")
    if init is not None:  # here, not after the corpus is read (tens of seconds) as it was
        from genoctx.model import checkpoint

        checkpoint.resolve_checkpoint(init)
    # Before torch starts its worker threads, in case they take the flush-to-zero mode from the
    # thread that starts them (genoctx.train.loop.train_loop sets it again for library callers).
    torch.set_flush_denormal(True)
    if threads:
        torch.set_num_threads(threads)
    from genoctx.train.distributed import from_env, shutdown
    device = resolve_device(device)
    try:
        if r.name == "lm":
            export = recipes.run_lm(r, data_root, out, quiet=quiet, device=device)
        else:
            export = recipes.run_annotation(r, data_root, out, init, quiet=quiet, device=device)
        if from_env(device).main:
            typer.echo(f"checkpoint written to {export}")
            _say_if_stopped_early(out)
    finally:
        shutdown()


def _say_if_stopped_early(out: Path) -> None:
    """A line saying how to go on when --stop-after or --time-limit ended the run early."""
    import json

    try:
        record = json.loads((out / "run.json").read_text())
        done, steps = int(record["steps_done"]), int(record["loop"]["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    if done < steps:
        typer.echo(f"stopped at step {done:,} of {steps:,}; run the same command again (with a "
                   "larger --stop-after, or none) to resume", err=True)


def register(app: typer.Typer) -> None:
    app.command("train")(train)
