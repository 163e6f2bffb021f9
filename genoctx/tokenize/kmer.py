"""Non-overlapping k-mer tokenizer (6-mers as in Nucleotide Transformer).

A sequence of ``L`` bases becomes ``L // k`` k-mer tokens followed by ``L % k`` single-base
tokens for the tail, so decoding gives every base back (except inside k-mers holding an N).

Vocabulary (``vocab_size = 10 + 4**k``; ids 0–8 are the nucleotide tokenizer's ids):

=============  ==========  ======================================================================
id             token       meaning
=============  ==========  ======================================================================
0, 1, 2, 3     specials    ``<pad>``, ``<bos>``, ``<eos>``, ``<mask>`` as in ``nucleotide``
4 … 8          A C G T N   single bases, used only for the last ``L % k`` bases
9              ``<nkmer>`` a k-mer holding N or any IUPAC code (decodes to ``k`` N's)
10 + i         k-mer       ``i`` = the k-mer read as a base-4 number, A=0 C=1 G=2 T=3, first
                           base most significant: ``AAAAAA`` → 10, ``AAAAAC`` → 11,
                           ``TTTTTT`` → 4105 (k=6)
=============  ==========  ======================================================================

Token ``t`` of a sequence covers bases ``[t*k, (t+1)*k)`` while ``t < L // k``, then one base each;
:meth:`KmerTokenizer.base_offsets` does that arithmetic for windows.
"""

from __future__ import annotations

import numpy as np

from genoctx.errors import GenoctxError
from genoctx.tokenize import nucleotide as nt

NKMER = 9
KMER_OFFSET = 10
MAX_K = 12
_LETTERS = np.frombuffer(b"ACGT", dtype=np.uint8)


class KmerError(GenoctxError, ValueError):
    """A bad k, or ids that are not this tokenizer's."""


class KmerTokenizer:
    """Non-overlapping k-mers of ``k`` bases; see the module docstring for the ids.

    Args:
        k: Bases per token, 1 to 12 (6 as in Nucleotide Transformer).
    """

    def __init__(self, k: int = 6):
        if not 1 <= k <= MAX_K:
            raise KmerError(f"k must be between 1 and {MAX_K} (got {k}); the vocabulary has "
                            "4**k entries")
        self.k = k
        self.vocab_size = KMER_OFFSET + 4 ** k

    def __repr__(self) -> str:
        return f"KmerTokenizer(k={self.k}, vocab_size={self.vocab_size})"

    def num_tokens(self, num_bases: int) -> int:
        """Tokens for a sequence of ``num_bases`` bases."""
        return num_bases // self.k + num_bases % self.k

    def base_offsets(self, token_index, num_bases: int) -> np.ndarray:
        """Base offset where each token index starts (``num_tokens`` maps to ``num_bases``)."""
        t = np.asarray(token_index, dtype=np.int64)
        full = num_bases // self.k
        return np.where(t <= full, t * self.k, full * self.k + (t - full))

    def encode(self, seq: bytes | str | np.ndarray) -> np.ndarray:
        """Bases → int32 token ids (k-mers, then the tail as single bases)."""
        return self.from_base_ids(nt.encode(seq).ravel())

    def from_base_ids(self, base_ids: np.ndarray) -> np.ndarray:
        """Nucleotide token ids ([L], values A..N) → k-mer token ids, as :meth:`encode`.

        Raises:
            ValueError: an id outside A..N (``<pad>``, ``<bos>``, ``<eos>``, ``<mask>``: their
                low bits would read as bases, a padded window's tail as a run of A).
        """
        base_ids = np.asarray(base_ids)
        if base_ids.size and (base_ids.min() < nt.A or base_ids.max() > nt.N):
            raise ValueError(f"base ids must lie in {nt.A}..{nt.N} (A, C, G, T, N); special "
                             "tokens (<pad>, <mask>, ...) have no k-mer: tokenize the bases, "
                             "then pad the k-mer ids")
        base_ids = base_ids.astype(np.uint8)
        k, full = self.k, len(base_ids) // self.k
        body = base_ids[:full * k].reshape(full, k)
        code = np.zeros(full, dtype=np.int32)
        n_bits = np.zeros(full, dtype=np.uint8)
        for j in range(k):
            col = body[:, j]
            code <<= 2
            code |= col & 3  # ids A=4 C=5 G=6 T=7 → 0 1 2 3
            n_bits |= col  # only N (8) sets bit 3
        code += KMER_OFFSET
        code[(n_bits & nt.N) != 0] = NKMER
        return np.concatenate([code, base_ids[full * k:].astype(np.int32)])

    def _check_ids(self, ids: np.ndarray, skip_special: bool) -> np.ndarray:
        if skip_special:
            ids = ids[ids > nt.MASK]
        if ids.size and (ids.min() < nt.A or ids.max() >= self.vocab_size):
            bad = ids[(ids < nt.A) | (ids >= self.vocab_size)][0]
            raise KmerError(f"token id {bad} is not a k={self.k} base or k-mer id "
                            f"({nt.A}..{self.vocab_size - 1})")
        return ids

    def decode(self, ids, *, skip_special: bool = False) -> str:
        """Token ids → bases (uppercase); ``<nkmer>`` decodes to ``k`` N's."""
        ids = self._check_ids(np.asarray(ids, dtype=np.int64).ravel(), skip_special)
        k = self.k
        chars = np.zeros((ids.size, k), dtype=np.uint8)
        kmer = ids >= KMER_OFFSET
        index = ids[kmer] - KMER_OFFSET
        shifts = 2 * np.arange(k - 1, -1, -1)
        chars[kmer] = _LETTERS[(index[:, None] >> shifts) & 3]
        chars[ids == NKMER] = ord("N")
        single = ids <= nt.N
        chars[single, 0] = nt._DECODE[ids[single]]
        return chars[chars != 0].tobytes().decode("ascii")

    def token(self, token_id: int) -> str:
        """The text of one token id (``"ACGTAC"``, ``"A"``, ``"<nkmer>"``, ``"<pad>"``)."""
        if token_id < nt.A:
            return nt.TOKENS[token_id]
        if token_id == NKMER:
            return "<nkmer>"
        return self.decode([token_id])

    def token_id(self, token: str) -> int:
        """The id of a token text (inverse of :meth:`token`)."""
        if len(token) == self.k and not set(token.upper()) - set("ACGT"):
            return int(self.encode(token)[0])
        if token in nt.TOKEN_TO_ID:
            return nt.TOKEN_TO_ID[token]
        if token == "<nkmer>":
            return NKMER
        raise KmerError(f"'{token}' is not a k={self.k} token")
