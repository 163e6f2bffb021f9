# Annotate each sample in shards: plan the shards (checkpoint), name the genome's domain once
# from its rRNA genes, run `genoctx annotate` on each shard, then merge the shards into one
# GFF3, BED, protein FASTA and bedGraph per track.


checkpoint plan_shards:
    input:
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
    output:
        directory("results/annotate/{sample}/shards"),
    params:
        shard_bases=config["annotate"]["shard_bases"],
        pack_below=config["annotate"]["pack_below"],
        overlap=config["annotate"]["chunk_overlap"],
        whole=lambda wc: circular_mode(wc.sample),
    log:
        "logs/annotate/{sample}/plan_shards.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/plan_shards.py"


rule sample_domain:
    input:
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
    output:
        "results/annotate/{sample}/domain.txt",
    log:
        "logs/annotate/{sample}/domain.log",
    threads: config["annotate"]["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/sample_domain.py"


rule annotate_shard:
    input:
        fasta=lambda wc: sample_file(wc.sample, "fasta"),
        regions="results/annotate/{sample}/shards/{shard}.bed",
        domain=lambda wc: domain_file(wc.sample),
    output:
        gff3="results/annotate/{sample}/parts/{shard}.gff3",
        bed="results/annotate/{sample}/parts/{shard}.bed",
        bedgraph=expand("results/annotate/{{sample}}/parts/{{shard}}.{track}.bedgraph",
                        track=TRACKS),
    params:
        prefix=lambda wc, output: output.gff3[: -len(".gff3")],
        formats="gff3,bed,bedgraph" if TRACKS else "gff3,bed",
        model=config["model"],
        device=config["device"],
        context=config["annotate"]["context"],
        window_overlap=config["annotate"]["window_overlap"],
        batch_size=config["annotate"]["batch_size"],
        rna=config["annotate"]["rna"],
        procedure=config["annotate"].get("procedure", "auto"),
        translation_table=config["annotate"].get("translation_table", 11),
        orf_scorer="" if config["annotate"].get("orf_scorer", True) else " --no-orf-scorer",
        min_score=config["annotate"].get("min_score", 0.0),
        domain=shard_domain,
        closed=lambda wc: (" --closed" if is_closed(wc.sample) else "")
        + circular_flag(wc.sample),
    log:
        "logs/annotate/{sample}/{shard}.log",
    threads: config["annotate"]["threads"]
    resources:
        mem_mb=config["annotate"]["mem_mb"],
        runtime=config["annotate"]["runtime"],
        gpu=config["annotate"]["gpu"],
        slurm_partition=slurm_partition(config["annotate"]["gpu"]),
    conda:
        "../envs/genoctx.yaml"
    # on failure genoctx's error line goes to the console too; the log holds the rest
    shell:
        "OMP_NUM_THREADS={threads} genoctx annotate {input.fasta:q} --regions {input.regions:q}"
        " --out {params.prefix:q} --formats {params.formats} --model {params.model:q}"
        " --device {params.device} --context {params.context}"
        " --overlap {params.window_overlap} --batch-size {params.batch_size} --rna {params.rna}"
        " --procedure {params.procedure} --translation-table {params.translation_table}"
        "{params.orf_scorer} --domain {params.domain} --min-score {params.min_score}"
        " --threads {threads}{params.closed}"
        " > {log:q} 2>&1 || {{ s=$?; grep '^genoctx: error' {log:q} >&2 || true; exit $s; }}"


rule merge_annotation:
    input:
        unpack(merge_inputs),
    output:
        gff3="results/annotate/{sample}.gff3",
        bed="results/annotate/{sample}.bed",
        faa="results/annotate/{sample}.faa",
        bedgraph=expand("results/annotate/{{sample}}.{track}.bedgraph", track=TRACKS),
    params:
        tracks=TRACKS,
        translation_table=config["annotate"].get("translation_table", 11),
        locus_tag=lambda wc: samples.loc[wc.sample, "locus_tag"],
    log:
        "logs/annotate/{sample}/merge.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/merge_annotation.py"
