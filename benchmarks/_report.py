"""Shared helpers for benchmark scripts: machine description and docs/benchmarks.md sections.

Each benchmark owns one section of ``docs/benchmarks.md`` between
``<!-- BEGIN name -->`` and ``<!-- END name -->`` and rewrites only that section.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
HEADER = "# genoctx benchmarks\n\nEvery number below was produced by the command shown with it.\n"


def machine() -> str:
    """One line describing the machine, Python and torch."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{cpu}, {n} cores available, {gpu}; Python {sys.version.split()[0]}, "
            f"torch {torch.__version__}")


def section_head(title: str, script: str, argv: list[str] | None = None) -> str:
    """A section's title, the command that reruns it (``python benchmarks/NAME.py ARGS``, the
    arguments from ``argv`` or the command line) and the machine, each its own paragraph."""
    args = sys.argv[1:] if argv is None else argv
    cmd = f"python benchmarks/{Path(script).name}" + "".join(f" {a}" for a in args)
    return f"## {title}\n\nCommand: `{cmd}`\n\nMachine: {machine()}\n\n"


def write_section(name: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) the section ``name`` of the benchmarks document."""
    text = doc.read_text() if doc.exists() else HEADER
    block = f"<!-- BEGIN {name} -->\n{body.rstrip()}\n<!-- END {name} -->"
    pattern = re.compile(rf"<!-- BEGIN {re.escape(name)} -->.*?<!-- END {re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def md_table(headers: list[str], rows: list[list]) -> str:
    """A GitHub-flavoured markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)
