#!/usr/bin/env bash
# The FlashInfer upgrade recipe (docs/upgrade-diff.md): record one version on the GPU, one device
# command per version, then diff two recorded versions (the diff needs no GPU).
#
#   bash scripts/upgrade_flashinfer.sh record VERSION OUT [WHEELS]   # WHEELS: default .whl-VERSION
#   bash scripts/upgrade_flashinfer.sh diff OUT OLD NEW              # OUT/fi-OLD against OUT/fi-NEW
#
# `record` installs WHEELS/*.whl into a private site (no registry on the runner; nothing else changes)
# and records `auto` and every explicit backend, eager and under CUDA graphs (BACKENDS below): a record
# of `auto` names the backend it resolved to, so the diff's "routing changes" show where auto moved
# (0.7.2.post1 -> 0.7.4: paged bf16-128 batches of at most 64 query rows, fa3 -> fa2). The cases are the
# quick matrix's bf16 head-dim-128 profiles (with and without a window: the modules the scenario
# machines use); fa2 is timed over the sweep grid for the timing diff. TIME_BUDGET (default 420 s)
# keeps the command under the runner's 10 minutes; the JIT cache is OUT/jit-VERSION (JIT_CACHE=DIR: that
# one, e.g. a cache an exploration on the same version filled). SITE=DIR: a site that already holds the
# version (a pipeline's lane), used instead of installing WHEELS.
# DRY_RUN=1 prints the commands instead of running them.
set -euo pipefail

BACKENDS=(auto auto+graph fa2 fa2+graph fa3 fa3+graph)
PROFILES="bf16-128 bf16-128-window"
TIMING=(--time fa2 --rows 1x1024,8x4096,32x2048 --q 1,16,64,256 --reps 20)

run() {  # run CMD...: the command, or with DRY_RUN=1 its words one per line after a marker
  if [ "${DRY_RUN:-0}" = 1 ]; then printf '%s\n' "== command" "$@"; else "$@"; fi
}

usage() {
  echo "usage: bash scripts/upgrade_flashinfer.sh record VERSION OUT [WHEELS] | diff OUT OLD NEW" >&2
  exit 2
}

record() {
  local version=$1 out=$2 wheels=${3:-.whl-$1}
  local site=${SITE:-$out/site-$version}
  if [ -n "${SITE:-}" ]; then
    if [ "${DRY_RUN:-0}" != 1 ] && [ ! -d "$SITE/flashinfer" ]; then
      echo "upgrade_flashinfer: error: SITE=$SITE holds no flashinfer package; unset SITE to install WHEELS" >&2
      exit 2
    fi
  elif [ "${DRY_RUN:-0}" != 1 ] && ! ls "$wheels"/*.whl > /dev/null 2>&1; then
    echo "upgrade_flashinfer: error: no wheels in $wheels; fetch flashinfer-python $version there first" >&2
    exit 2
  fi
  mkdir -p "$out"
  [ -n "${SITE:-}" ] || run python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl
  export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
  export FLASHINFER_CUDA_ARCH_LIST=${FLASHINFER_CUDA_ARCH_LIST:-9.0a} MAX_JOBS=${MAX_JOBS:-$(nproc)}
  run python3 - "$out/cases.json" "$PROFILES" <<'PY'
import json, sys
from kernels.flashinfer import matrix as m
keep = sys.argv[2].split()
cases = [c.to_json() for c in m.build("quick") if (p := m.profile_of(c)) is not None and p.name in keep]
json.dump(cases, open(sys.argv[1], "w"))
print(len(cases), "cases for the upgrade diff")
PY
  local args=(record --target flashinfer --device cuda --case "@$out/cases.json")
  for b in "${BACKENDS[@]}"; do args+=(--backend "$b"); done
  args+=(--isolate --time-budget "${TIME_BUDGET:-420}" --jit-cache "${JIT_CACHE:-$out/jit-$version}" "${TIMING[@]}")
  run python3 -m conformance "${args[@]}" --out "$out/fi-$version"
}

case "${1:-}" in
  record) [ $# -ge 3 ] || usage; record "$2" "$3" "${4:-}" ;;
  diff) [ $# -eq 4 ] || usage; run python3 -m conformance diff "$2/fi-$3" "$2/fi-$4" --out "$2/diff" ;;
  *) usage ;;
esac
