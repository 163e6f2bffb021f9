"""Device names: checked without torch, resolved (with torch) only where a model runs; the
CPU cores a process may use."""

from __future__ import annotations

import os

from genoctx.errors import InputError


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity, e.g. a Slurm allocation), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity call on this platform (macOS)
        return max(1, os.cpu_count() or 1)


def available_memory() -> int | None:
    """Bytes of memory this process may still take: the system's ``MemAvailable``, or less
    where a cgroup (a container, a Slurm job) caps the process lower; ``None`` where neither
    can be read (not Linux)."""
    found = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    try:  # cgroup v2: this process's group, its limit less what it holds
        with open("/proc/self/cgroup") as fh:
            group = next((ln.split(":", 2)[2].strip() for ln in fh if ln.startswith("0::")), None)
        if group is not None:
            base = os.path.join("/sys/fs/cgroup", group.lstrip("/"))
            with open(os.path.join(base, "memory.max")) as fh:
                limit = fh.read().strip()
            if limit != "max":
                with open(os.path.join(base, "memory.current")) as fh:
                    found.append(max(0, int(limit) - int(fh.read().strip())))
    except (OSError, ValueError, IndexError):
        pass
    try:  # cgroup v1, as a container sees its own group
        with open("/sys/fs/cgroup/memory/memory.limit_in_bytes") as fh:
            limit = int(fh.read().strip())
        if limit < 1 << 60:  # "no limit" reads as a number near 2^63
            with open("/sys/fs/cgroup/memory/memory.usage_in_bytes") as fh:
                found.append(max(0, limit - int(fh.read().strip())))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def check_device_name(device: str) -> str:
    """``device`` if it names a device genoctx can use (auto, cpu, cuda, cuda:N); else a clear
    error. Imports nothing heavy, so commands that may not run a model check it up front."""
    if device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise InputError(f"--device must be auto, cpu or cuda (got {device!r})")


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; a clear error for an unusable choice.

    Every command that runs the model calls this first, so it also sets the process up for
    inference: subnormal floats are flushed to zero (x86 CPUs take a slow path for them).
    """
    check_device_name(device)
    import torch

    torch.set_flush_denormal(True)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("--device cuda was asked for, but no CUDA device is available; use --device cpu")
    return device
