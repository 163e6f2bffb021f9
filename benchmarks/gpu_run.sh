#!/usr/bin/env bash
# Run on the lent GPU machine from the repository root, after benchmarks/gpu_stage.sh here:
#
#   run(command="bash benchmarks/gpu_run.sh", carry=[".gpu"], timeout_s=600)
#
# Installs the staged wheels into /tmp/site (no registry there), then runs
# benchmarks/gpu_suite.py (extra arguments go to it, e.g. --quick or --only check) with
# time_annotate on the staged E. coli genome. The suite saves $OUT/gpu_suite.json after every
# section, so a run stopped at its limit still returns what it measured; it stops itself
# after GPU_SUITE_TIMEOUT seconds (default 540) to leave time for the files to come back.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder whose files come back}"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
# genoctx is not installed there: a link makes genoctx.kernels a real subpackage, so that fresh
# processes (time_annotate's `python -m genoctx annotate`) import it as an install would
python3 -c 'import genoctx.kernels' 2> /dev/null || ln -sfn ../kernels genoctx/kernels
# the decoder's compiled loops (setup.py), built for that machine's Python where it has a C
# compiler and Python's headers; without them the decoder runs its Python loops (slower)
python3 setup.py -q build_ext --inplace > "$OUT/build_ext.log" 2>&1 \
    || echo "note: genoctx/heads/_native.c not built there (see build_ext.log)" >&2
if command -v nvidia-smi > /dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.csv"
fi
genome=(.gpu/*.gbff.gz)
extra=()
# the whole suite: the kernels, then genoctx annotate and training steps on the staged genome
[[ -f "${genome[0]}" ]] && extra=(--app --annotate-fasta "${genome[0]}")
timeout "${GPU_SUITE_TIMEOUT:-540}" python3 benchmarks/gpu_suite.py --no-doc "${extra[@]}" "$@" \
    2>&1 | tee "$OUT/gpu_suite.log"
