#!/usr/bin/env bash
# One H200 call, whole steps only (a machine is given back between calls, and a background pipeline with
# it): both FlashInfer versions at once, each in its own lane (site, JIT cache), optionally a torch lane
# beside them, every step under one deadline. What the lanes wrote is packed into $OUT/results.tgz (a call
# returns 8 files at most), then a table of steps is printed last. Carry .whlx/
# (scripts/pack_flashinfer_sites.sh).
#
#   OUT=dir bash scripts/h200_lanes.sh SECONDS VERSION_STEPS [TORCH_STEPS]
#   (VERSION_STEPS /dev/null: the torch lane alone, nothing installed)
#
# A steps file holds a step a line, `NAME LIMIT COMMAND...` (# starts a comment): run in the checkout, in
# order, each under the smaller of its LIMIT and what is left of the deadline; $R is the lane's result
# folder. A step named NAME@VERSION runs in that version's lane only. Logs: $R/NAME.log, headed by the
# command, the time and the environment.
set -u
DEADLINE=$((SECONDS + ${1:?seconds} - 20))  # 20 s kept for packing
VSTEPS=${2:?version steps file}
TSTEPS=${3:-}
A=/tmp/attncheck-lanes
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=6
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

. "$(dirname "$0")/h200_lib.sh"  # install_sites

steps() {  # steps FILE: run each step of FILE in this lane
  local name limit cmd left t0 rc
  while read -r name limit cmd; do
    [ -z "$name" ] || [ "${name#\#}" != "$name" ] && continue
    case $name in *@*) [ "${name#*@}" = "$LANE" ] || continue; name=${name%@*} ;; esac  # NAME@VERSION: that lane only
    left=$((DEADLINE - SECONDS)); [ "$left" -gt 5 ] || { echo "$LANE $name rc=skipped 0 s" >> "$A/steps.txt"; continue; }
    [ "$limit" -lt "$left" ] && left=$limit
    t0=$SECONDS
    { echo "# $(date -u +%FT%TZ) limit ${left}s: $cmd"; cat "$R/env.txt"; } > "$R/$name.log"
    R=$R timeout -s INT -k 15 "$left" bash -c "$cmd" >> "$R/$name.log" 2>&1 < /dev/null
    rc=$?
    echo "$LANE $name rc=$rc $((SECONDS - t0)) s" >> "$A/steps.txt"
  done < "$1"
}

lane() {  # lane VERSION: its site and JIT cache, then the version steps
  local LANE=$1 R=$A/R/$1; mkdir -p "$R"
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$1 PYTHONPATH="$A/site-$1:$A/site-common:$PWD"
  python3 -c "import torch, flashinfer; print('# torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__, torch.cuda.get_device_name())" > "$R/env.txt" 2>&1
  export R; steps "$VSTEPS"
}

torch_lane() {
  local LANE=torch R=$A/R/torch; mkdir -p "$R"
  export PYTHONPATH=$PWD
  python3 -c "import torch; print('# torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())" > "$R/env.txt" 2>&1
  export R; steps "$TSTEPS"
}

# A warm machine (the next call within its idle release) keeps the sites and the JIT caches of the last call:
# only its results go.
rm -rf "$A/R" "$A"/lane-*.log; mkdir -p "$A/R" "$OUT"; : > "$A/steps.txt"
[ -d "$A/jit-0.7.4" ] && echo "# warm: the last call's JIT caches kept ($(du -sh "$A"/jit-* 2>/dev/null | tr '\n' ' '))"
if [ "$VSTEPS" != /dev/null ]; then  # a torch-only call (VERSION_STEPS /dev/null) needs no site and no .whlx/
  install_sites "$A" || exit 2
  lane 0.7.2.post1 > "$A/lane-0.7.2.post1.log" 2>&1 &
  lane 0.7.4 > "$A/lane-0.7.4.log" 2>&1 &
fi
[ -n "$TSTEPS" ] && { torch_lane > "$A/lane-torch.log" 2>&1 & }
while [ $SECONDS -lt $DEADLINE ] && [ -n "$(jobs -r)" ]; do sleep 3; done
kill $(jobs -p) 2>/dev/null; sleep 2
cp "$A/steps.txt" "$OUT/steps.txt"
tar -C "$A" --exclude='hypothesis-db' -czf - R $(cd "$A" && ls lane-*.log) | split -b 15m -d - "$OUT/results.tgz."
echo "== steps"; sort "$A/steps.txt"
