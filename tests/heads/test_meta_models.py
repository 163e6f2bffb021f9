"""The decoder's bank of pre-trained models and the meta procedure for short sequences."""

import dataclasses
import hashlib
import json

import numpy as np
import pytest

from genoctx.errors import InputError
from genoctx.eval.metrics import gene_metrics
from genoctx.heads import meta_models as mm
from genoctx.heads.decoder import (
    META_MAX_BP,
    MIXTURE_GC_GAP,
    DecoderParams,
    GenomeDecoder,
    auto_procedure,
    call_genes_multi,
    gc_groups,
    is_mixture,
    mixture_groups,
)
from genoctx.io.annotation import read_sequences_genbank

BMEL = "genomes/bacteria/Brucella_melitensis_16M.gbff.gz"


def _fake(name: str, gc: float, seed: int = 0) -> mm.MetaModel:
    r = np.random.default_rng(seed)
    return mm.MetaModel(name, gc, r.normal(size=(3, 4096)).astype(np.float32),
                        r.normal(size=4096).astype(np.float32), r.normal(size=4).astype(np.float32),
                        r.normal(size=len(mm.default_bank()[0].rbs_llr)).astype(np.float32),
                        r.normal(size=mm.default_bank()[0].pwm_llr_PB.shape).astype(np.float32))


def test_shipped_bank_matches_its_record_and_names_no_held_out_genome(data_root):
    from genoctx.io.dataroot import TRAINABLE_ROLES, load_manifest

    info = json.loads((mm.WEIGHTS_DIR / "meta_models.json").read_text())
    digest = hashlib.sha256((mm.WEIGHTS_DIR / mm.FILE).read_bytes()).hexdigest()
    assert info["sha256"] == digest
    bank = mm.default_bank()
    assert {m.name: round(m.gc, 4) for m in bank} == info["models"]
    roles = {e.path: e.role for e in load_manifest(data_root).values()}
    assert info["files"] and all(roles[p] in TRAINABLE_ROLES for p in info["files"])
    assert not any("Brucella" in m.name or "Haemophilus" in m.name for m in bank)
    for m in bank:
        assert m.llr_QK.shape == (3, 4096) and np.isfinite(m.llr_QK).all()


def test_shipped_model_is_what_the_code_builds(data_root):
    """Rebuilding one entry from its train genome gives the shipped tensors exactly."""
    rel = "genomes/bacteria/Chlamydia_trachomatis_NC_000117.1.gbff.gz"
    genomes = [g for g in mm.bank_genomes(data_root) if g[0] == "Chlamydia_trachomatis_NC_000117.1"]
    assert len(genomes) == 1 and (data_root / rel).is_file()
    built = mm.build(genomes)[0]
    shipped = {m.name: m for m in mm.default_bank()}[built.name]
    assert built.gc == pytest.approx(shipped.gc, abs=1e-12)
    for part in mm.PARTS:
        np.testing.assert_array_equal(getattr(built, part), getattr(shipped, part))


def test_bank_builder_reads_through_the_role_guard(monkeypatch, data_root):
    """Every file the builder reads passes the training loader's role guard first."""
    from genoctx.io import dataroot

    seen = []

    def guard(path, root=None):
        seen.append(path)
        raise dataroot.DataRoleError(f"refused {path}")

    monkeypatch.setattr(dataroot, "require_trainable", guard)
    with pytest.raises(dataroot.DataRoleError):
        mm.bank_genomes(data_root)
    assert len(seen) == 1


def test_save_load_round_trip_and_refusals(tmp_path):
    bank = [_fake("a", 0.4, 1), _fake("b", 0.6, 2)]
    mm.save_bank(bank, tmp_path)
    back = mm.load_bank(tmp_path)
    assert [m.name for m in back] == ["a", "b"] and [m.gc for m in back] == [0.4, 0.6]
    for m0, m1 in zip(bank, back):
        for p in mm.PARTS:
            np.testing.assert_array_equal(getattr(m0, p), getattr(m1, p))
    data = bytearray((tmp_path / mm.FILE).read_bytes())
    data[-1] ^= 1
    (tmp_path / mm.FILE).write_bytes(bytes(data))
    with pytest.raises(InputError, match="sha256"):
        mm.load_bank(tmp_path)
    (tmp_path / mm.FILE).unlink()
    with pytest.raises(InputError, match="missing"):
        mm.load_bank(tmp_path)
    with pytest.raises(ValueError):
        mm.save_bank([_fake("x/y", 0.5)], tmp_path)


def test_saved_bytes_do_not_depend_on_the_run(tmp_path):
    """The shipped sha256 must come out of every rebuild: one metadata key (safetensors writes
    several in no fixed order), tensors in a fixed order."""
    import struct

    bank = [_fake("a", 0.4, 1), _fake("b", 0.6, 2)]
    mm.save_bank(bank, tmp_path / "one")
    mm.save_bank(bank, tmp_path / "two")
    raw = (tmp_path / "one" / mm.FILE).read_bytes()
    assert raw == (tmp_path / "two" / mm.FILE).read_bytes()
    header = json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])
    assert list(header["__metadata__"]) == ["bank"]


def test_candidates_follow_gc():
    bank = (_fake("low", 0.30), _fake("mid", 0.50), _fake("high", 0.68))
    assert [m.name for m in mm.candidates(bank, 0.50)] == ["mid"]
    lo, hi = mm.gc_window(0.50)
    assert lo < 0.50 < hi
    assert [m.name for m in mm.candidates(bank, 0.70)] == ["high"]
    # nothing in the window: the nearest model
    assert [m.name for m in mm.candidates((_fake("mid", 0.5),), 0.15)] == ["mid"]
    with pytest.raises(InputError):
        mm.candidates((), 0.5)


@pytest.fixture(scope="module")
def bmel(data_root):
    from genoctx.io.annotation import read_genes, read_sequences_genbank

    records = [(c, s) for c, s in read_sequences_genbank(data_root / BMEL) if len(s)]
    return records, read_genes(data_root / BMEL)


def _windows(bmel, size, n):
    (name, seq), truth = bmel[0][0], bmel[1]
    out = []
    for k in range(n):
        lo = 100_000 + k * 250_000
        win = (f"w{k}", seq[lo:lo + size])
        genes = [dataclasses.replace(g, contig=f"w{k}", start=g.start - lo, end=g.end - lo,
                                     parts=[])
                 for g in truth if g.contig == name and lo <= g.start and g.end <= lo + size]
        out.append((win, genes))
    return out


def test_meta_finds_genes_self_training_cannot_on_short_regions(bmel):
    """On 10-kb pieces of a held-out genome the bank beats self-training by a wide margin."""
    got = {"single": [], "meta": []}
    truth = []
    for win, genes in _windows(bmel, 10_000, 6):
        truth += genes
        for proc in got:
            calls = call_genes_multi([win], procedure=proc)
            got[proc] += [g for g in calls if not g.partial[0] and not g.partial[1]]
    single, meta = (gene_metrics(got[p], truth) for p in ("single", "meta"))
    assert meta.f1 >= 0.85
    assert meta.f1 > single.f1 + 0.05
    assert all("model" in g.attrs for g in got["meta"])
    assert not any("model" in g.attrs for g in got["single"])


def test_auto_switches_on_total_length(bmel):
    seq = bmel[0][0][1]
    short = call_genes_multi([("a", seq[:20_000])])
    assert short and all("model" in g.attrs for g in short)
    long = call_genes_multi([("a", seq[:META_MAX_BP + 1000])])
    assert long and not any("model" in g.attrs for g in long)
    # many short records adding up past the limit: one genome, self-trained together
    parts = [(f"c{i}", seq[i * 40_000:(i + 1) * 40_000]) for i in range(4)]
    assert not any("model" in g.attrs for g in call_genes_multi(parts))
    with pytest.raises(InputError, match="procedure"):
        call_genes_multi([("a", seq[:5000])], procedure="metagenome")
    done = []
    recs = [("x", seq[:8000]), ("y", seq[8000:11000])]
    call_genes_multi(recs, procedure="meta", progress=done.append)
    assert done == [8000, 3000]


def test_bank_model_weighs_as_prior_bases(bmel):
    """With a prior of enormous weight the statistics stay the bank model's; with none they are
    the sequence's own."""
    rec = [("a", bmel[0][0][1][:30_000])]
    heavy = GenomeDecoder(rec, None, DecoderParams(meta_prior_bases=1e15))
    _, name = heavy.train_meta(mm.default_bank())
    model = {m.name: m for m in mm.default_bank()}[name]
    np.testing.assert_allclose(heavy.coding_model.llr_QK, model.llr_QK, atol=1e-5)
    np.testing.assert_allclose(heavy.start_model.rbs_llr, model.rbs_llr, atol=1e-5)
    light = GenomeDecoder(rec, None, DecoderParams(meta_prior_bases=1e-9))
    light.train_meta(mm.default_bank())
    assert np.abs(light.coding_model.llr_QK - model.llr_QK).max() > 0.5


def test_worker_processes_give_the_same_calls_in_the_same_order(bmel):
    """Records decoded side by side in worker processes (spawned) come back in input order with
    the same calls, bank models and progress as decoded here; a passed bank reaches the workers."""
    seq = bmel[0][0][1]
    recs = [(f"r{i}", seq[i * 30_000:(i + 1) * 30_000 - i * 4000]) for i in range(5)]
    seen = {1: [], 3: []}
    got = {w: call_genes_multi(recs, procedure="meta", workers=w, progress=seen[w].append)
           for w in seen}
    key = lambda g: (g.contig, g.start, g.end, g.strand, g.score, g.start_codon, g.attrs)
    assert got[1] and [key(g) for g in got[3]] == [key(g) for g in got[1]]
    assert [g.contig for g in got[3]] == sorted(g.contig for g in got[3])
    assert seen[3] == seen[1] == [len(s) for _, s in recs]
    only = (mm.default_bank()[0],)
    assert {g.attrs["model"] for g in call_genes_multi(recs[:2], procedure="meta", bank=only,
                                                      workers=2)} == {only[0].name}
    with pytest.raises(InputError, match="workers"):
        call_genes_multi(recs, workers=0)


def test_no_process_pool_falls_back_to_decoding_in_turn(bmel, monkeypatch):
    """Where processes cannot be pooled (no POSIX semaphores, e.g. without /dev/shm), the
    records are decoded here, with the same calls."""
    import concurrent.futures

    seq = bmel[0][0][1]
    recs = [("a", seq[:20_000]), ("b", seq[20_000:35_000])]
    want = call_genes_multi(recs, procedure="meta")

    def refuse(*args, **kwargs):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    assert call_genes_multi(recs, procedure="meta", workers=4) == want


def _contigs(data_root, name, n, size=10_000, tag=""):
    """``n`` contigs of ``size`` bp spread over the longest record of a real genome."""
    seq = max((s for _, s in read_sequences_genbank(
        data_root / f"genomes/bacteria/{name}.gbff.gz")), key=len)
    step = (len(seq) - size) // n
    return [(f"{tag}{i}", seq[i * step:i * step + size]) for i in range(n)]


@pytest.fixture(scope="module")
def mixture(data_root):
    """Contigs of a low- and a high-G+C train genome (39% and 67%) in one input, 400 kb."""
    low = _contigs(data_root, "Streptococcus_pyogenes_MGAS315", 20, tag="spy")
    high = _contigs(data_root, "Paracoccus_sp._SCN_68-21", 20, tag="par")
    return low, high


def test_gc_groups_tell_a_mixture_from_one_genome(mixture, data_root):
    low, high = mixture
    lo, hi, share = gc_groups(low + high)
    assert lo == pytest.approx(0.385, abs=0.01) and hi == pytest.approx(0.67, abs=0.01)
    assert share == pytest.approx(0.5, abs=1e-3) and is_mixture(high + low) == gc_groups(low + high)
    assert is_mixture(low + high[:1]) is None  # the smaller group under MIXTURE_MIN_SHARE
    # one genome's contigs, islands and all, do not split that far (E. coli: 0.06)
    eco = _contigs(data_root, "Escherichia_coli_K12_MG1655", 60)
    lo, hi, _ = gc_groups(eco)
    assert 0 < hi - lo < MIXTURE_GC_GAP and is_mixture(eco) is None
    assert auto_procedure(eco) == "single" and auto_procedure(low + high) == "groups"
    assert mixture_groups(eco) == [list(range(len(eco)))]
    # records under 1 kb do not count; fewer than two that do: no groups
    assert gc_groups(low[:1] + [("s", b"GGGCCC" * 100)]) is None
    assert gc_groups([("n", b"N" * 5000), ("a", low[0][1])]) is None


def _key(calls):
    return [(g.contig, g.start, g.end, g.strand, g.score, g.start_codon, g.partial) for g in calls]


def test_auto_decodes_each_organism_of_a_mixture_on_its_own(mixture):
    low, high = mixture
    recs = [r for pair in zip(low, high) for r in pair]  # the organisms' contigs interleaved
    assert sum(len(s) for _, s in recs) > META_MAX_BP
    assert mixture_groups(recs) == [list(range(0, 40, 2)), list(range(1, 40, 2))]
    auto = call_genes_multi(recs)
    assert _key(auto) == _key(call_genes_multi(recs, procedure="groups"))
    # groups a caller already knows (by record name) are used as given
    named = [[c for c, _ in low], [c for c, _ in high]]
    assert _key(auto) == _key(call_genes_multi(recs, procedure="groups", groups=named))
    whole = call_genes_multi(recs, procedure="groups", groups=[[c for c, _ in recs]])
    assert _key(whole) == _key(call_genes_multi(recs, procedure="single"))
    # each group (200 kb) self-trained as if it were given alone, the calls in input order
    alone = {g.contig: [] for g in auto}
    for part in (low, high):
        for g in call_genes_multi(part, procedure="single"):
            alone[g.contig].append(g)
    assert _key(auto) == _key([g for c, _ in recs for g in alone.get(c, [])])
    assert auto and not any("model" in g.attrs for g in auto)
    # each call names its G+C group, 1 the lower
    assert {(g.contig[:3], g.attrs["composition_group"]) for g in auto} == {("spy", 1), ("par", 2)}
    # a group under META_MAX_BP is decoded record by record from the bank, started from a
    # model of its own composition
    few = low + high[:3]
    assert is_mixture(few) and sum(len(s) for _, s in high[:3]) < META_MAX_BP
    got = call_genes_multi(few)
    meta = call_genes_multi(high[:3], procedure="meta")
    assert _key([g for g in got if g.contig.startswith("par")]) == _key(meta)
    gc = {m.name: m.gc for m in mm.default_bank()}
    assert all(gc[g.attrs["model"]] > 0.6 for g in meta) and meta
    assert _key([g for g in got if g.contig.startswith("spy")]) == _key(
        call_genes_multi(low, procedure="single"))


def test_mixture_groups_tell_organisms_of_like_gc_apart_by_tetranucleotides(data_root):
    """E. coli and N. meningitidis (51% and 52% G+C) as 10-kb contigs: one group each by their
    tetranucleotide profiles; either genome's contigs alone stay one group."""
    eco = _contigs(data_root, "Escherichia_coli_K12_MG1655", 80, tag="eco")
    nme = _contigs(data_root, "Neisseria_meningitidis_MC58", 80, tag="nme")
    recs = [r for pair in zip(eco, nme) for r in pair]
    assert is_mixture(recs) is None  # G+C alone does not tell them apart
    groups = mixture_groups(recs)
    assert len(groups) == 2
    purity = [max(sum(recs[i][0].startswith(t) for i in g) for t in ("eco", "nme")) / len(g)
              for g in groups]
    assert min(purity) >= 0.9, purity
    more = _contigs(data_root, "Escherichia_coli_K12_MG1655", 160, size=2_000, tag="eco")
    assert mixture_groups(more) == [list(range(160))]
    # under MIXTURE_TNF_MIN_RECORDS records the profiles are not read
    assert mixture_groups(recs[:60]) == [list(range(60))]


def test_mixture_groups_split_again_and_place_short_records(mixture, data_root):
    low, high = mixture
    mid = _contigs(data_root, "Escherichia_coli_K12_MG1655", 20, tag="eco")
    recs = high[:10] + mid[:10] + low[:10]
    assert mixture_groups(recs) == [list(range(10)), list(range(10, 20)), list(range(20, 30))]
    # under MIXTURE_MIN_RECORD bases: the group of nearest G+C, the largest without bases
    short = [("at", b"AT" * 200), ("gc", b"GGCCGC" * 60), ("n", b"N" * 50)]
    # (the all-N record joins the high group: 120 kb against 100 kb)
    assert mixture_groups(low[:10] + short + high[:12]) == [list(range(11)), list(range(11, 25))]


def test_annotate_notes_a_mixture(mixture, tmp_path, cli):
    low, high = mixture
    fa = tmp_path / "mix.fa"
    fa.write_bytes(b"".join(b">%s\n%s\n" % (c.encode(), s) for c, s in low + high))
    code, _, err = cli(["annotate", fa, "--model", "none", "--rna", "none", "--formats", "gff3",
                        "--out", tmp_path / "auto"])
    assert code == 0, err
    assert "falls in 2 groups, as in a metagenome (G+C 39%, 67%" in err and "as -p groups" in err
    rows = [ln.split("\t") for ln in (tmp_path / "auto.gff3").read_text().splitlines()
            if "\tCDS\t" in ln]
    group = {(r[0][:3], r[8].split("composition_group=")[1].split(";")[0]) for r in rows}
    assert rows and group == {("spy", "1"), ("par", "2")}
    code, _, err = cli(["annotate", fa, "--model", "none", "--rna", "none", "--formats", "gff3",
                        "-p", "single", "--out", tmp_path / "single"])
    assert code == 0, err
    assert "groups" not in err and "composition_group=" not in (tmp_path / "single.gff3").read_text()
