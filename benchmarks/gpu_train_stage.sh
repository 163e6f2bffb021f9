#!/usr/bin/env bash
# Stage, on this machine, what benchmarks/gpu_train.sh needs to train the embedded checkpoint on a
# lent GPU machine (which reaches no registry and no data): the train-role and pretrain-only files
# of the data manifest, with a MANIFEST.tsv of exactly those rows (the role guard reads it there
# as here: a file it does not list, any validation or benchmark file, is refused), and the wheel of
# Biopython (GenBank parsing; the image has the rest). All of it goes to .gpu_train/ (ignored
# through .git/info/exclude, never committed). Then, with the device tool:
#
#   run(command="bash benchmarks/gpu_train.sh", carry=[".gpu_train"], timeout_s=600)
#
# and here, from the returned files (docs/model.md, "Training on a GPU"):
#
#   tar -xf <files_at>/trained.tar -C runs/gpu && genoctx eval annotation-bacteria \
#       --model runs/gpu/annotation/export --out results/eval-gpu
#
# About 30 MiB; with the working tree (about 19 MiB) under the 64 MiB a call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${GPU_PY:-3.12}"
ROOT="${GENOCTX_DATA_ROOT:-../shared/data}"
[[ -f "$ROOT/MANIFEST.tsv" ]] || { echo "no $ROOT/MANIFEST.tsv (set GENOCTX_DATA_ROOT)" >&2; exit 1; }
mkdir -p .git/info
grep -qx '/.gpu_train/' .git/info/exclude 2>/dev/null || echo '/.gpu_train/' >> .git/info/exclude
rm -rf .gpu_train && mkdir -p .gpu_train/data .gpu_train/whl
# the header, then the train and pretrain-only rows (column 4 is the role)
awk -F'\t' 'NR == 1 || $4 == "train" || $4 == "pretrain-only"' "$ROOT/MANIFEST.tsv" \
    > .gpu_train/data/MANIFEST.tsv
tail -n +2 .gpu_train/data/MANIFEST.tsv | while IFS=$'\t' read -r path _bytes sha _rest; do
    mkdir -p ".gpu_train/data/$(dirname "$path")"
    cp "$ROOT/$path" ".gpu_train/data/$path"
    echo "$sha  .gpu_train/data/$path"
done | sha256sum --quiet -c -   # every staged file is the one the manifest names
plat=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
         manylinux2014_x86_64 manylinux1_x86_64; do
    plat+=(--platform "$p")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" \
    --implementation cp "${plat[@]}" -d .gpu_train/whl biopython==1.88
echo "staged $(($(wc -l < .gpu_train/data/MANIFEST.tsv) - 1)) files:"
du -sh .gpu_train .gpu_train/data .gpu_train/whl
