"""``genoctx embed``: per-base embeddings of a FASTA region from the model, as ``.npy``."""

from __future__ import annotations

from pathlib import Path

import typer

from genoctx.errors import GenoctxError, InputError

SEGMENT_LEN = 16384


def read_tokens(path: Path, region: str | None):
    """``(token ids uint8 [L], Region)`` of ``region`` (or the only record) of a FASTA file."""
    from genoctx.io.fasta import FastaFile, check_nucleotide
    from genoctx.io.regions import Region, parse_region
    from genoctx.tokenize.nucleotide import ENCODE_TABLE

    with FastaFile(path) as fa:
        if region is not None:
            where = parse_region(region, fa.lengths)
        elif len(fa.contigs) == 1:
            where = Region(fa.contigs[0], 0, fa.lengths[fa.contigs[0]])
        else:
            name = next((c for c in fa.contigs if fa.lengths[c] > 0), fa.contigs[0])
            end = min(fa.lengths[name], 10_000)  # an example that exists
            raise InputError(f"{path} holds {len(fa.contigs)} records; choose one with --region "
                             f"(e.g. --region {name} or {name}:1-{end:,})")
        if len(where) == 0:
            raise InputError(f"region {where} of {path} is empty; nothing to embed")
        check_nucleotide(str(where), fa.fetch(where.contig, where.start, where.end), path)
        ids = fa.fetch_array(where.contig, where.start, where.end, table=ENCODE_TABLE)
    return ids, where


# --out names that get text (a header line, then one row per base) rather than .npy
TEXT_SUFFIXES = {".tsv": "\t", ".txt": "\t", ".csv": ","}


def check_out(out: Path) -> None:
    """Refuse an --out whose name says a format ``embed`` does not write (``x.tsv.gz``,
    ``x.parquet``: it would get .npy bytes under that name), ``-`` and folders. A device or a
    pipe (``/dev/stdout``) gets .npy."""
    from genoctx.io.spool import is_stream

    if str(out) == "-":
        raise GenoctxError("--out -: give --out /dev/stdout to write .npy to standard output")
    if out.is_dir():
        raise GenoctxError(f"--out {out} is a folder; give the .npy file's name")
    if not is_stream(out) and "".join(out.suffixes[-1:]).lower() not in {".npy", *TEXT_SUFFIXES}:
        raise GenoctxError(f"--out {out}: embed writes .npy, or text for a name ending .tsv, "
                           ".txt or .csv (not compressed)")


def check_memory(bases: int, width: int) -> None:
    """Refuse a region whose embeddings (float32, ``width`` values a base, held about twice
    while the strands are put together) would not fit in half of this machine's memory."""
    import os

    need = 2 * 4 * width * bases
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no such query here: do not guess
        return
    if need > have // 2:
        raise GenoctxError(
            f"the embeddings of {bases:,} bp ({width} float32 values a base) need about "
            f"{need / 2**30:.1f} GiB, more than half of this machine's {have / 2**30:.1f} GiB: "
            f"embed a shorter --region (about {have // 2 // (8 * width):,} bp at most)")


def embed(
    input: Path = typer.Argument(..., help="FASTA file (plain, gzip, bgzip, xz or bzip2)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file (written atomically): .npy "
                             "(numpy), or text for a name ending .tsv/.txt (tabs) or .csv: a "
                             "header line, then one row per base."),
    region: str = typer.Option(None, "--region", "-r",
                               help="Region, 1-based inclusive: chr1:1,000-2,000 or a contig "
                                    "name. Needed when the file holds several records."),
    model: str = typer.Option("embedded", "--model", "-m",
                              help="'embedded' (the shipped weights) or a checkpoint directory."),
    pool: str = typer.Option("none", "--pool",
                             help="none: one row per base [L, 2D]; mean: the mean row [2D]."),
    segment_len: int = typer.Option(SEGMENT_LEN, "--segment-len",
                                    help="Tokens per segment (a multiple of the model's block "
                                         "size); memory grows with it. Results agree to rounding "
                                         "across sizes (a near-tie in a token's experts or a "
                                         "block's far blocks can flip); the same size and the "
                                         "same number of CPU threads give the same bytes."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Embed a region: both strands through the causal model; per base, the forward then the
    reverse-strand hidden state (2 x d_model float32 values).

    Example: genoctx embed genome.fa --region chr1:1-1,000,000 --model runs/tiny --out emb.npy
    """
    import numpy as np
    import torch

    from genoctx.io.atomic import atomic_path
    from genoctx.model.model import GenoCtxModel
    from genoctx.progress import progress_bar

    if pool not in ("none", "mean"):
        raise GenoctxError(f"--pool must be none or mean, got {pool!r}")
    from genoctx.cli.common import refuse_overwriting_inputs, resolve_device

    refuse_overwriting_inputs([out], {"input": input})
    check_out(out)

    dev = resolve_device(device)
    from genoctx.io.spool import rereadable

    with rereadable(input) as path:
        ids, where = read_tokens(path, region)
    net = GenoCtxModel.from_pretrained(model, device=dev)
    check_memory(len(ids) + 1, 2 * net.config.d_model)
    try:
        net.segment_length(segment_len, len(ids) + 1)
    except ValueError as exc:
        raise GenoctxError(f"--segment-len: {exc}") from exc
    tokens = torch.from_numpy(ids.astype(np.int64))[None]
    with progress_bar(f"embed {where}", total=len(ids) + 1, quiet=quiet) as bar:
        emb = net.embed(tokens, segment_len=segment_len, progress=bar.advance)[0]
    arr = (emb.mean(0) if pool == "mean" else emb).float().cpu().numpy()
    delimiter = TEXT_SUFFIXES.get(out.suffix.lower())
    with atomic_path(out) as tmp, open(tmp, "wb") as fh:
        if delimiter is None:
            np.save(fh, arr)
        else:  # one line per base (one line for --pool mean), forward then reverse strand
            d = arr.shape[-1] // 2
            names = [f"fwd_{i}" for i in range(d)] + [f"rev_{i}" for i in range(d)]
            np.savetxt(fh, arr.reshape(-1, arr.shape[-1]), fmt="%.7g", delimiter=delimiter,
                       header=delimiter.join(names), comments="#")
    if not quiet:  # on stderr: --out /dev/stdout may be the data
        typer.echo(f"wrote {out}: {list(arr.shape)} float32 embeddings of {where} "
                   f"({len(ids):,} bp)", err=True)


def register(app: typer.Typer) -> None:
    app.command("embed")(embed)
