"""The evaluation harness: one contract for every benchmark, a manifest, and the report.

A benchmark is a module in :mod:`genoctx.eval.benchmarks` with

- ``NAME`` (the CLI name, e.g. ``"brca1-sge"``) and ``DESCRIPTION`` (one line);
- ``run(ctx: BenchContext) -> BenchResult``;
- ``data_files(quick) -> tuple[str, ...]``: the manifest files ``run`` reads, and
  ``NEEDS_HEAD = True`` when the model's rows need an annotation head; :func:`preflight` checks
  them for every benchmark of a run before the first one starts.

Benchmarks open data only through :meth:`BenchContext.data_file`, which refuses any file whose
manifest role is not ``validation`` or ``benchmark`` (evaluating on training data would flatter
the model) and records the file's sha256 for the manifest. Metrics must be deterministic for a
given model, data and seed: ``--check-reproducible`` runs everything twice and compares them
(timings go under keys named ``wall_s``, which the comparison skips).

``run_benchmarks`` writes, under ``out``:

- ``metrics.json``: ``{"manifest": {...}, "benchmarks": {NAME: metrics}}``, and a copy holding
  only one benchmark in each ``NAME/metrics.json`` (kept when a later run reuses ``out``);
- ``report.md``: one table of every headline number with its anchor, then each benchmark's notes
  and plots; ``NAME/report.md`` holds one benchmark's (kept like ``NAME/metrics.json``);
- the PNG plots each benchmark wrote into ``out/NAME/``.

Each benchmark writes into a temporary sibling of ``out/NAME`` that replaces it only when the
benchmark has finished (with its own metrics.json and report.md), so a failed run never leaves
new plots beside an older metrics.json; the top-level pair is rewritten after each benchmark
and lists the ones that have not finished yet.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from genoctx.errors import InputError
from genoctx.io.dataroot import (
    HELD_OUT_ROLES,
    load_manifest,
    require_role,
    resolve_data_root,
    sha256_file,
)

# CLI name -> module under genoctx.eval.benchmarks, in report order.
BENCHMARKS: dict[str, str] = {
    "annotation-bacteria": "annotation_bacteria",
    "annotation-eukaryote": "annotation_eukaryote",
    "brca1-sge": "brca1_sge",
    "mpra-saturation": "mpra_saturation",
    "promoters": "promoters",
    "dnabert-promoter": "dnabert_promoter",
}

# Keys that legitimately differ between two identical runs (at any depth). Benchmarks put
# timings under keys named ``wall_s``.
VOLATILE_KEYS = frozenset({"wall_s", "started", "finished", "command", "out"})


@dataclass
class Row:
    """One headline number for the report table."""

    dataset: str
    method: str
    metric: str
    value: float | None
    anchor: str = ""  # e.g. "Prodigal 0.927 (run here)" or "Evo 2 7B 0.891 (published)"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class BenchResult:
    """What a benchmark returns: JSON-able metrics, headline rows, plots and notes."""

    metrics: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    plots: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class BenchContext:
    """Everything a benchmark needs: data (role-checked), the model, an output folder, a seed.

    ``model`` is ``"embedded"``, a checkpoint directory, or None for baselines only. ``quick``
    asks for a small deterministic subset (smoke tests, CI); quick metrics are marked as such in
    the manifest and are never the reported numbers.
    """

    data_root: Path | None
    out: Path
    model: str | None = "embedded"
    device: str = "cpu"
    seed: int = 0
    quick: bool = False
    fresh: bool = False  # compute the model's outputs anew, never from a cache (reproducibility)
    quiet: bool = False
    data_files: dict[str, dict] = field(default_factory=dict)
    _backbone: Any = None
    # benchmark name -> the temporary folder it writes into while it runs (see bench_dir)
    _staged: dict[str, Path] = field(default_factory=dict)

    def data_file(self, rel: str) -> Path:
        """Path of manifest file ``rel`` after the role check; records it in the manifest."""
        path, digest, role = self._checked_data_file(rel)
        self.data_files[rel] = {"sha256": digest, "role": role}
        return path

    def _checked_data_file(self, rel: str) -> tuple[Path, str, str]:
        """``(path, sha256, role)`` of manifest file ``rel`` after the role and sha256 checks;
        nothing is recorded (the preflight checks every file before any benchmark runs)."""
        if self.data_root is None:
            raise InputError("this benchmark reads the shared data: pass --data-root DIR or set "
                             "GENOCTX_DATA_ROOT")
        path = self.data_root / rel
        if not path.exists():
            raise InputError(f"data file {rel} not found under {self.data_root}")
        role = require_role(path, HELD_OUT_ROLES, self.data_root, purpose="evaluation")
        digest = sha256_file(path)
        listed = load_manifest(self.data_root).get(rel)
        if listed is not None and listed.sha256 != digest:  # another listed file's bytes
            raise InputError(f"data file {rel}: its sha256 ({digest[:12]}...) is not the one "
                             f"the data manifest lists for it ({listed.sha256[:12]}...): it was "
                             "changed or replaced")
        return path, digest, role

    def user_file(self, path: str | Path) -> Path:
        """A user's own file (not from the data root): recorded with its sha256 and manifest role.

        A file the manifest marks ``train`` or ``pretrain-only`` is refused when ``model`` is
        set: the shipped model has seen it, so scoring it would flatter the model.
        """
        from genoctx.io.dataroot import TRAINABLE_ROLES, role_of

        from genoctx.io.spool import is_stream

        path = Path(path)
        if is_stream(path):
            raise InputError(f"{path} is a pipe or a device, not a file: an evaluation records "
                             "every input's path and sha256 so that it can be run again; save "
                             "it to a file first")
        if path.is_dir():
            raise InputError(f"{path} is a folder, not a file")
        if not path.is_file():
            raise InputError(f"{path} not found")
        try:
            role = role_of(path, self.data_root)
        except InputError:  # no manifest under the data root
            role = None
        if role in TRAINABLE_ROLES and self.model is not None:
            from genoctx.errors import DataRoleError

            raise DataRoleError(f"{path} has role '{role}' in the data manifest: the model was "
                                "trained on it, so evaluating the model on it would mislead; "
                                "use a validation, benchmark or your own file")
        self.data_files[str(path)] = {"sha256": sha256_file(path), "role": role or "user"}
        return path

    def bench_dir(self, name: str) -> Path:
        """``out/NAME``; while benchmark ``name`` runs, the temporary folder that replaces
        ``out/NAME`` once it has finished, so a run that fails leaves ``out/NAME`` as it was
        (never new plots beside an older metrics.json)."""
        d = self._staged.get(name) or self.out / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def backbone(self):
        """The language model (cached per context), or an error when running without one."""
        if self.model is None:
            raise InputError("this benchmark needs a model; drop --model none")
        if self._backbone is None:
            from genoctx.model.model import GenoCtxModel

            self._backbone = GenoCtxModel.from_pretrained(self.model).to(self.device).eval()
        return self._backbone


def benchmark_module(name: str):
    if name not in BENCHMARKS:
        raise InputError(f"unknown benchmark {name!r}; choose from {', '.join(BENCHMARKS)}")
    return importlib.import_module(f"genoctx.eval.benchmarks.{BENCHMARKS[name]}")


def _git_commit(package: Path | None = None) -> str | None:
    """HEAD of genoctx's own git checkout, with ``-dirty`` when a tracked file differs from it
    or the package holds files git does not track (a new benchmark module); None when genoctx
    does not run from its own checkout.

    Only a repository whose top level is the folder holding this package, with this module
    tracked there, is genoctx's: installed into a virtual environment inside a user's own
    project, the folder above ``site-packages`` lies in the user's repository, whose HEAD says
    nothing about genoctx. :func:`_package_sha256` pins the code either way.
    """
    package = Path(package or Path(__file__).resolve().parent.parent).resolve()
    project = package.parent
    me = f"{package.name}/eval/harness.py"  # this module, as the project's git tracks it

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(project), *args], check=False,
                              capture_output=True, text=True, timeout=10)

    try:
        top = git("rev-parse", "--show-toplevel")
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != project:
            return None
        if git("ls-files", "--error-unmatch", "--", me).returncode != 0:
            return None
        head = git("rev-parse", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
        untracked = git("ls-files", "--others", "--exclude-standard", "--", package.name)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    dirty = changed.stdout.strip() or untracked.stdout.strip()
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _package_sha256(package: Path | None = None) -> str:
    """sha256 over the package's files (each one's path and sha256; compiled caches left out).

    It pins the code that ran where a commit cannot: an installed package, or a ``-dirty``
    checkout (the same commit and ``-dirty`` can cover different code).
    """
    import hashlib

    package = Path(package or Path(__file__).resolve().parent.parent)
    h = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo"):
            continue
        h.update(f"{path.relative_to(package).as_posix()}\t{sha256_file(path)}\n".encode())
    return h.hexdigest()


def _versions() -> dict[str, str]:
    from importlib import metadata

    names = ("genoctx", "torch", "triton", "numpy", "pysam", "biopython", "scikit-learn",
             "pyrodigal", "scipy", "matplotlib")
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out


def _checkpoint_files() -> tuple[str, ...]:
    """The files of a checkpoint folder that evaluation reads: the backbone's weights and
    config, the annotation head's weights and config, and the decoder settings. Each of them
    moves the numbers (``config.json``'s rope_theta, ``decoder.json``'s neural weights), so the
    manifest pins every one."""
    from genoctx.heads.annotate import DECODER_FILE
    from genoctx.heads.annotation import HEAD_CONFIG, HEAD_WEIGHTS
    from genoctx.model.checkpoint import CONFIG_NAME, WEIGHTS_NAME

    return (CONFIG_NAME, WEIGHTS_NAME, HEAD_CONFIG, HEAD_WEIGHTS, DECODER_FILE)


def _model_info(model: str | None) -> dict | None:
    """The checkpoint's name, resolved folder and the sha256 of each file of it that is read.

    A file that is absent is recorded as None: its absence is a setting too (no
    ``decoder.json`` means the decoder's defaults), so adding one changes the manifest.
    ``model_sha256`` and ``head_sha256`` stay as before (``genoctx ship`` reads them).
    """
    if model is None:
        return None
    from genoctx.io.dataroot import sha256_uncached
    from genoctx.model.checkpoint import resolve_checkpoint, verify_digest

    directory = resolve_checkpoint(model)
    info = {"name": str(model), "path": str(directory.resolve()),
            "model_sha256": verify_digest(directory)}
    files = {}
    for name in _checkpoint_files():  # read afresh: a file edited in place keeps its mtime
        path = directory / name
        files[name] = sha256_uncached(path) if path.is_file() else None
    if files.get("head.safetensors"):
        info["head_sha256"] = files["head.safetensors"]
    info["files"] = files
    return info


def _packaged_weights() -> dict[str, str | None]:
    """sha256 of the fitted files shipped in ``genoctx/weights`` that the decoders load whatever
    ``--model`` is (the ORF scorer, the bank of gene models, the eukaryote coding model), and
    of their fit records. They change the sequence-only rows too, so they are pinned even with
    ``--model none``; a missing one is None."""
    from genoctx.heads import eukaryote_coding, meta_models, orf_scorer
    from genoctx.io.dataroot import sha256_uncached

    out: dict[str, str | None] = {}
    for mod in (orf_scorer, meta_models, eukaryote_coding):
        weights = Path(mod.WEIGHTS_DIR) / mod.FILE
        for path in (weights, weights.with_suffix(".json")):
            out[path.name] = sha256_uncached(path) if path.is_file() else None
    return out


def _clean(obj):
    """JSON-safe copy: NaN/inf become None, numpy scalars become Python numbers, keys sorted."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def run_benchmarks(names: list[str], *, out: Path, model: str | None = "embedded",
                   data_root=None, device: str = "cpu", seed: int = 0, quick: bool = False,
                   quiet: bool = False, command: str | None = None, fresh: bool = False) -> dict:
    """Run ``names`` in order and write metrics.json and report.md under ``out``."""
    if not names:
        raise InputError("name at least one benchmark: " + ", ".join(BENCHMARKS))
    jobs = [(n, benchmark_module(n).run) for n in names]  # fail fast on a bad name
    return run_jobs(jobs, out=out, model=model, data_root=resolve_data_root(data_root),
                    device=device, seed=seed, quick=quick, quiet=quiet, command=command,
                    fresh=fresh)


def run_jobs(jobs: list[tuple[str, Callable[[BenchContext], BenchResult]]], *, out: Path,
             model: str | None, data_root: Path | None, device: str = "cpu", seed: int = 0,
             quick: bool = False, quiet: bool = False, command: str | None = None,
             fresh: bool = False) -> dict:
    """Run ``(name, run)`` jobs with one context; write metrics.json and report.md. With
    ``fresh`` no cached model output is read (``--check-reproducible``)."""
    names = [n for n, _ in jobs]
    out = Path(out)
    made = _missing_folders(out)
    here = made[-1].parent if made else out
    if not here.is_dir():
        raise InputError(f"cannot write the evaluation to {out}: {here} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _run_jobs(jobs, names, out, model=model, data_root=data_root, device=device,
                         seed=seed, quick=quick, quiet=quiet, command=command, fresh=fresh)
    except BaseException:
        _remove_if_empty(made)  # a failed run leaves no empty --out folder behind
        raise


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first."""
    made = []
    while not path.exists() and path != path.parent:
        made.append(path)
        path = path.parent
    return made


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders a run made (deepest first) that hold nothing but empty folders."""
    import os

    for top in reversed(folders):  # the outermost one the run made
        if top.is_dir() and not any(files for _, _, files in os.walk(top)):
            shutil.rmtree(top, ignore_errors=True)
            return


def preflight(jobs, ctx: BenchContext) -> None:
    """Check what each job will need before any of them runs, so that a run does not fail after
    hours: the data files a benchmark declares (``data_files(quick)``: present, role, sha256), a
    checkpoint's annotation head where a benchmark declares ``NEEDS_HEAD``, and that ``out/NAME``
    can be replaced. Jobs that declare nothing (``--truth``/``--predictions``) check their files
    as they open them, at once."""
    for name, fn in jobs:
        target = ctx.out / name
        if target.exists() and not target.is_dir():
            raise InputError(f"cannot write benchmark {name} to {target}: it is a file, not a "
                             "folder")
        module = sys.modules.get(getattr(fn, "__module__", ""))
        declared = getattr(module, "data_files", None)
        if callable(declared):
            for rel in declared(ctx.quick):
                ctx._checked_data_file(rel)
        if getattr(module, "NEEDS_HEAD", False) and ctx.model is not None:
            from genoctx.heads.annotation import HEAD_CONFIG, HEAD_WEIGHTS
            from genoctx.io.digest import verify_digest_file
            from genoctx.model.checkpoint import resolve_checkpoint

            directory = resolve_checkpoint(ctx.model)
            if not (directory / HEAD_WEIGHTS).is_file() or not (directory / HEAD_CONFIG).is_file():
                raise InputError(f"benchmark {name} needs a checkpoint with an annotation head "
                                 f"({HEAD_WEIGHTS}, {HEAD_CONFIG}), and {directory} has none; "
                                 "train one with `genoctx train --recipe annotation`, or run it "
                                 "with --model none")
            verify_digest_file(directory / HEAD_WEIGHTS, "the annotation head's weights",
                               "use the checkpoint as `genoctx train` wrote it, or train it again")


# Files of an earlier run's out/NAME that a new run of NAME may read again: the cached model
# probabilities (keyed by weights, settings and data, so never stale under their name).
CARRIED_OVER = ("*.npz",)


def _stage(final: Path) -> Path:
    """A fresh temporary sibling of ``final`` for a benchmark to write into, holding hard links
    to (or copies of) the caches ``final`` already has. Cache files are replaced, never written
    in place (``save_probs_cache`` is atomic), so a link never changes the old folder."""
    stage = final.parent / f".{final.name}.partial-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)  # left by a run of this pid that was killed
    stage.mkdir(parents=True)
    if final.is_dir():
        for pattern in CARRIED_OVER:
            for f in final.glob(pattern):
                if f.is_file():
                    try:
                        os.link(f, stage / f.name)
                    except OSError:
                        shutil.copy2(f, stage / f.name)
    return stage


def _replace_dir(stage: Path, final: Path) -> None:
    """Put the finished ``stage`` in ``final``'s place; an existing ``final`` goes only now."""
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    stage.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def _moved(path: Path, stage: Path, final: Path) -> Path:
    """``path`` under ``final`` when it was written under ``stage``."""
    try:
        return final / Path(path).relative_to(stage)
    except ValueError:
        return Path(path)


def _run_jobs(jobs, names, out, *, model, data_root, device, seed, quick, quiet,
              command, fresh=False) -> dict:
    import numpy as np
    import torch

    from genoctx.io.atomic import atomic_open

    ctx = BenchContext(data_root=data_root, out=out, model=model, device=device, seed=seed,
                       quick=quick, quiet=quiet, fresh=fresh)
    manifest = {
        "genoctx_version": _versions().get("genoctx"),
        "git_commit": _git_commit(),
        "package_sha256": _package_sha256(),
        "model": _model_info(model),
        "packaged_weights": _packaged_weights(),
        "benchmarks": names,
        "seed": seed,
        "quick": quick,
        "device": device if device == "cpu" else f"{device} ({torch.cuda.get_device_name()})",
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "versions": _versions(),
        "command": command or "genoctx eval " + " ".join(names),
        # where relative paths in the command lead, and the data they read
        "cwd": os.getcwd(),
        "data_root": str(Path(data_root).resolve()) if data_root else None,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    preflight(jobs, ctx)
    results: dict[str, BenchResult] = {}
    bench_metrics: dict[str, Any] = {}
    t_all = time.perf_counter()
    doc: dict = {}
    read: dict[str, dict] = {}  # data files of the whole run
    for i, (name, fn) in enumerate(jobs):
        torch.manual_seed(seed)
        np.random.seed(seed)
        final = out / name
        stage = ctx._staged[name] = _stage(final)
        ctx.data_files = {}  # this benchmark's own, for its own copy of the manifest
        try:
            started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            t0 = time.perf_counter()
            res = fn(ctx)
            res.metrics = _clean(res.metrics)
            wall = round(time.perf_counter() - t0, 2)
            bench_metrics[name] = {"metrics": res.metrics,
                                   "rows": [r.as_dict() for r in res.rows], "wall_s": wall}
            read.update(ctx.data_files)
            manifest["data_files"] = dict(sorted(read.items()))
            manifest["wall_s"] = round(time.perf_counter() - t_all, 2)
            manifest["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            doc = {"manifest": _clean(manifest), "benchmarks": _clean(bench_metrics)}
            # this benchmark's own copies, written as soon as it has finished: a later failure
            # (or a later run into the same --out) keeps them. Their manifest is this
            # benchmark's alone: the data files it read, its own times.
            own = dict(manifest, benchmarks=[name], data_files=dict(sorted(ctx.data_files.items())),
                       started=started, finished=manifest["finished"], wall_s=wall)
            single = {"manifest": _clean(own), "benchmarks": {name: doc["benchmarks"][name]}}
            with atomic_open(stage / "metrics.json", "w") as fh:
                fh.write(json.dumps(single, indent=2) + "\n")
            with atomic_open(stage / "report.md", "w") as fh:
                fh.write(render_report(single, {name: res}, stage))
            _replace_dir(stage, final)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)  # out/NAME stays as the last run left it
            raise
        finally:
            del ctx._staged[name]
            ctx.data_files = read | ctx.data_files
        res.plots = [_moved(p, stage, final) for p in res.plots]
        results[name] = res
        # The top-level pair is rewritten after every benchmark, so it always describes the
        # benchmark folders this run has replaced; until the last one it lists what did not
        # finish (a run that fails part-way says so instead of leaving an older report that
        # links the new plots).
        unfinished = names[i + 1:]
        top = dict(doc, manifest=dict(doc["manifest"], unfinished=unfinished)) if unfinished \
            else doc
        with atomic_open(out / "metrics.json", "w") as fh:
            fh.write(json.dumps(top, indent=2) + "\n")
        with atomic_open(out / "report.md", "w") as fh:
            fh.write(render_report(top, results, out))
    return doc


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def render_report(doc: dict, results: dict[str, BenchResult], out: Path) -> str:
    m = doc["manifest"]
    model = m.get("model") or {}
    lines = ["# genoctx evaluation report", "",
             f"- command: `{m['command']}`",
             f"- genoctx {m.get('genoctx_version')} "
             + (f"at commit `{m['git_commit']}`" if m.get("git_commit")
                else "(not its own git checkout)")
             + (f"; package sha256 `{m['package_sha256']}`" if m.get("package_sha256") else ""),
             f"- model: {model.get('name', 'none')} (sha256 `{model.get('model_sha256', '-')}`)",
             f"- device: {m['device']}; seed {m['seed']}; wall {m.get('wall_s')} s"
             + ("; **quick subset (smoke test, not a reported number)**" if m["quick"] else ""),
             *([(f"- **unfinished run: {', '.join(m['unfinished'])} did not run to the end; "
                 "their folders are as an earlier run left them**")] if m.get("unfinished")
               else []),
             "", "| benchmark | dataset | method | metric | value | anchor |",
             "|---|---|---|---|---|---|"]
    for name, res in results.items():
        for r in res.rows:
            lines.append(f"| {name} | {r.dataset} | {r.method} | {r.metric} | {_fmt(r.value)} "
                         f"| {r.anchor} |")
    for name, res in results.items():
        lines += ["", f"## {name}", ""]
        lines += [f"- {n}" for n in res.notes]
        for p in res.plots:
            rel = os.path.relpath(p, out)
            lines += ["", f"![{Path(p).stem}]({rel})"]
    lines += ["", "## Data files", "", "| file | role | sha256 |", "|---|---|---|"]
    for rel, info in m.get("data_files", {}).items():
        lines.append(f"| {rel} | {info['role']} | `{info['sha256']}` |")
    weights = [(f"model: {name}", digest) for name, digest in (model.get("files") or {}).items()]
    weights += [(f"genoctx/weights/{name}", digest)
                for name, digest in (m.get("packaged_weights") or {}).items()]
    if weights:  # every file whose change can move a number, beside the data
        lines += ["", "## Model and decoder files", "", "| file | sha256 |", "|---|---|"]
        lines += [f"| {name} | `{digest or 'absent'}` |" for name, digest in weights]
    return "\n".join(lines) + "\n"


def stable_view(doc: dict):
    """``doc`` without the keys that differ between identical runs (times, paths, command)."""
    if isinstance(doc, dict):
        return {k: stable_view(v) for k, v in doc.items() if k not in VOLATILE_KEYS}
    if isinstance(doc, list):
        return [stable_view(v) for v in doc]
    return doc


def differences(a, b, path: str = "") -> list[str]:
    """Human-readable list of where two metric documents differ (exact comparison)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: present in only one run")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} vs {len(b)} items"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def check_reproducible(names: list[str], *, out: Path, **kwargs) -> list[str]:
    """Run twice (into ``out/run1`` and ``out/run2``); return the differences (empty = same)."""
    first = run_benchmarks(names, out=Path(out) / "run1", **kwargs)
    second = run_benchmarks(names, out=Path(out) / "run2", **kwargs)
    return differences(stable_view(first), stable_view(second))


def savefig(fig, path: Path) -> Path:
    """Save a matplotlib figure deterministically (no timestamps in the PNG) and close it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def main_module_entry(name: str, argv=None) -> None:
    """``python -m genoctx.eval.benchmarks.X`` runs one benchmark through the harness."""
    import argparse

    ap = argparse.ArgumentParser(description=f"genoctx benchmark {name}")
    ap.add_argument("--model", default="embedded")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", type=Path, default=Path("results/eval"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    from genoctx.errors import GenoctxError

    try:
        doc = run_benchmarks([name], out=args.out,
                             model=None if args.model == "none" else args.model,
                             data_root=args.data_root, quick=args.quick, seed=args.seed,
                             command=shlex.join(["python", "-m",
                                                 f"genoctx.eval.benchmarks.{BENCHMARKS[name]}",
                                                 *(sys.argv[1:] if argv is None else argv)]))
    except (GenoctxError, OSError) as exc:  # one line and status 2, as `genoctx eval` says it
        what = exc if isinstance(exc, GenoctxError) else (
            f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
        print(f"genoctx: error: {what}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(doc["benchmarks"][name]["rows"], indent=1))
