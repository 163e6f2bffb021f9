"""A small, deterministic, resumable training loop (one device, or data-parallel processes).

A run directory holds ``state/`` (model, optimizer and sampler state: one safetensors file with
the step, sampler and RNG state as JSON in its header, replaced whole; no pickle), ``loss.csv``
(one row per logged step), ``loss.png`` and ``run.json`` (the exact command, the data manifest
of every input file with its sha256, settings, final metrics).
Re-running the same command resumes from ``state/`` and reaches the same result as an
uninterrupted run (same seeds, same sampler stream, same step count). Under ``torchrun`` the
processes average their gradients every step and only the first writes
(:mod:`genoctx.train.distributed`).
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from genoctx.errors import InputError
from genoctx.io.atomic import atomic_path
from genoctx.progress import progress_bar
from genoctx.train.distributed import DataParallel


@dataclass(kw_only=True)
class LoopConfig:
    steps: int
    lr: float = 2e-3
    min_lr_ratio: float = 0.1
    warmup: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 10
    ckpt_every: int = 100
    seed: int = 0
    threads: int | None = None
    stop_after: int | None = None  # end early (time budget) on the schedule of `steps`
    # end early once this process has trained this many seconds (a job's wall-clock limit):
    # the step under way finishes, the state is saved and the recipe exports it
    time_limit: float | None = None


@dataclass
class TrainResult:
    steps: int  # steps done, resumed ones included (less than the schedule's when stopped early)
    final_loss: float
    wall_s: float
    history: list[dict] = field(default_factory=list)


def lr_at(step: int, cfg: LoopConfig) -> float:
    """Linear warm-up, then cosine decay to ``min_lr_ratio * lr``."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * t)))


def _optimizer(model: torch.nn.Module, cfg: LoopConfig) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim < 2 or "norm" in name or "bias" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95), eps=1e-8)


# the key of the state's metadata (step, optimiser groups, sampler and RNG state) in the header
# of state.safetensors: tensors and metadata are one file, replaced by one rename, so a stop at any
# moment leaves the previous state or the new one, never the tensors of one beside the metadata of
# the other (earlier versions wrote a state.json beside it; see _load_state)
STATE_META = "genoctx_state"


def _save_state(state_dir: Path, model, opt, step: int, extra: dict) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    osd = opt.state_dict()
    for pid, st in osd["state"].items():
        for k, v in st.items():
            t = v if torch.is_tensor(v) else torch.tensor(v)
            tensors[f"opt.{pid}.{k}"] = t.detach().contiguous().cpu()
    meta = {"step": step, "param_groups": osd["param_groups"], **extra}
    header = {STATE_META: json.dumps(meta, default=_json_default)}
    with atomic_path(state_dir / "state.safetensors") as tmp:
        save_file(tensors, str(tmp), metadata=header)
    # an earlier version's state.json is stale now; the file's own metadata is read first anyway
    (state_dir / "state.json").unlink(missing_ok=True)


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o))


def _refuse_changed(state_dir: Path, saved: dict | None, settings: dict | None) -> None:
    """InputError naming each of ``settings`` that differs from the ``saved`` ones; a setting
    that the state predates (saved by an earlier version) is not compared."""
    if settings is None or saved is None:
        return
    changed = [f"{k} {_shown(saved[k])} → {_shown(v)}" for k, v in settings.items()
               if k in saved and saved[k] != v]
    if changed:
        raise InputError(f"{state_dir.parent} was started with other settings "
                         f"({'; '.join(changed)}): a resumed run keeps the settings it "
                         "began with; rerun with those, or give another --out")


def refuse_other_settings(run_dir: Path, cfg: LoopConfig, settings: dict) -> None:
    """What :func:`train_loop` refuses when it resumes ``run_dir`` with other settings, told
    before the caller reads its data (a corpus takes seconds to minutes to read and guard):
    ``settings`` as the caller will give them to :func:`train_loop`. A state that cannot be
    read is left to :func:`train_loop`, which says what to do with it."""
    try:
        saved = _state_meta(run_dir / "state")
    except InputError:
        return
    if saved is not None:
        _refuse_changed(run_dir / "state", saved[0].get("settings"),
                        {**run_settings(cfg), **settings})


def _state_meta(state_dir: Path) -> tuple[dict, Path] | None:
    """The saved state's metadata and the file it came from (see :func:`_load_state`); None
    when there is no state; :class:`InputError` for one that cannot be read."""
    path, old = state_dir / "state.safetensors", state_dir / "state.json"
    fix = f"remove {state_dir} to start the run again, or give another --out"
    if not path.is_file():
        if old.is_file():
            raise InputError(f"{state_dir}: state.safetensors is missing beside state.json, so "
                             "the run cannot resume; remove state/ to start it again")
        return None
    try:
        with safe_open(str(path), "pt") as fh:
            header = fh.metadata() or {}
    except (SafetensorError, OSError) as exc:
        raise InputError(f"{path} cannot be read ({exc}); {fix}") from None
    source = path if STATE_META in header else old
    if source == old and not old.is_file():
        raise InputError(f"{path} holds no training metadata (step, sampler), so the run "
                         f"cannot resume; {fix}")
    try:
        meta = json.loads(header[STATE_META] if source == path else old.read_text())
        meta["step"], meta["param_groups"] = int(meta["step"]), meta["param_groups"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source} is damaged ({exc}); {fix}") from None
    return meta, source


def _load_state(state_dir: Path, model, opt, settings: dict | None = None) -> dict | None:
    """The saved state's metadata, after loading its weights into ``model`` and ``opt``; None
    when there is none. A state saved with other ``settings``, or damaged, is an
    :class:`InputError` that says what to do.

    The metadata is read from ``state.safetensors``'s header. A state written by an earlier
    version keeps it in ``state.json`` beside the tensors, two files replaced one after the
    other: such a pair is used only when the optimiser's own step count (saved with the
    tensors) is the step that ``state.json`` names, since a stop between the two renames left
    one step's weights beside another step's sampler and RNG state, and resumed silently to
    another result."""
    saved = _state_meta(state_dir)
    if saved is None:
        return None
    meta, source = saved
    step, old = meta["step"], state_dir / "state.json"
    fix = f"remove {state_dir} to start the run again, or give another --out"
    _refuse_changed(state_dir, meta.get("settings"), settings)
    try:
        tensors = load_file(str(state_dir / "state.safetensors"))
    except (SafetensorError, OSError) as exc:
        raise InputError(f"{state_dir / 'state.safetensors'} cannot be read ({exc}); "
                         f"{fix}") from None
    if source == old:  # the two-file state of an earlier version: both of the same step?
        counts = [int(v.max()) for k, v in tensors.items()
                  if k.startswith("opt.") and k.endswith(".step")]
        if counts and max(counts) != step:
            raise InputError(f"{state_dir}: state.json says step {step} but state.safetensors "
                             f"holds the weights of step {max(counts)} (the run was stopped "
                             f"while its state was written); {fix}")
    try:
        model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    except RuntimeError:
        raise InputError(f"{state_dir} holds the state of another model (another recipe or "
                         f"--init); {fix}") from None
    state: dict = {}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, pid, name = k.split(".", 2)
            state.setdefault(int(pid), {})[name] = v
    try:
        opt.load_state_dict({"state": state, "param_groups": meta["param_groups"]})
    except (ValueError, KeyError, RuntimeError) as exc:
        raise InputError(f"{state_dir}: the optimiser state does not fit this model ({exc}); "
                         f"{fix}") from None
    return meta


def _shown(value) -> str:
    """A setting as a refusal names it: a sha256 shortened to its first 12 digits."""
    if isinstance(value, str) and len(value) == 64:
        return repr(value[:12] + "…")
    return repr(value)


def plot_losses(csv_path: Path, png_path: Path, title: str) -> None:
    """Loss curve(s) from ``loss.csv`` (every numeric column but step/lr/time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(csv_path) as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        return
    keys = [k for k in rows[0] if k not in ("step", "lr", "elapsed_s", "tokens")]
    steps = [int(r["step"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    for k in keys:
        ax.plot(steps, [float(r[k]) for r in rows], label=k)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    with atomic_path(png_path) as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def train_loop(model: torch.nn.Module, step_fn: Callable[[int], dict], sampler, run_dir: Path,
               cfg: LoopConfig, *, title: str, quiet: bool = False,
               dp: DataParallel | None = None, settings: dict | None = None) -> TrainResult:
    """Run ``cfg.steps`` optimisation steps; ``step_fn(step)`` returns {"loss": tensor, ...metrics}.

    Resumes from ``run_dir/state`` when present, only with the settings it was started with
    (``cfg``'s schedule and seed, plus the caller's ``settings``: recipe, window length, batch
    size, ...; :class:`InputError` names what differs). A folder that holds a finished run
    (``run.json``, ``export/``) but no state, or a ``loss.csv`` of something else, is refused
    rather than overwritten. The sampler must expose ``state()`` and ``set_state()`` so that a
    resumed run draws the same batches. With ``dp`` (data-parallel
    processes) ``step_fn`` computes this process's share of the batch: gradients are averaged
    over the processes before each step, the logged metrics are the global batch's, and only
    the first process writes.
    """
    dp = dp or DataParallel()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    # Subnormal floats (activations and gradients of a training model drift into them) take a
    # slow path on x86 CPUs: without this, CPU steps of the annotation recipe slowed from 1.3 s
    # to 5 s within 350 steps. The mode is per thread, so `genoctx train` also sets it before any
    # torch work, in case worker threads take it from the thread that starts them.
    torch.set_flush_denormal(True)
    torch.manual_seed(cfg.seed)
    with contextlib.ExitStack() as held:
        def hold() -> None:
            run_dir.mkdir(parents=True, exist_ok=True)
            held.enter_context(_run_lock(run_dir))

        # every process learns whether the first holds the folder (and any state in it is
        # whole); a refusal stops them all with its message
        dp.first_decides(hold)
        return _train(model, step_fn, sampler, run_dir, cfg, title, quiet, dp, settings)


@contextlib.contextmanager
def _run_lock(run_dir: Path):
    """Hold ``run_dir/.lock`` while a run writes there: a second run on the same folder stops
    at once instead of writing every log row twice and saving over the first one's state."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    with open(run_dir / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"another genoctx train is running in {run_dir}; wait for it, or "
                             "give another --out") from None
        yield


def _train(model, step_fn, sampler, run_dir: Path, cfg: LoopConfig, title: str, quiet: bool,
           dp: DataParallel, settings: dict | None) -> TrainResult:
    """The body of :func:`train_loop`, once the run folder is held."""
    opt = _optimizer(model, cfg)
    state_dir, csv_path = run_dir / "state", run_dir / "loss.csv"
    settings = {**run_settings(cfg), **(settings or {})}
    meta = _load_state(state_dir, model, opt, settings)
    if meta is None:
        dp.first_decides(lambda: _check_fresh(run_dir, csv_path))
    dp.broadcast(model)  # one starting point, however each process built its model
    start, before = 0, 0.0
    if meta is not None:
        start = meta["step"]
        sampler.set_state(meta["sampler"])
        torch.set_rng_state(torch.tensor(meta["torch_rng"], dtype=torch.uint8))
        before = _truncate_csv(csv_path, start, cfg.log_every) if dp.main else 0.0
    elif csv_path.exists() and dp.main:
        csv_path.unlink()
    # elapsed_s counts on across resumes (from the last logged step kept)
    t0, last, history = time.time() - before, float("nan"), []
    model.train()
    end = cfg.steps if cfg.stop_after is None else min(cfg.steps, cfg.stop_after)
    if cfg.time_limit is not None and not cfg.time_limit > 0:
        raise ValueError(f"time_limit must be a positive number of seconds, got {cfg.time_limit}")
    began, done, saved, finished = time.monotonic(), start, start, False
    try:
        with progress_bar(title, total=end, quiet=quiet or not dp.main) as bar:
            bar.advance(start)
            for step in range(start, end):
                for g in opt.param_groups:
                    g["lr"] = lr_at(step, cfg)
                out = step_fn(step)
                opt.zero_grad(set_to_none=True)
                out["loss"].backward()
                dp.sync_grads(model.parameters())
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
                opt.step()
                out = dp.mean(out)  # the global batch's loss and metrics
                last = float(out["loss"].detach())
                if not math.isfinite(last):
                    kept = f"the state saved at step {saved} is from before it" if saved \
                        else "no state was saved"
                    raise FloatingPointError(f"loss became {last} at step {step + 1} ({kept}); "
                                             "start a new run (another --out) with a lower --lr")
                done = step + 1
                # every process stops at the same step: any one past the limit stops them all
                out_of_time = False
                if cfg.time_limit is not None:
                    late = torch.tensor(float(time.monotonic() - began >= cfg.time_limit),
                                        device=dp.device)
                    out_of_time = bool(dp.mean({"t": late})["t"] > 0)
                last_step = done == end or out_of_time
                if dp.main and (done % cfg.log_every == 0 or last_step):
                    row = {"step": step + 1, "lr": f"{lr_at(step, cfg):.3e}",
                           "elapsed_s": f"{time.time() - t0:.1f}",
                           **{k: f"{float(v.detach()):.5f}" for k, v in out.items()}}
                    _append_csv(csv_path, row)
                    history.append(row)
                if dp.main and (done % cfg.ckpt_every == 0 or last_step):
                    _save_state(state_dir, model, opt, step + 1,
                                {"sampler": sampler.state(), "settings": settings,
                                 "torch_rng": torch.get_rng_state().tolist()})
                    saved = step + 1
                bar.advance(1)
                if out_of_time:
                    break
        finished = True
    except KeyboardInterrupt:
        if dp.main:
            again = (f"its state was saved at step {saved:,}: the same command resumes from "
                     "there" if saved else "no state was saved yet: the same command starts it "
                     "again")
            print(f"training stopped at step {done:,} of {end:,}; {again}", file=sys.stderr)
        raise
    finally:  # the loss plot follows loss.csv however the loop ended (interrupted too)
        if dp.main and csv_path.exists():
            with contextlib.nullcontext() if finished else contextlib.suppress(Exception):
                plot_losses(csv_path, run_dir / "loss.png", title)
    if start >= end and history == [] and csv_path.exists():  # resumed at the end: report it
        with open(csv_path) as fh:
            rows = list(csv.DictReader(fh))
        last = float(rows[-1]["loss"]) if rows else last
    return TrainResult(done, last, time.time() - t0, history)


# LoopConfig fields that a resumed run must share with its start (the others only say when to
# stop, log and save, or how many threads to use)
RESUME_FIELDS = ("steps", "lr", "min_lr_ratio", "warmup", "weight_decay", "grad_clip", "seed")
CSV_HEADER = "step,lr,elapsed_s"


def run_settings(cfg: LoopConfig) -> dict:
    """The settings of ``cfg`` that make a run what it is (:data:`RESUME_FIELDS`)."""
    return {k: getattr(cfg, k) for k in RESUME_FIELDS}


def _check_fresh(run_dir: Path, csv_path: Path) -> None:
    """Refuse to start a new run over a finished one (or over another tool's loss.csv)."""
    done = [n for n in ("run.json", "export") if (run_dir / n).exists()]
    if done:
        raise InputError(f"{run_dir} holds a finished run ({', '.join(done)}) and no state/ to "
                         "resume from; give another --out (or remove that folder) to train anew")
    if csv_path.exists():
        with open(csv_path) as fh:
            head = fh.readline()
        if not head.startswith(CSV_HEADER):
            raise InputError(f"{csv_path} is not a genoctx loss log; give another --out")
        csv_path.unlink()  # a run stopped before its first saved state: it starts again


def _append_csv(path: Path, row: dict) -> None:
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)


def _truncate_csv(path: Path, step: int, log_every: int | None = None) -> float:
    """Drop logged rows after ``step``, and the row at ``step`` itself when it is off the
    ``log_every`` grid (logged only because a stop, ``--stop-after`` or ``--time-limit``, ended
    the run there), so that a resumed run logs the steps an uninterrupted one does; returns the
    elapsed seconds at ``step`` (else of the last row kept). The file is replaced whole
    (:func:`genoctx.io.atomic.atomic_open`): a run stopped while it is rewritten keeps its loss
    log as it was, and another process reading it sees either."""
    from genoctx.io.atomic import atomic_open

    if not path.exists():
        return 0.0
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = [r for r in reader if int(r["step"]) <= step]
        fields = reader.fieldnames or []
    elapsed = float(rows[-1]["elapsed_s"]) if rows else 0.0
    if rows and log_every and int(rows[-1]["step"]) == step and step % log_every:
        rows.pop()
    if not rows:
        path.unlink()
        return elapsed
    with atomic_open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return elapsed


def command_line() -> str:
    """The command that started this process, for the run record (under ``torchrun``, the
    launch: ``torchrun --nnodes N --nproc_per_node M -m genoctx train ...``), its arguments
    shell-quoted; relative paths in it are relative to the run record's ``cwd``."""
    if not sys.argv:
        return ""
    prog = Path(sys.argv[0]).name
    if prog == "__main__.py":  # python -m genoctx
        prog = "-m genoctx"
    world, local = int(os.environ.get("WORLD_SIZE", "1")), os.environ.get("LOCAL_WORLD_SIZE")
    if world > 1 and local:
        prog = (f"torchrun --nnodes {world // int(local)} --nproc_per_node {local} "
                + (prog if prog.startswith("-m ") else f"$(which {prog})"))
    elif prog.startswith("-m "):
        prog = "python " + prog
    # quoted as a shell reads it back: a path with a space or an "&" reran as another command
    return " ".join([prog, shlex.join(sys.argv[1:])]) if sys.argv[1:] else prog


def loop_config_dict(cfg: LoopConfig) -> dict:
    return asdict(cfg) | {"torch": torch.__version__, "pid_threads": torch.get_num_threads(),
                          "cpu_count": os.cpu_count()}
