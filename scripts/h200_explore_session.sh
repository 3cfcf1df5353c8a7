#!/usr/bin/env bash
# A sitting for the exploration issue on the H200 runner, both FlashInfer versions at once, as a
# background pipeline that outlives the 10-minute limit of one command (scripts/h200_lib.sh: follow,
# pack, step).
#
#   OUT=dir bash scripts/h200_explore_session.sh start [seconds]   # carry .whlx/ (or .whl/ and .whl074x/)
#   OUT=dir bash scripts/h200_explore_session.sh wait [seconds]
#
# .whlx/ (scripts/pack_flashinfer_sites.sh) holds both versions as xz'd sites beside apache-tvm-ffi and
# nvidia-cudnn-frontend; the older pair .whl/ (0.7.2.post1's wheels) and .whl074x/ (0.7.4's site) still
# works, without cuDNN's frontend (scripts/h200_lib.sh install_sites).
# Three lanes, in the order of what matters most within each, so a sitting cut short keeps that:
#   VERSION  one per FlashInfer version, at once, each with its own site and JIT cache: the lifecycle
#            subjects after their `--prebuild` (their hunts are timed: nothing else on the GPU but the
#            other version's), the default exploration, `attncheck ledger verify` of every entry, the fa3
#            LSE probe, then (0.7.4) the FlashInfer precision distributions or (0.7.2.post1) long contexts;
#   torch    once both lifecycle steps are done: the torch precision distributions and fault catalogue,
#            the batched backends, the torch ledger entries, long contexts.
# Results: $R/<version>/, $R/torch/.
set -u
A=/tmp/attncheck-explore     # everything the pipeline owns on the runner
R=$A/R                       # results, packed into $OUT by `wait`
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=6
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"

enter() {  # enter VERSION SITE: this lane's environment and result directory
  R=$R0/$1; mkdir -p "$R"; touch "$R/steps.txt"
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$1 PYTHONPATH="$2:$A/site-common:$A/src"
  [ -s "$R/env.txt" ] || {
    date -u; nvidia-smi -L; echo "cores $(nproc)"
    python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__)"
  } > "$R/env.txt" 2>&1
}

# The lifecycle subjects whose hunt ended at a lost CUDA context (scripts written, not run) or took longest.
LIFECYCLE_SUBJECTS=(lifecycle-paged_mask_kept lifecycle-ragged_kv_indptr_same_batch
                    lifecycle-ragged_kv_indptr_same_batch-graph lifecycle-ragged_graph_qo_indptr_same_total)

version_lane() {  # version_lane VERSION: both versions at once, each with its own site and JIT cache
  local LANE=$1 ALL_STEPS=$R0/steps.txt run=(python3 -m conformance) s subj=()
  for s in "${LIFECYCLE_SUBJECTS[@]}"; do subj+=(--subject "$s"); done
  enter "$1" "$A/site-$1"
  step lifecycle 420 "${run[@]}" explore --target lifecycle --device cuda --budget ci --jobs 4 --prebuild \
      "${subj[@]}" --out "$R/lifecycle"
  touch "$R0/lifecycle-done-$1"
  step explore 540 "${run[@]}" explore --target flashinfer --device cuda --budget ci --jobs 4 --prebuild \
      --out "$R/explore"
  step verify 480 "${run[@]}" ledger verify --target flashinfer --timeout 150 --out "$R/verify"
  step probe_fa3_lse_store_zero 240 python3 docs/evidence/probe_flashinfer_fa3_lse_store_zero.py --with-softcap
  if [ "$1" = 0.7.4 ]; then
    step precision_flashinfer 480 python3 scripts/precision_baseline.py --device cuda --budget standard \
        --parts flashinfer --flashinfer-time-budget 420 --jit-cache "$FLASHINFER_WORKSPACE_BASE" --out "$R/precision"
  else
    step long_context 360 "${run[@]}" run --target flashinfer --device cuda --budget standard \
        --feature long_context --out "$R/long"
  fi
  touch "$R0/DONE-$1"
}

torch_lane() {  # torch alone on the GPU, once both lifecycle steps are done (their hunts are timed)
  local LANE=torch ALL_STEPS=$R0/steps.txt run=(python3 -m conformance) waited=0 b back=()
  until { [ -e "$R0/lifecycle-done-0.7.4" ] && [ -e "$R0/lifecycle-done-0.7.2.post1" ]; } || [ $waited -ge 600 ]; do
    sleep 5; waited=$((waited + 5))
  done
  R=$R0/torch; mkdir -p "$R"; export PYTHONPATH=$A/src
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())" \
      > "$R/env.txt" 2>&1
  step precision_torch 420 python3 scripts/precision_baseline.py --device cuda --budget standard \
      --parts torch,faults --time-budget 360 --out "$R/precision"
  for b in padded-math padded-flash padded-efficient padded-cudnn padded-auto nested-math nested-flash \
           nested-efficient nested-cudnn nested-auto flex-padded; do back+=(--backend "$b"); done
  step batched 360 "${run[@]}" run --target torch --device cuda --budget quick "${back[@]}" --out "$R/batched"
  step verify 200 "${run[@]}" ledger verify --target torch --timeout 150 --out "$R/verify"
  step long_context 300 "${run[@]}" run --target torch --device cuda --budget standard --feature long_context \
      --out "$R/long"
  touch "$R0/DONE-torch"
}

pipeline() {
  cd "$A/src" || exit 2
  R0=$R
  version_lane 0.7.4 > "$A/lane-0.7.4.log" 2>&1 &
  version_lane 0.7.2.post1 > "$A/lane-0.7.2.post1.log" 2>&1 &
  torch_lane > "$A/lane-torch.log" 2>&1 &
  wait
  touch "$A/DONE"
}

case "${1:-}" in
  start)
    rm -rf "$A"; mkdir -p "$R" "$A/src"; touch "$R/steps.txt"
    tar --exclude=./.whl --exclude=./.whl074 --exclude=./.whl074x --exclude=./.whlx --exclude=./.git -cf - . \
      | tar -C "$A/src" -xf -
    install_sites "$A" || exit 2
    setsid nohup bash "$A/src/scripts/h200_explore_session.sh" pipeline > "$A/pipeline.log" 2>&1 < /dev/null &
    sleep 2; follow "${2:-540}" ;;
  pipeline) pipeline ;;
  wait) follow "${2:-540}" ;;
  *) echo "usage: OUT=dir bash scripts/h200_explore_session.sh start|wait [seconds]" >&2; exit 2 ;;
esac
