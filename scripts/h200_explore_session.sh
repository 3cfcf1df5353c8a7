#!/usr/bin/env bash
# A sitting for the exploration issue on the H200 runner, both FlashInfer versions at once, as a
# background pipeline that outlives the 10-minute limit of one command (scripts/h200_lib.sh: follow,
# pack, step).
#
#   OUT=dir bash scripts/h200_explore_session.sh start [seconds]   # carry .whl/ and .whl074x/
#   OUT=dir bash scripts/h200_explore_session.sh wait [seconds]
#
# .whl/ holds flashinfer-python 0.7.2.post1 and apache-tvm-ffi as wheels; .whl074x/ holds 0.7.4 as an
# unpacked site in one tar.xz (18 MiB where the wheel is 50: both versions then fit one call's 64 MiB):
#   mkdir s && (cd s && unzip -q ../flashinfer_python-0.7.4-py3-none-any.whl) &&
#   tar -C s -cf - . | xz -9 > .whl074x/flashinfer-0.7.4-site.tar.xz
# Four lanes run at once, each version with its own JIT cache (shared by its lanes: FlashInfer's JIT
# locks each module's build), in the order of what matters most, so a sitting cut short keeps that:
#   explore-VERSION  the scenario machines (0.7.4: every default subject again, for the OOM, SIGFPE and
#                    script-verdict checks), the lifecycle fault catalogue and its clean subjects, then
#                    the upgrade record (scripts/upgrade_flashinfer.sh) of auto and each backend;
#   verify-VERSION   `attncheck ledger verify` of the entries the last sitting did not finish, once
#                    the explore lane's `--prebuild` has built that version's modules.
# Results: $R/<version>/.
set -u
A=/tmp/attncheck-explore     # everything the pipeline owns on the runner
R=$A/R                       # results, packed into $OUT by `wait`
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=6
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"

# The entries each version's verify lane runs: those the sitting of 2026-12-02 (docs/evidence/
# 2026-12-02-h200-explore) timed out on or did not reach.
VERIFY_072="flashinfer-fa3-hnd-kv-heads-sigfpe flashinfer-graph-no-query-rows flashinfer-fa3-paged-192-128
  flashinfer-fa3-softcap-lse-after-empty-rows flashinfer-decode-empty-batch-run
  flashinfer-decode-tensor-cores-empty-batch-plan flashinfer-cudnn-decode-empty-batch-plan
  flashinfer-cudnn-empty-kv-rows-unwritten flashinfer-cudnn-paged-all-kv-empty-raises
  flashinfer-graph-mask-buffer-unmasked"
VERIFY_074="flashinfer-graph-mask-buffer-unmasked flashinfer-fa3-hnd-kv-heads-sigfpe
  flashinfer-fa2-ragged-head-dim-96-illegal-access flashinfer-fa3-paged-192-128
  flashinfer-fa3-softcap-lse-after-empty-rows flashinfer-decode-empty-batch-run
  flashinfer-decode-tensor-cores-empty-batch-plan flashinfer-cudnn-decode-empty-batch-plan
  flashinfer-cudnn-empty-kv-rows-unwritten flashinfer-cudnn-paged-all-kv-empty-raises"

enter() {  # enter VERSION SITE: this lane's environment and result directory
  R=$R0/$1; mkdir -p "$R"; touch "$R/steps.txt"
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$1 PYTHONPATH="$2:$A/site-common:$A/src"
  [ -s "$R/env.txt" ] || {
    date -u; nvidia-smi -L; echo "cores $(nproc)"
    python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__)"
  } > "$R/env.txt" 2>&1
}

explore_lane() {  # explore_lane VERSION SITE
  local v=$1 site=$2 LANE=explore-$1 ALL_STEPS=$R0/steps.txt run=(python3 -m conformance)
  enter "$v" "$site"
  if [ "$v" = 0.7.4 ]; then
    step explore 420 "${run[@]}" explore --target flashinfer --device cuda --budget runner --examples 24 \
        --steps 10 --jobs 3 --prebuild --out "$R/explore"
  fi
  step lifecycle 420 "${run[@]}" explore --target lifecycle --device cuda --budget ci --jobs 3 --prebuild --out "$R/lifecycle"
  step lifecycle_clean 300 "${run[@]}" explore --target lifecycle-clean --device cuda --budget ci --jobs 3 \
      --out "$R/lifecycle-clean"
  SITE=$site JIT_CACHE=$FLASHINFER_WORKSPACE_BASE TIME_BUDGET=300 \
      step upgrade_record 360 bash scripts/upgrade_flashinfer.sh record "$v" "$R0/upgrade-$v"
  touch "$R/DONE-explore"
}

verify_lane() {  # verify_lane VERSION SITE IDS: once the version's explore lane has built its modules
  local v=$1 site=$2 LANE=verify-$1 ALL_STEPS=$R0/steps.txt waited=0
  enter "$v" "$site"
  # building beside other builds costs more than it saves (docs/h200-runner.md): wait for the prebuild's line
  until grep -qs "^prebuild:" "$R/explore.log" "$R/lifecycle.log" || [ $waited -ge 600 ]; do
    sleep 5; waited=$((waited + 5))
  done
  # shellcheck disable=SC2086 # the IDs are words
  step verify 900 python3 -m conformance ledger verify --target flashinfer --timeout 300 --out "$R/verify" $3
  touch "$R/DONE-verify"
}

pipeline() {
  cd "$A/src" || exit 2
  R0=$R
  explore_lane 0.7.2.post1 "$A/site-072" > "$A/lane-explore-072.log" 2>&1 &
  explore_lane 0.7.4 "$A/site-074" > "$A/lane-explore-074.log" 2>&1 &
  verify_lane 0.7.2.post1 "$A/site-072" "$VERIFY_072" > "$A/lane-verify-072.log" 2>&1 &
  verify_lane 0.7.4 "$A/site-074" "$VERIFY_074" > "$A/lane-verify-074.log" 2>&1 &
  wait
  touch "$A/DONE"
}

case "${1:-}" in
  start)
    rm -rf "$A"; mkdir -p "$R" "$A/src" "$A/site-074"; touch "$R/steps.txt"
    tar --exclude=./.whl --exclude=./.whl074 --exclude=./.whl074x --exclude=./.git -cf - . | tar -C "$A/src" -xf -
    site_for "$A/site-common" .whl/apache_tvm_ffi-*.whl || exit 2
    site_for "$A/site-072" .whl/flashinfer_python-*.whl || exit 2
    tar -C "$A/site-074" -xJf .whl074x/flashinfer-0.7.4-site.tar.xz || exit 2
    setsid nohup bash "$A/src/scripts/h200_explore_session.sh" pipeline > "$A/pipeline.log" 2>&1 < /dev/null &
    sleep 2; follow "${2:-540}" ;;
  pipeline) pipeline ;;
  wait) follow "${2:-540}" ;;
  *) echo "usage: OUT=dir bash scripts/h200_explore_session.sh start|wait [seconds]" >&2; exit 2 ;;
esac
