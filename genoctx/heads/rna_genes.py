"""Structural RNA genes from the sequence: tRNA and tmRNA (ARAGORN) and rRNA (barrnap's HMMs).

The annotation head has tRNA/rRNA/ncRNA classes, but the shipped checkpoint does not learn them
(it calls no RNA on E. coli, which has 86 tRNAs and 22 rRNAs; docs/results.md). Until a trained
head does, ``genoctx annotate`` takes RNA genes from the two tools bacterial annotation pipelines
(Prokka, Bakta) use, through their Python bindings (dependencies of genoctx):

* tRNA and tmRNA: ARAGORN (Laslett & Canback 2004) via ``pyaragorn``, translation table 11;
* 5S, 16S and 23S rRNA: barrnap's nhmmer profiles via ``pybarrnap`` (kingdom ``bac``; an
  archaeon's, named by its complete 16S/23S genes, again with kingdom ``arc``: ``find_rrna``'s
  ``kingdom="auto"``), searched only in the stretches that can hold such a gene
  (:func:`rrna_regions`: seeds shared with the profiles' consensus);
  ``find_rrna(..., prefilter=False)`` searches every base.

Both are GPL-3.0 (as is ``pyrodigal``); genoctx itself stays MIT and imports them only when
they are used, and ``--rna auto`` falls back to the head's RNA classes where they are missing.
Each call carries ``attrs`` ``product`` and ``inference`` (the tool), which the GFF3 writer keeps.

```python
from genoctx.heads.rna_genes import find_rna_genes
rnas = find_rna_genes([("chr", seq_bytes)])   # [RNACall(kind="tRNA" | "tmRNA" | "rRNA", ...)]
```
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import math
import threading
from collections.abc import Collection

from genoctx.errors import InputError
from genoctx.heads.decoder import GeneCall, RNACall
from genoctx.io.fasta import reverse_complement

RRNA_PRODUCTS = {"5S_rRNA": "5S ribosomal RNA", "16S_rRNA": "16S ribosomal RNA",
                 "23S_rRNA": "23S ribosomal RNA"}
# A CDS call that overlaps an RNA gene by at least this many bases is dropped (Prokka does the
# same); chosen on the train genomes: `python benchmarks/decoder_variants.py rna_overlap=30`
# (docs/decoder.md).
CDS_RNA_OVERLAP = 30


def available() -> dict[str, bool]:
    """Which finders are installed: ``{"trna": pyaragorn, "rrna": pybarrnap}``."""
    return {"trna": importlib.util.find_spec("pyaragorn") is not None,
            "rrna": importlib.util.find_spec("pybarrnap") is not None}


def _require(module: str, what: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{what} needs the package {module}, which is missing: "
                         f"pip install {module}") from None



# What the finders see: A/C/G/T in either case (U as T) kept, every other byte read as N.
# ARAGORN loops forever on letters such as E, X or '-' (pyaragorn 0.3), which FASTA may hold.
_FINDER_BYTES = bytearray(b"N" * 256)
for _src, _dst in zip(b"ACGTUacgtu", b"ACGTTacgtt"):
    _FINDER_BYTES[_src] = _dst
_FINDER_BYTES = bytes(_FINDER_BYTES)


def finder_sequence(seq: bytes | str) -> bytes:
    """``seq`` as the RNA finders are given it: A/C/G/T (case kept, U as T), anything else N."""
    if isinstance(seq, str):
        seq = seq.encode("ascii", errors="replace")
    return seq.translate(_FINDER_BYTES)


def cut_ends(left: bool, right: bool) -> dict:
    """Attributes of an RNA gene cut by its sequence's left and/or right end (forward strand):
    ``partial`` and ``cut`` = (left, right), from which the writers mark the cut ends
    (GFF3 ``start_range``/``end_range``, GenBank ``<``/``>``) at the gene's final coordinates."""
    return {"partial": "true", "cut": (bool(left), bool(right))} if left or right else {}


def find_trna(records: list[tuple[str, bytes]], *, translation_table: int = 11,
              circular: Collection[str] = ()) -> list[RNACall]:
    """tRNA and tmRNA genes of every record (ARAGORN), 0-based half-open, sorted. Records named
    in ``circular`` are searched as circles (ARAGORN's circular topology): a gene across the
    origin ends past the record's length."""
    pyaragorn = _require("pyaragorn", "tRNA finding")
    finders = {linear: pyaragorn.RNAFinder(translation_table=translation_table, trna=True,
                                           tmrna=True, linear=linear) for linear in (True, False)}
    version = getattr(pyaragorn, "ARAGORN_VERSION", "")
    out = []
    for contig, seq in records:
        if not seq:
            continue
        ring = contig in circular
        for g in finders[not ring].find_rna(finder_sequence(seq)):
            if ring and g.begin > g.end:  # across the origin: ARAGORN gives begin > end
                lo, hi = g.begin - 1, g.end + len(seq)
            else:
                lo, hi = min(g.begin, g.end) - 1, max(g.begin, g.end)
            if g.type == "tmRNA":
                kind, product = "tmRNA", "transfer-messenger RNA"
            else:
                kind = "tRNA"
                aa = g.amino_acid or "Xxx"
                product = f"tRNA-{aa}" + (f"({g.anticodon})" if g.anticodon else "")
            attrs = {"product": product, "inference": f"ARAGORN:{version}".rstrip(":")}
            if not ring and (lo < 0 or hi > len(seq)):  # a gene cut by the end, reported whole
                attrs.update(cut_ends(lo < 0, hi > len(seq)))
                lo, hi = max(lo, 0), min(hi, len(seq))
            out.append(RNACall(contig, lo, hi, 1 if g.strand > 0 else -1, kind, math.nan, attrs))
    return sorted(out, key=lambda r: (r.contig, r.start, r.end, r.strand))


def find_rrna(records: list[tuple[str, bytes]], *, kingdom: str = "bac",
              prefilter: bool = True, circular: Collection[str] = (),
              threads: int | None = None, domains: bool = True) -> list[RNACall]:
    """5S/16S/23S rRNA genes of every record (barrnap profiles), 0-based half-open, sorted.

    ``kingdom``: barrnap's profiles, ``bac`` or ``arc``, or ``auto``: the bacterial ones, then,
    when the complete 16S/23S genes found name the genome an archaeon's (:func:`rrna_domain`),
    the same stretches again with the archaeal ones, whose genes are returned (as barrnap
    ``--kingdom arc``, which Prokka and Bakta run for archaea: on four archaea their ends lie
    closer to the annotated ones, ``python benchmarks/rrna_kingdom.py``).

    Partial hits (barrnap's ``Note=aligned only ...``) are kept and marked ``partial=true``.
    With ``prefilter`` barrnap searches only :func:`rrna_regions`, the stretches that can hold
    an rRNA gene, instead of every base, with its E-value cutoff scaled to the whole input; see
    that function.

    Records named in ``circular`` are circles: barrnap searches lines, so the last and first
    ``RRNA_JOIN`` bases of each are searched again, joined. A gene found across the join ends
    past the record's length (as ARAGORN's circular search reports tRNAs), and replaces the
    pieces of it that the line's search found at the record's ends.

    ``threads``: nhmmer searches run side by side, one per profile and stretch (default: every
    core this process may use), at most ``RRNA_MAX_THREADS`` and as many as the memory available
    holds (:func:`rrna_thread_cap`); the genes do not depend
    on it (:func:`_barrnap_hits`).

    ``domains``: name the domain of one complete 16S (else 23S) gene per sequence of the
    bacterial profiles' search (:func:`_mark_domains`, read by :func:`rrna_domain`); False
    leaves it out (~0.3-0.6 s of CPU) where nothing reads it (``auto`` reads it). The genes are
    the same either way.
    """
    pybarrnap = _require("pybarrnap", "rRNA finding")
    if kingdom not in RRNA_KINGDOMS:
        raise InputError(f"kingdom must be one of {', '.join(RRNA_KINGDOMS)}, got {kingdom!r}")

    kept = [(c, finder_sequence(s)) for c, s in records if s]
    if not kept:
        return []
    joins = {}  # index in kept of a joined origin stretch: (its record's index, bases before the join)
    for i, (c, s) in enumerate(list(kept)):
        if c in circular and len(s) > 1:
            left = min(RRNA_JOIN, len(s) // 2)
            right = min(RRNA_JOIN, len(s) - left)
            joins[len(kept)] = (i, left)
            kept.append((c, s[len(s) - left:] + s[:right]))
    if prefilter:
        spans = rrna_regions(kept)
    else:
        spans = [(i, 0, len(s)) for i, (_, s) in enumerate(kept)]
    if not spans:
        return []
    # nhmmer's E-values grow with the bases searched: scaling the cutoff by the share searched
    # keeps barrnap's 1e-6 over the whole input
    share = sum(hi - lo for _, lo, hi in spans) / sum(len(s) for _, s in kept)
    version = getattr(pybarrnap, "__version__", "")

    def search(profiles: str, whole: list | None) -> list[RNACall]:
        """The genes of one kingdom's profiles; ``whole`` collects (attrs, profile, bases on
        its strand, stretch) of the complete 16S/23S genes, whose domain is named."""
        out = []
        for rec, (i, lo, _) in _barrnap_hits(kept, spans, profiles, RRNA_EVALUE * share, threads):
            name = rec.query_name
            partial = rec.is_partial(RRNA_LENCUTOFF)  # barrnap's Note=aligned only N percent
            product = RRNA_PRODUCTS.get(name, rec.product + (" (partial)" if partial else ""))
            extra = {"product": product, "inference": f"barrnap:{version}".rstrip(":")}
            start, end = lo + rec.start - 1, lo + rec.end
            if whole is not None and not partial and name in DOMAIN_PROFILES:
                bases = kept[i][1][max(0, start - 50):end + 50]
                whole.append((extra, name, bases if rec.strand == "+" else reverse_complement(bases),
                              i))
            if partial:
                extra["partial"] = "true"
            strand = 1 if rec.strand == "+" else -1
            if i in joins:  # the joined origin stretch: keep genes across the join only
                owner, left = joins[i]
                if not start < left < end:
                    continue
                n = len(kept[owner][1])
                start, end = start + n - left, end + n - left
                i = owner
            elif partial:  # a partial gene that reaches (nearly) a contig end is cut by it there
                extra.update(cut_ends(start <= RRNA_EDGE_SLACK,
                                      end >= len(kept[i][1]) - RRNA_EDGE_SLACK))
            out.append(RNACall(kept[i][0], start, end, strand, "rRNA", math.nan, extra))
        if joins:
            out = _drop_origin_pieces(out, {kept[i][0]: len(kept[i][1])
                                            for i, _ in joins.values()})
        return sorted(out, key=lambda r: (r.contig, r.start, r.end, r.strand))

    if kingdom == "arc":
        return search("arc", None)
    whole: list | None = [] if domains or kingdom == "auto" else None
    out = search("bac", whole)
    if whole:
        _mark_domains(whole)
    if kingdom == "auto" and rrna_domain(out) == "archaea":
        return _with_domains(search("arc", None), out)
    return out


RRNA_KINGDOMS = ("bac", "arc", "auto")


def _with_domains(genes: list[RNACall], named: list[RNACall]) -> list[RNACall]:
    """``genes`` (the archaeal profiles') with the domain of each ``named`` gene (the bacterial
    profiles', :func:`_mark_domains`) on the gene of the same product overlapping it on its
    strand; ``named`` itself where that names no domain any more (no such gene)."""
    for n in named:
        if "domain" not in n.attrs:
            continue
        for g in genes:
            if (g.contig, g.strand, g.attrs["product"]) == (n.contig, n.strand,
                                                             n.attrs["product"]) \
                    and min(g.end, n.end) > max(g.start, n.start):
                g.attrs.update(domain=n.attrs["domain"], domain_bits=n.attrs["domain_bits"])
                break
    return genes if rrna_domain(genes) == rrna_domain(named) else named


# The domain of a genome from its rRNA genes. barrnap has profiles of each domain's 16S and 23S
# rRNA; a complete gene scores about twice the bits with its own domain's profile as with the
# other's (archaea 1.7-1.9x, bacteria 1.8-2.0x on the 4 archaea and 21 bacteria of
# `python benchmarks/rrna_domain.py`), so the better profile names it.
DOMAIN_PROFILES = ("16S_rRNA", "23S_rRNA")
DOMAIN_GENES = 3  # sequences whose rRNA is scored (one gene each), at most


def _mark_domains(whole: list[tuple[dict, str, bytes, int]]) -> None:
    """Name the domain of one complete rRNA gene per sequence (its first 16S, else its first
    23S; at most :data:`DOMAIN_GENES` sequences): ``attrs["domain"]`` is ``archaea`` when
    barrnap's archaeal profile of the gene's kind scores its bases (on its strand) higher
    than the bacterial one, else ``bacteria``; ``attrs["domain_bits"]`` holds the two scores.
    One gene of each is enough: the two profiles differ by ~2x, and a search costs ~0.25 s
    per 16S profile (twice that per 23S)."""
    chosen: dict[int, tuple] = {}
    for item in whole:
        if item[3] not in chosen or (chosen[item[3]][1] != DOMAIN_PROFILES[0]
                                     and item[1] == DOMAIN_PROFILES[0]):
            chosen[item[3]] = item
    if not chosen:
        return
    from pyhmmer.easel import Alphabet, DigitalSequenceBlock, TextSequence
    from pyhmmer.plan7 import Background, Pipeline

    alphabet = Alphabet.rna()
    profiles = {k: _profiles(k) for k in ("arc", "bac")}
    for attrs, name, bases, _ in list(chosen.values())[:DOMAIN_GENES]:
        block = DigitalSequenceBlock(alphabet, [TextSequence(
            name=b"gene", sequence=bases.decode("ascii")).digitize(alphabet)])
        bits = {}
        for k, hmms in profiles.items():
            hits = Pipeline(alphabet, background=Background(alphabet)).search_hmm(hmms[name], block)
            bits[k] = max((h.score for h in hits), default=0.0)
        attrs["domain"] = "archaea" if bits["arc"] > bits["bac"] else "bacteria"
        attrs["domain_bits"] = (round(bits["arc"], 1), round(bits["bac"], 1))


def rrna_domain(rnas: list[RNACall]) -> str | None:
    """``"archaea"`` or ``"bacteria"`` when every complete 16S/23S gene of ``rnas`` that
    :func:`find_rrna` scored says so (:func:`_mark_domains`); None without one, or when they
    disagree (a mixture)."""
    said = {r.attrs["domain"] for r in rnas if "domain" in r.attrs}
    return said.pop() if len(said) == 1 else None


def _barrnap_hits(kept: list[tuple[str, bytes]], spans: list[tuple[int, int, int]],
                  kingdom: str, evalue: float, threads: int | None) -> list[tuple]:
    """What ``pybarrnap.Barrnap(...).run()`` finds over ``spans`` of ``kept`` (barrnap's
    profiles, E-value cutoff, window and length-reject rule), as ``(ModelRecord, span)`` pairs,
    profile by profile, then by E-value, score and stretch.

    Barrnap hands all stretches to one nhmmer call, which runs one search per profile, so the
    23S profile's search over every stretch bounds the time however many cores there are. Here
    each (profile, stretch) pair is a search of its own, run ``threads`` at a time. nhmmer's
    E-values are P-values times the bases searched, so each search's cutoff is ``evalue`` times
    its stretch's share of all bases, and its E-values are scaled back by the same share: the
    genes, and their E-values, are those of the single call. (Giving each search the database
    size of all stretches instead, nhmmer's ``Z``, finds the same hits but costs it more time.)
    """
    import pyhmmer
    from pybarrnap.config import KINGDOM2HMM_DB, MAXLEN, SEQTYPE2LEN
    from pybarrnap.record import ModelRecord
    from pyhmmer.easel import Alphabet, DigitalSequenceBlock, TextSequence
    from pyhmmer.plan7 import HMMFile

    with HMMFile(KINGDOM2HMM_DB[kingdom]) as fh:
        hmms = list(fh)
    alphabet = Alphabet.rna()
    blocks = [DigitalSequenceBlock(alphabet, [TextSequence(
        name=f"r{i}_{lo}".encode(), sequence=kept[i][1][lo:hi].decode("ascii")).digitize(alphabet)])
        for i, lo, hi in spans]
    total = sum(hi - lo for _, lo, hi in spans)

    searched, lock = [0], threading.Lock()  # bases x profile positions since a collection

    def search(job: tuple[int, int]) -> list:
        q, b = job
        share = (spans[b][2] - spans[b][1]) / total
        hits = next(iter(pyhmmer.nhmmer([hmms[q]], blocks[b], cpus=1, E=evalue * share,
                                        window_length=MAXLEN)))
        out = []
        for h in hits.reported:
            rec = ModelRecord.from_hit(h)
            rec.evalue = h.evalue / share  # over all stretches, as the single call gives it
            out.append((rec.evalue, -h.score, b, rec))
        # a search's hits sit in reference cycles that hold its alignment memory (~12 kB per
        # base searched with the 23S profile), which only the cycle collector frees, and too
        # few Python objects are made to set it off: E. coli's searches peaked at 1.9 GB. A
        # full collection after every RRNA_GC_BASES searched bases keeps them at ~0.3-0.4 GB.
        del hits
        with lock:
            searched[0] += (spans[b][2] - spans[b][1]) * hmms[q].M
            if searched[0] >= RRNA_GC_BASES * 1000:
                searched[0] = 0
                gc.collect()
        return out

    jobs = [(q, b) for q in range(len(hmms)) for b in range(len(blocks))]
    if threads is None:
        from genoctx.model.device import available_cores

        threads = available_cores()
    threads = max(1, min(threads, RRNA_MAX_THREADS, len(jobs), rrna_thread_cap()))
    if threads == 1:
        found = [search(j) for j in jobs]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(threads) as pool:  # pyhmmer searches without the GIL
            found = list(pool.map(search, jobs))
    out = []
    for q in range(len(hmms)):
        rows = sorted((r for j, rs in zip(jobs, found) if j[0] == q for r in rs),
                      key=lambda r: r[:3])
        out += [(rec, spans[b]) for _, _, b, rec in rows
                if rec.length / int(SEQTYPE2LEN[rec.query_name]) >= RRNA_REJECT]
    return out


def _drop_origin_pieces(calls: list[RNACall], lengths: dict[str, int]) -> list[RNACall]:
    """``calls`` less the pieces of a gene across a circle's origin (``lengths``: the circles)
    that the search of the line found near the record's ends: calls on the same strand that
    overlap it (barrnap's alignment of a piece may stop a few bases short of the end)."""
    from genoctx.io.writers import forward_parts

    across = [r for r in calls if r.contig in lengths and r.end > lengths[r.contig]]
    keep = []
    for r in calls:
        piece = r.end <= lengths.get(r.contig, 0) and any(
            a.contig == r.contig and a.strand == r.strand
            and any(min(e, r.end) > max(b, r.start) for b, e in forward_parts(a, lengths))
            for a in across)
        if not piece:
            keep.append(r)
    return keep


# ---- where barrnap needs to look
#
# nhmmer reads every base with each profile; on a bacterial genome that is about 1.2 s per Mb
# for each of the 16S and 23S profiles. A 16S or 23S gene, even a partial or diverged one,
# shares many exact 12-mers with its profile's consensus (an E. coli operon: 390-470), a random
# stretch of genome a handful (E. coli's largest chance cluster: 7). The 5S profile is short
# and cheap, so it scans everything (with a loose cutoff) and its hits become regions too.
RRNA_EVALUE = 1e-6        # barrnap's cutoff
RRNA_LENCUTOFF = 0.8      # barrnap: a gene aligned over less of its profile's length is partial
RRNA_REJECT = 0.25        # barrnap: hits aligned over less than this share are dropped
RRNA_GC_BASES = 20_000     # bp searched (by a 1,000-position profile) between collections
RRNA_EDGE_SLACK = 50      # bp: a partial rRNA ending this close to a sequence end is cut by it
#                           (nhmmer's alignment stops 0-30 bp short of the end that cuts E. coli's
#                           16S/23S/5S genes: python benchmarks/rna_edges.py)
RRNA_MAX_THREADS = 32     # nhmmer searches side by side at most (find_rrna's default)
RRNA_THREAD_BYTES = 300 << 20  # memory held per search at most (a 23S search of a 21-kb
#                           stretch: ~12 kB per base); no more searches run side by side than
#                           the memory available holds (E. coli, find_rrna peak RSS: 0.28 GB on
#                           1 thread, 0.90 on 4, 1.31 on 8, 1.59 on 16)
RRNA_SEED_K = 12          # bp: exact matches to the 16S/23S consensus (either strand)
RRNA_SEED_GAP = 300       # bp: seeds closer than this form one cluster
RRNA_SEED_MIN = 8         # seeds: a cluster this large is searched
RRNA_FLANK = 8000         # bp searched on each side: > a 23S gene and barrnap's 3,878-bp window
RRNA_5S_EVALUE = 10.0     # loose: any 5S-like stretch is searched again with barrnap's cutoff
RRNA_JOIN = 6000          # bp on each side of a circle's origin searched joined: > a 23S gene


def rrna_thread_cap() -> int:
    """How many rRNA searches the memory this process may still take holds side by side
    (``RRNA_THREAD_BYTES`` each), at least 1; ``RRNA_MAX_THREADS`` where it cannot be read."""
    from genoctx.model.device import available_memory

    have = available_memory()
    return RRNA_MAX_THREADS if have is None else max(1, have // RRNA_THREAD_BYTES)


def _text(name: str | bytes) -> str:
    """pyhmmer names are bytes in some versions and str in others."""
    return name.decode() if isinstance(name, bytes) else name


def _profiles(kingdom: str = "bac"):
    import pybarrnap.config
    from pyhmmer.plan7 import HMMFile

    with HMMFile(pybarrnap.config.KINGDOM2HMM_DB[kingdom]) as fh:
        return {_text(h.name): h for h in fh}


def _kmer_codes(seq: bytes, k: int = RRNA_SEED_K):
    """2-bit codes of every k-mer of ``seq`` [L - k + 1] (k ≤ 16) and whether it is all ACGT."""
    from genoctx.heads.orfs import encode
    from genoctx.io.kmers import packed_kmers

    return packed_kmers(encode(seq), k)


_SEEDS: dict = {}


def _seed_table(kingdom: str = "bac"):
    """Which 12-mers occur in the 16S and 23S consensus sequences (either strand): a boolean
    table indexed by 2-bit k-mer code (4^12 entries, 16 MB)."""
    import numpy as np

    if kingdom not in _SEEDS:
        table = np.zeros(4 ** RRNA_SEED_K, dtype=bool)
        for name, hmm in _profiles(kingdom).items():
            if name.startswith("5S"):
                continue
            cons = hmm.consensus.upper().replace("U", "T").encode()
            rc = reverse_complement(cons)
            for s in (cons, rc):
                c, ok = _kmer_codes(s)
                table[c[ok]] = True
        _SEEDS[kingdom] = table
    return _SEEDS[kingdom]


def rrna_regions(records: list[tuple[str, bytes]], *, chunk: int = 1 << 22) -> list[tuple[int, int, int]]:
    """Stretches of ``records`` (finder sequences) that barrnap searches: ``(record index, start,
    end)``, merged, sorted.

    A stretch is every cluster of at least ``RRNA_SEED_MIN`` exact 12-mer matches to the 16S or
    23S profile consensus (seeds under ``RRNA_SEED_GAP`` bp apart) and every 5S profile hit at
    E ≤ 10, widened by ``RRNA_FLANK`` bp on each side. On the bacterial genomes of the data root
    (train, validation and pretrain-only: 19 genomes) and their 10-kb contigs, barrnap finds
    the same rRNA genes in these stretches as in the whole input
    (``python benchmarks/rrna_prefilter.py``).
    """
    import numpy as np
    import pyhmmer
    from pybarrnap.config import MAXLEN
    from pyhmmer.easel import Alphabet, DigitalSequenceBlock, TextSequence

    table = _seed_table()
    spans: list[tuple[int, int, int]] = []
    for i, (_, seq) in enumerate(records):
        hits = []
        for a in range(0, len(seq), chunk):  # bounded memory on long records
            codes, ok = _kmer_codes(seq[a:a + chunk + RRNA_SEED_K - 1])
            hits.append(a + np.flatnonzero(table[codes] & ok))
        pos = np.concatenate(hits) if hits else np.zeros(0, np.int64)
        if len(pos) >= RRNA_SEED_MIN:
            cut = np.flatnonzero(np.diff(pos) >= RRNA_SEED_GAP) + 1
            for grp in np.split(pos, cut):
                if len(grp) >= RRNA_SEED_MIN:
                    spans.append((i, int(grp[0]), int(grp[-1]) + RRNA_SEED_K))
    alphabet = Alphabet.rna()
    block = DigitalSequenceBlock(alphabet, [
        TextSequence(name=str(i).encode(), sequence=seq.decode("ascii")).digitize(alphabet)
        for i, (_, seq) in enumerate(records)])
    five = [h for name, h in _profiles().items() if name.startswith("5S")]
    for hits in pyhmmer.nhmmer(five, block, cpus=1, E=RRNA_5S_EVALUE, window_length=MAXLEN):
        for hit in hits.reported:
            ali = hit.best_domain.alignment
            lo, hi = sorted((ali.target_from, ali.target_to))
            spans.append((int(_text(hit.name)), lo - 1, hi))
    merged: list[tuple[int, int, int]] = []
    for i, lo, hi in sorted((i, max(0, lo - RRNA_FLANK), min(len(records[i][1]), hi + RRNA_FLANK))
                            for i, lo, hi in spans):
        if merged and merged[-1][0] == i and lo <= merged[-1][2]:
            merged[-1] = (i, merged[-1][1], max(merged[-1][2], hi))
        else:
            merged.append((i, lo, hi))
    return merged


def find_rna_genes(records: list[tuple[str, bytes]], circular: Collection[str] = (),
                   threads: int | None = None, kingdom: str = "auto",
                   domains: bool = True) -> list[RNACall]:
    """tRNA, tmRNA and rRNA genes of ``records`` (both finders must be installed); genes may
    cross the origin of the records named in ``circular``.

    ``threads``: the rRNA searches' (:func:`find_rrna`); unless it is 1, ARAGORN runs beside
    them in a thread of its own (both finders work without the GIL). ``kingdom`` and
    ``domains``: as :func:`find_rrna`'s (``auto``: an archaeon's rRNA genes from the archaeal
    profiles, as ``genoctx annotate`` finds them).
    """
    kw = {"circular": circular, "kingdom": kingdom, "domains": domains}
    if threads == 1:
        trna = find_trna(records, circular=circular)
        rrna = find_rrna(records, threads=1, **kw)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(find_trna, records, circular=circular)
            rrna = find_rrna(records, threads=threads, **kw)
            trna = pending.result()
    return sorted(trna + rrna,
                  key=lambda r: (r.contig, r.start, r.end, r.strand, r.kind))


def drop_cds_in_rna(genes: list[GeneCall], rnas: list[RNACall],
                    min_overlap: int = CDS_RNA_OVERLAP,
                    lengths: dict[str, int] | None = None) -> list[GeneCall]:
    """The CDS calls that overlap no RNA gene (either strand) by ``min_overlap`` bases or more.
    ``lengths``: contig lengths, which place the pieces of a call across the origin of a
    circular contig (its end past the length)."""
    from bisect import bisect_left

    from genoctx.io.writers import forward_parts

    by_contig: dict[str, list[tuple[int, int]]] = {}
    for r in rnas:
        by_contig.setdefault(r.contig, []).extend(forward_parts(r, lengths))
    for spans in by_contig.values():
        spans.sort()
    starts = {c: [s for s, _ in spans] for c, spans in by_contig.items()}
    longest = {c: max(e - s for s, e in spans) for c, spans in by_contig.items()}

    def near(contig: str, a: int, b: int):
        """The spans that can overlap [a, b) by a base or more: they start before b and after
        a - the longest span (every span when an overlap of 0 or less counts)."""
        spans = by_contig.get(contig, [])
        if min_overlap < 1 or not spans:
            return spans
        return spans[bisect_left(starts[contig], a - longest[contig]):
                     bisect_left(starts[contig], b)]

    return [g for g in genes
            if not any(min(b, e) - max(a, s) >= min_overlap
                       for a, b in forward_parts(g, lengths) for s, e in near(g.contig, a, b))]
