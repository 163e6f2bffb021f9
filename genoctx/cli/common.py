"""Helpers shared by CLI commands: devices, cores, region targets, outputs that are inputs."""

from __future__ import annotations

from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.fasta import FastaFile
from genoctx.io.regions import Region, read_bed
from genoctx.model.device import available_cores, check_device_name, resolve_device

__all__ = ["available_cores", "check_device_name", "refuse_overwriting_inputs",
           "resolve_device", "resolve_targets"]


def resolve_targets(fa: FastaFile, region: list[str] | None, regions: Path | None) -> list[Region]:
    """Regions from ``--region`` / ``--regions``, or every non-empty record of the FASTA."""
    if region and regions:
        raise InputError("give --region or --regions, not both")
    if regions is not None:
        found = read_bed(regions, fa.lengths)
        if not found:
            raise InputError(f"{regions} lists no regions")
        empty = next((r for r in found if len(r) == 0), None)
        if empty is not None:  # valid BED (an insertion point), but nothing to read
            raise InputError(f"{regions}: region {empty.contig}:{empty.start}-{empty.end} "
                             "(0-based) is empty (start = end); give intervals with bases")
        return found
    if region:
        return [fa.resolve(text) for text in region]
    return [Region(name, 0, size) for name, size in fa.lengths.items() if size > 0]


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one existing file (through links, or the same path)."""
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return False


def refuse_overwriting_inputs(outputs, inputs: dict[str, Path | None]) -> None:
    """Raise :class:`InputError` before any work when an output would replace an input file
    (``inputs``: what the user calls it, e.g. ``"--reference"``, to its path or None).

    Outputs are written atomically into place, so such a run would end with the input gone
    and its output in its place."""
    for out in outputs:
        for what, given in inputs.items():
            if given is not None and _same_file(Path(out), Path(given)):
                raise InputError(f"the output {out} is the {what} file; write to another name")


def model_choice(value: str) -> str:
    """``--model``'s value: 'none' and 'embedded' in any case (NONE, Embedded), a path as given."""
    return value.lower() if value.lower() in ("none", "embedded") else value
