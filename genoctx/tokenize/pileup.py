"""Pileup tokenizer: one token per reference position = reference base × coarse allele state.

Token ids follow the nucleotide vocabulary (ids 0–8, :mod:`genoctx.tokenize.nucleotide`), so one
embedding table of :data:`PILEUP_VOCAB_SIZE` rows serves both::

    token = PILEUP_OFFSET + 4 * base + state          (PILEUP_OFFSET = 9, ids 9..28)

``base`` is the reference base: A 0, C 1, G 2, T 3, N 4 (N and every other byte, case ignored).
``state`` summarises the reads over the position (counts from :func:`genoctx.io.bam.pileup_channels`,
depth = A + C + G + T + del):

======  ================  ===================================================================
state   name              rule (first that applies)
======  ================  ===================================================================
0       ``no_coverage``   depth == 0
3       ``deletion``      del / depth >= :data:`DELETION_FRACTION` (0.5)
2       ``mismatch``      non-reference evidence (other bases + deletions) / depth >=
                          :data:`ALT_FRACTION` (0.2); at an N reference base nothing matches
1       ``match``         otherwise: the reads agree with the reference
======  ================  ===================================================================

The channels returned beside the tokens are normalised for a model (:data:`CHANNEL_NAMES`):
``log1p_depth``; ``frac_A/C/G/T/del`` = count / depth; ``alt_frac`` = the non-reference
fraction used for the state; ``mean_baseq_scaled`` = mean base quality / 40; and
``strand_plus_frac``. Every fraction is 0 where depth is 0.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from genoctx.io.bam import CHANNEL_INDEX, open_reference, pileup_channels
from genoctx.io.regions import Region
from genoctx.tokenize import nucleotide

PILEUP_OFFSET = nucleotide.VOCAB_SIZE  # 9: pileup ids come after the nucleotide vocabulary
BASES = ("A", "C", "G", "T", "N")
STATES = ("no_coverage", "match", "mismatch", "deletion")
NO_COVERAGE, MATCH, MISMATCH, DELETION = range(4)
PILEUP_VOCAB_SIZE = PILEUP_OFFSET + len(BASES) * len(STATES)  # 29
ALT_FRACTION = 0.2
DELETION_FRACTION = 0.5
BASEQ_SCALE = 40.0
CHANNEL_NAMES: tuple[str, ...] = ("log1p_depth", "frac_A", "frac_C", "frac_G", "frac_T",
                                  "frac_del", "alt_frac", "mean_baseq_scaled", "strand_plus_frac")


def token_id(base: int, state: int) -> int:
    """The id of reference base index ``base`` (A0 C1 G2 T3 N4) in allele ``state``."""
    return PILEUP_OFFSET + 4 * base + state


def describe(token: int) -> tuple[str, str]:
    """(reference base, state name) of a pileup token id."""
    if not PILEUP_OFFSET <= token < PILEUP_VOCAB_SIZE:
        raise ValueError(f"{token} is not a pileup token id ({PILEUP_OFFSET}..{PILEUP_VOCAB_SIZE - 1})")
    base, state = divmod(token - PILEUP_OFFSET, 4)
    return BASES[base], STATES[state]


def reference_base_index(seq: bytes) -> np.ndarray:
    """Reference bytes → base index A0 C1 G2 T3 N4 (uint8 [L])."""
    return nucleotide.encode(seq).astype(np.uint8) - nucleotide.A


def states_from_channels(raw_LC: np.ndarray, ref_base_L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(state [L], non-reference fraction [L]) from raw pileup channels and reference bases.

    Only covered positions are computed: a megabase region with sparse reads costs little more
    than one pass to find them.
    """
    n = len(raw_LC)
    state = np.zeros(n, np.uint8)  # NO_COVERAGE
    alt_frac = np.zeros(n, np.float32)
    idx = np.flatnonzero(raw_LC[:, CHANNEL_INDEX["depth"]] > 0)
    cov_KC = raw_LC[idx]
    depth = cov_KC[:, CHANNEL_INDEX["depth"]]
    # N (index 4) matches no read base: a zero column after T makes the lookup branch-free.
    counts_K5 = np.zeros((len(idx), 5), np.float32)
    counts_K5[:, :4] = cov_KC[:, CHANNEL_INDEX["A"]:CHANNEL_INDEX["T"] + 1]
    ref_count = counts_K5[np.arange(len(idx)), ref_base_L[idx]]
    alt = (depth - ref_count) / depth
    cov_state = np.full(len(idx), MATCH, np.uint8)
    cov_state[alt >= ALT_FRACTION] = MISMATCH
    cov_state[cov_KC[:, CHANNEL_INDEX["del"]] / depth >= DELETION_FRACTION] = DELETION
    state[idx], alt_frac[idx] = cov_state, alt
    return state, alt_frac


def normalise_channels(raw_LC: np.ndarray, alt_frac: np.ndarray) -> np.ndarray:
    """Raw counts → the model channels of :data:`CHANNEL_NAMES` (float32 [L, C]); uncovered
    positions stay all zero."""
    out = np.zeros((len(raw_LC), len(CHANNEL_NAMES)), np.float32)
    idx = np.flatnonzero(raw_LC[:, CHANNEL_INDEX["depth"]] > 0)
    cov_KC = raw_LC[idx]
    depth = cov_KC[:, CHANNEL_INDEX["depth"]]
    block = np.empty((len(idx), len(CHANNEL_NAMES)), np.float32)
    block[:, 0] = np.log1p(depth)
    block[:, 1:6] = cov_KC[:, CHANNEL_INDEX["A"]:CHANNEL_INDEX["del"] + 1] / depth[:, None]
    block[:, 6] = alt_frac[idx]
    block[:, 7] = cov_KC[:, CHANNEL_INDEX["mean_baseq"]] / BASEQ_SCALE
    block[:, 8] = cov_KC[:, CHANNEL_INDEX["strand_plus_frac"]]
    out[idx] = block
    return out


def tokenize_pileup(bam_path: str | Path, reference_path: str | Path, region: Region | str,
                    **filters) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Tokens and normalised channels for every reference position of a region.

    Args:
        bam_path: sorted BAM or CRAM (indexed on the fly when possible).
        reference_path: the FASTA the reads were aligned to.
        region: :class:`Region` (0-based half-open) or a region string (``17:1-4,200``).
        **filters: ``min_mapq``, ``min_baseq``, ``exclude_flags``, ``include_flags`` of
            :func:`genoctx.io.bam.pileup_channels`.

    Returns:
        ``(tokens, channels, names)``: int64 ``[L]`` ids in ``[PILEUP_OFFSET,
        PILEUP_VOCAB_SIZE)``, float32 ``[L, len(names)]``, and :data:`CHANNEL_NAMES`.

    Example:
        >>> tokens, channels, names = tokenize_pileup("mpileup.1.bam", "mpileup.ref.fa",
        ...                                           "17:1-4,200")
    """
    with open_reference(reference_path) as fa:
        r = fa.resolve(region)
        ref_base = reference_base_index(fa.fetch(r.contig, r.start, r.end))
    raw = pileup_channels(bam_path, r, reference_path, **filters)
    state, alt_frac = states_from_channels(raw, ref_base)
    tokens = (PILEUP_OFFSET + 4 * ref_base + state).astype(np.int64)  # uint8: max id 28
    return tokens, normalise_channels(raw, alt_frac), list(CHANNEL_NAMES)
