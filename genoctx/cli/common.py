"""Helpers shared by CLI commands: devices, cores and region targets."""

from __future__ import annotations

import os
from pathlib import Path

from genoctx.errors import InputError
from genoctx.io.fasta import FastaFile
from genoctx.io.regions import Region, read_bed


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; a clear error for an unusable choice.

    Every command that runs the model calls this first, so it also sets the process up for
    inference: subnormal floats are flushed to zero (x86 CPUs take a slow path for them).
    """
    import torch

    torch.set_flush_denormal(True)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise InputError(f"--device must be auto, cpu or cuda (got {device!r})")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda was asked for, but no CUDA device is available; use --device cpu")
    return device


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a Slurm allocation), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity call on this platform (macOS)
        return max(1, os.cpu_count() or 1)


def resolve_targets(fa: FastaFile, region: list[str] | None, regions: Path | None) -> list[Region]:
    """Regions from ``--region`` / ``--regions``, or every non-empty record of the FASTA."""
    if region and regions:
        raise InputError("give --region or --regions, not both")
    if regions is not None:
        found = read_bed(regions, fa.lengths)
        if not found:
            raise InputError(f"{regions} lists no regions")
        return found
    if region:
        return [fa.resolve(text) for text in region]
    return [Region(name, 0, size) for name, size in fa.lengths.items() if size > 0]
