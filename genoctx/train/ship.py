"""Ship a trained run as the embedded default checkpoint (``genoctx/weights/``).

Copies the export directory (safetensors + config + sha256 files + TRAINING.json), checks every
sha256 again, and writes ``README.md`` beside the weights with the exact training commands, the
sha256 of every input file, and the validation metrics when given.

Run: ``python -m genoctx.train.ship runs/annotation/export --lm-run runs/lm
--metrics results/eval/metrics.json`` (the metrics of ``genoctx eval annotation-bacteria --model
runs/annotation/export``). Every file of the export is copied (``decoder.json`` included), and
each run directory's ``loss.csv`` / ``loss.png`` as ``<recipe>_loss.csv`` / ``.png``.

The gene decoder is code, so its validation numbers move without a new checkpoint: ``python -m
genoctx.train.ship --validation results/eval/metrics.json`` (from ``genoctx eval
annotation-bacteria`` with the shipped model) replaces ``VALIDATION.json`` and the README's
validation section, after checking that the metrics were measured with these very weights.
"""

from __future__ import annotations

import argparse
import json
import shutil
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


def ship(export: Path, dest: Path, lm_run: Path | None, metrics: Path | None) -> None:
    load_annotation_model(export)  # verifies both sha256 files and that the weights load
    record = json.loads((export / "TRAINING.json").read_text())
    earlier = init_chain(record)  # read before dest is cleared: the init may be dest itself
    files = sorted(p for p in export.iterdir() if p.is_file())
    size = sum(p.stat().st_size for p in files)
    if size > MAX_BYTES:
        raise SystemExit(f"export is {size / 2**20:.1f} MiB; the embedded default must be <= 25 MiB")
    for p in dest.glob("*"):  # the decoders' KEEP_PREFIX files are fitted on their own
        if p.is_file() and p.name != "__init__.py" and not p.name.startswith(KEEP_PREFIX):
            p.unlink()
    for p in files:
        shutil.copy2(p, dest / p.name)
    runs = [_with_wall(record, export.parent)]
    run_dirs = [export.parent]
    if lm_run is not None:
        runs.insert(0, _with_wall(json.loads((lm_run / "run.json").read_text()), lm_run))
        shutil.copy2(lm_run / "run.json", dest / "TRAINING_lm.json")
        run_dirs.insert(0, lm_run)
    for run, rec in zip(run_dirs, runs, strict=True):  # the runs' own loss logs and plots
        for name in ("loss.csv", "loss.png"):
            if (run / name).is_file():
                shutil.copy2(run / name, dest / f"{rec['recipe']}_{name}")
    if earlier:  # the whole chain, earliest first, for the next run trained on from this one
        (dest / "TRAINING_earlier.json").write_text(json.dumps(earlier, indent=2) + "\n")
        if lm_run is None and earlier[0].get("recipe") == "lm":
            (dest / "TRAINING_lm.json").write_text(json.dumps(earlier[0], indent=2) + "\n")
    runs = earlier + runs
    if metrics is not None:
        shutil.copy2(metrics, dest / "VALIDATION.json")
    files = sorted(p for p in dest.iterdir() if p.is_file() and p.name != "__init__.py")
    lines = ["# The embedded default checkpoint", "",
             ("Trained by this project's own code from the train-role data of the data manifest; "
              "loaded by `genoctx annotate` / `--model embedded` after checking each sha256."), "",
             "## How it was trained (exact commands, in order)", ""]
    for r in runs:
        done = r.get("steps_done", r["loop"]["steps"])
        device = r.get("device", "cpu")  # runs recorded before --device trained on the CPU
        where = (f"{r['loop'].get('threads') or 'all'} CPU threads" if device == "cpu"
                 else device)
        if r.get("processes", 1) > 1:
            where += f", {r['processes']} processes"
        lines += [(f"- `{r['command']}` — recipe `{r['recipe']}`, {done} of {r['loop']['steps']} "
                   f"scheduled steps of {r['batch_size']} × {r['seq_len']} bases, final loss "
                   f"{r['final_loss']:.4f}, {r['wall_s'] / 60:.1f} min on {where}")]
    lines += ["", ("`genoctx train --device auto` (the default) trains on a GPU when there is one; "
                   "add `--device cpu` to rerun a CPU command above exactly.")]
    lines += ["", "## Input files (sha256, role)", ""]
    seen = set()
    for r in runs:
        for f in r["data_files"]:
            if f["path"] not in seen:
                seen.add(f["path"])
                lines.append(f"- `{f['path']}` `{f['sha256']}` ({f['role']})")
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
    if metrics is not None:
        lines += validation_lines(json.loads(metrics.read_text()))
    (dest / "README.md").write_text("\n".join(lines) + "\n")


def refresh_validation(dest: Path, metrics: Path) -> None:
    """Record new validation metrics of the checkpoint already shipped in ``dest``.

    Refuses metrics measured with other weights (their recorded model and head sha256 must be
    the shipped files'), then replaces ``VALIDATION.json``, the README's validation section and
    the file sizes listed in the README.
    """
    m = json.loads(metrics.read_text())
    if "annotation-bacteria" not in m.get("benchmarks", {}):
        raise GenoctxError(f"{metrics}: no annotation-bacteria results (the metrics.json of "
                           "`genoctx eval annotation-bacteria`)")
    recorded = m.get("manifest", {}).get("model") or {}
    shipped = {"model_sha256": checkpoint.verify_digest(dest)}
    if (dest / "head.safetensors").is_file():
        shipped["head_sha256"] = sha256_file(dest / "head.safetensors")
    for key, digest in shipped.items():
        if recorded.get(key) != digest:
            raise GenoctxError(f"{metrics} was measured with {key} "
                               f"{recorded.get(key) or '(none recorded)'}, not the shipped "
                               f"{digest} in {dest}: evaluate the shipped model")
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
    lines = readme + [""] + validation_lines(m)
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
    except GenoctxError as e:
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
