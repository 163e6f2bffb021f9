#!/usr/bin/env bash
# Run on a lent GPU machine from the repository root, after benchmarks/gpu_train_stage.sh here:
#
#   run(command="bash benchmarks/gpu_train.sh", carry=[".gpu_train"], timeout_s=600)
#
# Trains the embedded checkpoint's two recipes on the GPU with the project's own code and the
# staged train-role data (`genoctx train --recipe lm`, then `--recipe annotation --init` its
# export), the same commands as on the CPU with longer windows and more steps, and returns
# $OUT/trained.tar (the annotation export, both runs' run.json, loss.csv and loss.png: what
# `python -m genoctx.train.ship` reads) and $OUT/train.log. Steps and sizes come from the
# environment: LM_STEPS (1500), ANN_STEPS (2000), SEQ_LEN (8192), BATCH (8), DEVICE (cuda).
# At 0.084 s per lm step of 8 x 8,192 on an H200 (docs/benchmarks.md, gpu_suite) the defaults
# should take about 2 + 4 minutes. Each recipe stops itself, saved and exported, after
# LM_LIMIT / ANN_LIMIT seconds of training (`genoctx train --time-limit`; 170 / 270), so that a
# slower GPU still hands the annotation recipe a backbone and the files come back within the
# call; `timeout` (LM_LIMIT / ANN_LIMIT + 60 s) is only the backstop for a hung process.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder whose files come back}"
mkdir -p "$OUT"
log="$OUT/train.log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .gpu_train/whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
python3 -c 'import genoctx.kernels' 2> /dev/null || ln -sfn ../kernels genoctx/kernels
runs="${RUNS_DIR:-/tmp/gpu_runs}"
rm -rf "$runs" && mkdir -p "$runs"
common=(--data-root .gpu_train/data --device "${DEVICE:-cuda}" --seq-len "${SEQ_LEN:-8192}"
        --batch-size "${BATCH:-8}" --quiet)
{
    command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total --format=csv
    date -u +"start %FT%TZ"
    lm_limit="${LM_LIMIT:-170}" ann_limit="${ANN_LIMIT:-270}"
    timeout "$((lm_limit + 60))" python3 -m genoctx train --recipe lm --out "$runs/lm" \
        --steps "${LM_STEPS:-1500}" --time-limit "$lm_limit" "${common[@]}"
    echo "lm rc=$?"; date -u +"lm done %FT%TZ"
    timeout "$((ann_limit + 60))" python3 -m genoctx train --recipe annotation \
        --init "$runs/lm/export" --out "$runs/annotation" --steps "${ANN_STEPS:-2000}" \
        --time-limit "$ann_limit" "${common[@]}"
    echo "annotation rc=$?"; date -u +"annotation done %FT%TZ"
} 2>&1 | tee "$log"
# what ship() reads: the annotation export and both runs' records, losses and plots (the lm
# weights stay behind: the annotation export holds the trained backbone)
files=()
for f in annotation/export lm/run.json lm/loss.csv lm/loss.png annotation/run.json \
         annotation/loss.csv annotation/loss.png; do
    [[ -e "$runs/$f" ]] && files+=("$f")
done
tar -cf "$OUT/trained.tar" -C "$runs" "${files[@]}"
ls -l "$OUT"
tar -tvf "$OUT/trained.tar"
