"""The gene-level error breakdown of benchmarks/eukaryote_train_chunks.py --errors."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from genoctx.heads.spliced_decoder import SplicedGene

sys.path.append(str(Path(__file__).resolve().parents[2] / "benchmarks"))
from eukaryote_train_chunks import gene_errors


def call(strand, *cds, contig="c"):
    return SplicedGene(contig, strand, tuple(cds), 0.9, {})


def test_one_call_split_missed_and_merged():
    ds = SimpleNamespace(transcripts=[
        ("c", 1, ((100, 200), (300, 400)), "a"),   # one call
        ("c", 1, ((100, 200), (300, 380)), "a"),   # ... a second transcript of the same gene
        ("c", 1, ((1000, 1100), (1200, 1300)), "b"),  # split in two calls
        ("c", -1, ((2000, 2300),), "d"),           # missed: the call there is on the + strand
        ("c", 1, ((3000, 3100),), "e"),            # e and f merged by one call
        ("c", 1, ((3200, 3300),), "f"),
    ])
    genes = [call(1, (110, 200), (300, 400)),
             call(1, (1000, 1100)), call(1, (1200, 1300)),
             call(1, (2000, 2300)),
             call(1, (3000, 3100), (3200, 3300))]
    e = gene_errors(genes, ds)
    assert (e["one call"], e["split"], e["missed"], e["merged"]) == (3, 1, 1, 1)


def test_short_first_and_last_exons_in_gene_orientation():
    ds = SimpleNamespace(transcripts=[("c", 1, ((0, 10), (100, 200)), "a"),
                                      ("c", -1, ((0, 10), (100, 200)), "b")])
    genes = [call(1, (0, 15), (100, 130)),       # + strand: short first exon
             call(-1, (0, 50), (100, 105)),      # − strand: its first exon is the rightmost, 5 bp
             call(1, (500, 900))]                # unspliced: not counted
    e = gene_errors(genes, ds)
    assert e["first<20 calls"] == pytest.approx(1.0)
    assert e["last<20 calls"] == pytest.approx(0.0)
    assert e["first<20 annotated"] == pytest.approx(0.5)
    assert e["last<20 annotated"] == pytest.approx(0.5)
