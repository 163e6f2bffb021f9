# Evaluate each merged annotation: against the sample's truth annotation (`genoctx eval`), and
# against its reads (mean read depth over each predicted gene) when the sample has a BAM.


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
    conda:
        "../envs/genoctx.yaml"
    shell:
        "OMP_NUM_THREADS={threads} genoctx eval --predictions {input.predictions:q}"
        " --truth {input.truth:q} --fasta {input.fasta:q} --out {params.outdir:q}"
        " > {log:q} 2>&1"


rule read_support:
    input:
        bam=lambda wc: sample_file(wc.sample, "bam"),
        gff3="results/annotate/{sample}.gff3",
    output:
        tsv="results/evaluate/{sample}/read_support.tsv",
        bam=temp("results/evaluate/{sample}/reads.bam"),
        bai=temp("results/evaluate/{sample}/reads.bam.bai"),
    log:
        "logs/evaluate/{sample}/read_support.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/read_support.py"
