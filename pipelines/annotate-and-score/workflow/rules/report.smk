# One table (a row per sample) and one figure across all samples.


rule report:
    input:
        report_inputs,
    output:
        table="results/report/samples.tsv",
        figure="results/report/summary.png",
    params:
        samples=lambda wc: report_samples(),
    log:
        "logs/report/report.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
        slurm_partition=slurm_partition(0),
    conda:
        "../envs/genoctx.yaml"
    script:
        "../scripts/report.py"
