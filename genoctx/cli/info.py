"""``genoctx info``: what is in a file — contigs, lengths, N content, soft-masking, GC.

The format is detected from the content (magic bytes), not the file name. FASTA and GenBank
are described here; BAM/CRAM/SAM go to :func:`genoctx.io.bam.bam_info` and VCF/BCF to
:func:`genoctx.io.vcf.vcf_info`.
"""

from __future__ import annotations

import importlib
import json
import shlex
from collections import Counter
from pathlib import Path

import typer

from genoctx.errors import GenoctxError, InputError
from genoctx.io.fasta import FORMAT_NAMES, fasta_info, sequence_stats, sniff_format

EPILOG = """Examples:

  genoctx info ce.fa

  genoctx info genome.gbff.gz --json
"""
MAX_ROWS = 50


def _totals(records: list[dict]) -> dict:
    names = [r["name"] for r in records]
    length = sum(r["length"] for r in records)
    acgt = sum(r["length"] - r["n_count"] for r in records)
    gc_bases = sum(r["gc"] * (r["length"] - r["n_count"]) for r in records if r["gc"] is not None)
    return {"records": len(records), "length": length,
            "n_count": sum(r["n_count"] for r in records),
            "iupac": sum(r["iupac"] for r in records),
            "softmasked": sum(r["softmasked"] for r in records),
            "gc": gc_bases / acgt if acgt else None,
            "duplicate_names": len(names) - len(set(names))}


def _genbank_info(path: Path) -> list[dict]:
    from Bio import SeqIO

    from genoctx.io.fasta import open_text

    records = []
    try:
        with open_text(path) as fh:
            for rec in SeqIO.parse(fh, "genbank"):
                stats = sequence_stats(bytes(rec.seq))
                records.append({"name": rec.id, **stats, "features": len(rec.features)})
    except (ValueError, EOFError, OSError) as exc:
        raise InputError(f"{path}: cannot parse GenBank ({exc})") from None
    if not records:
        raise InputError(f"{path} holds no GenBank records")
    return records


def _delegate(module: str, func: str, path: Path) -> dict:
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise GenoctxError(f"reading this format needs {module}, which is not available") \
            from None
    return getattr(mod, func)(str(path))


def describe(path: Path) -> dict:
    """Everything ``genoctx info`` reports about ``path``, as a JSON-ready dict."""
    fmt, compression = sniff_format(path)
    head = {"path": str(path), "format": fmt, "compression": compression}
    if fmt == "fasta":
        # Described even with repeated names (free-text headers), which are reported instead.
        records = fasta_info(path, unique=False)
        return {**head, "totals": _totals(records), "records": records}
    if fmt == "genbank":
        records = _genbank_info(path)
        return {**head, "totals": _totals(records), "records": records}
    if fmt in ("bam", "cram", "sam"):
        return {**head, **_delegate("genoctx.io.bam", "bam_info", path), **head}
    if fmt in ("vcf", "bcf"):
        return {**head, **_delegate("genoctx.io.vcf", "vcf_info", path), **head}
    if compression == "zstd":
        raise InputError(f"{path} is zstd-compressed; decompress it (zstd -d) first")
    raise InputError(f"{path} looks like {FORMAT_NAMES.get(fmt, fmt)}; info reads FASTA, "
                     "GenBank, BAM/CRAM/SAM and VCF/BCF")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}" if whole else "-"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                      enumerate(zip(r, widths))).rstrip() for r in rows]


def _sequence_text(info: dict) -> list[str]:
    t = info["totals"]
    lines = [f"{info['path']}: {FORMAT_NAMES[info['format']]} ({info['compression']}), "
             f"{t['records']:,} record{'' if t['records'] == 1 else 's'}, {t['length']:,} bp"]
    # N apart from the other codes (R, Y, ..., X), which appear in a column of their own
    other = t["iupac"] > 0
    rows = [["name", "length", "N", "N%"] + ["other IUPAC"] * other + ["softmasked%", "GC%"]]
    for r in info["records"][:MAX_ROWS] + [{"name": "total", **t}]:
        gc = f"{100 * r['gc']:.2f}" if r["gc"] is not None else "-"
        n = r["n_count"] - r["iupac"]
        rows.append([r["name"], f"{r['length']:,}", f"{n:,}", _pct(n, r["length"])]
                    + [f"{r['iupac']:,}"] * other
                    + [_pct(r["softmasked"], r["length"]), gc])
    lines += _table(rows)
    if len(info["records"]) > MAX_ROWS:
        lines.append(f"... {len(info['records']) - MAX_ROWS:,} more records (--json lists all)")
    if t["duplicate_names"]:
        lines += _repeated_names_note(info)
    return lines


# Renames the second and later records named alike: '>a' becomes '>a_2', '>a_3', ...
_RENAME = r"""awk '/^>/ { n[$1]++; if (n[$1] > 1) sub(/^>[^ \t]+/, "&_" n[$1]) } 1' """


def _repeated_names_note(info: dict) -> list[str]:
    """Which names repeat and, for FASTA, what that stops and a command that renames them."""
    counts = Counter(r["name"] for r in info["records"])
    repeated = [(name, n) for name, n in counts.items() if n > 1]
    shown = ", ".join(f"'{name}' ({n:,} records)" for name, n in repeated[:5])
    if len(repeated) > 5:
        shown += f" and {len(repeated) - 5:,} more names (--json lists every record)"
    extra = info["totals"]["duplicate_names"]
    note = f"note: {extra:,} record{' repeats' if extra == 1 else 's repeat'} an earlier name"
    if info["format"] != "fasta":
        return [f"{note}: {shown}"]
    name = repeated[0][0]
    note += (f" (the first word of its header): {shown}. tokenize, embed and annotate refuse "
             f"this file, since a region ({name}:1-100) names a record by that word and could "
             f"reach only the first '{name}'. Give each record a name of its own, e.g. (the "
             f"second '{name}' becomes '{name}_2'):")
    return [note, f"  {_RENAME}{shlex.quote(info['path'])} > renamed.fa"]


def _alignment_text(info: dict) -> list[str]:
    """The text of an alignment file's summary: unknowns are ``-`` (``null`` in ``--json``),
    with a line that says why the counts are missing (they come from the index)."""
    def shown(value) -> str:
        if value is None:
            return "-"
        return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else \
            str(value)

    rest = {k: v for k, v in info.items() if k not in ("path", "format", "compression",
                                                        "compressed", "references")}
    lines = [f"{info['path']}: {FORMAT_NAMES.get(info['format'], info['format'])} "
             f"({info['compression']})"]
    lines += [f"  {key}: {'unknown' if key == 'sorted' and v is None else shown(v)}"
              for key, v in rest.items()]
    refs = info["references"]
    lines.append("  references:")
    lines += ["    " + r for r in _table(
        [["name", "length", "mapped", "unmapped"]]
        + [[r["name"], shown(r["length"]), shown(r["mapped"]), shown(r["unmapped"])]
           for r in refs[:MAX_ROWS]])]
    if len(refs) > MAX_ROWS:
        lines.append(f"    ... {len(refs) - MAX_ROWS:,} more references (--json lists all)")
    if info["mapped"] is None:
        how = ("a SAM file has no index: convert it to a sorted BAM (samtools sort -o x.bam "
               "FILE), then samtools index x.bam") if info["format"] == "sam" else (
            "index it (samtools index FILE, or pysam.index) for per-contig counts"
            if not info["has_index"] else "this index holds no counts (CRAM)")
        lines.append(f"note: read counts come from the index; {how}")
    return lines


def _generic_text(info: dict, indent: str = "") -> list[str]:
    lines = []
    for key, value in info.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines.append(f"{indent}{key}:")
            cols = list(dict.fromkeys(c for v in value for c in v))
            lines += [indent + "  " + s for s in
                      _table([cols] + [[str(v.get(c, "")) for c in cols] for v in value])]
        elif isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines += _generic_text(value, indent + "  ")
        else:
            lines.append(f"{indent}{key}: {value}")
    return lines


def info(
    input: Path = typer.Argument(..., help="FASTA, GenBank, BAM/CRAM/SAM or VCF/BCF (plain or "
                                 "compressed)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Describe a file: contigs, lengths, N content, soft-masked fraction, GC."""
    from genoctx.io.spool import rereadable, shown_name

    with rereadable(input) as path:
        data = describe(path)
    data["path"] = shown_name(input)
    if as_json:
        typer.echo(json.dumps(data, indent=2, default=str))
    elif "records" in data and "totals" in data:
        typer.echo("\n".join(_sequence_text(data)))
    elif "has_index" in data:  # BAM/CRAM/SAM
        typer.echo("\n".join(_alignment_text(data)))
    else:  # VCF/BCF: a heading line, then what the reader found
        rest = {k: v for k, v in data.items()
                if k not in ("path", "format", "compression", "compressed")}
        typer.echo("\n".join([f"{data['path']}: {FORMAT_NAMES.get(data['format'], data['format'])}"
                              f" ({data['compression']})"] + _generic_text(rest, "  ")))


def register(app: typer.Typer) -> None:
    """Add ``genoctx info`` to the app."""
    app.command("info", epilog=EPILOG)(info)
