"""Ship a trained run as the embedded default checkpoint (``genoctx/weights/``).

Copies the export directory (safetensors + config + sha256 files + TRAINING.json), checks every
sha256 again, and writes ``README.md`` beside the weights with the exact training commands, the
sha256 of every input file, and the validation metrics when given.

Run: ``python -m genoctx.train.ship runs/annotation/export --lm-run runs/lm
--metrics results/eval/metrics.json`` (the metrics of ``genoctx eval annotation-bacteria --model
runs/annotation/export``). Every file of the export is copied (``decoder.json`` included), and
each run directory's ``loss.csv`` / ``loss.png`` as ``<recipe>_loss.csv`` / ``.png``. Every input
is read and checked before ``--dest`` is touched, and the new folder is built beside it and swapped
in whole: a bad input is one line (exit status 2) and leaves ``--dest`` as it was. The metrics
must have been measured with the export's weights (their recorded sha256), and the ``--lm-run``
must be the run whose export the annotation run started from (``--init``).

The gene decoder is code, so its validation numbers move without a new checkpoint: ``python -m
genoctx.train.ship --validation results/eval/metrics.json`` (from ``genoctx eval
annotation-bacteria`` with the shipped model) replaces ``VALIDATION.json`` and the README's
validation section, after checking that the metrics were measured with these very weights.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from genoctx.errors import GenoctxError
from genoctx.heads.annotation import load_annotation_model
from genoctx.io.dataroot import sha256_file
from genoctx.model import checkpoint

MAX_BYTES = 25 * 1024 * 1024
VALIDATION_HEADING = "## Validation (held-out genomes; `VALIDATION.json`)"
# files fitted apart from the checkpoint runs, which ship() leaves in place: the ORF scorer
# (genoctx.heads.orf_scorer), the decoder's model bank (genoctx.heads.meta_models) and the
# spliced decoder's coding model (genoctx.heads.eukaryote_coding)
KEEP_PREFIX = ("orf_scorer", "meta_models", "eukaryote_coding")


def _with_wall(record: dict, run_dir: Path) -> dict:
    """Training wall time from loss.csv (a resumed run's own record only counts its last part)."""
    import csv

    path = run_dir / "loss.csv"
    if path.is_file():
        with open(path) as fh:
            rows = list(csv.DictReader(fh))
        if rows:
            record["wall_s"] = max(record["wall_s"], float(rows[-1]["elapsed_s"]))
    return record


def validation_lines(m: dict) -> list[str]:
    """README table from the ``metrics.json`` of ``genoctx eval annotation-bacteria``."""
    genomes = m["benchmarks"]["annotation-bacteria"]["metrics"]["genomes"]
    lines = [VALIDATION_HEADING, "",
             f"Command: `{m['manifest'].get('command', '')}`", "",
             "| genome | caller | sensitivity | precision | F1 | start agreement |",
             "|---|---|---|---|---|---|"]
    for genome, row in genomes.items():
        for caller, v in row.items():
            if isinstance(v, dict) and "sensitivity" in v:
                lines.append(f"| {genome} | {caller} | {v['sensitivity']:.4f} | "
                             f"{v['precision']:.4f} | {v['f1']:.4f} | "
                             + ("n/a" if v["start_agreement"] is None
                                else f"{v['start_agreement']:.4f}") + " |")
        if "per_base" in row:
            pb = row["per_base"]
            lines.append(f"| {genome} | model per-base CDS | | | F1 {pb['f1']:.4f} (MCC "
                         f"{pb['mcc']:.4f}) | |")
    return lines + [""]


def init_chain(record: dict) -> list[dict]:
    """Records of the runs a run was initialised from, earliest first: each ``init`` checkpoint's
    ``TRAINING.json`` (and the ``TRAINING_lm.json`` or ``TRAINING_earlier.json`` a shipped
    checkpoint keeps beside it), so that a run trained on from a shipped checkpoint ships with
    every command that made it. Empty when the init is an lm run's export (``--lm-run`` gives
    that record)."""
    chain, seen, init = [], set(), record.get("init")
    while init:
        try:
            directory = checkpoint.resolve_checkpoint(init)  # "embedded" too
        except GenoctxError:
            break
        path = directory / "TRAINING.json"
        if not path.is_file() or directory.resolve() in seen:
            break
        seen.add(directory.resolve())
        rec = json.loads(path.read_text())
        if rec.get("recipe") != "annotation":
            break
        chain.insert(0, rec)
        if (directory / "TRAINING_earlier.json").is_file():  # shipped from a chain itself
            chain[:0] = json.loads((directory / "TRAINING_earlier.json").read_text())
            break
        if (directory / "TRAINING_lm.json").is_file():
            chain.insert(0, json.loads((directory / "TRAINING_lm.json").read_text()))
            break
        init = rec.get("init")
    return chain


def _read_json(path: Path, what: str) -> dict:
    """``path`` as a JSON object; a missing or malformed file is one :class:`GenoctxError` line
    that says what it should be (``what``)."""
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise GenoctxError(f"{path} is missing; {what}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GenoctxError(f"{path} cannot be read as JSON ({exc}); {what}") from None
    if not isinstance(value, dict):
        raise GenoctxError(f"{path} is not a JSON object; {what}")
    return value


METRICS_ARE = "give the metrics.json of `genoctx eval annotation-bacteria`"


def _read_metrics(metrics: Path) -> tuple[dict, list[str]]:
    """The metrics of ``metrics`` and their README table, or one :class:`GenoctxError` line."""
    m = _read_json(metrics, METRICS_ARE)
    benchmarks = m.get("benchmarks")
    if not isinstance(benchmarks, dict) or "annotation-bacteria" not in benchmarks:
        raise GenoctxError(f"{metrics}: no annotation-bacteria results; {METRICS_ARE}")
    try:
        return m, validation_lines(m)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise GenoctxError(f"{metrics}: malformed annotation-bacteria results ({type(exc).__name__}"
                           f" {exc}); {METRICS_ARE}") from None


def _training_lines(runs: list[dict], sources: list[Path]) -> list[str]:
    """The README's sections on how the checkpoint was trained and from which input files, from
    the run records (``sources``: the file each came from, named when one is malformed)."""
    lines = ["## How it was trained (exact commands, in order)", ""]
    files = ["## Input files (sha256, role)", ""]
    seen = set()
    for r, source in zip(runs, sources, strict=True):
        try:
            done = r.get("steps_done", r["loop"]["steps"])
            device = r.get("device", "cpu")  # runs recorded before --device trained on the CPU
            where = (f"{r['loop'].get('threads') or 'all'} CPU threads" if device == "cpu"
                     else device)
            if r.get("processes", 1) > 1:
                where += f", {r['processes']} processes"
            lines += [(f"- `{r['command']}` — recipe `{r['recipe']}`, {done} of "
                       f"{r['loop']['steps']} scheduled steps of {r['batch_size']} × "
                       f"{r['seq_len']} bases, final loss {r['final_loss']:.4f}, "
                       f"{r['wall_s'] / 60:.1f} min on {where}")]
            for f in r["data_files"]:
                if f["path"] not in seen:
                    seen.add(f["path"])
                    files.append(f"- `{f['path']}` `{f['sha256']}` ({f['role']})")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GenoctxError(f"{source} is not a whole genoctx run record ({type(exc).__name__}"
                               f" {exc}); ship runs that `genoctx train` finished") from None
    lines += ["", ("`genoctx train --device auto` (the default) trains on a GPU when there is one; "
                   "add `--device cpu` to rerun a CPU command above exactly.")]
    return lines + [""] + files


def _dest_folder(dest: Path) -> Path:
    """``dest`` as the folder to replace (a link followed); one line when it cannot be one."""
    dest = dest.resolve() if dest.is_symlink() else dest
    if dest.exists() and not dest.is_dir():
        raise GenoctxError(f"--dest {dest} is a file, not a folder")
    if not dest.parent.is_dir():
        raise GenoctxError(f"--dest {dest}: its folder {dest.parent} does not exist")
    return dest


@contextlib.contextmanager
def _swapped_in(dest: Path):
    """Yield a new empty folder beside ``dest`` to fill; once it is filled it takes ``dest``'s
    place (the old folder moved aside and then removed), and on any failure it is removed with
    ``dest`` untouched. Two renames: ``dest`` is missing only between them, and a failed second
    one moves the old folder back."""
    new = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new.", dir=dest.parent))
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(new, dest.stat().st_mode & 0o7777 if dest.exists() else 0o777 & ~mask)
        yield new
        if not dest.exists():
            os.rename(new, dest)
            return
        aside = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
        os.rename(dest, aside)  # onto the empty folder just made
        try:
            os.rename(new, dest)
        except BaseException:
            os.rename(aside, dest)
            raise
        shutil.rmtree(aside, ignore_errors=True)
    finally:
        shutil.rmtree(new, ignore_errors=True)


def check_measured_with(m: dict, metrics: Path, checkpoint_dir: Path, fix: str) -> None:
    """Refuse metrics ``m`` (read from ``metrics``) unless their recorded model and head sha256
    are those of the weights in ``checkpoint_dir``: a table of other weights' numbers must not
    go into the README of these."""
    manifest = m.get("manifest")
    recorded = manifest.get("model") if isinstance(manifest, dict) else None
    recorded = recorded if isinstance(recorded, dict) else {}
    shipped = {"model_sha256": checkpoint.verify_digest(checkpoint_dir)}
    if (checkpoint_dir / "head.safetensors").is_file():
        shipped["head_sha256"] = sha256_file(checkpoint_dir / "head.safetensors")
    for key, digest in shipped.items():
        if recorded.get(key) != digest:
            raise GenoctxError(f"{metrics} was measured with {key} "
                               f"{recorded.get(key) or '(none recorded)'}, not the shipped "
                               f"{digest} in {checkpoint_dir}: {fix}")


def _check_lm_run(record: dict, lm_run: Path) -> None:
    """Refuse an ``--lm-run`` whose export is not the annotation run's ``--init``: its command
    would head the README as the first step of weights that never came from it. The run record
    names the init's weights by sha256 (``init_sha256``); an earlier one only by its path, read
    from the folder the run was started in (``cwd``, where recorded)."""
    export = lm_run / "export"
    init = record.get("init")
    if record.get("init_sha256"):
        try:
            same = checkpoint.verify_digest(export) == record["init_sha256"]
        except OSError:
            raise GenoctxError(f"--lm-run {lm_run} has no export/ with its weights; give the "
                               "folder of a finished `genoctx train --recipe lm` run") from None
    else:
        base = Path(record.get("cwd") or ".")
        same = init is not None and (base / init).resolve() == export.resolve()
    if not same:
        began = f"from --init {init}" if init else "from random weights (no --init)"
        raise GenoctxError(f"--lm-run {lm_run}: the annotation run started {began}, not from "
                           f"{export}; give the lm run its --init was, or no --lm-run")


def ship(export: Path, dest: Path, lm_run: Path | None, metrics: Path | None) -> None:
    """Ship ``export`` (with the lm run ``lm_run`` and validation ``metrics``) into ``dest``.

    Every input is read and checked first, and the new folder is built beside ``dest`` and swapped
    in at the end: ``dest`` cleared before the inputs were read lost the shipped checkpoint to a
    bad ``--metrics`` or an lm run without its record. ``dest``'s own files that ship does not
    write (``__init__.py``, the decoders' :data:`KEEP_PREFIX` files, folders) are carried over.
    """
    dest = _dest_folder(dest)
    load_annotation_model(export)  # verifies both sha256 files and that the weights load
    record = _read_json(export / "TRAINING.json", "ship the export/ that `genoctx train` wrote")
    earlier = init_chain(record)  # read before dest is replaced: the init may be dest itself
    files = sorted(p for p in export.iterdir() if p.is_file())
    size = sum(p.stat().st_size for p in files)
    if size > MAX_BYTES:
        raise GenoctxError(f"export is {size / 2**20:.1f} MiB; the embedded default must be "
                           "<= 25 MiB")
    runs, run_dirs = [record], [export.parent]
    sources = [export / "TRAINING.json"]
    if lm_run is not None:
        lm_record = _read_json(lm_run / "run.json", "give --lm-run the folder of a finished "
                               "`genoctx train --recipe lm` run")
        _check_lm_run(record, lm_run)
        runs.insert(0, lm_record)
        run_dirs.insert(0, lm_run)
        sources.insert(0, lm_run / "run.json")
    try:
        runs = [_with_wall(r, d) for r, d in zip(runs, run_dirs, strict=True)]
    except (KeyError, TypeError, ValueError) as exc:
        raise GenoctxError(f"{export.parent} or --lm-run: a run record or loss.csv is malformed "
                           f"({type(exc).__name__} {exc})") from None
    if earlier:  # the records of the --init chain (init_chain)
        sources = [Path(f"--init {record.get('init')}")] * len(earlier) + sources
    how = _training_lines(earlier + runs, sources)
    validation = []
    if metrics is not None:
        m, validation = _read_metrics(metrics)
        check_measured_with(m, metrics, export, "evaluate the export that is shipped "
                            f"(genoctx eval annotation-bacteria --model {export})")
    with _swapped_in(dest) as new:
        if dest.is_dir():  # the files fitted apart from the checkpoint runs, and folders, kept
            for p in dest.iterdir():
                if p.is_dir() and not p.is_symlink():
                    shutil.copytree(p, new / p.name, symlinks=True)
                elif p.name == "__init__.py" or p.name.startswith(KEEP_PREFIX):
                    shutil.copy2(p, new / p.name, follow_symlinks=False)
        for p in files:
            shutil.copy2(p, new / p.name)
        if lm_run is not None:
            shutil.copy2(lm_run / "run.json", new / "TRAINING_lm.json")
        for run, rec in zip(run_dirs, runs, strict=True):  # the runs' own loss logs and plots
            for name in ("loss.csv", "loss.png"):
                if (run / name).is_file():
                    shutil.copy2(run / name, new / f"{rec['recipe']}_{name}")
        if earlier:  # the whole chain, earliest first, for the next run trained on from this one
            (new / "TRAINING_earlier.json").write_text(json.dumps(earlier, indent=2) + "\n")
            if lm_run is None and earlier[0].get("recipe") == "lm":
                (new / "TRAINING_lm.json").write_text(json.dumps(earlier[0], indent=2) + "\n")
        if metrics is not None:
            shutil.copy2(metrics, new / "VALIDATION.json")
        _write_readme(new, how, validation)


def _write_readme(dest: Path, how: list[str], validation: list[str]) -> None:
    """``dest/README.md``: what the checkpoint is, how it was trained (``how``), its files and
    their sha256, and the ``validation`` table."""
    files = sorted(p for p in dest.iterdir() if p.is_file() and p.name != "__init__.py")
    lines = ["# The embedded default checkpoint", "",
             ("Trained by this project's own code from the train-role data of the data manifest; "
              "loaded by `genoctx annotate` / `--model embedded` after checking each sha256."), "",
             *how]
    lines += ["", "## Files", ""]
    for p in files:
        lines.append(f"- `{p.name}` ({p.stat().st_size:,} bytes)")
    digest = checkpoint.verify_digest(dest)
    lines += ["", f"model.safetensors sha256: `{digest}`", ""]
    if (dest / "orf_scorer.json").is_file():
        lines += [("The `orf_scorer.*` files are the gene decoder's cross-genome ORF scorer, "
                   "fitted on the train-role bacterial genomes by `python -m "
                   "genoctx.heads.orf_scorer` (command, inputs and sha256 in `orf_scorer.json`); "
                   "shipping a run keeps them."), ""]
    if (dest / "meta_models.json").is_file():
        lines += [("The `meta_models.*` files are the gene decoder's bank of pre-trained models "
                   "for short sequences (`--procedure meta`), self-trained on the train and "
                   "pretrain-only bacterial genomes by `python -m genoctx.heads.meta_models` "
                   "(command, inputs and sha256 in `meta_models.json`); shipping a run keeps "
                   "them."), ""]
    if (dest / "eukaryote_coding.json").is_file():
        lines += [("The `eukaryote_coding.*` files are the spliced decoder's coding model "
                   "(`--mode eukaryote`), fitted on the CDS of the train-role eukaryote chunks by "
                   "`python -m genoctx.heads.eukaryote_coding` (command, inputs and sha256 in "
                   "`eukaryote_coding.json`); shipping a run keeps them."), ""]
    lines += validation
    (dest / "README.md").write_text("\n".join(lines) + "\n")


def refresh_validation(dest: Path, metrics: Path) -> None:
    """Record new validation metrics of the checkpoint already shipped in ``dest``.

    Refuses metrics measured with other weights (their recorded model and head sha256 must be
    the shipped files'), then replaces ``VALIDATION.json``, the README's validation section and
    the file sizes listed in the README.
    """
    m, table = _read_metrics(metrics)
    check_measured_with(m, metrics, dest, "evaluate the shipped model")
    readme = (dest / "README.md").read_text().splitlines()
    if VALIDATION_HEADING in readme:
        readme = readme[:readme.index(VALIDATION_HEADING)]
    shutil.copy2(metrics, dest / "VALIDATION.json")
    sizes = {p.name: p.stat().st_size for p in dest.iterdir() if p.is_file()}
    for i, line in enumerate(readme):  # "- `name` (1,234 bytes)" lines of the Files section
        name = line.partition("`")[2].partition("`")[0]
        if line.startswith("- `") and line.endswith(" bytes)") and name in sizes:
            readme[i] = f"- `{name}` ({sizes[name]:,} bytes)"
    while readme and not readme[-1]:
        readme.pop()
    lines = readme + [""] + table
    (dest / "README.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", type=Path, nargs="?", default=None)
    ap.add_argument("--dest", type=Path, default=checkpoint.embedded_dir())
    ap.add_argument("--lm-run", type=Path, default=None)
    ap.add_argument("--metrics", type=Path, default=None)
    ap.add_argument("--validation", type=Path, default=None, metavar="METRICS",
                    help="only record new validation metrics of the shipped checkpoint")
    a = ap.parse_args(argv)
    if (a.export is None) == (a.validation is None):
        ap.error("give either an export directory to ship or --validation METRICS")
    try:
        if a.validation is not None:
            refresh_validation(a.dest, a.validation)
        else:
            ship(a.export, a.dest, a.lm_run, a.metrics)
    except (GenoctxError, OSError) as e:  # one line and status 2, as the genoctx CLI does
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
