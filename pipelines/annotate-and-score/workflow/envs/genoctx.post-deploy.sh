#!/usr/bin/env bash
# Runs once inside the new conda environment (snakemake --sdm conda).
set -euo pipefail
: "${GENOCTX_SOURCE:?set GENOCTX_SOURCE to a genoctx checkout or wheel before building the environment}"
python -m pip install --no-input "${GENOCTX_SOURCE}"
