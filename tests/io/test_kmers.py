"""Packed k-mer codes built by doubling agree with one k-mer packed base by base, on every k
up to 32, on sequences with N, lower case and RNA letters; canonical codes are strand-blind."""

from __future__ import annotations

import numpy as np
import pytest

from genoctx.heads.orfs import encode
from genoctx.io.dataroot import kmer_codes
from genoctx.io.kmers import canonical_kmers, code_dtype, packed_kmers

LETTERS = b"ACGTacgtuNRn"
COMPLEMENT = bytes.maketrans(b"ACGTacgtuNRn", b"TGCAtgcaaNYn")


def _sequence(length: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    p = np.array([20, 20, 20, 20, 5, 5, 5, 5, 2, 2, 1, 1], float)
    return rng.choice(np.frombuffer(LETTERS, np.uint8), length, p=p / p.sum()).tobytes()


def _one(kmer: bytes) -> tuple[int, bool]:
    value = 0
    for b in kmer.upper().replace(b"U", b"T"):
        value = value * 4 + max(b"ACGT".find(bytes([b])), 0)
    return value, all(b in b"ACGT" for b in kmer.upper().replace(b"U", b"T"))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 8, 12, 15, 16, 17, 31, 32])
def test_every_kmer_matches_one_packed_base_by_base(k):
    seq = _sequence(300, seed=k)
    codes, ok = packed_kmers(encode(seq), k)
    assert codes.dtype == code_dtype(k) and len(codes) == len(ok) == len(seq) - k + 1
    want = [_one(seq[i:i + k]) for i in range(len(seq) - k + 1)]
    assert ok.tolist() == [w[1] for w in want]
    assert [int(c) for c, good in zip(codes, ok) if good] == [w[0] for w in want if w[1]]


def test_canonical_codes_are_the_same_on_either_strand():
    seq = _sequence(2_000, seed=1)
    rc = seq.translate(COMPLEMENT)[::-1]
    fwd, ok = canonical_kmers(encode(seq), 32)
    rev, rev_ok = canonical_kmers(encode(rc), 32)
    assert np.array_equal(ok, rev_ok[::-1])
    assert np.array_equal(fwd[ok], rev[::-1][ok])
    # the canonical code is the smaller of the two strands' codes
    i = int(np.flatnonzero(ok)[0])
    assert int(fwd[i]) == min(_one(seq[i:i + 32])[0], _one(rc[len(seq) - 32 - i:len(seq) - i])[0])


def test_sampled_starts_read_the_same_codes_as_every_start():
    seq = _sequence(5_000, seed=2)
    every, ok = kmer_codes(seq)
    at = np.arange(0, len(seq) - 31, 37)
    some, some_ok = kmer_codes(seq, at)
    assert np.array_equal(some_ok, ok[at]) and np.array_equal(some[some_ok], every[at][some_ok])


@pytest.mark.parametrize("length", [0, 1, 31])
def test_a_sequence_shorter_than_k_has_no_kmers(length):
    codes, ok = packed_kmers(encode(_sequence(length)), 32)
    assert codes.dtype == np.uint64 and len(codes) == len(ok) == 0


def test_more_than_32_bases_do_not_pack():
    with pytest.raises(ValueError, match="at most 32"):
        packed_kmers(encode(b"A" * 40), 33)
