"""Genetic code 4 (TGA = Trp): candidates, length statistics, translation, and a real contig."""

import gzip
from pathlib import Path

import numpy as np
import pytest
from Bio.Seq import Seq

from genoctx.errors import InputError
from genoctx.eval.metrics import gene_metrics
from genoctx.heads import orf_scorer as osc
from genoctx.heads.codon_model import stop_probability
from genoctx.heads.decoder import DecoderParams, GeneCall, call_genes_multi
from genoctx.heads.orfs import encode, find_candidates


def test_tga_stops_genes_only_in_table_11():
    #       ATG  AAA  TGA  AAA  ... TAA
    seq = "ATG" + "AAA" * 10 + "TGA" + "AAA" * 30 + "TAA"
    x = encode(seq)
    ends = {11: set(), 4: set()}
    for t in ends:
        c = find_candidates(x, closed=True, min_len=30, table=t)
        ends[t] = {int(e) for s, e in zip(c.start, c.end) if s == 0}
    assert ends[11] == {36} and ends[4] == {len(seq)}
    with pytest.raises(ValueError, match="not supported"):
        find_candidates(x, table=2)


def test_stop_probability_counts_the_table_stops():
    gc = 0.3
    at, g = 0.35, 0.15
    assert stop_probability(gc, 11) == pytest.approx(at ** 3 + 2 * at * at * g)
    assert stop_probability(gc, 4) == pytest.approx(at ** 3 + at * at * g)


def test_translation_features_follow_biopython_table_4():
    seq = "ATG" + "TGGTGATGATTT" * 5 + "TAA"
    x = encode(seq)
    j, k = np.array([0]), np.array([len(seq) // 3 - 1])
    for table in (11, 4):
        got = osc.translation_features(x, np.array([0]), j, k, 0.4, table)[0, :20]
        protein = str(Seq(seq[3:-3]).translate(table=table))
        want = np.array([protein.count(a) for a in osc.AMINO], dtype=float)
        np.testing.assert_allclose(got, want / max(want.sum(), 1))
    assert "W" in str(Seq(seq[3:-3]).translate(table=4))


def _mycoplasma_contig():
    """An 80-kb metagenomic contig that Prodigal's metagenomic mode decodes with a Mycoplasma
    bovis model in genetic code 4 (pyrodigal's test data, installed with pyrodigal). It tests
    that table 4 reads TGA through as Prodigal does, not that the contig is of a code-4
    organism (it uses TGA for few of its tryptophans: benchmarks/translation_table_evidence.py)."""
    pyrodigal = pytest.importorskip("pyrodigal")
    path = Path(pyrodigal.__file__).parent / "tests" / "data" / "SRR492066.fna.gz"
    if not path.is_file():
        pytest.skip("pyrodigal's test data is not installed")
    lines = gzip.open(path, "rt").read().splitlines()
    name, seq = lines[0][1:].split()[0], "".join(lines[1:]).encode()
    finder = pyrodigal.GeneFinder(meta=True, closed=False)
    genes = finder.find_genes(seq)
    assert genes[0].translation_table == 4
    ref = [GeneCall(name, g.begin - 1, g.end, g.strand, 0.0, g.start_type,
                    (bool(g.partial_begin), bool(g.partial_end))) for g in genes]
    return name, seq, ref


def test_code_4_contig_is_decoded_whole_only_with_table_4():
    name, seq, ref = _mycoplasma_contig()
    got = {}
    for t in (11, 4):
        calls = call_genes_multi([(name, seq)], params=DecoderParams(translation_table=t))
        got[t] = gene_metrics(calls, ref)
        assert all(c.attrs.get("transl_table") == (4 if t == 4 else None) for c in calls)
    print(f"\nagainst Prodigal's {len(ref)} code-4 genes: table 11 sensitivity "
          f"{got[11].sensitivity:.3f}, table 4 {got[4].sensitivity:.3f} / precision "
          f"{got[4].precision:.3f}")
    # with TGA read as a stop, about a fifth of the genes are cut short
    assert got[11].sensitivity < 0.85
    assert got[4].sensitivity >= 0.95 and got[4].precision >= 0.95


def test_unknown_table_is_refused():
    with pytest.raises(InputError, match="translation table"):
        call_genes_multi([("a", b"ATG" * 100)], params=DecoderParams(translation_table=25))


def test_cli_writes_the_table_on_every_cds(tmp_path, cli):
    name, seq, _ = _mycoplasma_contig()
    fa = tmp_path / "contig.fa"
    fa.write_text(f">{name}\n{seq.decode()}\n")
    code, _, err = cli(["annotate", fa, "-g", "4", "--model", "none", "--formats", "gff3",
                        "--out", tmp_path / "m", "--quiet"])
    assert code == 0, err
    cds = [r for r in (tmp_path / "m.gff3").read_text().splitlines() if "\tCDS\t" in r]
    assert len(cds) >= 60 and all(r.endswith("transl_table=4") for r in cds)
