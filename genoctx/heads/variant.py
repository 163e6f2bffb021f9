"""Zero-shot variant effects: the causal model's log-likelihood of the alt vs the ref window.

Legend: B windows, T tokens, P shared prefix, V vocabulary, G prefix groups, R suffix rows.

``GCX_DLL`` of a variant is ``ll(alt window) − ll(ref window)``, each ``ll`` the sum of
``log p(x_t | BOS, x_<t)`` over the window, averaged over the forward strand and the reverse
complement (each window scored on its own by the causal model). Windows hold ``context``
bases around the REF allele with equal flanks, ``(context − len(REF)) // 2`` on each side (so
the reverse-complemented reference gives the reverse-complemented windows and the same score),
moved inside the contig near its ends. The alt window is the ref window with REF replaced by
ALT: an indel changes the window length, and is scored through the likelihood of the whole
window.

Equivalent spellings of one change score the same: ``AT>A`` and ``ATG>AG``, ``GA>AA`` and
``G>A``, a deletion written anywhere in the homopolymer it shortens. The windows are placed
around the stretch of reference that every spelling of the change covers
(:func:`change_span`): the bases both alleles share at the start and the end are trimmed, and
an indel's stretch is widened over the repeat it can slide in (left and right, with the
reference), so the equal flanks keep the strand symmetry above for indels too. The variants
yielded keep their own spelling; :func:`normalize` gives the one spelling ``bcftools norm -f``
and ``vt normalize`` write (trimmed, one base kept, left-aligned).

Speed: variants sharing a REF allele (the three SNVs of a site) share the ref window. With a
causal model every position before the first changed base has the same log-likelihood in the
ref and the alt windows, so those terms cancel and the model runs the shared, block-aligned
prefix once per strand and ref window; its per-layer context (``AttnCarry``) is copied to each
ref/alt suffix. The sums still cover every position where the windows differ, on both strands,
so the score equals the whole-window difference up to float rounding (a test holds it to the
direct ``log_likelihood`` computation).

``GCX_SCORE`` hook: a supervised head is any :class:`VariantHead` callable; none ships yet, and
the output has no ``GCX_SCORE`` field unless one is given (see ``genoctx.cli.score_variants``).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from genoctx.errors import InputError
from genoctx.io.vcf import Variant
from genoctx.tokenize import nucleotide as nt

DEFAULT_CONTEXT = 1024
DEFAULT_BATCH = 16


class VariantHead(Protocol):
    """A supervised variant head (the ``GCX_SCORE`` hook): windows in, one score out."""

    def __call__(self, variant: Variant, ref_ids: np.ndarray, alt_ids: np.ndarray) -> float: ...


# ----------------------------------------------------------------------------- windows

def window_span(length: int, start: int, end: int, context: int) -> tuple[int, int]:
    """The ref window ``[ws, we)`` around the REF span ``[start, end)`` of a contig.

    Equal flanks of ``(context − (end − start)) // 2`` bases, shifted to stay inside the contig;
    the whole contig when it is shorter than the window.
    """
    flank = max(0, (context - (end - start)) // 2)
    width = end - start + 2 * flank
    if width >= length:
        return 0, length
    ws = min(max(start - flank, 0), length - width)
    return ws, ws + width


def variant_windows(fasta, variant: Variant, context: int = DEFAULT_CONTEXT
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of the ref window and the alt window of ``variant`` (uint8, forward strand).

    Args:
        fasta: the reference (:class:`~genoctx.io.fasta.FastaFile`).
        variant: a :class:`~genoctx.io.vcf.Variant` (0-based ``pos``).
        context: bases in the ref window (rounded down so both flanks are equal).

    Returns:
        ``(ref_ids, alt_ids)``; ``alt_ids`` has the ref window's flanks around ALT.
    """
    if context < 1:
        raise InputError(f"context must be at least 1 base, got {context}")
    ws, we = window_span(fasta.lengths[variant.contig], variant.pos, variant.end, context)
    ref_ids = np.array(fasta.fetch_array(variant.contig, ws, we, table=nt.ENCODE_TABLE))
    alt_ids = np.concatenate([ref_ids[:variant.pos - ws], nt.encode(variant.alt),
                              ref_ids[variant.end - ws:]])
    return ref_ids, alt_ids


class _Bases:
    """Upper-case reference bases of one contig by 0-based index, read ``block`` at a time."""

    def __init__(self, fasta, contig: str, block: int = 256):
        self.fasta, self.contig, self.block = fasta, contig, block
        self.length = fasta.lengths[contig]
        self._blocks: dict[int, str] = {}

    def __getitem__(self, i: int) -> str:
        k = i // self.block
        text = self._blocks.get(k)
        if text is None:
            start = k * self.block
            text = self.fasta.fetch(self.contig, start, min(self.length, start + self.block))
            text = self._blocks[k] = text.decode("ascii", "replace").upper()
        return text[i - k * self.block]


def _trim(pos: int, ref: str, alt: str) -> tuple[int, str, str]:
    """The bases both alleles end with, then those they start with, dropped (none kept)."""
    m = 0
    while m < min(len(ref), len(alt)) and ref[-1 - m] == alt[-1 - m]:
        m += 1
    ref, alt = ref[:len(ref) - m], alt[:len(alt) - m]
    n = 0
    while n < min(len(ref), len(alt)) and ref[n] == alt[n]:
        n += 1
    return pos + n, ref[n:], alt[n:]


def change_span(fasta, variant: Variant, max_slide: int = 256) -> Variant:
    """The stretch of reference that every spelling of ``variant``'s change covers, as a
    Variant: ``ref`` the stretch's bases, ``alt`` what it becomes, the other fields as given.

    The bases both alleles share at the end and at the start are dropped, none kept: an SNV or
    MNV is its changed bases; a substitution of unequal lengths (``AT>GCC``) its minimal
    alleles. An insertion or deletion can slide along the repeat it lies in (deleting any one
    T of ``TTTTT`` gives the same sequence): its stretch runs from the leftmost placement to the
    end of the rightmost, so ``ref`` may be empty (an insertion that cannot slide: ``alt`` goes
    in before ``pos``). Every equivalent spelling, on either strand, gives the same stretch.
    REF must be the reference's bases (``ref_ok``); a variant whose REF equals ALT, or that is
    its own stretch, is returned as it is. The stretch is widened at most ``max_slide`` bases
    each way, so an indel in a long tandem array (a satellite) keeps a window of bounded size
    (spellings further apart than that along one array may then score apart).
    """
    pos, ref, alt = _trim(variant.pos, variant.ref.upper(), variant.alt.upper())
    if (ref and alt) or ref == alt:  # a substitution (one placement), or no change
        if (pos, ref, alt) == (variant.pos, variant.ref, variant.alt) or ref == alt:
            return variant
        return dataclasses.replace(variant, pos=pos, ref=ref, alt=alt)
    seq = _Bases(fasta, variant.contig)
    lo, hi = max(0, pos - max_slide), min(seq.length, pos + len(ref) + max_slide)
    if ref:  # a deletion of len(ref) bases: [pos, pos + k) may move while the ends agree
        k = len(ref)
        while pos > lo and seq[pos - 1] == seq[pos + k - 1]:
            pos -= 1
        end = pos + k
        while end < hi and seq[end] == seq[end - k]:
            end += 1
        span = "".join(seq[i] for i in range(pos, end))
        return dataclasses.replace(variant, pos=pos, ref=span, alt=span[k:])
    while pos > lo and seq[pos - 1] == alt[-1]:  # an insertion before pos, rotated as it moves
        pos, alt = pos - 1, alt[-1] + alt[:-1]
    end, moved = pos, alt
    while end < hi and seq[end] == moved[0]:
        end, moved = end + 1, moved[1:] + moved[0]
    span = "".join(seq[i] for i in range(pos, end))
    return dataclasses.replace(variant, pos=pos, ref=span, alt=alt + span)


def spellings(fasta, variant: Variant, max_slide: int = 256) -> list[tuple[int, str, str]]:
    """Every placement ``(pos, ref, alt)`` of ``variant``'s change, in minimal alleles (no
    shared base; an empty ``ref`` is an insertion before ``pos``), left to right: one for a
    substitution, one per position an insertion or deletion can slide to along its repeat
    (within :func:`change_span`'s ``max_slide``). All give the same sequence. REF must be the
    reference's bases (``ref_ok``)."""
    span = change_span(fasta, variant, max_slide)
    pos, ref, alt = _trim(span.pos, span.ref.upper(), span.alt.upper())
    if (ref and alt) or ref == alt:
        return [(pos, ref, alt)]
    if len(span.ref) > len(span.alt):  # deleting span.ref[j:j + k] leaves span.alt, every j
        k = len(span.ref) - len(span.alt)
        return [(span.pos + j, span.ref[j:j + k], "") for j in range(len(span.alt) + 1)]
    m = len(span.alt) - len(span.ref)  # inserting alt[j:j + m] before span.pos + j, every j
    return [(span.pos + j, "", span.alt[j:j + m]) for j in range(len(span.ref) + 1)]


def normalize(fasta, variant: Variant, *, look_back: int = 64) -> Variant:
    """``variant`` in its shortest, left-aligned spelling (``bcftools norm -f``, ``vt
    normalize``; Tan et al. 2015).

    The bases both alleles end with are trimmed; where that would empty an allele (an indel),
    both are first extended one base to the left with the reference's base, so the indel
    moves left through a repeat until the bases differ or the contig starts. Then the bases
    both alleles start with are trimmed, at least one base kept in each. REF must be the
    reference's bases (``ref_ok``); the alleles come back upper-case. A variant whose REF and
    ALT are equal is returned as it is.

    Args:
        fasta: the reference (:class:`~genoctx.io.fasta.FastaFile`).
        variant: a :class:`~genoctx.io.vcf.Variant` (0-based ``pos``).
        look_back: reference bases read at a time while moving left.

    Returns:
        A :class:`~genoctx.io.vcf.Variant` with ``pos``, ``ref`` and ``alt`` normalised, the
        other fields as given; ``variant`` itself when nothing changes.
    """
    pos, ref, alt = variant.pos, variant.ref.upper(), variant.alt.upper()
    if ref == alt:
        return variant
    seq = None
    while ref[-1] == alt[-1]:
        if min(len(ref), len(alt)) == 1:  # trimming empties an allele: extend left first
            if pos == 0:
                break
            seq = seq or _Bases(fasta, variant.contig, look_back)
            pos -= 1
            ref, alt = seq[pos] + ref, seq[pos] + alt
        ref, alt = ref[:-1], alt[:-1]
    n = 0
    while n < min(len(ref), len(alt)) - 1 and ref[n] == alt[n]:
        n += 1
    pos, ref, alt = pos + n, ref[n:], alt[n:]
    if (pos, ref, alt) == (variant.pos, variant.ref, variant.alt):
        return variant
    return dataclasses.replace(variant, pos=pos, ref=ref, alt=alt)


# ----------------------------------------------------------------------------- scoring engine

def _check_model(model) -> None:
    if not getattr(model.config, "causal", True):
        raise InputError("this checkpoint is bidirectional (causal=False); variant scoring uses "
                         "the causal log-likelihood, so give a causal checkpoint")


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if diff.size else n


def _prefix_length(seqs: list[np.ndarray], block: int) -> int:
    """Block-aligned length of the model input (``BOS x``) that all ``seqs`` share, leaving
    every row a non-empty suffix. Input position ``t`` holds ``x_{t-1}``, so ``v`` shared bases
    give ``v + 1`` shared inputs."""
    v = min(_common_prefix(seqs[0], s) for s in seqs[1:])
    shortest = min(len(s) for s in seqs)
    return min((v + 1) // block, (shortest - 1) // block) * block


def _take(carry, idx: torch.Tensor):
    """Rows ``idx`` of a per-layer carry (tensors, tuples of tensors, dataclasses of them)."""
    if carry is None:
        return None
    if isinstance(carry, torch.Tensor):
        return carry.index_select(0, idx)
    if isinstance(carry, (tuple, list)):
        return type(carry)(_take(c, idx) for c in carry)
    return dataclasses.replace(carry, **{f.name: _take(getattr(carry, f.name), idx)
                                         for f in dataclasses.fields(carry)})


def _tensor(rows: list[np.ndarray], device) -> torch.Tensor:
    return torch.as_tensor(np.stack(rows).astype(np.int64), device=device)


def _full_sums(model, rows: list[np.ndarray], batch_size: int) -> list[float]:
    """Whole-window log-likelihood sums (float64) through the public ``log_likelihood``."""
    out = [0.0] * len(rows)
    for _, members in _by_length(range(len(rows)), lambda i: len(rows[i])):
        for k in range(0, len(members), batch_size):
            part = members[k:k + batch_size]
            ll = model.log_likelihood(_tensor([rows[i] for i in part], model.device))
            for i, s in zip(part, ll.double().sum(1).tolist()):
                out[i] = s
    return out


def _by_length(items: Iterable[int], length: Callable[[int], int]) -> list[tuple[int, list[int]]]:
    buckets: dict[int, list[int]] = {}
    for i in items:
        buckets.setdefault(length(i), []).append(i)
    return sorted(buckets.items())


@torch.inference_mode()
def _prefix_sums(model, jobs: list[list[np.ndarray]], P: int, batch_size: int) -> list[list[float]]:
    """Per job, per row: ``Σ_{t ≥ P−1} log p(x_t | …)``; the shared input prefix ``[0, P)`` runs
    once per job and its carry is copied to the job's rows (ref and alts)."""
    dev = model.device
    prefix_GP = _tensor([np.concatenate([[nt.BOS], job[0][:P - 1]]) for job in jobs], dev)
    h_GPD, carries = model._run(prefix_GP, 0, [None] * len(model.layers), True)
    last_GV = model.lm_head(h_GPD[:, -1]).float().log_softmax(-1)
    rows = [(j, r) for j, job in enumerate(jobs) for r in range(len(job))]
    sums = [[0.0] * len(job) for job in jobs]
    for _, members in _by_length(range(len(rows)), lambda i: len(jobs[rows[i][0]][rows[i][1]])):
        for k in range(0, len(members), batch_size):
            part = [rows[i] for i in members[k:k + batch_size]]
            seqs = [jobs[j][r] for j, r in part]
            group = torch.tensor([j for j, _ in part], device=dev)
            inp_RT = _tensor([s[P - 1:-1] for s in seqs], dev)
            tgt_RT = _tensor([s[P:] for s in seqs], dev)
            h_RTD, _ = model._run(inp_RT, P, [_take(c, group) for c in carries], False)
            logp = model.lm_head(h_RTD).float().log_softmax(-1)
            ll = logp.gather(-1, tgt_RT[..., None])[..., 0].double().sum(1)
            first = last_GV[group].gather(-1, _tensor([s[P - 1:P] for s in seqs], dev))[:, 0]
            for (j, r), s in zip(part, (ll + first.double()).tolist()):
                sums[j][r] = s
    return sums


def job_sums(model, jobs: list[list[np.ndarray]], *, batch_size: int = DEFAULT_BATCH,
             share_prefix: bool = True, workers: int | None = None) -> list[list[float]]:
    """Log-likelihood sums of each job's rows, comparable within a job (ref first, then alts).

    Rows of one job differ only after their shared prefix; the terms before it are equal and
    left out when ``share_prefix`` (see the module docstring). Differences within a job are the
    whole-window differences either way. On CPU, ``workers`` threads (default:
    :func:`genoctx.model.workers.cpu_workers`) run the batches of jobs side by side; sums move
    only by float rounding.
    """
    from genoctx.model.workers import cpu_workers, in_order

    workers = cpu_workers(model.device, workers)
    block = model.config.block_size
    P = [_prefix_length(job, block) if share_prefix and len(job) > 1 else 0 for job in jobs]
    out: list[list[float]] = [[] for _ in jobs]
    full = [j for j, p in enumerate(P) if p == 0]
    if full:
        flat = [(j, r) for j in full for r in range(len(jobs[j]))]
        sums = _full_sums(model, [jobs[j][r] for j, r in flat], batch_size)
        for j in full:
            out[j] = [0.0] * len(jobs[j])
        for (j, r), s in zip(flat, sums):
            out[j][r] = s
    parts = [(p, members[k:k + batch_size])
             for p, members in _by_length((j for j, p in enumerate(P) if p), P.__getitem__)
             for k in range(0, len(members), batch_size)]

    def run(item: tuple[int, list[int]]) -> list[list[float]]:
        p, part = item
        return _prefix_sums(model, [jobs[j] for j in part], p, batch_size)

    for (_, part), results in zip(parts, in_order(run, parts, workers)):
        for j, sums in zip(part, results):
            out[j] = sums
    return out


def delta_log_likelihood(model, ref_ids: np.ndarray, alt_ids: np.ndarray) -> float:
    """``ll(alt) − ll(ref)`` of two windows, averaged over the forward and reverse strands.

    Args:
        model: a causal :class:`~genoctx.model.model.GenoCtxModel`.
        ref_ids, alt_ids: token ids (forward strand) of the two windows; lengths may differ.
    """
    _check_model(model)
    ref_ids, alt_ids = np.asarray(ref_ids, np.uint8), np.asarray(alt_ids, np.uint8)
    jobs = [[ref_ids, alt_ids], [nt.reverse_complement(ref_ids), nt.reverse_complement(alt_ids)]]
    (f_ref, f_alt), (r_ref, r_alt) = job_sums(model, jobs)
    return 0.5 * ((f_alt - f_ref) + (r_alt - r_ref))


# ----------------------------------------------------------------------------- streaming

@dataclass
class _Site:
    """Variants sharing one ref window (same contig, position and REF)."""

    ref_ids: np.ndarray
    members: list[tuple[int, np.ndarray]]  # (index in chunk, alt ids)


def _score_chunk(model, fasta, chunk: list[Variant], context: int, batch_size: int,
                 share_prefix: bool, workers: int | None) -> list[float | None]:
    sites: OrderedDict[tuple, _Site] = OrderedDict()
    for i, v in enumerate(chunk):
        if not v.ref_ok:
            continue
        v = change_span(fasta, v)  # equivalent spellings: the same windows
        key = (v.contig, v.pos, v.ref)
        ref_ids, alt_ids = variant_windows(fasta, v, context)
        sites.setdefault(key, _Site(ref_ids, [])).members.append((i, alt_ids))
    jobs = []
    for site in sites.values():
        alts = [a for _, a in site.members]
        jobs.append([site.ref_ids, *alts])
        jobs.append([nt.reverse_complement(x) for x in (site.ref_ids, *alts)])
    sums = job_sums(model, jobs, batch_size=batch_size, share_prefix=share_prefix,
                    workers=workers)
    scores: list[float | None] = [None] * len(chunk)
    for n, site in enumerate(sites.values()):
        fwd, rc = sums[2 * n], sums[2 * n + 1]
        for r, (i, _) in enumerate(site.members, 1):
            scores[i] = 0.5 * ((fwd[r] - fwd[0]) + (rc[r] - rc[0]))
    return scores


def _chunks(variants: Iterable[Variant], size: int) -> Iterator[list[Variant]]:
    """Chunks of about ``size`` variants; a chunk never splits the variants of one site."""
    chunk: list[Variant] = []
    for v in variants:
        if len(chunk) >= size and (v.contig, v.pos, v.ref) != (chunk[-1].contig, chunk[-1].pos,
                                                                chunk[-1].ref):
            yield chunk
            chunk = []
        chunk.append(v)
    if chunk:
        yield chunk


def score_variants(model, fasta, variants: Iterable[Variant], *, context: int = DEFAULT_CONTEXT,
                   batch_size: int = DEFAULT_BATCH, device: str | None = None,
                   progress: Callable[[int], None] | None = None, share_prefix: bool = True,
                   workers: int | None = None) -> Iterator[tuple[Variant, float | None]]:
    """Stream ``(variant, GCX_DLL)`` in input order; None for variants with ``ref_ok`` False.

    Each variant's windows lie around its :func:`change_span`, so equivalent spellings score
    the same; the variants are yielded as given.

    Args:
        model: a causal :class:`~genoctx.model.model.GenoCtxModel`.
        fasta: the reference (:class:`~genoctx.io.fasta.FastaFile`).
        variants: e.g. :func:`genoctx.io.vcf.iter_variants` (consumed in chunks, so memory does
            not grow with the input).
        context: bases per ref window (see :func:`window_span`).
        batch_size: windows per model call.
        device: move the model there first (None: leave it where it is).
        progress: called with the number of variants finished.
        share_prefix: run the shared prefix once (False: every window whole; same scores up to
            float rounding, slower; for checks and benchmarks).
        workers: CPU worker threads for the model calls (None: the default of
            :func:`genoctx.model.workers.cpu_workers`; see :func:`job_sums`).
    """
    _check_model(model)
    if context < 1 or batch_size < 1:
        raise InputError(f"context and batch size must be at least 1 (got {context}, "
                         f"{batch_size})")
    if device is not None:
        model.to(device)
    for chunk in _chunks(variants, max(64, 8 * batch_size)):
        yield from zip(chunk, _score_chunk(model, fasta, chunk, context, batch_size,
                                           share_prefix, workers))
        if progress:
            progress(len(chunk))
