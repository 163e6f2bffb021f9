#!/usr/bin/env bash
# Stage, on this machine (it reaches PyPI), what benchmarks/gpu_suite.py needs on a lent GPU
# machine that cannot install anything: wheels of the packages its image lacks, and the genome
# that time_annotate reads. Everything goes to .gpu/ (ignored through .git/info/exclude, never
# committed: the genome comes from the data root). Then, with the device tool:
#
#   run(command="bash benchmarks/gpu_run.sh", carry=[".gpu"], timeout_s=600)
#
# and render the returned JSON into docs/benchmarks.md here:
#
#   python benchmarks/gpu_suite.py --from-json <files_at>/gpu_suite.json
#
# The image (see the device library's KINDS.md) has Python 3.12, torch 2.11, triton 3.6, numpy,
# scikit-learn, safetensors, typer, rich, einops, transformers and psutil; it lacks pysam,
# biopython, pyaragorn, pybarrnap (+ pyhmmer) and fla. GPU_PY=3.11 stages wheels for this
# machine's Python instead, to try the plumbing here (gpu_run.sh --smoke).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${GPU_PY:-3.12}"
ROOT="${GENOCTX_DATA_ROOT:-../shared/data}"
GENOME="$ROOT/genomes/bacteria/Escherichia_coli_K12_MG1655.gbff.gz"
mkdir -p .git/info
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
rm -rf .gpu/whl && mkdir -p .gpu/whl
plat=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 \
         manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    plat+=(--platform "$p")
done
# one version of each (two stop the install there); the versions CI installs here
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" \
    --implementation cp "${plat[@]}" -d .gpu/whl \
    pysam==0.24.1 biopython==1.88 pyaragorn==0.3.0 pybarrnap==0.5.2 pyhmmer==0.12.3 \
    pyrodigal==3.7.1 pybigwig==0.3.29 \
    fla-core==0.6.0 flash-linear-attention==0.6.0
if [[ -f "$GENOME" ]]; then
    cp "$GENOME" .gpu/
else
    echo "note: no $GENOME: time_annotate will be skipped there" >&2
fi
ls -l .gpu .gpu/whl
du -sh .gpu
echo "staged; the working tree and .gpu travel together (64 MiB in all):"
git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1
