#!/usr/bin/env bash
# The fifth sitting's second machine (2026-12-01): where does the ragged subject's lost CUDA context come
# from? The first machine's exploration (seed 0) lost its context at its 9th example, on the same calls as
# the third sitting's, and the plain script of that example's calls held in a fresh process. This replays
# the ragged subject alone, as it ran and under CUDA_LAUNCH_BLOCKING=1 (the error raised by the launch that
# faults, not by a later call), then runs each script it writes, and the first machine's, plainly and under
# compute-sanitizer memcheck (an out-of-bounds read that does not fault in a fresh process still shows).
# Run from the repo root with .whl/ carried:   OUT=dir bash docs/evidence/2026-12-01-h200-5/followup.sh
# (first at 927aba3; again with BLOCKING=0 at c27ef95, after the scripts judge a run that does not raise, and at
# 84cce31, after they synchronise a run inside its try).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=$(nproc)
export FLASHINFER_WORKSPACE_BASE=/tmp/jit
R=$OUT/r; mkdir -p "$R"; E=docs/evidence/2026-12-01-h200-5
{ date -u; nvidia-smi -L; python3 -c "import torch, flashinfer; print('torch', torch.__version__, 'flashinfer', flashinfer.__version__)"
  command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer; } > "$R/env.txt" 2>&1
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
s0=$SECONDS
one() { local name=$1 limit=$2; shift 2; local t=$SECONDS
  timeout -s INT -k 15 "$limit" "$@" > "$R/$name.txt" 2>&1; local rc=$?
  echo "$name rc=$rc $((SECONDS - t)) s" | tee -a "$R/steps.txt"; }
# the modules the ragged subject loads (bf16, head dim 128, no soft cap: scenarios/subjects.py FLASHINFER_LIMITS)
python3 - "$R/ragged-cases.json" <<'PY'
import json, sys
from kernels import flashinfer_matrix as m
cs = [c.to_json() for c in m.build("quick") if c.layout == "ragged" and (p := m.profile_of(c)) is not None
      and p.name in ("bf16-128", "bf16-128-window")]
json.dump(cs, open(sys.argv[1], "w")); print(len(cs), "ragged cases")
PY
one prebuild 300 python3 -m kernels.flashinfer_prebuild --case "@$R/ragged-cases.json" --backend fa2 --backend fa3
ex=(python3 -m conformance explore --target flashinfer --device cuda --budget runner --examples 40 --steps 20
    --subject flashinfer-sm90-ragged)
one explore_asis 150 "${ex[@]}" --out "$R/asis"
[ "${BLOCKING:-1}" = 1 ] && CUDA_LAUNCH_BLOCKING=1 one explore_blocking 150 "${ex[@]}" --out "$R/blocking"
# the exploration's own failures only (the directed masked-then-unmasked ones are the confirmed stale mask)
for s in "$E"/explore/repro-*.py "$R"/asis/failures/repro-*-explore-*.py "$R"/blocking/failures/repro-*-explore-*.py; do
  [ -e "$s" ] || continue
  tag=$(basename "$(dirname "$(dirname "$s")")")_$(basename "$s" .py | cut -c7-60)
  one "script_$tag" 90 python3 "$s"
  [ -n "$SAN" ] && one "memcheck_$tag" 150 "$SAN" --tool memcheck --print-limit 20 python3 "$s"
done
echo "total $((SECONDS - s0)) s" | tee -a "$R/steps.txt"
for f in "$R"/script_*.txt "$R"/memcheck_*.txt; do echo "== $f"; grep -v "TMA\|globalDim\|^format\|^dim \|gmem\|Strides\|boxDim\|interleave\|swizzle\|l2Prom\|oobFill" "$f" | tail -n 14; done
grep -h "examples" "$R"/explore_*.txt
tar -C "$OUT" -czf "$OUT/r.tgz" r  # at most 8 files come back: everything in one
