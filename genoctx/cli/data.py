"""``genoctx data manifest`` / ``genoctx data check``: a data root of your own genomes for
``genoctx train`` (and ``genoctx eval``), each file's role fixed by its sha256."""

from __future__ import annotations

from pathlib import Path

import typer

from genoctx.errors import GenoctxError

EPILOG = (
    "The recipes read what the manifest lists under these folders: genomes/bacteria/*.gbff.gz "
    "(annotated GenBank: both recipes), genomes/unannotated/* (FASTA: lm), "
    "genomes/eukaryote_chunks/NAME.fa.gz with NAME.gff.gz (both). Example: genoctx data "
    "manifest mydata --held-out 'genomes/bacteria/Brucella*' && genoctx data check mydata && "
    "genoctx train --recipe annotation --init embedded --data-root mydata --out runs/mine"
)


def manifest(
    root: Path = typer.Argument(..., metavar="DIR", help="The data folder (its files are listed)."),
    role: str = typer.Option("train", "--role", help="Role of every file no glob below "
                             "matches: train, pretrain-only, validation, benchmark or test."),
    held_out: list[str] = typer.Option(None, "--held-out", help="Glob of paths (relative to "
                                       "the folder) whose role is validation; repeatable."),
    benchmark: list[str] = typer.Option(None, "--benchmark", help="Glob: role benchmark."),
    pretrain_only: list[str] = typer.Option(None, "--pretrain-only",
                                            help="Glob: role pretrain-only (lm recipe only)."),
    license: str = typer.Option("", "--license", help="License column of the new rows."),
    source: str = typer.Option("", "--source", help="Source column of the new rows."),
    update: bool = typer.Option(False, "--update", help="Keep an existing manifest's rows as "
                                "they are and add the files it does not list."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Write DIR/MANIFEST.tsv: path, bytes, sha256, role, license, source of every data file
    under DIR (indexes and hidden files left out). Training reads only files listed train or
    pretrain-only, and refuses any whose bytes (or sequences) the held-out rows hold."""
    from genoctx.io.manifest import write_manifest
    from genoctx.progress import progress_bar

    globs = {r: list(p) for r, p in (("validation", held_out), ("benchmark", benchmark),
                                      ("pretrain-only", pretrain_only)) if p}
    with progress_bar(f"sha256 {root}", total=None, quiet=quiet) as bar:
        changes = write_manifest(root, role=role, globs=globs, license=license, source=source,
                                 update=update, progress=bar.advance)
    if changes.frozen:  # the shared data's held-out files, copied in
        shown = ", ".join(f"{e.path} ({e.role})" for e in changes.frozen[:3])
        more = f" and {len(changes.frozen) - 3} more" if len(changes.frozen) > 3 else ""
        typer.echo(f"genoctx: note: {len(changes.frozen)} file(s) are ones genoctx holds out "
                   f"(its frozen list), listed with that role whatever the options say, so "
                   f"training never reads them: {shown}{more}", err=True)
    for rel in changes.missing:
        typer.echo(f"genoctx: warning: {rel} is listed but missing (its row is kept)", err=True)
    for rel in changes.changed:
        typer.echo(f"genoctx: warning: {rel} is not the size its row says (its row is kept; "
                   "training will refuse the file)", err=True)
    if not quiet:
        counts: dict[str, int] = {}
        for e in changes.added:
            counts[e.role] = counts.get(e.role, 0) + 1
        added = ", ".join(f"{n} {r}" for r, n in sorted(counts.items())) or "none"
        kept = f"{changes.kept} rows kept, " if update else ""
        typer.echo(f"wrote {root / 'MANIFEST.tsv'}: {kept}{len(changes.added)} files added "
                   f"({added})", err=True)


def check(
    root: Path = typer.Argument(..., metavar="DIR", help="The data folder holding MANIFEST.tsv."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar; problems only."),
) -> None:
    """Check DIR/MANIFEST.tsv against the files (size and sha256 of every row), name the
    files not listed, and list what each training recipe reads. Exits 1 when a listed file is
    missing or changed, listed for training but held out by genoctx itself, or a file a
    recipe reads beside a listed one (a eukaryote chunk's FASTA beside its GFF3) is not
    listed."""
    from genoctx.io.dataroot import load_manifest
    from genoctx.io.manifest import check_manifest
    from genoctx.progress import progress_bar

    if not root.is_dir():
        raise GenoctxError(f"{root} is not a folder")
    with progress_bar(f"sha256 {root}", total=None, quiet=quiet) as bar:
        found = check_manifest(root, progress=bar.advance)
    for rel in found.missing:
        typer.echo(f"missing: {rel}", err=True)
    for rel in found.changed:
        typer.echo(f"changed: {rel} (not the size or sha256 of its row)", err=True)
    for rel in found.frozen:
        typer.echo(f"held out by genoctx: {rel} is listed for training, but its bytes are a "
                   "file genoctx holds out (its frozen list): training refuses it", err=True)
    recipes = recipe_files(root)
    listed = set(load_manifest(root))
    unreadable = sorted({rel for files in recipes.values() if not isinstance(files, str)
                         for rel in files if rel not in listed})
    for rel in unreadable:  # a eukaryote chunk's GFF3 without its FASTA
        typer.echo(f"missing: {rel} (a recipe reads it beside a listed file; list it)", err=True)
    if not quiet:
        for rel in found.unlisted:
            typer.echo(f"not listed (training refuses it): {rel}", err=True)
        roles = ", ".join(f"{n} {r}" for r, n in sorted(found.roles.items()))
        typer.echo(f"{root / 'MANIFEST.tsv'}: {found.rows} rows ({roles}); "
                   f"{len(found.changed)} changed, {len(found.missing)} missing, "
                   f"{len(found.unlisted)} not listed", err=True)
        for recipe, files in recipes.items():
            if isinstance(files, str):
                typer.echo(f"recipe {recipe}: reads nothing ({files})", err=True)
            else:
                typer.echo(f"recipe {recipe}: reads {len(files)} files: "
                           + ", ".join(files[:6]) + (", ..." if len(files) > 6 else ""),
                           err=True)
    if not found.ok or unreadable:
        raise typer.Exit(1)


def recipe_files(root: Path) -> dict[str, list[str] | str]:
    """The files each ``genoctx train`` recipe reads from ``root``, or why it reads none."""
    from genoctx.errors import InputError
    from genoctx.train import corpus

    out: dict[str, list[str] | str] = {}
    for name, files in (("lm", corpus.lm_files), ("annotation", corpus.annotation_files)):
        try:
            out[name] = files(root)
        except InputError as exc:
            out[name] = str(exc)
    return out


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Write or check a data folder's MANIFEST.tsv (your own genomes "
                        "for genoctx train).", no_args_is_help=True)
    group.command("manifest", epilog=EPILOG)(manifest)
    group.command("check", epilog=EPILOG)(check)
    app.add_typer(group, name="data")
