"""Token windows of a genome as a PyTorch dataset, for your own training and inference loops.

:class:`FastaWindows` (sequence, and per-base labels from an annotation) and
:class:`PileupWindows` (a BAM/CRAM's pileup tokens and channels) are map-style PyTorch
datasets (:class:`torch.utils.data.Dataset`): item ``i`` is one window of ``context`` tokens, read from the file when it is asked for (an indexed FASTA is never
loaded whole), so it works with ``DataLoader(shuffle=True, num_workers=N)`` and with
``DistributedSampler`` under ``torchrun``. The windows are those of ``genoctx tokenize`` and
``genoctx embed``: ``context`` bases (or BOS + ``context - 1`` bases) starting every
``context - overlap`` bases of each region, the last one padded; :meth:`FastaWindows.stitch`
puts per-window outputs back onto the regions without seams
(:class:`~genoctx.tokenize.windows.Stitcher`).

Legend: T tokens per item (``context``), L bases of a region.

Example::

    from torch.utils.data import DataLoader
    from genoctx.tokenize.dataset import FastaWindows

    ds = FastaWindows("genome.fa.gz", context=8192, overlap=256, annotation="genome.gff3",
                      strand="random", training=True)
    for batch in DataLoader(ds, batch_size=8, shuffle=True, num_workers=2):
        batch["input_ids"]       # [8, 8192] int64 token ids (genoctx.tokenize.nucleotide)
        batch["labels"]          # [8, 8192] int64 per-base classes (genoctx.heads.classes)

Items are dicts: ``input_ids`` (int64 [T], ``<pad>`` after the last base), ``attention_mask``
(bool [T], True on BOS and bases), ``contig``, ``start``, ``end`` (the window's bases,
0-based half-open on the contig), ``strand`` (+1, or −1 for a reverse-complemented window:
its first token is the complement of base ``end − 1``), ``index`` (the item's own index) and,
with ``annotation``, ``labels`` (int64 [T]; ``IGNORE_INDEX`` (−100) on BOS, padding and bases
the annotation does not settle). ``default_collate`` batches them.

With ``training=True`` the files pass the training loader's guard (:mod:`genoctx.io.dataroot`):
a file the data root's manifest does not list as ``train`` or ``pretrain-only``, or whose
records are those of a held-out genome, is refused before any item is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from genoctx.errors import InputError
from genoctx.io.regions import Region, parse_region, read_bed
from genoctx.tokenize import nucleotide as nt
from genoctx.tokenize.windows import Stitcher, WindowError, count_windows

STRANDS = ("+", "-", "both", "random")


class _InMemory:
    """GenBank/EMBL records held in memory, with :class:`FastaFile`'s reading interface."""

    mode = "memory"

    def __init__(self, records: list[tuple[str, bytes]]):
        self._seqs = dict(records)
        self.lengths = {name: len(seq) for name, seq in records}
        self.contigs = list(self.lengths)

    def fetch_array(self, contig: str, start: int, end: int, *,
                    table: bytes | None = None) -> np.ndarray:
        data = self._seqs[contig][start:end]
        return np.frombuffer(data if table is None else data.translate(table), np.uint8)


def _open_source(path: Path):
    """A FASTA opened for random access, or a GenBank/EMBL file read into memory."""
    from genoctx.io.annotation import read_sequences
    from genoctx.io.fasta import FastaFile, sniff_format

    fmt, _ = sniff_format(path)
    if fmt in ("genbank", "embl"):
        records = read_sequences(path)
        if not records:
            raise InputError(f"{path} holds no sequence records")
        return _InMemory(records)
    return FastaFile(path)  # refuses anything else with one line


class _Windows(torch.utils.data.Dataset):
    """Window planning, strands and stitching shared by :class:`FastaWindows` and
    :class:`PileupWindows`; a subclass reads the tokens of a window."""

    def _setup(self, lengths: Mapping[str, int], regions, bed, context: int, overlap: int,
               bos: bool, strand: str, seed: int, max_shift: int = 0) -> None:
        if strand not in STRANDS:
            raise InputError(f"strand must be one of {', '.join(STRANDS)} (got {strand!r})")
        if regions is not None and bed is not None:
            raise InputError("give regions or bed, not both")
        self.context, self.overlap, self.bos = int(context), int(overlap), bool(bos)
        self.bases = self.context - self.bos
        if self.bases < 1:
            raise InputError(f"context {context} leaves no room for bases"
                             + (" after BOS" if bos else ""))
        try:
            count_windows(0, self.bases, self.overlap)
        except WindowError as e:
            raise InputError(f"{e} (a window holds {self.bases} bases)") from None
        self.strand, self.seed, self.epoch = strand, int(seed), 0
        self.max_shift = int(max_shift)
        if self.max_shift < 0:
            raise InputError(f"max_shift must be 0 or more (got {max_shift})")
        self._lengths = dict(lengths)
        if bed is not None:
            self.regions = read_bed(bed, lengths)
        elif regions is None:
            self.regions = [Region(c, 0, n) for c, n in lengths.items()]
        else:
            items = [regions] if isinstance(regions, (str, Region)) else list(regions)
            self.regions = [(r if isinstance(r, Region) else parse_region(r, lengths)).check(lengths)
                            for r in items]
        if not self.regions:
            raise InputError("no regions to cut into windows")
        counts = [count_windows(len(r), self.bases, self.overlap) for r in self.regions]
        self._first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    # -- items

    @property
    def _per(self) -> int:
        """Items per window: 2 (its two strands) with ``strand="both"``, else 1."""
        return 2 if self.strand == "both" else 1

    def __len__(self) -> int:
        return int(self._first[-1]) * self._per

    def set_epoch(self, epoch: int) -> None:
        """Draw other strands for ``strand="random"`` and other shifts for ``max_shift`` (call
        it each epoch, as with ``DistributedSampler.set_epoch``)."""
        self.epoch = int(epoch)

    def window(self, index: int) -> tuple[int, int, int, int]:
        """``(region index, window index within it, start, end)`` of item ``index``."""
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"item {index} of {n}")
        w = (index % n) // self._per
        r = int(np.searchsorted(self._first, w, side="right")) - 1
        k = w - int(self._first[r])
        region = self.regions[r]
        start = region.start + k * (self.bases - self.overlap)
        return r, k, start, min(start + self.bases, region.end)

    def item_strand(self, index: int) -> int:
        """+1 or −1: the strand item ``index`` reads."""
        if self.strand in ("+", "-"):
            return 1 if self.strand == "+" else -1
        if self.strand == "both":
            return 1 if index % 2 == 0 else -1
        coin = np.random.default_rng([self.seed, self.epoch, index % len(self)]).random()
        return 1 if coin < 0.5 else -1

    def placed(self, index: int) -> tuple[str, int, int]:
        """``(contig, start, end)`` item ``index`` reads this epoch: its window, moved by up
        to ``max_shift`` bases either way (seeded per window and epoch; both strands of a
        window move together), and kept on its contig."""
        r, _, start, end = self.window(index)
        contig = self.regions[r].contig
        if self.max_shift:
            w = (index % len(self)) // self._per
            move = int(np.random.default_rng([self.seed, self.epoch, w, 1]).integers(
                -self.max_shift, self.max_shift + 1))
            width = end - start
            start = min(max(0, start + move), max(0, self._lengths[contig] - width))
            end = start + width
        return contig, start, end

    def _item(self, index: int, read, complement: np.ndarray) -> dict:
        """The item's common fields; ``read(contig, start, end)`` gives the window's token ids
        on the + strand, ``complement`` maps an id to that of the other strand."""
        contig, start, end = self.placed(index)
        strand = self.item_strand(index)
        ids = read(contig, start, end)
        if strand < 0:
            ids = complement[ids[::-1]]
        T, b = self.context, int(self.bos)
        x = np.full(T, nt.PAD, np.int64)
        x[:b] = nt.BOS
        x[b:b + len(ids)] = ids
        return {"input_ids": torch.from_numpy(x),
                "attention_mask": torch.from_numpy(np.arange(T) < b + len(ids)),
                "contig": contig, "start": start, "end": end, "strand": strand,
                "index": index % len(self)}

    # -- outputs back onto the regions

    def stitch(self, outputs: Sequence | Mapping[int, object], strand: int = 1,
               mode: str = "center") -> dict[str, object]:
        """Per-item outputs ``[T, ...]`` (numpy or torch) back onto the regions.

        Args:
            outputs: the outputs of the items of one strand, by item index: a sequence as long
                as the dataset (items of the other strand may be None), or a mapping
                ``index → output``. Each output is position by position along its item
                (BOS first when ``bos``), as a model gives them; a reverse-strand output is
                flipped back onto the forward strand (channels are kept: swap strand-specific
                ones, such as ``classes.RC_PERMUTATION``, yourself).
            strand: which items to stitch, +1 or −1 (a ``strand="random"`` dataset, whose
                windows change strand by epoch, is refused).
            mode: ``"center"`` or ``"mean"`` (:class:`Stitcher`).

        Returns:
            ``{str(region): [L, ...]}`` in region order, forward-strand coordinates.
        """
        if strand not in (1, -1):
            raise InputError(f"strand must be 1 or -1 (got {strand})")
        if self.strand == "random" or self.max_shift:
            raise InputError("stitch needs each window in a fixed place: strand='random' and "
                             "max_shift draw them anew each epoch; use strand '+', '-' or "
                             "'both' and max_shift=0")
        if self.strand in ("+", "-") and strand != self.item_strand(0):
            raise InputError(f"this dataset's items are all on the {self.strand} strand")
        get = outputs.get if isinstance(outputs, Mapping) else (
            lambda i: outputs[i] if i < len(outputs) else None)
        per = self._per
        shift = 1 if (per == 2 and strand < 0) else 0
        result = {}
        b = int(self.bos)
        for r, region in enumerate(self.regions):
            st = Stitcher(len(region), self.bases, self.overlap, mode=mode)
            for k in range(len(st)):
                index = (int(self._first[r]) + k) * per + shift
                out = get(index)
                if out is None:
                    raise InputError(f"no output for item {index} (region {region}, window {k})")
                s, e = st.windows[k]
                out = out[b:b + e - s]
                if strand < 0:
                    out = out.flip(0) if isinstance(out, torch.Tensor) else out[::-1]
                st.add(k, out)
            result[str(region)] = st.result()
        return result


class FastaWindows(_Windows):
    """Windows of ``context`` tokens over every record (or ``regions``) of a genome.

    Args:
        path: FASTA (plain, gzip, bgzip, xz, bzip2; plain and bgzip files are read by their
            ``.fai``, built beside them when missing) or a GenBank/EMBL flat file (read into
            memory).
        regions: regions to cut (``"chr1:1-100,000"``, :class:`Region`, or a list of them); by
            default every record whole, in file order.
        bed: a BED file of regions instead (its names and scores are ignored).
        context: tokens per item, BOS included when ``bos`` is set.
        overlap: bases shared by neighbouring windows of a region (less than a window's bases).
        bos: start every item with ``<bos>``, for a model of your own that expects one
            (genoctx's ``GenoCtxModel.embed`` and ``log_likelihood`` add their own: leave it
            off for them).
        strand: ``"+"`` the sequence as given; ``"-"`` its reverse complement; ``"both"`` each
            window twice, forward then reverse complement (items ``2k`` and ``2k + 1``);
            ``"random"`` either, a seeded coin per item and epoch (:meth:`set_epoch`), for
            reverse-complement augmentation.
        annotation: GFF3, GTF or GenBank/EMBL features of the same sequences: items carry
            per-base ``labels`` (the annotation head's classes, strand-swapped on the reverse
            strand as the annotation recipe does).
        max_shift: move each window by up to this many bases either way, drawn anew each
            epoch (:meth:`set_epoch`) and seeded: shift augmentation (gReLU's
            ``max_seq_shift``); windows stay on their contig, not inside their region.
        softmask: items also carry ``softmask`` (bool [T]): True on lowercase (soft-masked,
            repeat) bases, as ``genoctx tokenize`` writes it.
        training: refuse files that may not be trained on (the data root's manifest and the
            held-out genomes; see the module docstring).
        data_root: the data root for ``training`` (default: ``$GENOCTX_DATA_ROOT`` or
            ``../shared/data``).
        seed: seed of ``strand="random"`` and ``max_shift``.

    Raises:
        InputError: unreadable files, unknown contigs, regions off a contig's end, impossible
            window settings, an annotation that names none of the sequences, or (``training``)
            a held-out file.
    """

    def __init__(self, path: str | Path, *, regions: str | Region | Iterable[str | Region] | None = None,
                 bed: str | Path | None = None, context: int = 8192, overlap: int = 0,
                 bos: bool = False, strand: str = "+", annotation: str | Path | None = None,
                 softmask: bool = False, max_shift: int = 0, training: bool = False,
                 data_root: str | Path | None = None, seed: int = 0):
        self.path = Path(path)
        self.softmask = bool(softmask)
        self.annotation = Path(annotation) if annotation is not None else None
        if training:
            self._guard(data_root)
        self._source = _open_source(self.path)
        self._pid = os.getpid()
        self._setup(self._source.lengths, regions, bed, context, overlap, bos, strand, seed,
                    max_shift)
        self._labels = self._read_labels() if self.annotation is not None else None

    # -- setup

    def _guard(self, data_root) -> None:
        from genoctx.io.annotation import read_sequences
        from genoctx.io.dataroot import require_trainable, require_unseen

        for p in (self.path, self.annotation):
            if p is not None:
                require_trainable(p, data_root)
        require_unseen(read_sequences(self.path), self.path, data_root)

    def _read_labels(self) -> dict[str, np.ndarray]:
        from genoctx.heads.annotation import labels_from_tracks
        from genoctx.io.annotation import label_tracks, read_features

        contigs = {r.contig for r in self.regions}
        features = read_features(self.annotation)
        if not contigs & set(features):
            raise InputError(f"{self.annotation} has no features on "
                             f"{', '.join(sorted(contigs)[:5])}: is it the annotation of "
                             f"{self.path.name}?")
        lengths = {c: self._source.lengths[c] for c in contigs}
        return {c: labels_from_tracks(t).astype(np.int8)
                for c, t in label_tracks(features, lengths).items()}

    def _reader(self):
        """The open file; a worker process that inherited a bgzip (htslib) handle opens its
        own, since htslib keeps a file position (plain FASTA is read with ``pread``)."""
        if self._source is None or (self._pid != os.getpid() and self._source.mode == "bgzf"):
            self._source = _open_source(self.path)
            self._pid = os.getpid()
        return self._source

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if state["_source"].mode != "memory":  # a file descriptor does not travel
            state["_source"] = None
        return state

    # -- items

    def __getitem__(self, index: int) -> dict:
        if not self.softmask:
            item = self._item(index, lambda contig, start, end: self._reader().fetch_array(
                contig, start, end, table=nt.ENCODE_TABLE), nt.COMPLEMENT)
        else:
            got = {}

            def read(contig: str, start: int, end: int) -> np.ndarray:
                ids, got["mask"] = nt.encode_with_mask(
                    self._reader().fetch_array(contig, start, end))
                return ids

            item = self._item(index, read, nt.COMPLEMENT)
            mask = got["mask"][::-1] if item["strand"] < 0 else got["mask"]
            out = np.zeros(self.context, bool)
            out[int(self.bos):int(self.bos) + len(mask)] = mask
            item["softmask"] = torch.from_numpy(out)
        if self._labels is not None:
            from genoctx.heads.classes import IGNORE_INDEX, reverse_labels

            contig, start, end, strand = (item[k] for k in ("contig", "start", "end", "strand"))
            T, b = self.context, int(self.bos)
            y = self._labels[contig][start:end].astype(np.int64)
            if strand < 0:
                y = reverse_labels(y)
            lab = np.full(T, IGNORE_INDEX, np.int64)
            lab[b:b + len(y)] = y
            item["labels"] = torch.from_numpy(lab)
        return item


def _pileup_complement() -> np.ndarray:
    """Pileup token id → the id of the same position read on the other strand: the reference
    base complemented (A↔T, C↔G, N kept), the allele state kept."""
    from genoctx.tokenize import pileup as pu

    out = np.zeros(pu.PILEUP_VOCAB_SIZE, np.int64)
    out[:nt.VOCAB_SIZE] = nt.COMPLEMENT
    for base in range(len(pu.BASES)):
        for state in range(len(pu.STATES)):
            out[pu.token_id(base, state)] = pu.token_id(3 - base if base < 4 else 4, state)
    return out


class PileupWindows(_Windows):
    """Windows of pileup tokens and channels (:mod:`genoctx.tokenize.pileup`) over the regions
    of a sorted BAM or CRAM, as ``genoctx tokenize --kind pileup`` makes them.

    Args:
        path: a coordinate-sorted BAM or CRAM (its index is built when missing, as
            ``genoctx tokenize`` does).
        reference: the FASTA the reads were aligned to.
        regions, bed, context, overlap, bos, strand, max_shift, seed: as for
            :class:`FastaWindows`; by default every reference record the alignment file's
            header also names.
        **filters: ``min_mapq``, ``min_baseq``, ``exclude_flags``, ``include_flags`` of
            :func:`genoctx.io.bam.pileup_channels`.

    Items are those of :class:`FastaWindows` (``input_ids`` are pileup token ids) plus
    ``channels`` (float32 ``[T, 9]``, :data:`genoctx.tokenize.pileup.CHANNEL_NAMES`; zero on
    BOS and padding). On the reverse strand the tokens' reference bases are complemented, the
    base fractions swap (A↔T, C↔G) and ``strand_plus_frac`` becomes its complement where
    reads cover the base.
    """

    def __init__(self, path: str | Path, reference: str | Path, *,
                 regions: str | Region | Iterable[str | Region] | None = None,
                 bed: str | Path | None = None, context: int = 8192, overlap: int = 0,
                 bos: bool = False, strand: str = "+", max_shift: int = 0, seed: int = 0,
                 **filters):
        from genoctx.io.bam import alignment_contigs, open_alignment, open_reference

        self.path, self.reference = Path(path), Path(reference)
        unknown = set(filters) - {"min_mapq", "min_baseq", "exclude_flags", "include_flags"}
        if unknown:
            raise InputError(f"unknown pileup filter(s) {', '.join(sorted(unknown))}: use "
                             "min_mapq, min_baseq, exclude_flags or include_flags")
        self.filters = filters
        open_alignment(self.path, self.reference).close()  # refuses SAM, unsorted, no reference
        with open_reference(self.reference) as fa:
            lengths = dict(fa.lengths)
        in_bam = set(alignment_contigs(self.path))
        shared = {c: n for c, n in lengths.items() if c in in_bam}
        if not shared:
            raise InputError(f"{self.path.name} and {self.reference.name} name no contig in "
                             "common: is this the reference the reads were aligned to?")
        self._setup(lengths if regions is not None or bed is not None else shared,
                    regions, bed, context, overlap, bos, strand, seed, max_shift)
        missing = sorted({r.contig for r in self.regions} - in_bam)
        if missing:
            raise InputError(f"{self.path.name} has no reads on {', '.join(missing[:5])} "
                             "(its header does not name it)")
        self._complement = _pileup_complement()

    def __getitem__(self, index: int) -> dict:
        from genoctx.tokenize.pileup import CHANNEL_NAMES, tokenize_pileup

        got = {}

        def read(contig: str, start: int, end: int) -> np.ndarray:
            tokens, got["channels"], _ = tokenize_pileup(self.path, self.reference,
                                                         Region(contig, start, end), **self.filters)
            return tokens

        item = self._item(index, read, self._complement)
        ch = got["channels"]
        if item["strand"] < 0:
            ch = ch[::-1][:, [0, 4, 3, 2, 1, 5, 6, 7, 8]]  # frac A C G T -> T G C A
            ch[:, 8] = np.where(ch[:, 0] > 0, 1.0 - ch[:, 8], 0.0)
        out = np.zeros((self.context, len(CHANNEL_NAMES)), np.float32)
        b = int(self.bos)
        out[b:b + len(ch)] = ch
        item["channels"] = torch.from_numpy(out)
        return item
