# Score each sample's VCF in chunks of records: split (checkpoint), `genoctx score-variants` on
# each chunk, then concatenate into one bgzipped VCF, indexed (score.index: tbi, or csi for
# positions past 2^29). The consequences come from
# one GFF3 for all chunks (score.annotation): the merged annotation ('predicted') or genes
# predicted from the sequence alone on the whole genome ('none', rule score_genes), so they do
# not depend on how the VCF is cut.


checkpoint split_vcf:
    input:
        vcf=lambda wc: sample_file(wc.sample, "vcf"),
    output:
        directory("results/score/{sample}/chunks"),
    params:
        records=config["score"]["chunk_records"],
        index=SCORE_INDEX,
    log:
        "logs/score/{sample}/split.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/split_vcf.py"


rule score_genes:
    input:
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
    output:
        "results/score/{sample}/genes.gff3",
    params:
        prefix=lambda wc, output: output[0][: -len(".gff3")],
        # 'model' needs the annotation head; without a model, auto is ARAGORN + barrnap
        rna="auto" if config["annotate"]["rna"] == "model" else config["annotate"]["rna"],
        procedure=config["annotate"].get("procedure", "auto"),
        translation_table=config["annotate"].get("translation_table", 11),
        orf_scorer="" if config["annotate"].get("orf_scorer", True) else " --no-orf-scorer",
        # the whole genome: auto names the domain as rule sample_domain does
        domain=config["annotate"].get("domain", "auto"),
        closed=lambda wc: (" --closed" if is_closed(wc.sample) else "")
        + circular_flag(wc.sample),
    log:
        "logs/score/{sample}/genes.log",
    threads: 1
    resources:
        mem_mb=config["annotate"]["mem_mb"],
        runtime=config["annotate"]["runtime"],
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    # on failure genoctx's error line goes to the console too; the log holds the rest
    shell:
        "OMP_NUM_THREADS={threads} genoctx annotate {input.fasta:q} --out {params.prefix:q}"
        " --formats gff3 --model none --rna {params.rna} --procedure {params.procedure}"
        " --translation-table {params.translation_table}{params.orf_scorer}"
        " --domain {params.domain} --threads {threads}{params.closed}"
        " > {log:q} 2>&1 || {{ s=$?; grep '^genoctx: error' {log:q} >&2 || true; exit $s; }}"


rule score_chunk:
    input:
        vcf="results/score/{sample}/chunks/{chunk}.vcf",
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
        annotation=score_annotation,
    output:
        temp("results/score/{sample}/scored/{chunk}.vcf"),
    params:
        model=config["model"],
        device=config["device"],
        context=config["score"]["context"],
        batch_size=config["score"]["batch_size"],
        # the genes' genetic code, as annotate read them (a CDS's own transl_table still wins)
        translation_table=config["annotate"].get("translation_table", 11),
    log:
        "logs/score/{sample}/{chunk}.log",
    threads: config["score"]["threads"]
    resources:
        mem_mb=config["score"]["mem_mb"],
        runtime=config["score"]["runtime"],
        gpu=config["score"]["gpu"],
        slurm_partition=slurm_partition(config["score"]["gpu"]),
    conda:
        "../envs/genoctx.yaml"
    # on failure genoctx's error line goes to the console too; the log holds the rest
    shell:
        "OMP_NUM_THREADS={threads} genoctx score-variants {input.vcf:q} --reference {input.fasta:q}"
        " --out {output:q} --annotation {input.annotation:q} --context {params.context}"
        " --model {params.model:q} --device {params.device} --batch-size {params.batch_size}"
        " --translation-table {params.translation_table}"
        " > {log:q} 2>&1 || {{ s=$?; grep '^genoctx: error' {log:q} >&2 || true; exit $s; }}"


rule concat_scored:
    input:
        scored_chunks,
    output:
        vcf="results/score/{sample}.vcf.gz",
        index=f"results/score/{{sample}}.vcf.gz.{SCORE_INDEX}",
    params:
        index=SCORE_INDEX,
    log:
        "logs/score/{sample}/concat.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/concat_vcf.py"
