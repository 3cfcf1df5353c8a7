#!/usr/bin/env bash
# One sitting on the H200 runner as a background pipeline that outlives the 10-minute limit of a
# single command: `start` launches it (setsid, so it survives the command that started it) from a
# copy of the working tree; `wait S` follows it for S seconds and packs what it has measured so far
# into $OUT; the next command, sent within the runner's warm window (30 s), finds it still running.
#
#   OUT=dir bash scripts/h200_session.sh start [wait seconds]    # first command of the sitting
#   OUT=dir bash scripts/h200_session.sh wait SECONDS             # every later command
#   OUT=dir bash scripts/h200_session.sh wheels074 SECONDS        # hands .whl074/ (0.7.4) over, then waits
#
# Needs .whl/ (flashinfer-python 0.7.2.post1 and apache-tvm-ffi from ../shared/tools/flashinfer-wheels,
# and nvidia-cudnn-frontend for the cuDNN backend: docs/h200-runner.md) carried by the `start` command; with ATTNCHECK_TIMING=1 (the sweep and the upgrade diff, measured
# on 2026-12-01) also .whl074/ (the same tool with 0.7.4), carried by the `wheels074` command.
# Steps run in order of what the issues need most; each is logged to $R/NAME.log with its exit
# status and seconds in $R/steps.txt, and whatever a step writes is packed as it stands.
set -u
A=/tmp/attncheck-session     # everything the pipeline owns on the runner
R=$A/R                       # results, packed into $OUT by `wait`
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=$(nproc)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"

side_lane() {  # after the prebuild: the FlashInfer mutant catalogue on the GPU (issue 6); on 2026-12-01
  # (fourth sitting) its control passed in 120.5 s with the core modules prebuilt, all 115 mutants in 482 s
  step mutate 720 "${run[@]}" mutate --target flashinfer --device cuda --workers 6 --out "$R/mutate"
}

gpu_lane() {  # beside the prebuild, no JIT module of its own: FlashInfer's cuDNN backend and torch on CUDA
  step matrix_cudnn 420 "${run[@]}" run "${ma[@]}" --budget quick --time-budget 330 --backend cudnn \
      --out "$R/matrix_cudnn"
  [ -s "$R/matrix_cudnn/results.jsonl" ] && step routing_cudnn 120 python3 -m conformance routes \
      "$R/matrix_cudnn/results.jsonl" --spec flashinfer_cuda --arch sm90 --out "$R/routing_cudnn"
  # torch on CUDA without flex: FlexAttention compiles per case shape there (~11 s a record beside the
  # prebuild, fourth sitting); the five SDPA backends took 37.9 s for 465 records alone on the machine
  ( export OMP_NUM_THREADS=4
    step matrix_torch_cuda 300 "${run[@]}" run --target torch --device cuda --budget quick --backend math \
        --backend flash --backend efficient --backend cudnn --backend auto --out "$R/matrix_torch_cuda" )
  step routing_torch 120 python3 -m conformance routes "$R/matrix_torch_cuda/results.jsonl" --spec torch \
      --arch sm90 --out "$R/routing_torch"
}

scripts_lane() {  # after the prebuild (core modules): the machines, all six subjects, then their failures' scripts
  step explore 480 "${run[@]}" explore --target flashinfer --device cuda --budget runner --examples 40 --steps 20 \
      --jobs 2 --out "$R/explore"
  for s in $(ls "$R"/explore/failures/repro-*.py 2>/dev/null | head -n 6); do
    step "script_$(basename "$s" .py | cut -c7-70)" 90 python3 "$s"
  done
}

timing_lane() {  # ATTNCHECK_TIMING=1: the fa2/fa3 sweep and the 0.7.2.post1 -> 0.7.4 upgrade (issue 7)
  step sweep 300 "${run[@]}" sweep --target flashinfer --device cuda --a fa2 --b fa3 --reps 20 --out "$R/sweep"
  python3 - "$R/upgrade-cases.json" <<'PY'
import json, sys
from kernels.flashinfer.adapter import matrix as m
keep = ("bf16-128", "bf16-128-window", "fp16-64", "fp16-128-softcap")
cases = [c.to_json() for c in m.build("quick") if (p := m.profile_of(c)) is not None and p.name in keep]
json.dump(cases, open(sys.argv[1], "w"))
print(len(cases), "cases for the upgrade diff")
PY
  rec=(record --target flashinfer --device cuda --case "@$R/upgrade-cases.json" --backend fa2 --backend fa2+graph
       --isolate --time fa2 --rows 1x1024,8x4096,32x2048 --q 1,16,64,256 --reps 20)
  step record_072 300 "${run[@]}" "${rec[@]}" --out "$R/base-0.7.2"
  local waited=0
  while [ ! -e "$A/w074/ready" ] && [ $waited -lt 600 ]; do sleep 5; waited=$((waited + 5)); done
  if [ -e "$A/w074/ready" ]; then
    site_for "$A/site074" "$A"/w074/flashinfer_python-*.whl
    ( export FLASHINFER_WORKSPACE_BASE=$A/jit-0.7.4 PYTHONPATH="$A/site074:$A/site072:$A/src"
      step record_074 480 "${run[@]}" "${rec[@]}" --out "$R/new-0.7.4" )
    step diff 60 "${run[@]}" diff "$R/base-0.7.2" "$R/new-0.7.4" --out "$R/diff"
  else
    echo "record_074 skipped: no 0.7.4 wheels after ${waited}s" | tee -a "$R/steps.txt"
  fi
}

pipeline() {
  cd "$A/src" || exit 2
  export FLASHINFER_WORKSPACE_BASE=$A/jit-0.7.2 PYTHONPATH="$A/site072:$A/src"
  { date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; echo "cores $(nproc)"
    python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'flashinfer', flashinfer.__version__)"
    python3 -c "from kernels.flashinfer.adapter import lib as f; print('lib facts', f.lib_facts('cuda'))"
  } > "$R/env.txt" 2>&1
  cat "$R/env.txt"
  run=(python3 -m conformance)
  local ma=(--target flashinfer --device cuda --isolate)
  # The sitting's cases (the whole quick matrix needs 36 modules, more than a sitting builds: third sitting):
  # core = profiles bf16-128, bf16-128-window and fp8-kv, whose modules the mutant suite's library tests,
  # the machines' draws (conformance/explore/subjects.py FLASHINFER_LIMITS) and the scripts load. (The fourth
  # sitting's first machine also ran auto with tensor-core decode over every decode case of the matrix.)
  python3 - "$R" <<'PY'
import json, sys
from kernels.flashinfer.adapter import matrix as m
core = ("bf16-128", "bf16-128-window", "fp8-kv")
cases = m.build("quick")
pick = {"core": [c for c in cases if (p := m.profile_of(c)) is not None and p.name in core]}
for name, cs in pick.items():
    json.dump([c.to_json() for c in cs], open(f"{sys.argv[1]}/{name}-cases.json", "w"))
    print(len(cs), name, "cases")
PY
  gpu_lane > "$A/gpu.log" 2>&1 &
  local gpu_only=$!
  # 0. the core cases' modules, fa3 first (kernels/flashinfer/prebuild.py BUILD_ORDER); 212 and 235 s (fourth sitting)
  step prebuild 480 python3 -m conformance prebuild --case "@$R/core-cases.json" --backend fa2 \
      --backend fa3 --out "$R/prebuild.json"
  scripts_lane > "$A/scripts.log" 2>&1 &
  local scripts=$!
  side_lane
  wait "$gpu_only" "$scripts"
  [ "${ATTNCHECK_TIMING:-0}" = 1 ] && timing_lane
  touch "$A/DONE"
}

case "${1:-}" in
  start)
    rm -rf "$A"; mkdir -p "$R" "$A/src"; touch "$R/steps.txt"
    tar --exclude=./.whl --exclude=./.whl074 --exclude=./.git -cf - . | tar -C "$A/src" -xf -
    site_for "$A/site072" .whl/*.whl || exit 2
    setsid nohup bash "$A/src/scripts/h200_session.sh" pipeline > "$A/pipeline.log" 2>&1 < /dev/null &
    sleep 2; follow "${2:-540}" ;;
  pipeline) pipeline ;;
  wait) follow "${2:-540}" ;;
  wheels074)
    mkdir -p "$A/w074" && cp .whl074/*.whl "$A/w074/" && touch "$A/w074/ready" && echo "0.7.4 wheels handed over"
    follow "${2:-540}" ;;
  *) echo "usage: OUT=dir bash scripts/h200_session.sh start|wait|wheels074 [seconds]" >&2; exit 2 ;;
esac
