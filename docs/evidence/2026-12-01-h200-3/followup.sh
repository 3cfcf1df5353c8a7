#!/usr/bin/env bash
# The third sitting's second machine (2026-12-01): the two scripts of the fa3 discrepancies the quick
# matrix showed, beside the FlashInfer mutant catalogue on the GPU (its control failed in the first
# machine on an environment-dependent test, since fixed). Run from the repo root with .whl/ carried:
#   OUT=dir bash docs/evidence/2026-12-01-h200-3/followup.sh
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=$(nproc)
export FLASHINFER_WORKSPACE_BASE=/tmp/jit
R=$OUT/r; mkdir -p "$R"
{ date -u; nvidia-smi -L; python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'flashinfer', flashinfer.__version__)"; } > "$R/env.txt" 2>&1
s0=$SECONDS
one() { local name=$1 limit=$2; shift 2; local t=$SECONDS
  timeout -s INT -k 15 "$limit" "$@" > "$R/$name.txt" 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS - t)) s" >> "$R/steps.txt"; }
one unequal_head_dims 330 python3 docs/evidence/repro_flashinfer_fa3_paged_unequal_head_dims.py &
one softcap_lse 330 python3 docs/evidence/probe_flashinfer_fa3_softcap_lse.py &
one mutate "${MUTATE_S:-470}" python3 -m conformance mutate --target flashinfer --device cuda --workers 6 --out "$R/mutate"
wait
echo "total $((SECONDS - s0)) s" >> "$R/steps.txt"
cat "$R/steps.txt"; tail -n 12 "$R/unequal_head_dims.txt" "$R/softcap_lse.txt"; tail -n 8 "$R/mutate.txt"
