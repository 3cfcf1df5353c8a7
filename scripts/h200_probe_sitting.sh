#!/usr/bin/env bash
# One short H200 call: evidence scripts and ledger entries on both FlashInfer versions at once, each
# version in its own lane (site, JIT cache), every command under one deadline. Carry .whlx/
# (scripts/pack_flashinfer_sites.sh), or .whl/ and .whl074x/ (no cuDNN frontend then).
#
#   OUT=dir bash scripts/h200_probe_sitting.sh SECONDS [torch-only command ...]
#
# Per version, in order: `attncheck ledger verify` of VERIFY, then the scripts in PROBES (each
# `python3 SCRIPT`, its output headed by the script's sha256 and the environment). Commands given as
# arguments run once, beside the lanes, on torch alone (no FlashInfer needed). Results: $OUT/<version>/,
# $OUT/torch/, and a table of exit statuses last.
set -u
DEADLINE=$((SECONDS + ${1:?seconds}))
shift
A=/tmp/attncheck-probe
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=8
PROBES=${PROBES:-docs/evidence/repro_flashinfer_paged_mask_segment_before_buffer.py}
VERIFY=${VERIFY:-}

left() { echo $((DEADLINE - SECONDS)); }

one() {  # one NAME LOG CMD...: run under what is left of the deadline, note rc and seconds
  local name=$1 log=$2; shift 2; local t0=$SECONDS
  { echo "# $(date -u +%FT%TZ) $*"
    for x in "$@"; do [ "${x%.py}" != "$x" ] && [ -f "$x" ] && echo "# sha256 $(sha256sum "$x" | cut -c1-64) $x" && break; done
    cat "$A/env-$LANE.txt" 2>/dev/null; } > "$log"
  timeout -s INT -k 10 "$(left)" "$@" >> "$log" 2>&1
  echo "$LANE $name rc=$? $((SECONDS - t0)) s" | tee -a "$OUT/steps.txt"
}

lane() {  # lane VERSION SITE
  local LANE=$1 site=$2; mkdir -p "$OUT/$1"
  export FLASHINFER_WORKSPACE_BASE=$A/jit-$1 PYTHONPATH="$site:$A/site-common:$PWD"
  python3 -c "import torch, flashinfer; print('# torch', torch.__version__, 'cuda', torch.version.cuda, 'flashinfer', flashinfer.__version__, torch.cuda.get_device_name())" > "$A/env-$LANE.txt" 2>&1
  # shellcheck disable=SC2086 # the IDs are words
  [ -z "$VERIFY" ] || one verify "$OUT/$1/verify.log" python3 -m conformance ledger verify --target flashinfer \
      --timeout 150 --out "$OUT/$1/verify" $VERIFY
  for p in $PROBES; do one "$(basename "$p" .py)" "$OUT/$1/$(basename "$p" .py).txt" python3 "$p"; done
}

. "$(dirname "$0")/h200_lib.sh"  # install_sites

mkdir -p "$OUT"
install_sites "$A" || exit 2
lane 0.7.2.post1 "$A/site-0.7.2.post1" &
lane 0.7.4 "$A/site-0.7.4" &
if [ $# -gt 0 ]; then
  mkdir -p "$OUT/torch"
  (LANE=torch; PYTHONPATH=$PWD one torch "$OUT/torch/command.txt" "$@") &
fi
wait
echo "== steps"; sort "$OUT/steps.txt"
