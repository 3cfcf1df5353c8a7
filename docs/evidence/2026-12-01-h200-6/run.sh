#!/usr/bin/env bash
# The layering refactor on the real library: the FlashInfer adapter from its subpackage, the
# prebuild and routes subcommands, and the wrapper names records now carry (graph_max_pages=8 makes
# the second case outgrow its graph wrapper). Run from the repository root with .whl carried.
set -u
export PYTHONUNBUFFERED=1 FLASHINFER_CUDA_ARCH_LIST=9.0a MAX_JOBS=16
site=$(mktemp -d) && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$site" .whl/*.whl && export PYTHONPATH="$site:$PWD"
E=docs/evidence/2026-12-01-h200-6
python3 -c "import flashinfer, torch; print('flashinfer', flashinfer.__version__, 'torch', torch.__version__,
torch.cuda.get_device_name())" | tee "$OUT/versions.txt"
t0=$(date +%s)
python3 -m conformance prebuild --case @$E/cases.json --backend fa2 --backend auto --out "$OUT/prebuild.json" \
    > "$OUT/prebuild.txt" 2>&1; echo "prebuild exit $? after $(( $(date +%s) - t0 )) s" >> "$OUT/prebuild.txt"
python3 -m conformance run --target flashinfer --device cuda --backend fa2 --backend fa2+graph --backend auto \
    --backend auto+graph --case @$E/cases.json --adapter-option graph_max_pages=8 --out /tmp/run \
    > "$OUT/run.txt" 2>&1; echo "run exit $?" >> "$OUT/run.txt"
cp /tmp/run/results.jsonl "$OUT/results.jsonl"
python3 -m conformance routes /tmp/run/results.jsonl --spec flashinfer_cuda --arch sm90 > "$OUT/routes.txt" 2>&1
echo "routes exit $?" >> "$OUT/routes.txt"
python3 - "$OUT/results.jsonl" <<'PY' | tee "$OUT/wrappers.txt"
import json, sys
rows = [r for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "parity"]
print(f"{'backend':12s} {'status':7s} {'resolved':9s} {'wrapper':36s} case")
for r in rows:
    print(f"{r['backend']:12s} {r['status']:7s} {str(r.get('resolved_backend')):9s} {str(r.get('wrapper')):36s} {r['case_id']}")
PY
tail -4 "$OUT/prebuild.txt"; tail -6 "$OUT/run.txt"; tail -3 "$OUT/routes.txt"
