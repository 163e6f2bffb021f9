# Sample sheet, path resolution, and the input functions shared by the rules.

import os
import re
from pathlib import Path

import pandas as pd
from snakemake.exceptions import WorkflowError

SAMPLE_COLUMNS = ("sample", "fasta", "bam", "vcf", "truth", "locus_tag", "closed", "circular")
OPTIONAL_COLUMNS = ("bam", "vcf", "truth", "locus_tag", "closed", "circular")
# Values of the closed and circular columns that mean yes (empty, no, false: no).
CLOSED_YES = ("yes", "true")
FILE_COLUMNS = ("fasta", "bam", "vcf", "truth")
# what the rules append to a sample name for its output files (results/*/SAMPLE.gff3 ...)
OUTPUT_ENDINGS = (".gff3", ".bed", ".faa", ".vcf.gz", ".vcf.gz.tbi", ".vcf.gz.csi")
# Index of the scored VCFs (score.index): tabix .tbi, or .csi for positions past 2^29.
SCORE_INDEX = config["score"].get("index", "tbi")
# Probability tracks written by `genoctx annotate` (one bedGraph each); none without a model.
TRACKS = ["CDS_plus", "CDS_minus", "RNA"] if config["model"] != "none" else []


def read_sample_sheet(path):
    """The sample sheet as strings, empty cells as '' and absent optional columns added."""
    if not Path(path).is_file():
        raise WorkflowError(f"sample sheet {path} not found (config key 'samples')")
    # no comment character: '#' is legal in file names
    sheet = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    sheet.columns = [c.strip() for c in sheet.columns]
    unknown = sorted(set(sheet.columns) - set(SAMPLE_COLUMNS))
    missing = [c for c in ("sample", "fasta") if c not in sheet.columns]
    if unknown or missing:
        raise WorkflowError(f"{path}: the columns are {', '.join(SAMPLE_COLUMNS)} (sample and "
                            f"fasta required, tab-separated); got {', '.join(sheet.columns)}")
    for column in OPTIONAL_COLUMNS:
        if column not in sheet.columns:
            sheet[column] = ""
    sheet = sheet.apply(lambda col: col.str.strip())
    if sheet.empty:  # a run would write an empty report over the last one
        raise WorkflowError(f"{path} names no sample (only its header line); add a row per "
                            "genome")
    return sheet.set_index("sample", drop=False)


def data_root():
    """config['data_root'], else $GENOCTX_DATA_ROOT, else ../shared/data (genoctx's default)."""
    if config["data_root"]:
        return Path(os.path.expandvars(config["data_root"])).expanduser()
    from genoctx.io.dataroot import default_data_root

    return default_data_root()


def _candidates(value):
    path = Path(os.path.expandvars(value)).expanduser()
    if path.is_absolute():
        return [path]
    root = data_root()
    return [path] + ([root / path] if root is not None else [])


def sample_file(sample, column):
    """The resolved path of a sample's file ('' when the cell is empty)."""
    value = samples.loc[sample, column]
    if not value:
        return ""
    found = [p for p in _candidates(value) if p.exists()]
    return str(found[0] if found else _candidates(value)[0])


def has(sample, column):
    return bool(samples.loc[sample, column])


def is_closed(sample):
    """Whether the sample sheet marks the genome complete (genoctx annotate --closed)."""
    return samples.loc[sample, "closed"].lower() in CLOSED_YES


def circular_mode(sample):
    """How the sample sheet marks the genome's circles: "all" (genoctx annotate --circular),
    "declared" (the sequences whose FASTA headers say so: --circular-declared) or "". A
    circle is annotated whole, never cut into shards."""
    value = samples.loc[sample, "circular"].lower()
    return "all" if value in CLOSED_YES else ("declared" if value == "declared" else "")


def circular_flag(sample):
    """The genoctx annotate option for the sample's circles (with a leading space), or ""."""
    return {"all": " --circular", "declared": " --circular-declared", "": ""}[
        circular_mode(sample)]


def domain_file(sample):
    """The file naming the sample's domain (rule sample_domain), or [] where the shards need
    none: the domain is set in the config, or the ORF scorer (all it changes) is off."""
    if config["annotate"].get("domain", "auto") != "auto" or not config["annotate"].get(
            "orf_scorer", True):
        return []
    return f"results/annotate/{sample}/domain.txt"


def shard_domain(wildcards):
    """genoctx annotate --domain of a shard: the config's, else the whole genome's, read by
    the shell when the job runs (the file is written by then; not when the DAG is built)."""
    named = domain_file(wildcards.sample)
    return f"$(cat {named})" if named else config["annotate"].get("domain", "auto")


# what each sample-sheet column must hold (genoctx.io.fasta.sniff_format's names); GFF covers
# GFF3 and GTF. genoctx eval reads no EMBL truth.
KINDS = {"fasta": ("fasta",), "bam": ("bam", "cram", "sam"), "vcf": ("vcf", "bcf"),
         "truth": ("genbank", "gff")}
# what to do with a file of another kind, where there is a fix
HINTS = {("truth", "embl"): "; convert it to GenBank (e.g. Bio.SeqIO.convert(path, 'embl', "
                            "out, 'genbank'))"}


def _wrong_format(sample, column, value):
    """Why the file of ``column`` is not what the column needs (read from its first bytes:
    empty, binary, another format), or None."""
    from genoctx.errors import GenoctxError
    from genoctx.io.fasta import FORMAT_NAMES, sniff_format

    path = next(p for p in _candidates(value) if p.exists())
    try:
        fmt, _ = sniff_format(path)
    except GenoctxError as exc:
        return f"{sample} {column}: {exc}"
    if fmt in KINDS[column]:
        return None
    want = ("GenBank, GFF3 or GTF" if column == "truth"
            else " or ".join(FORMAT_NAMES[k] for k in KINDS[column]))
    return (f"{sample} {column}: {path} is {FORMAT_NAMES[fmt]}, not {want}"
            + HINTS.get((column, fmt), ""))


def check_samples(sheet):
    """Unique names and locus tags, every named file present and of its column's kind (from
    its first bytes), a checkpoint that reads, and a model when variants are to be scored."""
    dupes = sorted(sheet["sample"][sheet["sample"].duplicated()].unique())
    if dupes:
        raise WorkflowError(f"sample name(s) repeated in the sample sheet: {', '.join(dupes)}")
    # results/annotate/x.faa is sample x's protein file and sample x.faa's folder
    names = set(sheet["sample"])
    clash = sorted(f"{n} and {n}{end} (the file {n}{end} of the one is the folder of the "
                   "other)" for n in names for end in OUTPUT_ENDINGS if n + end in names)
    if clash:
        raise WorkflowError(f"sample names would share output paths: {'; '.join(clash)}; "
                            "rename one of each pair")
    tags = sheet["locus_tag"][sheet["locus_tag"] != ""]
    dupes = sorted(tags[tags.duplicated()].unique())
    if dupes:
        raise WorkflowError(f"locus tag(s) repeated in the sample sheet: {', '.join(dupes)} "
                            "(each genome needs its own, or pooled IDs collide)")
    missing = []
    for sample, row in sheet.iterrows():
        for column in FILE_COLUMNS:
            if row[column] and not any(p.exists() for p in _candidates(row[column])):
                tried = " or ".join(str(p) for p in _candidates(row[column]))
                missing.append(f"{sample} {column}: {tried}")
    if missing:
        raise WorkflowError("sample files not found (relative paths are looked up in the "
                            "working directory, then under data_root = "
                            f"{data_root()}):\n  " + "\n  ".join(missing))
    wrong = [w for sample, row in sheet.iterrows() for column in FILE_COLUMNS
             if row[column] and (w := _wrong_format(sample, column, row[column]))]
    if wrong:
        raise WorkflowError("sample files of the wrong kind:\n  " + "\n  ".join(wrong))
    if config["model"] not in ("none", "embedded"):
        from genoctx.errors import GenoctxError
        from genoctx.model.checkpoint import read_config, resolve_checkpoint

        try:
            read_config(resolve_checkpoint(config["model"]))
        except GenoctxError as exc:
            raise WorkflowError(f"model: {exc}") from None
    if config["model"] == "none" and (sheet["vcf"] != "").any():
        raise WorkflowError("model: none cannot score variants; give a model or remove the "
                            "vcf column")


samples = read_sample_sheet(config["samples"])


wildcard_constraints:
    sample="|".join(map(re.escape, samples.index)) or "(?!x)x",
    shard=r"\d+",
    chunk=r"\d+",
    track="|".join(TRACKS) or "(?!x)x",


# ----------------------------------------------------------------------------- outputs


def annotation_outputs(sample):
    prefix = f"results/annotate/{sample}"
    return [f"{prefix}.gff3", f"{prefix}.bed", f"{prefix}.faa"] + [
        f"{prefix}.{t}.bedgraph" for t in TRACKS]


def all_outputs():
    out = []
    for sample in samples.index:
        out += annotation_outputs(sample)
        if has(sample, "vcf"):
            out += [f"results/score/{sample}.vcf.gz", f"results/score/{sample}.vcf.gz.{SCORE_INDEX}"]
        if has(sample, "truth"):
            out.append(f"results/evaluate/{sample}/metrics.json")
        if has(sample, "bam"):
            out.append(f"results/evaluate/{sample}/read_support.tsv")
    return out + ["results/report/samples.tsv", "results/report/summary.png"]


# ----------------------------------------------------------------------------- checkpoints


def shard_ids(sample):
    """Shard numbers of a sample, known once its plan_shards checkpoint has run."""
    folder = checkpoints.plan_shards.get(sample=sample).output[0]
    return sorted(glob_wildcards(os.path.join(folder, "{shard}.bed")).shard, key=int)


def chunk_ids(sample):
    """VCF chunk numbers of a sample, known once its split_vcf checkpoint has run."""
    folder = checkpoints.split_vcf.get(sample=sample).output[0]
    return sorted(glob_wildcards(os.path.join(folder, "{chunk}.vcf")).chunk, key=int)


def merge_inputs(wc):
    """The sample's FASTA and every shard's regions, GFF3 and bedGraphs, in shard order (rule
    merge_annotation)."""
    shards = shard_ids(wc.sample)
    part = f"results/annotate/{wc.sample}/parts/{{shard}}"
    return {
        "fasta": sample_file(wc.sample, "fasta"),
        "regions": expand(f"results/annotate/{wc.sample}/shards/{{shard}}.bed", shard=shards),
        "gff3": expand(f"{part}.gff3", shard=shards),
        "bedgraph": expand(f"{part}.{{track}}.bedgraph", shard=shards, track=TRACKS),
    }


def scored_chunks(wc):
    """Every scored chunk of a sample's VCF, in input order (rule concat_scored)."""
    return expand(f"results/score/{wc.sample}/scored/{{chunk}}.vcf", chunk=chunk_ids(wc.sample))


def score_annotation(wc):
    """The GFF3 every chunk of a sample's VCF takes its consequences from: the merged
    annotation ('predicted'), or the genes predicted from the sequence alone on the whole
    genome ('none', rule score_genes), the same for every chunking."""
    if config["score"]["annotation"] == "predicted":
        return f"results/annotate/{wc.sample}.gff3"
    return f"results/score/{wc.sample}/genes.gff3"


def slurm_partition(gpus):
    """The Slurm partition of a job that asks for ``gpus`` GPUs (the resource slurm_partition
    of snakemake-executor-plugin-slurm; local runs ignore it): slurm.gpu_partition when it asks
    for any, else slurm.cpu_partition ('' leaves the choice to the plugin and the cluster)."""
    slurm = config.get("slurm", {})
    return slurm.get("gpu_partition", "gpu") if gpus > 0 else slurm.get("cpu_partition", "cpu")


def report_samples():
    """Per sample, the paths the report reads ('' when the sample lacks that stage)."""
    rows = []
    for s in samples.index:
        rows.append({
            "sample": s,
            "fasta": sample_file(s, "fasta"),
            "gff3": f"results/annotate/{s}.gff3",
            "shards": f"results/annotate/{s}/shards",
            # the domain named from the genome (rule sample_domain), else the config's
            "domain": domain_file(s) or config["annotate"].get("domain", "auto"),
            "vcf": f"results/score/{s}.vcf.gz" if has(s, "vcf") else "",
            "metrics": f"results/evaluate/{s}/metrics.json" if has(s, "truth") else "",
            "reads": f"results/evaluate/{s}/read_support.tsv" if has(s, "bam") else "",
        })
    return rows


def report_inputs(wc):
    """Every file the report reads, so that it runs after all of them."""
    keys = ("gff3", "shards", "vcf", "metrics", "reads")
    files = [row[k] for row in report_samples() for k in keys if row[k]]
    return files + [domain_file(s) for s in samples.index if domain_file(s)]
