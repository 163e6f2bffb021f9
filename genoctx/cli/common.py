"""Helpers shared by CLI commands: devices, cores and region targets."""

from __future__ import annotations

from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.fasta import FastaFile
from genoctx.io.regions import Region, read_bed
from genoctx.model.device import available_cores, check_device_name, resolve_device

__all__ = ["available_cores", "check_device_name", "resolve_device", "resolve_targets"]


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


def model_choice(value: str) -> str:
    """``--model``'s value: 'none' and 'embedded' in any case (NONE, Embedded), a path as given."""
    return value.lower() if value.lower() in ("none", "embedded") else value
