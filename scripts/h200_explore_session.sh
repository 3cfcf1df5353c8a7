#!/usr/bin/env bash
# A sitting for the exploration issue on the H200 runner, both FlashInfer versions, as a background
# pipeline that outlives the 10-minute limit of one command (scripts/h200_lib.sh: follow, pack, step).
#
#   OUT=dir bash scripts/h200_explore_session.sh start [seconds]       # carries .whl/ (0.7.2.post1 + tvm-ffi)
#   OUT=dir bash scripts/h200_explore_session.sh wheels074 [seconds]   # carries .whl074/ (flashinfer 0.7.4 only)
#   OUT=dir bash scripts/h200_explore_session.sh wait [seconds]
#
# Per version, in its own lane (its own JIT cache and site; the 0.7.4 lane starts when its wheel arrives):
# the auto-routing probe, the scenario machines over every default subject (each written script run in a
# fresh process), `attncheck ledger verify`, the graph mask-buffer probe. Results: $R/<version>/.
set -u
A=/tmp/attncheck-explore     # everything the pipeline owns on the runner
R=$A/R                       # results, packed into $OUT by `wait`
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=8
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"

lane() {  # lane VERSION SITE: everything one version needs, logged under $R/VERSION
  local v=$1 site=$2 R0=$R
  R=$R0/$v; mkdir -p "$R"; touch "$R/steps.txt"
  local LANE=$v ALL_STEPS=$R0/steps.txt
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$v PYTHONPATH="$site:$A/site-common:$A/src"
  { date -u; nvidia-smi -L; echo "cores $(nproc)"
    python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__)"
  } > "$R/env.txt" 2>&1
  local run=(python3 -m conformance)
  [ -f scripts/probe_flashinfer_auto_routing.py ] && \
    step probe_routing 300 python3 scripts/probe_flashinfer_auto_routing.py --check "$A/src" --skip-window \
        --out "$R/probe_routing.jsonl"
  step explore 480 "${run[@]}" explore --target flashinfer --device cuda --budget runner --examples 24 --steps 10 \
      --jobs 4 --out "$R/explore"
  step verify 600 "${run[@]}" ledger verify --target flashinfer --timeout 120 --out "$R/verify"
  step probe_graph_mask 240 python3 docs/evidence/probe_flashinfer_graph_mask_buffers_unmasked.py
  touch "$R/DONE"
  R=$R0
}

pipeline() {
  cd "$A/src" || exit 2
  lane 0.7.2.post1 "$A/site-072" > "$A/lane-072.log" 2>&1 &
  local first=$!
  local waited=0
  while [ ! -e "$A/w074/ready" ] && [ $waited -lt 900 ]; do sleep 5; waited=$((waited + 5)); done
  if [ -e "$A/w074/ready" ]; then
    site_for "$A/site-074" "$A"/w074/flashinfer_python-*.whl
    lane 0.7.4 "$A/site-074" > "$A/lane-074.log" 2>&1
  else
    echo "0.7.4 lane skipped: no wheel after ${waited}s" | tee -a "$R/steps.txt"
  fi
  wait "$first"
  touch "$A/DONE"
}

case "${1:-}" in
  start)
    rm -rf "$A"; mkdir -p "$R" "$A/src"; touch "$R/steps.txt"
    tar --exclude=./.whl --exclude=./.whl074 --exclude=./.git -cf - . | tar -C "$A/src" -xf -
    site_for "$A/site-common" .whl/apache_tvm_ffi-*.whl || exit 2
    site_for "$A/site-072" .whl/flashinfer_python-*.whl || exit 2
    setsid nohup bash "$A/src/scripts/h200_explore_session.sh" pipeline > "$A/pipeline.log" 2>&1 < /dev/null &
    sleep 2; follow "${2:-540}" ;;
  pipeline) pipeline ;;
  wait) follow "${2:-540}" ;;
  wheels074)
    mkdir -p "$A/w074" && cp .whl074/flashinfer_python-*.whl "$A/w074/" && touch "$A/w074/ready" && echo "0.7.4 wheel handed over"
    follow "${2:-540}" ;;
  *) echo "usage: OUT=dir bash scripts/h200_explore_session.sh start|wheels074|wait [seconds]" >&2; exit 2 ;;
esac
