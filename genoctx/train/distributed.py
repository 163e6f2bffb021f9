"""Data-parallel training over ``torch.distributed``, as launched by ``torchrun``.

``torchrun --nproc_per_node N -m genoctx train --recipe lm ...`` (or ``--nnodes`` across
machines, with a shared run directory) starts N processes. Every process draws the same global
batch from the same sampler stream and trains on its own slice of it (``rows``); after each
backward the gradients are averaged over all processes in one all-reduce (``sync_grads``), so
every process takes the same optimiser step, and the run follows the single-process run of the
same global batch: its loss is the same mean over the same windows (exactly so for the language
model's and z-loss terms, which are means over tokens, and for the annotation recipe's
class-weighted loss, whose weight sum is summed over the processes (``total``); the router's
load-balance term is computed per process). The sampler's state is the same everywhere, so a run resumes as before.
Only the first process writes (loss log, plot, state, export, run record) and shows progress.

Processes talk over ``gloo`` when they train on the CPU and over ``nccl`` on CUDA, one GPU per
process (``cuda:LOCAL_RANK``). Without ``torchrun`` (no ``WORLD_SIZE`` in the environment, or
1) :func:`from_env` returns a one-process :class:`DataParallel` on the device asked for and
nothing changes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from genoctx.errors import InputError


@dataclass(frozen=True)
class DataParallel:
    """This process's place among ``world`` data-parallel processes (``rank`` 0 writes) and the
    device it trains on."""

    rank: int = 0
    world: int = 1
    device: str = "cpu"

    @property
    def main(self) -> bool:
        """Whether this process writes files and shows progress."""
        return self.rank == 0

    def rows(self, batch: int) -> slice:
        """This process's rows of a global batch of ``batch`` windows."""
        if batch % self.world:
            raise InputError(f"the batch of {batch} windows does not split over {self.world} "
                             "processes: give --batch-size a multiple of the process count")
        share = batch // self.world
        return slice(self.rank * share, (self.rank + 1) * share)

    def sync_grads(self, params) -> None:
        """Average the gradients of ``params`` over all processes, in place (one all-reduce).

        A parameter no process used this step (an expert no token was routed to) keeps
        ``grad = None``, as in a one-process step, so the optimiser leaves it alone."""
        if self.world == 1:
            return
        import torch.distributed as dist

        params = [p for p in params if p.requires_grad]
        pieces = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1).float()
                  for p in params]
        used = torch.tensor([p.grad is not None for p in params], dtype=torch.float32,
                            device=pieces[0].device)
        flat = torch.cat(pieces + [used])
        dist.all_reduce(flat)
        flat[:-len(params)] /= self.world
        offset = 0
        for p, n_used in zip(params, flat[-len(params):].tolist(), strict=True):
            n = p.numel()
            p.grad = None if n_used == 0 else \
                flat[offset:offset + n].view_as(p).to(p.dtype).clone()
            offset += n

    def total(self, value: torch.Tensor) -> torch.Tensor:
        """``value`` (a detached scalar) summed over all processes: a global batch's count."""
        if self.world == 1:
            return value
        import torch.distributed as dist

        t = value.detach().float().reshape(()).clone()
        dist.all_reduce(t)
        return t

    def mean(self, values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``values`` (scalars) averaged over all processes: the global batch's metrics."""
        if self.world == 1:
            return values
        import torch.distributed as dist

        keys = list(values)
        t = torch.stack([values[k].detach().float().reshape(()) for k in keys])
        dist.all_reduce(t)
        return dict(zip(keys, t / self.world, strict=True))

    def broadcast(self, module: torch.nn.Module) -> None:
        """Give every process the first process's parameters and buffers."""
        if self.world == 1:
            return
        import torch.distributed as dist

        with torch.no_grad():
            for t in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(t.data, 0)

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()

    def first_decides(self, check) -> None:
        """Call ``check()`` on the first process only (what it alone checks: the run folder's
        lock, a finished run), then let every process know how it went: the first raises its
        own error, the others an :class:`InputError` with the same message, so that they stop
        at once with it instead of failing in their next collective call."""
        problem = None
        try:
            if self.main:
                check()
        except Exception as exc:  # told to the others, then raised here
            problem = str(exc) or type(exc).__name__
            raise
        finally:
            if self.world > 1:
                import torch.distributed as dist

                said = [problem]
                dist.broadcast_object_list(said, src=0)
                if said[0] is not None and not self.main:
                    raise InputError(said[0])


def from_env(device: str = "cpu") -> DataParallel:
    """The process group ``torchrun`` describes in the environment (joined on first call), or
    one process, training on ``device`` (``cpu`` or ``cuda``; under ``torchrun`` CUDA means
    this process's own GPU, ``cuda:LOCAL_RANK``)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DataParallel(device=device)
    import torch.distributed as dist

    cuda = device.startswith("cuda")
    if cuda:
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
        torch.cuda.set_device(device)
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    return DataParallel(dist.get_rank(), dist.get_world_size(), device)


def shutdown() -> None:
    """Leave the process group, if this process joined one (a process that exits while still in
    it may be aborted by gloo's threads at interpreter exit)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
