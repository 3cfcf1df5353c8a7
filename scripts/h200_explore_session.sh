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
# Two lanes, so that no two JIT builds of one version race (docs/h200-runner.md: building beside other
# builds costs more than it saves), in the order of what matters most, so a sitting cut short keeps that:
#   explore  per version (0.7.4 first), one after the other: the lifecycle fault catalogue after its
#            `--prebuild` (every module its subjects load, all cores on it), then its clean subjects;
#   upgrade  per version, once that version's prebuild line is written: the upgrade record
#            (scripts/upgrade_flashinfer.sh) of auto and each backend into the same JIT cache, then
#            `attncheck ledger verify` of the entries no sitting has settled on that version.
# Results: $R/<version>/, $R/upgrade-<version>/.
set -u
A=/tmp/attncheck-explore     # everything the pipeline owns on the runner
R=$A/R                       # results, packed into $OUT by `wait`
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=6
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"

# The entries each version's upgrade lane verifies last: those the sittings of 2026-12-02 (docs/evidence/
# 2026-12-02-h200-explore*) timed out on, did not reach, or ran in an older form.
VERIFY_072="flashinfer-fa3-paged-192-128 flashinfer-fa2-window-noncausal-split-kv flashinfer-fa3-hnd-kv-heads-sigfpe"
VERIFY_074="flashinfer-fa3-paged-192-128 flashinfer-fa2-window-noncausal-split-kv flashinfer-fa3-hnd-kv-heads-sigfpe"

enter() {  # enter VERSION SITE: this lane's environment and result directory
  R=$R0/$1; mkdir -p "$R"; touch "$R/steps.txt"
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$1 PYTHONPATH="$2:$A/site-common:$A/src"
  [ -s "$R/env.txt" ] || {
    date -u; nvidia-smi -L; echo "cores $(nproc)"
    python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__)"
  } > "$R/env.txt" 2>&1
}

explore_lane() {  # the lifecycle catalogue and its clean subjects, one version after the other
  local LANE=explore ALL_STEPS=$R0/steps.txt run=(python3 -m conformance) v
  for v in 0.7.4 0.7.2.post1; do
    enter "$v" "$A/site-$v"
    step lifecycle 480 "${run[@]}" explore --target lifecycle --device cuda --budget ci --jobs 8 --prebuild \
        --out "$R/lifecycle"
    step lifecycle_clean 300 "${run[@]}" explore --target lifecycle-clean --device cuda --budget ci --jobs 6 \
        --out "$R/lifecycle-clean"
  done
  touch "$R0/DONE-explore"
}

upgrade_lane() {  # per version, after its prebuild: the upgrade record, then ledger verify
  local LANE=upgrade ALL_STEPS=$R0/steps.txt v ids waited
  for v in 0.7.4 0.7.2.post1; do
    waited=0
    until grep -qs "^prebuild:" "$R0/$v/lifecycle.log" || [ $waited -ge 900 ]; do
      sleep 5; waited=$((waited + 5))
    done
    enter "$v" "$A/site-$v"
    SITE=$A/site-$v JIT_CACHE=$FLASHINFER_WORKSPACE_BASE TIME_BUDGET=300 MAX_JOBS=6 \
        step upgrade_record 360 bash scripts/upgrade_flashinfer.sh record "$v" "$R0/upgrade-$v"
  done
  for v in 0.7.4 0.7.2.post1; do
    enter "$v" "$A/site-$v"
    if [ "$v" = 0.7.4 ]; then ids=$VERIFY_074; else ids=$VERIFY_072; fi
    # shellcheck disable=SC2086 # the IDs are words
    step verify 600 python3 -m conformance ledger verify --target flashinfer --timeout 240 --out "$R/verify" $ids
  done
  touch "$R0/DONE-upgrade"
}

pipeline() {
  cd "$A/src" || exit 2
  R0=$R
  explore_lane > "$A/lane-explore.log" 2>&1 &
  upgrade_lane > "$A/lane-upgrade.log" 2>&1 &
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
