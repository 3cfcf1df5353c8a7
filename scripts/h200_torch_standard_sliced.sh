#!/usr/bin/env bash
# The torch target's whole standard matrix on CUDA within one H200 call: compiled FlexAttention compiles a graph
# for nearly every case (Inductor, CPU-bound), so one process at a time gets through about 43 of the 185 cases
# in 300 s. Here the matrix is cut into SLICES interleaved slices of cases for the two flex backends, each slice
# its own `attncheck run` process beside the others (the host's cores compile in parallel), and one more process
# runs every other backend over the whole matrix. Each run writes results.jsonl as it goes; what was written is
# packed into $OUT/results.tgz, then a table of the runs is printed last.
#
#   OUT=dir [DEVICE=cpu] [FLEX_CASES=f.json] [OTHER_CASES=f.json] [RUN_ARGS="--isolate --case-timeout 120"] \
#     bash scripts/h200_torch_standard_sliced.sh SECONDS [SLICES]
#
# FLEX_CASES / OTHER_CASES: case lists (a JSON list, as `--case @file` takes) in place of the matrix for the flex
# slices / the other backends, e.g. what an earlier call did not reach; RUN_ARGS: more `attncheck run` options.
set -u
LIMIT=${1:?seconds}
SLICES=${2:-5}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu: the same plumbing on a CPU, to check it before a call
W=/tmp/attncheck-sliced
rm -rf "$W"; mkdir -p "$W" "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCHINDUCTOR_COMPILE_THREADS=2
python3 -c "import torch; print('# torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA device')" \
  | tee "$W/env.txt"
python3 - "$W" "$SLICES" "$DEVICE" "${FLEX_CASES:-}" <<'EOF'
import json, sys
from scenarios.matrix import build
w, n = sys.argv[1], int(sys.argv[2])
cases = json.load(open(sys.argv[4])) if sys.argv[4] else [c.to_json() for c in build("standard", 0, sys.argv[3])]
for k in range(n):
    with open(f"{w}/slice{k}.json", "w") as f:
        json.dump(cases[k::n], f)
print(f"# {len(cases)} cases in {n} slices")
EOF
BACKENDS=$(python3 -c "
from kernels.torch_target import TARGET
print(' '.join(b for b in TARGET.backends('$DEVICE') if not b.startswith('flex')))")
run() {  # run NAME ARGS...: one attncheck run under the call's limit, its log beside its results
  local name=$1; shift
  # shellcheck disable=SC2086 # RUN_ARGS are words
  timeout -s INT -k 15 "$LIMIT" python3 -m conformance run --target torch --device "$DEVICE" --budget standard \
    --time-budget $((LIMIT - 40)) --out "$W/$name" ${RUN_ARGS:-} "$@" > "$W/$name.log" 2>&1
  echo "$name rc=$?" >> "$W/runs.txt"
}
args=(); for b in $BACKENDS; do args+=(--backend "$b"); done
[ -z "${OTHER_CASES:-}" ] || args+=(--case "@$OTHER_CASES")
run others "${args[@]}" &
for k in $(seq 0 $((SLICES - 1))); do
  run "flex$k" --backend flex --backend flex-padded --case "@$W/slice$k.json" &
done
wait
tar czf "$OUT/results.tgz" -C "$W" .
cat "$W/runs.txt"
grep -H " records, " "$W"/*.log
