#!/usr/bin/env bash
# FlashInfer on the H200 runner: the quick matrix through `attncheck run --target flashinfer` (every
# offered backend, eager and graph), the custom-mask cases again with packed masks, the standalone
# defect scripts of docs/evidence/, and the prebuild's URI check against the real library.
#
#   OUT=dir bash scripts/h200_flashinfer_matrix.sh [time budget of the matrix run, s (default 330)]
#
# Needs .whl/ (scripts of ../shared/tools/flashinfer-wheels put it there) carried to the runner.
# Every step writes under $OUT as it goes; the last lines printed are the summary.
set -u
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=$(nproc)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
site=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" .whl/*.whl || exit 2
export PYTHONPATH="$site:$PWD"
budget=${1:-330}
steps=$OUT/steps.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "cores $(nproc)"
  python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__)"
} > "$OUT/env.txt" 2>&1
step() {  # step NAME TIMEOUT CMD...: run, log to $OUT/NAME.log, note rc and seconds
  local name=$1 limit=$2; shift 2; local t0=$SECONDS
  timeout -s INT -k 15 "$limit" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? $((SECONDS - t0)) s" >> "$steps"
}
step matrix $((budget + 30)) python3 -m conformance run --target flashinfer --device cuda --budget quick \
    --time-budget "$budget" --out "$OUT/matrix"
for s in sticky_paged_auto ragged_stale_mask packed_mask_indptr; do
  step "repro_$s" 45 python3 "docs/evidence/repro_flashinfer_$s.py"
done
step repro_ragged_stale_mask_auto 45 python3 docs/evidence/repro_flashinfer_ragged_stale_mask.py auto
step pytest_prebuild 60 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_flashinfer_prebuild.py
for f in packed packed_flat; do
  step "mask_$f" 50 python3 -m conformance run --target flashinfer --device cuda --budget quick --backend fa2 \
      --backend fa2+graph --feature custom_mask --adapter-option "mask_form=$f" --out "$OUT/mask_$f"
done
cat "$OUT/env.txt"; tail -n 30 "$OUT/matrix.log"; cat "$steps"
grep -h "reused\|fresh\|request [01]\|REPRODUCED\|not reproduced" "$OUT"/repro_*.log
tail -n 3 "$OUT/pytest_prebuild.log" "$OUT"/mask_*.log
