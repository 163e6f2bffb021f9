# Evaluate each merged annotation: against the sample's truth annotation (`genoctx eval`), and
# against its reads (mean read depth over each predicted gene) when the sample has a BAM, CRAM
# or SAM.


rule evaluate:
    input:
        predictions="results/annotate/{sample}.gff3",
        truth=lambda wc: sample_file(wc.sample, "truth"),
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
    output:
        "results/evaluate/{sample}/metrics.json",
    params:
        outdir=lambda wc, output: os.path.dirname(output[0]),
    log:
        "logs/evaluate/{sample}/eval.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    # on failure genoctx's error line goes to the console too; the log holds the rest
    shell:
        "OMP_NUM_THREADS={threads} genoctx eval --predictions {input.predictions:q}"
        " --truth {input.truth:q} --fasta {input.fasta:q} --out {params.outdir:q}"
        " > {log:q} 2>&1 || {{ s=$?; grep '^genoctx: error' {log:q} >&2 || true; exit $s; }}"


rule read_support:
    input:
        reads=lambda wc: sample_file(wc.sample, "bam"),
        gff3="results/annotate/{sample}.gff3",
        fasta=lambda wc: sample_file(wc.sample, "fasta"),  # a CRAM's reference
    output:
        tsv="results/evaluate/{sample}/read_support.tsv",
        # the alignments linked (BAM, CRAM) or sorted into a BAM (SAM), with their index
        reads=temp(directory("results/evaluate/{sample}/reads")),
    log:
        "logs/evaluate/{sample}/read_support.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/read_support.py"
