# Score each sample's VCF in chunks of records: split (checkpoint), `genoctx score-variants` on
# each chunk, then concatenate into one bgzipped, tabix-indexed VCF.


checkpoint split_vcf:
    input:
        vcf=lambda wc: sample_file(wc.sample, "vcf"),
    output:
        directory("results/score/{sample}/chunks"),
    params:
        records=config["score"]["chunk_records"],
    log:
        "logs/score/{sample}/split.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/split_vcf.py"


rule score_chunk:
    input:
        vcf="results/score/{sample}/chunks/{chunk}.vcf",
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
        annotation=score_annotation,
    output:
        temp("results/score/{sample}/scored/{chunk}.vcf"),
    params:
        annotation=lambda wc, input: f"--annotation '{input.annotation}'" if input.annotation else "",
        # genes predicted here (annotation 'none'): the sample's circles as annotate reads them
        circular=lambda wc, input: "" if input.annotation else circular_flag(wc.sample),
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
    conda:
        "../envs/genoctx.yaml"
    shell:
        "OMP_NUM_THREADS={threads} genoctx score-variants {input.vcf:q} --reference {input.fasta:q}"
        " --out {output:q} {params.annotation}{params.circular} --context {params.context}"
        " --model {params.model:q} --device {params.device} --batch-size {params.batch_size}"
        " --translation-table {params.translation_table} > {log:q} 2>&1"


rule concat_scored:
    input:
        scored_chunks,
    output:
        vcf="results/score/{sample}.vcf.gz",
        tbi="results/score/{sample}.vcf.gz.tbi",
    log:
        "logs/score/{sample}/concat.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/concat_vcf.py"
